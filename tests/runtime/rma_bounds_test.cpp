// RMA against a peer's registration (rmr_t in lci/api/lci_types.hpp,
// lci/protocol/rma.cpp): a put or get outside the peer's registration
// fails at the target, that operation alone, fatal through its completion
// object (rmr_t carries no size, as upstream's); what is malformed in
// itself (an offset that overflows with the size included, a base below
// mr_base) throws std::invalid_argument on the initiator; accesses up to the
// last byte, a moved base and an rmr_t without mr_base still work; a stale
// key fails that one operation too, and the job goes on; no byte lands
// after deregister_memory returns. The target refuses in one of two ways:
// its network, where a bad key fails only its own access (the simulated
// network checks keys and bounds at the target as a NIC does,
// sim/sim_world.cpp), or the runtime's checked RMA, where the network would
// break more (ofi's shm and tcp; the simulator under those providers'
// profiles: the _shm_profile target runs this file so).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;
using lci::runtime_test::expect_invalid_argument;
using lci::runtime_test::require;
using lci::runtime_test::round_trip;
using lci::runtime_test::run_beside_progress_thread;

constexpr std::size_t window_bytes = 4096;
constexpr int target_rank = 1;

lci::status_t wait_for(lci::comp_t sync, lci::status_t posted) {
  if (posted.is_posted()) lci::sync_wait(sync, &posted);
  return posted;
}

// Rank 1's window, registered, and its rmr on both ranks.
class window_t {
 public:
  explicit window_t(lci::sim::rank_env_t& env) : bytes_(window_bytes, 0) {
    lci::rmr_t mine{};
    if (env.rank() == target_rank) {
      mr_ = lci::register_memory(bytes_.data(), bytes_.size());
      mine = lci::get_rmr(mr_);
    }
    lci::rmr_t all[2];
    env.allgather(&mine, sizeof(mine), all);
    rmr_ = all[target_rank];
  }
  ~window_t() {
    if (!mr_.is_empty()) lci::deregister_memory(&mr_);
  }
  window_t(const window_t&) = delete;
  window_t& operator=(const window_t&) = delete;

  const lci::rmr_t& rmr() const { return rmr_; }
  std::vector<char>& bytes() { return bytes_; }

 private:
  std::vector<char> bytes_;
  lci::mr_t mr_;
  lci::rmr_t rmr_;
};

lci::sim::sweep_t quiet_sweep() {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 4;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  return sweep;
}

void run_two_ranks(const std::function<void(lci::sim::rank_env_t&)>& body,
                   const lci::sim::sweep_t& sweep = quiet_sweep()) {
  lci::sim::expect_runs_ok(2, sweep, [&body](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    body(env);
    round_trip(1 - env.rank(), 1000);  // the runtime still works
    lci::barrier();
    lci::g_runtime_fina();
  });
}

// A put the target's network (or its runtime's checked RMA) refuses:
// fatal through its synchronizer, nothing thrown.
void expect_fails_alone(const std::string& what, lci::comp_t sync,
                        const std::function<lci::status_t()>& post) {
  const lci::status_t status = wait_for(sync, post_retrying(post));
  require(status.error.errorcode == lci::errorcode_t::fatal,
          what + ": completed " + std::string(status.error.get_str()) + ", not fatal");
  require(status.rank == target_rank, what + ": names rank " + std::to_string(status.rank));
}

