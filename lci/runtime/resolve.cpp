// The definitions of resolve.hpp: in the runtime layer, beside the
// declarations, since every layer above it resolves handles (the
// collectives too), not only the public operations.
#include "lci/runtime/resolve.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "lci/api/lci_types.hpp"

namespace lci::detail {

std::byte g_comp_null_retry;

comp_impl_t* comp_null_retry_sentinel() {
  return reinterpret_cast<comp_impl_t*>(&g_comp_null_retry);
}

runtime_impl_t& resolve_global_runtime() {
  runtime_impl_t* global = current_host().g_runtime_slot();
  if (global == nullptr) {
    throw std::logic_error(
        "lci: no runtime: call g_runtime_init() first (or pass runtime(...)); after "
        "g_runtime_fina() the global runtime is gone");
  }
  return *global;
}

device_impl_t& resolve_device(runtime_impl_t& runtime, device_t device) {
  device_impl_t* impl = device.p_impl != nullptr ? device.p_impl : runtime.default_device();
  if (impl == nullptr) {
    throw std::invalid_argument("device: empty and the runtime has no default device");
  }
  if (impl->runtime() != &runtime) {
    throw std::invalid_argument("device: belongs to another runtime");
  }
  return *impl;
}

device_impl_t& resolve_device(runtime_impl_t& runtime, device_t device, endpoint_t endpoint) {
  if (device.is_empty() && !endpoint.is_empty()) device = device_t(endpoint.p_impl->device);
  device_impl_t& impl = resolve_device(runtime, device);
  if (!endpoint.is_empty() && endpoint.p_impl->device != &impl) {
    throw std::invalid_argument("endpoint: belongs to another device than `device`");
  }
  return impl;
}

packet_pool_impl_t& resolve_packet_pool(runtime_impl_t& runtime, packet_pool_t pool) {
  packet_pool_impl_t* impl = pool.p_impl != nullptr ? pool.p_impl : runtime.default_packet_pool();
  if (impl == nullptr) {
    throw std::invalid_argument("packet_pool: empty and the runtime has no default packet pool");
  }
  if (impl->runtime != &runtime) {
    throw std::invalid_argument("packet_pool: belongs to another runtime");
  }
  return *impl;
}

matching_engine_impl_t& resolve_matching_engine(runtime_impl_t& runtime,
                                                matching_engine_t engine) {
  matching_engine_impl_t* impl =
      engine.p_impl != nullptr ? engine.p_impl : runtime.default_matching_engine();
  if (impl == nullptr) {
    throw std::invalid_argument(
        "matching_engine: empty and the runtime has no default matching engine");
  }
  if (impl->runtime != &runtime) {
    throw std::invalid_argument("matching_engine: belongs to another runtime");
  }
  return *impl;
}

const mr_impl_t* resolve_mr(const char* op, mr_t mr, const device_impl_t* device) {
  const auto sentinel = reinterpret_cast<std::uintptr_t>(mr.p_impl);
  if (sentinel == mr_device_sentinel) {
    throw std::invalid_argument(std::string(op) +
                                ": mr = MR_DEVICE: there is no device (GPU) memory support "
                                "here; pass host memory (MR_HOST or a registration)");
  }
  if (mr.is_empty()) return nullptr;  // MR_HOST, MR_UNKNOWN
  if (device != nullptr && mr.p_impl->device != device) {
    throw std::invalid_argument(std::string(op) + ": mr: registered with another device");
  }
  return mr.p_impl;
}

void throw_not_comp_of_kind(const comp_impl_t* impl, const char* operation) {
  if (impl == nullptr) {
    throw std::invalid_argument(std::string(operation) + ": comp is empty (COMP_NULL)");
  }
  throw std::invalid_argument(std::string(operation) +
                              ": comp is a completion object of another kind");
}

}  // namespace lci::detail
