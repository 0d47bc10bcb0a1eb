// The data path allocates nothing (docs/design/device.md, "Pools"): after a
// warm-up, every protocol (inject, eager and rendezvous send/recv, active
// messages, put and get with and without a signal) with every completion
// kind (sync, cq, handler, counter, graph) runs rounds of messages between
// two simulated ranks without one call to malloc — except the buffer an
// active message's user is handed to free, one per copied AM, which a
// zero_copy_am completion object avoids (it gets the packet instead).
//
// How allocations are counted: this binary defines malloc and its siblings
// (glibc lets an executable interpose them; operator new calls malloc), and
// counts every call while the measured rounds run — the runtime's, the
// test's and the simulator's alike. Nothing is excluded: the simulator's
// wire and scheduler reuse their storage once warmed up as well, so a count
// above the allowance is an allocation on some data path, and the runtime's
// is the one under test.
//
// Sanitizer builds replace malloc themselves: there the hook is left out
// and the test skips.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"
#include "tests/runtime/workload.hpp"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LCI_ALLOC_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LCI_ALLOC_TEST_SANITIZED 1
#endif
#endif

namespace {

// Written and read by the one OS thread of a deterministic run (every rank
// is a fiber on it), so plain variables suffice.
bool counting = false;
std::int64_t allocations_count = 0;

void note_allocation() {
  if (counting) ++allocations_count;
}

}  // namespace

#if !defined(LCI_ALLOC_TEST_SANITIZED)
extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* pointer, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);

void* malloc(std::size_t size) {
  note_allocation();
  return __libc_malloc(size);
}
void* calloc(std::size_t count, std::size_t size) {
  note_allocation();
  return __libc_calloc(count, size);
}
void* realloc(void* pointer, std::size_t size) {
  note_allocation();
  return __libc_realloc(pointer, size);
}
void* memalign(std::size_t alignment, std::size_t size) {
  note_allocation();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) {
  note_allocation();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, std::size_t alignment, std::size_t size) {
  note_allocation();
  *out = __libc_memalign(alignment, size);
  return *out == nullptr ? ENOMEM : 0;
}
}  // extern "C"
#endif

namespace {

using lci::runtime_test::require;

using lci::runtime_test::completion_t;
using lci::runtime_test::get_completion_str;
using lci::runtime_test::get_paradigm_str;
using lci::runtime_test::paradigm_t;

struct case_t {
  paradigm_t protocol;
  std::size_t size;
  completion_t local;
  bool zero_copy_am = false;  // am: the target's cq hands over packets
  // send/recv: the send is COMP_NULL (fire-and-forget: a refused post goes
  // to the backlog with a copy of its payload).
  bool comp_null_send = false;
  // The network refuses sends and takes locks at random, so protocol steps
  // and posts go through the device's backlog.
  bool hostile = false;
};

std::string name_of(const case_t& c) {
  return std::string(get_paradigm_str(c.protocol)) + " of " + std::to_string(c.size) + " bytes, " +
         get_completion_str(c.local) + (c.zero_copy_am ? ", zero_copy_am" : "") +
         (c.comp_null_send ? ", COMP_NULL send" : "") + (c.hostile ? ", hostile network" : "");
}

// Local completions the handler kind has seen on this rank (fibers of one
// thread: each rank has its own slot).
int handled_count[2] = {0, 0};
void count_handled(lci::status_t status) {
  if (!status.is_done()) throw std::runtime_error("a handler got a failed status");
  ++handled_count[lci::get_rank_me()];
}

constexpr int warmup_rounds = 16;
constexpr int measured_rounds = 64;
constexpr int rounds_total = warmup_rounds + measured_rounds;

// What a rank holds for one case: its completion objects and buffers,
// allocated before the warm-up (allocation at init is allowed).
class peer_t {
 public:
  // `tag`: distinct for peers that run side by side (their messages must
  // not match each other's receives).
  explicit peer_t(const case_t& c, lci::tag_t tag = 7)
      : case_(c), me_(lci::get_rank_me()), peer_(1 - me_), tag_(tag) {
    out_.assign(c.size, static_cast<char>('a' + me_));
    in_.assign(c.size, 0);
    // Round k's put lands at k * size: a rank knows every put of its peer
    // landed before it deregisters (wait_puts_landed()).
    window_.assign(std::max<std::size_t>(1, c.size) * rounds_total, static_cast<char>('A' + me_));
    switch (c.local) {
      case completion_t::sync:
        // One synchronizer per operation: a threshold-1 object takes one
        // signal per round.
        local_ = lci::alloc_sync();
        second_sync_ = lci::alloc_sync();
        break;
      case completion_t::cq_lcrq:
        local_ = lci::alloc_cq_x().cq_type(lci::attr_cq_type_t::lcrq)();
        break;
      case completion_t::cq_array:
        local_ = lci::alloc_cq_x().cq_type(lci::attr_cq_type_t::array_atomic)();
        break;
      case completion_t::handler: local_ = lci::alloc_handler(&count_handled); break;
      case completion_t::counter: local_ = lci::alloc_counter(); break;
      case completion_t::graph: local_ = lci::alloc_graph(); break;
    }
    remote_cq_ = lci::alloc_cq_x().zero_copy_am(c.zero_copy_am)();
    rcomp_ = lci::register_rcomp(remote_cq_);
    mr_ = lci::register_memory(window_.data(), window_.size());
  }
  ~peer_t() {
    lci::deregister_memory(&mr_);
    lci::free_comp(&remote_cq_);
    if (case_.local == completion_t::sync) lci::free_comp(&second_sync_);
    lci::free_comp(&local_);
  }

