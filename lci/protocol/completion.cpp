#include <stdexcept>
#include <string>

#include "lci/comp/comp_impl.hpp"
#include "lci/protocol/protocol.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/post_mode.hpp"
#include "lci/runtime/runtime_impl.hpp"

namespace lci::detail {

status_t status_of(const post_args_t& args) {
  status_t status;
  status.rank = args.rank;
  status.buffer = args.buffer;
  status.size = args.size;
  status.tag = args.tag;
  status.user_context = args.user_context;
  return status;
}

request_t* new_request(const post_args_t& args, request_kind_t kind) {
  request_t* request = take_protocol_request(*args.device);
  if (request == nullptr) return nullptr;
  state_of(request).kind = kind;
  request->comp = args.comp;
  request->status = status_of(args);
  request->mr = args.mr;
  // The buffer is a packet the operation takes over: back to the pool
  // when the request completes (complete_request), unless the post gives
  // the request back unposted.
  if (takes_upacket(args)) request->packet = args.buffer;
  // A receive is in flight only from its RTR (start_rtr()).
  if (kind != request_kind_t::recv) args.device->accounting().mark_in_flight(request);
  return request;
}

status_t finish_at_once(const post_args_t& args, status_t status) {
  status.error = errorcode_t::done;
  if (returns_done(args.mode)) return status;
  LCI_ASSERT(args.comp != nullptr, "a post that signals at once has no completion object");
  args.comp->signal(status);
  return status_t(errorcode_t::posted);
}

bool takes_upacket(const post_args_t& args) {
  return args.may_take_packet && args.direction == direction_t::OUT && args.buffer != nullptr &&
         args.device->packet_pool()->pool.owns(args.buffer);
}

status_t finish_in_post(const post_args_t& args, status_t status) {
  const status_t result = finish_at_once(args, status);
  if (takes_upacket(args)) args.device->packet_pool()->pool.put(args.buffer);
  return result;
}

void throw_unregistered_rcomp(const char* what, int rank, rcomp_t rcomp,
                              const char* consequence) {
  throw std::runtime_error("lci: " + std::string(what) + " from rank " + std::to_string(rank) +
                           " names remote_comp " + std::to_string(rcomp) +
                           ", which is not registered here" + consequence);
}

void complete_request(request_t* request, errorcode_t code) {
  // Only the thread holding it finishes it: not while a table or the
  // network still names it.
  LCI_ASSERT(request->owner == request_owner_t::thread,
             "a request completed while another party holds it");
  device_impl_t& device = *request->device;
  device.release_owned_mr(request);
  if (request->packet != nullptr) device.packet_pool()->pool.put(request->packet);
  comp_impl_t* comp = request->comp;
  status_t status = request->status;
  status.error = code;
  if (request->pinned != nullptr) {
    // The target's side of a checked put or get (rma_checked.cpp): its
    // remote completion hears what a direct one's would (handle_signal):
    // no buffer, and a get's size 0.
    status.buffer = nullptr;
    if (state_of(request).kind == request_kind_t::send_rdv) status.size = 0;
    device_impl_t::release_pin(request);
  }
  // Back in the pool before the signal (a handler that posts may need it),
  // but counted in flight until the signal has run: a thread told
  // "drained" (test_drained) then finds the completion object signalled,
  // and may free it.
  util::atomic<std::int64_t>* in_flight = request->in_flight.detach();
  device_impl_t::give_back(request);
  if (comp != nullptr) comp->signal(status);
  in_flight_mark_t::end(in_flight);
}

}  // namespace lci::detail
