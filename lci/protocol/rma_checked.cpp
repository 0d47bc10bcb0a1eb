// Checked RMA: a put or get that the target checks against its own
// registrations before any byte moves. For networks where an access with a
// key the target does not honour breaks more than that access
// (net_device_attr_t::bad_rkey_fails_alone false: ofi's shm stalls the
// endpoint, tcp drops the connection with what it held), so that a stale
// key fails only its own operation there too. It is a rendezvous whose
// matching is that check (rendezvous.cpp does the moving):
//   put: RTS (rma_rts_t, kind put) -> the target pins the registration and
//        answers an RTR naming it -> the initiator writes (or copies through
//        packets) -> FIN or the write's immediate -> the target unpins and
//        signals the remote completion, if any. A put that fits a packet
//        behind its RTS travels inline: the target checks, copies, signals
//        and answers an empty RTR (copy mode, nothing to copy) at once;
//   get: RTS (kind get, carrying the initiator's receive as an RTR would
//        offer it) -> the target pins and writes into that receive -> FIN ->
//        the get completes; the target's write completion unpins and
//        signals the remote completion, if any. A get that fits one chunk
//        offers its receive in copy mode (no registration): the target's
//        one chunk completes it.
// A check that fails (no live registration of the target's device starts
// at that base with that key, or the access ends past it) answers with a
// refused RTR: the operation completes with errorcode_t::fatal, nothing is
// thrown, and nothing else is touched. deregister_memory waits for the
// pinned accesses (lci/ops/runtime_ops.cpp), so none moves a byte after it
// returns. The price: a round trip before the data, and the target's
// progress (which ofi's shm and tcp need for RMA anyway).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "lci/comp/comp_impl.hpp"
#include "lci/protocol/protocol.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/assert.hpp"

