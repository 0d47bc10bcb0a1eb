// Threads a simulated rank starts itself (sim/sim_thread_adopt.cpp): in
// concurrent mode a std::thread or an OpenMP worker started by a rank's
// code is that rank's (its LCI calls reach the rank's runtime: its rank,
// its peers, its messages); in deterministic mode starting one is refused
// with EPERM (std::system_error) and a message naming run_threads and
// concurrent mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness.hpp"
#include "sim/sim_harness_gtest.hpp"

// OpenMP with gcc; the sanitized configurations build with clang, whose
// OpenMP runtime (libomp) is not installed.
#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

// sim/sim_thread_adopt.cpp is not built under the sanitizers (their own
// pthread_create comes first).
#if defined(LCI_SIM_NO_THREAD_ADOPTION)
#define SKIP_WITHOUT_ADOPTION() \
  GTEST_SKIP() << "sanitized build: the simulator does not adopt a rank's own threads"
#else
#define SKIP_WITHOUT_ADOPTION() (void)0
#endif

constexpr int threads_count = 2;
constexpr int messages_per_thread = 16;

void fail_unless(bool condition, const std::string& what) {
  if (!condition) throw std::runtime_error(what);
}

// One thread's share of a two-rank exchange: every thread sends its
// messages to the peer's thread of the same index (tag = thread) and
// receives the peer's, checking the payload names the sender.
void exchange(int thread, int peer) {
  fail_unless(lci::get_rank_n() == 2, "a rank thread sees " + std::to_string(lci::get_rank_n()) +
                                          " ranks");
  const lci::tag_t tag = static_cast<lci::tag_t>(thread);
  std::vector<std::uint64_t> in(messages_per_thread, 0);
  std::vector<std::uint64_t> out(messages_per_thread);
  lci::comp_t sync = lci::alloc_sync_x().threshold(2 * messages_per_thread)();
  for (int i = 0; i < messages_per_thread; ++i) {
    out[i] = static_cast<std::uint64_t>(lci::get_rank_me()) * 1000 + thread * 100 + i;
    lci::status_t status;
    do {
      status = lci::post_recv(peer, &in[i], sizeof(std::uint64_t), tag, sync);
      if (status.is_retry()) (void)lci::progress();
    } while (status.is_retry());
    if (status.is_done()) lci::comp_signal(sync, status);
    do {
      status = lci::post_send(peer, &out[i], sizeof(std::uint64_t), tag, sync);
      if (status.is_retry()) (void)lci::progress();
    } while (status.is_retry());
    if (status.is_done()) lci::comp_signal(sync, status);
  }
  lci::sync_wait(sync, nullptr);
  lci::free_comp(&sync);
  // Receives of one tag from one peer may match its sends in any order:
  // compare as sets.
  std::sort(in.begin(), in.end());
  for (int i = 0; i < messages_per_thread; ++i) {
    const std::uint64_t expected = static_cast<std::uint64_t>(peer) * 1000 + thread * 100 + i;
    fail_unless(in[i] == expected, "thread " + std::to_string(thread) + " message " +
                                       std::to_string(i) + ": got " + std::to_string(in[i]));
  }
}

lci::sim::run_options_t concurrent_options(std::uint64_t seed) {
  lci::sim::run_options_t options =
      lci::sim::default_run_options(seed, lci::sim::world_mode_t::concurrent);
  options.log = false;
  return options;
}

TEST(OwnThreads, StdThreadsOfAConcurrentRankAreItsThreads) {
  SKIP_WITHOUT_ADOPTION();
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    const lci::sim::run_report_t report =
        lci::sim::run_ranks(2, concurrent_options(seed), [](lci::sim::rank_env_t& env) {
          lci::g_runtime_init();
          std::vector<std::thread> threads;
          std::atomic<int> failures{0};
          std::string failure;
          for (int t = 0; t < threads_count; ++t) {
            threads.emplace_back([&, t] {
              try {
                fail_unless(lci::get_rank_me() == env.rank(), "a started thread's rank");
                exchange(t, 1 - env.rank());
              } catch (const std::exception& error) {
                if (failures.fetch_add(1) == 0) failure = error.what();
              }
            });
          }
          for (std::thread& thread : threads) thread.join();
          fail_unless(failures.load() == 0, failure);
          lci::barrier();
          lci::g_runtime_fina();
        });
    EXPECT_TRUE(report.ok) << report.report;
  }
}

#if defined(_OPENMP)
TEST(OwnThreads, OpenMpWorkersOfAConcurrentRankAreItsThreads) {
  SKIP_WITHOUT_ADOPTION();
  const lci::sim::run_report_t report =
      lci::sim::run_ranks(2, concurrent_options(1), [](lci::sim::rank_env_t& env) {
        lci::g_runtime_init();
        std::atomic<int> failures{0};
        std::string failure;
#pragma omp parallel num_threads(threads_count)
        {
          try {
            fail_unless(omp_get_num_threads() == threads_count, "OpenMP started too few threads");
            fail_unless(lci::get_rank_me() == env.rank(), "an OpenMP worker's rank");
            exchange(omp_get_thread_num(), 1 - env.rank());
          } catch (const std::exception& error) {
#pragma omp critical
            if (failures.fetch_add(1) == 0) failure = error.what();
          }
        }
        fail_unless(failures.load() == 0, failure);
        lci::barrier();
        lci::g_runtime_fina();
      });
  EXPECT_TRUE(report.ok) << report.report;
}
#endif

TEST(OwnThreads, DeterministicModeRefusesAnOsThread) {
  SKIP_WITHOUT_ADOPTION();
  lci::sim::run_options_t options = lci::sim::default_run_options(1);
  options.log = false;
  const lci::sim::run_report_t report =
      lci::sim::run_ranks(2, options, [](lci::sim::rank_env_t&) {
        try {
          std::thread thread([] {});
          thread.join();
        } catch (const std::system_error& error) {
          fail_unless(error.code().value() == EPERM,
                      std::string("std::thread failed, but not with EPERM: ") + error.what());
          return;
        }
        throw std::runtime_error("a rank started an OS thread in deterministic mode");
      });
  EXPECT_TRUE(report.ok) << report.report;
}

}  // namespace
