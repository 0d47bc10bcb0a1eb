// ibv_device_t: liveness — QPs in error re-established and what waited on
// them posted again while the peer lives, probes of idle peers, dead peers
// marked and their operations settled, and the goodbye a closing device
// sends (docs/backends/ibv.md, "The device": errors).
#include "backends/ibv/ibv_device.hpp"

#include <cerrno>
#include <cstdint>

#include "backends/ibv/detail/ibv_device_detail.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/try_lock.hpp"

namespace lci::backend::ibv {

using namespace detail;

// The poller's. What waits in the channels' deferred lists (under their
// locks) is settled by repair_peers(), lock permitting.
void ibv_device_t::mark_dead(int rank) {
  peer_t& peer = peers_[static_cast<std::size_t>(rank)];
  if (is_dead(peer)) return;
  // release: pairs with the acquire in post_op() [D].
  // Equivalent mutants: mo_weaken. Stronger than needed, as that acquire is:
  // a post that reads true uses nothing written before this store
  // (tools/mutate_records/2026-11-28-runs-35-59.md, runs 42-48).
  peer.dead.store(true, util::mo_release);
  ++dead_to_report_;
  for (channel_t& channel : peer.channels) {
    while (op_t* op = channel.flushed.pop()) {
      op->state = op_state_t::settled;
      op->fault = net_fault_t::peer_crashed;
      settled_.push(op);
    }
  }
}

// The caller holds channel.lock.
void ibv_device_t::settle_deferred_of_dead(peer_t& peer, channel_t& channel) {
  LCI_ASSERT(is_dead(peer), "settling the posts of a live peer");
  while (op_t* op = channel.deferred.pop()) {
    op->state = op_state_t::settled;
    op->fault = net_fault_t::peer_crashed;
    settled_.push(op);
  }
  channel.deferred_waiting.store(false, util::mo_relaxed);  // relaxed: a hint
}

// The responder's side of a remote access error: its QP entered ERR with no
// completion to say so; the async event does.
void ibv_device_t::check_async_events() {
  ibv_async_event event{};
  while (verbs_.poll_async_event(context_.context(), &event) == 0) {
    if (event.event_type != IBV_EVENT_QP_ACCESS_ERR && event.event_type != IBV_EVENT_QP_REQ_ERR &&
        event.event_type != IBV_EVENT_QP_FATAL) {
      continue;
    }
    for (peer_t& peer : peers_) {
      for (channel_t& channel : peer.channels) {
        if (channel.qp == event.element.qp && !is_dead(peer)) {
          channel.needs_repair.store(true, util::mo_relaxed);  // relaxed: see post_op()
        }
      }
    }
  }
}

// A zero-byte RDMA write (it checks no key) to the next peer whose RMA QP is
// idle: it completes if the peer's QP is there, and times out if the peer
// is gone (a crashed process's QPs are destroyed with it).
// False: the probe was refused (no op or a full send queue); try again.
bool ibv_device_t::probe_next_peer() {
  // Equivalent mutants: bound. One try more wraps around to the rank the call
  // started at, which the round robin probes next anyway; the probe it may
  // post there is the next call's (tools/mutate_records/2026-11-28-runs-35-59.md, runs 42-47).
  for (std::size_t tries = 0; tries < peers_.size(); ++tries) {
    const std::size_t rank = probe_next_rank_;
    probe_next_rank_ = (probe_next_rank_ + 1) % peers_.size();
    peer_t& peer = peers_[rank];
    channel_t& channel = peer.channels[rma_channel];
    if (static_cast<int>(rank) == rank_ || is_dead(peer) || peer.closed) continue;
    util::try_lock_guard_t guard(*channel.lock);
    if (!guard.owns_lock()) continue;  // a poster is using it: not idle
    // relaxed: under the lock only the poller (this thread) changes them.
    if (channel.needs_repair.load(util::mo_relaxed) ||
        channel.outstanding.load(util::mo_relaxed) > 0 ||
        channel.deferred_waiting.load(util::mo_relaxed)) {
      continue;
    }
    op_t* op = nullptr;
    {
      util::try_lock_guard_t pool(send_pool_lock_.lock);
      if (pool.owns_lock()) op = alloc_op(false);
    }
    if (op == nullptr) return false;
    op->state = op_state_t::settled;
    op->opcode = IBV_WR_RDMA_WRITE;
    op->rank = static_cast<int>(rank);
    op->inject = true;
    op->is_probe = true;
    if (post_wr(channel, op) != 0) {
      release_op(op);
      return false;
    }
    return true;
  }
  return true;  // nobody to probe now
}

// Posts what waited for the channel's QP (re-established), as far as the
// send queue has room. The caller holds channel.lock.
void ibv_device_t::post_deferred(channel_t& channel) {
  // relaxed: under the lock only the poller changes outstanding, and only down.
  while (!channel.deferred.empty() && channel.outstanding.load(util::mo_relaxed) < sends_max_) {
    op_t* op = channel.deferred.pop();
    const int error = post_wr(channel, op);
    if (error == ENOMEM) {  // the send queue is full after all: at the next poll
      channel.deferred.push_front(op);
      break;
    }
    if (error != 0) throw_verbs(verbs_, "post_send (after re-establishing)", error);
  }
  channel.deferred_waiting.store(!channel.deferred.empty(), util::mo_relaxed);  // relaxed: a hint
}

// Under channel.lock: re-establishes the QP if it is in ERR and all its
// WRs came back, and posts what waited for it (the flushed WRs first).
void ibv_device_t::repair_channel(peer_t& peer, channel_t& channel) {
  channel.deferred.push_front(&channel.flushed);
  // relaxed: the poller (this thread) is the only writer of needs_repair;
  // posters change outstanding only under the lock, held.
  if (channel.needs_repair.load(util::mo_relaxed)) {
    if (channel.outstanding.load(util::mo_relaxed) > 0) {
      // relaxed: a hint
      channel.deferred_waiting.store(!channel.deferred.empty(), util::mo_relaxed);
      return;
    }
    if (int error = bring_up(peer, channel)) {
      throw_verbs(verbs_, "modify_qp (re-establishing)", error);
    }
    channel.needs_repair.store(false, util::mo_relaxed);  // relaxed: read under this lock
  }
  post_deferred(channel);
}

// Every channel with repair work or waiting posts, whose lock is free now
// (a busy one waits for the next poll), and the receives to post again.
void ibv_device_t::repair_peers() {
  for (peer_t& peer : peers_) {
    for (channel_t& channel : peer.channels) {
      // relaxed: needs_repair is the poller's own; deferred_waiting a hint
      // (a post that sets it is seen at a later poll).
      const bool work = channel.needs_repair.load(util::mo_relaxed) || !channel.flushed.empty() ||
                        channel.deferred_waiting.load(util::mo_relaxed);
      if (!work) continue;
      util::try_lock_guard_t guard(*channel.lock);
      if (!guard.owns_lock()) continue;
      if (is_dead(peer)) {
        settle_deferred_of_dead(peer, channel);
      } else {
        repair_channel(peer, channel);
      }
    }
  }
  repost_recvs();
}

// Tells every peer still there that this device closes while its process
// goes on: without it, a peer that probes this device later finds the QPs
// gone and reports this rank crashed. A zero-byte send on the peer's RMA QP,
// whose SRQ holds only the device's own notices: a send lands there for no
// other reason (take_recv_wc). After drain(): the send queues have room
// and every op is back. A peer that is gone makes the goodbye fail, which
// is not reported (take_send_error).
void ibv_device_t::say_goodbye() {
  for (std::size_t rank = 0; rank < peers_.size(); ++rank) {
    peer_t& peer = peers_[rank];
    if (static_cast<int>(rank) == rank_ || is_dead(peer) || peer.closed) continue;
    op_t* op = nullptr;
    {
      util::spinlock_guard_t pool(send_pool_lock_.lock);
      op = alloc_op(false);
    }
    LCI_ASSERT(op != nullptr, "no send op free after the drain");
    op->state = op_state_t::settled;
    op->opcode = IBV_WR_SEND;
    op->rank = static_cast<int>(rank);
    op->inject = true;
    op->is_goodbye = true;
    channel_t& channel = channel_of(op);
    util::spinlock_guard_t guard(*channel.lock);
    if (post_wr(channel, op) != 0) release_op(op);  // a QP in error: the peer learns it anyway
  }
}

}  // namespace lci::backend::ibv
