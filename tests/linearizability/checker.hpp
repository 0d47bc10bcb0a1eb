// A linearizability checker for small concurrent histories (Wing & Gong's
// search, with Lowe's memoization of (linearized set, model state)).
//
// Model requirements (a small sequential reference model):
//   struct model_t {
//     // Applies op's kind/arguments; returns true if the sequential result
//     // equals op.result (and then leaves the model in the new state).
//     bool apply(const operation_t& op);
//     std::string state_key() const;   // identifies the state for memoization
//     // One operation in words, for printing a rejected history.
//     static std::string describe(const operation_t& op);
//   };
//
// check() returns true if some total order of the operations (a) respects
// real time: an operation that responded before another was invoked comes
// first, and (b) makes every recorded result the model's result. Histories are
// limited to 64 operations (the linearized set is one 64-bit mask); at the
// sizes used (a few threads x a few operations) the search is instant.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/linearizability/history.hpp"

namespace lci::linearizability {

inline constexpr std::size_t operations_max = 64;

template <typename Model>
class checker_t {
 public:
  checker_t(std::vector<operation_t> history, Model initial)
      : operations_(std::move(history)), initial_(std::move(initial)) {
    std::sort(operations_.begin(), operations_.end(),
              [](const operation_t& a, const operation_t& b) {
                return a.invoke_time < b.invoke_time;
              });
  }

  bool check() {
    if (operations_.size() > operations_max) return false;  // refuse, never guess
    visited_.clear();
    explored_count_ = 0;
    return search(0, initial_);
  }

  // States the search visited: a measure of the work done.
  std::size_t explored_count() const { return explored_count_; }

 private:
  using mask_t = std::uint64_t;

  // An operation may be linearized next if it is not linearized yet and no
  // other pending operation responded before it was invoked.
  bool is_candidate(std::size_t i, mask_t done) const {
    if (done & (mask_t{1} << i)) return false;
    for (std::size_t j = 0; j < operations_.size(); ++j) {
      if (j == i || (done & (mask_t{1} << j))) continue;
      if (operations_[j].response_time < operations_[i].invoke_time) return false;
    }
    return true;
  }

  bool search(mask_t done, const Model& model) {
    const mask_t all = operations_.size() == 64
                           ? ~mask_t{0}
                           : (mask_t{1} << operations_.size()) - 1;
    if (done == all) return true;
    if (!visited_.insert({done, model.state_key()}).second) return false;
    ++explored_count_;
    for (std::size_t i = 0; i < operations_.size(); ++i) {
      if (!is_candidate(i, done)) continue;
      Model next = model;
      if (!next.apply(operations_[i])) continue;
      if (search(done | (mask_t{1} << i), next)) return true;
    }
    return false;
  }

  std::vector<operation_t> operations_;
  Model initial_;
  std::set<std::pair<mask_t, std::string>> visited_;
  std::size_t explored_count_ = 0;
};

template <typename Model>
bool is_linearizable(std::vector<operation_t> history, Model initial) {
  checker_t<Model> checker(std::move(history), std::move(initial));
  return checker.check();
}

}  // namespace lci::linearizability