// Accesses outside the window: rmr_t carries no size, so each goes to the
// target, which refuses it; the operation alone fails (fatal). Network
// semantic for the puts: an injected put is done before the target sees it.
// What is malformed in itself throws on the initiator.
void refuse_out_of_bounds(const lci::rmr_t& rmr, lci::comp_t sync) {
  std::vector<char> source(2 * window_bytes, 'x');
  char* const buffer = source.data();
  constexpr std::uintptr_t far = std::uintptr_t{1} << 40;
  constexpr std::uintptr_t top = std::numeric_limits<std::uintptr_t>::max() - 3;
  const auto put = [&](std::size_t size, std::uintptr_t disp, lci::rmr_t to) {
    return [=] {
      return lci::post_put_x(target_rank, buffer, size, sync, disp, to)
          .comp_semantic(lci::comp_semantic_t::network)();
    };
  };
  expect_fails_alone("a put of 8192 bytes at 4000", sync, put(8192, 4000, rmr));
  expect_fails_alone("a put of 8 bytes at 2^40", sync, put(8, far, rmr));
  expect_fails_alone("a get of 8192 bytes at 4000", sync,
                     [&] { return lci::post_get(target_rank, buffer, 8192, sync, 4000, rmr); });
  expect_fails_alone("post_comm with an rmr, one byte over", sync, [&] {
    return lci::post_comm_x(lci::direction_t::OUT, target_rank, buffer, 9, sync)
        .remote_disp(window_bytes - 8)
        .rmr(rmr)
        .comp_semantic(lci::comp_semantic_t::network)();
  });
  lci::buffers_t list = {{buffer, window_bytes}, {buffer, 1}};
  expect_fails_alone("a buffer list of 4097 bytes", sync, [&] {
    return lci::post_put_x(target_rank, nullptr, 0, sync, 0, rmr)
        .local_buffers(list)
        .comp_semantic(lci::comp_semantic_t::network)();
  });
  lci::rmr_t moved = rmr;
  moved.base += 4000;
  expect_fails_alone("200 bytes from a base moved 4000 bytes in", sync, put(200, 0, moved));
  lci::rmr_t at_end = rmr;
  at_end.base += window_bytes;  // moved to the region's end: room for nothing
  expect_fails_alone("a byte from a base moved to the region's end", sync, put(1, 0, at_end));
  // Zero bytes move nothing, wherever they point: done at once.
  const lci::status_t empty = wait_for(sync, post_retrying(put(0, window_bytes + 1, rmr)));
  require(empty.is_done(), std::string("a zero-byte put past the end: ") + empty.error.get_str());
  expect_invalid_argument("a put whose offset + size overflows",
                          [&] { (void)lci::post_put(target_rank, buffer, 8, sync, top, rmr); },
                          {"post_put", "remote_disp = " + std::to_string(top), "size = 8"});
  lci::rmr_t before = rmr;
  before.base -= 1;
  expect_invalid_argument("a base before the region",
                          [&] { (void)lci::post_put(target_rank, buffer, 1, sync, 0, before); },
                          {"lies below", "mr_base = " + std::to_string(rmr.mr_base)});
  require(lci::test_drained().is_done(), "a refused post left an operation in flight");
}

// Puts that fit exactly: the last 8 bytes, a zero-byte put at the end, and
// the 88 bytes before them through a base moved 4000 bytes in. Network
// semantic: each has landed when it completes (the barrier after them
// could overtake an injected one).
void put_at_the_edges(const lci::rmr_t& rmr, lci::comp_t sync) {
  std::vector<char> last(8, 'e');
  std::vector<char> middle(88, 'm');
  lci::rmr_t moved = rmr;
  moved.base += 4000;
  const auto put = [&](char* buffer, std::size_t size, std::uintptr_t disp, lci::rmr_t to) {
    return [=] {
      return lci::post_put_x(target_rank, buffer, size, sync, disp, to)
          .comp_semantic(lci::comp_semantic_t::network)();
    };
  };
  const std::vector<std::function<lci::status_t()>> posts = {
      put(last.data(), 8, window_bytes - 8, rmr),
      put(last.data(), 0, window_bytes, rmr),
      put(middle.data(), 88, 0, moved),
  };
  for (const auto& post : posts) {
    const lci::status_t status = wait_for(sync, post_retrying(post));
    require(status.is_done(), std::string("a put that fits: ") + status.error.get_str());
  }
}

char expected_edge_byte(std::size_t at) {
  if (at >= window_bytes - 8) return 'e';
  if (at >= 4000) return 'm';
  return 0;
}

// An out-of-bounds put or get fails at the target, alone; the ones that
// fit land, and nothing else touched the window.
TEST(RmaBounds, OutOfBoundsFailsAtTheTarget) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    window_t window(env);
    lci::comp_t sync = lci::alloc_sync();
    if (env.rank() == 0) {
      refuse_out_of_bounds(window.rmr(), sync);
      put_at_the_edges(window.rmr(), sync);
    }
    lci::barrier();
    if (env.rank() == target_rank) {
      for (std::size_t at = 0; at < window_bytes; ++at) {
        require(window.bytes()[at] == expected_edge_byte(at),
                "window byte " + std::to_string(at) + " is wrong");
      }
    }
    lci::barrier();  // the window stays registered until rank 0 is done
    lci::free_comp(&sync);
  });
}

