#include "lci/runtime/runtime_impl.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

#include "lci/api/lci_config.hpp"
#include "lci/comp/graph.hpp"
#include "lci/matching/matching_key.hpp"
#include "lci/runtime/allocator.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/unsupported_attrs.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/log.hpp"
#include "lci/wire/control.hpp"
#include "lci/wire/immediate.hpp"

namespace lci::detail {

static_assert(LCI_CACHE_LINE == util::cache_line_bytes,
              "lci_config.hpp's LCI_CACHE_LINE is the line the runtime pads to");

namespace {

// The completion objects of freed runtimes, until free_comp (comps_ of
// ~runtime_impl_t). Never destroyed: what the program never frees stays
// reachable to the end of the process, as upstream's objects do.
struct outlived_comps_t {
  util::spinlock_t lock;
  std::vector<std::unique_ptr<comp_impl_t>> comps;  // under lock
};
outlived_comps_t& outlived_comps() {
  static outlived_comps_t* const list = new outlived_comps_t;
  return *list;
}

// The status of an active message holds a buffer from the user allocator;
// that of a put with signal on the native path holds none, and the checked
// path never signals this object (discard_comp's contract).
class discard_impl_t final : public comp_impl_t {
 public:
  discard_impl_t() : comp_impl_t(comp_kind_t::handler) {}
  void signal(status_t status) override {
    if (status.buffer != nullptr) get_user_allocator()->deallocate(status.buffer);
  }
};

void keep_outlived_comps(std::vector<std::unique_ptr<comp_impl_t>>&& comps) {
  outlived_comps_t& outlived = outlived_comps();
  util::spinlock_guard_t guard(outlived.lock);
  for (auto& comp : comps) outlived.comps.push_back(std::move(comp));
  comps.clear();
}

// What every net context (the runtime's default one too) must pass: a
// backend that is the network this rank runs on, attributes in effect.
void check_net_context(const attr_net_context_t& attr, bool simulated,
                       const backend::net_context_t& net, const char* op) {
  if (attr.backend != attr_backend_t::none && (attr.backend == attr_backend_t::sim) != simulated) {
    throw std::invalid_argument(std::string(op) + ": backend = " +
                                get_attr_backend_str(attr.backend) +
                                ": not the network this rank runs on");
  }
  check_supported(attr, net.reads_ibv_attr(), op);
}

// The runtime's attributes as given, refused where out of range.
const attr_runtime_t& checked(const attr_runtime_t& attr) {
  if (attr.imm_nbits_tag < 0 || attr.imm_nbits_tag > 26) {
    throw std::invalid_argument("imm_nbits_tag = " + std::to_string(attr.imm_nbits_tag) +
                                ": must be in [0, 26]");
  }
  if (attr.imm_nbits_rcomp < 1 || attr.imm_nbits_rcomp > 28) {
    throw std::invalid_argument("imm_nbits_rcomp = " + std::to_string(attr.imm_nbits_rcomp) +
                                ": must be in [1, 28]");
  }
  return attr;
}

// The attributes the runtime decides (docs/api_gen.md: get_attr_NAME()
// reports what is in effect): auto_select becomes the rendezvous protocol
// the network allows, and the limits on tags and rcomps follow from the
// immediate data's layout (lci/wire/immediate.hpp) and the matching
// key's (lci/matching/matching_key.hpp). Call after imm_nbits_rcomp is
// checked.
attr_runtime_t resolved(attr_runtime_t attr, const backend::net_context_t& net) {
  if (attr.rdv_protocol == attr_rdv_protocol_t::auto_select) {
    attr.rdv_protocol =
        net.supports_put_imm() ? attr_rdv_protocol_t::writeimm : attr_rdv_protocol_t::write;
  }
  const auto nbits_rcomp = static_cast<unsigned>(attr.imm_nbits_rcomp);
  // A put/get signal packs rcomp | tag into the immediate value, no header.
  attr.max_imm_rcomp = (std::uint64_t{1} << nbits_rcomp) - 1;
  attr.max_imm_tag = (std::uint64_t{1} << (imm_value_bits - nbits_rcomp)) - 1;
  // Other operations carry what does not fit in a header; a send's tag
  // must still fit its matching key, the narrowest being rank_tag's.
  attr.max_tag = matching::key_rank_tag_tag_max;
  attr.max_rcomp = std::numeric_limits<rcomp_t>::max();
  return attr;
}

// A net context's output attribute, from the network it names.
attr_net_context_t resolved(attr_net_context_t attr, const backend::net_context_t& net) {
  attr.support_putimm = net.supports_put_imm();
  return attr;
}

}  // namespace

runtime_impl_t::runtime_impl_t(const attr_runtime_t& attr, host_t& host)
    : attr_(resolved(checked(attr), host.net_context())),
      host_(host),
      counted_(host),
      net_(host.net_context()),
      rank_me_(net_.rank_me()),
      rank_n_(net_.rank_n()),
      default_net_context_(std::make_unique<net_context_impl_t>(
          this, resolved(get_default_attr_net_context(), net_))),
      matching_engine_index_(8, nullptr),
      rcomps_(64, nullptr),
      peers_dead_(new util::atomic<bool>[static_cast<std::size_t>(rank_n_)]) {
  for (int rank = 0; rank < rank_n_; ++rank) {
    // relaxed: before the runtime is shared.
    peers_dead_[static_cast<std::size_t>(rank)].store(false, util::mo_relaxed);
  }
  check_supported(attr, "runtime");
  check_net_context(default_net_context_->attr, host.simulated(), net_,
                    "runtime: default net context");
  // Engine index 0 on every rank: messages name engines by index.
  collective_matching_engine_ = alloc_matching_engine(get_default_attr_matching_engine());
  if (attr.alloc_default_packet_pool) {
    default_packet_pool_ = alloc_packet_pool(get_default_attr_packet_pool());
  }
  if (attr.alloc_default_matching_engine) {
    default_matching_engine_ = alloc_matching_engine(get_default_attr_matching_engine());
  }
  // Without a default packet pool the default device is raw
  // (device_impl.hpp): upstream's way to give a program the network alone.
  if (attr.alloc_default_device) {
    default_device_ = alloc_device(get_default_attr_device(), nullptr, default_packet_pool_);
  }
  if (!host.simulated()) util::log::set_process_rank(rank_me_);
  LCI_LOG(info, "runtime", "rank %d of %d: runtime up (default device: %s, %s network)\n",
          rank_me_, rank_n_, default_device_ != nullptr ? "yes" : "no",
          host.simulated() ? "simulated" : "real");
}

runtime_impl_t::~runtime_impl_t() {
  LCI_LOG(info, "runtime", "rank %d: runtime freed\n", rank_me_);
  release_mrs_of(nullptr);
  // Devices first: closing a network device gives its pre-posted
  // receives' packets back to their pool.
  devices_.clear();
  // Packets of unexpected messages nobody received go home before the pools
  // check they are all in.
  for (auto& pool : packet_pools_) pool->pool.reclaim_outstanding();
  packet_pools_.clear();
  // A graph whose operations the closed devices dropped (a program that
  // stopped mid-round: it threw, or a peer crashed) can no longer complete.
  for (auto& comp : comps_) {
    if (comp->kind() == comp_kind_t::graph) static_cast<graph_impl_t*>(comp.get())->abandon_round();
  }
  keep_outlived_comps(std::move(comps_));
  matching_engines_.clear();
}

template <typename T>
std::unique_ptr<T> runtime_impl_t::take_live(std::vector<std::unique_ptr<T>>& list, T* item,
                                             const char* what) {
  util::spinlock_guard_t guard(resources_lock_);
  auto it = std::find_if(list.begin(), list.end(),
                         [item](const std::unique_ptr<T>& p) { return p.get() == item; });
  if (it == list.end()) {
    throw std::invalid_argument(std::string(what) +
                                ": not a live resource of this runtime (freed twice, or "
                                "allocated by another runtime)");
  }
  std::unique_ptr<T> owned = std::move(*it);
  list.erase(it);
  return owned;
}

template <typename T>
void runtime_impl_t::erase_live(std::vector<std::unique_ptr<T>>& list, T* item,
                                const char* what) {
  // Destroyed outside the lock: a device's destructor talks to the network.
  (void)take_live(list, item, what);
}

net_context_impl_t* runtime_impl_t::alloc_net_context(const attr_net_context_t& attr) {
  check_net_context(attr, host_.simulated(), net_, "alloc_net_context");
  auto context = std::make_unique<net_context_impl_t>(this, resolved(attr, net_));
  net_context_impl_t* raw = context.get();
  util::spinlock_guard_t guard(resources_lock_);
  net_contexts_.push_back(std::move(context));
  return raw;
}

void runtime_impl_t::free_net_context(net_context_impl_t* net_context) {
  erase_live(net_contexts_, net_context, "free_net_context: net_context");
}

packet_pool_impl_t* runtime_impl_t::packet_pool_containing(const void* address,
                                                           void** payload) {
  // The default pool first, without the resources lock: it is the usual
  // one (put_upacket of what get_upacket gave), and the lock, one per
  // runtime, taken by every put of every thread, made put_upacket collapse
  // from 13 to 2 M/s between 1 and 16 threads (bench/api_resources, 16
  // cores). The pointer is read as get_upacket reads it: it changes only
  // when the program frees that pool, which no put of its packets may
  // overlap; a packet's range is fixed for the pool's life.
  if (packet_pool_impl_t* pool = default_packet_pool_; pool != nullptr) {
    *payload = pool->pool.payload_containing(address);
    if (*payload != nullptr) return pool;
  }
  util::spinlock_guard_t guard(resources_lock_);
  for (const auto& pool : packet_pools_) {
    *payload = pool->pool.payload_containing(address);
    if (*payload != nullptr) return pool.get();
  }
  return nullptr;
}

device_impl_t* runtime_impl_t::alloc_device(const attr_device_t& attr,
                                             net_context_impl_t* net_context,
                                             packet_pool_impl_t* pool) {
  check_supported(attr, net_.reads_ibv_attr(), "alloc_device");
  if (net_context == nullptr) net_context = default_net_context_.get();
  if (pool == nullptr) pool = default_packet_pool_;
  // Still nullptr: a raw device (device_impl.hpp).
  if (pool != nullptr && pool->runtime != this) {
    throw std::invalid_argument("alloc_device: packet_pool belongs to another runtime");
  }
  // Devices pair across ranks by allocation order (backend.hpp): two
  // threads of this rank (of any of its runtimes) allocating at once would
  // pair by chance, so the second is refused instead.
  // acquire/release: one allocation's effects are seen by the next.
  if (host_.device_allocating().exchange(true, util::mo_acquire)) {
    throw std::logic_error(
        "alloc_device: another thread of this rank is allocating a device; device allocation "
        "is collective and pairs devices by order, so allocate devices from one thread at a "
        "time, in the same order on every rank");
  }
  struct release_t {
    util::atomic<bool>& flag;
    ~release_t() { flag.store(false, util::mo_release); }
  } release{host_.device_allocating()};
  const runtime_defaults_t& defaults = runtime_defaults_of(&host_);
  auto pools = std::make_unique<device_pools_t>(defaults.requests_max, defaults.unexpected_max,
                                                defaults.deferred_posts_max,
                                                defaults.backlog_steps_max);
  auto device = std::make_unique<device_impl_t>(this, attr, net_context->attr, pool, pools.get());
  device->collective().ordinal = devices_allocated_++;
  device_impl_t* raw = device.get();
  util::spinlock_guard_t guard(resources_lock_);
  device_pools_.push_back(std::move(pools));
  devices_.push_back(std::move(device));
  return raw;
}

void runtime_impl_t::check_live_device(device_impl_t* device) {
  util::spinlock_guard_t guard(resources_lock_);
  const bool live = std::any_of(devices_.begin(), devices_.end(),
                                [device](const auto& d) { return d.get() == device; });
  if (!live) {
    throw std::invalid_argument(
        "free_device: device: not a live resource of this runtime (freed twice, or allocated "
        "by another runtime)");
  }
}

std::vector<device_impl_t*> runtime_impl_t::devices() {
  util::spinlock_guard_t guard(resources_lock_);
  std::vector<device_impl_t*> live;
  live.reserve(devices_.size());
  for (const auto& device : devices_) live.push_back(device.get());
  return live;
}

device_impl_t* runtime_impl_t::device_at_ordinal(std::uint32_t ordinal) {
  util::spinlock_guard_t guard(resources_lock_);
  for (const auto& device : devices_) {
    if (device->ordinal() == ordinal) return device.get();
  }
  return nullptr;
}

void runtime_impl_t::free_device(device_impl_t* device) {
  release_mrs_of(device);
  if (device == default_device_) default_device_ = nullptr;
  device_pools_t* const pools = device->pools();
  erase_live(devices_, device, "free_device: device");
  // Nothing takes from the pools now; a record still out (a message in a
  // shared matching engine, a request a crash failed) keeps them.
  if (!pools->all_home()) return;
  std::unique_ptr<device_pools_t> owned;
  {
    util::spinlock_guard_t guard(resources_lock_);
    auto it = std::find_if(device_pools_.begin(), device_pools_.end(),
                           [pools](const auto& p) { return p.get() == pools; });
    LCI_ASSERT(it != device_pools_.end(), "a device's pools not among the runtime's");
    owned = std::move(*it);
    device_pools_.erase(it);
  }
}

std::size_t runtime_impl_t::device_pools_count() {
  util::spinlock_guard_t guard(resources_lock_);
  return device_pools_.size();
}

void runtime_impl_t::release_mrs_of(const device_impl_t* device) {
  std::vector<std::unique_ptr<mr_impl_t>> left;
  {
    util::spinlock_guard_t guard(resources_lock_);
    for (auto& mr : mrs_) {
      if (device == nullptr || mr->device == device) left.push_back(std::move(mr));
    }
    mrs_.erase(std::remove(mrs_.begin(), mrs_.end(), nullptr), mrs_.end());
  }
  // Outside the lock: deregistering talks to the network.
  for (const auto& mr : left) deregister_from_network(*mr);
}

void runtime_impl_t::deregister_from_network(mr_impl_t& mr) {
  if (mr.holds_no_bytes()) return;  // took neither a network registration nor a share
  mr.device->net().deregister_memory(&mr.net_mr);
  mr.device->accounting().return_standing_registration();
}

packet_pool_impl_t* runtime_impl_t::alloc_packet_pool(const attr_packet_pool_t& attr_in) {
  const runtime_defaults_t& defaults = runtime_defaults_of(&host_);
  attr_packet_pool_t attr = attr_in;
  if (attr.packet_size == 0) attr.packet_size = defaults.packet_size;
  if (attr.npackets == 0) attr.npackets = defaults.npackets;
  // The largest control message, a checked put's or get's RTS, must fit a
  // packet where the network cannot inject it.
  constexpr std::size_t packet_size_min = std::max(sizeof(std::uint64_t) * 8, sizeof(rma_rts_t));
  if (attr.packet_size < packet_size_min) {
    throw std::invalid_argument("packet_size = " + std::to_string(attr.packet_size) +
                                ": must be at least " + std::to_string(packet_size_min) +
                                " bytes (the largest control message)");
  }
  const std::size_t threshold = attr_.packet_return_threshold != 0
                                    ? attr_.packet_return_threshold
                                    : packet_pool::pool_t::packet_return_threshold_default;
  auto pool = std::make_unique<packet_pool_impl_t>(this, attr, threshold, defaults.receive_reserve);
  packet_pool_impl_t* raw = pool.get();
  util::spinlock_guard_t guard(resources_lock_);
  packet_pools_.push_back(std::move(pool));
  return raw;
}

void runtime_impl_t::free_packet_pool(packet_pool_impl_t* pool) {
  {
    util::spinlock_guard_t guard(resources_lock_);
    for (const auto& device : devices_) {
      if (device->packet_pool() == pool) {
        throw std::invalid_argument(
            "free_packet_pool: packet_pool is still used by a device (free the device first)");
      }
    }
    const bool live = std::any_of(packet_pools_.begin(), packet_pools_.end(),
                                  [pool](const auto& p) { return p.get() == pool; });
    // Checked before check_before_free() reads the pool; erase_live()
    // throws the error.
    if (live) pool->check_before_free();
  }
  if (pool == default_packet_pool_) default_packet_pool_ = nullptr;
  erase_live(packet_pools_, pool, "free_packet_pool: packet_pool");
}

matching_engine_impl_t* runtime_impl_t::alloc_matching_engine(const attr_matching_engine_t& attr) {
  check_supported(attr, "alloc_matching_engine");
  const runtime_defaults_t& defaults = runtime_defaults_of(&host_);
  util::spinlock_guard_t guard(resources_lock_);
  const auto index = static_cast<std::uint32_t>(matching_engines_.size());
  auto engine = std::make_unique<matching_engine_impl_t>(
      this, attr, index, defaults.matching_buckets, defaults.matching_overflow_nodes);
  matching_engine_impl_t* raw = engine.get();
  const error_t error = matching_engine_index_.put(index, raw);
  if (!error.is_done()) throw std::length_error("alloc_matching_engine: too many engines");
  matching_engines_.push_back(std::move(engine));
  return raw;
}

void runtime_impl_t::free_matching_engine(matching_engine_impl_t* engine) {
  {
    util::spinlock_guard_t guard(resources_lock_);
    // The index stays taken (messages name engines by index); nothing new
    // matches on it.
    if (engine != nullptr && engine->runtime == this) {
      (void)matching_engine_index_.put(engine->index, nullptr);
    }
  }
  if (engine == default_matching_engine_) default_matching_engine_ = nullptr;
  erase_live(matching_engines_, engine, "free_matching_engine: matching_engine");
}

matching_engine_impl_t* runtime_impl_t::matching_engine_at(std::uint32_t index) const {
  // Equivalent mutants: bound. As for rcomps_: get() of the slot at size(),
  // never written, returns null, as this test does (tools/mutate_records/2026-11-28-runs-35-59.md,
  // runs 42-50).
  if (index >= matching_engine_index_.size()) return nullptr;
  return matching_engine_index_.get(index);
}

comp_impl_t* runtime_impl_t::adopt_comp(std::unique_ptr<comp_impl_t> comp) {
  comp_impl_t* raw = comp.get();
  util::spinlock_guard_t guard(resources_lock_);
  comps_.push_back(std::move(comp));
  return raw;
}

void runtime_impl_t::free_comp(comp_impl_t* comp) {
  {
    util::spinlock_guard_t guard(resources_lock_);
    const bool live = std::any_of(comps_.begin(), comps_.end(),
                                  [comp](const auto& c) { return c.get() == comp; });
    // Checked live before the graph is read; erase_live() throws otherwise.
    if (live && comp->kind() == comp_kind_t::graph &&
        static_cast<graph_impl_t*>(comp)->round_in_flight()) {
      throw std::logic_error(
          "free_comp: a graph with a node's operation in flight (wait for its round with "
          "graph_test, or for its completion object, first)");
    }
  }
  erase_live(comps_, comp, "free_comp: comp");
}

const runtime_defaults_t& runtime_defaults_of(const host_t* host) {
  return runtime_defaults(host != nullptr && host->simulated());
}

zero_attr_defaults_t zero_attr_defaults() {
  const runtime_defaults_t& defaults = runtime_defaults_of(looked_up_host());
  return {packet_pool::pool_t::packet_return_threshold_default, defaults.packet_size,
          defaults.npackets, defaults.cq_default_length, linked_device_depths()};
}

comp_impl_t* discard_comp() {
  static discard_impl_t* const discard = new discard_impl_t;
  return discard;
}

bool free_outlived_comp(comp_impl_t* comp) {
  std::unique_ptr<comp_impl_t> owned;
  {
    outlived_comps_t& outlived = outlived_comps();
    util::spinlock_guard_t guard(outlived.lock);
    auto it = std::find_if(outlived.comps.begin(), outlived.comps.end(),
                           [comp](const auto& c) { return c.get() == comp; });
    if (it == outlived.comps.end()) return false;
    owned = std::move(*it);
    outlived.comps.erase(it);
  }
  return true;  // `owned` deletes it outside the lock
}

mr_impl_t* runtime_impl_t::adopt_mr(std::unique_ptr<mr_impl_t> mr) {
  mr_impl_t* raw = mr.get();
  util::spinlock_guard_t guard(resources_lock_);
  mrs_.push_back(std::move(mr));
  return raw;
}

std::unique_ptr<mr_impl_t> runtime_impl_t::withdraw_mr(mr_impl_t* mr) {
  return take_live(mrs_, mr, "deregister_memory: mr");
}

mr_impl_t* runtime_impl_t::pin_registration(device_impl_t& device, std::uint64_t base,
                                            std::uint64_t rkey, std::uint64_t offset,
                                            std::uint64_t size) {
  util::spinlock_guard_t guard(resources_lock_);
  for (const auto& mr : mrs_) {
    if (mr->device != &device || mr->holds_no_bytes()) continue;
    const backend::net_rmr_t rmr = device.net().get_rmr(mr->net_mr);
    if (rmr.base != base || rmr.rkey != rkey) continue;
    if (offset > mr->net_mr.size || size > mr->net_mr.size - offset) return nullptr;
    // relaxed: the lock orders it before withdraw_mr's removal; the
    // deregistering thread reads the count only after that.
    mr->pins.fetch_add(1, util::mo_relaxed);
    return mr.get();
  }
  return nullptr;
}

rcomp_t runtime_impl_t::reserve_rcomps(rcomp_t n) {
  util::spinlock_guard_t guard(rcomps_lock_);
  const rcomp_t first = rcomps_next_;
  rcomps_next_ += n;
  return first;
}

rcomp_t runtime_impl_t::register_rcomp(comp_impl_t* comp, rcomp_t rcomp) {
  util::spinlock_guard_t guard(rcomps_lock_);
  if (rcomp == 0) {
    rcomp = rcomps_next_++;
  } else if (rcomp >= rcomps_next_) {
    throw std::invalid_argument("register_rcomp: rcomp = " + std::to_string(rcomp) +
                                " was not handed out by reserve_rcomps");
  }
  const error_t error = rcomps_.put(rcomp, comp);
  if (!error.is_done()) {
    throw std::length_error("register_rcomp: rcomp = " + std::to_string(rcomp) +
                            " is beyond the registry's capacity");
  }
  return rcomp;
}

void runtime_impl_t::deregister_rcomp(rcomp_t rcomp) {
  util::spinlock_guard_t guard(rcomps_lock_);
  // Equivalent mutants: bound. rcomps_.size() is one past the highest rcomp
  // ever put, so the slot at rcomp == size() was never set and get() returns
  // null there: the same refusal (tools/mutate_records/2026-11-28-runs-35-59.md, runs 42-50).
  if (rcomp == 0 || rcomp >= rcomps_.size() || rcomps_.get(rcomp) == nullptr) {
    throw std::invalid_argument("deregister_rcomp: rcomp = " + std::to_string(rcomp) +
                                " is not registered");
  }
  (void)rcomps_.put(rcomp, nullptr);
}

comp_impl_t* runtime_impl_t::rcomp_target(rcomp_t rcomp) const {
  // Equivalent mutants: bound. As in deregister_rcomp(): get() of the slot at
  // size() returns null, as this test does (tools/mutate_records/2026-11-28-runs-35-59.md,
  // runs 42-50).
  if (rcomp == 0 || rcomp >= rcomps_.size()) return nullptr;
  return rcomps_.get(rcomp);
}

void runtime_impl_t::throw_rank_out_of_range(int rank, const char* argument) const {
  throw std::invalid_argument(std::string(argument) + " = " + std::to_string(rank) +
                              ": out of range [0, " + std::to_string(rank_n_) + ")");
}

}  // namespace lci::detail
