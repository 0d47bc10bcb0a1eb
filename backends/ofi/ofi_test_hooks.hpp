// ofi test hooks: faults a test forces on ofi devices so that every run
// shows the backend copes, not only the runs where the provider happens to
// misbehave. No production program sets them: the test-only library
// //backends/ofi:test_hooks_env sets them from the environment
// (LCI_OFI_QUIRK_REMOTE_RMA_CONTEXT, docs/reference/environment.md), so a
// production library reads no fault knob.
//
// Thread safety: any thread. A device reads the hooks once, when it is
//                constructed: set them before opening the network.
// Blocking:      never.
// Allocation:    none.
#pragma once

namespace lci::backend::ofi::test_hooks {

// on: every target-side RMA completion a device constructed afterwards
// reads from its CQ gets op_context 0x1, as shm of libfabric 1.17
// sometimes hands one (translate_locked()). Off until set.
void force_remote_rma_context(bool on);
bool remote_rma_context_forced();

}  // namespace lci::backend::ofi::test_hooks
