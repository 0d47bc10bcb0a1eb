// packet_header_t: the small header in front of every packet's payload.
//
// A packet is one cache line of header followed by the payload, so the
// payload (what pool_t::get() returns) is cache-line aligned as well:
//
//   | header (packet_header_bytes) | payload (packet_size_bytes, rounded up) |
//   ^ packet start, 64-aligned     ^ payload, 64-aligned
//
// The header lets put() check, without searching any deque, that the pointer
// is a packet of this pool (packet_index) and that the packet is really out
// (state), and lets the remote-put policy find the deque the packet came from
// (home_deque_index). See docs/design/packet_pool.md.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"

namespace lci::packet_pool {

// Where a packet is. The values are far apart and not 0/1, so a header that a
// buffer underflow overwrote is unlikely to read as a valid state.
enum class packet_state_t : std::uint8_t {
  in_pool = 0x1D,  // in some deque; only the pool may touch it
  out = 0xE2,      // handed out by get(); only its holder may touch it
};

// Thread safety: `state` is an atomic so that a buggy concurrent double put
// is a failed check, not undefined behaviour; the other fields are plain:
// they are written by the packet's current holder, and a packet changes hands
// only under a deque lock (get/put) or through the user's own synchronised
// hand-off.
struct packet_header_t {
  util::atomic<std::uint8_t> state;  // a packet_state_t
  // The deque of the thread whose get() handed the packet out (the deque it
  // started in, before its first get). Read by put() for the return policy.
  util::var<std::uint32_t> home_deque_index;
  // This packet's position in the pool; constant after construction.
  std::uint32_t packet_index = 0;
  // Nonzero while the packet is posted as a network receive: its poster's
  // mark (pool_t::mark_receive). An atomic, because a closing device scans
  // every header (pool_t::reclaim_marked) while other threads hold and mark
  // the other packets; relaxed everywhere, since a packet's own marks are
  // ordered by the hand-offs that move the packet.
  util::atomic<std::uint32_t> receive_mark;
};

// Whole lines, so the payload stays line aligned: one line in production
// (Relacy's instrumented atomics make the header larger under model checking).
inline constexpr std::size_t packet_header_bytes =
    (sizeof(packet_header_t) + util::cache_line_bytes - 1) / util::cache_line_bytes *
    util::cache_line_bytes;
#if !defined(LCI_MODEL_CHECK)
static_assert(packet_header_bytes == util::cache_line_bytes,
              "the header must fit in the line before the payload");
#endif

}  // namespace lci::packet_pool
