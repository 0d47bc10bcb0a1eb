// post_args_t: one operation as the posting functions hand it to the
// protocols (lci/protocol/protocol.hpp), every default resolved; and the
// record a device keeps for a post its backlog took over (device_pools_t).
// Plain data: the device's pools hold deferred posts, so it lives below
// the protocols that read it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/backend.hpp"
#include "lci/api/lci_types.hpp"

namespace lci::detail {

class device_impl_t;
class matching_engine_impl_t;
class comp_impl_t;

// One operation, with every default resolved.
struct post_args_t {
  direction_t direction = direction_t::OUT;
  int rank = 0;
  void* buffer = nullptr;
  std::size_t size = 0;
  comp_impl_t* comp = nullptr;  // nullptr: COMP_NULL / COMP_NULL_RETRY
  device_impl_t* device = nullptr;
  matching_engine_impl_t* matching_engine = nullptr;
  comp_semantic_t comp_semantic = comp_semantic_t::memory;
  // The program's registration; empty (no backend handle): the runtime
  // registers what it needs, which is also what a registration of 0 bytes
  // gives the network (has_mr() tells the two apart).
  backend::net_mr_t mr;
  std::uintptr_t remote_disp = 0;
  rmr_t rmr;
  tag_t tag = 0;
  rcomp_t remote_comp = 0;
  void* user_context = nullptr;
  matching_policy_t matching_policy = matching_policy_t::rank_tag;
  bool allow_done = true;
  // false reaches the protocols only for a receive that may retry
  // (at_once_only()): post_ops.cpp waits for every other operation posted
  // with allow_posted = false (COMP_NULL, COMP_NULL_RETRY) itself.
  bool allow_posted = true;
  bool allow_retry = true;
  // A program's own post (post_ops.cpp): an outgoing one takes its buffer
  // over when that is a packet (takes_upacket in protocol.hpp). A
  // collective posts its buffers several times, so it never gives one away.
  bool may_take_packet = false;
  // The program gave a registration (mr option), possibly of 0 bytes: it
  // has its base, where none given is all empty.
  bool has_mr() const { return mr.base != nullptr; }
};

// A post that allow_retry(false) (or COMP_NULL) sent to the backlog
// (post_comm): its arguments, from the device's pool (device_pools_t). It
// always has a completion object (COMP_NULL's is the post's own, which
// post_ops.cpp waits for), so the caller's buffer stays in use until that
// is signalled: no copy of the payload is needed.
struct deferred_post_t {
  post_args_t args;
};

// A receive that takes an arrived message (done) or leaves nothing behind
// (retry): allow_posted(false) or COMP_NULL_RETRY.
inline bool at_once_only(const post_args_t& args) {
  return !args.allow_posted && args.allow_retry;
}

}  // namespace lci::detail
