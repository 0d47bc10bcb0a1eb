// What the ofi test programs read from their environment.
#pragma once

#include <cstdlib>
#include <string>

namespace lci::conformance {

// The provider the launcher chose: LCI_ATTR_OFI_PROVIDER_NAME, the
// variable the runtime reads (tools/real_network.bzl sets it per run);
// "" lets ofi_context_t pick the default.
inline std::string provider_from_env() {
  const char* name = std::getenv("LCI_ATTR_OFI_PROVIDER_NAME");
  return name != nullptr ? name : "";
}

}  // namespace lci::conformance