  void exchange_rmr(lci::sim::rank_env_t& env) {
    const lci::rmr_t mine = lci::get_rmr(mr_);
    lci::rmr_t all[2];
    env.allgather(&mine, sizeof(mine), all);
    peer_rmr_ = all[peer_];
  }

  // Plain puts tell the target nothing: it waits until each round's bytes
  // are in its window before it deregisters the window.
  void wait_puts_landed() {
    if (case_.protocol != paradigm_t::put || case_.size == 0) return;
    for (int round = 0; round < rounds_total; ++round) {
      const char* region = window_.data() + static_cast<std::size_t>(round) * case_.size;
      while (*region != static_cast<char>('a' + peer_)) (void)lci::progress();
    }
  }

  // One round: what each rank posts, and waiting for all of it.
  void round() {
    ++round_;
    if (case_.local == completion_t::graph) {
      run_graph_round();
    } else {
      wait_local(post_all());
    }
    wait_remote();
  }

  // Builds the graph the graph kind re-runs every round: one node per
  // operation (graph_add_node_op sets each post's user_context to its node).
  void build_graph() {
    if (case_.local != completion_t::graph) return;
    const std::size_t size = case_.size;
    switch (case_.protocol) {
      case paradigm_t::send_recv:
        lci::graph_add_node_op(local_, lci::post_recv_x(peer_, in_.data(), size, tag_, local_));
        lci::graph_add_node_op(local_, lci::post_send_x(peer_, out_.data(), size, tag_, local_));
        return;
      default: require(false, "the graph kind is tested with send/recv only");
    }
  }

 private:
  std::uintptr_t put_disp() const { return static_cast<std::uintptr_t>(round_ - 1) * case_.size; }

  // send/recv: a receive and a send; everything else: one operation.
  int ops_count() const { return case_.protocol == paradigm_t::send_recv ? 2 : 1; }

  lci::status_t post_one(int op) {
    const lci::comp_t comp = op == 1 && case_.local == completion_t::sync ? second_sync_ : local_;
    const std::size_t size = case_.size;
    switch (case_.protocol) {
      case paradigm_t::send_recv:
        if (op == 0) return lci::post_recv(peer_, in_.data(), size, tag_, comp);
        return lci::post_send(peer_, out_.data(), size, tag_,
                              case_.comp_null_send ? lci::COMP_NULL : comp);
      case paradigm_t::am:
        return lci::post_am_x(peer_, out_.data(), size, comp, rcomp_).tag(tag_)();
      case paradigm_t::put:
        return lci::post_put(peer_, out_.data(), size, comp, put_disp(), peer_rmr_);
      case paradigm_t::put_signal:
        return lci::post_put_x(peer_, out_.data(), size, comp, put_disp(), peer_rmr_)
            .remote_comp(rcomp_)
            .tag(tag_)();
      case paradigm_t::get: return lci::post_get(peer_, in_.data(), size, comp, 0, peer_rmr_);
      case paradigm_t::get_signal:
        return lci::post_get_x(peer_, in_.data(), size, comp, 0, peer_rmr_)
            .remote_comp(rcomp_)
            .tag(tag_)();
    }
    return lci::status_t();
  }

