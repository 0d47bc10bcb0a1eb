#include "backends/ibv/ibv_probe.hpp"

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

namespace lci::backends::ibv {

probe_result_t probe() {
  probe_result_t result;
  int devices_count = 0;
  errno = 0;
  ibv_device** devices = ibv_get_device_list(&devices_count);
  if (devices == nullptr) {
    const int error = errno;
    result.error = std::string("ibv_get_device_list failed: ") +
                   (error != 0 ? std::strerror(error) : "unknown error") +
                   " (no RDMA support in this kernel or no device)";
    return result;
  }
  for (int i = 0; i < devices_count; ++i) {
    result.devices.emplace_back(ibv_get_device_name(devices[i]));
  }
  ibv_free_device_list(devices);
  if (result.devices.empty()) result.error = "no RDMA device found";
  return result;
}

}  // namespace lci::backends::ibv
