// A sequential reference model of the matching engine, and a driver that
// runs one operation on a real table_t and on the model and compares them.
// Shared by matching_property_test.cpp (RapidCheck) and fuzz/matching_fuzz.cpp
// (libFuzzer).
//
// The model never builds a key: it keeps every waiting entry in arrival order
// and decides matches with its own predicate over (policy, rank, tag) — ranks
// equal for rank_only, tags equal for tag_only, both for rank_tag, always for
// none, and tag % 3 equal for the user key function below. An insert matches
// the oldest waiting entry of the complementary type that satisfies the
// predicate; if there is none, the entry waits. Since the predicate is an
// equivalence, this is a FIFO queue of one type per class ("multiset per key
// with FIFO order"), which is what the table must implement through make_key.
//
// retry_nomem is the one outcome the model cannot predict without knowing the
// table's bucket layout, so the driver checks it from both sides instead: it
// is allowed only when the model holds no complementary match, no overflow
// node was free before the insert, and the model holds at least
// overflow_nodes_max entries (every node in use holds one); then nothing is
// stored. Whenever a node was free, the insert must not return it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <ostream>
#include <string>

#include "lci/matching/matching_table.hpp"

namespace lci::matching::testing {

// How the ops of one run are turned into keys.
enum class key_mode_t {
  rank_tag,   // every op uses matching_policy_t::rank_tag
  rank_only,  // ... rank_only
  tag_only,   // ... tag_only
  none,       // ... none
  mixed,      // each op carries its own built-in policy
  user,       // the table's user make_key_fn_t: user_key below
};
inline constexpr int key_modes_count = 6;

inline const char* key_mode_name(key_mode_t mode) {
  switch (mode) {
    case key_mode_t::rank_tag: return "rank_tag";
    case key_mode_t::rank_only: return "rank_only";
    case key_mode_t::tag_only: return "tag_only";
    case key_mode_t::none: return "none";
    case key_mode_t::mixed: return "mixed built-in policies";
    case key_mode_t::user: return "user key function (tag % 3)";
  }
  return "unknown";
}

// The user key function: only tag % 3 decides (rank and policy are ignored).
inline matching_entry_key_t user_key(int /*rank*/, tag_t tag,
                                     matching_policy_t /*policy*/) {
  return 0x5EED0000u + tag % 3;
}

struct op_t {
  matching_entry_type_t type = matching_entry_type_t::send;
  matching_policy_t policy = matching_policy_t::rank_tag;  // mode mixed only
  int rank = 0;
  tag_t tag = 0;
};

inline std::string op_string(const op_t& op) {
  return std::string(op.type == matching_entry_type_t::send ? "send" : "recv") +
         "(policy " + matching_policy_name(op.policy) + ", rank " +
         std::to_string(op.rank) + ", tag " + std::to_string(op.tag) + ")";
}

// For RapidCheck's counterexamples (found by argument-dependent lookup).
inline void showValue(const op_t& op, std::ostream& os) { os << op_string(op); }
inline void showValue(key_mode_t mode, std::ostream& os) { os << key_mode_name(mode); }

class reference_model_t {
 public:
  explicit reference_model_t(key_mode_t mode) : mode_(mode) {}

  // The policy an op is inserted with under this mode.
  matching_policy_t policy_of(const op_t& op) const {
    switch (mode_) {
      case key_mode_t::rank_tag: return matching_policy_t::rank_tag;
      case key_mode_t::rank_only: return matching_policy_t::rank_only;
      case key_mode_t::tag_only: return matching_policy_t::tag_only;
      case key_mode_t::none: return matching_policy_t::none;
      case key_mode_t::mixed: return op.policy;
      case key_mode_t::user: return op.policy;  // ignored by user_key
    }
    return op.policy;
  }

  // The model's own matching predicate: do a and b belong to one class?
  bool same_class(const op_t& a, const op_t& b) const {
    if (mode_ == key_mode_t::user) return a.tag % 3 == b.tag % 3;
    const matching_policy_t policy = policy_of(a);
    if (policy != policy_of(b)) return false;
    switch (policy) {
      case matching_policy_t::rank_tag: return a.rank == b.rank && a.tag == b.tag;
      case matching_policy_t::rank_only: return a.rank == b.rank;
      case matching_policy_t::tag_only: return a.tag == b.tag;
      case matching_policy_t::none: return true;
      case matching_policy_t::max: return false;  // never posted (make_key refuses it)
    }
    return false;
  }

  // Position of the oldest waiting entry that `op` matches, if any.
  std::optional<std::size_t> oldest_match(const op_t& op) const {
    for (std::size_t i = 0; i < waiting_.size(); ++i) {
      const entry_t& entry = waiting_[i];
      if (entry.op.type != op.type && same_class(entry.op, op)) return i;
    }
    return std::nullopt;
  }