  // Posts every operation of the round (progressing while one retries);
  // returns which will signal their completion object (the others
  // completed at once), one bit per operation.
  unsigned post_all() {
    unsigned posted = 0;
    for (int op = 0; op < ops_count(); ++op) {
      lci::status_t status;
      while ((status = post_one(op)).is_retry()) (void)lci::progress();
      const bool signals = !(op == 1 && case_.comp_null_send);
      if (status.is_posted() && signals) posted |= 1u << op;
    }
    return posted;
  }

  void wait_local(unsigned posted_ops) {
    const int posted = __builtin_popcount(posted_ops);
    if (case_.local == completion_t::sync) {
      if ((posted_ops & 1u) != 0) wait_sync(local_);
      if ((posted_ops & 2u) != 0) wait_sync(second_sync_);
      return;
    }
    int completed = 0;
    while (completed < posted) {
      (void)lci::progress();
      switch (case_.local) {
        case completion_t::cq_lcrq:
        case completion_t::cq_array:
          if (!lci::cq_pop(local_).is_retry()) ++completed;
          break;
        case completion_t::handler: completed = handled_count[me_]; break;
        case completion_t::counter: completed = static_cast<int>(lci::counter_get(local_)); break;
        default: require(false, "wait_local: a kind waited for elsewhere");
      }
    }
    handled_count[me_] = 0;
    if (case_.local == completion_t::counter) lci::counter_set(local_, 0);
  }

  static void wait_sync(lci::comp_t sync) {
    while (!lci::sync_test(sync, nullptr)) (void)lci::progress();
  }

  void run_graph_round() {
    lci::graph_start(local_);
    while (lci::graph_test(local_).is_retry()) (void)lci::progress();
  }

  // The peer's AM or signal, where the protocol sends one.
  void wait_remote() {
    const bool signalled = case_.protocol == paradigm_t::am ||
                           case_.protocol == paradigm_t::put_signal ||
                           case_.protocol == paradigm_t::get_signal;
    if (!signalled) return;
    lci::status_t status;
    while ((status = lci::cq_pop(remote_cq_)).is_retry()) (void)lci::progress();
    // The message is built only on failure: a round itself allocates nothing.
    if (!status.is_done() || status.rank != peer_)
      require(false, name_of(case_) + ": wrong remote status");
    if (case_.protocol != paradigm_t::am || status.size == 0) return;
    if (case_.zero_copy_am) {
      lci::put_upacket(status.buffer);
    } else {
      std::free(status.buffer);  // the AM's buffer: the one allocation allowed
    }
  }

