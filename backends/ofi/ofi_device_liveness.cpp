// ofi_device_t: liveness — operations whose connection broke posted again
// while the peer lives, the deferred list, and dead peers found by pid or
// by connection errors and reported once (docs/backends/ofi.md, "Faults").
#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "backends/ofi/detail/ofi_check.hpp"
#include "backends/ofi/detail/ofi_device_impl.hpp"
#include "backends/ofi/ofi_repost_limits.hpp"
#include "lci/util/assert.hpp"

namespace lci::backend::ofi::detail {

namespace {

// dead_ values beyond 0 (alive).
constexpr unsigned char dead_found = 1;     // not reported yet
constexpr unsigned char dead_reported = 2;  // peer_down returned once
// How long a receive failure that no dead peer explains yet waits for one
// (note_recv_failure_locked): a process being killed fails the copies from
// it before /proc shows it exited.
constexpr std::uint64_t recv_failure_verdict_ns = 1'000'000'000;
// The first wait before an operation whose connection broke is posted
// again (doubled each time; at most connection_reposts_max times,
// ofi_repost_limits.hpp). ofi_rxm notices a broken connection only in its
// connection-management progress, which its CQ reads run every 10 ms
// (FI_OFI_RXM_CM_PROGRESS_INTERVAL): posted sooner, the operation fails on
// the old connection again.
constexpr std::uint64_t repost_delay_ns = 20'000'000;

}  // namespace

void ofi_device_impl_t::repost_locked(op_t* op) {
  if (op->is_notice) {
    post_notice_locked(op);
    return;
  }
  const long rc = op->opcode == net_opcode_t::send ? issue_send_locked(op) : issue_rma_locked(op);
  finish_repost_locked(op, rc);
}

void ofi_device_impl_t::finish_repost_locked(op_t* op, long rc) {
  if (rc == 0) {
    op->state = op_state_t::posted;
  } else if (rc == -FI_EAGAIN) {
    ops_.push_deferred(op);
  } else if (is_connection_error(static_cast<int>(-rc)) && may_repost(*op)) {
    defer_repost_locked(op);
  } else {
    // A notice: the data is in place but the target will never hear of it.
    fail_locked(op, net_fault_t::peer_crashed);
  }
}

void ofi_device_impl_t::defer_repost_locked(op_t* op) {
  // Equivalent mutants: bound. Every caller has had may_repost() say yes,
  // which needs reposts < connection_reposts_max (within_repost_limits), so
  // the assertion with `<=` holds in exactly the same runs.
  LCI_ASSERT(op->reposts < connection_reposts_max, "posted again too many times");
  op->repost_at_ns = steady_now_ns() + (repost_delay_ns << op->reposts);
  ++op->reposts;
  op->state = op_state_t::taken;
  ops_.push_deferred(op);
}

void ofi_device_impl_t::retry_deferred_locked() {
  if (ops_.deferred_count() == 0) return;
  const std::uint64_t now_ns = steady_now_ns();
  // Each op once: one that is refused again (or not due) waits for the next
  // poll.
  for (std::size_t n = ops_.deferred_count(); n > 0; --n) {
    op_t* op = ops_.pop_deferred();
    if (op->opcode == net_opcode_t::remote_write) {
      post_notice_recv_locked(op);
    } else if (op->repost_at_ns > now_ns) {
      ops_.push_deferred(op);
    } else if (op->fault != net_fault_t::none) {
      // A refused RMA's verdict (translate_error_locked): a target dead by
      // now was the cause.
      const bool peer_dead = !peers_.is_alive(op->rank);
      if (peer_dead) mark_dead_locked(op->rank);
      fail_locked(op, peer_dead ? net_fault_t::peer_crashed : net_fault_t::protection);
    } else if (op->opcode == net_opcode_t::recv) {
      repost_recv_locked(op);
    } else {
      repost_locked(op);  // a notice to send, or an op whose connection broke
    }
  }
}

void ofi_device_impl_t::repost_recv_locked(op_t* op) {
  LCI_ASSERT(op->opcode == net_opcode_t::recv, "not a receive");
  LCI_ASSERT(!op->multi_recv, "a multi-receive buffer stays posted until released");
  const long rc =
      fi_recv(ep_, op->buffer, op->length, op->desc, FI_ADDR_UNSPEC, &op->fi_context);
  if (rc == 0) {
    op->state = op_state_t::posted;
  } else if (rc == -FI_EAGAIN) {
    ops_.push_deferred(op);
  } else {
    throw std::runtime_error("lci ofi: posting a receive again: " +
                             describe_fi_error("fi_recv", rc));
  }
}

bool ofi_device_impl_t::lost_with_connection(const op_t& op, int code) {
  if (is_connection_error(code)) return true;
  // This backend cancels nothing: a cancelled send (or notice) is one the
  // provider flushed with its connection. A cancelled RMA may be the one
  // the target refused (see translate_error_locked), so it is not.
  const bool message = op.opcode == net_opcode_t::send || op.is_notice;
  return message && code == FI_ECANCELED;
}

bool ofi_device_impl_t::may_repost(const op_t& op) const {
  // A bounded number of times (a peer on another host cannot be checked),
  // and a message only as long as a failed one was never whole at the target.
  if (!within_repost_limits(op) || !peers_.is_alive(op.rank)) return false;
  // An inject's payload is the caller's again unless the device kept it
  // (keep_payload_locked); a notice has none.
  return !op.inject || op.is_notice || !injects_kept_.empty();
}

// ---- dead peers ----

void ofi_device_impl_t::note_idle_locked(int rank) {
  ++idle_turns_;
  if (idle_turns_ % peer_check_idle_turns != 0) return;
  if (rank >= 0 && dead_[rank] == 0 && !peers_.is_alive(rank)) {
    mark_dead_locked(rank);
    ops_.fail_posted_to(rank, net_fault_t::peer_crashed);
  }
  check_peers_locked();
}

void ofi_device_impl_t::note_busy_poll_locked() {
  ++busy_polls_;
  if (busy_polls_ % peer_check_busy_polls != 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - busy_check_last_ < peer_check_busy_interval) return;
  busy_check_last_ = now;
  check_peers_locked();
}

void ofi_device_impl_t::note_recv_failure_locked(op_t* op, int code) {
  LCI_ASSERT(op->opcode == net_opcode_t::recv, "not a receive");
  // The buffer stays the network's, as the caller posted it.
  const std::size_t size = op->length;
  op->state = op_state_t::taken;
  repost_recv_locked(op);
  if (any_peer_dead_locked()) return;
  if (recv_failure_at_ns_ != 0) return;  // the first one is judged first
  recv_failure_at_ns_ = steady_now_ns();
  recv_failure_what_ = "lci ofi: a receive into a " + std::to_string(size) +
                       "-byte buffer failed and no peer died: " +
                       describe_fi_error("completion", code);
}

void ofi_device_impl_t::check_recv_failure_locked() {
  LCI_ASSERT(recv_failure_at_ns_ != 0, "no receive failure pending");
  if (any_peer_dead_locked()) {
    recv_failure_at_ns_ = 0;
    return;
  }
  if (steady_now_ns() - recv_failure_at_ns_ < recv_failure_verdict_ns) return;
  recv_failure_at_ns_ = 0;
  throw std::runtime_error(recv_failure_what_);
}

bool ofi_device_impl_t::any_peer_dead_locked() {
  bool any = false;
  for (int rank = 0; rank < rank_n_; ++rank) {
    if (dead_[rank] == 0 && !peers_.is_alive(rank)) {
      mark_dead_locked(rank);
      ops_.fail_posted_to(rank, net_fault_t::peer_crashed);
    }
    any = any || dead_[rank] != 0;
  }
  return any;
}

void ofi_device_impl_t::mark_dead_locked(int rank) {
  if (dead_[rank] != 0) return;
  dead_[rank] = dead_found;
  ++dead_unreported_count_;
  cq_entries_read_at_death_ = cq_entries_read_;
}

bool ofi_device_impl_t::dead_report_due_locked() const {
  // The CQ never holds more than its depth (net_max_cqes covers every
  // operation in flight), except with multi-receive buffers, whose excess
  // completions libfabric's util CQ keeps in an overflow list
  // (docs/backends/ofi.md): hence a margin of several depths.
  return cq_entries_read_ - cq_entries_read_at_death_ >=
         dead_report_cq_depths * static_cast<std::uint64_t>(attr_.net_max_cqes);
}

// One peer_down completion per dead rank (backends/backend.hpp).
std::size_t ofi_device_impl_t::report_dead_locked(net_status_t* statuses, std::size_t statuses_max) {
  std::size_t count = 0;
  for (int rank = 0; rank < rank_n_ && dead_unreported_count_ > 0 && count < statuses_max;
       ++rank) {
    if (dead_[rank] != dead_found) continue;
    dead_[rank] = dead_reported;
    --dead_unreported_count_;
    statuses[count++] = backend::peer_down_status(rank);
  }
  return count;
}

void ofi_device_impl_t::check_peers_locked() {
  std::fill(checked_.begin(), checked_.end(), 0);
  ops_.for_each_posted_rank([this](int rank) {
    if (checked_[rank] != 0 || dead_[rank] != 0) return;
    checked_[rank] = 1;
    if (!peers_.is_alive(rank)) mark_dead_locked(rank);
  });
  // One more rank in turn, posted to or not: a rank that only waits for
  // messages from a dead peer must hear of it too.
  probe_next_rank_ = (probe_next_rank_ + 1) % rank_n_;
  if (dead_[probe_next_rank_] == 0 && !peers_.is_alive(probe_next_rank_)) {
    mark_dead_locked(probe_next_rank_);
  }
  for (int rank = 0; rank < rank_n_; ++rank) {
    if (checked_[rank] != 0 && dead_[rank] != 0) {
      ops_.fail_posted_to(rank, net_fault_t::peer_crashed);
    }
  }
}

}  // namespace lci::backend::ofi::detail
