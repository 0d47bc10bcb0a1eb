// ibv_device_t: posting — receives, sends, puts and gets handed to the
// verbs as WRs, inline or over a registration, and what a refused post
// becomes (docs/backends/ibv.md, "The device").
#include "backends/ibv/ibv_device.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "backends/ibv/detail/ibv_device_detail.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/try_lock.hpp"

namespace lci::backend::ibv {

using namespace detail;

struct ibv_device_t::post_args_t {
  ibv_wr_opcode opcode;
  int rank;
  const void* buffer;
  std::size_t size;
  net_mr_t mr;
  std::uint64_t offset;
  net_rmr_t rmr;
  net_imm_data_t imm_data;
  bool inject;
  void* user_context;
};

error_t ibv_device_t::fill_op(op_t* op, const post_args_t& args) {
  op->opcode = args.opcode;
  op->inject = args.inject;
  op->rank = args.rank;
  op->user_context = args.user_context;
  op->buffer = const_cast<void*>(args.buffer);
  op->length = args.size;
  op->imm_data = args.imm_data;
  op->remote_address = args.rmr.base + args.offset;
  op->rkey = static_cast<std::uint32_t>(args.rmr.rkey);
  op->is_inline = args.opcode != IBV_WR_RDMA_READ && args.size <= inline_max_ &&
                  (args.inject || args.mr.is_empty());
  if (op->is_inline) {  // kept in the device: it may be posted again after a repair
    const auto index = static_cast<std::size_t>(op - ops_.data());
    unsigned char* slot = inline_arena_.data() + index * inline_max_;
    if (args.size > 0) std::memcpy(slot, args.buffer, args.size);
    op->buffer = slot;
    return errorcode_t::done;
  }
  if (!args.mr.is_empty()) {
    op->lkey = static_cast<ibv_mr*>(args.mr.opaque)->lkey;
    return errorcode_t::done;
  }
  if (args.size == 0) return errorcode_t::done;
  op->own_mr = reg_range(op->buffer, args.size, IBV_ACCESS_LOCAL_WRITE);
  if (op->own_mr == nullptr) return errorcode_t::retry_nomem;
  op->lkey = op->own_mr->lkey;
  return errorcode_t::done;
}

ibv_device_t::channel_t& ibv_device_t::channel_of(const op_t* op) {
  peer_t& peer = peers_[static_cast<std::size_t>(op->rank)];
  const bool is_send = op->opcode == IBV_WR_SEND || op->opcode == IBV_WR_SEND_WITH_IMM;
  return peer.channels[is_send && !op->is_goodbye ? message_channel : rma_channel];
}

int ibv_device_t::post_wr(channel_t& channel, op_t* op) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(op->buffer), static_cast<std::uint32_t>(op->length),
              op->lkey};
  ibv_send_wr wr{};
  wr.wr_id = static_cast<std::uint64_t>(op - ops_.data());
  wr.sg_list = &sge;
  wr.num_sge = op->length > 0 ? 1 : 0;
  wr.opcode = op->opcode;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (op->is_inline) wr.send_flags |= IBV_SEND_INLINE;
  wr.imm_data = op->imm_data;
  wr.wr.rdma.remote_addr = op->remote_address;
  wr.wr.rdma.rkey = op->rkey;
  // Counted and marked posted before post_send: another thread may poll
  // its completion the moment post_send returns.
  const op_state_t before = op->state;
  op->state = op_state_t::posted;
  // relaxed: posters add only under channel.lock (held); the poller
  // subtracts only after polling this WR's completion, which the verbs
  // order after post_send.
  channel.outstanding.fetch_add(1, util::mo_relaxed);
  ibv_send_wr* bad = nullptr;
  const int error = verbs_.post_send(channel.qp, &wr, &bad);
  if (error != 0) {
    op->state = before;
    channel.outstanding.fetch_sub(1, util::mo_relaxed);  // relaxed: as above
  }
  return error;
}

error_t ibv_device_t::post_op(const char* what, const post_args_t& args) {
  const std::size_t size_max = args.inject ? inline_max_ : attr_.max_msg_size;
  backend::check_post_target(what, args.rank, ranks_count_, args.buffer, args.size, size_max);
  peer_t& peer = peers_[static_cast<std::size_t>(args.rank)];
  const bool is_send = args.opcode == IBV_WR_SEND || args.opcode == IBV_WR_SEND_WITH_IMM;
  channel_t& channel = peer.channels[is_send ? message_channel : rma_channel];
  util::try_lock_guard_t guard(*channel.lock);
  if (!guard.owns_lock()) return errorcode_t::retry_lock;
  // relaxed: under the lock only the poller changes it, and only down, so
  // room seen now stays.
  if (channel.outstanding.load(util::mo_relaxed) >= sends_max_) return errorcode_t::retry_nomem;
  op_t* op = nullptr;
  {
    util::try_lock_guard_t pool(send_pool_lock_.lock);
    if (!pool.owns_lock()) return errorcode_t::retry_lock;
    op = alloc_op(false);
  }
  if (op == nullptr) return errorcode_t::retry_nomem;
  op->state = op_state_t::settled;  // owned by this call until posted
  op->opcode = args.opcode;
  op->rank = args.rank;
  LCI_ASSERT(&channel_of(op) == &channel, "an op on another QP than its channel's");
  const error_t filled = fill_op(op, args);
  if (filled.is_retry()) {
    release_op(op);
    return filled;
  }
  const error_t accepted = args.inject ? errorcode_t::done : errorcode_t::posted;
  // acquire: pairs with the release in mark_dead() [D]; a peer found dead
  // later fails what this posts through the verbs.
  // Equivalent mutants: mo_weaken. Stronger than needed: a post that finds the
  // peer dead reads nothing the poller wrote before marking it; it settles its
  // own op, which reaches the poller through settled_by_posts_, whose push and
  // take_all order it [I] (tools/mutate_records/2026-11-28-runs-35-59.md, runs 42-48).
  if (peer.dead.load(util::mo_acquire)) {  // fails as every operation to that rank does
    op->fault = net_fault_t::peer_crashed;
    settled_by_posts_.push(op);
    return accepted;
  }
  // relaxed: a stale false posts to a QP in ERR, which flushes the WR and
  // the poller posts it again after the repair, as it does with WRs that
  // were in flight; the repair itself (which clears it) takes this lock.
  if (channel.needs_repair.load(util::mo_relaxed)) {  // posted once the QP is back
    op->state = op_state_t::deferred;
    channel.deferred.push(op);
    channel.deferred_waiting.store(true, util::mo_relaxed);  // relaxed: a hint (repair_peers())
    return accepted;
  }
  const int error = post_wr(channel, op);
  if (error == ENOMEM) {
    release_op(op);
    return errorcode_t::retry_nomem;
  }
  if (error != 0) throw_verbs(verbs_, what, error);
  return accepted;
}

