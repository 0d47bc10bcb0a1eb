// libFuzzer target for the rendezvous control messages (RTS, RTR, and the
// chunk header of a rendezvous copied through packets) as they arrive
// (lci/wire/control.hpp: decode_rts, decode_rtr, decode_rdv_chunk, what
// progress reads before handle_rts / handle_rtr / handle_rdv_chunk act). The arrival's bytes sit in a
// heap buffer of exactly their length, so a read past them is an ASan
// report. Checked:
//   - a message shorter than its struct is refused, never read past;
//   - a decoded message has every field the protocol acts on in range:
//     RTS is_am 0 or 1, a matching policy that exists, a size the device
//     accepts; RTR mode write, refused or copy, offset + size without
//     wrap-around; a chunk with at least one byte after its header — and
//     a message breaking one of those is refused (the decoder is exact:
//     the fuzzer checks it against an independent statement of the rule);
//   - encode(decode(x)): what decodes is the message's first bytes, as the
//     sender wrote them (post_rts / start_rtr send the struct as is).
//
// Input format:
//   byte 0     bit 0: RTR; else bit 1: a chunk; else an RTS
//   bytes 1-2  the device's largest message, 2^(b % 41) bytes (RTS only)
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
using lci::detail::rtr_mode_t;
using lci::detail::rtr_t;
using lci::detail::rts_t;

constexpr std::size_t prefix_bytes = 3;

[[noreturn]] void fail(const char* what, std::size_t length) {
  std::fprintf(stderr, "rdv_control_fuzz: %s (%zu bytes)\n", what, length);
  std::abort();
}

// The rules of control.hpp, stated again from the fields (not from the
// decoder's code): whether the protocol may act on the message.
bool rts_acceptable(const rts_t& rts, std::size_t size_max) {
  const bool am_flag = rts.is_am == 0 || rts.is_am == 1;
  const bool policy = rts.policy <= 3;  // none, rank_only, tag_only, rank_tag
  return am_flag && policy && rts.size <= size_max;
}

bool rtr_acceptable(const rtr_t& rtr) {
  const auto mode = static_cast<std::uint32_t>(rtr.mode);
  const bool known_mode = mode == 0 || mode == 1 || mode == 2;  // write, refused, copy
  const bool fits = rtr.size <= UINT64_MAX - rtr.offset;
  return known_mode && fits;
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
          return lci::protocol::decode_rtr(b, n, out);
        },
        rtr_acceptable);
  } else if (is_chunk) {
    check<rdv_chunk_t>(
        arrival.get(), length,
        [](const void* b, std::size_t n, rdv_chunk_t* out) {
          return lci::protocol::decode_rdv_chunk(b, n, out);
        },
        chunk_acceptable, /*min_extra=*/1);
  } else {
    check<rts_t>(
        arrival.get(), length,
        [size_max](const void* b, std::size_t n, rts_t* out) {
          return lci::protocol::decode_rts(b, n, size_max, out);
        },
        [size_max](const rts_t& rts) { return rts_acceptable(rts, size_max); });
  }
  return 0;
}
