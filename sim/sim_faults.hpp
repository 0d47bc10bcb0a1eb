// fault_options_t: the simulated network's fault model (docs/design.md, "The
// simulated network"; docs/design/sim_network.md). Each fault is a named
// option with a probability, off (0) by default, settable per test and by
// environment: LCI_SIM_FAULT_<NAME>=<probability>, e.g.
// LCI_SIM_FAULT_SEND_QUEUE_FULL=0.1. Where each is drawn:
//
//   send_queue_full       post_*: returns retry_nomem, nothing changes
//   no_recv_buffer        a message arriving at its target acts as if no
//                         receive buffer were posted: it waits (RNR) and is
//                         delivered by a later post_recv/poll_comp
//   cq_pressure           poll_comp returns fewer completions than it could
//   lock_busy             a call finds the device's try-lock "busy":
//                         post_* returns retry_lock, poll_comp returns 0
//   reorder               a message gets up to reorder_ticks_max extra delay
//   delay_spike           a message gets delay_spike_ticks extra delay
//   registration_failure  register_memory returns retry_nomem
//   rank_crash            the calling rank crashes at a backend call (its
//                         peers see peer_crashed; it gets rank_crashed_t)
//   preempt               concurrent mode: the calling thread sleeps
//                         preempt_micros (loses its core) once the call is
//                         done and again when its next call begins, both
//                         outside every lock, so another thread of the rank
//                         runs inside what would be a few-instruction window
//                         between this thread's calls. Deterministic mode
//                         never draws it: every call is a scheduling point
//                         there already.
//
// Thread safety: plain data. Blocking: never. Allocation: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lci::sim {

enum class fault_kind_t : std::uint8_t {
  send_queue_full,
  no_recv_buffer,
  cq_pressure,
  lock_busy,
  reorder,
  delay_spike,
  registration_failure,
  rank_crash,
  preempt,
};
inline constexpr std::size_t fault_kinds_count = 9;

struct fault_options_t {
  double rates[fault_kinds_count] = {};  // by fault_kind_t; all 0: no faults
  std::uint64_t reorder_ticks_max = 1000;
  std::uint64_t delay_spike_ticks = 20000;
  std::uint32_t preempt_micros = 50;

  double& rate(fault_kind_t kind) { return rates[static_cast<std::size_t>(kind)]; }
  double rate(fault_kind_t kind) const { return rates[static_cast<std::size_t>(kind)]; }
  bool any() const;
};

// "send_queue_full", ...; the env name is LCI_SIM_FAULT_ + its upper case.
const char* get_fault_name(fault_kind_t kind);

// Overrides rates from LCI_SIM_FAULT_<NAME> (a malformed value or one outside
// [0, 1] is a usage error: it aborts naming the variable).
void apply_fault_env(fault_options_t* options);

// "send_queue_full=0.1 lock_busy=0.05" (only non-zero rates; "none").
std::string describe_faults(const fault_options_t& options);

}  // namespace lci::sim
