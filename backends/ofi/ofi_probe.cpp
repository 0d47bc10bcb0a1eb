#include "backends/ofi/ofi_probe.hpp"

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <algorithm>

namespace lci::backend::ofi {

probe_result_t probe() {
  probe_result_t result;
  const uint32_t version = fi_version();
  result.version_major = FI_MAJOR(version);
  result.version_minor = FI_MINOR(version);

  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) {
    result.error = "fi_allocinfo failed: out of memory";
    return result;
  }
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG | FI_RMA;
  fi_info* infos = nullptr;
  const int rc = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &infos);
  fi_freeinfo(hints);
  if (rc != 0) {
    result.error = std::string("fi_getinfo: ") + fi_strerror(-rc);
    return result;
  }
  for (fi_info* info = infos; info != nullptr; info = info->next) {
    const std::string name = info->fabric_attr->prov_name;
    if (std::find(result.providers.begin(), result.providers.end(), name) ==
        result.providers.end()) {
      result.providers.push_back(name);
    }
  }
  fi_freeinfo(infos);
  return result;
}

}  // namespace lci::backend::ofi
