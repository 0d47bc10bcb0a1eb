// Matching keys (paper §3.3.2, §4.1.3): how a (source rank, tag) pair and a
// matching policy become the one 64-bit key the matching table compares.
//
// Layout of a built-in key (bit 63 is the most significant):
//
//   bits 63..62  policy (none = 0, rank_only = 1, tag_only = 2, rank_tag = 3)
//   rank_tag     rank in bits 61..32 (0 <= rank < 2^30), tag in bits 31..0
//                (tag < 2^32)
//   rank_only    rank in bits 30..0 (0 <= rank <= INT_MAX); the tag is ignored
//   tag_only     tag in bits 61..0 (tag < 2^62); the rank is ignored
//   none         one constant key; rank and tag are both ignored
//
// The encoding is lossless: under one policy, distinct (rank, tag) arguments
// that the policy looks at never give one key, and because the policy sits in
// the top two bits, keys of different policies never collide. An argument the
// policy looks at that does not fit its field is bad user input, not an
// internal error: make_key throws std::invalid_argument naming the argument,
// its value and the allowed range. Arguments a policy ignores are not checked
// (a wildcard receive may pass any rank).
//
// A user may replace the encoding with its own make_key_fn_t (paper §3.3.2:
// "more flexible matching policies"); key_maker_t holds that choice. With a
// user function, keys are whatever it returns, and it alone decides what
// matches what.
//
// Thread safety: everything here is a pure function. Blocking: never.
// Allocation: only when throwing (the message string).
#pragma once

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "lci/api/lci_types.hpp"

namespace lci::matching {

using make_key_fn_t = matching_entry_key_t (*)(int rank, tag_t tag,
                                               matching_policy_t policy);

// Field geometry of the built-in encoding (see the layout above).
inline constexpr unsigned key_policy_shift = 62;
inline constexpr unsigned key_rank_tag_rank_shift = 32;
inline constexpr std::uint64_t key_rank_tag_rank_max = (1ull << 30) - 1;
inline constexpr std::uint64_t key_rank_tag_tag_max = (1ull << 32) - 1;
inline constexpr std::uint64_t key_rank_only_rank_max = INT_MAX;
inline constexpr std::uint64_t key_tag_only_tag_max = (1ull << 62) - 1;

inline const char* matching_policy_name(matching_policy_t policy) {
  switch (policy) {
    case matching_policy_t::none:
      return "none";
    case matching_policy_t::rank_only:
      return "rank_only";
    case matching_policy_t::tag_only:
      return "tag_only";
    case matching_policy_t::rank_tag:
      return "rank_tag";
    case matching_policy_t::max:
      return "max";
  }
  return "unknown";
}

namespace detail {

// Cold path of make_key: builds the message and throws. Kept out of line so
// the range checks inline to a compare and a rarely taken branch.
[[noreturn]] __attribute__((noinline, cold)) inline void throw_key_argument(
    const char* argument, long long value, std::uint64_t limit,
    matching_policy_t policy) {
  throw std::invalid_argument(
      std::string("lci::matching::make_key: ") + argument + " = " +
      std::to_string(value) + " is out of range [0, " + std::to_string(limit) +
      "] for matching_policy_t::" + matching_policy_name(policy));
}

// The tag is unsigned 64-bit; print it as such.
[[noreturn]] __attribute__((noinline, cold)) inline void throw_tag_argument(
    tag_t tag, std::uint64_t limit, matching_policy_t policy) {
  throw std::invalid_argument(
      std::string("lci::matching::make_key: tag = ") + std::to_string(tag) +
      " is out of range [0, " + std::to_string(limit) +
      "] for matching_policy_t::" + matching_policy_name(policy));
}

inline std::uint64_t checked_rank(int rank, std::uint64_t limit,
                                  matching_policy_t policy) {
  if (rank < 0 || static_cast<std::uint64_t>(rank) > limit) {
    throw_key_argument("rank", rank, limit, policy);
  }
  return static_cast<std::uint64_t>(rank);
}

inline std::uint64_t checked_tag(tag_t tag, std::uint64_t limit,
                                 matching_policy_t policy) {
  if (tag > limit) throw_tag_argument(tag, limit, policy);
  return tag;
}

}  // namespace detail

// The built-in, lossless encoding. Throws std::invalid_argument when an
// argument the policy uses is out of its range, or when `policy` is not one of
// the four policies (`max` is none).
inline matching_entry_key_t make_key(int rank, tag_t tag,
                                     matching_policy_t policy) {
  const std::uint64_t policy_bits = static_cast<std::uint64_t>(policy)
                                    << key_policy_shift;
  switch (policy) {
    case matching_policy_t::none:
      return policy_bits;
    case matching_policy_t::rank_only:
      return policy_bits |
             detail::checked_rank(rank, key_rank_only_rank_max, policy);
    case matching_policy_t::tag_only:
      return policy_bits |
             detail::checked_tag(tag, key_tag_only_tag_max, policy);
    case matching_policy_t::rank_tag:
      return policy_bits |
             (detail::checked_rank(rank, key_rank_tag_rank_max, policy)
              << key_rank_tag_rank_shift) |
             detail::checked_tag(tag, key_rank_tag_tag_max, policy);
    case matching_policy_t::max:  // a boundary marker, no policy
      break;
  }
  throw std::invalid_argument("lci::matching::make_key: policy = " +
                              std::to_string(static_cast<long long>(policy)) +
                              " is not a matching_policy_t enumerator");
}

// Which key function to use: the user's if one was given, else make_key.
//
// Thread safety: immutable after construction; operator() may run
// concurrently. Blocking: never. Allocation: none (except make_key's throw).
class key_maker_t {
 public:
  key_maker_t() = default;
  explicit key_maker_t(make_key_fn_t user_fn) : user_fn_(user_fn) {}

  matching_entry_key_t operator()(int rank, tag_t tag,
                                  matching_policy_t policy) const {
    if (user_fn_ != nullptr) return user_fn_(rank, tag, policy);
    return make_key(rank, tag, policy);
  }

  bool has_user_fn() const { return user_fn_ != nullptr; }

 private:
  make_key_fn_t user_fn_ = nullptr;
};

}  // namespace lci::matching
