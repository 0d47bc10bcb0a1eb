// Crashed peers (docs/design/lifecycle.md, "Crashed peers"): the runtime's
// record of dead ranks and of the requests that wait on a peer while the
// network holds nothing of them, so that a peer's death fails them instead
// of leaving them waiting forever. Requests the network holds (eager sends,
// RMAs, rendezvous writes) need no watching: the backend completes each with
// a peer_crashed fault (backends/backend.hpp).
#include <stdexcept>
#include <string>
#include <vector>

#include "lci/comp/comp_impl.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/request.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/log.hpp"

namespace lci::detail {

void runtime_impl_t::throw_peer_crashed(int rank) const {
  throw peer_failure_error(rank, "lci: rank " + std::to_string(rank) +
                                     " crashed (reported by the network): no operation to or "
                                     "from it can complete, so posting one is refused");
}

bool runtime_impl_t::watch(request_t* request) {
  const int rank = request->status.rank;
  LCI_ASSERT(rank >= 0 && rank < rank_n_, "a watched request names no peer");
  return request->device->watch_list().link(request, peers_dead_[static_cast<std::size_t>(rank)]);
}

bool runtime_impl_t::unwatch(request_t* request) {
  return request->device->watch_list().unlink(request);
}

bool runtime_impl_t::is_failed(request_t* request) {
  return request->device->watch_list().is_failed(request);
}

bool runtime_impl_t::fail_peer(int rank) {
  check_rank(rank, "the crashed peer's rank");
  // relaxed: only the first caller goes on (the exchange is atomic); each
  // device's lock, taken below after it, orders the flag for watch().
  if (peers_dead_[static_cast<std::size_t>(rank)].exchange(true, util::mo_relaxed)) return false;
  // While this rank leaves, a peer gone is most likely one that left first
  // (progress does not throw then): not worth a warning.
  if (leaving()) {
    LCI_LOG(info, "peer", "rank %d: peer rank %d gone while leaving\n", rank_me_, rank);
  } else {
    LCI_LOG(warn, "peer", "rank %d: peer rank %d crashed (reported by the network)\n", rank_me_,
            rank);
  }
  std::vector<request_t*> victims;  // the crash path may allocate: it is rare
  {
    // Keeps devices from being closed under the scan (free_device() takes
    // a device out of devices_ under this lock before destroying it).
    util::spinlock_guard_t guard(resources_lock_);
    for (const auto& device : devices_) device->watch_list().fail(rank, &victims);
  }
  // Outside the locks: a handler completion object runs user code. A failed
  // request is its device's: only its status and comp are read here, and
  // nobody else writes them once it is shared.
  for (request_t* request : victims) {
    status_t status = request->status;
    status.error = errorcode_t::fatal;
    LCI_ASSERT(status.rank == rank, "a failed request names another rank");
    // A checked put's target side: no byte of the dead peer's will land,
    // so the registration may go; its status names no buffer, as
    // complete_request's.
    if (request->pinned != nullptr) status.buffer = nullptr;
    device_impl_t::release_pin(request);
    if (request->comp != nullptr) request->comp->signal(status);
    // After the signal, as complete_request(): "drained" implies signalled.
    // The device keeps the failed request until it closes (as the reads
    // above assume).
    request->in_flight.disarm();
  }
  return true;
}

}  // namespace lci::detail
