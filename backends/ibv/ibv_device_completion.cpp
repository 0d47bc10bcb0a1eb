// ibv_device_t: completion translation — poll_comp reads the CQ and turns
// each work completion, error completions too, into the contract's
// net_status_t; receives whose completion took no buffer are posted again.
#include "backends/ibv/ibv_device.hpp"

#include <algorithm>
#include <cstdint>

#include "backends/ibv/detail/ibv_device_detail.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/try_lock.hpp"

namespace lci::backend::ibv {

using namespace detail;

namespace {

// Async events are read at the first of every async_idle_period polls in a
// row that find nothing, and every async_check_period polls.
constexpr std::size_t async_idle_period = 4;
constexpr std::size_t async_check_period = 256;

// After a remote access error, how many times a QP is re-established while
// the peer's QP (in ERR until the peer polls) times the requests out, before
// the peer counts as unreachable.
constexpr std::size_t repair_rounds_max = 64;
// Liveness: after this many polls in a row that found nothing, the device
// probes one peer (round robin) with a zero-byte RDMA write on its RMA QP;
// a probe that times out probe_rounds_max times in a row (the QP
// re-established in between) means the peer is gone.
constexpr std::size_t probe_idle_polls = 8;
constexpr std::size_t probe_rounds_max = 8;

net_opcode_t local_opcode(ibv_wr_opcode opcode) {
  switch (opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM: return net_opcode_t::send;
    case IBV_WR_RDMA_READ: return net_opcode_t::read;
    default: return net_opcode_t::write;
  }
}

}  // namespace

int ibv_device_t::rank_of_qp_num(std::uint32_t qp_num) const {
  const auto it = std::lower_bound(qp_nums_.begin(), qp_nums_.end(),
                                   std::pair<std::uint32_t, int>{qp_num, -1});
  LCI_ASSERT(it != qp_nums_.end() && it->first == qp_num, "a completion of a foreign QP");
  return it->second;
}

std::size_t ibv_device_t::drain_settled(net_status_t* statuses, std::size_t statuses_max) {
  std::size_t count = 0;
  while (count < statuses_max && dead_to_report_ > 0) {
    // Equivalent mutants: bound. While dead_to_report_ > 0 some peer is dead
    // and not yet reported, so the loop breaks at that peer before rank reaches
    // peers_.size() (tools/mutate_records/2026-11-28-runs-35-59.md, runs 42-47).
    for (std::size_t rank = 0; rank < peers_.size(); ++rank) {
      peer_t& peer = peers_[rank];
      if (!is_dead(peer) || peer.dead_reported) continue;
      peer.dead_reported = true;
      --dead_to_report_;
      statuses[count++] = backend::peer_down_status(static_cast<int>(rank));
      break;
    }
  }
  while (count < statuses_max && !settled_.empty()) {
    op_t* op = settled_.pop();
    net_status_t& status = statuses[count++];
    status = net_status_t{};
    status.opcode = local_opcode(op->opcode);
    status.fault = op->fault;
    status.rank = op->rank;
    status.user_context = op->inject ? nullptr : op->user_context;
    status.length = op->length;
    if (op->fault == net_fault_t::protection) status.fault_address = op->remote_address;
    release_op(op);
  }
  return count;
}

// A failed send-side WR: whether it makes a completion (into *status).
bool ibv_device_t::take_send_error(const ibv_wc& wc, op_t* op, net_status_t* status) {
  peer_t& peer = peers_[static_cast<std::size_t>(op->rank)];
  channel_t& channel = channel_of(op);
  if (op->is_goodbye) {  // never reported: the device is closing
    release_op(op);
    return false;
  }
  if (op->is_probe) {  // never reported: it finds out whether the peer is there
    if (peer.closed) {  // posted before its goodbye came: its QPs are gone, not it
      release_op(op);
      return false;
    }
    if (wc.status == IBV_WC_RETRY_EXC_ERR && !is_dead(peer)) {
      // Equivalent mutants: bound. probe_rounds_max tunes how many timed-out
      // probes in a row a silent peer is given; one round more declares the same
      // peer dead one probe timeout later, and a peer that answers resets the
      // count either way. It bounds nothing else (tools/mutate_records/2026-11-28-runs-35-59.md,
      // runs 42-47).
      if (channel.repair_rounds < probe_rounds_max) {
        ++channel.repair_rounds;
        channel.needs_repair.store(true, util::mo_relaxed);  // relaxed: see post_op()
      } else {
        mark_dead(op->rank);
      }
    } else if (!is_dead(peer)) {
      channel.needs_repair.store(true, util::mo_relaxed);  // flushed behind another failure
    }
    release_op(op);
    return false;
  }
  // Equivalent mutants: bound. repair_rounds_max tunes how many times a send
  // that timed out while its QP recovers is posted again before the peer
  // counts as unreachable; one round more reports the same fault one timeout
  // later. It bounds nothing else (tools/mutate_records/2026-11-28-runs-35-59.md, runs 42-47).
  const bool not_yet = wc.status == IBV_WC_RETRY_EXC_ERR && channel.recovering &&
                       channel.repair_rounds < repair_rounds_max;
  if ((wc.status == IBV_WC_WR_FLUSH_ERR || not_yet) && !is_dead(peer)) {  // post it again later
    if (not_yet) ++channel.repair_rounds;
    channel.needs_repair.store(true, util::mo_relaxed);  // relaxed: see post_op()
    op->state = op_state_t::deferred;
    channel.flushed.push(op);
    return false;
  }
  *status = net_status_t{};
  status->opcode = local_opcode(op->opcode);
  status->rank = op->rank;
  status->user_context = op->inject ? nullptr : op->user_context;
  status->length = op->length;
  const bool refused = wc.status == IBV_WC_REM_ACCESS_ERR || wc.status == IBV_WC_REM_INV_REQ_ERR;
  if (refused && op->opcode != IBV_WR_SEND_WITH_IMM && !is_dead(peer)) {
    status->fault = net_fault_t::protection;
    status->fault_address = op->remote_address;
    channel.needs_repair.store(true, util::mo_relaxed);  // relaxed: see post_op()
    channel.recovering = true;
    channel.repair_rounds = 0;
  } else {
    status->fault = net_fault_t::peer_crashed;
    mark_dead(op->rank);
  }
  release_op(op);
  return true;
}

bool ibv_device_t::take_recv_wc(const ibv_wc& wc, op_t* op, net_status_t* status) {
  if (wc.status != IBV_WC_SUCCESS) {  // a message over the buffer: the sender hears of it
    op->state = op_state_t::deferred;
    recvs_to_repost_.push(op);
    return false;
  }
  if (op->is_notice && wc.opcode == IBV_WC_RECV) {  // a peer's goodbye (say_goodbye)
    peers_[static_cast<std::size_t>(rank_of_qp_num(wc.qp_num))].closed = true;
    op->state = op_state_t::deferred;
    recvs_to_repost_.push(op);
    return false;
  }
  *status = net_status_t{};
  status->rank = rank_of_qp_num(wc.qp_num);
  status->length = wc.byte_len;
  status->imm_data = (wc.wc_flags & IBV_WC_WITH_IMM) != 0 ? wc.imm_data : 0;
  if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
    // The write took a receive, but its buffer is untouched: post it again.
    status->opcode = net_opcode_t::remote_write;
    op->state = op_state_t::deferred;
    recvs_to_repost_.push(op);
    return true;
  }
  status->opcode = net_opcode_t::recv;
  status->buffer = op->buffer;
  status->user_context = op->user_context;
  release_op(op);
  return true;
}

