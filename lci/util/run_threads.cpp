#include "lci/util/run_threads.hpp"

#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

#include "lci/util/assert.hpp"

namespace lci::util {

void run_threads(int threads_count, const std::function<void(int)>& body) {
  LCI_ASSERT(threads_count >= 1, "run_threads needs a thread");
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads_count));
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&body, &errors, t] {
      try {
        body(t);
      } catch (...) {
        errors[static_cast<std::size_t>(t)] = std::current_exception();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace lci::util
