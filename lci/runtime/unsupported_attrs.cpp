#include "lci/runtime/unsupported_attrs.hpp"

#include <stdexcept>
#include <string>

namespace lci::detail {

namespace {

// The description's refused attributes (lci/api/lci_api.def, `refused`):
// the first one set away from its default is refused.
template <typename attr_t>
void check_refused(const attr_t& attr, bool network_reads_ibv, const char* op) {
  refused_attr_t refused;
  if (!find_refused(attr, network_reads_ibv, &refused)) return;
  throw std::invalid_argument(std::string(op) + ": " + refused.name + " = " + refused.value +
                              ": " + refused.reason +
                              "; this attribute has no effect here, so only its default is "
                              "accepted");
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
  check_refused(attr, /*network_reads_ibv=*/false, op);
  check_process_value(op, "device_name", attr.device_name, "LCI_ATTR_DEVICE_NAME",
                      get_default_attr_net_context().device_name);
}

void check_supported(const attr_net_context_t& attr, bool network_reads_ibv, const char* op) {
  check_refused(attr, network_reads_ibv, op);
  const attr_net_context_t process = get_default_attr_net_context();
  check_process_value(op, "device_name", attr.device_name, "LCI_ATTR_DEVICE_NAME",
                      process.device_name);
  check_process_value(op, "ofi_provider_name", attr.ofi_provider_name,
                      "LCI_ATTR_OFI_PROVIDER_NAME", process.ofi_provider_name);
}

void check_supported(const attr_device_t& attr, bool network_reads_ibv, const char* op) {
  check_refused(attr, network_reads_ibv, op);
  const auto text = [](bool value) { return std::string(value ? "true" : "false"); };
  check_process_value(op, "shm_enable", text(attr.shm_enable), "LCI_ATTR_SHM_ENABLE",
                      text(get_default_attr_device().shm_enable));
  // Upstream asserts the same bound.
  if (attr.ofi_lock_mode >= LCI_NET_TRYLOCK_MAX) {
    throw std::invalid_argument(std::string(op) + ": ofi_lock_mode = " +
                                std::to_string(attr.ofi_lock_mode) +
                                ": not a combination of LCI_NET_TRYLOCK_SEND, "
                                "LCI_NET_TRYLOCK_RECV, LCI_NET_TRYLOCK_POLL and LCI_NET_LOCK_MR");
  }
}

void check_supported(const attr_matching_engine_t& attr, const char* op) {
  check_refused(attr, /*network_reads_ibv=*/false, op);
}

}  // namespace lci::detail
