// The progress engine (paper §4.4): what progress() does for one device.
//   1. re-run each backlogged protocol step (RTR, FIN, data writes, stores
//      into a full matching table, arrivals waiting for a packet) once;
//   2. poll a batch of network completions and dispatch each: arrivals
//      (eager data, RTS, RTR, FIN, rendezvous data, signals) to their
//      protocol, local completions (sends, writes, reads) to their request;
//   3. top the pre-posted receives up again.
// Completion objects are signalled on the calling thread while it
// dispatches; a handler that calls progress() is refused.
//
// Thread safety: any threads may progress one device at once.
// Blocking:      never; a thread whose calls found nothing many times in a
//                row yields its core once (idle_yield.hpp), and goes on.
//                Errors: a network fault (protection, crashed peer)
//                or a misused message is thrown after the whole batch was
//                dispatched, so nothing else in the batch is lost. Except a
//                protection fault of a put or get with a completion object:
//                that object gets errorcode_t::fatal and nothing is thrown
//                (the fault is the operation's alone; rmr_t in
//                lci/api/lci_types.hpp).
#pragma once

#include <exception>

#include "lci/api/lci_types.hpp"
#include "lci/runtime/host.hpp"
#include "lci/util/error.hpp"

namespace lci::detail {

class device_impl_t;
class mr_impl_t;
class runtime_impl_t;

// done when anything happened, retry when there was nothing to do. Throws
// std::invalid_argument for a raw device (device_impl.hpp).
error_t progress_device(device_impl_t& device);

// Before `device` closes (free_device): progresses it until no protocol
// step waits in its backlog, so nothing this rank promised to send is
// dropped (a step for a crashed peer completes with a fault, which is
// swallowed here), and until the network has given back every operation
// the device posted (device_accounting_t::network_posts_left), so that no
// completion stays in the network and no packet out of its pool.
// Blocking: until then, or until the network stops running.
void drain_before_close(device_impl_t& device);
// drain_before_close() for every device of `runtime`: after it left
// (leave_runtime, lci/collective/barrier.hpp), right before its
// destruction. Not in the destructor: waiting for the network may be a
// scheduling point that unwinds (a simulated run torn down), which a
// destructor must not let through. A runtime destroyed without it (its host
// torn down, network_running() false) drops its backlogs.
void drain_devices(runtime_impl_t& runtime);

// deregister_memory's wait (mr_impl_t::pins, taken out of the runtime's
// list already): progresses the registration's device until no peer's
// checked put or get pins it, or the network stops running. A fault that
// progress throws meanwhile does not end the wait (the registration must
// go either way) but is returned, for the caller to throw once it is gone;
// so is std::logic_error from a handler that deregisters, which cannot
// progress and ends the wait at once.
std::exception_ptr wait_unpinned(mr_impl_t& mr);

// Waits until `comp` (a synchronizer or a post's waiter: test(status_t*)) is
// signalled and writes its status to *out: progresses `device` between
// looks (nullptr: only looks), idling on `host` after a look that found
// nothing to do. `what` names the wait (a literal: the simulator's deadlock
// report shows it). Blocking: until signalled.
template <typename waitable_t>
void wait_progressing(waitable_t& comp, status_t* out, device_impl_t* device, host_t& host,
                      const char* what) {
  while (!comp.test(out)) {
    if (device == nullptr || progress_device(*device).is_retry()) host.idle(what);
  }
}

}  // namespace lci::detail
