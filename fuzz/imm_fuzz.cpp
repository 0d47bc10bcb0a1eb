// libFuzzer target for the immediate data (lci/wire/immediate.hpp): the
// 32 bits every LCI message carries are read by the target with imm_type,
// imm_has_header, imm_value and unpack_imm_value, whatever the network
// delivered. Checked for every word:
//   - make_imm(imm_type(w), imm_value(w), imm_has_header(w)) == w: the three
//     fields cover the word exactly (nothing lost, nothing overlapping);
//   - for the types with fields (eager_send, eager_am, put_signal,
//     get_signal) the unpacked fields pack again (pack_imm_value) into the
//     same value;
// and for every set of fields (the sender's side): pack_imm_value accepts
// exactly the fields that fit the documented layout (immediate.hpp), and
// what it packs unpacks to the same fields.
//
// Input format:
//   byte 0   nbits_tag = b % 27 (the runtime accepts 0..26)
//   byte 1   nbits_rcomp = 1 + b % 28 (the runtime accepts 1..28)
//   then     records of 22 bytes, at most records_max: a little-endian
//            32-bit word (decoded), then fields to encode: tag (8 bytes,
//            cut to the width in the next byte % 65), engine index (4),
//            rcomp (4), policy (bits 0-1 of the last byte), type (bits
//            2-3: eager_send, eager_am, put_signal, get_signal)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lci/wire/immediate.hpp"

namespace {

using lci::detail::msg_fields_t;
using lci::detail::msg_type_t;

constexpr std::size_t record_bytes = 22;
constexpr std::size_t records_max = 256;
constexpr unsigned policy_bits = 2;

[[noreturn]] void fail(const char* what, std::uint32_t word, unsigned nbits_tag,
                       unsigned nbits_rcomp) {
  std::fprintf(stderr, "imm_fuzz: %s (word 0x%08x, nbits_tag %u, nbits_rcomp %u)\n", what,
               word, nbits_tag, nbits_rcomp);
  std::abort();
}

template <typename T>
T read_le(const std::uint8_t* bytes) {
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(bytes[i]) << (8 * i);
  return value;
}

bool has_fields(msg_type_t type) {
  return type == msg_type_t::eager_send || type == msg_type_t::eager_am ||
         type == msg_type_t::put_signal || type == msg_type_t::get_signal;
}

bool same_fields(msg_type_t type, const msg_fields_t& a, const msg_fields_t& b) {
  if (a.tag != b.tag) return false;
  if (type == msg_type_t::eager_send) {
    return a.matching_engine_index == b.matching_engine_index && a.policy == b.policy;
  }
  return a.rcomp == b.rcomp;
}

// The layout of immediate.hpp, written out independently of immediate.cpp:
// eager_send: tag | engine index | policy (2 bits) in 28 bits; the others:
// rcomp | tag.
bool fits(std::uint64_t value, unsigned bits) { return bits >= 64 || (value >> bits) == 0; }
bool fields_fit(msg_type_t type, const msg_fields_t& fields, unsigned nbits_tag,
                unsigned nbits_rcomp) {
  if (type == msg_type_t::eager_send) {
    const unsigned engine_bits = lci::detail::imm_value_bits - policy_bits - nbits_tag;
    return fits(fields.tag, nbits_tag) && fits(fields.matching_engine_index, engine_bits);
  }
  return fits(fields.rcomp, nbits_rcomp) &&
         fits(fields.tag, lci::detail::imm_value_bits - nbits_rcomp);
}

void check_word(std::uint32_t word, unsigned nbits_tag, unsigned nbits_rcomp) {
  const msg_type_t type = lci::detail::imm_type(word);
  const std::uint32_t value = lci::detail::imm_value(word);
  const bool header = lci::detail::imm_has_header(word);
  if (value > lci::detail::imm_value_max) fail("value over imm_value_max", word, nbits_tag, nbits_rcomp);
  if (lci::detail::make_imm(type, value, header) != word) {
    fail("make_imm(imm_type, imm_value, imm_has_header) is not the word", word, nbits_tag,
         nbits_rcomp);
  }
  if (!has_fields(type) || header) return;
  const msg_fields_t fields =
      lci::detail::unpack_imm_value(type, value, nbits_tag, nbits_rcomp);
  std::uint32_t packed = 0;
  if (!lci::detail::pack_imm_value(type, fields, nbits_tag, nbits_rcomp, &packed)) {
    fail("unpacked fields do not pack again", word, nbits_tag, nbits_rcomp);
  }
  if (packed != value) fail("unpacked fields pack to another value", word, nbits_tag, nbits_rcomp);
}

void check_fields(const std::uint8_t* bytes, unsigned nbits_tag, unsigned nbits_rcomp) {
  static constexpr msg_type_t types[] = {msg_type_t::eager_send, msg_type_t::eager_am,
                                         msg_type_t::put_signal, msg_type_t::get_signal};
  const unsigned tag_width = bytes[8] % 65;
  msg_fields_t fields;
  const auto tag = read_le<std::uint64_t>(bytes);
  fields.tag = tag_width == 64 ? tag : tag & ((std::uint64_t{1} << tag_width) - 1);
  fields.matching_engine_index = read_le<std::uint32_t>(bytes + 9);
  fields.rcomp = read_le<std::uint32_t>(bytes + 13);
  fields.policy = static_cast<lci::matching_policy_t>(bytes[17] & 3);
  const msg_type_t type = types[(bytes[17] >> 2) & 3];
  std::uint32_t value = 0;
  const bool packed =
      lci::detail::pack_imm_value(type, fields, nbits_tag, nbits_rcomp, &value);
  const std::uint32_t word = lci::detail::make_imm(type, value);
  if (packed != fields_fit(type, fields, nbits_tag, nbits_rcomp)) {
    fail(packed ? "packed fields that do not fit" : "refused fields that fit", word, nbits_tag,
         nbits_rcomp);
  }
  if (!packed) return;
  if (value > lci::detail::imm_value_max) fail("packed value over 28 bits", word, nbits_tag, nbits_rcomp);
  const msg_fields_t back = lci::detail::unpack_imm_value(
      lci::detail::imm_type(word), lci::detail::imm_value(word), nbits_tag, nbits_rcomp);
  if (!same_fields(type, fields, back)) fail("fields do not survive the immediate", word, nbits_tag, nbits_rcomp);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const unsigned nbits_tag = data[0] % 27;
  const unsigned nbits_rcomp = 1 + data[1] % 28;
  std::size_t records = (size - 2) / record_bytes;
  if (records > records_max) records = records_max;
  for (std::size_t i = 0; i < records; ++i) {
    const std::uint8_t* record = data + 2 + i * record_bytes;
    check_word(read_le<std::uint32_t>(record), nbits_tag, nbits_rcomp);
    check_fields(record + 4, nbits_tag, nbits_rcomp);
  }
  return 0;
}
