// Zero-copy rendezvous (paper §4.3): RTS -> match (send) or allocate (AM) ->
// RTR carrying the target buffer's remote key -> RDMA write -> FIN, or, with
// the write-with-immediate protocol, a write whose immediate data completes
// the receive and needs no FIN. Where either side can get no registration
// for its buffer, the data is copied through packets instead (rtr_mode_t::
// copy), so that running out of registrations never stalls a rendezvous.
#include <algorithm>
#include <cstddef>
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

status_t post_rts(const post_args_t& args, rts_kind_t kind, rma_rts_t* rma) {
  LCI_ASSERT((rma != nullptr) == (kind == rts_kind_t::put), "an RMA RTS for a put alone");
  device_impl_t& device = *args.device;
  // The send buffer is registered when the RTR arrives (handle_rtr), not
  // here: a send waiting for its RTR would otherwise hold a registration
  // that only the peer's progress frees (docs/design/protocol.md,
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
  hand_over(request, request_owner_t::thread, request_owner_t::rdv_table);
  const std::uint32_t send_id = device.rdv_table().add(request);
  rts_t rts{};
  rts.send_request = send_id;
  rts.size = args.size;
  rts.tag = args.tag;
  rts.kind = kind;
  if (kind == rts_kind_t::send) {
    rts.matching_engine_index = args.matching_engine->index;
    rts.policy = static_cast<std::uint8_t>(args.matching_policy);
  } else {
    rts.rcomp = args.remote_comp;
  }
  const std::uint32_t imm = make_imm(msg_type_t::rts, 0);
  error_t error;
  if (rma != nullptr) {
    rma->rts = rts;
    // A packet holds an RTS (alloc_packet_pool's minimum).
    // Equivalent mutants: bound. At equality the data would go after the
    // RTS instead of in its packet: the same bytes land, through the RTR and a
    // write, one round trip later (tools/mutate_records/2026-11-28-runs-35-59.md, runs 42-50).
    error = args.size <= device.packet_payload_max() - sizeof(*rma)
                ? send_packet(device, args.rank, rma, sizeof(*rma), args.buffer, args.size, imm)
                : send_control(device, args.rank, rma, sizeof(*rma), imm);
  } else {
    error = send_control(device, args.rank, &rts, sizeof(rts), imm);
  }
  if (!error.is_done() && !error.is_posted()) {
    (void)device.rdv_table().take(send_id);  // no RTR can name it
    hand_over(request, request_owner_t::rdv_table, request_owner_t::thread);
    // A crash that failed it meanwhile has signalled its comp: posted.
    if (!runtime.unwatch(request)) return status_t(errorcode_t::posted);
    device_impl_t::give_back(request);
    return status_t(error);
  }
  return status_t(errorcode_t::posted);
}

