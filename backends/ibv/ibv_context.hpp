// ibv_context_t: the ibv backend's network context (backends/backend.hpp):
// one opened verbs device (an HCA and its port 1) per runtime, and the
// bootstrap through which devices exchange their QP numbers, LID and GID.
// Its devices read net_device_attr_t::ibv (reads_ibv_attr()): GID index,
// on-demand paging, prefetch and thread domains are per device.
// Everything goes through a verbs_t (ibv_verbs.hpp): the real libibverbs or
// the emulated device (docs/backends/ibv.md).
//
// Thread safety: rank_me/rank_n from any thread; alloc_device by one thread
//                of the rank at a time (collective, backend.hpp).
// Blocking:      the constructor and alloc_device call the bootstrap's
//                allgather, which blocks until every rank took part.
// Ownership:     owns the opened device context; the verbs_t and the
//                bootstrap functions must outlive it, and its devices must
//                be destroyed before it.
// Allocation:    at construction and alloc_device only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "backends/backend.hpp"
#include "backends/ibv/ibv_verbs.hpp"

namespace lci::backend::ibv {

// The bootstrap as the context needs it: an allgather of at most
// allgather_bytes_max bytes per rank (all[r * bytes ...] gets rank r's), and
// a wait hook called in every loop that waits for the network (a device
// draining its sends at destruction): a scheduling point under the
// simulator, an OS yield otherwise.
struct ibv_bootstrap_t {
  static constexpr std::size_t allgather_bytes_max = 64;
  std::function<void(const void* mine, std::size_t bytes, void* all)> allgather;
  std::function<void(const char* what)> wait;
};

struct ibv_context_options_t {
  std::string device_name;  // "" : the first device libibverbs lists
  std::uint8_t port_num = 1;
};

// LCI_ATTR_DEVICE_NAME as the ibv backend reads it: "NAME" (port 1),
// "NAME:PORT" or ":PORT" (the first device), e.g. "mlx5_0:2". Throws
// std::invalid_argument naming the value when PORT is not a number in
// [1, 255].
ibv_context_options_t parse_device_name(const std::string& value);

class ibv_context_t final : public backend::net_context_t {
 public:
  // Opens the device. Throws std::runtime_error naming the verbs table and
  // why when there is none (no RDMA device, the port not active).
  ibv_context_t(verbs_t& verbs, int rank, int ranks_count, ibv_bootstrap_t bootstrap,
                const ibv_context_options_t& options = {});
  ~ibv_context_t() override;
  ibv_context_t(const ibv_context_t&) = delete;
  ibv_context_t& operator=(const ibv_context_t&) = delete;

  int rank_me() const override { return rank_; }
  int rank_n() const override { return ranks_count_; }
  std::unique_ptr<backend::net_device_t> alloc_device(
      const backend::net_device_attr_t& requested) override;
  bool reads_ibv_attr() const override { return true; }
  // RDMA write with immediate is part of every verbs device.
  bool supports_put_imm() const override { return true; }
  // ibv_device.hpp's sends_default and recvs_default (its CQ holds both).
  backend::net_device_attr_t device_defaults() const override;

  verbs_t& verbs() const { return verbs_; }
  ibv_context* context() const { return context_; }
  const ibv_device_attr& device_attr() const { return device_attr_; }
  const ibv_port_attr& port_attr() const { return port_attr_; }
  std::uint8_t port_num() const { return options_.port_num; }
  const ibv_bootstrap_t& bootstrap() const { return bootstrap_; }

 private:
  verbs_t& verbs_;
  const int rank_;
  const int ranks_count_;
  const ibv_bootstrap_t bootstrap_;
  const ibv_context_options_t options_;
  ibv_context* context_ = nullptr;
  ibv_device_attr device_attr_{};
  ibv_port_attr port_attr_{};
};

}  // namespace lci::backend::ibv
