#include "lci/runtime/device_impl.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

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
// Receive regions per device (at most net_max_recvs), and the size of each
// in packets: 4 x 32 packets is half the memory of the 256 packets a device
// keeps posted otherwise. A region takes up to 32 of the largest eager
// messages, and thousands of small ones, before it is posted again.
constexpr std::size_t recv_regions_max = 4;
constexpr std::size_t recv_region_packets = 32;
// The most receives topped up at once (recvs_refill_batch_): two polls'
// worth of arrivals, an eighth of the 256 a device keeps posted.
constexpr std::size_t recvs_refill_batch_max = 2 * LCI_BACKEND_MAX_POLLS;

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

// The standing registrations (rendezvous receives' and the program's) a
// device may hold at once. Where the protocol registers local buffers
// (requires_local_mr), a quarter of the network's registrations, at least
// one, stays for sends, puts and gets, which finish without a peer's help;
// otherwise the protocol registers nothing else, and standing ones may take
// them all. So may the program's on a raw device, where the protocol never
// runs.
std::size_t standing_registrations_max_of(const backend::net_device_attr_t& net_attr, bool raw) {
  const std::size_t total = net_attr.registrations_max;
  if (total == 0) return std::numeric_limits<std::size_t>::max();  // no known limit
  const std::size_t reserved =
      net_attr.requires_local_mr && !raw ? std::max<std::size_t>(1, total / 4) : 0;
  if (total <= reserved) {
    throw std::invalid_argument(
        "alloc_device: the network allows " + std::to_string(total) +
        " memory registration(s) per device; the protocol needs at least 2 (a rendezvous "
        "receive's, and one kept for sends, puts and gets)");
  }
  return total - reserved;
}
}  // namespace

device_pools_t::~device_pools_t() {
  // Records of messages nobody received (they sit in a matching table,
  // which never frees what it holds). Ends: nothing uses the pools now.
  for (allocated_unexpected_t* node = allocated_head_; node != nullptr;) {
    allocated_unexpected_t* next = node->next;
    delete node;
    node = next;
  }
}

unexpected_t* device_pools_t::allocate_unexpected() {
  auto* node = new allocated_unexpected_t;
  util::spinlock_guard_t guard(allocated_lock_);
  node->next = allocated_head_;
  if (allocated_head_ != nullptr) allocated_head_->prev = node;
  allocated_head_ = node;
  ++allocated_count_;
  ++allocated_total_;
  return &node->record;
}

void device_pools_t::free_unexpected(unexpected_t* message) {
  // The record is the first member of a standard-layout node, so their
  // addresses are the same.
  static_assert(std::is_standard_layout_v<allocated_unexpected_t> &&
                    offsetof(allocated_unexpected_t, record) == 0,
                "an allocated record's address must be its node's");
  auto* node = reinterpret_cast<allocated_unexpected_t*>(message);
  {
    util::spinlock_guard_t guard(allocated_lock_);
    LCI_ASSERT(allocated_count_ > 0, "a record given back that was never allocated");
    if (node->prev != nullptr) {
      node->prev->next = node->next;
    } else {
      LCI_ASSERT(allocated_head_ == node, "an allocated record not on its list");
      allocated_head_ = node->next;
    }
    if (node->next != nullptr) node->next->prev = node->prev;
    --allocated_count_;
  }
  delete node;
}

std::uint64_t device_pools_t::unexpected_allocated_total() const {
  util::spinlock_guard_t guard(allocated_lock_);
  return allocated_total_;
}

std::size_t device_pools_t::unexpected_allocated_count() const {
  util::spinlock_guard_t guard(allocated_lock_);
  return allocated_count_;
}

bool device_pools_t::all_home() const {
  return requests.taken_count() == 0 && unexpected.taken_count() == 0 &&
         unexpected_allocated_count() == 0 && deferred_posts.taken_count() == 0;
}

