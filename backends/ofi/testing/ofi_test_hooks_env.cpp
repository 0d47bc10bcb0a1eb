// Sets the ofi test hooks (ofi_test_hooks.hpp) from the environment when a
// test program loads: LCI_OFI_QUIRK_REMOTE_RMA_CONTEXT=1 forces the
// remote-RMA-context quirk (//tests/soak:rdv_burst_quirk_test). Linked only
// into test programs (//backends/ofi:test_hooks_env is testonly).
#include <cstdlib>
#include <cstring>

#include "backends/ofi/ofi_test_hooks.hpp"

namespace lci::backend::ofi::test_hooks {

namespace {

bool set_from_environment() {
  const char* value = std::getenv("LCI_OFI_QUIRK_REMOTE_RMA_CONTEXT");
  if (value != nullptr && std::strcmp(value, "1") == 0) force_remote_rma_context(true);
  return true;
}

// Before main, so before any device is constructed.
[[maybe_unused]] const bool set_at_load = set_from_environment();

}  // namespace

}  // namespace lci::backend::ofi::test_hooks