// An rmr_t built field by field without mr_base (base and key only) is
// addressed from its base: a put that fits lands, one that does not is
// refused at the target, as a fault of that operation alone.
TEST(RmaBounds, RmrWithoutMrBaseIsCheckedAtTheTarget) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    window_t window(env);
    const lci::rmr_t unsized{window.rmr().base, 0, window.rmr().opaque_rkey};
    lci::comp_t sync = lci::alloc_sync();
    if (env.rank() == 0) {
      std::vector<char> source(2 * window_bytes, 'u');
      const lci::status_t fits = wait_for(sync, post_retrying([&] {
        return lci::post_put_x(target_rank, source.data(), window_bytes, sync, 0, unsized)
            .comp_semantic(lci::comp_semantic_t::network)();
      }));
      require(fits.is_done(), std::string("an unsized put that fits: ") + fits.error.get_str());
      expect_fails_alone("an unsized put of 8192 bytes at 4000", sync, [&] {
        return lci::post_put(target_rank, source.data(), 8192, sync, 4000, unsized);
      });
      // Zero bytes at the window's end are inside it.
      const lci::status_t empty_at_end = wait_for(sync, post_retrying([&] {
        return lci::post_put_x(target_rank, source.data(), 0, sync, window_bytes, unsized)
            .comp_semantic(lci::comp_semantic_t::network)();
      }));
      require(empty_at_end.is_done(),
              std::string("an unsized zero-byte put at the window's end: ") +
                  empty_at_end.error.get_str());
      // Ending exactly at the top of memory does not overflow: it goes to the
      // target, which refuses it like any other access outside the window
      // (network semantic: an injected put would be done before that).
      constexpr std::uintptr_t top_disp = std::numeric_limits<std::uintptr_t>::max() - 8;
      expect_fails_alone("an unsized put of 8 bytes ending at the top of memory", sync, [&] {
        return lci::post_put_x(target_rank, source.data(), 8, sync, top_disp, unsized)
            .comp_semantic(lci::comp_semantic_t::network)();
      });
    }
    lci::barrier();
    if (env.rank() == target_rank) {
      for (char c : window.bytes()) require(c == 'u', "the unsized put did not land");
    }
    lci::barrier();
    lci::free_comp(&sync);
  });
}

// A key the target deregistered: each put or get fails alone (fatal to its
// synchronizer, progress() throws nothing); a COMP_NULL put, waited for
// inside the post, returns the fatal status itself.
TEST(RmaBounds, StaleKeyFailsOnlyItsOperation) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    std::vector<char> doomed(window_bytes, 0);
    lci::rmr_t mine{};
    if (env.rank() == target_rank) {
      lci::mr_t mr = lci::register_memory(doomed.data(), doomed.size());
      mine = lci::get_rmr(mr);
      lci::deregister_memory(&mr);
    }
    lci::rmr_t all[2];
    env.allgather(&mine, sizeof(mine), all);
    const lci::rmr_t stale = all[target_rank];
    lci::comp_t sync = lci::alloc_sync();
    if (env.rank() == 0) {
      std::vector<char> source(1024, 's');
      expect_fails_alone("a put with a stale key", sync, [&] {
        return lci::post_put(target_rank, source.data(), source.size(), sync, 0, stale);
      });
      expect_fails_alone("a get with a stale key", sync, [&] {
        return lci::post_get(target_rank, source.data(), source.size(), sync, 0, stale);
      });
      const lci::status_t null_put = post_retrying([&] {
        return lci::post_put(target_rank, source.data(), source.size(), lci::COMP_NULL, 0, stale);
      });
      require(null_put.error.errorcode == lci::errorcode_t::fatal && null_put.rank == target_rank,
              std::string("a COMP_NULL put with a stale key returned ") +
                  null_put.error.get_str() + " naming rank " + std::to_string(null_put.rank));
    }
    lci::barrier();
    for (char c : doomed) require(c == 0, "a refused access touched the deregistered region");
    lci::free_comp(&sync);
  });
}

