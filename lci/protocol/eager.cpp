// Inject and buffer-copy (eager) sends and active messages, eager arrivals,
// and the matching of sends with receives.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>

#include "lci/comp/comp_impl.hpp"
#include "lci/protocol/arrival.hpp"
#include "lci/protocol/protocol.hpp"
#include "lci/runtime/allocator.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/post_mode.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/mutation.hpp"

namespace lci::detail {

namespace {

struct encoded_t {
  std::uint32_t imm;
  bool header;
  eager_header_t header_bytes;
};

encoded_t encode(const device_impl_t& device, msg_type_t type,
                 const msg_fields_t& fields) {
  const attr_runtime_t& attr = device.runtime()->attr();
  encoded_t encoded{};
  std::uint32_t value = 0;
  if (pack_imm_value(type, fields, attr.imm_nbits_tag, attr.imm_nbits_rcomp, &value)) {
    encoded.imm = make_imm(type, value);
  } else {
    encoded.imm = make_imm(type, 0, /*header=*/true);
    encoded.header = true;
    encoded.header_bytes = make_eager_header(fields);
  }
  return encoded;
}

msg_fields_t fields_of_post(const post_args_t& args, bool is_am) {
  msg_fields_t fields;
  fields.tag = args.tag;
  if (is_am) {
    fields.rcomp = args.remote_comp;
  } else {
    fields.matching_engine_index = args.matching_engine->index;
    fields.policy = args.matching_policy;
  }
  return fields;
}

[[noreturn]] void throw_truncated(std::size_t size, int rank, tag_t tag, std::size_t capacity) {
  throw std::length_error("lci: a message of " + std::to_string(size) + " bytes from rank " +
                          std::to_string(rank) + " (tag " + std::to_string(tag) +
                          ") was truncated to its receive's " + std::to_string(capacity) +
                          " bytes");
}

}  // namespace

error_t send_packet(device_impl_t& device, int rank, const void* head, std::size_t head_size,
                    const void* data, std::size_t size, std::uint32_t imm) {
  LCI_ASSERT(head_size + size <= device.packet_payload_max(), "a message over a packet");
  request_t* request = take_protocol_request(device);
  if (request == nullptr) return errorcode_t::retry_nomem;
  void* packet = device.packet_pool()->pool.get();
  if (packet == nullptr) {
    device_impl_t::give_back(request);
    return errorcode_t::retry_nopacket;
  }
  auto* bytes = static_cast<std::byte*>(packet);
  if (head_size > 0) std::memcpy(bytes, head, head_size);
  if (size > 0) std::memcpy(bytes + head_size, data, size);
  state_of(request).kind = request_kind_t::send_eager;
  request->packet = packet;
  device.accounting().mark_in_flight(request);
  hand_over(request, request_owner_t::thread, request_owner_t::network);
  const error_t error =
      device.net().post_send(rank, packet, head_size + size, backend::net_mr_t{}, imm, request);
  if (error.is_done() || error.is_posted()) device.accounting().note_network_post();
  if (!error.is_done() && !error.is_posted()) {
    request->packet = nullptr;
    device_impl_t::give_back(request);
    device.packet_pool()->pool.put(packet);
  }
  return error;
}

error_t send_control(device_impl_t& device, int rank, const void* data, std::size_t size,
                     std::uint32_t imm) {
  // Equivalent mutants: bound. At exactly inject_size_max the mutant sends the control
  // message through a packet instead of injecting it: the same bytes arrive, and a refusal
  // is a retry on either path.
  if (size <= device.inject_size_max()) return device.net().post_sends(rank, data, size, imm);
  return send_packet(device, rank, data, size, nullptr, 0, imm);
}

status_t post_send_or_am(const post_args_t& args, bool is_am) {
  device_impl_t& device = *args.device;
  const msg_type_t type =
      is_am ? msg_type_t::eager_am : msg_type_t::eager_send;
  const msg_fields_t fields = fields_of_post(args, is_am);
  const encoded_t encoded = encode(device, type, fields);
  const std::size_t header_bytes = encoded.header ? sizeof(eager_header_t) : 0;
  const std::size_t wire_size = header_bytes + args.size;
  if (wire_size > device.packet_payload_max()) {
    return post_rts(args, is_am ? rts_kind_t::am : rts_kind_t::send, nullptr);
  }
  // Inject: the network copies; done at once, no completion comes back. So
  // only for the memory semantic: the network semantic waits for the
  // send's completion, which the buffer-copy path below gets.
  if (wire_size <= device.inject_size_max() && !encoded.header &&
      args.comp_semantic == comp_semantic_t::memory) {
    const error_t error = device.net().post_sends(args.rank, args.buffer, args.size, encoded.imm);
    if (!error.is_done()) return status_t(error);
    return finish_in_post(args, status_of(args));
  }
  const bool network_semantic = args.comp_semantic == comp_semantic_t::network;
  // Buffer-copy: through a packet the network returns at its completion.
  request_t* request = new_request(args, request_kind_t::send_eager);
  if (request == nullptr) return status_t(errorcode_t::retry_nomem);
  // A packet of the program's (takes_upacket) goes out as it is, unless a
  // header must lead it.
  void* const upacket = request->packet;
  const bool in_place = upacket != nullptr && !encoded.header;
  void* packet = in_place ? upacket : device.packet_pool()->pool.get();
  if (packet == nullptr) {
    device_impl_t::give_back(request);
    return status_t(errorcode_t::retry_nopacket);
  }
  if (!in_place) {
    auto* bytes = static_cast<std::byte*>(packet);
    if (encoded.header) std::memcpy(bytes, &encoded.header_bytes, header_bytes);
    if (args.size > 0) std::memcpy(bytes + header_bytes, args.buffer, args.size);
  }
  request->packet = packet;
  // Memory semantic: the operation completes below; the packet's own
  // completion only returns the packet.
  if (!network_semantic) request->comp = nullptr;
  hand_over(request, request_owner_t::thread, request_owner_t::network);
  const error_t error = device.net().post_send(args.rank, packet, wire_size, backend::net_mr_t{},
                                               encoded.imm, request);
  if (error.is_done() || error.is_posted()) device.accounting().note_network_post();
  if (!error.is_done() && !error.is_posted()) {
    request->packet = nullptr;
    device_impl_t::give_back(request);
    if (!in_place) device.packet_pool()->pool.put(packet);  // the program's stays the program's
    return status_t(error);
  }
  // Copied behind a header: the program's packet is read no more.
  if (upacket != nullptr && !in_place) device.packet_pool()->pool.put(upacket);
  if (network_semantic && args.comp != nullptr) return status_t(errorcode_t::posted);
  // Memory semantic: the buffer is free again now.
  return finish_at_once(args, status_of(args));
}

matching_entry_key_t matching_key(matching_engine_impl_t& engine, int rank, tag_t tag,
                                  matching_policy_t policy) {
  // The broken variant "matching_key_ignores_source" (tests only) leaves the
  // source out of every key, so a receive may take a message from any rank.
  return engine.table.make_key(util::mutated("matching_key_ignores_source") ? 0 : rank, tag,
                               policy);
}

namespace {
bool is_eager_message(matching_entry_val_t value) {
  return !static_cast<const unexpected_t*>(value)->is_rts;
}

// A receive that must finish inside the post: it takes a waiting eager
// message, or stores nothing and returns retry (a waiting rendezvous
// message stays too, for a receive that may be posted).
status_t recv_at_once(const post_args_t& args, matching_entry_key_t key) {
  // Taken before the message: a message taken is never put back.
  request_t* request = new_request(args, request_kind_t::recv);
  if (request == nullptr) return status_t(errorcode_t::retry_nomem);
  void* value =
      args.matching_engine->table.take_if(key, matching_entry_type_t::recv, is_eager_message);
  if (value == nullptr) {
    device_impl_t::give_back(request);
    return status_t(errorcode_t::retry);
  }
  request->capacity = args.size;
  const status_t status = match_receive(*args.device, request, static_cast<unexpected_t*>(value),
                                        /*signal=*/false);
  LCI_ASSERT(status.is_done(), "an unwatched eager receive did not finish at once");
  return finish_at_once(args, status);
}

// The policy a receive matches with. A wildcard names no field to compare,
// so a policy that would compare it gives way to the one the wildcards
// imply, as upstream LCI's receives do: ANY_SOURCE -> tag_only, ANY_TAG ->
// rank_only, both -> none (a post_recv(rank, ..., ANY_TAG) with the default
// rank_tag takes the messages its source sent with rank_only). A policy
// that already leaves the wildcard's field out stays (none stays none).
matching_policy_t receive_policy(const post_args_t& args) {
  const matching_policy_t policy = args.matching_policy;
  const bool any_rank = args.rank == ANY_SOURCE;
  const bool any_tag = args.tag == ANY_TAG;
  const bool compares_rank =
      policy == matching_policy_t::rank_only || policy == matching_policy_t::rank_tag;
  const bool compares_tag =
      policy == matching_policy_t::tag_only || policy == matching_policy_t::rank_tag;
  if (!(any_rank && compares_rank) && !(any_tag && compares_tag)) return policy;
  if (any_rank && any_tag) return matching_policy_t::none;
  return any_rank ? matching_policy_t::tag_only : matching_policy_t::rank_only;
}
}  // namespace

status_t post_recv_matched(const post_args_t& args) {
  const matching_policy_t policy = receive_policy(args);
  LCI_ASSERT(args.rank != ANY_SOURCE || policy == matching_policy_t::tag_only ||
                 policy == matching_policy_t::none,
             "a receive from ANY_SOURCE compares the rank");
  LCI_ASSERT(args.tag != ANY_TAG || policy == matching_policy_t::rank_only ||
                 policy == matching_policy_t::none,
             "a receive of ANY_TAG compares the tag");
  matching_engine_impl_t& engine = *args.matching_engine;
  const matching_entry_key_t key = matching_key(engine, args.rank, args.tag, policy);
  if (takes_arrived_only(args.mode)) return recv_at_once(args, key);
  request_t* request = new_request(args, request_kind_t::recv);
  if (request == nullptr) return status_t(errorcode_t::retry_nomem);
  request->capacity = args.size;
  // A receive that names its source waits on that peer: watched before the
  // table publishes it, so the peer's crash fails it (wildcards, and
  // policies that leave the rank out of the key, may match anyone).
  const bool names_peer = args.rank != ANY_SOURCE && (policy == matching_policy_t::rank_only ||
                                                      policy == matching_policy_t::rank_tag);
  runtime_impl_t& runtime = *args.device->runtime();
  if (names_peer && !runtime.watch(request)) {
    device_impl_t::give_back(request);
    runtime.check_peer_alive(args.rank);  // throws: it died since check_args
  }
  // Before the insert: once stored, an arrival on any thread may take it.
  hand_over(request, request_owner_t::thread, request_owner_t::matching_table);
  const matching::insert_result_t result =
      engine.table.insert(key, request, matching_entry_type_t::recv);
  if (result.kind != matching::insert_kind_t::stored) {
    hand_over(request, request_owner_t::matching_table, request_owner_t::thread);
  }
  switch (result.kind) {
    case matching::insert_kind_t::stored:
      return status_t(errorcode_t::posted);
    case matching::insert_kind_t::retry_nomem:
      // Unshared; a crash that failed it meanwhile signalled its comp.
      if (!runtime.unwatch(request)) return status_t(errorcode_t::posted);
      device_impl_t::give_back(request);
      return status_t(errorcode_t::retry_nomem);
    case matching::insert_kind_t::matched:
      break;
  }
  auto* message = static_cast<unexpected_t*>(result.value);
  if (message->is_rts) {
    match_receive(*args.device, request, message, /*signal=*/true);
    return status_t(errorcode_t::posted);
  }
  // An eager message was waiting: the receive completes now (posted: a
  // crash of its peer failed it first).
  const status_t status = match_receive(*args.device, request, message, /*signal=*/false);
  if (status.error.is_posted()) return status;
  return finish_at_once(args, status);
}

namespace {
// Back to its pool; a record on the stack (take_posted_receive) has none.
void give_back_record(unexpected_t* message) {
  if (message->home != nullptr) device_impl_t::give_back(message);
}

// A stored message's packet back to the pool of the device it arrived on,
// which need not be `device`'s: devices that share a matching engine take
// each other's messages, and may have pools of their own.
void put_message_packet(device_impl_t& device, void* packet) {
  packet_pool::pool_t* pool = &device.packet_pool()->pool;
  if (!pool->owns(packet)) {
    void* payload = nullptr;
    packet_pool_impl_t* home = device.runtime()->packet_pool_containing(packet, &payload);
    LCI_ASSERT(home != nullptr && payload == packet, "a stored message's packet of no pool");
    pool = &home->pool;
  }
  pool->put(packet);
}

// A receive a crash has failed meets a message that arrived before the
// crash was known: the message is dropped (the receive already reported
// fatal; a crashed sender's data is not trusted to be whole).
status_t drop_message(device_impl_t& device, unexpected_t* message) {
  if (message->packet != nullptr) put_message_packet(device, message->packet);
  give_back_record(message);
  return status_t(errorcode_t::posted);
}

// The device a rendezvous receive goes on with: the one its RTS arrived on
// (device itself when the RTS is matching now), which alone is paired with
// the sender's device and holds the sender's id in its peer's table. The
// receive moves there: it is its device's in flight and in its rendezvous
// table, and its buffer is registered there; a registration the program
// gave for another device is of no use to that one. Throws
// std::runtime_error (the receive completed fatal) when that device was
// freed: nothing can answer the sender then.
device_impl_t& rendezvous_device(device_impl_t& device, request_t* recv, std::uint32_t ordinal,
                                 int rank) {
  device_impl_t* arrival =
      ordinal == device.ordinal() ? &device : device.runtime()->device_at_ordinal(ordinal);
  if (arrival == nullptr) {
    recv->status.size = 0;
    complete_request(recv, errorcode_t::fatal);
    throw std::runtime_error("lci: a rendezvous message from rank " + std::to_string(rank) +
                             " met its receive after the device it arrived on was freed (its "
                             "sender waits forever)");
  }
  if (arrival != recv->device) {
    LCI_ASSERT(!recv->watched, "a receive moved to another device while watched");
    recv->device = arrival;
    recv->mr = backend::net_mr_t{};
  }
  return *arrival;
}
}  // namespace

status_t match_receive(device_impl_t& device, request_t* recv, unexpected_t* message,
                       bool signal) {
  if (!device.runtime()->unwatch(recv)) return drop_message(device, message);
  recv->status.rank = message->rank;
  recv->status.tag = message->tag;
  // Truncation: a message larger than its receive delivers the receive's
  // capacity, completes, and is then reported as misuse (thrown).
  const std::size_t message_size = message->size;
  if (message->is_rts) {
    const rts_t rts = message->rts;
    const int rank = message->rank;
    const std::uint32_t ordinal = message->device_ordinal;
    give_back_record(message);
    device_impl_t& rdv_device = rendezvous_device(device, recv, ordinal, rank);
    const std::size_t capacity = recv->capacity;
    if (message_size <= capacity) {
      recv->status.size = message_size;
      start_rtr(rdv_device, recv, rts);
      return status_t(errorcode_t::posted);
    }
    // Truncated zero-copy: no byte moves. The receive finishes now (fatal,
    // size 0), so that nothing touches its buffer after the throw below;
    // the sender hears of it through a refusing RTR.
    recv->status.size = 0;
    answer_rts(rdv_device, rank, rts, rtr_mode_t::refused);
    complete_request(recv, errorcode_t::fatal);
    throw_truncated(message_size, rank, rts.tag, capacity);
  }
  const std::size_t copied = std::min(message_size, recv->capacity);
  if (copied > 0) std::memcpy(recv->status.buffer, message->data, copied);
  recv->status.size = copied;
  if (message->packet != nullptr) put_message_packet(device, message->packet);
  const int rank = message->rank;
  const tag_t tag = message->tag;
  give_back_record(message);
  const std::size_t capacity = recv->capacity;
  status_t status = recv->status;
  status.error = errorcode_t::done;
  if (signal) {
    complete_request(recv, errorcode_t::done);
  } else {
    device_impl_t::give_back(recv);
  }
  if (message_size > capacity) throw_truncated(message_size, rank, tag, capacity);
  return status;
}

namespace {
// An eager active message to its rcomp. A zero_copy_am completion object
// gets a packet (status.buffer points into it; the user returns it with
// put_upacket) when size <= get_max_bcopy_size(), the rule a user can
// check; anything else (an eager message over that size, sent without a
// header) is copied into a malloc'd buffer, as for other objects. false: a
// packet is needed and none is free.
bool deliver_eager_am(device_impl_t& device, arrival_t& arrival,
                      const msg_fields_t& fields, const std::byte* data,
                      std::size_t size) {
  const backend::net_status_t& net_status = arrival.status();
  comp_impl_t* comp = device.runtime()->rcomp_target(fields.rcomp);
  if (comp == nullptr) {
    throw_unregistered_rcomp("an active message", net_status.rank, fields.rcomp, "");
  }
  status_t status;
  status.error = errorcode_t::done;
  status.rank = net_status.rank;
  status.tag = fields.tag;
  status.size = size;
  const bool in_packet = comp->zero_copy_am() && size > 0 && size <= device.bcopy_size_max();
  if (in_packet) {
    const arrival_t::kept_t kept = arrival.keep(data, size);
    if (kept.packet == nullptr) return false;
    LCI_ASSERT(device.packet_pool()->pool.payload_containing(kept.data) == kept.packet,
               "a zero-copy AM's payload outside its packet");
    status.buffer = const_cast<std::byte*>(kept.data);  // the user's until put_upacket
  } else {
    if (size > 0) {
      status.buffer = allocate_user_buffer(size);
      std::memcpy(status.buffer, data, size);
    }
    arrival.release();
  }
  comp->signal(status);
  return true;
}

bool take_any(matching_entry_val_t) { return true; }
}  // namespace

bool handle_eager(device_impl_t& device, arrival_t& arrival, msg_type_t type) {
  const backend::net_status_t& net_status = arrival.status();
  runtime_impl_t& runtime = *device.runtime();
  const attr_runtime_t& attr = runtime.attr();
  eager_arrival_t decoded;
  if (!decode_eager_arrival(type, net_status.imm_data, net_status.buffer,
                                      net_status.length, attr.imm_nbits_tag,
                                      attr.imm_nbits_rcomp, &decoded)) {
    throw std::runtime_error("lci: a message of " + std::to_string(net_status.length) +
                             " bytes from rank " + std::to_string(net_status.rank) +
                             " is too short for the header its immediate data announces");
  }
  const msg_fields_t& fields = decoded.fields;
  const std::size_t header_bytes = decoded.header_bytes;
  const auto* data = static_cast<const std::byte*>(net_status.buffer) + header_bytes;
  const std::size_t size = net_status.length - header_bytes;
  if (type == msg_type_t::eager_am) {
    return deliver_eager_am(device, arrival, fields, data, size);
  }
  matching_engine_impl_t* engine = runtime.matching_engine_at(fields.matching_engine_index);
  if (engine == nullptr) {
    throw std::runtime_error("lci: a message from rank " + std::to_string(net_status.rank) +
                             " names matching engine " +
                             std::to_string(fields.matching_engine_index) +
                             ", which does not exist here");
  }
  const matching_entry_key_t key =
      matching_key(*engine, net_status.rank, fields.tag, fields.policy);
  // A receive already waiting takes the message from where it landed (a
  // region or the arrival's packet), with no record and no copy into a
  // kept packet.
  unexpected_t landed;
  landed.device_ordinal = device.ordinal();
  landed.rank = net_status.rank;
  landed.tag = fields.tag;
  landed.size = size;
  landed.data = data;
  if (take_posted_receive(device, *engine, key, &landed)) return true;
  // No packet to copy a message out of its region into: the arrival waits
  // in the backlog (dispatch_eager), holding its bytes, until one is put
  // back. A record it always gets (device_pools_t).
  const arrival_t::kept_t kept = arrival.keep(data, size);
  if (kept.packet == nullptr) return false;
  unexpected_t* message = device.take_unexpected(landed);
  message->packet = kept.packet;
  message->data = kept.data;
  insert_unexpected(device, *engine, key, message);
  return true;
}

bool take_posted_receive(device_impl_t& device, matching_engine_impl_t& engine,
                         matching_entry_key_t key, unexpected_t* message) {
  LCI_ASSERT(message->home == nullptr && message->packet == nullptr,
             "take_posted_receive is for a record on the stack");
  void* recv = engine.table.take_if(key, matching_entry_type_t::send, take_any);
  if (recv == nullptr) return false;
  hand_over(static_cast<request_t*>(recv), request_owner_t::matching_table,
            request_owner_t::thread);
  match_receive(device, static_cast<request_t*>(recv), message, /*signal=*/true);
  return true;
}

void insert_unexpected(device_impl_t& device, matching_engine_impl_t& engine,
                       matching_entry_key_t key, unexpected_t* message) {
  device_impl_t* device_ptr = &device;
  matching_engine_impl_t* engine_ptr = &engine;
  (void)device.run_or_backlog([device_ptr, engine_ptr, key, message]() -> error_t {
    const matching::insert_result_t result =
        engine_ptr->table.insert(key, message, matching_entry_type_t::send);
    if (result.kind == matching::insert_kind_t::retry_nomem) return errorcode_t::retry_nomem;
    if (result.kind == matching::insert_kind_t::matched) {
      auto* recv = static_cast<request_t*>(result.value);
      hand_over(recv, request_owner_t::matching_table, request_owner_t::thread);
      match_receive(*device_ptr, recv, message, /*signal=*/true);
    }
    return errorcode_t::done;
  });
}

}  // namespace lci::detail
