// libFuzzer target for the LCI runtime over the simulated network, where
// the input bytes are the simulator's decisions: while they last, every
// draw of the scheduler (which fiber runs next, for how long), of the wires
// (delays, which packet is delivered next) and of the fault model (which
// fault fires) is the next input byte instead of the seeded PRNG
// (sim/sim_prng.hpp, decision_bytes_t); after that the run goes on from
// seed 1. The fuzzer thus searches interleavings and fault patterns, not
// seeds.
//
// The workload (2 or 3 ranks): each rank sends every peer one message
// (send/recv), one active message and one put with a remote completion,
// all of one size class (inject, buffer copy, rendezvous, or mixed by
// kind). Checked: every operation completes locally exactly once; every
// receive and every active message brings the sender's bytes; every peer's
// active message and put signal arrive exactly once (a second one is a
// failure), the put's bytes are in the window; after the closing barrier
// nothing more arrives; and the harness's own end-of-run check: nothing
// left in the network (no message undelivered, no completion unpolled).
// Any failure aborts with the run's report.
//
// Input format:
//   byte 0     bit 0: 2 or 3 ranks; bits 1-2: size class (8 bytes, 200
//              bytes, over the buffer-copy limit, mixed); bit 3: rendezvous
//              by write + FIN instead of write-with-immediate
//   byte 1     faults on, at rate 1/2 each, one bit per fault kind (bit k:
//              fault_kind_t k, for the kinds before rank_crash; a crash
//              is not a fault the workload survives)
//   the rest   the decision bytes
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness.hpp"
#include "sim/sim_prng.hpp"

namespace {

enum class kind_t : int { send = 0, am = 1, put = 2, kinds_count = 3 };
constexpr int kinds_count = static_cast<int>(kind_t::kinds_count);
constexpr lci::tag_t tag_of[kinds_count] = {1, 2, 3};
constexpr std::uint64_t fuzz_seed = 1;

struct plan_t {
  int ranks_count = 2;
  int size_class = 0;  // 0: 8 bytes, 1: 200, 2: bcopy + 1, 3: by kind
  bool rdv_write = false;
};

std::size_t size_of(const plan_t& plan, kind_t kind, std::size_t bcopy_size_max) {
  const int size_class = plan.size_class == 3 ? static_cast<int>(kind) : plan.size_class;
  switch (size_class) {
    case 0:
      return 8;
    case 1:
      return 200;
    default:
      return bcopy_size_max + 1;
  }
}

std::uint8_t pattern(int source, int target, kind_t kind, std::size_t index) {
  return static_cast<std::uint8_t>(source * 31 + target * 7 + static_cast<int>(kind) * 3 + index);
}

void require(bool condition, const std::string& what) {
  if (!condition) throw std::runtime_error("sim_schedule_fuzz: " + what);
}

void require_pattern(const void* buffer, std::size_t size, int source, int target, kind_t kind,
                     const std::string& what) {
  const auto* bytes = static_cast<const std::uint8_t*>(buffer);
  for (std::size_t i = 0; i < size; ++i) {
    require(bytes[i] == pattern(source, target, kind, i),
            what + " from rank " + std::to_string(source) + ": byte " + std::to_string(i) +
                " is wrong");
  }
}

// One posted operation: how often it completed locally.
struct op_t {
  kind_t kind = kind_t::send;
  bool is_recv = false;
  int peer = 0;
  int completions = 0;
};

struct rank_state_t {
  lci::sim::rank_env_t* env = nullptr;
  int me = 0;
  int ranks_count = 0;
  lci::comp_t local_cq;   // every operation's local completion
  lci::comp_t remote_cq;  // active messages and put signals to this rank
  std::vector<op_t> ops;  // never resized after posting: user_context points in
  std::vector<int> arrived;  // [source * kinds_count + kind]: remote arrivals
  std::vector<std::uint8_t> window;  // a region of size_max per source