// Rank 0 keeps puts with a remote completion in flight into rank 1's
// window while rank 1 deregisters it at the first signal, then paints the
// window: each put completes once, done or fatal; rank 1 heard a signal for
// every put that was done and for no other; and no byte landed after
// deregister_memory returned (with checked RMA it waits for the accesses it
// let start; a network that checks keys refuses those that come later).
//
// With progress_thread, a second thread of rank 1 progresses all along, so
// the accesses under way finish (and unpin the registration) on either
// thread while the first waits in deregister_memory; under TSan that checks
// the pin's release/acquire pair (mr_impl_t::unpin, wait_unpinned).
void nothing_lands_after_deregistration(bool progress_thread, const lci::sim::sweep_t& sweep) {
  constexpr std::size_t region_bytes = 64 * 1024;
  constexpr int puts_count = 48;
  constexpr std::size_t sizes[] = {8, 1000, 9000, region_bytes};
  run_two_ranks([&](lci::sim::rank_env_t& env) {
    std::vector<char> region(region_bytes, 0);
    lci::comp_t signals = lci::alloc_cq();
    const lci::rcomp_t rcomp = lci::register_rcomp(signals);
    lci::mr_t mr;
    lci::rmr_t mine{};
    if (env.rank() == target_rank) {
      mr = lci::register_memory(region.data(), region.size());
      mine = lci::get_rmr(mr);
    }
    lci::rmr_t all[2];
    env.allgather(&mine, sizeof(mine), all);
    constexpr lci::tag_t count_tag = 7;
    if (env.rank() == 0) {
      lci::comp_t cq = lci::alloc_cq();
      std::vector<char> source(region_bytes, 'p');
      for (int i = 0; i < puts_count; ++i) {
        std::size_t size = sizes[static_cast<std::size_t>(i) % std::size(sizes)];
        std::uintptr_t offset = 0;
        if (progress_thread) {
          // Two threads of the target may now land two puts at once: disjoint
          // slots, so that only the deregistration can race with a put.
          const std::size_t slot = region_bytes / puts_count;
          size = std::min(size, slot);
          offset = static_cast<std::uintptr_t>(i) * slot;
        }
        const lci::status_t posted = post_retrying([&] {
          return lci::post_put_x(target_rank, source.data(), size, cq, offset, all[target_rank])
              .remote_comp(rcomp)
              .comp_semantic(lci::comp_semantic_t::network)();
        });
        require(posted.is_posted(), std::string("a put was ") + posted.error.get_str());
      }
      int done_count = 0;
      for (int completed = 0; completed < puts_count;) {
        lci::status_t status = lci::cq_pop(cq);
        if (status.is_retry()) {
          (void)lci::progress();
          continue;
        }
        ++completed;
        if (status.is_done()) {
          ++done_count;
        } else {
          require(status.error.errorcode == lci::errorcode_t::fatal,
                  std::string("a put completed ") + status.error.get_str());
        }
      }
      lci::free_comp(&cq);
      const lci::status_t sent = post_retrying([&] {
        return lci::post_send(target_rank, &done_count, sizeof(done_count), count_tag,
                              lci::COMP_NULL_RETRY);
      });
      require(sent.is_done(), std::string("the count's send: ") + sent.error.get_str());
    } else {
      const auto deregister_and_paint = [&] {
        while (lci::cq_pop(signals).is_retry()) (void)lci::progress();
        int heard = 1;  // the first, before the deregistration
        lci::deregister_memory(&mr);
        std::fill(region.begin(), region.end(), 'z');
        // Progress meanwhile refuses rank 0's later puts and takes the
        // signals of those already under way.
        int done_count = -1;
        lci::comp_t sync = lci::alloc_sync();
        lci::status_t received = post_retrying([&] {
          return lci::post_recv(0, &done_count, sizeof(done_count), count_tag, sync);
        });
        if (received.is_posted()) lci::sync_wait(sync, &received);
        lci::free_comp(&sync);
        for (lci::status_t signal; heard < done_count;) {
          signal = lci::cq_pop(signals);
          if (signal.is_retry()) {
            (void)lci::progress();
          } else {
            ++heard;
          }
        }
        for (std::size_t at = 0; at < region_bytes; ++at) {
          require(region[at] == 'z', "byte " + std::to_string(at) +
                                         " was written after deregister_memory returned");
        }
        lci::barrier();  // the signals of every done put have come
        while (lci::cq_pop(signals).is_done()) ++heard;
        require(heard == done_count, std::to_string(done_count) + " puts done, " +
                                         std::to_string(heard) + " signals heard");
      };
      if (!progress_thread) {
        deregister_and_paint();
      } else {
        run_beside_progress_thread(env, deregister_and_paint);
      }
    }
    if (env.rank() == 0) lci::barrier();
    lci::deregister_rcomp(rcomp);
    lci::free_comp(&signals);
  }, sweep);
}

TEST(RmaBounds, NothingLandsAfterDeregistration) {
  nothing_lands_after_deregistration(false, quiet_sweep());
}

TEST(RmaBounds, NothingLandsAfterDeregistrationWhileAnotherThreadProgresses) {
  LCI_SIM_ONLY("injected faults");
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 0;  // OS threads only: fibers take turns, so nothing races
  sweep.configure = [](lci::sim::run_options_t& options) {
    options.log = false;
    // The waiting thread loses its core now and then: the other thread's
    // accesses then finish inside deregister_memory's wait.
    options.world.faults.rate(lci::sim::fault_kind_t::preempt) = 0.5;
  };
  for (int repeat = 0; repeat < 64; ++repeat) nothing_lands_after_deregistration(true, sweep);
}

}  // namespace
