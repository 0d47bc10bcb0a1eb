#include "lci/wire/immediate.hpp"

#include "lci/util/assert.hpp"

namespace lci::detail {

namespace {
constexpr unsigned policy_bits = 2;

bool fits(std::uint64_t value, unsigned bits) { return bits >= 64 || (value >> bits) == 0; }
std::uint32_t low_bits(std::uint32_t value, unsigned bits) {
  return bits >= 32 ? value : value & ((1u << bits) - 1);
}
}  // namespace

bool pack_imm_value(msg_type_t type, const msg_fields_t& fields, unsigned nbits_tag,
                    unsigned nbits_rcomp, std::uint32_t* value) {
  switch (type) {
    case msg_type_t::eager_send: {
      LCI_ASSERT(nbits_tag + policy_bits <= imm_value_bits, "imm_nbits_tag too large");
      const unsigned engine_bits = imm_value_bits - policy_bits - nbits_tag;
      if (!fits(fields.tag, nbits_tag) || !fits(fields.matching_engine_index, engine_bits)) {
        return false;
      }
      *value = static_cast<std::uint32_t>(fields.tag) |
               (fields.matching_engine_index << nbits_tag) |
               (static_cast<std::uint32_t>(fields.policy) << (imm_value_bits - policy_bits));
      return true;
    }
    case msg_type_t::eager_am:
    case msg_type_t::put_signal:
    case msg_type_t::get_signal: {
      LCI_ASSERT(nbits_rcomp <= imm_value_bits, "imm_nbits_rcomp too large");
      if (!fits(fields.rcomp, nbits_rcomp) || !fits(fields.tag, imm_value_bits - nbits_rcomp)) {
        return false;
      }
      *value = fields.rcomp | (static_cast<std::uint32_t>(fields.tag) << nbits_rcomp);
      return true;
    }
    default:
      LCI_ASSERT(false, "pack_imm_value: type without fields");
      return false;
  }
}

msg_fields_t unpack_imm_value(msg_type_t type, std::uint32_t value, unsigned nbits_tag,
                              unsigned nbits_rcomp) {
  msg_fields_t fields;
  if (type == msg_type_t::eager_send) {
    const unsigned engine_bits = imm_value_bits - policy_bits - nbits_tag;
    fields.tag = low_bits(value, nbits_tag);
    fields.matching_engine_index = low_bits(value >> nbits_tag, engine_bits);
    fields.policy = static_cast<matching_policy_t>(value >> (imm_value_bits - policy_bits));
  } else {
    fields.rcomp = low_bits(value, nbits_rcomp);
    fields.tag = value >> nbits_rcomp;
  }
  return fields;
}

eager_header_t make_eager_header(const msg_fields_t& fields) {
  eager_header_t header{};
  header.tag = fields.tag;
  header.matching_engine_index = fields.matching_engine_index;
  header.rcomp = fields.rcomp;
  header.policy = static_cast<std::uint8_t>(fields.policy);
  return header;
}

msg_fields_t fields_of(const eager_header_t& header) {
  msg_fields_t fields;
  fields.tag = header.tag;
  fields.matching_engine_index = header.matching_engine_index;
  fields.rcomp = header.rcomp;
  fields.policy = static_cast<matching_policy_t>(header.policy);
  return fields;
}

}  // namespace lci::detail
