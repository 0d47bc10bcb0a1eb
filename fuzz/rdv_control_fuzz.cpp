// libFuzzer target for the rendezvous control messages (RTS, RTR, the chunk
// header of a rendezvous copied through packets, and the RTS of a checked
// put or get) as they arrive (lci/wire/control.hpp: decode_rts, decode_rtr,
// decode_rdv_chunk, decode_rma_rts, what progress reads before handle_rts /
// handle_rtr / handle_rdv_chunk / handle_rma_rts act). The arrival's bytes sit in a
// heap buffer of exactly their length, so a read past them is an ASan
// report. Checked:
//   - a message shorter than its struct is refused, never read past;
//   - a decoded message has every field the protocol acts on in range:
//     RTS kind send, am, put or get, a matching policy that exists, a size
//     the device accepts; RTR mode write, refused or copy, offset + size
//     without wrap-around; a chunk with at least one byte after its header;
//     an RMA RTS an acceptable RTS of kind put or get, offset + size
//     without wrap-around, a get's receive written or copied, of the
//     RTS's size, without wrap-around, and after it nothing or (a put
//     only) exactly its size in data, said to be inline — and
//     a message breaking one of those is refused (the decoder is exact:
//     the fuzzer checks it against an independent statement of the rule);
//   - encode(decode(x)): what decodes is the message's first bytes, as the
//     sender wrote them (post_rts / start_rtr send the struct as is).
//
// Input format:
//   byte 0     bit 0: RTR; else bit 1: a chunk; else bit 2: an RMA RTS;
//              else an RTS
//   bytes 1-2  the device's largest message, 2^(b % 41) bytes (RTS and RMA
//              RTS)
//   the rest   the arrival's bytes
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "lci/wire/control.hpp"

namespace {

using lci::detail::rdv_chunk_t;
using lci::detail::rma_rts_t;
using lci::detail::rtr_mode_t;
using lci::detail::rtr_t;
using lci::detail::rts_kind_t;
using lci::detail::rts_t;

constexpr std::size_t prefix_bytes = 3;

[[noreturn]] void fail(const char* what, std::size_t length) {
  std::fprintf(stderr, "rdv_control_fuzz: %s (%zu bytes)\n", what, length);
  std::abort();
}

// The rules of control.hpp, stated again from the fields (not from the
// decoder's code): whether the protocol may act on the message.
bool rts_acceptable(const rts_t& rts, std::size_t size_max) {
  const auto kind = static_cast<std::uint8_t>(rts.kind);
  const bool known_kind = kind <= 3;    // send, am, put, get
  const bool policy = rts.policy <= 3;  // none, rank_only, tag_only, rank_tag
  return known_kind && policy && rts.size <= size_max;
}

bool rtr_acceptable(const rtr_t& rtr) {
  const auto mode = static_cast<std::uint32_t>(rtr.mode);
  const bool known_mode = mode == 0 || mode == 1 || mode == 2;  // write, refused, copy
  const bool fits = rtr.size <= UINT64_MAX - rtr.offset;
  return known_mode && fits;
}

// `behind`: the arrival's bytes after the struct.
bool rma_rts_acceptable(const rma_rts_t& message, std::size_t size_max, std::size_t behind) {
  const auto kind = static_cast<std::uint8_t>(message.rts.kind);
  if (!rts_acceptable(message.rts, size_max) || (kind != 2 && kind != 3)) return false;
  if (message.rts.size > UINT64_MAX - message.offset) return false;
  if (behind != 0 && (kind != 2 || behind != message.rts.size)) return false;
  if (kind == 2) return true;  // a put's receive is not read
  const rtr_t& receive = message.receive;
  const auto mode = static_cast<std::uint32_t>(receive.mode);
  return (mode == 0 || mode == 2) && receive.size == message.rts.size &&
         receive.size <= UINT64_MAX - receive.offset;
}

// A chunk is its offset and the data behind it: nothing in the header is
// out of range by itself (handle_rdv_chunk checks it against the receive).
bool chunk_acceptable(const rdv_chunk_t&) { return true; }

// `min_extra`: the bytes a message needs after its struct (a chunk's data).
template <typename message_t, typename decode_t, typename acceptable_t>
void check(const std::uint8_t* arrival, std::size_t length, decode_t decode,
           acceptable_t acceptable, std::size_t min_extra = 0) {
  message_t decoded;
  const char* why = decode(arrival, length, &decoded);
  if (length < sizeof(message_t) + min_extra) {
    if (why == nullptr) fail("decoded a message shorter than its struct", length);
    return;
  }
  message_t raw;
  std::memcpy(&raw, arrival, sizeof(raw));
  if ((why == nullptr) != acceptable(raw)) {
    fail(why == nullptr ? "accepted a message out of range" : "refused a well-formed message",
         length);
  }
  if (why == nullptr && std::memcmp(&decoded, arrival, sizeof(message_t)) != 0) {
    fail("the decoded message is not the bytes that arrived", length);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < prefix_bytes) return 0;
  const bool is_rtr = (data[0] & 1) != 0;
  const bool is_chunk = !is_rtr && (data[0] & 2) != 0;
  const bool is_rma = !is_rtr && !is_chunk && (data[0] & 4) != 0;
  const unsigned exponent = (static_cast<unsigned>(data[1]) | data[2] << 8) % 41;
  const std::size_t size_max = std::size_t{1} << exponent;
  const std::size_t length = size - prefix_bytes;
  // Exactly `length` bytes (at least one, so the pointer is a heap block
  // ASan guards).
  std::unique_ptr<std::uint8_t[]> arrival(new std::uint8_t[length == 0 ? 1 : length]);
  if (length > 0) std::memcpy(arrival.get(), data + prefix_bytes, length);
  if (is_rtr) {
    check<rtr_t>(
        arrival.get(), length,
        [](const void* b, std::size_t n, rtr_t* out) {
          return lci::detail::decode_rtr(b, n, out);
        },
        rtr_acceptable);
  } else if (is_chunk) {
    check<rdv_chunk_t>(
        arrival.get(), length,
        [](const void* b, std::size_t n, rdv_chunk_t* out) {
          return lci::detail::decode_rdv_chunk(b, n, out);
        },
        chunk_acceptable, /*min_extra=*/1);
  } else if (is_rma) {
    bool is_inline = false;
    check<rma_rts_t>(
        arrival.get(), length,
        [size_max, &is_inline](const void* b, std::size_t n, rma_rts_t* out) {
          return lci::detail::decode_rma_rts(b, n, size_max, out, &is_inline);
        },
        [size_max, length](const rma_rts_t& message) {
          return rma_rts_acceptable(message, size_max, length - sizeof(rma_rts_t));
        });
    if (length >= sizeof(rma_rts_t) && is_inline != (length > sizeof(rma_rts_t))) {
      rma_rts_t raw;
      std::memcpy(&raw, arrival.get(), sizeof(raw));
      if (rma_rts_acceptable(raw, size_max, length - sizeof(rma_rts_t))) {
        fail("inline data not told apart from none", length);
      }
    }
  } else {
    check<rts_t>(
        arrival.get(), length,
        [size_max](const void* b, std::size_t n, rts_t* out) {
          return lci::detail::decode_rts(b, n, size_max, out);
        },
        [size_max](const rts_t& rts) { return rts_acceptable(rts, size_max); });
  }
  return 0;
}
