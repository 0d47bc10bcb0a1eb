#include "backends/ibv/ibv_probe.hpp"

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

#include "backends/ibv/ibv_verbs_real.hpp"

namespace lci::backend::ibv {

probe_result_t probe(verbs_t& verbs) {
  probe_result_t result;
  int devices_count = 0;
  errno = 0;
  ibv_device** devices = verbs.get_device_list(&devices_count);
  if (devices == nullptr) {
    const int error = errno;
    result.error = std::string("ibv_get_device_list failed: ") +
                   (error != 0 ? std::strerror(error) : "unknown error") +
                   " (no RDMA support in this kernel or no device)";
    return result;
  }
  for (int i = 0; i < devices_count; ++i) {
    result.devices.emplace_back(verbs.get_device_name(devices[i]));
  }
  verbs.free_device_list(devices);
  if (result.devices.empty()) result.error = "no RDMA device found";
  return result;
}

probe_result_t probe() { return probe(get_real_verbs()); }

}  // namespace lci::backend::ibv
