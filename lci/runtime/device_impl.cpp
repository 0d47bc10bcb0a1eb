#include "lci/runtime/device_impl.hpp"

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

#include "lci/api/lci_config.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/log.hpp"
#include "lci/wire/immediate.hpp"

namespace lci::detail {

// The API's lock-mode flags are the backend contract's bits.
static_assert(backend::net_lock_try_send == LCI_NET_TRYLOCK_SEND &&
              backend::net_lock_try_recv == LCI_NET_TRYLOCK_RECV &&
              backend::net_lock_try_poll == LCI_NET_TRYLOCK_POLL &&
              backend::net_lock_mr == LCI_NET_LOCK_MR &&
              backend::net_lock_mode_max + 1 == LCI_NET_TRYLOCK_MAX);

namespace {
static_assert(static_cast<int>(attr_ibv_odp_strategy_t::implicit_odp) ==
              static_cast<int>(backend::net_ibv_odp_t::implicit_odp));
static_assert(static_cast<int>(attr_ibv_prefetch_strategy_t::prefetch_no_fault) ==
              static_cast<int>(backend::net_ibv_prefetch_t::prefetch_no_fault));
static_assert(static_cast<int>(attr_ibv_td_strategy_t::per_qp) ==
              static_cast<int>(backend::net_ibv_td_t::per_qp));

// packet_pool: nullptr for a raw device, which asks for no receive regions
// and may have any max_msg_size (no packet must fit through it).
std::unique_ptr<backend::net_device_t> open_net_device(runtime_impl_t* runtime,
                                                       const attr_device_t& attr,
                                                       const attr_net_context_t& net_context_attr,
                                                       const packet_pool_impl_t* packet_pool) {
  const std::size_t packet_bytes = packet_pool != nullptr ? packet_pool->attr.packet_size : 0;
  // An eager message goes out whole in one packet, so a smaller limit would
  // make the network refuse the runtime's own sends.
  if (net_context_attr.max_msg_size != 0 && net_context_attr.max_msg_size < packet_bytes) {
    throw std::invalid_argument("alloc_device: max_msg_size = " +
                                std::to_string(net_context_attr.max_msg_size) +
                                ": below the packet pool's packet_size " +
                                std::to_string(packet_bytes) +
                                " (an eager message travels in one packet)");
  }
  backend::net_device_attr_t requested;
  // 0 asks for the backend's default; a backend caps either at its own limit.
  requested.max_msg_size = net_context_attr.max_msg_size;
  requested.inject_size_max = net_context_attr.max_inject_size;
  requested.net_max_sends = attr.net_max_sends;
  requested.net_max_recvs = attr.net_max_recvs;
  requested.net_max_cqes = attr.net_max_cqes;
  // Checked against LCI_NET_TRYLOCK_MAX by check_supported (unsupported_attrs.cpp).
  requested.lock_mode = attr.ofi_lock_mode;
  // The largest message a pre-posted receive takes is one packet (an eager
  // message with its header; control messages are smaller). A raw device's
  // program posts single receives of its own (net_post_recv).
  requested.supports_multi_recv = packet_pool != nullptr;
  requested.multi_recv_min_free = packet_bytes;
  // Read by a verbs network only; refused before this point by any other
  // (unsupported_attrs.hpp). The enums list the same values in order.
  requested.ibv.gid_index = net_context_attr.ibv_gid_idx;
  requested.ibv.force_gid_auto_select = net_context_attr.ibv_force_gid_auto_select;
  requested.ibv.odp = static_cast<backend::net_ibv_odp_t>(net_context_attr.ibv_odp_strategy);
  requested.ibv.prefetch =
      static_cast<backend::net_ibv_prefetch_t>(net_context_attr.ibv_prefetch_strategy);
  requested.ibv.td = static_cast<backend::net_ibv_td_t>(attr.ibv_td_strategy);
  return runtime->net().alloc_device(requested);
}

}  // namespace

attr_device_t device_impl_t::resolved_attr(const attr_device_t& attr,
                                           const backend::net_device_attr_t& net_attr) {
  attr_device_t resolved = attr;
  resolved.net_max_sends = net_attr.net_max_sends;
  resolved.net_max_recvs = net_attr.net_max_recvs;
  resolved.net_max_cqes = net_attr.net_max_cqes;
  resolved.uid = next_device_uid();
  return resolved;
}

device_impl_t::device_impl_t(runtime_impl_t* runtime, const attr_device_t& attr,
                             const attr_net_context_t& net_context_attr,
                             packet_pool_impl_t* packet_pool, device_pools_t* pools)
    : runtime_(runtime),
      net_(open_net_device(runtime, attr, net_context_attr, packet_pool)),
      attr_(resolved_attr(attr, net_->attr())),
      packet_pool_(packet_pool),
      pools_(pools),
      backlog_(pools->backlog_steps_max),
      receives_(*net_, packet_pool, receive_mark()),
      accounting_(net_->attr(), raw()) {
  if (attr_.alloc_default_endpoint) {
    attr_endpoint_t endpoint_attr = get_default_attr_endpoint();
    default_endpoint_ = std::make_unique<endpoint_impl_t>(this, endpoint_attr);
  }
  receives_.replenish();
  LCI_LOG(info, "device", "rank %d: device %llu up (%s; sends %zu, receives %zu)\n",
          runtime_->rank_me(), static_cast<unsigned long long>(attr_.uid),
          raw() ? "raw" : "with packets", static_cast<std::size_t>(attr_.net_max_sends),
          static_cast<std::size_t>(attr_.net_max_recvs));
}

device_impl_t::~device_impl_t() {
  LCI_LOG(info, "device", "rank %d: device %llu freed\n", runtime_->rank_me(),
          static_cast<unsigned long long>(attr_.uid));
  // Requests a crashed peer failed: nothing can name them once the device
  // is gone (drain_before_close() emptied the backlog).
  for (request_t* request : watch_list_.take_failed()) {
    LCI_ASSERT(request->failed, "releasing a request no crash failed");
    release_owned_mr(request);
    if (request->packet != nullptr) packet_pool_->pool.put(request->packet);
    give_back(request);
  }
  // Closing the network device drops the pre-posted receives: the network
  // completes none of them and no longer writes them, so their packets go
  // back to the pool now, and their share with them. (Left out until the
  // pool was freed, a device per thread freed after a run kept up to the
  // pool's whole receive share: the default device then posted the rest as
  // receives, and its sends waited for a packet forever.)
  net_.reset();
  receives_.drop_posted();
}

endpoint_impl_t* device_impl_t::alloc_endpoint(const attr_endpoint_t& attr) {
  auto endpoint = std::make_unique<endpoint_impl_t>(this, attr);
  endpoint_impl_t* raw = endpoint.get();
  util::spinlock_guard_t guard(endpoints_lock_);
  endpoints_.push_back(std::move(endpoint));
  return raw;
}

void device_impl_t::free_endpoint(endpoint_impl_t* endpoint) {
  std::unique_ptr<endpoint_impl_t> owned;
  util::spinlock_guard_t guard(endpoints_lock_);
  for (auto it = endpoints_.begin(); it != endpoints_.end(); ++it) {
    if (it->get() == endpoint) {
      owned = std::move(*it);
      endpoints_.erase(it);
      return;
    }
  }
  throw std::invalid_argument("free_endpoint: not a live endpoint of its device");
}

void device_impl_t::throw_raw(const char* op) {
  throw std::invalid_argument(std::string(op) +
                              ": device has no packet pool: a raw network device, used only "
                              "by the net_* operations (net_post_*, net_poll_cq)");
}

void device_impl_t::throw_not_raw(const char* op) {
  throw std::invalid_argument(
      std::string(op) +
      ": device has a packet pool: its receives and completions belong to progress(); the raw "
      "network layer needs a device allocated without one (a runtime with "
      "alloc_default_packet_pool = false, and alloc_device without packet_pool)");
}

void device_impl_t::release_owned_mr(request_t* request) {
  if (request->owned_mr.is_empty()) return;
  net_->deregister_memory(&request->owned_mr);
  LCI_ASSERT(request->owned_mr.is_empty(), "a deregistered mr is not empty");
  if (request->owned_mr_standing) {
    request->owned_mr_standing = false;
    accounting_.return_standing_registration();
  }
}

void device_impl_t::release_pin(request_t* request) {
  if (request->pinned == nullptr) return;
  request->pinned->unpin();
  request->pinned = nullptr;
}

std::size_t device_impl_t::packet_payload_max() const {
  LCI_ASSERT(!raw(), "the protocol reached a raw device");
  return packet_pool_->attr.packet_size;
}

std::size_t device_impl_t::bcopy_size_max() const {
  return packet_payload_max() - sizeof(eager_header_t);
}

deferred_post_t* device_impl_t::take_deferred_post() {
  deferred_post_t* post = pools_->deferred_posts.take();
  if (post != nullptr) return post;
  throw std::length_error("lci: too many posts wait in the device's backlog (" +
                          std::to_string(pools_->deferred_posts.objects_max()) +
                          " with allow_retry = false or COMP_NULL wait for the network)");
}

}  // namespace lci::detail
