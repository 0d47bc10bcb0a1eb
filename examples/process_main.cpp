// main() of an example run as a real process (examples/example_main.hpp):
// rank_main once, as this process's rank.
#include <cstdio>
#include <exception>
#include <thread>
#include <vector>

#include "examples/example_main.hpp"

void example::run_threads(int threads_count, const std::function<void(int)>& body) {
  // One slot per thread, read after the join.
  std::vector<std::exception_ptr> thrown(static_cast<std::size_t>(threads_count));
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&, t] {
      try {
        body(t);
      } catch (...) {
        thrown[static_cast<std::size_t>(t)] = std::current_exception();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& error : thrown) {
    if (error) std::rethrow_exception(error);
  }
}

int main(int argc, char** argv) {
  try {
    return example::rank_main(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "rank_main threw: %s\n", error.what());
    return 1;
  }
}