device_impl_t::device_impl_t(runtime_impl_t* runtime, const attr_device_t& attr,
                             const attr_net_context_t& net_context_attr,
                             packet_pool_impl_t* packet_pool, device_pools_t* pools)
    : runtime_(runtime),
      attr_(attr),
      net_(open_net_device(runtime, attr, net_context_attr, packet_pool)),
      packet_pool_(packet_pool),
      pools_(pools),
      backlog_(pools->backlog_steps_max) {
  const backend::net_device_attr_t& net_attr = net_->attr();
  standing_registrations_max_ = standing_registrations_max_of(net_attr, raw());
  attr_.net_max_sends = net_attr.net_max_sends;
  attr_.net_max_recvs = net_attr.net_max_recvs;
  attr_.net_max_cqes = net_attr.net_max_cqes;
  attr_.uid = next_device_uid();
  if (raw()) {
    // Nothing pre-posted: the program's receives are the only ones.
    LCI_ASSERT(!net_attr.supports_multi_recv, "a raw device was given receive regions");
  } else if (net_attr.supports_multi_recv) {
    LCI_ASSERT(net_attr.multi_recv_min_free >= packet_payload_max(),
               "the network releases receive regions with less than a packet free");
    regions_ = std::make_unique<recv_regions_t>(
        std::min(recv_regions_max, net_attr.net_max_recvs),
        recv_region_packets * net_attr.multi_recv_min_free);
    // The packets replenish_regions() posts while a region is refused.
    recvs_refill_batch_ = std::clamp<std::size_t>(net_attr.net_max_recvs / 4, 1,
                                                  recvs_refill_batch_max);
  } else {
    recvs_target_ = net_attr.net_max_recvs;
    recvs_refill_batch_ = std::clamp<std::size_t>(recvs_target_ / 4, 1, recvs_refill_batch_max);
  }
  if (attr_.alloc_default_endpoint) {
    attr_endpoint_t endpoint_attr = get_default_attr_endpoint();
    default_endpoint_ = std::make_unique<endpoint_impl_t>(this, endpoint_attr);
  }
  replenish_receives();
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
  const std::size_t dropped = recvs_posted_.load(util::mo_relaxed);
  if (raw()) {
    LCI_ASSERT(dropped == 0, "a raw device pre-posted packets");
  } else {
    const std::size_t reclaimed = packet_pool_->pool.reclaim_marked(receive_mark());
    LCI_ASSERT(reclaimed == dropped, "the packets posted as receives and their count differ");
    packet_pool_->return_receive_share(dropped);
  }
  while (backlog_.pop()) {
  }
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

bool device_impl_t::take_standing_registration() {
  // relaxed: a budget; the registration a share admits is made afterwards
  // by the same thread, and the network bounds the real number anyway.
  const std::size_t before = standing_registrations_.fetch_add(1, util::mo_relaxed);
  if (before < standing_registrations_max_) return true;
  standing_registrations_.fetch_sub(1, util::mo_relaxed);  // relaxed: as above
  return false;
}

void device_impl_t::release_owned_mr(request_t* request) {
  if (request->owned_mr.is_empty()) return;
  net_->deregister_memory(&request->owned_mr);
  LCI_ASSERT(request->owned_mr.is_empty(), "a deregistered mr is not empty");
  // Only a rendezvous receive registers for itself among receives (an
  // eager one copies from a packet).
  if (request->kind == request_kind_t::recv) return_standing_registration();
}

void device_impl_t::release_pin(request_t* request) {
  if (request->pinned == nullptr) return;
  request->pinned->unpin();
  request->pinned = nullptr;
}

void device_impl_t::return_standing_registration() {
  // relaxed: as in take_standing_registration().
  const std::size_t before = standing_registrations_.fetch_sub(1, util::mo_relaxed);
  LCI_ASSERT(before >= 1, "a standing registration share returned twice");
}

std::size_t device_impl_t::packet_payload_max() const {
  LCI_ASSERT(!raw(), "the protocol reached a raw device");
  return packet_pool_->attr.packet_size;
}

std::size_t device_impl_t::bcopy_size_max() const {
  return packet_payload_max() - sizeof(protocol::eager_header_t);
}

deferred_post_t* device_impl_t::take_deferred_post() {
  deferred_post_t* post = pools_->deferred_posts.take();
  if (post != nullptr) return post;
  throw std::length_error("lci: too many posts wait in the device's backlog (" +
                          std::to_string(pools_->deferred_posts.objects_max()) +
                          " with allow_retry = false or COMP_NULL wait for the network)");
}

error_t device_impl_t::push_backlog(backlog_step_t step) {
  // relaxed: the poster's own later drained() is ordered after this by
  // program order; another thread cannot know of the step before it runs.
  // Counted before the push so a progress call that pops and finishes it
  // at once never takes the count below zero.
  backlog_steps_.fetch_add(1, util::mo_relaxed);
  backlog_.push(step);
  return errorcode_t::posted_backlog;
}

bool device_impl_t::drain_backlog_steps() {
  bool progressed = false;
  // Every step queued now gets one try, not only those before the first
  // refusal: a step may wait for what a step behind it holds (an arrival
  // waiting for a packet, behind it the store of a message that holds the
  // last one into the matching table, where only a receive can free it).
  // Stopping at the first refusal let such a backlog wait forever
  // (//tests/runtime:incast_test). Bounded by the count taken here: steps
  // queued meanwhile, and those that go back, wait for the next call.
  for (std::size_t tries = backlog_.size(); tries > 0; --tries) {
    std::optional<backlog_step_t> step = backlog_.pop();
    if (!step) break;  // another thread took the rest
    error_t error;
    try {
      error = (*step)();
    } catch (...) {
      finish_backlog_step();  // dropped: the exception is its report
      throw;
    }
    if (error.is_retry()) {
      // Still refused: back in the queue at its tail (protocol steps of
      // different operations do not depend on each other's order).
      backlog_.push(std::move(*step));
      continue;
    }
    finish_backlog_step();
    progressed = true;
  }
  return progressed;
}

void device_impl_t::finish_backlog_step() {
  // release: pairs with the acquire in drained(); what the step did (the
  // request it put in flight, its reads of the caller's buffer) happens
  // before a caller told "drained" reuses anything.
  const std::int64_t before = backlog_steps_.fetch_sub(1, util::mo_release);
  LCI_ASSERT(before >= 1, "backlog steps went negative");
}

bool device_impl_t::post_receives(std::size_t target) {
  bool posted_any = false;
  while (true) {
    // Reserves a chunk before posting it, so that threads topping up at
    // once never post past the target between them. relaxed: see
    // recvs_posted_.
    const std::size_t chunk = recvs_refill_batch_;
    const std::size_t before = recvs_posted_.fetch_add(chunk, util::mo_relaxed);
    const std::size_t wanted = before < target ? std::min(chunk, target - before) : 0;
    // The pool's receive share (packet_pool_impl_t) keeps packets for sends.
    const std::size_t shares =
        wanted == 0 ? 0 : packet_pool_->take_receive_shares(wanted, /*device_has_none=*/before == 0);
    std::size_t posted = 0;
    // What the chunk did not post is given back, also when a post throws
    // (a crashed rank in the simulator): the count of posted receives must
    // stay the number of packets out with this device's mark (~device_impl_t).
    const auto settle = [&] {
      if (shares > posted) packet_pool_->return_receive_share(shares - posted);
      if (chunk > posted) recvs_posted_.fetch_sub(chunk - posted, util::mo_relaxed);
    };
    try {
      // A device with no receive posted may take a reserved packet.
      while (posted < shares && post_packet_receive(/*may_use_reserve=*/before == 0 && posted == 0)) {
        ++posted;
      }
    } catch (...) {
      settle();
      throw;
    }
    settle();
    posted_any = posted_any || posted > 0;
    if (posted < chunk) break;  // the target reached, or no share, packet or room
  }
  return posted_any;
}

bool device_impl_t::post_packet_receive(bool may_use_reserve) {
  void* packet = packet_pool_->pool.get();
  if (packet == nullptr && may_use_reserve) packet = packet_pool_->pool.get_reserved();
  if (packet == nullptr) return false;
  packet_pool_->pool.mark_receive(packet, receive_mark());
  // Back to the pool, unmarked, unless the network took it: after a refusal
  // and after a throw alike.
  struct unposted_t {
    packet_pool::pool_t& pool;
    void* packet;
    ~unposted_t() {
      if (packet == nullptr) return;
      pool.unmark_receive(packet);
      pool.put(packet);
    }
  } unposted{packet_pool_->pool, packet};
  if (!net_->post_recv(packet, packet_payload_max(), backend::net_mr_t{}, nullptr).is_done()) {
    return false;
  }
  unposted.packet = nullptr;
  return true;
}

bool device_impl_t::replenish_regions() {
  bool refused_nomem = false;
  const bool posted = regions_->post_ready(*net_, &refused_nomem);
  // A network out of room for a region may stay so until receives take the
  // messages it holds unmatched: libfabric 1.17's shm keeps its unexpected
  // messages in the same rx_attr.size entries as posted receives, takes an
  // entry for a multi-receive post before it looks at them (-FI_ENOMEM when
  // none is free), and hands them over only to receives posted later,
  // where a plain receive needs no entry of its own. So while a region is
  // refused so, packets are posted, a batch at a time (the next once the
  // last has been consumed), each taking one held message and freeing its
  // entry, until a region is taken again. relaxed: see recvs_posted_.
  if (!refused_nomem || recvs_posted_.load(util::mo_relaxed) != 0) return posted;
  return post_receives(recvs_refill_batch_) || posted;
}

}  // namespace lci::detail
