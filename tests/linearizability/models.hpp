// Sequential reference models for the linearizability checker.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>

#include "tests/linearizability/history.hpp"

namespace lci::linearizability {

// A FIFO queue of non-zero values, bounded by capacity (0 = unbounded).
//   kind push: argument = value; result = 1 if stored, 0 if refused (full)
//   kind pop:  result = value, or 0 if empty
struct fifo_model_t {
  enum kind_t { push = 0, pop = 1 };
  std::size_t capacity = 0;
  std::deque<std::uint64_t> values;

  bool apply(const operation_t& op) {
    if (op.kind == push) {
      const bool fits = capacity == 0 || values.size() < capacity;
      if (fits) values.push_back(op.argument);
      return op.result == (fits ? 1u : 0u);
    }
    if (values.empty()) return op.result == 0;
    if (op.result != values.front()) return false;
    values.pop_front();
    return true;
  }
  std::string state_key() const {
    std::string key;
    for (std::uint64_t value : values) key += std::to_string(value) + ",";
    return key;
  }
  static std::string describe(const operation_t& op) {
    if (op.kind == push) {
      return "push(" + std::to_string(op.argument) + ") -> " +
             (op.result == 1 ? "stored" : "full");
    }
    return "pop() -> " + (op.result == 0 ? std::string("empty")
                                          : std::to_string(op.result));
  }
};

// The matching engine: per key, a FIFO of waiting entries of one type.
//   kind insert: argument = key, argument2 = value | (type << 63);
//                result = 0 if stored, else the matched entry's value
struct matching_model_t {
  static constexpr std::uint64_t type_bit = std::uint64_t{1} << 63;
  std::map<std::uint64_t, std::deque<std::uint64_t>> waiting;  // key -> values|type

  bool apply(const operation_t& op) {
    auto& queue = waiting[op.argument];
    const std::uint64_t type = op.argument2 & type_bit;
    if (!queue.empty() && (queue.front() & type_bit) != type) {
      const std::uint64_t matched = queue.front() & ~type_bit;
      if (op.result != matched) return false;
      queue.pop_front();
      return true;
    }
    if (op.result != 0) return false;
    queue.push_back(op.argument2);
    return true;
  }
  std::string state_key() const {
    std::string key;
    for (const auto& [k, queue] : waiting) {
      if (queue.empty()) continue;
      key += std::to_string(k) + ":";
      for (std::uint64_t entry : queue) key += std::to_string(entry) + ",";
      key += ";";
    }
    return key;
  }
  static std::string describe(const operation_t& op) {
    const bool is_recv = (op.argument2 & type_bit) != 0;
    return std::string("insert(key ") + std::to_string(op.argument) + ", " +
           (is_recv ? "recv " : "send ") + std::to_string(op.argument2 & ~type_bit) +
           ") -> " + (op.result == 0 ? std::string("stored")
                                      : "matched " + std::to_string(op.result));
  }
};

}  // namespace lci::linearizability