  case_t case_;
  int me_;
  int peer_;
  lci::tag_t tag_;
  int round_ = 0;  // rounds started
  std::vector<char> out_;
  std::vector<char> in_;
  std::vector<char> window_;
  lci::comp_t local_;
  lci::comp_t second_sync_;
  lci::comp_t remote_cq_;
  lci::rcomp_t rcomp_ = 0;
  lci::mr_t mr_;
  lci::rmr_t peer_rmr_;
};

// Counts the calling rank in `arrived` and progresses until both ranks are.
void meet(int& arrived) {
  ++arrived;
  while (arrived < 2) (void)lci::progress();
}

// Allocations the runtime may make per round of `c`: an AM's buffer, on
// the target, unless the target's object takes packets.
std::int64_t allowed_per_round(const case_t& c) {
  const bool copied_am = c.protocol == paradigm_t::am && c.size > 0 && !c.zero_copy_am;
  return copied_am ? 1 : 0;
}

// Runs warm-up and measured rounds of `c` on two ranks; returns the
// allocations counted over the measured rounds (both ranks).
std::int64_t count_allocations(const case_t& c) {
  std::int64_t counted = 0;
  int ranks_entered = 0;
  int ranks_left = 0;
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 1;
  sweep.concurrent = false;
  sweep.configure = [&c](lci::sim::run_options_t& options) {
    options.log = false;
    if (!c.hostile) return;
    options.world.faults.rate(lci::sim::fault_kind_t::send_queue_full) = 0.3;
    options.world.faults.rate(lci::sim::fault_kind_t::lock_busy) = 0.1;
  };
  const std::vector<lci::sim::run_report_t> reports =
      lci::sim::expect_runs_ok(2, sweep, [&](lci::sim::rank_env_t& env) {
        lci::g_runtime_init();
        {
          peer_t peer(c);
          peer.exchange_rmr(env);
          peer.build_graph();
          env.barrier();
          for (int round = 0; round < warmup_rounds; ++round) peer.round();
          // The window opens when both ranks arrived and closes when both
          // left, so it holds every measured round of both and nothing else;
          // waiting at its edges is progress, runtime code that is counted too.
          meet(ranks_entered);
          if (ranks_entered == 2) {
            allocations_count = 0;
            counting = true;
          }
          for (int round = 0; round < measured_rounds; ++round) peer.round();
          meet(ranks_left);
          peer.wait_puts_landed();
          if (counting) {
            counting = false;
            counted = allocations_count;
          }
          env.barrier();
        }
        lci::g_runtime_fina();
      });
  if (c.hostile) {
    const auto refused = static_cast<std::size_t>(lci::sim::fault_kind_t::send_queue_full);
    for (const lci::sim::run_report_t& report : reports) {
      EXPECT_GT(report.faults_injected[refused], 0u)
          << name_of(c) << ": the network refused nothing";
    }
  }
  return counted;
}

std::vector<case_t> all_cases() {
  // Sizes across the thresholds: inject, eager (buffer copy), rendezvous.
  const std::size_t sizes[] = {8, 1024, 32 * 1024};
  std::vector<case_t> cases;
  for (std::size_t size : sizes) {
    for (completion_t local : {completion_t::sync, completion_t::cq_lcrq, completion_t::cq_array,
                               completion_t::handler, completion_t::counter, completion_t::graph}) {
      cases.push_back({paradigm_t::send_recv, size, local});
    }
    cases.push_back({paradigm_t::am, size, completion_t::sync});
    cases.push_back({paradigm_t::am, size, completion_t::cq_lcrq});
    for (paradigm_t rma :
         {paradigm_t::put, paradigm_t::put_signal, paradigm_t::get, paradigm_t::get_signal}) {
      cases.push_back({rma, size, completion_t::sync});
      cases.push_back({rma, size, completion_t::counter});
    }
  }
  // Through the backlog: every protocol step and post the network refuses
  // waits there, allocation-free too.
  for (std::size_t size : sizes) {
    cases.push_back({paradigm_t::send_recv, size, completion_t::sync, false, false, true});
    cases.push_back({paradigm_t::am, size, completion_t::cq_lcrq, false, false, true});
    cases.push_back({paradigm_t::put_signal, size, completion_t::sync, false, false, true});
    cases.push_back({paradigm_t::get_signal, size, completion_t::sync, false, false, true});
  }
  // COMP_NULL sends (eager only: a zero-copy one needs a completion object).
  for (std::size_t size : {std::size_t{8}, std::size_t{1024}}) {
    for (bool hostile : {false, true}) {
      cases.push_back({paradigm_t::send_recv, size, completion_t::sync, false, true, hostile});
    }
  }
  // A zero_copy_am object takes AMs up to get_max_bcopy_size() in packets.
  cases.push_back({paradigm_t::am, 8, completion_t::sync, /*zero_copy_am=*/true});
  cases.push_back({paradigm_t::am, 1024, completion_t::sync, /*zero_copy_am=*/true});
  return cases;
}

TEST(Allocations, NoneOnTheDataPath) {
#if defined(LCI_ALLOC_TEST_SANITIZED)
  GTEST_SKIP() << "a sanitizer owns malloc";
#endif
  LCI_SIM_ONLY("counts the simulated ranks' allocations");
  for (const case_t& c : all_cases()) {
    const std::int64_t counted = count_allocations(c);
    const std::int64_t allowed = allowed_per_round(c) * 2 * measured_rounds;
    EXPECT_EQ(counted, allowed) << name_of(c) << ": " << counted << " allocations in "
                                << measured_rounds << " rounds (allowed: " << allowed << ")";
  }
}

// Memory does not grow over a long run: rounds of every protocol in turn,
// counted in windows of rounds after one warm-up window; every window
// allocates nothing (an AM's buffer aside), so what the runtime holds is
// what it held after the warm-up, however long the run.
TEST(Allocations, NoGrowthOverALongRun) {
#if defined(LCI_ALLOC_TEST_SANITIZED)
  GTEST_SKIP() << "a sanitizer owns malloc";
#endif
  LCI_SIM_ONLY("counts the simulated ranks' allocations");
  constexpr int windows_count = 8;
  const std::vector<case_t> mix = {
      {paradigm_t::send_recv, 8, completion_t::cq_lcrq},
      {paradigm_t::send_recv, 1024, completion_t::counter},
      {paradigm_t::send_recv, 32 * 1024, completion_t::sync},
      {paradigm_t::am, 1024, completion_t::sync, /*zero_copy_am=*/true},
      {paradigm_t::put_signal, 32 * 1024, completion_t::counter},
      {paradigm_t::get_signal, 1024, completion_t::sync},
  };
  std::vector<std::int64_t> per_window(windows_count, 0);
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 1;
  sweep.concurrent = false;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  int ranks_entered[windows_count] = {};
  int ranks_left[windows_count] = {};
  lci::sim::expect_runs_ok(2, sweep, [&](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    {
      std::vector<std::unique_ptr<peer_t>> peers;
      for (const case_t& c : mix) {
        peers.push_back(std::make_unique<peer_t>(c, static_cast<lci::tag_t>(peers.size())));
      }
      for (auto& peer : peers) peer->exchange_rmr(env);
      env.barrier();
      for (int window = 0; window < windows_count; ++window) {
        meet(ranks_entered[window]);
        if (ranks_entered[window] == 2) {
          allocations_count = 0;
          counting = true;
        }
        // Each peer_t runs rounds_total rounds at most (its put regions).
        for (int round = 0; round < rounds_total / windows_count; ++round) {
          for (auto& peer : peers) peer->round();
        }
        meet(ranks_left[window]);
        if (counting) {
          counting = false;
          per_window[static_cast<std::size_t>(window)] = allocations_count;
        }
      }
      env.barrier();
    }
    lci::g_runtime_fina();
  });
  // Window 0 warms up (pools and the simulator's storage reach their size).
  for (int window = 1; window < windows_count; ++window) {
    EXPECT_EQ(per_window[static_cast<std::size_t>(window)], 0)
        << "window " << window << " of " << rounds_total / windows_count << " rounds allocated";
  }
}

// The pools bound what a device holds: with the simulator's 1024 requests
// per device (sizing_for in lci/runtime/runtime_impl.cpp), the 1025th
// receive waiting at once is refused with retry_nomem rather than
// allocated; once messages complete receives, the pool serves posts again.
TEST(Allocations, RequestPoolIsBounded) {
  LCI_SIM_ONLY("the simulator's pool size");
  constexpr int requests_max = 1024;
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 1;
  sweep.concurrent = false;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  lci::sim::expect_runs_ok(2, sweep, [&](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    lci::comp_t cq = lci::alloc_cq();
    std::vector<char> in(static_cast<std::size_t>(requests_max) + 1);
    char out = 'x';
    if (lci::get_rank_me() == 0) {
      for (int i = 0; i < requests_max; ++i) {
        const lci::status_t status =
            lci::post_recv(1, &in[static_cast<std::size_t>(i)], 1, static_cast<lci::tag_t>(i), cq);
        require(status.is_posted(), "receive " + std::to_string(i) + " was not posted");
      }
      const lci::status_t refused = lci::post_recv(1, &in.back(), 1, requests_max, cq);
      require(
          refused.error.errorcode == lci::errorcode_t::retry_nomem,
          "receive " + std::to_string(requests_max) + " past the pool: " + refused.error.get_str());
    }
    env.barrier();
    if (lci::get_rank_me() == 1) {
      for (int i = 0; i <= requests_max; ++i) {
        (void)lci::runtime_test::post_retrying(
            [&] { return lci::post_send(0, &out, 1, static_cast<lci::tag_t>(i), lci::COMP_NULL); });
      }
      // COMP_NULL sends the network refused wait in the backlog: sent by
      // progress before this rank stops progressing at the barrier.
      lci::wait_drained();
    } else {
      int completed = 0;
      while (completed < requests_max) {
        (void)lci::progress();
        if (!lci::cq_pop(cq).is_retry()) ++completed;
      }
      // Back in the pool: the refused receive is taken now.
      lci::status_t status = lci::runtime_test::post_retrying(
          [&] { return lci::post_recv(1, &in.back(), 1, requests_max, cq); });
      if (status.is_posted()) {
        while ((status = lci::cq_pop(cq)).is_retry()) (void)lci::progress();
      }
      require(status.is_done() && in.back() == 'x', "the receive after the pool refilled");
    }
    env.barrier();
    lci::free_comp(&cq);
    lci::g_runtime_fina();
  });
}

}  // namespace
