// Upstream's process-wide calls (lci/runtime/global_attr.hpp).
#include "lci/runtime/global_attr.hpp"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lci/api/attr_env.hpp"
#include "lci/runtime/global_state.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"

namespace lci {

namespace detail {

namespace {

// Open global_initialize brackets of the process (upstream's counter is
// process-wide too, so in the simulator all ranks share it).
util::atomic<int> g_global_initialize_count{0};

using global_values_t = std::vector<std::pair<std::string, std::string>>;

std::string text_of(std::size_t value) { return std::to_string(value); }
std::string text_of(int value) { return std::to_string(value); }
std::string text_of(bool value) { return value ? "1" : "0"; }
std::string text_of(const std::string& value) { return value; }
std::string text_of(attr_rdv_protocol_t value) { return get_attr_rdv_protocol_str(value); }
std::string text_of(attr_matching_engine_type_t value) {
  return get_attr_matching_engine_type_str(value);
}
std::string text_of(attr_cq_type_t value) { return get_attr_cq_type_str(value); }
std::string text_of(attr_backend_t value) { return get_attr_backend_str(value); }
std::string text_of(attr_ibv_odp_strategy_t value) { return get_attr_ibv_odp_strategy_str(value); }
std::string text_of(attr_ibv_prefetch_strategy_t value) {
  return get_attr_ibv_prefetch_strategy_str(value);
}
std::string text_of(attr_ibv_td_strategy_t value) { return get_attr_ibv_td_strategy_str(value); }
// %.17g: a double's text reads back to the same double.
std::string text_of(double value) {
  char text[32];
  const int length = std::snprintf(text, sizeof(text), "%.17g", value);
  LCI_ASSERT(length > 0 && static_cast<std::size_t>(length) < sizeof(text), "a double's text fits");
  return text;
}

void add(global_values_t* values, const char* name, const std::string& text) {
  values->emplace_back(std::string("LCI_ATTR_") + name, text);
}

// Every field as the (variable, text) the environment readers parse back
// into the same value.
// The fields whose description default is 0 ("runtime default", "backend
// default"), each with the value that default takes here. get reports the
// value for a 0; set takes the value back to 0, so that handing back what
// get reported leaves the default in force (a simulated world of another
// size, or another backend, still gets its own).
template <typename visit_t>
void for_each_zero_default(global_attr_t& attr, visit_t&& visit) {
  const zero_attr_defaults_t resolved = zero_attr_defaults();
  visit(attr.packet_return_threshold, resolved.packet_return_threshold);
  visit(attr.packet_size, resolved.packet_size);
  visit(attr.npackets, resolved.npackets);
  visit(attr.net_max_sends, resolved.device_depths.net_max_sends);
  visit(attr.net_max_recvs, resolved.device_depths.net_max_recvs);
  visit(attr.net_max_cqes, resolved.device_depths.net_max_cqes);
  std::size_t cq_default_length = static_cast<std::size_t>(attr.cq_default_length);
  visit(cq_default_length, resolved.cq_default_length);
  attr.cq_default_length = static_cast<int>(cq_default_length);
}

global_values_t values_of(const global_attr_t& attr) {
  global_values_t values;
  add(&values, "PACKET_RETURN_THRESHOLD", text_of(attr.packet_return_threshold));
  add(&values, "IMM_NBITS_TAG", text_of(attr.imm_nbits_tag));
  add(&values, "IMM_NBITS_RCOMP", text_of(attr.imm_nbits_rcomp));
  add(&values, "RDV_PROTOCOL", text_of(attr.rdv_protocol));
  add(&values, "ALLOC_DEFAULT_DEVICE", text_of(attr.alloc_default_device));
  add(&values, "ALLOC_DEFAULT_PACKET_POOL", text_of(attr.alloc_default_packet_pool));
  add(&values, "ALLOC_DEFAULT_MATCHING_ENGINE", text_of(attr.alloc_default_matching_engine));
  add(&values, "PACKET_SIZE", text_of(attr.packet_size));
  add(&values, "NPACKETS", text_of(attr.npackets));
  add(&values, "MATCHING_ENGINE_TYPE", text_of(attr.matching_engine_type));
  add(&values, "THRESHOLD", text_of(attr.sync_threshold));
  add(&values, "ZERO_COPY_AM", text_of(attr.zero_copy_am));
  add(&values, "CQ_TYPE", text_of(attr.cq_type));
  add(&values, "DEFAULT_LENGTH", text_of(attr.cq_default_length));
  add(&values, "BACKEND", text_of(attr.backend));
  add(&values, "OFI_PROVIDER_NAME", text_of(attr.ofi_provider_name));
  add(&values, "MAX_MSG_SIZE", text_of(attr.max_msg_size));
  add(&values, "MAX_INJECT_SIZE", text_of(attr.max_inject_size));
  add(&values, "IBV_GID_IDX", text_of(attr.ibv_gid_idx));
  add(&values, "IBV_FORCE_GID_AUTO_SELECT", text_of(attr.ibv_force_gid_auto_select));
  add(&values, "DEVICE_NAME", text_of(attr.device_name));
  add(&values, "IBV_ODP_STRATEGY", text_of(attr.ibv_odp_strategy));
  add(&values, "IBV_PREFETCH_STRATEGY", text_of(attr.ibv_prefetch_strategy));
  add(&values, "USE_DMABUF", text_of(attr.use_dmabuf));
  add(&values, "NET_MAX_SENDS", text_of(attr.net_max_sends));
  add(&values, "NET_MAX_RECVS", text_of(attr.net_max_recvs));
  add(&values, "NET_MAX_CQES", text_of(attr.net_max_cqes));
  add(&values, "NET_SEND_RESERVED_PCT", text_of(attr.net_send_reserved_pct));
  add(&values, "OFI_LOCK_MODE", text_of(static_cast<std::size_t>(attr.ofi_lock_mode)));
  add(&values, "ALLOC_DEFAULT_ENDPOINT", text_of(attr.alloc_default_endpoint));
  add(&values, "ALLOC_PROGRESS_ENDPOINT", text_of(attr.alloc_progress_endpoint));
  add(&values, "USE_REG_CACHE", text_of(attr.use_reg_cache));
  add(&values, "SHM_ENABLE", text_of(attr.shm_enable));
  add(&values, "SHM_RING_SIZE", text_of(attr.shm_ring_size));
  add(&values, "SHM_SLOT_SIZE", text_of(attr.shm_slot_size));
  add(&values, "SHM_PRODUCER_CAS_ATTEMPTS", text_of(attr.shm_producer_cas_attempts));
  add(&values, "SHM_CONSUMER_CAS_ATTEMPTS", text_of(attr.shm_consumer_cas_attempts));
  add(&values, "SHM_MAX_POLLS", text_of(attr.shm_max_polls));
  add(&values, "IBV_TD_STRATEGY", text_of(attr.ibv_td_strategy));
  return values;
}

}  // namespace

bool global_initialized() {
  // acquire: pairs with the release increment in global_initialize(), so a
  // thread that sees the bracket open sees what was done before it opened.
  // Stronger than needed today: global_initialize() writes nothing but the
  // count, and what a caller reads once the bracket is open (the host's
  // network context, get_rank_me) is published by the host's own creation,
  // a function-local static's thread-safe initialization.
  // Equivalent mutants: mo_weaken. Relaxed would do, as above
  // (tools/mutate_records/2026-11-28-runs-29-36.md).
  return g_global_initialize_count.load(util::mo_acquire) > 0;
}

}  // namespace detail

void global_initialize() {
  // release: pairs with the acquire in detail::global_initialized().
  // Equivalent mutants: mo_weaken. Relaxed would do, as for that acquire: the count is all
  // this publishes (tools/mutate_records/2026-11-28-runs-29-36.md).
  detail::g_global_initialize_count.fetch_add(1, util::mo_release);
}

void global_finalize() {
  int open = detail::g_global_initialize_count.load(util::mo_relaxed);  // relaxed: the CAS decides
  // Bounded by the other threads' brackets: each failed CAS saw one of
  // theirs open or close.
  do {
    if (open <= 0) throw std::logic_error("global_finalize: no global_initialize is open");
    // Equivalent mutants: mo_weaken, mo_to_relaxed. The count is the only state the bracket
    // has, and a CAS reads its latest value whatever its order
    // (tools/mutate_records/2026-11-28-runs-29-36.md).
  } while (!detail::g_global_initialize_count.compare_exchange_weak(open, open - 1,
                                                                    util::mo_acq_rel,
                                                                    util::mo_relaxed));
  LCI_ASSERT(open > 0, "a bracket was open");
}

global_attr_t get_g_default_attr() {
  const attr_runtime_t runtime = detail::get_default_attr_runtime();
  const attr_packet_pool_t packet_pool = detail::get_default_attr_packet_pool();
  const attr_matching_engine_t engine = detail::get_default_attr_matching_engine();
  const attr_comp_t comp = detail::get_default_attr_comp();
  const attr_net_context_t net = detail::get_default_attr_net_context();
  const attr_device_t device = detail::get_default_attr_device();
  global_attr_t attr;
  attr.packet_return_threshold = runtime.packet_return_threshold;
  attr.imm_nbits_tag = runtime.imm_nbits_tag;
  attr.imm_nbits_rcomp = runtime.imm_nbits_rcomp;
  attr.rdv_protocol = runtime.rdv_protocol;
  attr.alloc_default_device = runtime.alloc_default_device;
  attr.alloc_default_packet_pool = runtime.alloc_default_packet_pool;
  attr.alloc_default_matching_engine = runtime.alloc_default_matching_engine;
  attr.packet_size = packet_pool.packet_size;
  attr.npackets = packet_pool.npackets;
  attr.matching_engine_type = engine.matching_engine_type;
  attr.sync_threshold = comp.threshold;
  attr.zero_copy_am = comp.zero_copy_am;
  attr.cq_type = comp.cq_type;
  attr.cq_default_length = comp.default_length;
  attr.backend = net.backend;
  attr.ofi_provider_name = net.ofi_provider_name;
  attr.max_msg_size = net.max_msg_size;
  attr.max_inject_size = net.max_inject_size;
  attr.ibv_gid_idx = net.ibv_gid_idx;
  attr.ibv_force_gid_auto_select = net.ibv_force_gid_auto_select;
  attr.device_name = net.device_name;
  attr.ibv_odp_strategy = net.ibv_odp_strategy;
  attr.ibv_prefetch_strategy = net.ibv_prefetch_strategy;
  attr.use_dmabuf = net.use_dmabuf;
  attr.net_max_sends = device.net_max_sends;
  attr.net_max_recvs = device.net_max_recvs;
  attr.net_max_cqes = device.net_max_cqes;
  attr.net_send_reserved_pct = device.net_send_reserved_pct;
  attr.ofi_lock_mode = device.ofi_lock_mode;
  attr.alloc_default_endpoint = device.alloc_default_endpoint;
  attr.alloc_progress_endpoint = device.alloc_progress_endpoint;
  attr.use_reg_cache = device.use_reg_cache;
  attr.shm_enable = device.shm_enable;
  attr.shm_ring_size = device.shm_ring_size;
  attr.shm_slot_size = device.shm_slot_size;
  attr.shm_producer_cas_attempts = device.shm_producer_cas_attempts;
  attr.shm_consumer_cas_attempts = device.shm_consumer_cas_attempts;
  attr.shm_max_polls = device.shm_max_polls;
  attr.ibv_td_strategy = device.ibv_td_strategy;
  detail::for_each_zero_default(attr, [](std::size_t& value, std::size_t resolved) {
    if (value == 0) value = resolved;
  });
  return attr;
}

void set_g_default_attr(const global_attr_t& attr) {
  // Refused here rather than at the next allocation, where the reader
  // would name a variable the program never set.
  if (!std::isfinite(attr.net_send_reserved_pct)) {
    throw std::invalid_argument("set_g_default_attr: net_send_reserved_pct = " +
                                std::to_string(attr.net_send_reserved_pct) +
                                ": not a finite number");
  }
  global_attr_t stored = attr;
  detail::for_each_zero_default(stored, [](std::size_t& value, std::size_t resolved) {
    if (value == resolved) value = 0;
  });
  detail::set_attr_global_values(detail::values_of(stored));
}

}  // namespace lci