error_t ibv_device_t::post_recv_op(op_t* op) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(op->buffer), static_cast<std::uint32_t>(op->length),
              op->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = static_cast<std::uint64_t>(op - ops_.data());
  wr.sg_list = &sge;
  wr.num_sge = op->length > 0 ? 1 : 0;
  // Marked posted before: another thread may poll its completion the
  // moment post_srq_recv returns.
  const op_state_t before = op->state;
  op->state = op_state_t::posted;
  ibv_recv_wr* bad = nullptr;
  const int error = verbs_.post_srq_recv(op->is_notice ? notice_srq_ : srq_, &wr, &bad);
  if (error != 0) op->state = before;
  if (error == ENOMEM) return errorcode_t::retry_nomem;
  if (error != 0) throw_verbs(verbs_, "post_srq_recv", error);
  return errorcode_t::done;
}

error_t ibv_device_t::post_recv(void* buffer, std::size_t size, net_mr_t mr, void* user_context) {
  if (buffer == nullptr && size > 0) throw std::invalid_argument("post_recv: buffer is null");
  util::try_lock_guard_t guard(srq_lock_.lock);
  if (!guard.owns_lock()) return errorcode_t::retry_lock;
  op_t* op = alloc_op(true);
  if (op == nullptr) return errorcode_t::retry_nomem;
  op->state = op_state_t::settled;
  op->buffer = buffer;
  op->length = size;
  op->user_context = user_context;
  if (!mr.is_empty()) {
    op->lkey = static_cast<ibv_mr*>(mr.opaque)->lkey;
  } else if (size > 0) {
    op->own_mr = reg_range(buffer, size, IBV_ACCESS_LOCAL_WRITE);
    if (op->own_mr == nullptr) {
      release_op(op);
      return errorcode_t::retry_nomem;
    }
    op->lkey = op->own_mr->lkey;
  }
  const error_t error = post_recv_op(op);
  if (error.is_retry()) release_op(op);
  return error;
}

error_t ibv_device_t::post_recv_multi(void*, std::size_t, void*) {
  throw std::logic_error("post_recv_multi: the ibv backend offers no multi-receive buffers");
}

error_t ibv_device_t::post_sends(int rank, const void* buffer, std::size_t size,
                                 net_imm_data_t imm_data) {
  return post_op("post_sends", {IBV_WR_SEND_WITH_IMM, rank, buffer, size, net_mr_t{}, 0,
                                net_rmr_t{}, imm_data, true, nullptr});
}

error_t ibv_device_t::post_send(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                                net_imm_data_t imm_data, void* user_context) {
  return post_op("post_send", {IBV_WR_SEND_WITH_IMM, rank, buffer, size, mr, 0, net_rmr_t{},
                               imm_data, false, user_context});
}

error_t ibv_device_t::post_puts(int rank, const void* buffer, std::size_t size,
                                std::uint64_t offset, net_rmr_t rmr) {
  return post_op("post_puts", {IBV_WR_RDMA_WRITE, rank, buffer, size, net_mr_t{}, offset, rmr, 0,
                               true, nullptr});
}

error_t ibv_device_t::post_put(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                               std::uint64_t offset, net_rmr_t rmr, void* user_context) {
  return post_op("post_put", {IBV_WR_RDMA_WRITE, rank, buffer, size, mr, offset, rmr, 0, false,
                              user_context});
}

error_t ibv_device_t::post_putImms(int rank, const void* buffer, std::size_t size,
                                   std::uint64_t offset, net_rmr_t rmr, net_imm_data_t imm_data) {
  return post_op("post_putImms", {IBV_WR_RDMA_WRITE_WITH_IMM, rank, buffer, size, net_mr_t{},
                                  offset, rmr, imm_data, true, nullptr});
}

error_t ibv_device_t::post_putImm(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                                  std::uint64_t offset, net_rmr_t rmr, net_imm_data_t imm_data,
                                  void* user_context) {
  return post_op("post_putImm", {IBV_WR_RDMA_WRITE_WITH_IMM, rank, buffer, size, mr, offset, rmr,
                                 imm_data, false, user_context});
}

error_t ibv_device_t::post_get(int rank, void* buffer, std::size_t size, net_mr_t mr,
                               std::uint64_t offset, net_rmr_t rmr, void* user_context) {
  return post_op("post_get", {IBV_WR_RDMA_READ, rank, buffer, size, mr, offset, rmr, 0, false,
                              user_context});
}

}  // namespace lci::backend::ibv
