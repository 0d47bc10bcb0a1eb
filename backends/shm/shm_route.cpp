#include "backends/shm/shm_route.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "lci/util/atomic.hpp"

namespace lci::backend::shm {

namespace {

net_device_attr_t both_honour(const net_device_attr_t& shm, const net_device_attr_t& network) {
  net_device_attr_t attr = network;
  attr.max_msg_size = std::min(shm.max_msg_size, network.max_msg_size);
  attr.inject_size_max = std::min(shm.inject_size_max, network.inject_size_max);
  attr.supports_put_imm = shm.supports_put_imm && network.supports_put_imm;
  attr.bad_rkey_fails_alone = shm.bad_rkey_fails_alone && network.bad_rkey_fails_alone;
  attr.net_max_recvs = network.net_max_recvs + shm_recvs_max;
  attr.supports_multi_recv = false;
  attr.multi_recv_min_free = 0;
  return attr;
}

class route_device_t final : public net_device_t {
 public:
  route_device_t(shm_context_t& shm_context, std::unique_ptr<net_device_t> shm,
                 std::unique_ptr<net_device_t> network)
      : shm_context_(shm_context),
        shm_(std::move(shm)),
        network_(std::move(network)),
        attr_(network_ != nullptr ? both_honour(shm_->attr(), network_->attr()) : shm_->attr()),
        reported_dead_(new util::atomic<bool>[shm_context.rank_n()]) {
    for (int rank = 0; rank < shm_context.rank_n(); ++rank) {
      reported_dead_[rank].store(false, util::mo_relaxed);  // relaxed: not shared yet
    }
  }

  const net_device_attr_t& attr() const override { return attr_; }

  error_t post_recv(void* buffer, std::size_t size, net_mr_t mr, void* user_context) override {
    if (network_ == nullptr) return post_recv_on(false, buffer, size, mr, user_context);
    // relaxed: the counts only balance the two sides.
    const std::size_t on_shm = shm_recvs_.load(util::mo_relaxed);
    const bool shm_first =
        on_shm < shm_recvs_max && on_shm <= network_recvs_.load(util::mo_relaxed);
    const error_t error = post_recv_on(!shm_first, buffer, size, mr, user_context);
    if (error.errorcode != errorcode_t::retry_nomem) return error;
    if (!shm_first && on_shm >= shm_recvs_max) return error;
    return post_recv_on(shm_first, buffer, size, mr, user_context);
  }
  error_t post_recv_multi(void* buffer, std::size_t size, void* user_context) override {
    (void)buffer;
    (void)size;
    (void)user_context;
    throw std::logic_error("post_recv_multi: a device of local and remote ranks has none");
  }
  error_t post_sends(int rank, const void* buffer, std::size_t size,
                     net_imm_data_t imm_data) override {
    return side(rank).post_sends(rank, buffer, size, imm_data);
  }
  error_t post_send(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                    net_imm_data_t imm_data, void* user_context) override {
    return side(rank).post_send(rank, buffer, size, mr, imm_data, user_context);
  }
  error_t post_puts(int rank, const void* buffer, std::size_t size, std::uint64_t offset,
                    net_rmr_t rmr) override {
    return side(rank).post_puts(rank, buffer, size, offset, rmr);
  }
  error_t post_put(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                   std::uint64_t offset, net_rmr_t rmr, void* user_context) override {
    return side(rank).post_put(rank, buffer, size, mr, offset, rmr, user_context);
  }
  error_t post_putImms(int rank, const void* buffer, std::size_t size, std::uint64_t offset,
                       net_rmr_t rmr, net_imm_data_t imm_data) override {
    return side(rank).post_putImms(rank, buffer, size, offset, rmr, imm_data);
  }
  error_t post_putImm(int rank, const void* buffer, std::size_t size, net_mr_t mr,
                      std::uint64_t offset, net_rmr_t rmr, net_imm_data_t imm_data,
                      void* user_context) override {
    return side(rank).post_putImm(rank, buffer, size, mr, offset, rmr, imm_data, user_context);
  }
  error_t post_get(int rank, void* buffer, std::size_t size, net_mr_t mr, std::uint64_t offset,
                   net_rmr_t rmr, void* user_context) override {
    return side(rank).post_get(rank, buffer, size, mr, offset, rmr, user_context);
  }

