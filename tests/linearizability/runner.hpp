// Runs a small multithreaded workload many times and checks every recorded
// history for linearizability.
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

#include "tests/linearizability/checker.hpp"
#include "tests/linearizability/history.hpp"

namespace lci::linearizability {

struct runs_summary_t {
  int runs_count = 0;
  int rejected_count = 0;       // histories with no valid linearization
  std::size_t operations_count = 0;
};

// For each run: make_state() builds a fresh structure (returned as an opaque
// shared state the body captures), all threads start together and each calls
// body(thread_index, recorder); then the history is checked against
// make_model().
template <typename Model>
runs_summary_t check_runs(
    int runs_count, int threads_count,
    const std::function<std::function<void(int, recorder_t&)>()>& make_run,
    const std::function<Model()>& make_model) {
  runs_summary_t summary;
  for (int run = 0; run < runs_count; ++run) {
    recorder_t recorder(threads_count);
    const auto body = make_run();
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < threads_count; ++t) {
      threads.emplace_back([&, t] {
        // Start together so operations overlap as much as possible.
        ready.fetch_add(1);
        while (ready.load() < threads_count) std::this_thread::yield();
        body(t, recorder);
      });
    }
    for (auto& thread : threads) thread.join();
    const auto history = recorder.history();
    summary.operations_count += history.size();
    ++summary.runs_count;
    if (!is_linearizable(history, make_model())) ++summary.rejected_count;
  }
  std::printf("[linearizability] %d runs, %zu operations, %d histories rejected\n",
              summary.runs_count, summary.operations_count, summary.rejected_count);
  return summary;
}

}  // namespace lci::linearizability
