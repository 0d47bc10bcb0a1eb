// run_soak_rank(): one rank of the soak workload — what RPC layers and task
// runtimes do with LCI, all at once, checked (soak_plan.hpp says what each
// thread does, soak_checker.hpp what is checked).
//
// One rank's life: g_runtime_init; devices (shared: the default device for
// every thread; per-thread: thread 0 the default device, thread t > 0 its
// own; --exhaust: tiny allocated data devices, a tiny packet pool and tiny
// completion queues); the remote completion objects, registered in the same
// order everywhere (AMs: an LCRQ, a fixed-array CQ, a handler; signals: the
// same three and a counter; control messages: an LCRQ); per data device a
// registered arena that its threads take the buffers of use_mr ops from
// (passed as `mr`), and --hold-registrations more. Then per epoch:
//   1. the plan (every rank computes every rank's ops);
//   2. a window (get area + put area) registered with every data device,
//      its remote keys exchanged as control AMs;
//   3. each thread posts its "early" receives, then a start barrier;
//   4. each thread keeps up to --window ops in flight: posts (retry:
//      progress and post again later; the post is never assumed to have
//      done anything), its late receives (shuffled, never held back by the
//      window), progresses its device, drains its completions (sync test,
//      CQ pops, handler and graph-edge hand-offs, counter batches, graph
//      tests) and the rank's remote completion queues; then keeps
//      progressing until the rank heard every arrival the plan promises;
//   5. end barrier (every device progressed while waiting; an arrival now
//      is a duplicate), the final checks (put area, exactly-once, no
//      completion object signalled again, no leftover status), and the
//      accounting exchange: each rank sends each peer what it completed
//      towards it; the peer compares with what it received. Rank 0 says in
//      the same message whether another epoch follows (--duration).
// Every buffer it posted is checked (status fields and bytes).
//
// Crashes (--tolerate-crashes, the sim's rank_crash fault): a survivor that
// hears of a crash (progress() throws it, a status is fatal) stops posting
// operations, keeps progressing and posting receives for a bounded grace
// period so its peers' operations can finish, and leaves; it still checks
// that nothing arrived twice or wrong. (Graph completions are not drawn
// then: a graph with a node in flight cannot be destroyed.)
//
// Thread safety: one call per rank; the ranks of a run call it at once.
// Blocking:      until the run ends; every wait progresses LCI (a
//                scheduling point on the simulator).
// Allocation:    per epoch: the plan, buffers of the operations in flight,
//                the window (get area + put area).
#pragma once

#include <cstdint>
#include <string>

#include "tests/soak/soak_options.hpp"

namespace lci::soak {

struct soak_result_t {
  int rank = 0;
  std::uint64_t epochs = 0;
  std::uint64_t ops_completed = 0;     // this rank's initiated ops, all epochs
  std::uint64_t recvs_completed = 0;
  std::uint64_t arrivals = 0;          // AMs, signals and receives it checked
  std::uint64_t bytes_moved = 0;       // of its own ops
  std::uint64_t retries = 0;           // posts that returned retry
  std::uint64_t backlogged = 0;        // posts that returned posted_backlog
  std::uint64_t done_at_once = 0;      // posts that returned done
  int in_flight_max = 0;               // most ops one thread had in flight
  bool crash_seen = false;             // --tolerate-crashes: a peer crashed
  std::string describe() const;
};

// One rank's body (a simulated rank, or the process's rank under a
// launcher). Throws std::runtime_error naming the seed, the epoch and every
// failed check (the first few).
soak_result_t run_soak_rank(const soak_options_t& options);

}  // namespace lci::soak
