// route_context_t: one network made of two (docs/backends/shm.md,
// "Routing"): the shm context for the ranks of this node and a network
// context (ofi, ibv) for the others, if there are any.
//
// Its devices post by rank (a local rank to the shm device, any other to
// the network's), poll both (in turn, so neither starves the other), give
// each posted receive buffer to the side that holds fewer (the shm side at
// most shm_recvs_max), register memory with the network's device (the shm
// side needs none: CMA reads any mapped memory) and resolve attr() to what
// both honour. A dead rank reported by both sides is reported once.
//
// Thread safety: as net_context_t / net_device_t; the routing itself keeps
//                only atomic counters and its per-rank report flags under a
//                try-lock.
// Blocking:      never (alloc_device as the two contexts').
// Ownership:     the route owns both contexts; a device owns both devices.
// Allocation:    at construction and alloc_device().
// Limits:        a device needs at least one buffer posted per side with
//                traffic (two, when both carry messages); multi-receive is
//                not offered.
#pragma once

#include <cstddef>
#include <memory>

#include "backends/backend.hpp"
#include "backends/shm/shm_device.hpp"

namespace lci::backend::shm {

// Receive buffers a routed device keeps on its shm side at most.
inline constexpr std::size_t shm_recvs_max = 64;

class route_context_t final : public net_context_t {
 public:
  // `network` may be null (every rank is local); `shm` may not (a process
  // without it uses the network's context alone). Both see the same ranks.
  route_context_t(std::unique_ptr<shm_context_t> shm, std::unique_ptr<net_context_t> network);

  int rank_me() const override;
  int rank_n() const override;
  std::unique_ptr<net_device_t> alloc_device(const net_device_attr_t& requested) override;
  bool reads_ibv_attr() const override { return network_ != nullptr && network_->reads_ibv_attr(); }
  net_device_attr_t device_defaults() const override;
  bool supports_put_imm() const override;

  bool has_network() const { return network_ != nullptr; }

 private:
  std::unique_ptr<shm_context_t> shm_;
  std::unique_ptr<net_context_t> network_;
};

}  // namespace lci::backend::shm