  std::size_t poll_comp(net_status_t* statuses, std::size_t statuses_max) override {
    if (network_ == nullptr) return shm_->poll_comp(statuses, statuses_max);
    // relaxed: only whose turn it is to be polled first.
    const bool shm_first = (poll_turn_.fetch_add(1, util::mo_relaxed) & 1) == 0;
    std::size_t count = 0;
    for (const bool on_network : {!shm_first, shm_first}) {
      if (count == statuses_max) break;
      net_device_t& device = on_network ? *network_ : *shm_;
      const std::size_t polled = device.poll_comp(statuses + count, statuses_max - count);
      count += settle(on_network, statuses + count, polled);
    }
    return count;
  }

  // Memory is registered with the network (the shm side reads any memory):
  // one registration serves both.
  error_t register_memory(void* address, std::size_t size, net_mr_t* mr) override {
    return registrar().register_memory(address, size, mr);
  }
  void deregister_memory(net_mr_t* mr) override { registrar().deregister_memory(mr); }
  net_rmr_t get_rmr(net_mr_t mr) const override {
    return (network_ != nullptr ? *network_ : *shm_).get_rmr(mr);
  }

 private:
  net_device_t& side(int rank) {
    // An out-of-range rank goes to the shm device, whose check names it.
    const bool local = rank < 0 || rank >= shm_context_.rank_n() || shm_context_.is_local(rank);
    return local || network_ == nullptr ? *shm_ : *network_;
  }
  net_device_t& registrar() { return network_ != nullptr ? *network_ : *shm_; }
  util::atomic<std::size_t>& recvs_of(bool on_network) {
    return on_network ? network_recvs_ : shm_recvs_;
  }

  error_t post_recv_on(bool on_network, void* buffer, std::size_t size, net_mr_t mr,
                       void* user_context) {
    const error_t error = (on_network ? *network_ : *shm_).post_recv(buffer, size, mr, user_context);
    // relaxed: see post_recv.
    if (!error.is_retry()) recvs_of(on_network).fetch_add(1, util::mo_relaxed);
    return error;
  }

  // Counts the receives a side used up and drops a second report of a dead
  // rank; returns how many of the `count` statuses stay (moved to the front).
  std::size_t settle(bool on_network, net_status_t* statuses, std::size_t count) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const net_status_t& status = statuses[i];
      if (status.opcode == net_opcode_t::recv) {
        recvs_of(on_network).fetch_sub(1, util::mo_relaxed);  // relaxed: see post_recv
      }
      // relaxed: the flag carries no data; exchange makes one report win.
      if (status.opcode == net_opcode_t::peer_down &&
          reported_dead_[status.rank].exchange(true, util::mo_relaxed)) {
        continue;
      }
      statuses[kept++] = status;
    }
    return kept;
  }

  shm_context_t& shm_context_;
  std::unique_ptr<net_device_t> shm_;
  std::unique_ptr<net_device_t> network_;  // null: every rank is local
  net_device_attr_t attr_;
  util::atomic<std::size_t> shm_recvs_{0};
  util::atomic<std::size_t> network_recvs_{0};
  util::atomic<std::uint64_t> poll_turn_{0};
  std::unique_ptr<util::atomic<bool>[]> reported_dead_;
};

}  // namespace

route_context_t::route_context_t(std::unique_ptr<shm_context_t> shm,
                                 std::unique_ptr<net_context_t> network)
    : shm_(std::move(shm)), network_(std::move(network)) {
  if (shm_ == nullptr) throw std::logic_error("route_context_t: no shm context");
  if (network_ != nullptr &&
      (network_->rank_me() != shm_->rank_me() || network_->rank_n() != shm_->rank_n())) {
    throw std::logic_error("route_context_t: the shm and network contexts disagree on the ranks");
  }
}

int route_context_t::rank_me() const { return shm_->rank_me(); }
int route_context_t::rank_n() const { return shm_->rank_n(); }

std::unique_ptr<net_device_t> route_context_t::alloc_device(const net_device_attr_t& requested) {
  std::unique_ptr<net_device_t> shm = shm_->alloc_device(requested);
  std::unique_ptr<net_device_t> network;
  if (network_ != nullptr) {
    net_device_attr_t network_requested = requested;
    network_requested.supports_multi_recv = false;
    network = network_->alloc_device(network_requested);
  }
  return std::make_unique<route_device_t>(*shm_, std::move(shm), std::move(network));
}

net_device_attr_t route_context_t::device_defaults() const {
  return network_ != nullptr ? network_->device_defaults() : shm_->device_defaults();
}

bool route_context_t::supports_put_imm() const {
  return shm_->supports_put_imm() && (network_ == nullptr || network_->supports_put_imm());
}

}  // namespace lci::backend::shm
