// The public progress operations: progress(), test_drained(), wait_drained().
#include "lci/api/lci_generated.hpp"
#include "lci/progress/progress.hpp"
#include "lci/runtime/resolve.hpp"

namespace lci {

namespace {
detail::device_impl_t& device_of(device_t device, endpoint_t endpoint, runtime_t runtime) {
  detail::runtime_impl_t& rt = detail::resolve_runtime(runtime);
  if (device.is_empty() && !endpoint.is_empty()) device = device_t(endpoint.p_impl->device);
  return detail::resolve_device(rt, device);
}
}  // namespace

error_t progress_x::call_impl(device_t device, endpoint_t endpoint, runtime_t runtime) const {
  return detail::progress_device(device_of(device, endpoint, runtime));
}

// Drained: nothing of the device waits in its backlog or is in flight
// (device_impl_t::drained()).
error_t test_drained_x::call_impl(device_t device, runtime_t runtime) const {
  detail::device_impl_t& d = device_of(device, endpoint_t{}, runtime);
  (void)detail::progress_device(d);
  return d.drained() ? errorcode_t::done : errorcode_t::retry;
}

void wait_drained_x::call_impl(device_t device, runtime_t runtime) const {
  detail::device_impl_t& d = device_of(device, endpoint_t{}, runtime);
  for (;;) {
    (void)detail::progress_device(d);
    if (d.drained()) return;
    d.runtime()->host().idle("wait_drained");
  }
}

}  // namespace lci
