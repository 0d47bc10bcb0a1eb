#include <cstddef>
#include <stdexcept>
#include <string>

#include "lci/protocol/protocol.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/post_mode.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/log.hpp"

namespace lci::detail {

namespace {

void check_args(const post_args_t& args) {
  runtime_impl_t& runtime = *args.device->runtime();
  const bool has_rmr = !args.rmr.is_empty();
  if (args.direction == direction_t::IN && !has_rmr && args.remote_comp != 0) {
    throw std::invalid_argument(
        "post_comm: direction IN with remote_comp = " + std::to_string(args.remote_comp) +
        " and no rmr is not a valid operation (Table 1: a receive takes no remote completion)");
  }
  const bool wildcard_rank = args.direction == direction_t::IN && !has_rmr &&
                             args.rank == ANY_SOURCE;
  if (!wildcard_rank) {
    runtime.check_rank(args.rank, "rank");
    runtime.check_peer_alive(args.rank);
  }
  // A policy travels in two bits of the immediate data: anything past the
  // four would arrive as another policy.
  if (args.matching_policy >= matching_policy_t::max) {
    throw std::invalid_argument("matching_policy = " +
                                std::to_string(static_cast<int>(args.matching_policy)) +
                                ": not a matching policy (max is a boundary marker)");
  }
  if (args.buffer == nullptr && args.size > 0) {
    throw std::invalid_argument("local_buffer = nullptr with size = " + std::to_string(args.size));
  }
  if (static_cast<std::int64_t>(args.size) < 0) {
    throw std::invalid_argument("size = " + std::to_string(args.size) +
                                ": negative or overflowing");
  }
  const std::size_t max_msg = args.device->net().attr().max_msg_size;
  if (args.size > max_msg) {
    throw std::invalid_argument("size = " + std::to_string(args.size) +
                                ": over the network's max_msg_size " + std::to_string(max_msg));
  }
  if (args.has_mr()) {
    const auto begin = reinterpret_cast<std::uintptr_t>(args.buffer);
    const auto mr_begin = reinterpret_cast<std::uintptr_t>(args.mr.base);
    if (begin < mr_begin || begin + args.size > mr_begin + args.mr.size) {
      throw std::invalid_argument("mr: does not cover local_buffer .. local_buffer + size");
    }
  }
}

// Table 1: which protocol runs the operation.
status_t run_operation(const post_args_t& args) {
  if (!args.rmr.is_empty()) {
    return args.direction == direction_t::OUT ? post_put(args) : post_get(args);
  }
  if (args.direction == direction_t::IN) return post_recv_matched(args);
  return post_send_or_am(args, args.remote_comp != 0);
}

// The record of a post that left the backlog (ran to an outcome or threw).
void release_deferred(device_impl_t& device, deferred_post_t* post) { device.give_back(post); }

}  // namespace

status_t post_comm(const post_args_t& args) {
  check_args(args);
  if (takes_arrived_only(args.mode)) {
    LCI_ASSERT(args.direction == direction_t::IN && args.rmr.is_empty(),
               "an operation other than a receive takes only what has arrived");
  }
  if (!returns_done(args.mode) || queues_refusal(args.mode)) {
    LCI_ASSERT(args.comp != nullptr, "a post that signals or queues has no completion object");
  }
  status_t status = run_operation(args);
  LCI_LOG(debug, "post", "rank %d: %s %s rank %d, %zu bytes, tag %llu%s: %s\n",
          args.device->runtime()->rank_me(), args.rmr.is_empty() ? "message" : "rma",
          args.direction == direction_t::OUT ? "to" : "from", args.rank, args.size,
          static_cast<unsigned long long>(args.tag), args.remote_comp != 0 ? " (am)" : "",
          status.is_done() ? "done" : status.is_posted() ? "posted" : "retry");
  if (!status.is_retry() || !queues_refusal(args.mode)) return status;
  // The backlog re-runs the operation until the network takes it; its
  // completion object is signalled as usual.
  LCI_ASSERT(args.comp != nullptr, "an operation without a completion object went to the backlog");
  device_impl_t& device = *args.device;
  deferred_post_t* post = device.take_deferred_post();
  post->args = args;
  post_inputs_t replay;  // its caller has returned: the outcome is only signalled
  replay.origin = post_origin_t::backlog;
  post->args.mode = *post_mode_of(replay);
  device_impl_t* const device_ptr = &device;
  const error_t error = device.run_or_backlog([device_ptr, post]() -> error_t {
    error_t outcome;
    try {
      outcome = run_operation(post->args).error;
    } catch (...) {
      release_deferred(*device_ptr, post);  // the exception is its report
      throw;
    }
    if (!outcome.is_retry()) release_deferred(*device_ptr, post);
    return outcome;
  });
  return status_t(error.is_done() ? errorcode_t::posted : errorcode_t::posted_backlog);
}

}  // namespace lci::detail
