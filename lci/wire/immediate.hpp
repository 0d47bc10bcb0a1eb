// The 32-bit immediate data every LCI message carries (paper §4.3): what the
// message is and, on the fast path, everything the target needs to handle it
// without a header in the payload.
//
//   bits 0..2   message type (msg_type_t)
//   bit  3      header: the payload starts with an eager_header_t
//   bits 4..31  value (28 bits), by type:
//     eager_send   policy (2 bits) | matching engine index | tag
//                  (tag in the low imm_nbits_tag bits, then the engine index
//                  in what is left, then the policy in the top 2 bits)
//     eager_am     rcomp in the low imm_nbits_rcomp bits, tag above it
//     rts, rtr     0 (the payload is an rts_t / rtr_t)
//     fin,
//     rdv_data     the receiving side's rendezvous id (rdv_table_t); as a
//                  message (not a write) it has bit 3 set and is a chunk of
//                  a rendezvous copied through packets, its payload led by
//                  an rdv_chunk_t (control.hpp)
//     put_signal,
//     get_signal   rcomp | tag, as eager_am (no header form: a put/get with
//                  a remote completion whose tag/rcomp do not fit is refused)
// When the fields of an eager message do not fit, bit 3 is set, the value is
// 0 and an eager_header_t {tag, engine index, rcomp, policy} leads the payload.
//
// Thread safety: pure functions. Blocking: never. Allocation: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lci/api/lci_types.hpp"

namespace lci::detail {

enum class msg_type_t : std::uint8_t {
  eager_send = 0,  // a matched send, payload in the message
  eager_am = 1,    // an active message, payload in the message
  rts = 2,         // rendezvous: ready to send
  rtr = 3,         // rendezvous: ready to receive (carries the target's rmr)
  fin = 4,         // rendezvous, write protocol: the data is in place
  rdv_data = 5,    // rendezvous data: a write-with-immediate, or a copied chunk
  put_signal = 6,  // an RMA put with a remote completion
  get_signal = 7,  // sent after an RMA get with a remote completion
};

inline constexpr unsigned imm_type_bits = 3;
inline constexpr unsigned imm_value_shift = 4;
inline constexpr unsigned imm_value_bits = 28;
inline constexpr std::uint32_t imm_header_flag = 1u << imm_type_bits;
inline constexpr std::uint32_t imm_value_max = (1u << imm_value_bits) - 1;

// Leads the payload of an eager message whose fields do not fit the
// immediate data.
struct eager_header_t {
  tag_t tag;
  std::uint32_t matching_engine_index;  // eager_send
  rcomp_t rcomp;                        // eager_am
  std::uint8_t policy;                  // eager_send: matching_policy_t
  std::uint8_t padding[7];
};
static_assert(sizeof(eager_header_t) == 24, "eager_header_t layout");

inline std::uint32_t make_imm(msg_type_t type, std::uint32_t value, bool header = false) {
  return static_cast<std::uint32_t>(type) | (header ? imm_header_flag : 0u) |
         (value << imm_value_shift);
}
inline msg_type_t imm_type(std::uint32_t imm) {
  return static_cast<msg_type_t>(imm & ((1u << imm_type_bits) - 1));
}
inline bool imm_has_header(std::uint32_t imm) { return (imm & imm_header_flag) != 0; }
inline std::uint32_t imm_value(std::uint32_t imm) { return imm >> imm_value_shift; }

// The fields an eager message or a signal carries, before encoding.
struct msg_fields_t {
  tag_t tag = 0;
  std::uint32_t matching_engine_index = 0;
  rcomp_t rcomp = 0;
  matching_policy_t policy = matching_policy_t::rank_tag;
};

// Packs `fields` for `type` into the 28-bit value; false when they do not
// fit (the caller then sends an eager_header_t, or refuses a signal).
// nbits_tag/nbits_rcomp: the runtime's imm_nbits_tag / imm_nbits_rcomp.
bool pack_imm_value(msg_type_t type, const msg_fields_t& fields, unsigned nbits_tag,
                    unsigned nbits_rcomp, std::uint32_t* value);
msg_fields_t unpack_imm_value(msg_type_t type, std::uint32_t value, unsigned nbits_tag,
                              unsigned nbits_rcomp);

eager_header_t make_eager_header(const msg_fields_t& fields);
msg_fields_t fields_of(const eager_header_t& header);

// An eager arrival (eager_send or eager_am) as the target reads it: the
// fields, from the immediate data or from the eager_header_t leading the
// payload, and where the user's payload starts.
struct eager_arrival_t {
  msg_fields_t fields;
  std::size_t header_bytes = 0;  // 0, or sizeof(eager_header_t)
};

// Decodes the `length` bytes at `buffer` that arrived with `imm` (of
// `type`); false, reading nothing, when `imm` announces a header that the
// bytes are too short to hold (a corrupt message: handle_eager throws).
// Extracted from handle_eager (eager.cpp) so that
// fuzz/eager_header_fuzz.cpp can feed it bytes from outside; that target
// found the missing length check (the header was copied from past the
// arrival's end, and the payload size went below zero).
inline bool decode_eager_arrival(msg_type_t type, std::uint32_t imm, const void* buffer,
                                 std::size_t length, unsigned nbits_tag, unsigned nbits_rcomp,
                                 eager_arrival_t* out) {
  if (imm_has_header(imm)) {
    if (length < sizeof(eager_header_t)) return false;
    eager_header_t header;
    std::memcpy(&header, buffer, sizeof(header));
    out->fields = fields_of(header);
    out->header_bytes = sizeof(header);
  } else {
    out->fields = unpack_imm_value(type, imm_value(imm), nbits_tag, nbits_rcomp);
    out->header_bytes = 0;
  }
  return true;
}

}  // namespace lci::detail
