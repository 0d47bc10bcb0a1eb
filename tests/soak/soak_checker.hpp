// The soak's checks: every completion an operation gets (its status fields,
// the bytes it moved), every arrival at a target (exactly once, from the
// rank and thread the plan says, with the bytes the plan says), the put area
// after the epoch (every region holds its put, every guard its canary), and
// the ranks' accounting exchange (what each rank completed towards a peer
// equals what that peer received from it).
//
// Failures are collected (error_log_t), not thrown, where a callback finds
// them (handlers, graph edges run inside progress and must not throw); the
// workload ends the run at its next check of the log.
//
// Thread safety: error_log_t and inbound_ledger_t's on_* methods may run
//                concurrently from any thread of the rank; reset() and the
//                final checks only while no other thread uses the ledger.
// Allocation:    reset() sizes the ledger for the epoch; on_* never allocate
//                (except an error's message).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lci.hpp"
#include "tests/soak/soak_plan.hpp"

namespace lci::soak {

class error_log_t {
 public:
  static constexpr std::size_t kept_max = 16;
  void fail(const std::string& what);
  bool failed() const { return count_.load(std::memory_order_acquire) != 0; }
  std::size_t count() const { return count_.load(std::memory_order_acquire); }
  // The first kept_max messages, one per line.
  std::string report() const;

 private:
  mutable std::mutex lock_;
  std::vector<std::string> kept_;  // under lock_
  std::atomic<std::size_t> count_{0};
};

// What one rank observed towards or from one peer in an epoch: operations
// the target sees with a status of their own (AMs, sends, signalled RMAs
// whose remote completion is not a counter), by kind, and their bytes.
struct pair_counts_t {
  std::uint64_t ops[op_kinds_count] = {};
  std::uint64_t bytes = 0;
  bool operator==(const pair_counts_t& other) const;
  std::string describe() const;
};

// Whether `op`'s arrival is seen by its target as a status of its own.
bool seen_by_target(const op_plan_t& op);

// The expectations of one epoch at one rank (the plan's inbound tables) and
// what arrived.
class inbound_ledger_t {
 public:
  // Starts an epoch; `put_area` is this rank's put area (checked at signals).
  void reset(const epoch_plan_t* plan, const std::uint8_t* put_area);

  // An active message, popped from or handed to the remote completion
  // object of kind `via`. Frees its buffer.
  void on_am(const status_t& status, remote_kind_t via, error_log_t& errors);
  // A put_signal or get_signal status from the remote completion `via`.
  void on_signal(const status_t& status, remote_kind_t via, error_log_t& errors);
  // A receive for `op` (a send to this rank) completed; its bytes were
  // checked by the caller.
  void on_recv(const op_plan_t& op, error_log_t& errors);

  // Every status-carrying arrival came, and the counter reached its count.
  bool complete(std::int64_t counter_value) const;
  std::int64_t counter_expected() const { return counter_expected_; }
  // After the epoch's end barrier: each expected arrival came exactly once,
  // the counter holds exactly its count.
  void check_final(std::int64_t counter_value, error_log_t& errors) const;
  pair_counts_t received_from(int source) const;

 private:
  // One slot per inbound op: arrivals seen.
  struct source_t {
    std::unique_ptr<std::atomic<std::uint32_t>[]> arrivals;  // by pair_index
    std::unique_ptr<std::atomic<std::uint64_t>[]> counts;    // by op kind
    std::atomic<std::uint64_t> bytes{0};
  };
  // Counts one arrival of `op`; false (and an error) when it came before.
  bool arrive(const op_plan_t& op, const char* how, error_log_t& errors);
  const op_plan_t* lookup_pair(const status_t& status, const char* what, error_log_t& errors) const;

  const epoch_plan_t* plan_ = nullptr;
  const std::uint8_t* put_area_ = nullptr;
  std::vector<source_t> sources_;
  std::int64_t events_expected_ = 0;
  std::int64_t counter_expected_ = 0;
  std::atomic<std::int64_t> events_arrived_{0};
};

// Checks a local completion: done, and rank, tag, size, buffer and
// user_context as posted. `what` names the operation in errors.
void check_local_status(const status_t& status, int rank, tag_t tag, std::size_t size,
                        const void* buffer, const void* user_context, const std::string& what,
                        error_log_t& errors);

// The bytes a completed receive (payload of `op`) or get (the target's get
// area at op.remote_offset) left in `buffer`.
void check_received_bytes(const epoch_plan_t& plan, const op_plan_t& op, const void* buffer,
                          const std::string& what, error_log_t& errors);

// After the end barrier: the whole put area of this rank (plan.me).
void check_put_area(const epoch_plan_t& plan, const std::uint8_t* area, error_log_t& errors);

}  // namespace lci::soak
