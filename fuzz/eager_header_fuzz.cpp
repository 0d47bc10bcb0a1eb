// libFuzzer target for the packet header of an eager message
// (lci/wire/immediate.hpp, decode_eager_arrival: what handle_eager in
// eager.cpp reads of an eager_send or eager_am arrival). The arrival's bytes
// sit in a heap buffer of exactly their length, so a read past them is an
// ASan report. Checked:
//   - a header is read only when it is there: an arrival flagged "header"
//     but shorter than eager_header_t is refused (false; handle_eager throws
//     std::runtime_error), never read past its end;
//   - what decodes leaves a payload inside the arrival (header_bytes <=
//     length);
//   - encode(decode(x)): the fields encode again as the sender does
//     (eager.cpp's encode: pack_imm_value, else make_eager_header) — into
//     the same immediate when they came in it, into the same header bytes
//     (padding aside) when they came in a header — and that message
//     decodes to the same fields and payload.
//
// Input format:
//   byte 0     bit 0: eager_send (0) or eager_am (1)
//   byte 1     nbits_tag = b % 27 (the runtime accepts 0..26)
//   byte 2     nbits_rcomp = 1 + b % 28 (the runtime accepts 1..28)
//   bytes 3-6  the immediate data, little-endian (its type bits are
//              replaced by byte 0's type: other types never reach this
//              decoder)
//   the rest   the arrival's bytes (header, if any, then payload)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "lci/wire/immediate.hpp"

namespace {

using lci::detail::eager_arrival_t;
using lci::detail::eager_header_t;
using lci::detail::msg_fields_t;
using lci::detail::msg_type_t;

constexpr std::size_t prefix_bytes = 7;
// The header's bytes that carry fields; the rest is padding, zeroed by the
// sender and ignored by the target.
constexpr std::size_t header_field_bytes = offsetof(eager_header_t, policy) + 1;

[[noreturn]] void fail(const char* what, std::uint32_t imm, std::size_t length) {
  std::fprintf(stderr, "eager_header_fuzz: %s (imm 0x%08x, %zu bytes)\n", what, imm, length);
  std::abort();
}

bool same_fields(msg_type_t type, const msg_fields_t& a, const msg_fields_t& b) {
  if (a.tag != b.tag) return false;
  if (type == msg_type_t::eager_send) {
    return a.matching_engine_index == b.matching_engine_index && a.policy == b.policy;
  }
  return a.rcomp == b.rcomp;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < prefix_bytes) return 0;
  const msg_type_t type = (data[0] & 1) != 0 ? msg_type_t::eager_am : msg_type_t::eager_send;
  const unsigned nbits_tag = data[1] % 27;
  const unsigned nbits_rcomp = 1 + data[2] % 28;
  std::uint32_t imm = 0;
  for (int i = 0; i < 4; ++i) imm |= static_cast<std::uint32_t>(data[3 + i]) << (8 * i);
  imm = (imm & ~std::uint32_t{7}) | static_cast<std::uint32_t>(type);
  const std::size_t length = size - prefix_bytes;
  // Exactly `length` bytes (at least one, so the pointer is a heap block
  // ASan guards): any read past the arrival is reported.
  std::unique_ptr<std::uint8_t[]> arrival(new std::uint8_t[length == 0 ? 1 : length]);
  if (length > 0) std::memcpy(arrival.get(), data + prefix_bytes, length);

  eager_arrival_t decoded;
  const bool ok = lci::detail::decode_eager_arrival(type, imm, arrival.get(), length, nbits_tag,
                                                      nbits_rcomp, &decoded);
  const bool header = lci::detail::imm_has_header(imm);
  if (!ok) {
    if (!header || length >= sizeof(eager_header_t)) fail("refused a well-formed arrival", imm, length);
    return 0;
  }
  if (decoded.header_bytes != (header ? sizeof(eager_header_t) : 0)) fail("wrong header size", imm, length);
  if (decoded.header_bytes > length) fail("the header ends past the arrival", imm, length);

  // Encode as the sender does.
  std::uint32_t value = 0;
  const bool in_imm = lci::detail::pack_imm_value(type, decoded.fields, nbits_tag, nbits_rcomp, &value);
  if (!header && !in_imm) fail("fields from the immediate do not fit it again", imm, length);
  if (!header && lci::detail::make_imm(type, value) != imm) fail("the immediate does not round-trip", imm, length);
  if (header) {
    // A sender puts fields in a header only when they do not fit the
    // immediate, but any header must re-encode to the bytes it came in.
    const eager_header_t again = lci::detail::make_eager_header(decoded.fields);
    if (std::memcmp(&again, arrival.get(), header_field_bytes) != 0) {
      fail("the header does not round-trip", imm, length);
    }
  }
  // The re-encoded message decodes to the same fields and payload.
  const std::size_t payload_bytes = length - decoded.header_bytes;
  const std::uint32_t imm_again =
      header ? lci::detail::make_imm(type, 0, /*header=*/true) : lci::detail::make_imm(type, value);
  std::unique_ptr<std::uint8_t[]> message(new std::uint8_t[length == 0 ? 1 : length]);
  if (header) {
    const eager_header_t again = lci::detail::make_eager_header(decoded.fields);
    std::memcpy(message.get(), &again, sizeof(again));
  }
  if (payload_bytes > 0) {
    std::memcpy(message.get() + decoded.header_bytes, arrival.get() + decoded.header_bytes, payload_bytes);
  }
  eager_arrival_t redecoded;
  if (!lci::detail::decode_eager_arrival(type, imm_again, message.get(), length, nbits_tag,
                                           nbits_rcomp, &redecoded)) {
    fail("the re-encoded message is refused", imm, length);
  }
  if (redecoded.header_bytes != decoded.header_bytes || !same_fields(type, redecoded.fields, decoded.fields)) {
    fail("the re-encoded message decodes to other fields", imm, length);
  }
  return 0;
}
