// ofi_device_t: completion translation — poll_comp reads the CQ and turns
// each entry, error entries too, into the contract's net_status_t
// (docs/backends/ofi.md: "Multi-receive buffers", "Faults").
#include <rdma/fabric.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "backends/ofi/detail/ofi_check.hpp"
#include "backends/ofi/detail/ofi_device_impl.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/try_lock.hpp"

namespace lci::backend::ofi::detail {

namespace {

// CQ entries read per fi_cq_readfrom call, and calls per poll_comp: bounds
// the time one poll holds the endpoint lock.
constexpr std::size_t cq_batch_max = 16;
constexpr std::size_t cq_reads_max = 8;
// How long a refused RMA waits before it is reported, so that a target that
// was being killed shows as dead (translate_error_locked).
constexpr std::uint64_t fault_verdict_delay_ns = 100'000'000;

}  // namespace

std::size_t ofi_device_impl_t::poll_comp(net_status_t* statuses, std::size_t statuses_max) {
  if (statuses_max == 0) return 0;
  LCI_ASSERT(statuses != nullptr, "poll_comp: statuses is null");
  util::try_lock_guard_t guard(lock_, 0, waits_for_lock(backend::net_lock_try_poll));
  if (!guard.owns_lock()) return 0;
  // The common poll finds nothing deferred, settled or dead: a load each.
  if (ops_.deferred_count() != 0) retry_deferred_locked();
  if (recv_failure_at_ns_ != 0) check_recv_failure_locked();
  std::size_t count = ops_.has_settled() ? report_settled_locked(statuses, statuses_max) : 0;
  // A dead peer is reported only after what it sent before it exited (the
  // last rounds of the barrier a leaving rank runs, runtime_impl.hpp) is
  // handed over: after a read that found the CQ empty (below), or, on a CQ
  // that other peers keep full, once several times its depth has been read
  // since the death was found (here, before this poll's reads, which could
  // otherwise fill every status).
  if (dead_unreported_count_ != 0 && dead_report_due_locked()) {
    count += report_dead_locked(statuses + count, statuses_max - count);
  }
  bool stop = false;
  // Equivalent mutants: bound (both). `reads <= cq_reads_max` reads one
  // batch more in a poll: the limit only bounds how long a poll holds the
  // lock. `count <= statuses_max` adds, on a full array, reads of zero
  // entries (poll_comp returned at statuses_max == 0, so count > 0 and
  // has_reported is true): fi_cq_readfrom of 0 entries moves none, an
  // error entry is left in the CQ (read_cq_locked), and nothing is written.
  for (std::size_t reads = 0; reads < cq_reads_max && count < statuses_max && !stop; ++reads) {
    count += read_cq_locked(statuses + count, statuses_max - count, count > 0, &stop);
  }
  // Equivalent mutants: bound. `stop` implies count < statuses_max: only
  // read_cq_locked sets it, after a read that began below the limit and
  // added fewer entries than the room it was given (none, or fewer than it
  // asked for), so the `<=` mutant changes nothing.
  if (dead_unreported_count_ != 0 && stop && count < statuses_max) {
    count += report_dead_locked(statuses + count, statuses_max - count);
  }
  LCI_ASSERT(count <= statuses_max, "poll_comp overfilled its array");
  // Idle and busy polls both lead to liveness checks: a dead peer must be
  // found even while other peers keep this device busy.
  if (count == 0) {
    note_idle_locked(-1);
  } else {
    note_busy_poll_locked();
  }
  return count;
}

std::size_t ofi_device_impl_t::report_settled_locked(net_status_t* statuses,
                                               std::size_t statuses_max) {
  std::size_t count = 0;
  while (count < statuses_max && ops_.has_settled()) {
    op_t* op = ops_.pop_settled();
    net_status_t& status = statuses[count++];
    status = net_status_t{};
    status.opcode = op->opcode;
    status.fault = op->fault;
    status.rank = op->rank;
    status.user_context = op->user_context;
    status.length = op->length;
    const bool rma_fault = op->fault != net_fault_t::none && op->opcode != net_opcode_t::send;
    status.fault_address = rma_fault ? op->remote_address : 0;
    if (op->state == op_state_t::abandoned) {
      // libfabric may still hold it: free only once it gave it back.
      op->reported = true;
      if (op->returned) ops_.release(op);
    } else {
      ops_.release(op);
    }
  }
  return count;
}

std::size_t ofi_device_impl_t::read_cq_locked(net_status_t* statuses, std::size_t statuses_max,
                                         bool has_reported, bool* stop) {
  fi_cq_data_entry entries[cq_batch_max];
  fi_addr_t sources[cq_batch_max];
  const std::size_t wanted = std::min(statuses_max, cq_batch_max);
  const long read = fi_cq_readfrom(cq_, entries, wanted, sources);
  if (read > 0) cq_entries_read_ += static_cast<std::uint64_t>(read);
  if (read == -FI_EAGAIN) {
    *stop = true;
    return 0;
  }
  if (read == -FI_EAVAIL) {
    // An error may throw (a failed receive): first hand over what this poll
    // already has; the error waits in the CQ for the next poll.
    if (has_reported) {
      *stop = true;
      return 0;
    }
    return translate_error_locked(statuses) ? 1 : 0;
  }
  if (read < 0) throw std::runtime_error("lci ofi: " + describe_fi_error("fi_cq_readfrom", read));
  LCI_ASSERT(static_cast<std::size_t>(read) <= wanted, "fi_cq_readfrom returned too many");
  std::size_t count = 0;
  for (long i = 0; i < read; ++i) {
    if (quirk_remote_rma_context_ && (entries[i].flags & (FI_REMOTE_WRITE | FI_REMOTE_READ)) != 0) {
      entries[i].op_context = reinterpret_cast<void*>(std::uintptr_t{1});
    }
    if (translate_locked(&entries[i], sources[i], &statuses[count])) ++count;
  }
  if (static_cast<std::size_t>(read) < wanted) *stop = true;  // the CQ is drained
  return count;
}

bool ofi_device_impl_t::translate_locked(const void* raw_entry, std::uint64_t source,
                                    net_status_t* status) {
  const auto& entry = *static_cast<const fi_cq_data_entry*>(raw_entry);
  // The target side of an RMA is no operation of ours, whatever op_context
  // says: fi_cq(3) has it NULL there, but shm of libfabric 1.17 sometimes
  // hands a remote write's completion a non-null context (0x1 was seen,
  // after a few hundred 64 KiB writes with CQ data), so it is told by its
  // flags before the context is looked at.
  const std::uint64_t remote_rma = FI_REMOTE_WRITE | FI_REMOTE_READ;
  if ((entry.flags & remote_rma) != 0 || entry.op_context == nullptr) {
    // The target side of a put-with-immediate, or an event with nothing to
    // report.
    const std::uint64_t remote_data = FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA;
    if ((entry.flags & remote_data) != remote_data) return false;
    *status = net_status_t{};
    status->opcode = net_opcode_t::remote_write;
    status->rank = rank_of(source);
    status->length = static_cast<std::size_t>(entry.data >> 32);
    status->imm_data = static_cast<net_imm_data_t>(entry.data);
    return true;
  }
  op_t* op = ops_.from_context(entry.op_context);
  if (op->multi_recv) {
    translate_multi_recv_locked(entry, source, op, status);
    return true;
  }
  if (op->state == op_state_t::abandoned) {
    op->returned = true;
    if (op->reported) ops_.release(op);
    return false;
  }
  *status = net_status_t{};
  status->opcode = op->opcode;
  status->rank = op->rank;
  status->user_context = op->user_context;
  status->length = op->length;
  const bool report = !op->inject;
  if (op->opcode == net_opcode_t::recv) {
    status->rank = rank_of(source);
    status->buffer = op->buffer;
    status->length = entry.len;
    if ((entry.flags & FI_REMOTE_CQ_DATA) != 0) {
      status->imm_data = static_cast<net_imm_data_t>(entry.data);
    }
  } else if (op->opcode == net_opcode_t::remote_write) {
    receive_notice_locked(entry, source, op, status);
    return true;
  } else if (op->notice_data != 0 && !op->is_notice) {
    send_notice_locked(op);
    return report;
  }
  ops_.release(op);
  return report;
}

void ofi_device_impl_t::translate_multi_recv_locked(const fi_cq_data_entry& entry, fi_addr_t source,
                                               op_t* op, net_status_t* status) {
  LCI_ASSERT(op->state == op_state_t::posted, "a multi-receive buffer is posted until released");
  // Flags beyond FI_MULTI_RECV (FI_RECV, FI_MSG) mark a message; without
  // them the entry only releases the buffer (fi_cq(3); shm does that).
  if ((entry.flags & ~FI_MULTI_RECV) == 0) {
    LCI_ASSERT((entry.flags & FI_MULTI_RECV) != 0, "a multi-receive entry with no flags");
    release_multi_recv_locked(op, status);
    return;
  }
  const auto* bytes = static_cast<const char*>(entry.buf);
  const auto* begin = static_cast<const char*>(op->buffer);
  LCI_ASSERT(bytes >= begin, "a message before its multi-receive buffer");
  LCI_ASSERT(bytes + entry.len <= begin + op->length, "a message past its multi-receive buffer");
  *status = net_status_t{};
  status->opcode = net_opcode_t::recv;
  status->rank = rank_of(source);
  status->user_context = op->user_context;
  status->buffer = entry.buf;
  status->length = entry.len;
  if ((entry.flags & FI_REMOTE_CQ_DATA) != 0) {
    status->imm_data = static_cast<net_imm_data_t>(entry.data);
  }
  ++op->multi_recv_messages;
  if ((entry.flags & FI_MULTI_RECV) != 0) {
    status->buffer_released = true;
    status->buffer_messages = op->multi_recv_messages;
    ops_.release(op);
  }
}

void ofi_device_impl_t::release_multi_recv_locked(op_t* op, net_status_t* status) {
  LCI_ASSERT(op->multi_recv, "not a multi-receive buffer");
  *status = net_status_t{};
  status->opcode = net_opcode_t::recv;
  status->rank = rank_me_;  // no message, so no peer: any valid rank will do
  status->user_context = op->user_context;
  status->buffer_released = true;
  status->buffer_messages = op->multi_recv_messages;
  ops_.release(op);
}

bool ofi_device_impl_t::translate_error_locked(net_status_t* status) {
  fi_cq_err_entry error{};
  const long rc = fi_cq_readerr(cq_, &error, 0);
  if (rc == -FI_EAGAIN) return false;
  if (rc < 0) throw std::runtime_error("lci ofi: " + describe_fi_error("fi_cq_readerr", rc));
  if (error.op_context == nullptr) return false;  // no operation of ours failed
  const int code = std::abs(error.err);
  op_t* op = ops_.from_context(error.op_context);
  if (op->state == op_state_t::abandoned) {
    op->returned = true;
    if (op->reported) ops_.release(op);
    return false;
  }
  if (op->multi_recv) return translate_multi_recv_error_locked(error, op, status);
  if (op->opcode == net_opcode_t::recv && is_connection_error(code)) {
    // A message was arriving when its connection broke (ofi_rxm fails the
    // receive it matched): what came of it is void, and the buffer stays
    // the network's, as the caller posted it. A sender whose send failed
    // with the connection posts the message again (below).
    op->state = op_state_t::taken;
    repost_recv_locked(op);
    return false;
  }
  if (op->opcode == net_opcode_t::recv && code != FI_ECANCELED && code != FI_ETRUNC) {
    note_recv_failure_locked(op, code);
    return false;
  }
  if (op->opcode == net_opcode_t::recv) {
    const std::size_t size = op->length;
    ops_.release(op);
    if (code == FI_ECANCELED) return false;  // dropped by the provider; nothing arrived
    throw std::runtime_error("lci ofi: a message longer than its " + std::to_string(size) +
                             "-byte receive buffer arrived (" +
                             describe_fi_error("completion", code) +
                             "): a sender's misuse");
  }
  const bool rma = op->opcode != net_opcode_t::send;
  if (lost_with_connection(*op, code) && may_repost(*op)) {
    // The connection broke under a peer that is alive: a protection fault
    // of another operation makes tcp drop it (the faulty RMA reports
    // FI_ECANCELED), and with it every operation in flight on it, sends
    // included. Post again once it is back; the fault, if any, is then
    // this operation's own. Reported instead, a send would name a live
    // peer as crashed (and the runtime give up on it).
    defer_repost_locked(op);
    return false;
  }
  *status = net_status_t{};
  status->opcode = op->opcode;
  status->rank = op->rank;
  status->user_context = op->user_context;
  status->length = op->length;
  const bool peer_dead = is_connection_error(code) || !peers_.is_alive(op->rank);
  if (rma && !peer_dead) {
    // tcp fails the RMAs of a killed peer with the code it gives an RMA the
    // (live) target refused, and the failure can arrive before the peer's
    // pid looks dead: the verdict waits a moment (retry_deferred_locked).
    op->fault = net_fault_t::protection;
    op->repost_at_ns = steady_now_ns() + fault_verdict_delay_ns;
    op->state = op_state_t::taken;
    ops_.push_deferred(op);
    return false;
  }
  status->fault = peer_dead || !rma ? net_fault_t::peer_crashed : net_fault_t::protection;
  if (peer_dead) mark_dead_locked(op->rank);
  status->fault_address = rma ? op->remote_address : 0;
  ops_.release(op);
  return true;
}

bool ofi_device_impl_t::translate_multi_recv_error_locked(const fi_cq_err_entry& error, op_t* op,
                                                     net_status_t* status) {
  // Until an entry carries FI_MULTI_RECV, libfabric still holds the buffer
  // (and may write into it): the op stays posted.
  const bool released = (error.flags & FI_MULTI_RECV) != 0;
  const int code = std::abs(error.err);
  if (code == FI_ECANCELED || is_connection_error(code)) {
    // Cancelled, or a message cut off with its connection (as for
    // post_recv): the caller learns that its buffer is back.
    if (!released) return false;
    release_multi_recv_locked(op, status);
    return true;
  }
  const std::size_t size = op->length;
  if (released) ops_.release(op);
  throw std::runtime_error(
      "lci ofi: a receive into a " + std::to_string(size) + "-byte multi-receive buffer failed: " +
      describe_fi_error("completion", code) + " (a message longer than multi_recv_min_free, " +
      std::to_string(attr_.multi_recv_min_free) + " bytes, may not fit: a sender's misuse)");
}

}  // namespace lci::backend::ofi::detail
