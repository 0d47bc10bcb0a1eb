// A conformance rank that is this process (tools/lcirun started one per
// rank): process_t holds the process's bootstrap and the context under test,
// process_rank_ctx_t runs the suite's collectives over the bootstrap while it
// polls the rank's endpoints, and process_case() makes the backend_case_t of
// a binary whose main() set up the process_t (and ends with
// run_all_then_close()). Tests written for a rank count other than the
// job's are skipped.
//
// A failing body prints its failure and ends the process at once (exit 1):
// its peers would otherwise wait for it in the next collective. lcirun then
// terminates the other ranks and exits with that code.
//
// Thread safety: as rank_ctx_t; process_case()'s run() from the gtest thread.
#pragma once

#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/run_threads.hpp"
#include "tests/backends/conformance/conformance.hpp"

namespace lci::conformance {

// This process: its bootstrap and the context under test, set up by main().
struct process_t {
  std::unique_ptr<bootstrap::bootstrap_t> bootstrap;
  std::unique_ptr<backend::net_context_t> context;
  std::size_t allgathers_count = 0;  // names each allgather's bootstrap key
};

class process_rank_ctx_t final : public rank_ctx_t {
 public:
  explicit process_rank_ctx_t(process_t& process) : process_(process) {}

  backend::net_context_t& context() override { return *process_.context; }
  void wait(const char* what) override {
    (void)what;
    sched_yield();  // let the peers (on as few as 2 cores) run
  }
  void barrier() override {
    while_polling([this] { process_.bootstrap->barrier(); });
  }
  void allgather(const void* mine, std::size_t bytes, void* all) override {
    const std::string key = "conformance_ag" + std::to_string(process_.allgathers_count++);
    while_polling([&] {
      bootstrap::bootstrap_t& bootstrap = *process_.bootstrap;
      bootstrap.put(key, mine, bytes);
      bootstrap.fence();
      for (int rank = 0; rank < bootstrap.rank_n(); ++rank) {
        const std::vector<std::byte> value = bootstrap.get(rank, key);
        if (value.size() != bytes) {
          throw conformance_failure_t("allgather: rank " + std::to_string(rank) + " gave " +
                                      std::to_string(value.size()) + " bytes, not " +
                                      std::to_string(bytes));
        }
        std::memcpy(static_cast<char*>(all) + rank * bytes, value.data(), bytes);
      }
    });
  }
  void run_threads(int threads_count, const std::function<void(int)>& body) override {
    util::run_threads(threads_count, body);
  }
  void add_poller(const void* owner, std::function<void()> poll) override {
    std::lock_guard<std::mutex> guard(pollers_mutex_);
    pollers_.emplace_back(owner, std::move(poll));
  }
  void remove_poller(const void* owner) override {
    std::lock_guard<std::mutex> guard(pollers_mutex_);
    for (auto it = pollers_.begin(); it != pollers_.end(); ++it) {
      if (it->first == owner) {
        pollers_.erase(it);
        return;
      }
    }
  }

 private:
  // What a thread blocked in the bootstrap and the polling thread share; on
  // the heap, since a failing poll leaves the blocked thread behind.
  struct waiter_state_t {
    // release/acquire: the blocked call's effects (and `error`) are visible
    // once `finished` is seen.
    util::atomic<bool> finished{false};
    std::exception_ptr error;
  };

  // Runs `blocking` (a bootstrap collective) on a helper thread while this
  // thread keeps polling the registered endpoints. The wait has no bound of
  // its own: a peer that never arrives is ended by the launcher's timeout
  // (tools/real_network.bzl, the sh_tests), which names the ranks still running.
  void while_polling(const std::function<void()>& blocking) {
    auto state = std::make_shared<waiter_state_t>();
    std::thread waiter([state, &blocking] {
      try {
        blocking();
      } catch (...) {
        state->error = std::current_exception();
      }
      state->finished.store(true, util::mo_release);  // release: pairs with the acquire below
    });
    try {
      while (!state->finished.load(util::mo_acquire)) {  // acquire: see waiter_state_t
        poll_all();
        sched_yield();
      }
    } catch (...) {
      // The collective cannot finish without this rank's peers; the caller
      // ends the process (process_case), so the blocked thread is left behind.
      waiter.detach();
      throw;
    }
    waiter.join();
    if (state->error) std::rethrow_exception(state->error);
  }

  void poll_all() {
    std::vector<std::function<void()>> pollers;
    {
      std::lock_guard<std::mutex> guard(pollers_mutex_);
      for (const auto& entry : pollers_) pollers.push_back(entry.second);
    }
    for (const auto& poll : pollers) poll();
  }

  process_t& process_;
  std::mutex pollers_mutex_;
  std::vector<std::pair<const void*, std::function<void()>>> pollers_;
};

// The case named `name` over `process`; `skip_reason` (may be empty) adds
// the backend's own reasons to the rank-count one.
inline backend_case_t process_case(
    const std::string& name, process_t& process,
    std::function<std::string(const std::string& test_name)> skip_reason = {}) {
  backend_case_t result;
  result.name = name;
  result.run = [&process](int ranks_count, const rank_body_t& body) -> std::string {
    (void)ranks_count;  // equal to the job's size: skip_reason saw to it
    process_rank_ctx_t ctx(process);
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    try {
      body(ctx);
    } catch (const std::exception& error) {
      std::fflush(stdout);
      std::fprintf(stderr, "FAILED %s on rank %d: %s\n", test.c_str(),
                   process.context->rank_me(), error.what());
      std::fflush(stderr);
      std::_Exit(1);
    }
    return "";
  };
  result.skip_reason = [&process, skip_reason](const std::string& test_name,
                                                int ranks_count) -> std::string {
    const int ranks = process.context->rank_n();
    if (ranks_count != ranks) {
      return "written for " + std::to_string(ranks_count) + " ranks; this job has " +
             std::to_string(ranks);
    }
    return skip_reason ? skip_reason(test_name) : "";
  };
  return result;
}

// main()'s end: runs every test, then closes the context once every rank
// is done with it, and the bootstrap; returns RUN_ALL_TESTS()'s result.
inline int run_all_then_close(process_t& process) {
  const int result = RUN_ALL_TESTS();
  // Every rank has finished before any closes its network.
  process.bootstrap->barrier();
  process.context.reset();
  process.bootstrap.reset();
  return result;
}

}  // namespace lci::conformance
