// ibv_device_t: memory registration — pinned or on-demand MRs, the
// implicit on-demand MR, prefetch advice, and remote keys.
#include "backends/ibv/ibv_device.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <stdexcept>

#include "backends/ibv/detail/ibv_device_detail.hpp"
#include "lci/util/assert.hpp"

namespace lci::backend::ibv {

using namespace detail;

// [address, address + size) registered with `access` (and on demand under
// explicit ODP), or under implicit ODP the implicit MR, which covers it
// already. nullptr (errno set) when reg_mr refuses.
ibv_mr* ibv_device_t::reg_range(void* address, std::size_t size, int access) {
  if (implicit_mr_ != nullptr) return implicit_mr_;
  return verbs_.reg_mr(pd_, address, size, access | odp_access_);
}

int ibv_device_t::dereg_range(ibv_mr* mr) {
  LCI_ASSERT(mr != nullptr, "deregistering no MR");
  if (mr == implicit_mr_) return 0;  // the device's, until it is destroyed
  return verbs_.dereg_mr(mr);
}

// The prefetch strategy's advice over the range of an on-demand MR,
// synchronous (FLUSH) and in pieces an SGE can carry. Advice only: a range
// it did not fault in is faulted in by the first access.
void ibv_device_t::prefetch(ibv_mr* mr, void* address, std::size_t size) {
  using backend::net_ibv_prefetch_t;
  if (attr_.ibv.prefetch == net_ibv_prefetch_t::none) return;
  LCI_ASSERT(attr_.ibv.odp != backend::net_ibv_odp_t::none, "a prefetch without ODP");
  const ibv_advise_mr_advice advice =
      attr_.ibv.prefetch == net_ibv_prefetch_t::prefetch_write ? IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE
      : attr_.ibv.prefetch == net_ibv_prefetch_t::prefetch_no_fault
          ? IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT
          : IBV_ADVISE_MR_ADVICE_PREFETCH;
  constexpr std::size_t piece_bytes_max = std::size_t{1} << 30;
  auto* next = static_cast<unsigned char*>(address);
  for (std::size_t left = size; left > 0;) {  // bounded: size / piece_bytes_max turns
    const std::size_t piece = std::min(left, piece_bytes_max);
    ibv_sge sge{reinterpret_cast<std::uint64_t>(next), static_cast<std::uint32_t>(piece),
                mr->lkey};
    if (verbs_.advise_mr(pd_, advice, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) != 0) return;
    next += piece;
    left -= piece;
  }
}

error_t ibv_device_t::register_memory(void* address, std::size_t size, net_mr_t* mr) {
  *mr = net_mr_t{};
  ibv_mr* registered = reg_range(address, size, access_all);
  if (registered == nullptr) {
    if (errno == ENOMEM || errno == EAGAIN) return errorcode_t::retry_nomem;
    throw_verbs(verbs_, "reg_mr", errno);
  }
  prefetch(registered, address, size);
  mr->base = address;
  mr->size = size;
  mr->opaque = registered;
  return errorcode_t::done;
}

void ibv_device_t::deregister_memory(net_mr_t* mr) {
  if (mr->is_empty()) return;
  if (int error = dereg_range(static_cast<ibv_mr*>(mr->opaque))) {
    throw_verbs(verbs_, "dereg_mr", error);
  }
  *mr = net_mr_t{};
}

net_rmr_t ibv_device_t::get_rmr(net_mr_t mr) const {
  if (mr.is_empty()) throw std::invalid_argument("get_rmr: the mr is empty");
  net_rmr_t rmr;
  rmr.base = reinterpret_cast<std::uintptr_t>(mr.base);
  rmr.rkey = static_cast<ibv_mr*>(mr.opaque)->rkey;
  rmr.size = mr.size;
  return rmr;
}

}  // namespace lci::backend::ibv
