// ofi_device_t: posting — receives, sends, injects, puts and gets handed
// to libfabric, and what a refused or failed post becomes
// (docs/backends/ofi.md, "Mapping the contract").
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sys/uio.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "backends/ofi/detail/ofi_check.hpp"
#include "backends/ofi/detail/ofi_device_impl.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/try_lock.hpp"

namespace lci::backend::ofi::detail {

namespace {

// PAUSEs a post that finds the endpoint locked waits for it before it
// answers retry_lock: a few hundred ns, about one poll_comp's hold. Where
// threads share a device the holder is most often another thread's poll,
// and a post that answered retry went back to its caller, which progressed
// (trying the lock itself) and posted again: with 8 threads sharing a
// device over shm on 16 cores, 95% of posts were refused so, and the
// device's message rate fell below one thread's (docs/bench_upstream.md,
// "Threads sharing a device"). Polls keep the plain try: a poll that finds
// another in progress has nothing to add.
constexpr std::uint32_t post_lock_pauses_max = 64;

void* mr_desc(net_mr_t mr) {
  return mr.is_empty() ? nullptr : fi_mr_desc(static_cast<fid_mr*>(mr.opaque));
}

}  // namespace

void ofi_device_impl_t::fail_locked(op_t* op, net_fault_t fault) {
  LCI_ASSERT(op->state == op_state_t::taken, "only an op not yet posted fails here");
  op->fault = fault;
  settle_locked(op);
}

void ofi_device_impl_t::settle_locked(op_t* op) {
  op->state = op_state_t::settled;
  ops_.push_settled(op);
}

error_t ofi_device_impl_t::refused_locked(int rank) {
  // One progress call (count 0 moves nothing): a provider that needs
  // progress to free queue room, or to finish connecting, gets it even if
  // the caller only retries.
  fi_cq_data_entry unused;
  (void)fi_cq_read(cq_, &unused, 0);
  note_idle_locked(rank);
  return errorcode_t::retry_nomem;
}

error_t ofi_device_impl_t::finish_post_locked(op_t* op, long rc, const char* call) {
  const error_t accepted =
      op->opcode == net_opcode_t::recv || op->inject ? errorcode_t::done : errorcode_t::posted;
  if (rc == 0) {
    op->state = op_state_t::posted;
    return accepted;
  }
  const int rank = op->rank;
  // -FI_ENOMEM for a receive: the provider's receive entries are all in
  // use, as shm's are once its unexpected messages fill them (they share
  // rx_attr.size entries with posted receives; a multi-receive post takes
  // one first). A retry, which the runtime answers by posting packets that
  // take those messages (device_receives_t::replenish_regions).
  if (rc == -FI_EAGAIN || (rc == -FI_ENOMEM && op->opcode == net_opcode_t::recv)) {
    ops_.release(op);
    return refused_locked(rank);
  }
  if (is_connection_error(static_cast<int>(-rc))) {
    if (may_repost(*op)) {
      defer_repost_locked(op);  // a live peer's broken connection (translate_error_locked)
    } else {
      fail_locked(op, net_fault_t::peer_crashed);
    }
    return accepted;
  }
  ops_.release(op);
  throw std::runtime_error("lci ofi: " + describe_fi_error(call, rc) + " (rank " +
                           std::to_string(rank) + ")");
}

error_t ofi_device_impl_t::post_recv(void* buffer, std::size_t size, net_mr_t mr,
                                void* user_context) {
  if (buffer == nullptr && size > 0) throw std::invalid_argument("post_recv: buffer is null");
  util::try_lock_guard_t guard(lock_, post_lock_pauses_max,
                               waits_for_lock(backend::net_lock_try_recv));
  if (!guard.owns_lock()) return errorcode_t::retry_lock;
  op_t* op = alloc_recv_op_locked(buffer, size, user_context, false);
  if (op == nullptr) return errorcode_t::retry_nomem;
  op->desc = mr_desc(mr);  // kept for a repost (repost_recv_locked)
  const long rc = fi_recv(ep_, buffer, size, op->desc, FI_ADDR_UNSPEC, &op->fi_context);
  return finish_post_locked(op, rc, "fi_recv");
}

op_t* ofi_device_impl_t::alloc_recv_op_locked(void* buffer, std::size_t size, void* user_context,
                                         bool multi_recv) {
  op_t* op = ops_.alloc(op_pool_t::recv);
  if (op == nullptr) return nullptr;
  op->opcode = net_opcode_t::recv;
  op->multi_recv = multi_recv;
  op->buffer = buffer;
  op->length = size;
  op->user_context = user_context;
  return op;
}

error_t ofi_device_impl_t::post_recv_multi(void* buffer, std::size_t size, void* user_context) {
  if (!attr_.supports_multi_recv) {
    throw std::logic_error("post_recv_multi: supports_multi_recv is false (not requested at "
                           "alloc_device, or the provider has no FI_MULTI_RECV)");
  }
  if (buffer == nullptr) throw std::invalid_argument("post_recv_multi: buffer is null");
  if (size < attr_.multi_recv_min_free) {
    throw std::invalid_argument("post_recv_multi: size " + std::to_string(size) +
                                " is below multi_recv_min_free (" +
                                std::to_string(attr_.multi_recv_min_free) + ")");
  }
  util::try_lock_guard_t guard(lock_, post_lock_pauses_max,
                               waits_for_lock(backend::net_lock_try_recv));
  if (!guard.owns_lock()) return errorcode_t::retry_lock;
  op_t* op = alloc_recv_op_locked(buffer, size, user_context, true);
  if (op == nullptr) return errorcode_t::retry_nomem;
  iovec iov{buffer, size};
  void* desc = nullptr;  // unregistered: FI_MR_LOCAL providers are refused (ofi_context.hpp)
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.desc = &desc;
  msg.iov_count = 1;
  msg.addr = FI_ADDR_UNSPEC;
  msg.context = &op->fi_context;
  return finish_post_locked(op, fi_recvmsg(ep_, &msg, FI_MULTI_RECV), "fi_recvmsg");
}

error_t ofi_device_impl_t::post_message(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                                   net_imm_data_t imm_data, void* user_context, bool inject) {
  util::try_lock_guard_t guard(lock_, post_lock_pauses_max,
                               waits_for_lock(backend::net_lock_try_send));
  if (!guard.owns_lock()) return errorcode_t::retry_lock;
  if (inject && injects_final_ && dead_[rank] == 0) {
    // No op, no completion (see injects_final_): fi_injectdata never
    // generates one.
    const long rc = fi_injectdata(ep_, buffer, size, imm_data, address_of(rank));
    if (rc == 0) return errorcode_t::done;
    if (rc == -FI_EAGAIN) return refused_locked(rank);
    // Any other refusal takes the tracked path below, which reports it.
  }
  op_t* op = ops_.alloc(op_pool_t::send);
  if (op == nullptr) return errorcode_t::retry_nomem;
  op->opcode = net_opcode_t::send;
  op->rank = rank;
  op->length = size;
  op->user_context = user_context;
  op->inject = inject;
  if (dead_[rank] != 0) {
    fail_locked(op, net_fault_t::peer_crashed);
    return inject ? errorcode_t::done : errorcode_t::posted;
  }
  // libfabric only reads it; an inject's payload is kept (keep_payload_locked).
  op->buffer = inject ? keep_payload_locked(op, buffer, size) : const_cast<void*>(buffer);
  op->desc = inject ? nullptr : mr_desc(mr);
  op->cq_data = imm_data;
  op->flags = FI_COMPLETION | FI_REMOTE_CQ_DATA | (inject ? FI_INJECT : 0);
  return finish_post_locked(op, issue_send_locked(op), "fi_sendmsg");
}

void* ofi_device_impl_t::keep_payload_locked(const op_t* op, const void* buffer, std::size_t size) {
  LCI_ASSERT(op->inject, "only an inject's payload is the caller's again at once");
  LCI_ASSERT(size <= attr_.inject_size_max, "an inject over the inject size");
  if (injects_kept_.empty()) return const_cast<void*>(buffer);
  char* kept = &injects_kept_[ops_.send_index_of(op) * attr_.inject_size_max];
  if (size > 0) std::memcpy(kept, buffer, size);
  return kept;
}

long ofi_device_impl_t::issue_send_locked(op_t* op) {
  LCI_ASSERT(op->opcode == net_opcode_t::send, "not a send");
  iovec iov{op->buffer, op->length};
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.desc = &op->desc;
  msg.iov_count = 1;
  msg.addr = address_of(op->rank);
  msg.context = &op->fi_context;
  msg.data = op->cq_data;
  return fi_sendmsg(ep_, &msg, op->flags);
}

error_t ofi_device_impl_t::post_rma(const rma_args_t& args) {
  const bool write = args.opcode == net_opcode_t::write;
  util::try_lock_guard_t guard(lock_, post_lock_pauses_max,
                               waits_for_lock(backend::net_lock_try_send));
  if (!guard.owns_lock()) return errorcode_t::retry_lock;
  op_t* op = ops_.alloc(op_pool_t::send);
  if (op == nullptr) return errorcode_t::retry_nomem;
  op->opcode = args.opcode;
  op->rank = args.rank;
  op->length = args.size;
  op->user_context = args.user_context;
  op->inject = args.inject;
  op->remote_address = args.rmr.base + args.offset;
  if (dead_[args.rank] != 0) {
    fail_locked(op, net_fault_t::peer_crashed);
    return args.inject ? errorcode_t::done : errorcode_t::posted;
  }
  if (write && args.size == 0) return post_empty_write_locked(op, args);
  op->buffer = args.inject ? keep_payload_locked(op, args.local, args.size) : args.local;
  op->desc = args.inject ? nullptr : mr_desc(args.mr);
  op->rma_address = remote_address(args.rmr, args.offset);
  op->rkey = args.rmr.rkey;
  op->flags = FI_COMPLETION;
  if (args.with_imm && native_put_imm_) {
    op->cq_data = put_imm_data(args.size, args.imm_data);
    op->flags |= FI_REMOTE_CQ_DATA;
  } else if (args.with_imm) {
    op->notice_data = put_imm_data(args.size, args.imm_data);
  }
  if (args.inject) op->flags |= FI_INJECT;
  // Delivery complete: see "Faults" in docs/backends/ofi.md.
  if (write) op->flags |= FI_DELIVERY_COMPLETE;
  return finish_post_locked(op, issue_rma_locked(op), write ? "fi_writemsg" : "fi_readmsg");
}

long ofi_device_impl_t::issue_rma_locked(op_t* op) {
  iovec iov{op->buffer, op->length};
  fi_rma_iov remote{op->rma_address, op->length, op->rkey};
  fi_msg_rma msg{};
  msg.msg_iov = &iov;
  msg.desc = &op->desc;
  msg.iov_count = 1;
  msg.addr = address_of(op->rank);
  msg.rma_iov = &remote;
  msg.rma_iov_count = 1;
  msg.context = &op->fi_context;
  msg.data = op->cq_data;
  if (op->opcode == net_opcode_t::read) return fi_readmsg(ep_, &msg, op->flags);
  return fi_writemsg(ep_, &msg, op->flags);
}

error_t ofi_device_impl_t::post_sends(int rank, const void* buffer, std::size_t size,
                                 net_imm_data_t imm_data) {
  backend::check_post_target("post_sends", rank, rank_n_, buffer, size, attr_.inject_size_max);
  return post_message(rank, buffer, size, net_mr_t{}, imm_data, nullptr, true);
}

error_t ofi_device_impl_t::post_send(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                                net_imm_data_t imm_data, void* user_context) {
  backend::check_post_target("post_send", rank, rank_n_, buffer, size, attr_.max_msg_size);
  return post_message(rank, buffer, size, mr, imm_data, user_context, false);
}

error_t ofi_device_impl_t::post_puts(int rank, const void* buffer, std::size_t size,
                                std::uint64_t offset, net_rmr_t rmr) {
  backend::check_post_target("post_puts", rank, rank_n_, buffer, size, attr_.inject_size_max);
  return post_rma({net_opcode_t::write, rank, const_cast<void*>(buffer), size,
                   net_mr_t{}, offset, rmr, false, 0, nullptr, true});
}

error_t ofi_device_impl_t::post_put(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                               std::uint64_t offset, net_rmr_t rmr, void* user_context) {
  backend::check_post_target("post_put", rank, rank_n_, buffer, size, attr_.max_msg_size);
  return post_rma({net_opcode_t::write, rank, const_cast<void*>(buffer), size, mr,
                   offset, rmr, false, 0, user_context, false});
}

error_t ofi_device_impl_t::post_putImms(int rank, const void* buffer, std::size_t size,
                                   std::uint64_t offset, net_rmr_t rmr,
                                   net_imm_data_t imm_data) {
  backend::check_post_target("post_putImms", rank, rank_n_, buffer, size, attr_.inject_size_max);
  if (!attr_.supports_put_imm) {
    throw std::logic_error("post_putImms: this provider has no 8-byte remote CQ data "
                           "(supports_put_imm is false)");
  }
  return post_rma({net_opcode_t::write, rank, const_cast<void*>(buffer), size,
                   net_mr_t{}, offset, rmr, true, imm_data, nullptr, true});
}

error_t ofi_device_impl_t::post_putImm(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                                  std::uint64_t offset, net_rmr_t rmr, net_imm_data_t imm_data,
                                  void* user_context) {
  backend::check_post_target("post_putImm", rank, rank_n_, buffer, size, attr_.max_msg_size);
  if (!attr_.supports_put_imm) {
    throw std::logic_error("post_putImm: this provider has no 8-byte remote CQ data "
                           "(supports_put_imm is false)");
  }
  return post_rma({net_opcode_t::write, rank, const_cast<void*>(buffer), size,
                   mr, offset, rmr, true, imm_data, user_context, false});
}

error_t ofi_device_impl_t::post_get(int rank, void* buffer, std::size_t size, net_mr_t mr,
                               std::uint64_t offset, net_rmr_t rmr, void* user_context) {
  backend::check_post_target("post_get", rank, rank_n_, buffer, size, attr_.max_msg_size);
  return post_rma({net_opcode_t::read, rank, buffer, size, mr, offset, rmr, false,
                   0, user_context, false});
}

}  // namespace lci::backend::ofi::detail
