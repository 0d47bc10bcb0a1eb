// request_state_t: what the protocols keep of an operation in its request
// (request_t, lci/runtime/request.hpp): its kind, the rendezvous ids it
// carries, a get's signal, a copied rendezvous's bytes. The runtime's pools
// hold requests without naming the protocol: request_t keeps these fields
// in opaque storage (request_t::protocol_state), and this header is where
// they get a type, checked at compile time to fit it.
//
// Thread safety: a request's state is its holder's (request_t's hand-offs
//                publish it), but for `copied`, which the chunks of a
//                copied rendezvous update from any thread.
// Ownership:     in its request; constructed when the protocol takes the
//                request (take_protocol_request) and never destroyed
//                (trivially destructible: the pool gives the request back
//                without knowing it).
// Allocation:    none.
// Limits:        request_t::protocol_state_bytes_max bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/request.hpp"
#include "lci/util/atomic.hpp"

namespace lci::detail {

enum class request_kind_t : std::uint8_t {
  send_eager,  // an eager send/AM from a packet (comp_semantic network)
  send_rdv,    // the sending side of a rendezvous, from RTS to the write's completion
  recv,        // a posted receive (matching), or the receiving side of a rendezvous
  put,
  get,
};

inline constexpr std::uint32_t rdv_id_none = ~std::uint32_t{0};

struct request_state_t {
  request_kind_t kind = request_kind_t::send_eager;
  // Get with a remote completion: the get_signal's immediate data, sent to
  // the target after the read (0: none).
  std::uint32_t signal_imm = 0;
  std::uint32_t rdv_id = rdv_id_none;  // recv: our id; send_rdv (write): the target's, for FIN
  std::uint64_t peer_request = 0;      // recv rdv: the sender's send id, echoed in the RTR
  // A rendezvous copied through packets (rtr_mode_t::copy): the send's
  // bytes handed to the network so far (only its backlog step touches it),
  // or the receive's bytes landed so far (chunks land on any thread; the
  // one whose bytes make it whole completes the receive).
  util::atomic<std::size_t> copied{0};
};

static_assert(sizeof(request_state_t) <= request_t::protocol_state_bytes_max,
              "a request's protocol state over the storage request_t keeps for it");
static_assert(alignof(request_state_t) <= request_t::protocol_state_align,
              "a request's protocol state more aligned than request_t's storage for it");
static_assert(std::is_trivially_destructible_v<request_state_t>,
              "a request's protocol state is given back with its request, never destroyed");

// The protocol state of `request`, which take_protocol_request constructed.
inline request_state_t& state_of(request_t* request) {
  return *std::launder(reinterpret_cast<request_state_t*>(request->protocol_state));
}
inline const request_state_t& state_of(const request_t* request) {
  return *std::launder(reinterpret_cast<const request_state_t*>(request->protocol_state));
}

// device.take_request() with the protocol state constructed (the defaults
// above): how the protocols take every request. nullptr when the pool is
// empty: the caller answers retry, or waits in the backlog.
[[nodiscard]] inline request_t* take_protocol_request(device_impl_t& device) {
  request_t* request = device.take_request();
  if (request == nullptr) return nullptr;
  ::new (static_cast<void*>(request->protocol_state)) request_state_t();
  return request;
}

}  // namespace lci::detail
