// The bounds on posting an operation again after its connection broke under
// a live peer (ofi_device_t's liveness, docs/backends/ofi.md "Faults"): how
// many times, and how large a message. Apart from the device so that they
// can be tested at their limits; the device adds what needs its state (the
// peer alive, the payload still held).
//
// Thread safety: pure functions and constants.
// Blocking:      never.
// Allocation:    none.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/backend.hpp"
#include "backends/ofi/ofi_op_table.hpp"

namespace lci::backend::ofi {

// Times an operation whose connection broke is posted again (the device
// waits before each, longer each time: ofi_device_liveness.cpp).
inline constexpr std::uint8_t connection_reposts_max = 5;
// The largest send posted again after its connection broke. A send
// completes (transmit complete) once the provider has written all of it to
// the connection, so one that fails was never whole at the target: posting
// it again cannot deliver it twice. That holds for ofi_rxm's eager and
// segmented messages (16 KiB and 128 KiB by default, never below the eager
// size); only its rendezvous, for larger ones, can fail after the target
// took the message (the acknowledgement lost with the connection). The
// runtime sends at most a packet (8 KiB by default).
inline constexpr std::size_t send_repost_size_max = 16384;

// Whether `op` is within both bounds: posted again fewer than
// connection_reposts_max times so far, and, for a send, at most
// send_repost_size_max bytes long. A notice sends zero bytes whatever its
// op's length (that of the emulated put-with-immediate's write it follows),
// and an RMA may land twice (the same bytes): any length.
inline bool within_repost_limits(const op_t& op) {
  if (op.reposts >= connection_reposts_max) return false;
  if (op.is_notice || op.opcode != backend::net_opcode_t::send) return true;
  return op.length <= send_repost_size_max;
}

}  // namespace lci::backend::ofi