  std::uint64_t id_at(std::size_t position) const { return waiting_[position].id; }
  void remove(std::size_t position) {
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(position));
  }
  void store(const op_t& op, std::uint64_t id) { waiting_.push_back({op, id}); }
  std::size_t entries_count() const { return waiting_.size(); }
  key_mode_t mode() const { return mode_; }

 private:
  struct entry_t {
    op_t op;
    std::uint64_t id;
  };
  key_mode_t mode_;
  std::deque<entry_t> waiting_;  // oldest first
};

// Distinct non-null values that carry an id the driver can read back.
inline matching_entry_val_t value_of_id(std::uint64_t id) {
  return reinterpret_cast<matching_entry_val_t>(
      static_cast<std::uintptr_t>((id << 4) | 8));
}
inline std::uint64_t id_of_value(matching_entry_val_t value) {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(value) >> 4);
}

// A table and its model side by side. buckets_count should be small: every
// step counts the table's entries (a walk over all buckets).
class driver_t {
 public:
  driver_t(key_mode_t mode, std::size_t buckets_count,
           std::size_t overflow_nodes_max)
      : table_(buckets_count, overflow_nodes_max,
               mode == key_mode_t::user ? &user_key : nullptr),
        model_(mode),
        buckets_count_(buckets_count),
        overflow_nodes_max_(overflow_nodes_max) {}

  // Runs op on both; returns "" if they agree, else what went wrong.
  std::string step(const op_t& op) {
    const std::uint64_t id = ++ids_count_;
    const std::size_t free_before = table_.overflow_nodes_free_count();
    const matching_entry_key_t key =
        table_.make_key(op.rank, op.tag, model_.policy_of(op));
    const insert_result_t result = table_.insert(key, value_of_id(id), op.type);
    std::string error = compare(op, id, result, free_before);
    if (!error.empty()) {
      return "op #" + std::to_string(id) + " " + op_string(op) + ": " + error;
    }
    return check_counts();
  }

  const table_t& table() const { return table_; }
  std::size_t retries_count() const { return retries_count_; }

 private:
  std::string compare(const op_t& op, std::uint64_t id,
                      const insert_result_t& result, std::size_t free_before) {
    const std::optional<std::size_t> match = model_.oldest_match(op);
    if (match.has_value()) {
      const std::uint64_t expected = model_.id_at(*match);
      if (result.kind != insert_kind_t::matched) {
        return "table did not match; model matches #" + std::to_string(expected);
      }
      if (id_of_value(result.value) != expected) {
        return "table matched #" + std::to_string(id_of_value(result.value)) +
               "; the oldest matching entry is #" + std::to_string(expected);
      }
      model_.remove(*match);
      return "";
    }
    if (result.kind == insert_kind_t::matched) {
      return "table matched #" + std::to_string(id_of_value(result.value)) +
             "; model has no waiting complementary entry";
    }
    if (result.kind == insert_kind_t::retry_nomem) {
      ++retries_count_;
      if (free_before != 0) {
        return "retry_nomem while " + std::to_string(free_before) + " nodes were free";
      }
      if (model_.entries_count() < overflow_nodes_max_) {
        return "retry_nomem although fewer entries wait than there are nodes";
      }
      return "";
    }
    model_.store(op, id);
    return "";
  }

  // Entries agree, and the nodes in use are between what the entries beyond
  // the inline room need and one per entry.
  std::string check_counts() const {
    const std::size_t entries = table_.entries_count();
    if (entries != model_.entries_count()) {
      return "table holds " + std::to_string(entries) + " entries, model " +
             std::to_string(model_.entries_count());
    }
    const std::size_t free = table_.overflow_nodes_free_count();
    if (free > overflow_nodes_max_) return "more free nodes than nodes";
    const std::size_t used = overflow_nodes_max_ - free;
    const std::size_t inline_room = buckets_count_ * detail::bucket_slots_count *
                                    detail::slot_values_count_max;
    const std::size_t beyond = entries > inline_room ? entries - inline_room : 0;
    const std::size_t used_min =
        (beyond + detail::node_values_count_max - 1) / detail::node_values_count_max;
    if (used > entries || used < used_min) {
      return std::to_string(used) + " overflow nodes in use for " +
             std::to_string(entries) + " entries";
    }
    return "";
  }

  table_t table_;
  reference_model_t model_;
  std::size_t buckets_count_;
  std::size_t overflow_nodes_max_;
  std::uint64_t ids_count_ = 0;
  std::size_t retries_count_ = 0;
};

}  // namespace lci::matching::testing
