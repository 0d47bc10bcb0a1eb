// Runs a small multithreaded workload many times and checks every recorded
// history for linearizability. A rejected history is printed (up to
// rejected_histories_printed_max per call), so that a failure seen once, e.g.
// under a sanitizer's scheduling, can be read without reproducing it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tests/linearizability/checker.hpp"
#include "tests/linearizability/history.hpp"

namespace lci::linearizability {

inline constexpr int rejected_histories_printed_max = 3;

struct runs_summary_t {
  int runs_count = 0;
  int rejected_count = 0;       // histories with no valid linearization
  std::size_t operations_count = 0;
};

// One operation per line in invocation order: its interval on the recorder's
// clock, its thread and what it did in the model's words.
template <typename Model>
void print_history(int run, std::vector<operation_t> history) {
  std::sort(history.begin(), history.end(),
            [](const operation_t& a, const operation_t& b) {
              return a.invoke_time < b.invoke_time;
            });
  std::printf("[linearizability] run %d rejected; its %zu operations "
              "(invoke..response, thread, operation):\n",
              run, history.size());
  for (const operation_t& op : history) {
    std::printf("  %4llu..%-4llu  t%d  %s\n",
                static_cast<unsigned long long>(op.invoke_time),
                static_cast<unsigned long long>(op.response_time),
                op.thread_index, Model::describe(op).c_str());
  }
}

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
    if (is_linearizable(history, make_model())) continue;
    if (summary.rejected_count < rejected_histories_printed_max) {
      print_history<Model>(run, history);
    }
    ++summary.rejected_count;
  }
  std::printf("[linearizability] %d runs, %zu operations, %d histories rejected\n",
              summary.runs_count, summary.operations_count, summary.rejected_count);
  return summary;
}

}  // namespace lci::linearizability
