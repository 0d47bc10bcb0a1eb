#include "backends/ofi/ofi_device.hpp"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sys/uio.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "backends/ofi/detail/ofi_check.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/try_lock.hpp"

namespace lci::backends::ofi {

using backend::net_device_attr_t;
using backend::net_fault_t;
using backend::net_imm_data_t;
using backend::net_mr_t;
using backend::net_opcode_t;
using backend::net_rmr_t;
using backend::net_status_t;
using detail::check_fi;
using detail::describe_fi_error;

namespace {

// A put-with-immediate's 64-bit CQ data (remote write, or notice): imm in
// bits 0-31, the length in bits 32-63. So no transfer may exceed 32 bits.
constexpr std::size_t msg_size_cap = std::numeric_limits<std::uint32_t>::max();
// Injected messages land in the runtime's packets (8 KiB by default); half
// of that leaves room for its headers, and copies beyond a few KiB gain
// nothing over a zero-copy send.
constexpr std::size_t inject_size_cap = 4096;
// CQ entries read per fi_cq_readfrom call, and calls per poll_comp: bounds
// the time one poll holds the endpoint lock.
// dead_ values beyond 0 (alive).
constexpr unsigned char dead_found = 1;     // not reported yet
constexpr unsigned char dead_reported = 2;  // peer_down returned once
constexpr std::size_t cq_batch_max = 16;
constexpr std::size_t cq_reads_max = 8;
// The tag of every notice (the only tagged messages this backend sends).
constexpr std::uint64_t notice_tag = 0x4C4349;  // "LCI"
// Times an operation whose connection broke is posted again (may_repost),
// and the first wait before it is (doubled each time). ofi_rxm notices a
// broken connection only in its connection-management progress, which its
// CQ reads run every 10 ms (FI_OFI_RXM_CM_PROGRESS_INTERVAL): posted
// sooner, the operation fails on the old connection again.
constexpr std::uint8_t connection_reposts_max = 5;
constexpr std::uint64_t repost_delay_ns = 20'000'000;
// The largest send posted again after its connection broke. A send
// completes (transmit complete) once the provider has written all of it to
// the connection, so one that fails was never whole at the target: posting
// it again cannot deliver it twice. That holds for ofi_rxm's eager and
// segmented messages (16 KiB and 128 KiB by default, never below the eager
// size); only its rendezvous, for larger ones, can fail after the target
// took the message (the acknowledgement lost with the connection). The
// runtime sends at most a packet (8 KiB by default).
constexpr std::size_t send_repost_size_max = 16384;
// How long a refused RMA waits before it is reported, so that a target that
// was being killed shows as dead (translate_error_locked).
constexpr std::uint64_t fault_verdict_delay_ns = 100'000'000;

// The largest endpoint name this backend publishes (the bootstrap's limit).
constexpr std::size_t name_size_max = 1024;

std::uint64_t put_imm_data(std::size_t size, net_imm_data_t imm_data) {
  return static_cast<std::uint64_t>(size) << 32 | imm_data;
}
std::size_t put_imm_length(std::uint64_t data) { return static_cast<std::size_t>(data >> 32); }

std::uint64_t steady_now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// LCI_OFI_MULTI_RECV=1: devices grant multi-receive buffers. Off by
// default: over shm the runtime's 8-byte message rate measured lower with
// them than with one posted packet per message, although it ran fewer
// instructions (docs/backends/ofi.md, "Multi-receive buffers").
bool multi_recv_enabled() {
  const char* value = std::getenv("LCI_OFI_MULTI_RECV");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

// LCI_OFI_QUIRK_REMOTE_RMA_CONTEXT=1: every target-side RMA completion read
// from the CQ gets op_context 0x1, as shm of libfabric 1.17 sometimes hands
// one (translate_locked()): every run then shows that the backend copes,
// not only the few where shm does it (//tests/soak:rdv_burst_quirk_test).
bool quirk_remote_rma_context_enabled() {
  const char* value = std::getenv("LCI_OFI_QUIRK_REMOTE_RMA_CONTEXT");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

std::size_t pick(std::size_t requested, std::size_t fallback) {
  return requested != 0 ? requested : fallback;
}

// notices: the device's own notice receives.
net_device_attr_t resolve_attr(const fi_info* info, const net_device_attr_t& requested,
                               std::size_t notices) {
  net_device_attr_t attr;
  attr.max_msg_size = std::min({pick(requested.max_msg_size, msg_size_cap),
                                info->ep_attr->max_msg_size, msg_size_cap});
  attr.inject_size_max = std::min({pick(requested.inject_size_max, inject_size_cap),
                                   info->tx_attr->inject_size, inject_size_cap});
  // The length travels in the upper 32 bits of the CQ data.
  attr.supports_put_imm = info->domain_attr->cq_data_size >= sizeof(std::uint64_t);
  // Only providers without FI_MR_LOCAL are accepted (ofi_context.hpp): a
  // null descriptor is valid for every local buffer.
  attr.requires_local_mr = false;
  attr.net_max_sends =
      std::min(pick(requested.net_max_sends, net_max_sends_default), info->tx_attr->size);
  attr.net_max_recvs =
      std::min(pick(requested.net_max_recvs, net_max_recvs_default), info->rx_attr->size);
  // Every operation in flight may complete at once: the CQ holds them all
  // (a multi-receive buffer's many: see ofi_device.hpp).
  attr.net_max_cqes = std::max(pick(requested.net_max_cqes, net_max_cqes_default),
                               attr.net_max_sends + attr.net_max_recvs + notices);
  attr.supports_multi_recv = requested.supports_multi_recv &&
                             (info->caps & FI_MULTI_RECV) != 0 && multi_recv_enabled();
  // No message is larger than max_msg_size, so no more free space is needed.
  attr.multi_recv_min_free =
      attr.supports_multi_recv
          ? std::min(pick(requested.multi_recv_min_free, multi_recv_min_free_default),
                     attr.max_msg_size)
          : 0;
  return attr;
}

// Errors that mean the peer's process or the connection to it is gone.
bool is_connection_error(int code) {
  switch (code) {
    case FI_ECONNRESET:
    case FI_ECONNREFUSED:
    case FI_ECONNABORTED:
    case FI_ENOTCONN:
    case EPIPE:
    case FI_ESHUTDOWN:
    case FI_ETIMEDOUT:
    case FI_EHOSTUNREACH:
    case FI_ENETUNREACH:
    case FI_ENETDOWN:
      return true;
    default:
      return false;
  }
}

void* mr_desc(net_mr_t mr) {
  return mr.is_empty() ? nullptr : fi_mr_desc(static_cast<fid_mr*>(mr.opaque));
}

// fi_close for teardown: reports on stderr, never throws.
void close_quietly(fid* object, const char* what) {
  if (object == nullptr) return;
  const int rc = fi_close(object);
  if (rc != 0) {
    std::fprintf(stderr, "lci ofi: closing the %s: %s\n", what,
                 describe_fi_error("fi_close", rc).c_str());
  }
}

}  // namespace

static_assert(alignof(ofi_device_t) >= util::cache_line_bytes,
              "the endpoint lock and the key counter need lines of their own");

struct ofi_device_t::rma_args_t {
  net_opcode_t opcode;  // write or read
  int rank;
  void* local;
  std::size_t size;
  net_mr_t mr;
  std::uint64_t offset;
  net_rmr_t rmr;
  bool with_imm;
  net_imm_data_t imm_data;
  void* user_context;
  bool silent;
};

ofi_device_t::ofi_device_t(const fi_info* info, fid_fabric* fabric, const peer_table_t& peers,
                           int rank_me, bool native_put_imm,
                           const net_device_attr_t& requested)
    : peers_(peers),
      rank_me_(rank_me),
      rank_n_(peers.rank_n()),
      native_put_imm_(native_put_imm),
      attr_(resolve_attr(info, requested, notices_max)),
      ops_(attr_.net_max_sends, attr_.net_max_recvs, notices_max),
      dead_(peers.rank_n(), 0),
      address_of_rank_(peers.rank_n(), FI_ADDR_NOTAVAIL),
      checked_(peers.rank_n(), 0) {
  LCI_ASSERT(rank_me >= 0 && rank_me < rank_n_, "rank_me outside the job");
  LCI_ASSERT(attr_.net_max_sends > 0 && attr_.net_max_recvs > 0, "provider queues are empty");
  const char* provider = info->fabric_attr->prov_name;
  injects_final_ = provider != nullptr && std::string(provider) == "shm";
  quirk_remote_rma_context_ = quirk_remote_rma_context_enabled();
  if (!injects_final_) injects_kept_.resize(attr_.net_max_sends * attr_.inject_size_max);
  const int mr_mode = info->domain_attr->mr_mode;
  virt_addr_ = (mr_mode & FI_MR_VIRT_ADDR) != 0;
  provider_keys_ = (mr_mode & FI_MR_PROV_KEY) != 0;
  bind_mr_ = (mr_mode & FI_MR_ENDPOINT) != 0;
  // libfabric takes fi_info* without const but only reads it.
  fi_info* mutable_info = const_cast<fi_info*>(info);
  try {
    check_fi("fi_domain", fi_domain(fabric, mutable_info, &domain_, nullptr));
    fi_cq_attr cq_attr{};
    cq_attr.size = attr_.net_max_cqes;
    cq_attr.format = FI_CQ_FORMAT_DATA;
    cq_attr.wait_obj = FI_WAIT_NONE;
    check_fi("fi_cq_open", fi_cq_open(domain_, &cq_attr, &cq_, nullptr));
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    av_attr.count = static_cast<std::size_t>(rank_n_);
    check_fi("fi_av_open", fi_av_open(domain_, &av_attr, &av_, nullptr));
    check_fi("fi_endpoint", fi_endpoint(domain_, mutable_info, &ep_, nullptr));
    check_fi("fi_ep_bind(cq)", fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV));
    check_fi("fi_ep_bind(av)", fi_ep_bind(ep_, &av_->fid, 0));
    check_fi("fi_enable", fi_enable(ep_));
    if (attr_.supports_multi_recv) set_multi_recv_min_free();
    name_.resize(name_size_max);
    std::size_t name_size = name_.size();
    check_fi("fi_getname", fi_getname(&ep_->fid, name_.data(), &name_size));
    name_.resize(name_size);
    util::spinlock_guard_t guard(lock_);
    for (std::size_t i = 0; i < ops_.capacity(op_pool_t::notice); ++i) {
      op_t* op = ops_.alloc(op_pool_t::notice);
      op->opcode = net_opcode_t::remote_write;
      post_notice_recv_locked(op);
    }
  } catch (...) {
    close_quietly(ep_ != nullptr ? &ep_->fid : nullptr, "endpoint");
    close_quietly(cq_ != nullptr ? &cq_->fid : nullptr, "completion queue");
    close_quietly(av_ != nullptr ? &av_->fid : nullptr, "address vector");
    close_quietly(domain_ != nullptr ? &domain_->fid : nullptr, "domain");
    throw;
  }
}

ofi_device_t::~ofi_device_t() {
  // The endpoint first: it references the CQ and AV, and closing it drops
  // the posted receives.
  close_quietly(&ep_->fid, "endpoint");
  close_quietly(&cq_->fid, "completion queue");
  close_quietly(&av_->fid, "address vector");
  // relaxed: a count; the owner orders its deregistrations before this
  // destruction (the contract forbids calls that overlap it).
  const std::int64_t live = registrations_count_.load(util::mo_relaxed);
  if (live != 0) {
    std::fprintf(stderr,
                 "lci ofi: a device was destroyed with %lld memory registrations still live; "
                 "its domain stays open (deregister memory before freeing its device)\n",
                 static_cast<long long>(live));
    return;
  }
  close_quietly(&domain_->fid, "domain");
}

void ofi_device_t::insert_peers(const std::vector<std::vector<char>>& names) {
  LCI_ASSERT(names.size() == static_cast<std::size_t>(rank_n_), "one name per rank");
  for (int rank = 0; rank < rank_n_; ++rank) {
    fi_addr_t address = FI_ADDR_NOTAVAIL;
    const int inserted = fi_av_insert(av_, names[rank].data(), 1, &address, 0, nullptr);
    if (inserted != 1) {
      throw std::runtime_error("lci ofi: " + describe_fi_error("fi_av_insert", inserted) +
                               " for the address of rank " + std::to_string(rank));
    }
    // FI_AV_TABLE should hand out consecutive indices from 0 (the rank
    // itself), but shm (libfabric 1.17) continues from where an earlier
    // device's AV in this process stopped: keep the map both ways.
    if (address == FI_ADDR_NOTAVAIL || address >= av_address_max) {
      throw std::runtime_error("lci ofi: fi_av_insert gave address " + std::to_string(address) +
                               " to rank " + std::to_string(rank) + " (not an AV table index)");
    }
    address_of_rank_[static_cast<std::size_t>(rank)] = address;
    if (address >= rank_of_address_.size()) rank_of_address_.resize(address + 1, -1);
    rank_of_address_[address] = rank;
  }
}

int ofi_device_t::rank_of(fi_addr_t source) const {
  const int rank = source < rank_of_address_.size() ? rank_of_address_[source] : -1;
  if (rank < 0) {
    throw std::runtime_error("lci ofi: a completion names source address " +
                             std::to_string(source) + ", which is no rank's");
  }
  return rank;
}

void ofi_device_t::set_multi_recv_min_free() {
  // After fi_enable (see "Multi-receive buffers" in ofi_device.hpp): the
  // value holds for buffers posted later, and none is posted yet.
  const int rc = fi_setopt(&ep_->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
                           &attr_.multi_recv_min_free, sizeof(attr_.multi_recv_min_free));
  if (rc == -FI_ENOPROTOOPT) {
    // The provider's own minimum is unknown, so no size of buffer is safe.
    attr_.supports_multi_recv = false;
    attr_.multi_recv_min_free = 0;
    return;
  }
  check_fi("fi_setopt(FI_OPT_MIN_MULTI_RECV)", rc);
}

std::uint64_t ofi_device_t::remote_address(net_rmr_t rmr, std::uint64_t offset) const {
  // FI_MR_VIRT_ADDR: the target's virtual address; otherwise an offset from
  // the start of the region (rmr.base always is that start).
  return virt_addr_ ? rmr.base + offset : offset;
}

// ---- posting ----

void ofi_device_t::fail_locked(op_t* op, net_fault_t fault) {
  LCI_ASSERT(op->state == op_state_t::taken, "only an op not yet posted fails here");
  op->fault = fault;
  settle_locked(op);
}

void ofi_device_t::settle_locked(op_t* op) {
  op->state = op_state_t::settled;
  ops_.push_settled(op);
}

error_t ofi_device_t::refused_locked(int rank) {
  // One progress call (count 0 moves nothing): a provider that needs
  // progress to free queue room, or to finish connecting, gets it even if
  // the caller only retries.
  fi_cq_data_entry unused;
  (void)fi_cq_read(cq_, &unused, 0);
  note_idle_locked(rank);
  return errorcode_t::retry_nomem;
}

error_t ofi_device_t::finish_post_locked(op_t* op, long rc, const char* call) {
  const error_t accepted =
      op->opcode == net_opcode_t::recv || op->silent ? errorcode_t::done : errorcode_t::posted;
  if (rc == 0) {
    op->state = op_state_t::posted;
    return accepted;
  }
  const int rank = op->rank;
  if (rc == -FI_EAGAIN) {
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

error_t ofi_device_t::post_recv(void* buffer, std::size_t size, net_mr_t mr,
                                void* user_context) {
  if (buffer == nullptr && size > 0) throw std::invalid_argument("post_recv: buffer is null");
  util::try_lock_guard_t guard(lock_);
  if (!guard.owns_lock()) return errorcode_t::retry_lock;
  op_t* op = alloc_recv_op_locked(buffer, size, user_context, false);
  if (op == nullptr) return errorcode_t::retry_nomem;
  op->desc = mr_desc(mr);  // kept for a repost (repost_recv_locked)
  const long rc = fi_recv(ep_, buffer, size, op->desc, FI_ADDR_UNSPEC, &op->fi_context);
  return finish_post_locked(op, rc, "fi_recv");
}

op_t* ofi_device_t::alloc_recv_op_locked(void* buffer, std::size_t size, void* user_context,
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

error_t ofi_device_t::post_recv_multi(void* buffer, std::size_t size, void* user_context) {
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
  util::try_lock_guard_t guard(lock_);
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

error_t ofi_device_t::post_message(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                                   net_imm_data_t imm_data, void* user_context, bool silent) {
  util::try_lock_guard_t guard(lock_);
  if (!guard.owns_lock()) return errorcode_t::retry_lock;
  if (silent && injects_final_ && dead_[rank] == 0) {
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
  op->silent = silent;
  if (dead_[rank] != 0) {
    fail_locked(op, net_fault_t::peer_crashed);
    return silent ? errorcode_t::done : errorcode_t::posted;
  }
  // libfabric only reads it; an inject's payload is kept (keep_payload_locked).
  op->buffer = silent ? keep_payload_locked(op, buffer, size) : const_cast<void*>(buffer);
  op->desc = silent ? nullptr : mr_desc(mr);
  op->cq_data = imm_data;
  op->flags = FI_COMPLETION | FI_REMOTE_CQ_DATA | (silent ? FI_INJECT : 0);
  return finish_post_locked(op, issue_send_locked(op), "fi_sendmsg");
}

void* ofi_device_t::keep_payload_locked(const op_t* op, const void* buffer, std::size_t size) {
  LCI_ASSERT(op->silent, "only an inject's payload is the caller's again at once");
  LCI_ASSERT(size <= attr_.inject_size_max, "an inject over the inject size");
  if (injects_kept_.empty()) return const_cast<void*>(buffer);
  char* kept = &injects_kept_[ops_.send_index_of(op) * attr_.inject_size_max];
  if (size > 0) std::memcpy(kept, buffer, size);
  return kept;
}

long ofi_device_t::issue_send_locked(op_t* op) {
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

error_t ofi_device_t::post_rma(const rma_args_t& args) {
  const bool write = args.opcode == net_opcode_t::write;
  util::try_lock_guard_t guard(lock_);
  if (!guard.owns_lock()) return errorcode_t::retry_lock;
  op_t* op = ops_.alloc(op_pool_t::send);
  if (op == nullptr) return errorcode_t::retry_nomem;
  op->opcode = args.opcode;
  op->rank = args.rank;
  op->length = args.size;
  op->user_context = args.user_context;
  op->silent = args.silent;
  op->remote_address = args.rmr.base + args.offset;
  if (dead_[args.rank] != 0) {
    fail_locked(op, net_fault_t::peer_crashed);
    return args.silent ? errorcode_t::done : errorcode_t::posted;
  }
  if (write && args.size == 0) return post_empty_write_locked(op, args);
  op->buffer = args.silent ? keep_payload_locked(op, args.local, args.size) : args.local;
  op->desc = args.silent ? nullptr : mr_desc(args.mr);
  op->rma_address = remote_address(args.rmr, args.offset);
  op->rkey = args.rmr.rkey;
  op->flags = FI_COMPLETION;
  if (args.with_imm && native_put_imm_) {
    op->cq_data = put_imm_data(args.size, args.imm_data);
    op->flags |= FI_REMOTE_CQ_DATA;
  } else if (args.with_imm) {
    op->notice_data = put_imm_data(args.size, args.imm_data);
  }
  if (args.silent) op->flags |= FI_INJECT;
  // Delivery complete: see "Faults" in ofi_device.hpp.
  if (write) op->flags |= FI_DELIVERY_COMPLETE;
  return finish_post_locked(op, issue_rma_locked(op), write ? "fi_writemsg" : "fi_readmsg");
}

// A zero-byte put (see "Zero-byte puts" in ofi_device.hpp).
error_t ofi_device_t::post_empty_write_locked(op_t* op, const rma_args_t& args) {
  const error_t accepted = args.silent ? errorcode_t::done : errorcode_t::posted;
  if (args.with_imm) {
    // The notice's completion reports as this op: opcode write, the
    // caller's context, silent or not.
    op->notice_data = put_imm_data(0, args.imm_data);
    op->is_notice = true;
    post_notice_locked(op);
    return accepted;
  }
  if (args.silent) {
    ops_.release(op);
    return accepted;
  }
  settle_locked(op);  // reported by the next poll, with no fault
  return accepted;
}

long ofi_device_t::issue_rma_locked(op_t* op) {
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

void ofi_device_t::repost_locked(op_t* op) {
  if (op->is_notice) {
    post_notice_locked(op);
    return;
  }
  const long rc = op->opcode == net_opcode_t::send ? issue_send_locked(op) : issue_rma_locked(op);
  if (rc == 0) {
    op->state = op_state_t::posted;
  } else if (rc == -FI_EAGAIN) {
    ops_.push_deferred(op);
  } else if (is_connection_error(static_cast<int>(-rc)) && may_repost(*op)) {
    defer_repost_locked(op);
  } else {
    fail_locked(op, net_fault_t::peer_crashed);
  }
}

void ofi_device_t::defer_repost_locked(op_t* op) {
  LCI_ASSERT(op->reposts < connection_reposts_max, "posted again too many times");
  op->repost_at_ns = steady_now_ns() + (repost_delay_ns << op->reposts);
  ++op->reposts;
  op->state = op_state_t::taken;
  ops_.push_deferred(op);
}

error_t ofi_device_t::post_sends(int rank, const void* buffer, std::size_t size,
                                 net_imm_data_t imm_data) {
  backend::check_post_target("post_sends", rank, rank_n_, buffer, size, attr_.inject_size_max);
  return post_message(rank, buffer, size, net_mr_t{}, imm_data, nullptr, true);
}

error_t ofi_device_t::post_send(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                                net_imm_data_t imm_data, void* user_context) {
  backend::check_post_target("post_send", rank, rank_n_, buffer, size, attr_.max_msg_size);
  return post_message(rank, buffer, size, mr, imm_data, user_context, false);
}

error_t ofi_device_t::post_puts(int rank, const void* buffer, std::size_t size,
                                std::uint64_t offset, net_rmr_t rmr) {
  backend::check_post_target("post_puts", rank, rank_n_, buffer, size, attr_.inject_size_max);
  return post_rma({net_opcode_t::write, rank, const_cast<void*>(buffer), size,
                   net_mr_t{}, offset, rmr, false, 0, nullptr, true});
}

error_t ofi_device_t::post_put(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                               std::uint64_t offset, net_rmr_t rmr, void* user_context) {
  backend::check_post_target("post_put", rank, rank_n_, buffer, size, attr_.max_msg_size);
  return post_rma({net_opcode_t::write, rank, const_cast<void*>(buffer), size, mr,
                   offset, rmr, false, 0, user_context, false});
}

error_t ofi_device_t::post_putImms(int rank, const void* buffer, std::size_t size,
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

error_t ofi_device_t::post_putImm(int rank, const void* buffer, std::size_t size, net_mr_t mr,
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

error_t ofi_device_t::post_get(int rank, void* buffer, std::size_t size, net_mr_t mr,
                               std::uint64_t offset, net_rmr_t rmr, void* user_context) {
  backend::check_post_target("post_get", rank, rank_n_, buffer, size, attr_.max_msg_size);
  return post_rma({net_opcode_t::read, rank, buffer, size, mr, offset, rmr, false,
                   0, user_context, false});
}

// ---- completions ----

std::size_t ofi_device_t::poll_comp(net_status_t* statuses, std::size_t statuses_max) {
  if (statuses_max == 0) return 0;
  LCI_ASSERT(statuses != nullptr, "poll_comp: statuses is null");
  util::try_lock_guard_t guard(lock_);
  if (!guard.owns_lock()) return 0;
  // The common poll finds nothing deferred, settled or dead: a load each.
  if (ops_.deferred_count() != 0) retry_deferred_locked();
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
  for (std::size_t reads = 0; reads < cq_reads_max && count < statuses_max && !stop; ++reads) {
    count += read_cq_locked(statuses + count, statuses_max - count, count > 0, &stop);
  }
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

std::size_t ofi_device_t::report_settled_locked(net_status_t* statuses,
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

std::size_t ofi_device_t::read_cq_locked(net_status_t* statuses, std::size_t statuses_max,
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

bool ofi_device_t::translate_locked(const void* raw_entry, std::uint64_t source,
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
  const bool report = !op->silent;
  if (op->opcode == net_opcode_t::recv) {
    status->rank = rank_of(source);
    status->buffer = op->buffer;
    status->length = entry.len;
    if ((entry.flags & FI_REMOTE_CQ_DATA) != 0) {
      status->imm_data = static_cast<net_imm_data_t>(entry.data);
    }
  } else if (op->opcode == net_opcode_t::remote_write) {
    // A notice: an emulated put-with-immediate has landed here.
    LCI_ASSERT((entry.flags & FI_REMOTE_CQ_DATA) != 0, "notice without its data");
    status->rank = rank_of(source);
    status->length = put_imm_length(entry.data);
    status->imm_data = static_cast<net_imm_data_t>(entry.data);
    op->state = op_state_t::taken;
    post_notice_recv_locked(op);
    return true;
  } else if (op->notice_data != 0 && !op->is_notice) {
    // The write of an emulated put-with-immediate has landed (delivery
    // complete): it is done for the caller; now tell the target.
    op->state = op_state_t::taken;
    op->is_notice = true;
    op->silent = true;
    op->user_context = nullptr;
    post_notice_locked(op);
    return report;
  }
  ops_.release(op);
  return report;
}

void ofi_device_t::translate_multi_recv_locked(const fi_cq_data_entry& entry, fi_addr_t source,
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

void ofi_device_t::release_multi_recv_locked(op_t* op, net_status_t* status) {
  LCI_ASSERT(op->multi_recv, "not a multi-receive buffer");
  *status = net_status_t{};
  status->opcode = net_opcode_t::recv;
  status->rank = rank_me_;  // no message, so no peer: any valid rank will do
  status->user_context = op->user_context;
  status->buffer_released = true;
  status->buffer_messages = op->multi_recv_messages;
  ops_.release(op);
}

void ofi_device_t::post_notice_locked(op_t* op) {
  LCI_ASSERT(op->is_notice, "not a notice");
  fi_msg_tagged msg{};
  msg.iov_count = 0;
  msg.addr = address_of(op->rank);
  msg.tag = notice_tag;
  msg.context = &op->fi_context;
  msg.data = op->notice_data;
  const long rc = fi_tsendmsg(ep_, &msg, FI_COMPLETION | FI_REMOTE_CQ_DATA);
  if (rc == 0) {
    op->state = op_state_t::posted;
  } else if (rc == -FI_EAGAIN) {
    ops_.push_deferred(op);
  } else if (is_connection_error(static_cast<int>(-rc)) && may_repost(*op)) {
    defer_repost_locked(op);
  } else {
    // The data is in place but the target will never hear of it.
    fail_locked(op, net_fault_t::peer_crashed);
  }
}

void ofi_device_t::post_notice_recv_locked(op_t* op) {
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

void ofi_device_t::retry_deferred_locked() {
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

void ofi_device_t::repost_recv_locked(op_t* op) {
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

bool ofi_device_t::translate_error_locked(net_status_t* status) {
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
  if (op->opcode == net_opcode_t::recv) {
    const std::size_t size = op->length;
    ops_.release(op);
    if (code == FI_ECANCELED) return false;  // dropped by the provider; nothing arrived
    throw std::runtime_error("lci ofi: a receive into a " + std::to_string(size) +
                             "-byte buffer failed: " +
                             describe_fi_error("completion", code) +
                             " (a message longer than the receive buffer is a sender's misuse)");
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

bool ofi_device_t::translate_multi_recv_error_locked(const fi_cq_err_entry& error, op_t* op,
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

bool ofi_device_t::lost_with_connection(const op_t& op, int code) {
  if (is_connection_error(code)) return true;
  // This backend cancels nothing: a cancelled send (or notice) is one the
  // provider flushed with its connection. A cancelled RMA may be the one
  // the target refused (see translate_error_locked), so it is not.
  const bool message = op.opcode == net_opcode_t::send || op.is_notice;
  return message && code == FI_ECANCELED;
}

bool ofi_device_t::may_repost(const op_t& op) const {
  // A bounded number of times: a peer on another host cannot be checked.
  if (op.reposts >= connection_reposts_max || !peers_.is_alive(op.rank)) return false;
  // An inject's payload is the caller's again unless the device kept it
  // (keep_payload_locked); a notice has none.
  const bool payload_held = !op.silent || op.is_notice || !injects_kept_.empty();
  // A failed send (or notice: zero bytes) was never whole at the target
  // only up to send_repost_size_max; RMAs may land twice (the same bytes).
  const bool message = op.opcode == net_opcode_t::send || op.is_notice;
  return payload_held && (!message || op.length <= send_repost_size_max);
}

// ---- dead peers ----

void ofi_device_t::note_idle_locked(int rank) {
  ++idle_turns_;
  if (idle_turns_ % peer_check_idle_turns != 0) return;
  if (rank >= 0 && dead_[rank] == 0 && !peers_.is_alive(rank)) {
    mark_dead_locked(rank);
    ops_.fail_posted_to(rank, net_fault_t::peer_crashed);
  }
  check_peers_locked();
}

void ofi_device_t::note_busy_poll_locked() {
  ++busy_polls_;
  if (busy_polls_ % peer_check_busy_polls != 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - busy_check_last_ < peer_check_busy_interval) return;
  busy_check_last_ = now;
  check_peers_locked();
}

void ofi_device_t::mark_dead_locked(int rank) {
  if (dead_[rank] != 0) return;
  dead_[rank] = dead_found;
  ++dead_unreported_count_;
  cq_entries_read_at_death_ = cq_entries_read_;
}

bool ofi_device_t::dead_report_due_locked() const {
  // The CQ never holds more than its depth (net_max_cqes covers every
  // operation in flight), except with multi-receive buffers, whose excess
  // completions libfabric's util CQ keeps in an overflow list
  // (docs/backends/ofi.md): hence a margin of several depths.
  return cq_entries_read_ - cq_entries_read_at_death_ >=
         dead_report_cq_depths * static_cast<std::uint64_t>(attr_.net_max_cqes);
}

// One peer_down completion per dead rank (backends/backend.hpp).
std::size_t ofi_device_t::report_dead_locked(net_status_t* statuses, std::size_t statuses_max) {
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

void ofi_device_t::check_peers_locked() {
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

// ---- memory ----

error_t ofi_device_t::register_memory(void* address, std::size_t size, net_mr_t* mr) {
  if (mr == nullptr) throw std::invalid_argument("register_memory: mr is null");
  if (address == nullptr || size == 0) {
    throw std::invalid_argument("register_memory: empty region (address " +
                                std::to_string(reinterpret_cast<std::uintptr_t>(address)) +
                                ", size " + std::to_string(size) + ")");
  }
  *mr = net_mr_t{};
  // relaxed: see next_key_.
  const std::uint64_t key = provider_keys_ ? 0 : next_key_.fetch_add(1, util::mo_relaxed);
  const std::uint64_t access =
      FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
  fid_mr* handle = nullptr;
  const int rc = fi_mr_reg(domain_, address, size, access, 0, key, 0, &handle, nullptr);
  if (rc == -FI_ENOMEM || rc == -FI_EAGAIN || rc == -FI_ENOSPC) return errorcode_t::retry_nomem;
  check_fi("fi_mr_reg", rc);
  if (bind_mr_) {
    int bind_rc = fi_mr_bind(handle, &ep_->fid, 0);
    if (bind_rc == 0) bind_rc = fi_mr_enable(handle);
    if (bind_rc != 0) {
      close_quietly(&handle->fid, "memory registration");
      check_fi("fi_mr_bind/fi_mr_enable", bind_rc);
    }
  }
  mr->base = address;
  mr->size = size;
  mr->opaque = handle;
  registrations_count_.fetch_add(1, util::mo_relaxed);  // relaxed: a count
  return errorcode_t::done;
}

void ofi_device_t::deregister_memory(net_mr_t* mr) {
  if (mr == nullptr || mr->is_empty()) {
    throw std::invalid_argument("deregister_memory: not a registration");
  }
  check_fi("fi_close(mr)", fi_close(&static_cast<fid_mr*>(mr->opaque)->fid));
  registrations_count_.fetch_sub(1, util::mo_relaxed);  // relaxed: a count
  *mr = net_mr_t{};
}

net_rmr_t ofi_device_t::get_rmr(net_mr_t mr) const {
  if (mr.is_empty()) throw std::invalid_argument("get_rmr: empty mr");
  net_rmr_t rmr;
  // Always the region's virtual address (what a program shares); the
  // posting side turns it into an offset when the provider wants one.
  rmr.base = reinterpret_cast<std::uintptr_t>(mr.base);
  rmr.rkey = fi_mr_key(static_cast<fid_mr*>(mr.opaque));
  rmr.size = mr.size;
  LCI_ASSERT(rmr.size > 0, "get_rmr: a registration of no bytes");
  return rmr;
}

}  // namespace lci::backends::ofi
