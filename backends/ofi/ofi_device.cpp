// ofi_device_t, its life: resolving the attributes, opening and closing the
// libfabric objects, the peers' addresses. The device's other concerns
// have a file each (detail/ofi_device_impl.hpp lists them).
#include "backends/ofi/ofi_device.hpp"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "backends/ofi/detail/ofi_check.hpp"
#include "backends/ofi/detail/ofi_device_impl.hpp"
#include "backends/ofi/ofi_context.hpp"
#include "backends/ofi/ofi_test_hooks.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"

namespace lci::backend::ofi {

namespace detail {

namespace {

// A put-with-immediate's 64-bit CQ data (remote write, or notice): imm in
// bits 0-31, the length in bits 32-63. So no transfer may exceed 32 bits.
constexpr std::size_t msg_size_cap = std::numeric_limits<std::uint32_t>::max();
// Injected messages land in the runtime's packets (8 KiB by default); half
// of that leaves room for its headers, and copies beyond a few KiB gain
// nothing over a zero-copy send.
constexpr std::size_t inject_size_cap = 4096;

// The largest endpoint name this backend publishes (the bootstrap's limit).
constexpr std::size_t name_size_max = 1024;


// LCI_OFI_MULTI_RECV=1: devices grant multi-receive buffers. Off by
// default: over shm the runtime's 8-byte message rate measured lower with
// them than with one posted packet per message, although it ran fewer
// instructions (docs/backends/ofi.md, "Multi-receive buffers").
bool multi_recv_enabled() {
  const char* value = std::getenv("LCI_OFI_MULTI_RECV");
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
  attr.supports_put_imm = put_imm_capable(info);
  // Only providers without FI_MR_LOCAL are accepted (ofi_context.hpp): a
  // null descriptor is valid for every local buffer.
  attr.requires_local_mr = false;
  // shm stalls on a key it cannot honour, tcp drops the connection with
  // everything it held (docs/backends/ofi.md, "Faults"); a provider not
  // measured is taken to be as bad.
  attr.bad_rkey_fails_alone = false;
  attr.net_max_sends =
      std::min(pick(requested.net_max_sends, net_max_sends_default), info->tx_attr->size);
  attr.net_max_recvs =
      std::min(pick(requested.net_max_recvs, net_max_recvs_default), info->rx_attr->size);
  // Every operation in flight may complete at once: the CQ holds them all
  // (a multi-receive buffer's many: see docs/backends/ofi.md).
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

}  // namespace

static_assert(alignof(ofi_device_impl_t) >= util::cache_line_bytes,
              "the endpoint lock and the key counter need lines of their own");

ofi_device_impl_t::ofi_device_impl_t(const fi_info* info, fid_fabric* fabric,
                                     const peer_table_t& peers, int rank_me, bool native_put_imm,
                                     const net_device_attr_t& requested)
    : peers_(peers),
      rank_me_(rank_me),
      rank_n_(peers.rank_n()),
      native_put_imm_(native_put_imm),
      attr_(resolve_attr(info, requested, notices_max)),
      lock_mode_(requested.lock_mode != 0 ? requested.lock_mode : lock_mode_default),
      ops_(attr_.net_max_sends, attr_.net_max_recvs, notices_max),
      dead_(peers.rank_n(), 0),
      address_of_rank_(peers.rank_n(), FI_ADDR_NOTAVAIL),
      checked_(peers.rank_n(), 0) {
  LCI_ASSERT(rank_me >= 0 && rank_me < rank_n_, "rank_me outside the job");
  LCI_ASSERT(attr_.net_max_sends > 0 && attr_.net_max_recvs > 0, "provider queues are empty");
  const char* provider = info->fabric_attr->prov_name;
  injects_final_ = provider != nullptr && std::string(provider) == "shm";
  quirk_remote_rma_context_ = test_hooks::remote_rma_context_forced();
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

ofi_device_impl_t::~ofi_device_impl_t() {
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

void ofi_device_impl_t::insert_peers(const std::vector<std::vector<char>>& names) {
  LCI_ASSERT(names.size() == static_cast<std::size_t>(rank_n_), "one name per rank");
  for (int rank = 0; rank < rank_n_; ++rank) {
    fi_addr_t address = FI_ADDR_NOTAVAIL;
    const int inserted = fi_av_insert(av_, names[rank].data(), 1, &address, 0, nullptr);
    if (inserted != 1) {
      throw std::runtime_error("lci ofi: " + describe_fi_error("fi_av_insert", inserted) +
                               " for the address of rank " + std::to_string(rank));
    }
    // Not necessarily the rank itself (ofi_address_ranks.hpp): the map is
    // kept both ways.
    if (!is_av_table_index(address)) {
      throw std::runtime_error("lci ofi: fi_av_insert gave address " + std::to_string(address) +
                               " to rank " + std::to_string(rank) + " (not an AV table index)");
    }
    address_of_rank_[static_cast<std::size_t>(rank)] = address;
  }
  rank_of_address_ = address_ranks_t(address_of_rank_);
}

int ofi_device_impl_t::rank_of(fi_addr_t source) const {
  const int rank = rank_of_address_.rank_of(source);
  if (rank < 0) {
    throw std::runtime_error("lci ofi: a completion names source address " +
                             std::to_string(source) + ", which is no rank's");
  }
  return rank;
}

void ofi_device_impl_t::set_multi_recv_min_free() {
  // After fi_enable (docs/backends/ofi.md, "Multi-receive buffers"): the
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

}  // namespace detail

std::unique_ptr<ofi_device_t> make_device(const fi_info* info, fid_fabric* fabric,
                                          const peer_table_t& peers, int rank_me,
                                          bool native_put_imm,
                                          const backend::net_device_attr_t& requested) {
  return std::make_unique<detail::ofi_device_impl_t>(info, fabric, peers, rank_me,
                                                     native_put_imm, requested);
}

}  // namespace lci::backend::ofi

namespace lci::backend::ofi::test_hooks {

namespace {
// Function-local: a test library's static initializer may set it before
// this file's globals are initialized.
util::atomic<bool>& remote_rma_context_flag() {
  static util::atomic<bool> flag{false};
  return flag;
}
}  // namespace

// relaxed: a flag with no data behind it; devices read it when constructed,
// after the test library set it at load.
void force_remote_rma_context(bool on) { remote_rma_context_flag().store(on, util::mo_relaxed); }
bool remote_rma_context_forced() { return remote_rma_context_flag().load(util::mo_relaxed); }

}  // namespace lci::backend::ofi::test_hooks