namespace lci::detail {

namespace {

// The RTS of a checked access: the region and offset checked_target()
// addressed; the target checks them against its registrations.
rma_rts_t addressed(const net_target_t& target, rts_kind_t kind) {
  rma_rts_t message{};
  message.rts.kind = kind;
  message.base = target.rmr.base;
  message.rkey = target.rmr.rkey;
  message.offset = target.offset;
  return message;
}

}  // namespace

status_t post_checked_put(const post_args_t& args, const net_target_t& target) {
  rma_rts_t message = addressed(target, rts_kind_t::put);
  return post_rts(args, rts_kind_t::put, &message);
}

status_t post_checked_get(const post_args_t& args, const net_target_t& target) {
  device_impl_t& device = *args.device;
  const rma_rts_t addressed_message = addressed(target, rts_kind_t::get);
  request_t* recv = new_request(args, request_kind_t::recv);
  if (recv == nullptr) return status_t(errorcode_t::retry_nomem);
  recv->capacity = args.size;
  device.accounting().mark_in_flight(recv);
  runtime_impl_t& runtime = *device.runtime();
  // Until its data lands the get waits on the target alone.
  if (!runtime.watch(recv)) {
    device_impl_t::give_back(recv);
    runtime.check_peer_alive(args.rank);  // throws: it died since check_args
  }
  // The step's captures are few (backlog_step_t's storage); the rest of the
  // RTS is the request's status.
  const std::uint64_t base = addressed_message.base;
  const std::uint64_t rkey = addressed_message.rkey;
  const std::uint64_t offset = addressed_message.offset;
  const rcomp_t rcomp = args.remote_comp;
  device_impl_t* device_ptr = &device;
  (void)device.run_or_backlog([device_ptr, recv, base, rkey, offset, rcomp]() -> error_t {
    device_impl_t& d = *device_ptr;
    if (d.runtime()->is_failed(recv)) return errorcode_t::done;  // the target died
    rma_rts_t message{};
    message.rts.kind = rts_kind_t::get;
    message.rts.size = recv->status.size;
    message.rts.tag = recv->status.tag;
    message.rts.rcomp = rcomp;
    message.base = base;
    message.rkey = rkey;
    message.offset = offset;
    // One chunk, or nothing to write (the target answers with a FIN): no
    // registration.
    // Equivalent mutants: bound. At equality the get would offer its buffer
    // for a write (or copy mode, when no registration is free) instead of one
    // chunk: the same bytes land (tools/mutate_records/2026-11-28-runs-35-59.md, runs 42-50).
    if (recv->status.size <= d.packet_payload_max() - sizeof(rdv_chunk_t)) {
      if (state_of(recv).rdv_id == rdv_id_none) {
        hand_over(recv, request_owner_t::thread, request_owner_t::rdv_table);
        state_of(recv).rdv_id = d.rdv_table().add(recv);
      }
      message.receive = rtr_t{};
      message.receive.mode = rtr_mode_t::copy;
      message.receive.size = recv->status.size;
      message.receive.rdv_id = state_of(recv).rdv_id;
    } else {
      const error_t error = offer_receive(d, recv, &message.receive);
      if (!error.is_done()) return error;
    }
    message.rts.send_request = state_of(recv).rdv_id;
    // After this send succeeds the target may write and complete the get
    // at once: `recv` must not be touched again here.
    return send_control(d, recv->status.rank, &message, sizeof(message),
                        make_imm(msg_type_t::rts, 0));
  });
  return status_t(errorcode_t::posted);
}

namespace {

// The target's remote completion for a checked put or get from `rank`
// (nullptr: none asked for, or one registered as COMP_NULL). Throws std::runtime_error, after refusing the
// access, for one nobody registered here.
comp_impl_t* remote_comp_of(device_impl_t& device, int rank, const rts_t& rts) {
  if (rts.rcomp == 0) return nullptr;
  comp_impl_t* comp = device.runtime()->rcomp_target(rts.rcomp);
  if (comp == nullptr) {
    answer_rts(device, rank, rts, rtr_mode_t::refused);
    throw_unregistered_rcomp(rts.kind == rts_kind_t::put ? "a put" : "a get", rank, rts.rcomp,
                             " (the access was refused)");
  }
  // Registered as COMP_NULL: the access goes ahead with nothing signalled.
  return comp == discard_comp() ? nullptr : comp;
}

}  // namespace

void handle_inline_put(device_impl_t& device, int rank, const rma_rts_t& message,
                       const void* data) {
  const rts_t& rts = message.rts;
  LCI_ASSERT(rts.kind == rts_kind_t::put && rts.size > 0, "inline data of no put");
  comp_impl_t* comp = remote_comp_of(device, rank, rts);
  mr_impl_t* mr = device.runtime()->pin_registration(device, message.base, message.rkey,
                                                      message.offset, rts.size);
  if (mr == nullptr) {
    answer_rts(device, rank, rts, rtr_mode_t::refused);
    return;
  }
  std::memcpy(static_cast<std::byte*>(mr->net_mr.base) + message.offset, data, rts.size);
  mr->unpin();
  answer_rts(device, rank, rts, rtr_mode_t::copy);  // the put completes on arrival
  if (comp != nullptr) {
    status_t status;  // as a direct put's signal (handle_signal)
    status.error = errorcode_t::done;
    status.rank = rank;
    status.tag = rts.tag;
    status.size = rts.size;
    comp->signal(status);
  }
}

bool handle_rma_rts(device_impl_t& device, int rank, const rma_rts_t& message) {
  const rts_t& rts = message.rts;
  const bool is_put = rts.kind == rts_kind_t::put;
  LCI_ASSERT(is_put || rts.kind == rts_kind_t::get, "a message's RTS handled as RMA");
  runtime_impl_t& runtime = *device.runtime();
  comp_impl_t* comp = remote_comp_of(device, rank, rts);
  request_t* request = take_protocol_request(device);
  if (request == nullptr) return false;
  mr_impl_t* mr =
      runtime.pin_registration(device, message.base, message.rkey, message.offset, rts.size);
  if (mr == nullptr) {
    device_impl_t::give_back(request);
    answer_rts(device, rank, rts, rtr_mode_t::refused);
    return true;
  }
  request->pinned = mr;
  request->comp = comp;
  request->mr = mr->net_mr;
  request->status.rank = rank;
  request->status.tag = rts.tag;
  request->status.size = rts.size;
  request->status.buffer = static_cast<std::byte*>(mr->net_mr.base) + message.offset;
  if (rts.size == 0) {  // checked, and nothing to move: done here and there
    state_of(request).kind = is_put ? request_kind_t::recv : request_kind_t::send_rdv;
    complete_request(request, errorcode_t::done);
    if (is_put) {
      answer_rts(device, rank, rts, rtr_mode_t::copy);
    } else {
      send_fin(device, rank, message.receive.rdv_id);
    }
    return true;
  }
  if (is_put) {
    state_of(request).kind = request_kind_t::recv;
    request->capacity = rts.size;
    start_rtr(device, request, rts);  // names the pinned registration: no registering
  } else {
    state_of(request).kind = request_kind_t::send_rdv;
    device.accounting().mark_in_flight(request);
    start_write(device, request, rank, message.receive);
  }
  return true;
}

}  // namespace lci::detail
