// run_barrier(): the blocking dissemination barrier (barrier.cpp) for
// callers inside the runtime: the barrier a leaving rank runs
// (runtime_impl_t::leave()).
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

}  // namespace lci::detail
