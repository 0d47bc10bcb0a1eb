// The public posting operations (post_comm and its spellings post_send,
// post_recv, post_am, post_put, post_get): resolve the options into a
// post_args_t and run post_comm (protocol.hpp), waiting for the operation
// inside the post when allow_posted is false.
#include <stdexcept>

#include "lci/api/lci_generated.hpp"
#include "lci/comp/waiter.hpp"
#include "lci/matching/matching_key.hpp"
#include "lci/progress/progress.hpp"
#include "lci/protocol/protocol.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/resolve.hpp"
#include "lci/runtime/runtime_impl.hpp"

namespace lci {

namespace {

struct common_options_t {
  device_t device;
  endpoint_t endpoint;
  packet_pool_t packet_pool;
  matching_engine_t matching_engine;
  comp_semantic_t comp_semantic;
  mr_t mr;
  const buffers_t* local_buffers;
  void* user_context;
  bool allow_done;
  bool allow_posted;
  bool allow_retry;
  runtime_t runtime;
};

// Runs the resolved operation: through its buffer list when it has one.
status_t post_now(const detail::post_args_t& args, const common_options_t& options) {
  if (options.local_buffers->empty()) return detail::post_comm(args);
  return detail::post_buffer_list(args, *options.local_buffers);
}

// allow_posted = false (the option, COMP_NULL, COMP_NULL_RETRY): the post
// returns done, or retry where allowed, never posted. An operation that
// completes later (a rendezvous, an RDMA read, a put over the inject size,
// a send the backlog takes) is posted with a synchronizer of its own and
// waited for here, progressing its device: upstream LCI's semantic, which
// its programs rely on (a COMP_NULL_RETRY get that returns done has its
// data in place; a COMP_NULL send's buffer is free when the post returns).
// A receive that may retry is the exception: it takes a message that has
// already arrived, or returns retry and leaves nothing posted (a caller
// that loops over it progresses anyway). Waiting progresses the device, so
// a completion handler cannot post this way (progress() throws there).
// `args` is the caller's, changed here (a copy cost as much as the rest of
// this function).
status_t post_waiting(detail::post_args_t& args, const common_options_t& options) {
  detail::waiter_impl_t waiter;
  args.comp = &waiter;
  args.allow_posted = true;
  const status_t posted = post_now(args, options);
  if (!posted.is_posted()) return posted;  // done, or retry (allow_retry)
  status_t status;
  detail::wait_progressing(waiter, &status, args.device, args.device->runtime()->host(),
                           "a post with allow_posted = false");
  // The operation's own outcome (done, or fatal); done_backlog tells the
  // caller it waited in the backlog first, as posted_backlog would have.
  if (status.is_done() && posted.error.errorcode == errorcode_t::posted_backlog) {
    status.error = errorcode_t::done_backlog;
  }
  return status;
}

// The tag bits a matching policy's key keeps (lci/matching/matching_key.hpp):
// all ones below a power of two. A policy whose key holds no tag, and the
// boundary marker (refused later), leave the tag as it is.
tag_t matched_tag_mask(matching_policy_t policy) {
  static_assert((matching::key_rank_tag_tag_max & (matching::key_rank_tag_tag_max + 1)) == 0 &&
                (matching::key_tag_only_tag_max & (matching::key_tag_only_tag_max + 1)) == 0);
  switch (policy) {
    case matching_policy_t::rank_tag: return matching::key_rank_tag_tag_max;
    case matching_policy_t::tag_only: return matching::key_tag_only_tag_max;
    default: return ~tag_t{0};
  }
}

// `args`: the caller's resolved operation; a waiting post changes it.
status_t post(detail::post_args_t& args, const common_options_t& options) {
  // A send's or receive's tag beyond what its matching key holds keeps its
  // low bits, as upstream's do (programs count tags up without wrapping
  // them); ANY_TAG stays the wildcard. An active message carries all 64
  // bits; a put or get with signal keeps its own limit, max_imm_tag.
  const bool wildcard = args.direction == direction_t::IN && args.tag == ANY_TAG;
  if (args.matching_engine != nullptr && !wildcard) {
    args.tag &= matched_tag_mask(args.matching_policy);
  }
  const bool receive = args.direction == direction_t::IN && args.rmr.is_empty();
  if (args.allow_posted || (receive && args.allow_retry)) return post_now(args, options);
  return post_waiting(args, options);
}

detail::post_args_t resolve(direction_t direction, int rank, void* local_buffer, std::size_t size,
                            comp_t local_comp, const common_options_t& options) {
  detail::runtime_impl_t& runtime = detail::resolve_runtime(options.runtime);
  detail::post_args_t args;
  args.direction = direction;
  args.rank = rank;
  args.buffer = local_buffer;
  args.size = size;
  args.device = &detail::resolve_device(runtime, options.device, options.endpoint);
  args.device->require_packet_pool("post_*");
  if (!options.packet_pool.is_empty() &&
      options.packet_pool.p_impl != args.device->packet_pool()) {
    throw std::invalid_argument("packet_pool: not the packet pool of the device");
  }
  // Only sends and receives match (AMs and RMA name no engine): the
  // callers that need one resolve it with matching_engine_of().
  args.comp = detail::resolve_comp(local_comp);
  args.comp_semantic = options.comp_semantic;
  if (const detail::mr_impl_t* mr = detail::resolve_mr("post_*", options.mr, args.device)) {
    args.mr = mr->net_mr;
  }
  args.user_context = options.user_context;
  args.allow_done = options.allow_done;
  args.allow_posted = options.allow_posted;
  args.allow_retry = options.allow_retry;
  args.may_take_packet = true;
  // COMP_NULL: nothing to signal and nothing to hand retry back through;
  // COMP_NULL_RETRY: the caller takes retry. Both wait for the operation
  // inside the post (post_waiting).
  if (local_comp.is_empty()) {
    args.allow_retry = false;
    args.allow_posted = false;
    return args;
  }
  if (detail::is_comp_null_retry(local_comp)) args.allow_posted = false;
  // This pair leaves only retry, which is no completion at all.
  if (!args.allow_posted && !args.allow_done) {
    throw std::invalid_argument(
        "allow_posted = false with allow_done = false: only retry would be left");
  }
  return args;
}

detail::matching_engine_impl_t* matching_engine_of(const common_options_t& options) {
  return &detail::resolve_matching_engine(detail::resolve_runtime(options.runtime),
                                          options.matching_engine);
}

// post_send / post_recv.
status_t post_matched(direction_t direction, int rank, void* local_buffer, std::size_t size,
                      tag_t tag, comp_t local_comp, matching_policy_t matching_policy,
                      const common_options_t& options) {
  detail::post_args_t args = resolve(direction, rank, local_buffer, size, local_comp, options);
  args.matching_engine = matching_engine_of(options);
  args.tag = tag;
  args.matching_policy = matching_policy;
  return post(args, options);
}

// post_put / post_get.
status_t post_rma(direction_t direction, int rank, void* local_buffer, std::size_t size,
                  comp_t local_comp, std::uintptr_t remote_disp, rmr_t rmr, tag_t tag,
                  rcomp_t remote_comp, const common_options_t& options) {
  if (rmr.is_empty()) {
    throw std::invalid_argument(direction == direction_t::OUT ? "post_put: rmr is empty"
                                                              : "post_get: rmr is empty");
  }
  detail::post_args_t args = resolve(direction, rank, local_buffer, size, local_comp, options);
  args.remote_disp = remote_disp;
  args.rmr = rmr;
  args.tag = tag;
  args.remote_comp = remote_comp;
  return post(args, options);
}

}  // namespace

status_t post_comm_x::call_impl(direction_t direction, int rank, void* local_buffer, size_t size,
                                comp_t local_comp, device_t device, endpoint_t endpoint,
                                packet_pool_t packet_pool, matching_engine_t matching_engine,
                                comp_semantic_t comp_semantic, mr_t mr,
                                const buffers_t& local_buffers, uintptr_t remote_disp, rmr_t rmr,
                                tag_t tag, rcomp_t remote_comp, void* user_context,
                                matching_policy_t matching_policy, bool allow_done,
                                bool allow_posted, bool allow_retry, runtime_t runtime) const {
  const common_options_t options{device,        endpoint,     packet_pool,    matching_engine,
                                 comp_semantic, mr,           &local_buffers, user_context,
                                 allow_done,    allow_posted, allow_retry,    runtime};
  detail::post_args_t args = resolve(direction, rank, local_buffer, size, local_comp, options);
  if (rmr.is_empty() && remote_comp == 0) args.matching_engine = matching_engine_of(options);
  args.remote_disp = remote_disp;
  args.rmr = rmr;
  args.tag = tag;
  args.remote_comp = remote_comp;
  args.matching_policy = matching_policy;
  return post(args, options);
}

status_t post_am_x::call_impl(int rank, void* local_buffer, size_t size, comp_t local_comp,
                              rcomp_t remote_comp, device_t device, endpoint_t endpoint,
                              packet_pool_t packet_pool, comp_semantic_t comp_semantic, mr_t mr,
                              const buffers_t& local_buffers, tag_t tag, void* user_context,
                              bool allow_done, bool allow_posted, bool allow_retry,
                              runtime_t runtime) const {
  if (remote_comp == 0) throw std::invalid_argument("post_am: remote_comp = 0 (none)");
  const common_options_t options{device,        endpoint,     packet_pool,    matching_engine_t{},
                                 comp_semantic, mr,           &local_buffers, user_context,
                                 allow_done,    allow_posted, allow_retry,    runtime};
  detail::post_args_t args =
      resolve(direction_t::OUT, rank, local_buffer, size, local_comp, options);
  args.tag = tag;
  args.remote_comp = remote_comp;
  return post(args, options);
}

status_t post_send_x::call_impl(int rank, void* local_buffer, size_t size, tag_t tag,
                                comp_t local_comp, device_t device, endpoint_t endpoint,
                                packet_pool_t packet_pool, matching_engine_t matching_engine,
                                comp_semantic_t comp_semantic, mr_t mr,
                                const buffers_t& local_buffers, void* user_context,
                                matching_policy_t matching_policy, bool allow_done,
                                bool allow_posted, bool allow_retry, runtime_t runtime) const {
  return post_matched(
      direction_t::OUT, rank, local_buffer, size, tag, local_comp, matching_policy,
      {device, endpoint, packet_pool, matching_engine, comp_semantic, mr, &local_buffers,
       user_context, allow_done, allow_posted, allow_retry, runtime});
}

status_t post_recv_x::call_impl(int rank, void* local_buffer, size_t size, tag_t tag,
                                comp_t local_comp, device_t device, endpoint_t endpoint,
                                packet_pool_t packet_pool, matching_engine_t matching_engine,
                                comp_semantic_t comp_semantic, mr_t mr,
                                const buffers_t& local_buffers, void* user_context,
                                matching_policy_t matching_policy, bool allow_done,
                                bool allow_posted, bool allow_retry, runtime_t runtime) const {
  return post_matched(
      direction_t::IN, rank, local_buffer, size, tag, local_comp, matching_policy,
      {device, endpoint, packet_pool, matching_engine, comp_semantic, mr, &local_buffers,
       user_context, allow_done, allow_posted, allow_retry, runtime});
}

status_t post_put_x::call_impl(int rank, void* local_buffer, size_t size, comp_t local_comp,
                               uintptr_t remote_disp, rmr_t rmr, device_t device,
                               endpoint_t endpoint, packet_pool_t packet_pool,
                               comp_semantic_t comp_semantic, mr_t mr,
                               const buffers_t& local_buffers, tag_t tag, rcomp_t remote_comp,
                               void* user_context, bool allow_done, bool allow_posted,
                               bool allow_retry, runtime_t runtime) const {
  return post_rma(direction_t::OUT, rank, local_buffer, size, local_comp, remote_disp, rmr, tag,
                  remote_comp,
                  {device, endpoint, packet_pool, matching_engine_t{}, comp_semantic, mr,
                   &local_buffers, user_context, allow_done, allow_posted, allow_retry, runtime});
}

status_t post_get_x::call_impl(int rank, void* local_buffer, size_t size, comp_t local_comp,
                               uintptr_t remote_disp, rmr_t rmr, device_t device,
                               endpoint_t endpoint, packet_pool_t packet_pool,
                               comp_semantic_t comp_semantic, mr_t mr,
                               const buffers_t& local_buffers, tag_t tag, rcomp_t remote_comp,
                               void* user_context, bool allow_done, bool allow_posted,
                               bool allow_retry, runtime_t runtime) const {
  return post_rma(direction_t::IN, rank, local_buffer, size, local_comp, remote_disp, rmr, tag,
                  remote_comp,
                  {device, endpoint, packet_pool, matching_engine_t{}, comp_semantic, mr,
                   &local_buffers, user_context, allow_done, allow_posted, allow_retry, runtime});
}

}  // namespace lci
