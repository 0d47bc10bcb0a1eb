// libFuzzer target for the matching engine (lci/matching/): the input bytes
// are a stream of inserts run on a tiny table_t and on the predicate-based
// reference model of tests/matching/matching_reference_model.hpp; any
// disagreement aborts.
//
// Input format:
//   byte 0   key mode: % 6 -> rank_tag, rank_only, tag_only, none, mixed
//            built-in policies, user key function (tag % 3)
//   byte 1   table shape: buckets_count = 1 << (b & 3) (1..8),
//            overflow_nodes_max = (b >> 2) & 7 (0..7)
//   byte i   one insert: bit 0 type (0 send, 1 recv), bits 1-2 rank (0..3),
//            bits 3-5 tag (0..7), bits 6-7 policy (mode mixed only)
// At most ops_max inserts are read; the rest of the input is ignored.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/matching/matching_reference_model.hpp"

namespace {

using lci::matching::testing::driver_t;
using lci::matching::testing::key_mode_name;
using lci::matching::testing::key_mode_t;
using lci::matching::testing::key_modes_count;
using lci::matching::testing::op_t;

constexpr std::size_t ops_max = 1024;

op_t decode_op(std::uint8_t byte) {
  op_t op;
  op.type = (byte & 1) != 0 ? lci::matching_entry_type_t::recv
                            : lci::matching_entry_type_t::send;
  op.rank = (byte >> 1) & 3;
  op.tag = (byte >> 3) & 7;
  op.policy = static_cast<lci::matching_policy_t>((byte >> 6) & 3);
  return op;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const auto mode = static_cast<key_mode_t>(data[0] % key_modes_count);
  const std::size_t buckets_count = std::size_t{1} << (data[1] & 3);
  const std::size_t nodes_max = (data[1] >> 2) & 7;
  driver_t driver(mode, buckets_count, nodes_max);
  const std::size_t end = size - 2 > ops_max ? 2 + ops_max : size;
  for (std::size_t i = 2; i < end; ++i) {
    const std::string error = driver.step(decode_op(data[i]));
    if (!error.empty()) {
      std::fprintf(stderr,
                   "matching_fuzz: table and model disagree (mode %s, %zu "
                   "buckets, %zu overflow nodes): %s\n",
                   key_mode_name(mode), buckets_count, nodes_max, error.c_str());
      std::abort();
    }
  }
  return 0;
}
