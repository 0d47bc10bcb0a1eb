#include "lci/runtime/unsupported_attrs.hpp"

#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "lci/util/assert.hpp"

namespace lci::detail {

namespace {

const char* enum_text(attr_ibv_odp_strategy_t value) {
  return get_attr_ibv_odp_strategy_str(value);
}
const char* enum_text(attr_ibv_prefetch_strategy_t value) {
  return get_attr_ibv_prefetch_strategy_str(value);
}
const char* enum_text(attr_ibv_td_strategy_t value) { return get_attr_ibv_td_strategy_str(value); }
const char* enum_text(attr_matching_engine_type_t value) {
  return get_attr_matching_engine_type_str(value);
}

// A value as the message shows it (bool, integers, double, the enums above).
template <typename value_t>
std::string text_of(value_t value) {
  if constexpr (std::is_same_v<value_t, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_integral_v<value_t>) {
    return std::to_string(value);
  } else if constexpr (std::is_floating_point_v<value_t>) {
    char text[32];  // %g: 0.5, not std::to_string's 0.500000
    const int length = std::snprintf(text, sizeof(text), "%g", value);
    LCI_ASSERT(length > 0 && static_cast<std::size_t>(length) < sizeof(text),
               "a double's text fits");
    return text;
  } else {
    return enum_text(value);
  }
}

template <typename member_t>
struct member_traits;
template <typename owner_t_, typename value_t>
struct member_traits<value_t owner_t_::*> {
  using owner_t = owner_t_;
};

// The attribute `member` as text when it is not the description's default.
template <auto member>
std::optional<std::string> changed(const typename member_traits<decltype(member)>::owner_t& attr) {
  using attr_t = typename member_traits<decltype(member)>::owner_t;
  // attr_t{}: the description's defaults, without the environment's.
  if (attr.*member == attr_t{}.*member) return std::nullopt;
  return text_of(attr.*member);
}

template <typename attr_t>
struct refused_t {
  const char* name;
  const char* reason;  // why setting it would have no effect
  std::optional<std::string> (*changed)(const attr_t& attr);
};

constexpr const char* no_ibv =
    "only the ibv backend reads it, and this rank's network is another backend (ofi or the "
    "simulator's)";
constexpr const char* no_shm =
    "no shared-memory transport is built: ranks on one node talk through the network backend "
    "(over libfabric, choose its shm provider: LCI_ATTR_OFI_PROVIDER_NAME=shm)";

// Refused only where the network does not read them (not ibv).
const refused_t<attr_net_context_t> net_context_ibv_refused[] = {
    {"ibv_gid_idx", no_ibv, changed<&attr_net_context_t::ibv_gid_idx>},
    {"ibv_force_gid_auto_select", no_ibv, changed<&attr_net_context_t::ibv_force_gid_auto_select>},
    {"ibv_odp_strategy", no_ibv, changed<&attr_net_context_t::ibv_odp_strategy>},
    {"ibv_prefetch_strategy", no_ibv, changed<&attr_net_context_t::ibv_prefetch_strategy>},
};
const refused_t<attr_device_t> device_ibv_refused[] = {
    {"ibv_td_strategy", no_ibv, changed<&attr_device_t::ibv_td_strategy>},
};

const refused_t<attr_net_context_t> net_context_refused[] = {
    {"use_dmabuf", "device (GPU) memory is not supported",
     changed<&attr_net_context_t::use_dmabuf>},
};

const refused_t<attr_device_t> device_refused[] = {
    {"net_send_reserved_pct",
     "no share of the send queue is reserved: runtime-internal messages that find it full wait "
     "in the device's backlog queue",
     changed<&attr_device_t::net_send_reserved_pct>},
    {"alloc_progress_endpoint",
     "progress polls the device, not an endpoint, so there is no endpoint to reserve for it",
     changed<&attr_device_t::alloc_progress_endpoint>},
    {"use_reg_cache", "memory registrations are not cached: each one goes to the network",
     changed<&attr_device_t::use_reg_cache>},
    {"shm_enable", no_shm, changed<&attr_device_t::shm_enable>},
    {"shm_ring_size", no_shm, changed<&attr_device_t::shm_ring_size>},
    {"shm_slot_size", no_shm, changed<&attr_device_t::shm_slot_size>},
    {"shm_producer_cas_attempts", no_shm, changed<&attr_device_t::shm_producer_cas_attempts>},
    {"shm_consumer_cas_attempts", no_shm, changed<&attr_device_t::shm_consumer_cas_attempts>},
    {"shm_max_polls", no_shm, changed<&attr_device_t::shm_max_polls>},
};

const refused_t<attr_matching_engine_t> matching_engine_refused[] = {
    {"matching_engine_type", "only the hash-table engine (map) is built",
     changed<&attr_matching_engine_t::matching_engine_type>},
};

template <typename attr_t, std::size_t count>
void check_table(const refused_t<attr_t> (&table)[count], const attr_t& attr, const char* op) {
  for (const refused_t<attr_t>& entry : table) {
    const std::optional<std::string> value = entry.changed(attr);
    if (!value) continue;
    throw std::invalid_argument(std::string(op) + ": " + entry.name + " = " + *value + ": " +
                                entry.reason +
                                "; this attribute has no effect here, so only its default is "
                                "accepted");
  }
}

// `value` must be the process's (what its network was opened with).
void check_process_value(const char* op, const char* name, const std::string& value,
                         const char* variable, const std::string& process_value) {
  if (value == process_value) return;
  throw std::invalid_argument(std::string(op) + ": " + name + " = \"" + value +
                              "\": the network is opened once per process, before any runtime, "
                              "with " + variable + "=\"" + process_value +
                              "\" (or set_g_default_attr); this attribute has no effect here "
                              "unless it repeats that value");
}

}  // namespace

void check_supported(const attr_runtime_t& attr, const char* op) {
  check_process_value(op, "device_name", attr.device_name, "LCI_ATTR_DEVICE_NAME",
                      get_default_attr_net_context().device_name);
}

void check_supported(const attr_net_context_t& attr, bool network_reads_ibv, const char* op) {
  check_table(net_context_refused, attr, op);
  if (!network_reads_ibv) check_table(net_context_ibv_refused, attr, op);
  const attr_net_context_t process = get_default_attr_net_context();
  check_process_value(op, "device_name", attr.device_name, "LCI_ATTR_DEVICE_NAME",
                      process.device_name);
  check_process_value(op, "ofi_provider_name", attr.ofi_provider_name,
                      "LCI_ATTR_OFI_PROVIDER_NAME", process.ofi_provider_name);
}

void check_supported(const attr_device_t& attr, bool network_reads_ibv, const char* op) {
  check_table(device_refused, attr, op);
  // Upstream asserts the same bound.
  if (attr.ofi_lock_mode >= LCI_NET_TRYLOCK_MAX) {
    throw std::invalid_argument(std::string(op) + ": ofi_lock_mode = " +
                                std::to_string(attr.ofi_lock_mode) +
                                ": not a combination of LCI_NET_TRYLOCK_SEND, "
                                "LCI_NET_TRYLOCK_RECV, LCI_NET_TRYLOCK_POLL and LCI_NET_LOCK_MR");
  }
  if (!network_reads_ibv) check_table(device_ibv_refused, attr, op);
}

void check_supported(const attr_matching_engine_t& attr, const char* op) {
  check_table(matching_engine_refused, attr, op);
}

}  // namespace lci::detail