bool handle_rts(device_impl_t& device, int rank, const rts_t& rts) {
  runtime_impl_t& runtime = *device.runtime();
  LCI_ASSERT(rts.kind == rts_kind_t::send || rts.kind == rts_kind_t::am,
             "an RMA RTS handled as a message's");
  if (rts.kind == rts_kind_t::am) {
    comp_impl_t* comp = runtime.rcomp_target(rts.rcomp);
    if (comp == nullptr) {
      throw_unregistered_rcomp("an active message", rank, rts.rcomp,
                               " (its sender waits forever)");
    }
    request_t* recv = take_protocol_request(device);
    if (recv == nullptr) return false;
    state_of(recv).kind = request_kind_t::recv;
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
  const matching_entry_key_t key =
      matching_key(*engine, rank, rts.tag, static_cast<matching_policy_t>(rts.policy));
  unexpected_t arrived;
  arrived.is_rts = true;
  arrived.device_ordinal = device.ordinal();
  arrived.rank = rank;
  arrived.tag = rts.tag;
  arrived.size = rts.size;
  arrived.rts = rts;
  if (take_posted_receive(device, *engine, key, &arrived)) return true;
  insert_unexpected(device, *engine, key, device.take_unexpected(arrived));
  return true;
}

namespace {

// Registers a rendezvous receive's buffer for the sender's write, from the
// device's standing share (docs/design/protocol.md, "Registrations"). done;
// retry_nomem or fatal when none can be had (the share is used up, the
// network is out of registrations or will never register this buffer): the
// caller copies through packets instead of waiting; another retry (a busy
// lock) is worth waiting for.
error_t register_receive(device_impl_t& device, request_t* recv) {
  if (!device.accounting().take_standing_registration()) return errorcode_t::retry_nomem;
  const error_t error =
      device.net().register_memory(recv->status.buffer, recv->capacity, &recv->owned_mr);
  if (!error.is_done()) {
    device.accounting().return_standing_registration();  // nothing was registered
    return error;
  }
  recv->owned_mr_standing = true;
  recv->mr = recv->owned_mr;
  return errorcode_t::done;
}

// Whether a registration refused with `error` is worth waiting for, rather
// than copying through packets.
bool registration_may_come(error_t error) {
  return error.is_retry() && error.errorcode != errorcode_t::retry_nomem;
}

// The sender's side of rtr_mode_t::copy, as a backlog step: `size` bytes of
// `send`'s buffer to the receive `rdv_id` names, in packet-sized chunks, as
// many as the network takes at once (the pipeline); a refused chunk leaves
// the step to resume there. The send is done once every chunk is in a
// packet: its buffer is free again.
error_t copy_rdv_data(device_impl_t& device, request_t* send, int rank, std::size_t size,
                      std::uint32_t rdv_id) {
  const std::size_t chunk_max = device.packet_payload_max() - sizeof(rdv_chunk_t);
  const std::uint32_t imm = make_imm(msg_type_t::rdv_data, rdv_id,
                                               /*header=*/true);
  const auto* buffer = static_cast<const std::byte*>(send->status.buffer);
  // relaxed: only this step touches a send's count, one run at a time
  // (the backlog hands a step to one thread).
  std::size_t offset = state_of(send).copied.load(util::mo_relaxed);
  while (offset < size) {
    const std::size_t length = std::min(chunk_max, size - offset);
    const rdv_chunk_t chunk{offset};
    const error_t error =
        send_packet(device, rank, &chunk, sizeof(chunk), buffer + offset, length, imm);
    if (!error.is_done() && !error.is_posted()) return error;
    offset += length;
    state_of(send).copied.store(offset, util::mo_relaxed);  // relaxed: as above
  }
  complete_request(send, errorcode_t::done);
  return errorcode_t::done;
}

void start_copy(device_impl_t& device, request_t* send, int rank, std::size_t size,
                std::uint32_t rdv_id) {
  device_impl_t* device_ptr = &device;
  (void)device.run_or_backlog([device_ptr, send, rank, size, rdv_id]() -> error_t {
    return copy_rdv_data(*device_ptr, send, rank, size, rdv_id);
  });
}

}  // namespace

error_t offer_receive(device_impl_t& device, request_t* recv, rtr_t* rtr) {
  *rtr = rtr_t{};
  rtr->mode = rtr_mode_t::write;
  if (recv->mr.is_empty()) {
    // Held until the data lands, which only the sender's progress brings
    // about: from the receives' share, so that the sender's own write
    // always finds one here when this rank is the sender of another.
    // None to be had: the data comes through packets, never a wait for
    // a registration that a peer's progress would have to free.
    const error_t error = register_receive(device, recv);
    if (registration_may_come(error)) return error;
    if (!error.is_done()) rtr->mode = rtr_mode_t::copy;
  }
  if (state_of(recv).rdv_id == rdv_id_none) {
    hand_over(recv, request_owner_t::thread, request_owner_t::rdv_table);
    state_of(recv).rdv_id = device.rdv_table().add(recv);
  }
  if (rtr->mode == rtr_mode_t::write) {
    const backend::net_rmr_t rmr = device.net().get_rmr(recv->mr);
    rtr->base = rmr.base;
    rtr->offset = reinterpret_cast<std::uintptr_t>(recv->status.buffer) -
                  reinterpret_cast<std::uintptr_t>(recv->mr.base);
    rtr->rkey = rmr.rkey;
  }
  rtr->send_request = state_of(recv).peer_request;
  rtr->size = recv->status.size;
  rtr->rdv_id = state_of(recv).rdv_id;
  return errorcode_t::done;
}

void start_rtr(device_impl_t& device, request_t* recv, const rts_t& rts) {
  state_of(recv).peer_request = rts.send_request;
  device.accounting().mark_in_flight(recv);
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
    rtr_t rtr;
    const error_t error = offer_receive(d, recv, &rtr);
    if (!error.is_done()) return error;
    // After this send succeeds the sender may write and complete the
    // receive at once: `recv` must not be touched again here.
    return send_control(d, recv->status.rank, &rtr, sizeof(rtr),
                        make_imm(msg_type_t::rtr, 0));
  });
}