bool ibv_device_t::take_wc(const ibv_wc& wc, net_status_t* status) {
  LCI_ASSERT(wc.wr_id < ops_.size(), "a completion with a foreign wr_id");
  op_t* op = &ops_[wc.wr_id];
  LCI_ASSERT(op->state == op_state_t::posted, "a completion of an op not posted");
  if (op->is_recv) return take_recv_wc(wc, op, status);
  channel_t& channel = channel_of(op);
  // relaxed: see post_wr().
  const std::size_t outstanding = channel.outstanding.fetch_sub(1, util::mo_relaxed);
  LCI_ASSERT(outstanding > 0, "a send completion with none outstanding");
  if (wc.status != IBV_WC_SUCCESS) return take_send_error(wc, op, status);
  channel.recovering = false;  // the peer's QP answers again
  channel.repair_rounds = 0;
  const bool report = !op->inject;
  if (report) {
    *status = net_status_t{};
    status->opcode = local_opcode(op->opcode);
    status->rank = op->rank;
    status->user_context = op->user_context;
    status->length = op->length;
  }
  release_op(op);
  return report;
}

// Receives whose completion took no buffer (a write with immediate on a
// notice) or failed: posted again, the caller's under the SRQ lock if it
// is free, the notices (only the poller posts them) at once.
void ibv_device_t::repost_recvs() {
  if (recvs_to_repost_.empty()) return;
  util::try_lock_guard_t srq_guard(srq_lock_.lock);
  op_list_t waiting;
  while (op_t* op = recvs_to_repost_.pop()) {  // bounded: at most ops_.size() receives
    if ((!op->is_notice && !srq_guard.owns_lock()) || post_recv_op(op).is_retry()) {
      waiting.push(op);
    }
  }
  recvs_to_repost_ = waiting;
}

