// request_t: an operation the runtime has accepted and not yet completed —
// what a backend completion's user_context points to, what the matching
// table stores for a posted receive, and what a rendezvous id names.
// unexpected_t: an incoming matched message that found no receive yet.
//
// Thread safety: a request is owned by exactly one party at a time (the
//                posting thread, the network, the matching table, the
//                rendezvous table); handing it over is what publishes it.
// Ownership:     taken from its device's pool (device_impl_t::take_request,
//                take_unexpected) by a post or by progress; given back by
//                whoever finishes it (device_impl_t::give_back).
// Allocation:    none while the pools, allocated with the device, have
//                room; an unexpected-message record past its pool's bound
//                is allocated (device_pools_t).
// Limits:        the pools' bounds (docs/design/device.md, "Pools"); an
//                empty request pool is retry for a post, and waits in the
//                backlog for an arrival.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "backends/backend.hpp"
#include "lci/api/lci_types.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/wire/control.hpp"
#include "lci/wire/immediate.hpp"

namespace lci::detail {

class comp_impl_t;
class device_impl_t;
class mr_impl_t;
struct device_pools_t;

// Counts a request among its device's operations in flight (what
// test_drained() asks) from arm() until disarm() or the request's deletion,
// so every path that deletes a request stops counting it. A request whose
// completion object is signalled after the request is deleted takes the
// count out first (detach()) and ends it after the signal (end()), so that
// a thread told "drained" finds every completion object signalled.
// Thread safety: owned by its request (one party at a time).
class in_flight_mark_t {
 public:
  in_flight_mark_t() = default;
  in_flight_mark_t(const in_flight_mark_t&) = delete;
  in_flight_mark_t& operator=(const in_flight_mark_t&) = delete;
  ~in_flight_mark_t() { disarm(); }

  void arm(util::atomic<std::int64_t>* count) {
    LCI_ASSERT(count_ == nullptr, "a request counted in flight twice");
    count_ = count;
    // relaxed: a count; the poster's own later test_drained() is ordered
    // after this by program order, and nobody waits for an increment.
    count_->fetch_add(1, util::mo_relaxed);
  }
  void disarm() { end(detach()); }
  // Stops this mark without ending the count (nullptr when not armed): the
  // caller passes it to end().
  [[nodiscard]] util::atomic<std::int64_t>* detach() { return std::exchange(count_, nullptr); }
  // Ends one operation's count taken by detach(); nothing for nullptr.
  static void end(util::atomic<std::int64_t>* count) {
    if (count == nullptr) return;
    // release: pairs with the acquire in
    // device_accounting_t::in_flight_none(), so a caller told "drained"
    // sees what the finished operation did (and its completion object's
    // signal).
    const std::int64_t before = count->fetch_sub(1, util::mo_release);
    LCI_ASSERT(before >= 1, "operations in flight went negative");
  }

 private:
  util::atomic<std::int64_t>* count_ = nullptr;
};

// Who holds a request (request_t::owner): the parties of the header
// comment. Every hand-off names the giver and the taker (hand_over), and
// asserts that the giver held it, so that a request two parties take for
// theirs (completed twice, completed while a table or the network still
// names it, posted from a table) stops the program at the hand-off instead
// of corrupting a pool later. A backlog step that captures a request holds
// it as the thread that made the step did.
enum class request_owner_t : std::uint8_t {
  thread,          // a posting or progressing thread working on it
  network,         // posted as an operation's user_context, until its completion
  rdv_table,       // named by an id a peer will echo (rdv_table_t)
  matching_table,  // a posted receive waiting in the matching table
};

struct request_t {
  // The protocol's state of the operation (lci/protocol/request_state.hpp:
  // its kind, rendezvous ids, a get's signal): opaque here, so that the
  // pools hold requests without naming the protocol. The protocol
  // constructs it when it takes the request and asserts that it fits;
  // it is never destroyed (the pool does not know its type).
  static constexpr std::size_t protocol_state_bytes_max = 32;
  static constexpr std::size_t protocol_state_align = alignof(std::uint64_t);
  alignas(protocol_state_align) std::byte protocol_state[protocol_state_bytes_max];
  // Written by the giver before the hand-off publishes the request (the
  // network's completion, a table's lock or atomics), read by the taker.
  request_owner_t owner = request_owner_t::thread;
  // The device the operation runs on. A rendezvous receive moves to the
  // device its RTS arrived on when it meets it (match_receive): the RTR,
  // the write and the FIN travel between that device and the sender's.
  device_impl_t* device = nullptr;
  device_pools_t* home = nullptr;  // the pools it came from (give_back)
  comp_impl_t* comp = nullptr;  // nullptr: COMP_NULL
  status_t status;              // what comp gets (error set at completion)
  // A registration the runtime made for this operation and must undo.
  backend::net_mr_t owned_mr;
  // owned_mr holds one of the device's standing registration shares (a
  // rendezvous receive's), given back with it (device_impl_t::release_owned_mr).
  bool owned_mr_standing = false;
  backend::net_mr_t mr;  // the registration the data moves through
  void* packet = nullptr;  // a packet to return to the pool at completion
  // The target's side of a peer's checked put or get: the registration it
  // pinned (runtime_impl_t::pin_registration), unpinned when it finishes
  // or its peer's crash fails it (device_impl_t::release_pin).
  mr_impl_t* pinned = nullptr;
  // Receives: the buffer's capacity (status.size is the message's size).
  std::size_t capacity = 0;
  // Crashed peers (runtime_impl_t::watch): a request that waits on its peer
  // while the network holds nothing of it (a receive in the matching table,
  // a rendezvous between its RTS and its data) is linked into its device's
  // watch list (watch_list_t), so that the peer's death can fail it.
  // `watched` is written before the request is shared; the rest only under
  // that list's lock. `device` does not change while it is linked.
  bool watched = false;
  bool failed = false;  // a crash completed it; whoever finds it later drops it
  request_t* watch_prev = nullptr;
  request_t* watch_next = nullptr;
  // Outgoing operations from their post, rendezvous receives from their RTR
  // (a receive still waiting for a message is not in flight).
  in_flight_mark_t in_flight;
};

// `request` passes from `from` to `to` (request_owner_t).
inline void hand_over(request_t* request, request_owner_t from, request_owner_t to) {
  LCI_ASSERT(request->owner == from, "a request handed over by a party that does not hold it");
  request->owner = to;
}

// An incoming send that found no posted receive: stored in the matching
// table until a receive takes it.
struct unexpected_t {
  // The pools it came from (its arrival's device's, which the runtime keeps
  // past that device): a receive posted on another device may take it, or
  // one posted after its device closed. Null for a record on the stack
  // (take_posted_receive), which no pool takes back.
  device_pools_t* home = nullptr;
  bool is_rts = false;
  // The arrival's device (collective_state_t::ordinal, not a pointer: the
  // record may outlive it). A rendezvous goes on there whichever device
  // the receive was posted on: only that one is paired with the sender's.
  std::uint32_t device_ordinal = 0;
  int rank = -1;
  tag_t tag = 0;
  std::size_t size = 0;
  // eager: the packet holding the payload, or nullptr while the payload is
  // still where it landed (take_posted_receive matches such a message at
  // once, never stores it)
  void* packet = nullptr;
  const void* data = nullptr;  // eager: the payload
  rts_t rts{};                 // rendezvous
};

}  // namespace lci::detail
