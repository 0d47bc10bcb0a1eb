#include <cstddef>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "lci/protocol/protocol.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/runtime_impl.hpp"

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
  if (!args.mr.is_empty()) {
    const auto begin = reinterpret_cast<std::uintptr_t>(args.buffer);
    const auto mr_begin = reinterpret_cast<std::uintptr_t>(args.mr.base);
    if (begin < mr_begin || begin + args.size > mr_begin + args.mr.size) {
      throw std::invalid_argument("mr: does not cover local_buffer .. local_buffer + size");
    }
  }
}

}  // namespace

status_t post_comm(const post_args_t& args) {
  check_args(args);
  const bool has_rmr = !args.rmr.is_empty();
  auto run = [has_rmr](const post_args_t& a) -> status_t {
    if (has_rmr) return a.direction == direction_t::OUT ? post_put(a) : post_get(a);
    if (a.direction == direction_t::IN) return post_recv_matched(a);
    return post_send_or_am(a, a.remote_comp != 0);
  };
  status_t status = run(args);
  if (!status.is_retry() || args.allow_retry) return status;
  // Retry is not allowed: the backlog re-runs the operation until the
  // network takes it; its completion object is signalled as usual.
  post_args_t deferred = args;
  deferred.allow_done = false;
  deferred.allow_posted = true;  // the backlog completes it later anyway
  deferred.allow_retry = true;
  // A COMP_NULL send or active message (eager: a zero-copy one was refused
  // above) is fire-and-forget: nothing will tell the caller when the backlog
  // is done with the buffer, so the step keeps a copy and the buffer is the
  // caller's again when this returns. (A COMP_NULL put or get has no such
  // promise: its buffer is the caller's once test_drained() says so.)
  std::shared_ptr<std::byte[]> payload;
  if (args.comp == nullptr && args.direction == direction_t::OUT && !has_rmr && args.size > 0) {
    payload.reset(new std::byte[args.size]);
    std::memcpy(payload.get(), args.buffer, args.size);
    deferred.buffer = payload.get();
    deferred.mr = backend::net_mr_t{};  // the copy is not in the caller's registration
  }
  const error_t error = args.device->run_or_backlog([deferred, run, payload]() -> error_t {
    return run(deferred).error;
  });
  return status_t(error.is_done() ? errorcode_t::posted : errorcode_t::posted_backlog);
}

}  // namespace lci::detail
