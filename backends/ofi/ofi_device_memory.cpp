// ofi_device_t: memory registration, remote keys and remote addresses
// (docs/backends/ofi.md, "Mapping the contract").
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "backends/ofi/detail/ofi_check.hpp"
#include "backends/ofi/detail/ofi_device_impl.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::backend::ofi::detail {

std::uint64_t ofi_device_impl_t::remote_address(net_rmr_t rmr, std::uint64_t offset) const {
  // FI_MR_VIRT_ADDR: the target's virtual address; otherwise an offset from
  // the start of the region (rmr.base always is that start).
  return virt_addr_ ? rmr.base + offset : offset;
}

error_t ofi_device_impl_t::register_memory(void* address, std::size_t size, net_mr_t* mr) {
  if (mr == nullptr) throw std::invalid_argument("register_memory: mr is null");
  if (address == nullptr || size == 0) {
    throw std::invalid_argument("register_memory: empty region (address " +
                                std::to_string(reinterpret_cast<std::uintptr_t>(address)) +
                                ", size " + std::to_string(size) + ")");
  }
  *mr = net_mr_t{};
  std::optional<util::spinlock_guard_t> guard;  // lock_mode: net_lock_mr
  if (locks_registration()) guard.emplace(lock_);
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

void ofi_device_impl_t::deregister_memory(net_mr_t* mr) {
  if (mr == nullptr || mr->is_empty()) {
    throw std::invalid_argument("deregister_memory: not a registration");
  }
  std::optional<util::spinlock_guard_t> guard;  // lock_mode: net_lock_mr
  if (locks_registration()) guard.emplace(lock_);
  check_fi("fi_close(mr)", fi_close(&static_cast<fid_mr*>(mr->opaque)->fid));
  registrations_count_.fetch_sub(1, util::mo_relaxed);  // relaxed: a count
  *mr = net_mr_t{};
}

net_rmr_t ofi_device_impl_t::get_rmr(net_mr_t mr) const {
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

}  // namespace lci::backend::ofi::detail
