#include "backends/ofi/ofi_backend.hpp"

#include <memory>

#include "backends/ofi/ofi_context.hpp"
#include "backends/ofi/ofi_device.hpp"

namespace lci::backend::ofi {

namespace {

std::unique_ptr<backend::net_context_t> open_context(const backend::net_context_args_t& args) {
  return std::make_unique<ofi_context_t>(*args.bootstrap, args.provider_name, args.device_name);
}

}  // namespace

const backend::backend_entry_t& backend_entry() {
  static const backend::backend_entry_t entry{"ofi",
                                              10,
                                              &open_context,
                                              net_max_sends_default,
                                              net_max_recvs_default,
                                              net_max_cqes_default};
  return entry;
}

}  // namespace lci::backend::ofi
