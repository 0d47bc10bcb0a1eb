// rdv_burst: many rendezvous operations in flight at once, the way an RPC
// layer posts them, over the public API only. The regression workload of
// two defects users met:
//   - over libfabric shm, a few hundred 64 KiB active messages in a row
//     crashed the receiver (a remote write's completion came back with a
//     context that was no operation of the device's);
//   - on the simulator, 20 such messages (and the send/recv phase below)
//     deadlocked: rendezvous sends held memory registrations from their
//     post until their RTR, so both ranks ran out while each waited for
//     the other to register its receive (docs/design/protocol.md,
//     "Registrations").
//
// Phase 1 (active messages): one thread per rank posts `am_count` active
// messages of `size` bytes back to back, to itself, to the next rank or to
// a random rank, calling progress() between posts; the source completion
// is a handler that frees the buffer, the target completion a completion
// queue the same thread polls.
// Phase 2 (send/recv): `sendrecv_count` sends and as many receives of
// `size` bytes per peer (itself included), tags 0 .. count-1, posted in one
// shuffled order per rank; every completion goes to one counter.
// With held_registrations, the program's own registrations stand through
// both phases.
// Every byte received is checked against its (source, target, tag/index)
// pattern; each rank checks it got exactly what was sent to it (an active
// message's first 8 bytes carry its index, and each index arrives once).
//
// Blocking: waits by progress() (a scheduling point on the simulator).
// Throws std::runtime_error naming the rank and what was wrong.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lci::soak {

enum class burst_target_t : std::uint8_t { self, next, random };

struct rdv_burst_t {
  int am_count = 200;
  int sendrecv_count = 0;  // per peer
  std::size_t size = 65536;
  burst_target_t target = burst_target_t::next;
  std::uint64_t seed = 1;  // random targets and the phase-2 order
  // Registrations of 4 KiB regions the program makes before the phases and
  // holds through both: they leave rendezvous receives none of the
  // device's standing share (docs/design/protocol.md, "Registrations").
  int held_registrations = 0;
};

// One rank's body: g_runtime_init() ... g_runtime_fina() around both
// phases. Collective: every rank calls it with the same options.
void run_rdv_burst(const rdv_burst_t& options);

}  // namespace lci::soak
