// Concurrent histories for the linearizability checker.
//
// Each thread records its operations into its own log (no shared writes
// while the structure under test runs); every invocation and response takes a
// timestamp from one shared seq_cst counter, so timestamps respect real-time
// order: if operation a responded before b was invoked, a.response < b.invoke.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

namespace lci::linearizability {

// One completed operation. The meaning of kind/argument/result is the
// model's (e.g. kind 0 = push with argument v; kind 1 = pop with result v).
struct operation_t {
  int thread_index;
  int kind;
  std::uint64_t argument;
  std::uint64_t argument2;
  std::uint64_t result;
  std::uint64_t invoke_time;
  std::uint64_t response_time;
};

class recorder_t {
 public:
  explicit recorder_t(int threads_count) : logs_(threads_count) {}

  std::uint64_t now() { return clock_.fetch_add(1, std::memory_order_seq_cst); }

  // Call as: auto t0 = rec.now(); result = op(); rec.record(thread, kind, arg, arg2, result, t0);
  void record(int thread_index, int kind, std::uint64_t argument,
              std::uint64_t argument2, std::uint64_t result,
              std::uint64_t invoke_time) {
    logs_[thread_index].push_back(
        {thread_index, kind, argument, argument2, result, invoke_time, now()});
  }

  std::vector<operation_t> history() const {
    std::vector<operation_t> all;
    for (const auto& log : logs_) all.insert(all.end(), log.begin(), log.end());
    return all;
  }

 private:
  std::atomic<std::uint64_t> clock_{0};
  std::vector<std::vector<operation_t>> logs_;
};

}  // namespace lci::linearizability
