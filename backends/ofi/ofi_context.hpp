// ofi_context_t: the libfabric network context (backends/backend.hpp) of one
// process: the chosen provider's fi_info, its fabric, the peers' process
// identities, and the bootstrap through which devices swap addresses.
//
// Provider choice: the name given (LCI_ATTR_OFI_PROVIDER_NAME, e.g. "shm" or
// "tcp;ofi_rxm"), or "" for the first usable of default_provider_names. A
// provider is usable when fi_getinfo offers an FI_EP_RDM endpoint with
// FI_MSG, FI_TAGGED, FI_RMA (read, write, remote read/write), FI_SOURCE and
// remote CQ data, in an mr_mode this backend supports (FI_MR_VIRT_ADDR,
// FI_MR_PROV_KEY, FI_MR_ALLOCATED, FI_MR_ENDPOINT; never FI_MR_LOCAL, since
// the runtime posts unregistered packets) and without the FI_RX_CQ_DATA
// mode (remote CQ data must not consume a posted receive). FI_MULTI_RECV is
// asked for too but not required: a provider that refuses it is asked again
// without it, and its devices never grant supports_multi_recv. Providers
// that address peers by IP (tcp) bind to the network interface or IPv4
// address named by device_name (the attribute, LCI_ATTR_DEVICE_NAME: "eth0",
// "10.1.2.3"), which is how a job spans machines; without one, to
// 127.0.0.1, and the job runs on one machine (see docs/backends/ofi.md).
// Other providers ignore device_name.
//
// alloc_device() is collective: every rank calls it in the same order; the
// n-th device of a rank opens a domain, endpoint, CQ and AV, publishes its
// endpoint name under a bootstrap key of its own, fences, and inserts all
// ranks' names in rank order, so that fi_addr_t == rank.
//
// Thread safety: rank_me()/rank_n() from any thread; alloc_device() from one
//                thread at a time per rank — a second concurrent call throws
//                std::logic_error (peers could not know the pairing).
// Blocking:      construction and alloc_device() wait for every rank (the
//                bootstrap's fence); nothing else blocks. While a rank waits
//                there it polls none of its devices, so a peer whose
//                operation needs this rank's progress (manual progress: a
//                get, a delivery-complete put) waits too, until this rank's
//                allocation is done.
// Ownership:     borrows the bootstrap for its lifetime; owns the fabric;
//                devices must be destroyed before their context.
// Allocation:    at construction and in alloc_device().
// Errors:        an unusable provider throws std::runtime_error naming it
//                and the providers this machine offers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backends/backend.hpp"
#include "backends/ofi/ofi_peers.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/spinlock.hpp"

struct fi_info;
struct fid_fabric;

namespace lci::backend::ofi {

// Tried in order when no provider is named.
inline constexpr const char* default_provider_names[] = {"shm", "tcp;ofi_rxm"};

// Whether `info`'s remote CQ data carries an immediate (net_imm_data_t), as
// every send's does: a provider whose does not is unusable.
bool carries_imm_data(const fi_info* info);
// Whether devices opened from `info` have put-with-immediate: the CQ data
// carries 64 bits (the immediate value and the length such a put reports).
bool put_imm_capable(const fi_info* info);

class ofi_context_t final : public backend::net_context_t {
 public:
  // device_name: "", an interface or an IPv4 address (see above).
  ofi_context_t(bootstrap::bootstrap_t& bootstrap, const std::string& provider_name,
                const std::string& device_name = "");
  ~ofi_context_t() override = default;
  ofi_context_t(const ofi_context_t&) = delete;
  ofi_context_t& operator=(const ofi_context_t&) = delete;

  int rank_me() const override { return rank_me_; }
  int rank_n() const override { return rank_n_; }
  // Fields of `requested` left 0 take this backend's defaults (see
  // ofi_device.hpp); larger values are capped by the provider's limits.
  std::unique_ptr<backend::net_device_t> alloc_device(
      const backend::net_device_attr_t& requested) override;
  bool supports_put_imm() const override { return put_imm_capable(info_.get()); }
  // ofi_device.hpp's net_max_*_default.
  backend::net_device_attr_t device_defaults() const override;

  // The provider in use, as libfabric names it ("shm", "tcp;ofi_rxm").
  const std::string& provider_name() const { return provider_name_; }
  const fi_info* info() const { return info_.get(); }
  fid_fabric* fabric() const { return fabric_.get(); }
  const peer_table_t& peers() const { return peers_; }

 private:
  bootstrap::bootstrap_t& bootstrap_;
  const int rank_me_;
  const int rank_n_;
  // Which context of this process this is: every rank opens its contexts in
  // the same order, so it names bootstrap keys consistently across ranks.
  const std::uint32_t context_index_;
  struct info_deleter_t {
    void operator()(fi_info* info) const;
  };
  struct fabric_closer_t {
    void operator()(fid_fabric* fabric) const;
  };
  std::unique_ptr<fi_info, info_deleter_t> info_;
  std::unique_ptr<fid_fabric, fabric_closer_t> fabric_;
  std::string provider_name_;
  peer_table_t peers_;
  const bool native_put_imm_;  // docs/backends/ofi.md, put-with-immediate
  util::spinlock_t alloc_lock_;       // try-locked: refuses concurrent allocations
  std::uint32_t devices_count_ = 0;   // under alloc_lock_
};

}  // namespace lci::backend::ofi
