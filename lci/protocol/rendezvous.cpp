// Zero-copy rendezvous (paper §4.3): RTS -> match (send) or allocate (AM) ->
// RTR carrying the target buffer's remote key -> RDMA write -> FIN, or, with
// the write-with-immediate protocol, a write whose immediate data completes
// the receive and needs no FIN.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "lci/comp/comp_impl.hpp"
#include "lci/protocol/protocol.hpp"
#include "lci/runtime/allocator.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/runtime_impl.hpp"

namespace lci::detail {

status_t post_rts(const post_args_t& args, bool is_am) {
  device_impl_t& device = *args.device;
  // The send buffer is registered when the RTR arrives (handle_rtr), not
  // here: a send waiting for its RTR would otherwise hold a registration
  // that only the peer's progress frees (docs/design/runtime.md,
  // "Registrations").
  request_t* request = new_request(args, request_kind_t::send_rdv);
  if (request == nullptr) return status_t(errorcode_t::retry_nomem);
  runtime_impl_t& runtime = *device.runtime();
  // Between its RTS and the RTR only the peer holds the request: watched, so
  // that the peer's crash fails it.
  if (!runtime.watch(request)) {
    device_impl_t::give_back(request);
    runtime.check_peer_alive(args.rank);  // throws: it died since check_args
  }
  // The RTR names the send by this id, not by its address: a peer's bytes
  // are looked up in the table, never dereferenced (handle_rtr()).
  const std::uint32_t send_id = device.rdv_table().add(request);
  rts_t rts{};
  rts.send_request = send_id;
  rts.size = args.size;
  rts.tag = args.tag;
  rts.is_am = is_am ? 1 : 0;
  if (is_am) {
    rts.rcomp = args.remote_comp;
  } else {
    rts.matching_engine_index = args.matching_engine->index;
    rts.policy = static_cast<std::uint8_t>(args.matching_policy);
  }
  const error_t error = send_control(device, args.rank, &rts, sizeof(rts),
                                     protocol::make_imm(protocol::msg_type_t::rts, 0));
  if (!error.is_done() && !error.is_posted()) {
    (void)device.rdv_table().take(send_id);  // no RTR can name it
    // A crash that failed it meanwhile has signalled its comp: posted.
    if (!runtime.unwatch(request)) return status_t(errorcode_t::posted);
    device_impl_t::give_back(request);
    return status_t(error);
  }
  return status_t(errorcode_t::posted);
}

bool handle_rts(device_impl_t& device, int rank, const rts_t& rts) {
  runtime_impl_t& runtime = *device.runtime();
  if (rts.is_am) {
    comp_impl_t* comp = runtime.rcomp_target(rts.rcomp);
    if (comp == nullptr) {
      throw_unregistered_rcomp("an active message", rank, rts.rcomp,
                               " (its sender waits forever)");
    }
    request_t* recv = device.take_request();
    if (recv == nullptr) return false;
    recv->kind = request_kind_t::recv;
    recv->comp = comp;
    recv->status.rank = rank;
    recv->status.tag = rts.tag;
    recv->status.size = rts.size;
    recv->status.buffer = allocate_user_buffer(rts.size);
    recv->capacity = rts.size;
    start_rtr(device, recv, rts);
    return true;
  }
  matching_engine_impl_t* engine = runtime.matching_engine_at(rts.matching_engine_index);
  if (engine == nullptr) {
    throw std::runtime_error("lci: a rendezvous send from rank " + std::to_string(rank) +
                             " names matching engine " +
                             std::to_string(rts.matching_engine_index) +
                             ", which does not exist here");
  }
  unexpected_t* message = device.take_unexpected();
  if (message == nullptr) return false;
  message->is_rts = true;
  message->rank = rank;
  message->tag = rts.tag;
  message->size = rts.size;
  message->rts = rts;
  const matching_entry_key_t key =
      matching_key(*engine, rank, rts.tag, static_cast<matching_policy_t>(rts.policy));
  insert_unexpected(device, *engine, key, message);
  return true;
}

void start_rtr(device_impl_t& device, request_t* recv, const rts_t& rts) {
  recv->peer_request = rts.send_request;
  device.mark_in_flight(recv);
  // Until its data lands the receive waits on the sender alone.
  if (!device.runtime()->watch(recv)) {
    complete_request(recv, errorcode_t::fatal);  // the sender died meanwhile
    return;
  }
  device_impl_t* device_ptr = &device;
  (void)device.run_or_backlog([device_ptr, recv]() -> error_t {
    device_impl_t& d = *device_ptr;
    // A crash failed it while this step waited: the buffer may be gone.
    if (d.runtime()->is_failed(recv)) return errorcode_t::done;
    if (recv->mr.is_empty()) {
      // Held until the data lands, which only the sender's progress brings
      // about: from the receives' share, so that the sender's own write
      // always finds one here when this rank is the sender of another.
      if (!d.take_standing_registration()) return errorcode_t::retry_nomem;
      const error_t error =
          d.net().register_memory(recv->status.buffer, recv->capacity, &recv->owned_mr);
      if (!error.is_done()) {
        d.return_standing_registration();  // nothing was registered
        return error;
      }
      recv->mr = recv->owned_mr;
    }
    if (recv->rdv_id == rdv_id_none) recv->rdv_id = d.rdv_table().add(recv);
    const backend::net_rmr_t rmr = d.net().get_rmr(recv->mr);
    rtr_t rtr{};
    rtr.send_request = recv->peer_request;
    rtr.base = rmr.base;
    rtr.offset = reinterpret_cast<std::uintptr_t>(recv->status.buffer) -
                 reinterpret_cast<std::uintptr_t>(recv->mr.base);
    rtr.rkey = rmr.rkey;
    rtr.size = recv->status.size;
    rtr.rdv_id = recv->rdv_id;
    // After this send succeeds the sender may write and complete the
    // receive at once: `recv` must not be touched again here.
    return send_control(d, recv->status.rank, &rtr, sizeof(rtr),
                        protocol::make_imm(protocol::msg_type_t::rtr, 0));
  });
}

void refuse_rts(device_impl_t& device, int rank, const rts_t& rts) {
  rtr_t rtr{};
  rtr.send_request = rts.send_request;
  rtr.rdv_id = rdv_id_none;
  rtr.refused = 1;
  device_impl_t* device_ptr = &device;
  (void)device.run_or_backlog([device_ptr, rank, rtr]() -> error_t {
    return send_control(*device_ptr, rank, &rtr, sizeof(rtr),
                        protocol::make_imm(protocol::msg_type_t::rtr, 0));
  });
}

void handle_rtr(device_impl_t& device, int rank, const rtr_t& rtr) {
  // An id from this device's table (post_rts): one that is not in use, or
  // names a receive, is a corrupt RTR, refused before anything is read.
  if (rtr.send_request > UINT32_MAX) {
    throw std::runtime_error("lci: a corrupt RTR from rank " + std::to_string(rank) +
                             ": no such send (" + std::to_string(rtr.send_request) + ")");
  }
  request_t* send = device.rdv_table().take(static_cast<std::uint32_t>(rtr.send_request));
  if (send->kind != request_kind_t::send_rdv) {
    throw std::runtime_error("lci: a corrupt RTR from rank " + std::to_string(rank) +
                             ": it names a request that is not a rendezvous send");
  }
  // The write reads rtr.size bytes of the send's buffer: never more than
  // the message (a corrupt RTR must not make this rank read past it).
  if (rtr.size > send->status.size) {
    throw std::runtime_error("lci: a corrupt RTR from rank " + std::to_string(rank) + ": " +
                             std::to_string(rtr.size) + " bytes to write for a message of " +
                             std::to_string(send->status.size));
  }
  // The network holds it from here on (the write reports any fault).
  if (!device.runtime()->unwatch(send)) return;  // a crash of the target failed it
  if (rtr.refused != 0) {  // the receive was too small (the receiver threw)
    complete_request(send, errorcode_t::fatal);
    return;
  }
  const bool with_imm = device.runtime()->attr().rdv_protocol == attr_rdv_protocol_t::writeimm &&
                        device.net().attr().supports_put_imm;
  if (!with_imm) send->rdv_id = rtr.rdv_id;
  device_impl_t* device_ptr = &device;
  const backend::net_rmr_t rmr{rtr.base, rtr.rkey};
  const std::uint64_t offset = rtr.offset;
  const std::size_t size = rtr.size;
  const std::uint32_t rdv_id = rtr.rdv_id;
  (void)device.run_or_backlog([device_ptr, send, rank, rmr, offset, size, rdv_id,
                               with_imm]() -> error_t {
    backend::net_device_t& net = device_ptr->net();
    // Registered only now (see post_rts); held until the write completes,
    // which needs no peer's progress. Kept across a refused write.
    if (send->mr.is_empty() && net.attr().requires_local_mr) {
      const error_t error = net.register_memory(send->status.buffer, size, &send->owned_mr);
      if (!error.is_done()) return error;
      send->mr = send->owned_mr;
    }
    if (with_imm) {
      return net.post_putImm(rank, send->status.buffer, size, send->mr, offset, rmr,
                             protocol::make_imm(protocol::msg_type_t::rdv_data, rdv_id), send);
    }
    return net.post_put(rank, send->status.buffer, size, send->mr, offset, rmr, send);
  });
}

void handle_rdv_write_done(device_impl_t& device, request_t* send) {
  if (send->rdv_id != rdv_id_none) {  // write protocol: tell the target
    device_impl_t* device_ptr = &device;
    const int rank = send->status.rank;
    const std::uint32_t imm = protocol::make_imm(protocol::msg_type_t::fin, send->rdv_id);
    (void)device.run_or_backlog([device_ptr, rank, imm]() -> error_t {
      return send_control(*device_ptr, rank, nullptr, 0, imm);
    });
  }
  complete_request(send, errorcode_t::done);
}

void handle_rdv_done(device_impl_t& device, std::uint32_t rdv_id) {
  request_t* recv = device.rdv_table().take(rdv_id);
  if (!device.runtime()->unwatch(recv)) return;  // a crash of the sender failed it
  complete_request(recv, errorcode_t::done);
}

}  // namespace lci::detail
