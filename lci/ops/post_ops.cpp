// The public posting operations (post_comm and its spellings post_send,
// post_recv, post_am, post_put, post_get): resolve the options into a
// post_args_t, its mode (post_mode.hpp) included, and run post_comm
// (protocol.hpp), waiting for the operation inside the post when the mode
// says so (waits_in_post).
#include <optional>
#include <stdexcept>

#include "lci/api/lci_generated.hpp"
#include "lci/comp/waiter.hpp"
#include "lci/matching/matching_key.hpp"
#include "lci/progress/progress.hpp"
#include "lci/protocol/protocol.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/post_mode.hpp"
#include "lci/runtime/resolve.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/assert.hpp"

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

// A mode that waits in the post (waits_in_post: allow_posted = false,
// COMP_NULL, COMP_NULL_RETRY, other than a receive that may retry): the
// post returns done, or retry where the mode returns it, never posted. An
// operation that completes later (a rendezvous, an RDMA read, a put over
// the inject size, a send the backlog takes) is posted with a synchronizer
// of its own and waited for here, progressing its device: upstream LCI's
// semantic, which its programs rely on (a COMP_NULL_RETRY get that returns
// done has its data in place; a COMP_NULL send's buffer is free when the
// post returns). Waiting progresses the device, so a completion handler
// cannot post this way (progress() throws there). `args` is the caller's,
// its comp replaced here (a copy cost as much as the rest of this
// function).
status_t post_waiting(detail::post_args_t& args, const common_options_t& options) {
  LCI_ASSERT(detail::waits_in_post(args.mode), "post_waiting for a post that does not wait");
  detail::waiter_impl_t waiter;
  args.comp = &waiter;
  const status_t posted = post_now(args, options);
  if (!posted.is_posted()) return posted;  // done, or retry (done_retry_waited)
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
  if (detail::waits_in_post(args.mode)) return post_waiting(args, options);
  return post_now(args, options);
}

// The one place that reads the program's allow_* options: with the
// completion object given, they become the post's mode (post_mode.hpp).
// Throws std::invalid_argument for the pair that leaves no mode.
detail::post_mode_t resolve_mode(comp_t local_comp, bool receive,
                                 const common_options_t& options) {
  detail::post_inputs_t inputs;
  inputs.comp = local_comp.is_empty()                    ? detail::comp_given_t::null
                : detail::is_comp_null_retry(local_comp) ? detail::comp_given_t::null_retry
                                                         : detail::comp_given_t::object;
  inputs.allow_done = options.allow_done;
  inputs.allow_posted = options.allow_posted;
  inputs.allow_retry = options.allow_retry;
  inputs.receive = receive;
  const std::optional<detail::post_mode_t> mode = detail::post_mode_of(inputs);
  if (!mode.has_value()) {
    throw std::invalid_argument(
        "allow_posted = false with allow_done = false: only retry would be left");
  }
  return *mode;
}

// `rmr`: the remote region of a put or get (empty for the others), which
// tells a receive from a get.
detail::post_args_t resolve(direction_t direction, int rank, void* local_buffer, std::size_t size,
                            comp_t local_comp, rmr_t rmr, const common_options_t& options) {
  detail::runtime_impl_t& runtime = detail::resolve_runtime(options.runtime);
  detail::post_args_t args;
  args.direction = direction;
  args.rank = rank;
  args.rmr = rmr;
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
  args.may_take_packet = true;
  args.mode = resolve_mode(local_comp, direction == direction_t::IN && rmr.is_empty(), options);
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
  detail::post_args_t args =
      resolve(direction, rank, local_buffer, size, local_comp, rmr_t{}, options);
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
  detail::post_args_t args =
      resolve(direction, rank, local_buffer, size, local_comp, rmr, options);
  args.remote_disp = remote_disp;
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
  detail::post_args_t args =
      resolve(direction, rank, local_buffer, size, local_comp, rmr, options);
  if (rmr.is_empty() && remote_comp == 0) args.matching_engine = matching_engine_of(options);
  args.remote_disp = remote_disp;
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
      resolve(direction_t::OUT, rank, local_buffer, size, local_comp, rmr_t{}, options);
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