// A poll that finds nothing ends with the bootstrap's wait hook, outside
// the device's locks: a scheduling point under the simulator (a rank that
// spins on progress lets the others run, as over the simulated network),
// an empty call in a real process.
std::size_t ibv_device_t::poll_comp(net_status_t* statuses, std::size_t statuses_max) {
  const std::size_t count = poll_locked(statuses, statuses_max);
  if (count == 0) context_.bootstrap().wait("ibv poll_comp found nothing");
  return count;
}

std::size_t ibv_device_t::poll_locked(net_status_t* statuses, std::size_t statuses_max) {
  util::try_lock_guard_t guard(cq_lock_.lock);
  if (!guard.owns_lock()) return 0;
  op_list_t posted_to_dead = settled_by_posts_.take_all();
  while (op_t* op = posted_to_dead.pop()) settled_.push(op);
  std::size_t count = drain_settled(statuses, statuses_max);
  int polled = 0;
  // Equivalent mutants: bound. At count == statuses_max the CQ is asked for
  // no entries, and poll_cq reads none (tools/mutate_records/2026-11-28-runs-35-59.md, runs 42-47).
  if (count < statuses_max) {
    ibv_wc wcs[poll_batch_max];
    const int wanted = static_cast<int>(std::min<std::size_t>(statuses_max - count, poll_batch_max));
    polled = verbs_.poll_cq(cq_, wanted, wcs);
    if (polled < 0) throw_verbs(verbs_, "poll_cq (the CQ is broken)", -polled);
    for (int i = 0; i < polled; ++i) {
      if (take_wc(wcs[i], &statuses[count])) ++count;
    }
  }
  idle_polls_ = count == 0 && polled == 0 ? idle_polls_ + 1 : 0;
  // Reading async events is a system call with libibverbs: not on every poll.
  if (idle_polls_ % async_idle_period == 1 || ++polls_count_ % async_check_period == 0) {
    check_async_events();
  }
  repair_peers();
  // A probe the send queue refused is tried again at the next idle poll.
  if (idle_polls_ >= probe_idle_polls && probe_next_peer()) idle_polls_ = 0;
  return count;
}

}  // namespace lci::backend::ibv
