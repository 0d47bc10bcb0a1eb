// run_barrier(): the blocking dissemination barrier (barrier.cpp) for
// callers inside the runtime: the barrier a leaving rank runs
// (leave_runtime()).
//
// Thread safety: collective: the collectives of one device are called in
//                the same order on every rank (one at a time per device);
//                collectives of different devices may run concurrently.
// Blocking:      until every rank has entered the barrier; progresses
//                `device` meanwhile and throws what its progress throws.
// Errors:        a round cut by a crashed peer does not throw: the status
//                returned is fatal and names the rank.
#pragma once

#include "lci/api/lci_types.hpp"

namespace lci::detail {

class runtime_impl_t;
class device_impl_t;
class matching_engine_impl_t;

status_t run_barrier(runtime_impl_t& rt, device_impl_t& device,
                     matching_engine_impl_t& matching_engine);

// Leaving (docs/design/lifecycle.md, "Leaving"). Collective, right before
// the runtime's destruction (free_runtime, g_runtime_fina): a barrier on
// the default device, or without one on a device allocated for it (every
// rank allocates it at the same place of its device order; the teardown
// frees it), so that no rank exits while a peer may still progress and
// take the exit for a crash. From this call on, a peer's death is no
// longer thrown by progress (runtime_impl_t::mark_leaving); a peer that
// crashed before it entered the barrier is thrown here
// (peer_failure_error naming it). No barrier with one rank, without a
// default packet pool (a raw-network program: its devices carry no
// protocol message), or with a peer known dead (it could not complete).
// Blocking: until every rank has called it (or a crash is found).
void leave_runtime(runtime_impl_t& rt);

}  // namespace lci::detail