  int& arrivals(int source, kind_t kind) {
    return arrived[static_cast<std::size_t>(source * kinds_count + static_cast<int>(kind))];
  }
};

void complete(op_t& op, const std::string& how) {
  ++op.completions;
  require(op.completions == 1, how + ": an operation completed twice");
}

// Posts until the runtime accepts; a done status is the local completion.
template <typename Post>
void post(rank_state_t& rank, op_t& op, Post&& post_once) {
  lci::status_t status;
  while ((status = post_once()).is_retry()) {
    if (lci::progress().is_retry()) rank.env->wait("a post's retry");
  }
  if (status.is_done()) complete(op, "done at once");
}

void on_remote(rank_state_t& rank, const lci::status_t& status, std::size_t bcopy_size_max,
               const plan_t& plan) {
  const int source = status.rank;
  require(source >= 0 && source < rank.ranks_count && source != rank.me, "a remote status from no peer");
  if (status.tag == tag_of[static_cast<int>(kind_t::am)]) {
    const std::size_t size = size_of(plan, kind_t::am, bcopy_size_max);
    require(status.size == size, "an active message of the wrong size");
    require_pattern(status.buffer, size, source, rank.me, kind_t::am, "an active message");
    std::free(status.buffer);  // the default allocator is malloc
    ++rank.arrivals(source, kind_t::am);
    require(rank.arrivals(source, kind_t::am) == 1, "an active message arrived twice");
    return;
  }
  require(status.tag == tag_of[static_cast<int>(kind_t::put)], "a remote status with an unknown tag");
  ++rank.arrivals(source, kind_t::put);
  require(rank.arrivals(source, kind_t::put) == 1, "a put signal arrived twice");
}

void poll(rank_state_t& rank, std::size_t bcopy_size_max, const plan_t& plan) {
  for (lci::status_t s = lci::cq_pop(rank.local_cq); !s.is_retry(); s = lci::cq_pop(rank.local_cq)) {
    require(s.is_done(), "an operation failed");
    complete(*static_cast<op_t*>(s.user_context), "a completion queue entry");
  }
  for (lci::status_t s = lci::cq_pop(rank.remote_cq); !s.is_retry(); s = lci::cq_pop(rank.remote_cq)) {
    on_remote(rank, s, bcopy_size_max, plan);
  }
}

bool all_done(rank_state_t& rank) {
  for (const op_t& op : rank.ops) {
    if (op.completions == 0) return false;
  }
  for (int source = 0; source < rank.ranks_count; ++source) {
    if (source == rank.me) continue;
    if (rank.arrivals(source, kind_t::am) == 0 || rank.arrivals(source, kind_t::put) == 0) return false;
  }
  return true;
}

void body(lci::sim::rank_env_t& env, const plan_t& plan) {
  lci::g_runtime_init_x()
      .rdv_protocol(plan.rdv_write ? lci::attr_rdv_protocol_t::write
                                   : lci::attr_rdv_protocol_t::writeimm)();
  rank_state_t rank;
  rank.env = &env;
  rank.me = lci::get_rank_me();
  rank.ranks_count = lci::get_rank_n();
  const std::size_t bcopy = lci::get_max_bcopy_size();
  const std::size_t size_max = bcopy + 1;
  rank.local_cq = lci::alloc_cq();
  rank.remote_cq = lci::alloc_cq();
  const lci::rcomp_t rcomp = lci::register_rcomp(rank.remote_cq);
  rank.arrived.assign(static_cast<std::size_t>(rank.ranks_count * kinds_count), 0);
  rank.window.assign(static_cast<std::size_t>(rank.ranks_count) * size_max, 0);
  lci::mr_t window_mr = lci::register_memory(rank.window.data(), rank.window.size());
  const lci::rmr_t mine = lci::get_rmr(window_mr);
  std::vector<lci::rmr_t> rmrs(static_cast<std::size_t>(rank.ranks_count));
  env.allgather(&mine, sizeof(mine), rmrs.data());
  std::vector<lci::rcomp_t> rcomps(static_cast<std::size_t>(rank.ranks_count));
  env.allgather(&rcomp, sizeof(rcomp), rcomps.data());
  env.barrier();  // nobody sends before every peer registered

  const std::size_t peers = static_cast<std::size_t>(rank.ranks_count - 1);
  rank.ops.resize(4 * peers);
  std::vector<std::vector<std::uint8_t>> out(4 * peers), in(peers);
  std::size_t next = 0;
  for (int peer = 0; peer < rank.ranks_count; ++peer) {
    if (peer == rank.me) continue;
    const auto p = static_cast<std::size_t>(peer);
    // The receive from `peer`.
    op_t& recv = rank.ops[next];
    recv = op_t{kind_t::send, true, peer, 0};
    std::vector<std::uint8_t>& in_buffer = in[next / 4];
    in_buffer.assign(size_of(plan, kind_t::send, bcopy), 0);
    post(rank, recv, [&] {
      return lci::post_recv_x(peer, in_buffer.data(), in_buffer.size(), tag_of[0], rank.local_cq)
          .user_context(&recv)();
    });
    ++next;
    for (kind_t kind : {kind_t::send, kind_t::am, kind_t::put}) {
      op_t& op = rank.ops[next];
      op = op_t{kind, false, peer, 0};
      std::vector<std::uint8_t>& buffer = out[next];
      buffer.resize(size_of(plan, kind, bcopy));
      for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = pattern(rank.me, peer, kind, i);
      const lci::tag_t tag = tag_of[static_cast<int>(kind)];
      post(rank, op, [&]() -> lci::status_t {
        switch (kind) {
          case kind_t::send:
            return lci::post_send_x(peer, buffer.data(), buffer.size(), tag, rank.local_cq)
                .user_context(&op)();
          case kind_t::am:
            return lci::post_am_x(peer, buffer.data(), buffer.size(), rank.local_cq, rcomps[p])
                .tag(tag)
                .user_context(&op)();
          default:
            return lci::post_put_x(peer, buffer.data(), buffer.size(), rank.local_cq,
                                   static_cast<std::uintptr_t>(rank.me) * size_max, rmrs[p])
                .tag(tag)
                .remote_comp(rcomps[p])
                .user_context(&op)();
        }
      });
      ++next;
    }
  }
  while (poll(rank, bcopy, plan), !all_done(rank)) {
    if (lci::progress().is_retry()) env.wait("the workload's completions");
  }
  for (std::size_t i = 0; i < rank.ops.size(); ++i) {
    if (rank.ops[i].is_recv) {
      require_pattern(in[i / 4].data(), in[i / 4].size(), rank.ops[i].peer, rank.me, kind_t::send,
                      "a received message");
    }
  }
  for (int source = 0; source < rank.ranks_count; ++source) {
    if (source == rank.me) continue;
    require_pattern(rank.window.data() + static_cast<std::size_t>(source) * size_max,
                    size_of(plan, kind_t::put, bcopy), source, rank.me, kind_t::put, "a put");
  }
  lci::barrier();
  // Whatever arrives now arrived twice (every count is already 1).
  poll(rank, bcopy, plan);
  lci::deregister_rcomp(rcomp);
  lci::deregister_memory(&window_mr);
  lci::free_comp(&rank.local_cq);
  lci::free_comp(&rank.remote_cq);
  lci::g_runtime_fina();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  plan_t plan;
  plan.ranks_count = 2 + (data[0] & 1);
  plan.size_class = (data[0] >> 1) & 3;
  plan.rdv_write = (data[0] & 8) != 0;
  lci::sim::run_options_t options = lci::sim::default_run_options(fuzz_seed);
  options.log = false;
  for (std::size_t k = 0; k < static_cast<std::size_t>(lci::sim::fault_kind_t::rank_crash); ++k) {
    options.world.faults.rates[k] = (data[1] >> k) & 1 ? 0.5 : 0.0;
  }
  lci::sim::decision_bytes_t decisions(data + 2, size - 2);
  const lci::sim::decision_bytes_scope_t installed(&decisions);
  const lci::sim::run_report_t report =
      lci::sim::run_ranks(plan.ranks_count, options, [&plan](lci::sim::rank_env_t& env) { body(env, plan); });
  if (!report.ok) {
    std::fprintf(stderr, "sim_schedule_fuzz: the run failed after %zu decision bytes:\n%s\n",
                 decisions.used_count(), report.report.c_str());
    std::abort();
  }
  return 0;
}
