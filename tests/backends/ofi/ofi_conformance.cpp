// The backend conformance suite over libfabric, as real processes. Started
// by tools/lcirun -n N (tests/backends/ofi/BUILD), each process is one rank;
// a test body runs once here, as this process's rank, on devices of the
// process's ofi context (provider: LCI_ATTR_OFI_PROVIDER_NAME, else the
// backend's default). Tests written for a rank count other than N are
// skipped (the sh_tests run N = 2, 3 and 4), and so is RmaProtectionFaults
// over shm, which does not check remote keys (docs/backends/ofi.md).
//
// A failing body prints its failure and ends the process at once (exit 1):
// its peers would otherwise wait for it in the next collective. lcirun then
// terminates the other ranks and exits with that code.
#include <gtest/gtest.h>

#include <sched.h>

#include <cctype>
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

#include "backends/ofi/ofi_context.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "lci/util/atomic.hpp"
#include "tests/backends/conformance/conformance.hpp"
#include "tests/backends/ofi/ofi_test_env.hpp"

namespace lci::conformance {
namespace {

// This process: its bootstrap and ofi context, set up by main().
struct process_t {
  std::unique_ptr<bootstrap::bootstrap_t> bootstrap;
  std::unique_ptr<backend::ofi::ofi_context_t> context;
  std::size_t allgathers_count = 0;  // names each allgather's bootstrap key
};
process_t* g_process = nullptr;

[[noreturn]] void fail_fast(const std::string& test_name, const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr, "FAILED %s on rank %d: %s\n", test_name.c_str(),
               g_process->context->rank_me(), what.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

class ofi_rank_ctx_t final : public rank_ctx_t {
 public:
  explicit ofi_rank_ctx_t(process_t& process) : process_(process) {}

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
    std::vector<std::exception_ptr> errors(threads_count);
    std::vector<std::thread> threads;
    for (int t = 0; t < threads_count; ++t) {
      threads.emplace_back([&body, &errors, t] {
        try {
          body(t);
        } catch (...) {
          errors[t] = std::current_exception();
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (const std::exception_ptr& error : errors) {
      if (error) std::rethrow_exception(error);
    }
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
  // (tests/backends/ofi/BUILD), which names the ranks still running.
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
      // ends the process (fail_fast), so the blocked thread is left behind.
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

std::string skip_reason(const std::string& test_name, int ranks_count) {
  const int ranks = g_process->context->rank_n();
  if (ranks_count != ranks) {
    return "written for " + std::to_string(ranks_count) + " ranks; this job has " +
           std::to_string(ranks);
  }
  if (test_name == "RmaProtectionFaults" && g_process->context->provider_name() == "shm") {
    return "libfabric 1.17's shm provider writes and reads peer memory with "
           "process_vm_writev/readv without checking the remote key, so a bad key "
           "corrupts the victim instead of failing (docs/backends/ofi.md)";
  }
  return "";
}

std::string case_name_for(const std::string& provider) {
  std::string name = "ofi_" + (provider.empty() ? std::string("default") : provider);
  for (char& c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) c = '_';
  }
  return name;
}

std::vector<backend_case_t> ofi_cases() {
  backend_case_t result;
  result.name = case_name_for(provider_from_env());
  result.run = [](int ranks_count, const rank_body_t& body) -> std::string {
    (void)ranks_count;  // equal to the job's size: skip_reason saw to it
    ofi_rank_ctx_t ctx(*g_process);
    const std::string test =
        ::testing::UnitTest::GetInstance()->current_test_info()->name();
    try {
      body(ctx);
    } catch (const std::exception& error) {
      fail_fast(test, error.what());
    }
    return "";
  };
  result.skip_reason = skip_reason;
  return {result};
}

INSTANTIATE_TEST_SUITE_P(Ofi, BackendConformance, ::testing::ValuesIn(ofi_cases()), case_name);

}  // namespace
}  // namespace lci::conformance

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  lci::conformance::process_t process;
  process.bootstrap = lci::bootstrap::open_bootstrap();
  process.context = std::make_unique<lci::backend::ofi::ofi_context_t>(
      *process.bootstrap, lci::conformance::provider_from_env());
  lci::conformance::g_process = &process;
  std::printf("rank %d of %d: libfabric provider %s\n", process.context->rank_me(),
              process.context->rank_n(), process.context->provider_name().c_str());
  const int result = RUN_ALL_TESTS();
  // Every rank has finished before any closes its fabric.
  process.bootstrap->barrier();
  process.context.reset();
  lci::conformance::g_process = nullptr;
  return result;
}