void send_rtr(device_impl_t& device, int rank, const rtr_t& rtr) {
  device_impl_t* device_ptr = &device;
  (void)device.run_or_backlog([device_ptr, rank, rtr]() -> error_t {
    return send_control(*device_ptr, rank, &rtr, sizeof(rtr),
                        make_imm(msg_type_t::rtr, 0));
  });
}

void answer_rts(device_impl_t& device, int rank, const rts_t& rts, rtr_mode_t mode) {
  LCI_ASSERT(mode != rtr_mode_t::write, "an RTR to write names a receive");
  rtr_t rtr{};
  rtr.send_request = rts.send_request;
  rtr.rdv_id = rdv_id_none;
  rtr.mode = mode;
  send_rtr(device, rank, rtr);
}

void send_fin(device_impl_t& device, int rank, std::uint32_t rdv_id) {
  device_impl_t* device_ptr = &device;
  const std::uint32_t imm = make_imm(msg_type_t::fin, rdv_id);
  (void)device.run_or_backlog([device_ptr, rank, imm]() -> error_t {
    return send_control(*device_ptr, rank, nullptr, 0, imm);
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
  hand_over(send, request_owner_t::rdv_table, request_owner_t::thread);
  // A checked get's receive is named only by its target's refusal.
  const bool refused_get =
      state_of(send).kind == request_kind_t::recv && rtr.mode == rtr_mode_t::refused;
  if (state_of(send).kind != request_kind_t::send_rdv && !refused_get) {
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
  // The receive was too small (the receiver threw), or the target of a
  // checked put or get holds no registration for it.
  if (rtr.mode == rtr_mode_t::refused) {
    complete_request(send, errorcode_t::fatal);
    return;
  }
  start_write(device, send, rank, rtr);
}

void start_write(device_impl_t& device, request_t* send, int rank, const rtr_t& rtr) {
  const std::size_t size = rtr.size;
  const std::uint32_t rdv_id = rtr.rdv_id;
  if (rtr.mode == rtr_mode_t::copy) {
    start_copy(device, send, rank, size, rdv_id);
    return;
  }
  const bool with_imm = device.runtime()->attr().rdv_protocol == attr_rdv_protocol_t::writeimm &&
                        device.net().attr().supports_put_imm;
  if (!with_imm) state_of(send).rdv_id = rdv_id;
  device_impl_t* device_ptr = &device;
  const backend::net_rmr_t rmr{rtr.base, rtr.rkey};
  const std::uint64_t offset = rtr.offset;
  (void)device.run_or_backlog([device_ptr, send, rank, rmr, offset, size, rdv_id,
                               with_imm]() -> error_t {
    backend::net_device_t& net = device_ptr->net();
    // Registered only now (see post_rts); held until the write completes,
    // which needs no peer's progress. Kept across a refused write. None to
    // be had: the data goes through packets (the receive's chunks count
    // bytes, whichever way its buffer was offered).
    if (send->mr.is_empty() && net.attr().requires_local_mr) {
      const error_t error = net.register_memory(send->status.buffer, size, &send->owned_mr);
      if (registration_may_come(error)) return error;
      if (!error.is_done()) {
        state_of(send).rdv_id = rdv_id_none;  // no FIN: the last chunk completes the receive
        start_copy(*device_ptr, send, rank, size, rdv_id);
        return errorcode_t::done;
      }
      send->mr = send->owned_mr;
    }
    hand_over(send, request_owner_t::thread, request_owner_t::network);
    const error_t error =
        with_imm ? net.post_putImm(rank, send->status.buffer, size, send->mr, offset, rmr,
                                   make_imm(msg_type_t::rdv_data, rdv_id),
                                   send)
                 : net.post_put(rank, send->status.buffer, size, send->mr, offset, rmr, send);
    if (error.is_done() || error.is_posted()) device_ptr->accounting().note_network_post();
    // Refused: this step still holds it, to post it again.
    if (!error.is_done() && !error.is_posted()) {
      hand_over(send, request_owner_t::network, request_owner_t::thread);
    }
    return error;
  });
}

void handle_rdv_write_done(device_impl_t& device, request_t* send) {
  // Write protocol: tell the target.
  if (state_of(send).rdv_id != rdv_id_none) send_fin(device, send->status.rank, state_of(send).rdv_id);
  complete_request(send, errorcode_t::done);
}

void handle_rdv_done(device_impl_t& device, int rank, std::uint32_t rdv_id) {
  request_t* recv = device.rdv_table().take(rdv_id);
  // A peer's id: one naming a send (whose RTR it got) is a corrupt FIN.
  if (state_of(recv).kind != request_kind_t::recv) {
    throw std::runtime_error("lci: a corrupt FIN from rank " + std::to_string(rank) +
                             ": it names a request that is not a rendezvous receive");
  }
  hand_over(recv, request_owner_t::rdv_table, request_owner_t::thread);
  if (!device.runtime()->unwatch(recv)) return;  // a crash of the sender failed it
  complete_request(recv, errorcode_t::done);
}

void handle_rdv_chunk(device_impl_t& device, int rank, std::uint32_t rdv_id,
                      const rdv_chunk_t& chunk, const void* data, std::size_t size) {
  request_t* recv = device.rdv_table().at(rdv_id);
  LCI_ASSERT(recv->owner == request_owner_t::rdv_table, "a chunk for a request the table lost");
  // Read before this chunk's bytes are counted: once they are, another
  // thread's chunk may make the count whole, complete the receive and give
  // its request back to the pool, where any thread takes it again.
  const std::size_t recv_size = recv->status.size;
  // The bytes go where the chunk says: only inside the receive it names. A
  // chunk carries at least a byte (copy_rdv_data() sends none empty).
  // Equivalent mutants: bound. At offset == the receive's size, a chunk of no
  // bytes is refused as empty and any other by the room test below
  // (tools/mutate_records/2026-11-28-runs-35-59.md, runs 42-50).
  const bool starts_inside = chunk.offset <= recv_size;
  if (state_of(recv).kind != request_kind_t::recv || size == 0 || !starts_inside ||
      size > recv_size - chunk.offset) {
    throw std::runtime_error("lci: a corrupt rendezvous chunk from rank " + std::to_string(rank) +
                             ": " + std::to_string(size) + " bytes at offset " +
                             std::to_string(chunk.offset) + " of a receive of " +
                             std::to_string(recv_size));
  }
  // A crash of the sender failed it: the buffer may be the user's again.
  // (A crash between this check and the copy below is the window the
  // backlogged RTR step has too: docs/design/lifecycle.md, "Crashed peers".)
  if (device.runtime()->is_failed(recv)) return;
  std::memcpy(static_cast<std::byte*>(recv->status.buffer) + chunk.offset, data, size);
  // acq_rel: release publishes this chunk's bytes to the thread whose chunk
  // completes the receive; acquire, on that thread, sees every other
  // chunk's bytes before the completion object hears of them.
  const std::size_t before = state_of(recv).copied.fetch_add(size, util::mo_acq_rel);
  // From here on `recv` is read only by the thread whose chunk made the
  // count whole (see `recv_size`).
  if (before + size > recv_size) {
    throw std::runtime_error("lci: a corrupt rendezvous chunk from rank " + std::to_string(rank) +
                             ": more bytes than the receive's " + std::to_string(recv_size) +
                             " (a chunk twice?)");
  }
  if (before + size == recv_size) handle_rdv_done(device, rank, rdv_id);
}

}  // namespace lci::detail
