// The multi-rank workload the runtime tests share: every thread of every
// rank runs one communication paradigm against every peer, waits for its
// operations through one kind of completion object, and checks every byte
// it receives and every field of every status it gets.
//
//   lci::sim::expect_runs_ok(4, sweep, [&](lci::sim::rank_env_t& env) {
//     lci::runtime_test::run_workload(env, workload);
//   });
//
// What one thread t of rank r does, per peer p (all ranks alike):
//   send_recv   post_recv from p (tag t) and post_send to p (tag t)
//   am          post_am to p, remote completion: p's rcomp of thread t
//   put         post_put (comp_semantic network) into p's window
//   put_signal  post_put into p's window with p's rcomp of thread t
//   get         post_get from p's window
//   get_signal  post_get with p's rcomp of thread t
// Peer p's thread t is the only sender of each (source rank, tag) pair, so
// no two messages in flight at once share a matching key (the network does
// not keep order). Thread t's remote completion object therefore hears once
// from each peer. A payload's bytes name its source, target and thread, so a
// message delivered to the wrong buffer or window region is caught.
//
// Checks, all thrown as std::runtime_error (the harness reports the rank,
// seed and replay line): every local status (done at once or signalled
// later) carries rank, tag, size, buffer and user_context of its operation
// and arrives exactly once; every remote status names a distinct peer and
// the thread's tag; received bytes match; after the final barrier no
// completion object holds anything more (nothing was delivered twice).
//
// Thread safety: run_workload() is one rank's body; ranks run it at once.
// Blocking:      waits by progress() plus rank_env_t::wait (a scheduling
//                point in deterministic mode).
// Ownership:     everything it allocates is freed before it returns, the
//                runtime included (g_runtime_init ... g_runtime_fina).
// Allocation:    per rank: 2 * (ranks - 1) message buffers per thread, and
//                an RMA window of ranks * threads * size bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lci.hpp"
#include "lci/util/atomic.hpp"
#include "sim/sim_harness.hpp"

namespace lci::runtime_test {

enum class paradigm_t : std::uint8_t { send_recv, am, put, put_signal, get, get_signal };

// Sizes around every protocol threshold: inject (the sim device's 64 bytes),
// buffer copy (get_max_bcopy_size()) and zero copy.
enum class size_class_t : std::uint8_t {
  zero,
  eight,
  inject,
  inject_plus_1,
  bcopy,
  bcopy_plus_1,
  k64,
  m1,
};

// The local completion object of every operation. Remote completions take
// the same kind, except that a counter cannot receive active messages (it
// drops the buffer the receiver must free) and a graph cannot be a remote
// completion (a signal names its node): those use an LCRQ completion queue.
enum class completion_t : std::uint8_t { sync, cq_lcrq, cq_array, handler, counter, graph };

// What the posts of a run (all ranks) returned, for tests that must show a
// path was taken. Graph nodes' posts are not seen (their graph runs them).
struct workload_stats_t {
  // relaxed: counts, read after the run's ranks joined.
  util::atomic<std::uint64_t> retries{0};     // posts that returned retry
  util::atomic<std::uint64_t> backlogged{0};  // posts that returned posted_backlog
};

struct workload_t {
  paradigm_t paradigm = paradigm_t::send_recv;
  size_class_t size = size_class_t::eight;
  completion_t completion = completion_t::sync;
  int threads_count = 1;
  bool device_per_thread = false;
  // Posts with allow_retry(false): a refused post goes to the backlog queue
  // and completes through its completion object.
  bool backlog = false;
  // Sends and active messages with COMP_NULL (sizes up to the buffer-copy
  // limit): no local completion at all; the target still checks the data.
  bool comp_null = false;
  attr_rdv_protocol_t rdv_protocol = attr_rdv_protocol_t::writeimm;
  workload_stats_t* stats = nullptr;  // nullable
};

const char* get_paradigm_str(paradigm_t paradigm);
const char* get_size_class_str(size_class_t size);
const char* get_completion_str(completion_t completion);
// e.g. "send_recv_bcopy_plus_1_cq_lcrq_t4_device_per_thread"
std::string describe(const workload_t& workload);

// The bytes of `size` given the runtime's buffer-copy limit.
std::size_t resolve_size(size_class_t size, std::size_t bcopy_size_max);

// Sim devices a workload allocates per rank: the default one plus one per
// thread. The world's devices_per_rank_max must be at least this.
int devices_per_rank(const workload_t& workload);

// One rank's body.
void run_workload(sim::rank_env_t& env, const workload_t& workload);

}  // namespace lci::runtime_test
