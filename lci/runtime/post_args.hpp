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
#include "lci/runtime/post_mode.hpp"

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
  // The completion object signalled when the operation finishes later;
  // nullptr only for a receive whose mode takes an arrived message only
  // (COMP_NULL_RETRY), which signals nothing.
  comp_impl_t* comp = nullptr;
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
  // What the post may answer its caller (post_mode.hpp): every layer
  // reads this, never the program's allow_* options.
  post_mode_t mode = post_mode_t::done_posted_retry;
  // A program's own post (post_ops.cpp): an outgoing one takes its buffer
  // over when that is a packet (takes_upacket in protocol.hpp). A
  // collective posts its buffers several times, so it never gives one away.
  bool may_take_packet = false;
  // The program gave a registration (mr option), possibly of 0 bytes: it
  // has its base, where none given is all empty.
  bool has_mr() const { return mr.base != nullptr; }
};

// A post whose mode queues a refusal (queues_refusal) that the network
// refused (post_comm): its arguments, from the device's pool
// (device_pools_t), in the mode of a backlog replay. It always has a
// completion object (a waiting post's is the post's own, which
// post_ops.cpp waits for), so the caller's buffer stays in use until that
// is signalled: no copy of the payload is needed.
struct deferred_post_t {
  post_args_t args;
};

}  // namespace lci::detail
