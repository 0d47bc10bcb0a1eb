// device_accounting_t: what a device counts so that it can tell when it is
// done, and what it may still take: its operations in flight (what
// test_drained() asks), its posts the network has not completed yet (what
// a closing device waits for), and its standing registrations (a share of
// the network's registrations, docs/design/protocol.md, "Registrations").
//
// Thread safety: every method may run concurrently with every other: each
//                count is one atomic, on a cache line of its own, since
//                each is written by other threads (posting threads arm
//                in-flight marks and note network posts, progressing
//                threads end them and note completions, rendezvous
//                receives and register_memory take registration shares).
// Blocking:      never.
// Ownership:     owned by its device; the in-flight marks that point to
//                in_flight_count_ are the requests', which never outlive
//                the device (drain_before_close).
// Allocation:    none.
// Limits:        standing registrations: standing_registrations_max(), set
//                at construction; past it take_standing_registration()
//                answers false (the caller's retry).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/backend.hpp"
#include "lci/runtime/request.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"

namespace lci::detail {

class device_accounting_t {
 public:
  // `net_attr`: the device's network, whose registrations_max bounds the
  // standing registrations; `raw`: a device without a packet pool, where
  // the protocol never runs. Throws std::invalid_argument when the network
  // allows too few registrations for the protocol.
  device_accounting_t(const backend::net_device_attr_t& net_attr, bool raw);
  device_accounting_t(const device_accounting_t&) = delete;
  device_accounting_t& operator=(const device_accounting_t&) = delete;

  // Counts `request` among the operations in flight (in_flight_mark_t).
  void mark_in_flight(request_t* request) { request->in_flight.arm(&in_flight_count_); }
  // No operation is in flight: every send, RMA and rendezvous (either side)
  // whose request was marked finished. Posted receives still waiting for a
  // message do not count.
  bool in_flight_none() const {
    // acquire: pairs with the release in in_flight_mark_t::end().
    return in_flight_count_.load(util::mo_acquire) == 0;
  }

  // Operations the device posted to the network with a request as their
  // user_context (sends from packets, puts, gets) whose completion
  // progress has not dispatched yet. in_flight_none() does not see them
  // all: a memory-semantic send is complete for its poster before the
  // network hands its packet back. drain_before_close waits for none to be
  // left, so that a freed device leaves no completion in the network and no
  // packet out of its pool.
  // note_network_post: after a post that the network accepted (the
  // completion may have been dispatched already by another thread: the
  // count may dip below zero meanwhile, never once posting has stopped).
  void note_network_post() {
    // relaxed: a count; drain_before_close runs after every post returned
    // (free_device's precondition), ordered after it by the caller.
    network_posts_.fetch_add(1, util::mo_relaxed);
  }
  // progress_device: `count` completions of such posts were dispatched.
  void note_network_completions(std::size_t count) {
    if (count == 0) return;
    // release: pairs with the acquire in network_posts_left(), so that a
    // closer told "none left" sees what their dispatch did.
    network_posts_.fetch_sub(static_cast<std::int64_t>(count), util::mo_release);
  }
  bool network_posts_left() const {
    // acquire: pairs with the release in note_network_completions().
    return network_posts_.load(util::mo_acquire) > 0;
  }

  // Standing registrations are held with no end this rank's progress can
  // bring about: a rendezvous receive's, from its RTR until the sender's
  // write lands, and the program's own (register_memory), until it
  // deregisters. A send, put or get holds one only until the network
  // completes it. So standing registrations are at most
  // standing_registrations_max() at once, and the rest of the network's
  // registrations_max stays for the others: a peer's receive that waits for
  // this rank's write never waits for a registration that only it could
  // free. false: the standing share is used up (retry later); true: one
  // share is the caller's until return_standing_registration()
  // (device_impl_t::release_owned_mr of a receive's request,
  // deregister_memory of the program's).
  [[nodiscard]] bool take_standing_registration();
  void return_standing_registration();
  std::size_t standing_registrations_max() const { return standing_registrations_max_; }

 private:
  // Requests in flight (in_flight_mark_t); read by in_flight_none().
  alignas(util::cache_line_bytes) util::atomic<std::int64_t> in_flight_count_{0};
  // See note_network_post().
  alignas(util::cache_line_bytes) util::atomic<std::int64_t> network_posts_{0};
  // Standing registrations held (take_standing_registration).
  alignas(util::cache_line_bytes) util::atomic<std::size_t> standing_registrations_{0};
  const std::size_t standing_registrations_max_;
};

}  // namespace lci::detail
