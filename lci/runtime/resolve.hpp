// Turning public handles (options left empty mean "the default") into the
// runtime's objects, with the checks every operation shares: a runtime must
// exist, a handle must belong to the runtime the call works on.
//
// Thread safety: reads only. Errors: std::logic_error when no runtime is
// current (before g_runtime_init, after g_runtime_fina); std::invalid_argument
// naming the argument for a resource of another runtime or a missing default.
#pragma once

#include <cstddef>

#include "lci/api/lci_generated.hpp"
#include "lci/comp/comp_impl.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/host.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/atomic.hpp"

namespace lci::detail {

// The sentinel behind COMP_NULL_RETRY (COMP_NULL is the empty comp_t): the
// address of g_comp_null_retry. The function is what lci.hpp names; the
// runtime compares with the byte's address inline.
comp_impl_t* comp_null_retry_sentinel();
extern std::byte g_comp_null_retry;
inline bool is_comp_null_retry(comp_t comp) {
  return comp.p_impl == reinterpret_cast<comp_impl_t*>(&g_comp_null_retry);
}

// The global runtime through current_host(), or std::logic_error when there
// is none: resolve_runtime()'s general path.
runtime_impl_t& resolve_global_runtime();

inline runtime_impl_t& resolve_runtime(runtime_t runtime) {
  if (runtime.p_impl != nullptr) return *runtime.p_impl;
  // A real process with no simulator: its own host's slot, directly
  // (g_process_runtime_slot).
  // Equivalent mutants: mo_weaken. The lookup is only compared with null
  // here: when it is installed, current_host() (resolve_global_runtime)
  // loads it again, acquire, before calling it, and when it is not, the
  // slot's own acquire orders what is read next. Acquire is stronger than
  // needed, kept as every read of the lookup (tools/mutate_records/2026-11-28-runs-35-59.md,
  // runs 42-46).
  if (g_host_lookup.load(util::mo_acquire) == nullptr) {
    runtime_impl_t** const slot = g_process_runtime_slot.load(util::mo_acquire);
    if (slot != nullptr && *slot != nullptr) return **slot;
  }
  return resolve_global_runtime();
}
device_impl_t& resolve_device(runtime_impl_t& runtime, device_t device);
// The device of an operation with both options: `device`, else
// `endpoint`'s, else the default; an endpoint of another device than
// `device` is refused.
device_impl_t& resolve_device(runtime_impl_t& runtime, device_t device, endpoint_t endpoint);
packet_pool_impl_t& resolve_packet_pool(runtime_impl_t& runtime, packet_pool_t pool);
matching_engine_impl_t& resolve_matching_engine(runtime_impl_t& runtime,
                                                matching_engine_t engine);
// A memory registration argument `mr` of operation `op`: nullptr for host
// memory the program did not register (MR_HOST, and MR_UNKNOWN, since all
// memory is host memory here), else the registration. MR_DEVICE throws
// std::invalid_argument (no device memory support); so does, when `device`
// is given, a registration of another device. The one way the runtime reads
// a program's mr_t: the sentinels are never dereferenced.
const mr_impl_t* resolve_mr(const char* op, mr_t mr, const device_impl_t* device);
// A completion object argument: nullptr for COMP_NULL and COMP_NULL_RETRY.
// Inline, as expect_comp: every cq_pop and comp_signal asks.
inline comp_impl_t* resolve_comp(comp_t comp) {
  return is_comp_null_retry(comp) ? nullptr : comp.p_impl;
}
// expect_comp's refusal: std::invalid_argument naming `operation`.
[[noreturn]] void throw_not_comp_of_kind(const comp_impl_t* impl, const char* operation);
// A comp_t argument that must be a real completion object of `kind`.
inline comp_impl_t& expect_comp(comp_t comp, comp_kind_t kind, const char* operation) {
  comp_impl_t* const impl = resolve_comp(comp);
  if (impl == nullptr || impl->kind() != kind) throw_not_comp_of_kind(impl, operation);
  return *impl;
}

}  // namespace lci::detail
