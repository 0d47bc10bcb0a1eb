// ofi_device_t: the emulated put-with-immediate — notices, their
// receives, and zero-byte puts (docs/backends/ofi.md, "Mapping the
// contract"). The native one (shm) is a write with remote CQ data, posted
// and translated like any other.
#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <stdexcept>
#include <string>

#include "backends/ofi/detail/ofi_check.hpp"
#include "backends/ofi/detail/ofi_device_impl.hpp"
#include "lci/util/assert.hpp"

namespace lci::backend::ofi::detail {

namespace {

// The tag of every notice (the only tagged messages this backend sends).
constexpr std::uint64_t notice_tag = 0x4C4349;  // "LCI"

}  // namespace

error_t ofi_device_impl_t::post_empty_write_locked(op_t* op, const rma_args_t& args) {
  const error_t accepted = args.inject ? errorcode_t::done : errorcode_t::posted;
  if (args.with_imm) {
    // The notice's completion reports as this op: opcode write, the
    // caller's context, inject or not.
    op->notice_data = put_imm_data(0, args.imm_data);
    op->is_notice = true;
    post_notice_locked(op);
    return accepted;
  }
  if (args.inject) {
    ops_.release(op);
    return accepted;
  }
  settle_locked(op);  // reported by the next poll, with no fault
  return accepted;
}

void ofi_device_impl_t::receive_notice_locked(const fi_cq_data_entry& entry, fi_addr_t source,
                                              op_t* op, net_status_t* status) {
  // A notice: an emulated put-with-immediate has landed here.
  LCI_ASSERT((entry.flags & FI_REMOTE_CQ_DATA) != 0, "notice without its data");
  status->rank = rank_of(source);
  status->length = put_imm_length(entry.data);
  status->imm_data = static_cast<net_imm_data_t>(entry.data);
  op->state = op_state_t::taken;
  post_notice_recv_locked(op);
}

void ofi_device_impl_t::send_notice_locked(op_t* op) {
  // The write of an emulated put-with-immediate has landed (delivery
  // complete): it is done for the caller; now tell the target.
  op->state = op_state_t::taken;
  op->is_notice = true;
  op->inject = true;
  op->user_context = nullptr;
  post_notice_locked(op);
}

void ofi_device_impl_t::post_notice_locked(op_t* op) {
  LCI_ASSERT(op->is_notice, "not a notice");
  fi_msg_tagged msg{};
  msg.iov_count = 0;
  msg.addr = address_of(op->rank);
  msg.tag = notice_tag;
  msg.context = &op->fi_context;
  msg.data = op->notice_data;
  finish_repost_locked(op, fi_tsendmsg(ep_, &msg, FI_COMPLETION | FI_REMOTE_CQ_DATA));
}

void ofi_device_impl_t::post_notice_recv_locked(op_t* op) {
  LCI_ASSERT(op->opcode == net_opcode_t::remote_write, "not a notice receive");
  // Notices carry no payload: a zero-byte tagged receive, which no untagged
  // send can match (and no notice can match the caller's receives).
  const long rc =
      fi_trecv(ep_, nullptr, 0, nullptr, FI_ADDR_UNSPEC, notice_tag, 0, &op->fi_context);
  if (rc == 0) {
    op->state = op_state_t::posted;
    return;
  }
  if (rc != -FI_EAGAIN) {
    throw std::runtime_error("lci ofi: posting a notice receive: " +
                             describe_fi_error("fi_recv", rc));
  }
  ops_.push_deferred(op);
}

}  // namespace lci::backend::ofi::detail
