// The rendezvous control messages as they travel (rts_t, rtr_t, the
// rdv_chunk_t that leads each packet of a rendezvous copied through packets,
// and rma_rts_t, the RTS of a put or get the target checks first), and their
// decoders: an RTS, RTR or chunk is bytes from a peer, so every field the protocol
// acts on is checked before it is trusted. A decoder that refuses names
// what is wrong; progress (progress.cpp) throws std::runtime_error with it
// and the sender's rank, as for any corrupt arrival, instead of asserting
// or reading past the message.
//
// What a decoder cannot see, the handlers check against the request the
// message names: handle_rtr() that the size to write is at most the
// message's, handle_rdv_chunk() that the chunk lies inside the receive.
//
// Thread safety: pure functions. Blocking: never. Allocation: none.
// fuzz/rdv_control_fuzz.cpp feeds them arbitrary bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lci/api/lci_types.hpp"

namespace lci::detail {

// What an RTS starts (rts_t::kind).
enum class rts_kind_t : std::uint8_t {
  send = 0,  // a matched send
  am = 1,    // an active message
  // A put or get that the target checks against its registrations first
  // (checked RMA, lci/protocol/rma_checked.cpp): the message is an
  // rma_rts_t.
  put = 2,
  get = 3,
};

// Rendezvous "ready to send": leads an rts message's payload.
struct rts_t {
  // The initiator's id in its rdv_table_t, echoed back: a send's (send, am,
  // put) in the RTR, a get's receive's in a refusal.
  std::uint64_t send_request;
  std::uint64_t size;
  tag_t tag;
  std::uint32_t matching_engine_index;
  rcomp_t rcomp;        // am; put and get: the remote completion (0: none)
  std::uint8_t policy;  // matching_policy_t (send)
  rts_kind_t kind;
  std::uint8_t padding[6];
};

// How the sender is to move a rendezvous's data (rtr_t::mode).
enum class rtr_mode_t : std::uint32_t {
  // An RDMA write into the registration the RTR names, then a FIN (or the
  // write's immediate data).
  write = 0,
  // The receive was too small and finished already; the sender moves
  // nothing and completes its send with errorcode_t::fatal.
  refused = 1,
  // The receiver holds no registration for the buffer (none could be had:
  // docs/design/protocol.md, "Registrations"): the sender copies the data
  // through packets, each led by an rdv_chunk_t, and the receive completes
  // when every byte has landed. base, offset and rkey mean nothing.
  copy = 2,
};

// Rendezvous "ready to receive".
struct rtr_t {
  std::uint64_t send_request;
  // The receive buffer's registration as get_rmr gave it (its base is the
  // registration's start, not the buffer's), and where the buffer starts in
  // it: a network that addresses remote memory by offset (FI_MR_VIRT_ADDR
  // off, as tcp;ofi_rxm) needs the two apart, or a buffer inside a larger
  // user registration is written at the registration's start.
  std::uint64_t base;
  std::uint64_t offset;
  std::uint64_t rkey;
  std::uint64_t size;     // what the sender writes: min(message, receive capacity)
  std::uint32_t rdv_id;   // the receiver's rendezvous id (FIN / write-with-imm / chunks)
  rtr_mode_t mode;
};

// The RTS of a checked put or get: where in the target's registration the
// access goes, as the initiator's rmr_t names it, and for a get the
// receive the target is to write (what an RTR would say to a sender). A
// put that fits a packet with it carries its rts.size bytes of data right
// behind it (inline); any other put or get carries nothing.
struct rma_rts_t {
  rts_t rts;             // kind put or get
  std::uint64_t base;    // the registration's start (rmr_t::mr_base)
  std::uint64_t rkey;    // rmr_t::opaque_rkey
  std::uint64_t offset;  // where the access starts in the registration
  rtr_t receive;         // get: mode write or copy, size rts.size; put: zero
};

// Leads each packet of a rendezvous whose data is copied through packets (a
// message of type rdv_data with the immediate's header bit; its value is the
// receiver's rendezvous id): where in the receive the bytes after it go.
struct rdv_chunk_t {
  std::uint64_t offset;
};

// nullptr: *out holds the RTS that leads the `length` bytes at `buffer`;
// otherwise what is wrong (*out unspecified). `size_max`: the largest
// message the receiving device accepts (a larger one would only be
// allocated or matched to fail later).
inline const char* decode_rts(const void* buffer, std::size_t length, std::size_t size_max,
                              rts_t* out) {
  if (length < sizeof(rts_t)) return "shorter than an RTS";
  std::memcpy(out, buffer, sizeof(rts_t));
  if (out->kind > rts_kind_t::get) return "no such RTS kind";
  if (out->policy > static_cast<std::uint8_t>(matching_policy_t::rank_tag)) {
    return "no such matching policy";
  }
  if (out->size > size_max) return "a message size over the device's largest";
  return nullptr;
}

// As decode_rts, for the RTS of a checked put or get (an RTS whose kind
// decode_rts found to be put or get). *is_inline: the put's data follows
// it (the `length` bytes are the RTS and exactly rts.size bytes more).
inline const char* decode_rma_rts(const void* buffer, std::size_t length, std::size_t size_max,
                                  rma_rts_t* out, bool* is_inline) {
  if (length < sizeof(rma_rts_t)) return "shorter than a put's or get's RTS";
  const char* why = decode_rts(buffer, length, size_max, &out->rts);
  if (why != nullptr) return why;
  std::memcpy(out, buffer, sizeof(rma_rts_t));
  if (out->rts.kind != rts_kind_t::put && out->rts.kind != rts_kind_t::get) {
    return "an RMA RTS that is neither a put nor a get";
  }
  if (out->offset + out->rts.size < out->offset) return "offset + size wraps around";
  const std::size_t data = length - sizeof(rma_rts_t);
  *is_inline = data > 0;
  if (*is_inline && (out->rts.kind != rts_kind_t::put || data != out->rts.size)) {
    return "bytes behind an RTS that are not its put's data";
  }
  if (out->rts.kind == rts_kind_t::get) {
    const rtr_t& receive = out->receive;
    if (receive.mode != rtr_mode_t::write && receive.mode != rtr_mode_t::copy) {
      return "a get's receive neither written nor copied";
    }
    if (receive.size != out->rts.size) return "a get's receive of another size";
    if (receive.offset + receive.size < receive.offset) return "offset + size wraps around";
  }
  return nullptr;
}

// As decode_rts, for an RTR.
inline const char* decode_rtr(const void* buffer, std::size_t length, rtr_t* out) {
  if (length < sizeof(rtr_t)) return "shorter than an RTR";
  std::memcpy(out, buffer, sizeof(rtr_t));
  if (out->mode > rtr_mode_t::copy) return "no such rendezvous mode";
  if (out->offset + out->size < out->offset) return "offset + size wraps around";
  return nullptr;
}

// As decode_rtr, for a chunk: nullptr when `length` bytes hold an
// rdv_chunk_t and at least one byte of data after it.
inline const char* decode_rdv_chunk(const void* buffer, std::size_t length, rdv_chunk_t* out) {
  if (length <= sizeof(rdv_chunk_t)) return "no data after the chunk's offset";
  std::memcpy(out, buffer, sizeof(rdv_chunk_t));
  return nullptr;
}

}  // namespace lci::detail
