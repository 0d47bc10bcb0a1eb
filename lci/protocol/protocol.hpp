// The communication protocols (paper §4.3) as the progress engine and the
// posting operations see them. One file per protocol:
//   post_comm.cpp    validation and Table 1: which protocol an operation takes
//   eager.cpp        inject and buffer-copy sends; eager arrivals; matching
//   rendezvous.cpp   RTS -> match/allocate -> RTR -> RDMA write -> FIN or
//                    write-with-immediate
//   rma.cpp          put/get (with and without a remote completion)
//   rma_checked.cpp  put/get the target checks first (networks where a bad
//                    key breaks more than its own operation)
//   completion.cpp   finishing an operation: done status or a signal
//   buffer_list.cpp  a buffer list staged through one buffer, then post_comm
// lci/progress/progress.cpp polls the network and calls the handle_* below.
//
// Thread safety: every function may run concurrently from any threads.
// Blocking:      never (a handler completion object runs user code).
// Errors:        bad arguments throw std::invalid_argument naming the
//                argument and value, before anything is changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "backends/backend.hpp"
#include "lci/api/lci_types.hpp"
#include "lci/runtime/post_args.hpp"
#include "lci/protocol/request_state.hpp"
#include "lci/runtime/request.hpp"
#include "lci/wire/immediate.hpp"

namespace lci::detail {

class arrival_t;
class device_impl_t;
class matching_engine_impl_t;

// Throws std::runtime_error: `what` (an active message, a remote
// completion) arrived from `rank` naming `rcomp`, which nobody registered
// here; `consequence` (may be empty) says what else follows.
[[noreturn]] void throw_unregistered_rcomp(const char* what, int rank, rcomp_t rcomp,
                                           const char* consequence);

// A put or get of `size` bytes at `disp` into a peer's registration, as
// given by the caller (post_put and post_get; the raw network layer's
// net_post_put*/net_post_get, whose displacement is named `offset`).
struct remote_access_t {
  const char* op;         // names the operation in an error
  int rank;
  const rmr_t& rmr;
  std::uint64_t disp;
  const char* disp_name;  // the displacement argument's name in an error
  std::size_t size;
};
// Where such an access lands, as the network is told: the region and the
// offset into it.
struct net_target_t {
  backend::net_rmr_t rmr;
  std::uint64_t offset = 0;
};
// The network's view of the access [rmr.base + disp, + size): the region
// from rmr.mr_base (from rmr.base when mr_base is 0) and the offset into
// it. Throws std::invalid_argument naming op, rank, disp and size, before
// anything is posted, for a base below mr_base or an end past 2^64. The
// bounds are the target's to check (rmr_t, rma.cpp).
net_target_t checked_target(const remote_access_t& access);

// Validates and runs one operation (Table 1); retry is pushed to the
// device's backlog when allow_retry is false.
status_t post_comm(const post_args_t& args);

// An operation whose local side is a buffer list (args.buffer nullptr,
// args.size 0): staged through one runtime-owned buffer, then post_comm
// (buffer_list.cpp). Throws std::invalid_argument for a list given with a
// buffer, size or mr, an entry with no base, or sizes that overflow.
status_t post_buffer_list(post_args_t args, const buffers_t& buffers);

// Protocol entry points used by post_comm (args already validated).
status_t post_send_or_am(const post_args_t& args, bool is_am);
status_t post_recv_matched(const post_args_t& args);
status_t post_put(const post_args_t& args);
status_t post_get(const post_args_t& args);
// Checked RMA (rma_checked.cpp; net_device_attr_t::bad_rkey_fails_alone
// false): `target` is where checked_target() put the access.
status_t post_checked_put(const post_args_t& args, const net_target_t& target);
status_t post_checked_get(const post_args_t& args, const net_target_t& target);
// A peer's checked put or get arrived: its registration pinned and the
// data moved as a rendezvous, or refused. false (nothing done): the
// device's pool of requests is empty; try again later. Throws
// std::runtime_error for a remote completion nobody registered here (after
// refusing the access, so the initiator does not wait for it).
[[nodiscard]] bool handle_rma_rts(device_impl_t& device, int rank, const rma_rts_t& message);
// A checked put that carried its rts.size bytes at `data` in its RTS:
// checked, copied and answered at once (needs no request). Throws as
// handle_rma_rts.
void handle_inline_put(device_impl_t& device, int rank, const rma_rts_t& message,
                       const void* data);

// The status an operation reports: its own arguments (the peer, the local
// buffer and size, tag, user_context); error is set at completion.
status_t status_of(const post_args_t& args);
// A request for `args`, carrying status_of(args), the completion object and
// the user's registration (if any); nullptr when the device's request pool
// is empty (the post answers retry_nomem).
request_t* new_request(const post_args_t& args, request_kind_t kind);

// Immediate completion: a done status when allowed, else the completion
// object is signalled and posted is returned.
status_t finish_at_once(const post_args_t& args, status_t status);

// Packets as send buffers (get_upacket, or a zero-copy active message's
// buffer that starts its packet): a program's outgoing operation (send,
// am, put, with or without a remote completion; args.may_take_packet)
// whose args.buffer is the start of a packet's payload in its device's
// packet pool takes the packet over once the post is accepted (done or
// posted; retry and a throw leave it the program's), and puts it back when
// nothing of the operation reads it any more: a request holding the buffer
// carries it as request_t::packet (new_request), which complete_request
// puts back, also when the operation fails; an operation that finished
// inside its post puts it back there (finish_in_post); an eager send
// copied out of it, behind a header, puts it back once the copy is posted.
bool takes_upacket(const post_args_t& args);
// An operation that finished inside its post: finish_at_once(), then the
// packet it took over (takes_upacket), if any, back to the pool.
status_t finish_in_post(const post_args_t& args, status_t status);
// Signals `request`'s completion object (if any) with `code`, releases what
// the request holds (packet, registration) and deletes it.
void complete_request(request_t* request, errorcode_t code);

// Between protocols.
// An eager message or active message: delivered, matched or stored. false
// (nothing done, the arrival still held): it must be kept and no packet is
// free; the caller tries again later.
[[nodiscard]] bool handle_eager(device_impl_t& device, arrival_t& arrival,
                                msg_type_t type);
// An RTS: an AM's receive starts, a send's waits in the matching table or
// meets its receive. false (nothing done): the device's pool of requests
// is empty (AM); try again later.
[[nodiscard]] bool handle_rts(device_impl_t& device, int rank, const rts_t& rts);
void handle_rtr(device_impl_t& device, int rank, const rtr_t& rtr);
// FIN, or the write-with-immediate, from `rank`. Throws std::runtime_error
// naming `rank` when `rdv_id` names no rendezvous receive.
void handle_rdv_done(device_impl_t& device, int rank, std::uint32_t rdv_id);
// A chunk of a rendezvous copied through packets (rtr_mode_t::copy): `size`
// bytes for offset `chunk.offset` of the receive `rdv_id` names. Throws
// std::runtime_error naming `rank` for a chunk outside that receive.
void handle_rdv_chunk(device_impl_t& device, int rank, std::uint32_t rdv_id,
                      const rdv_chunk_t& chunk, const void* data, std::size_t size);
void handle_signal(device_impl_t& device, const backend::net_status_t& status,
                   msg_type_t type);
void handle_rdv_write_done(device_impl_t& device, request_t* request);
void handle_get_done(device_impl_t& device, request_t* request);
// A receive meets an unexpected message (eager or RTS); takes both. Eager:
// copies, and completes the receive (signal) or returns its status for the
// caller to complete (!signal). RTS: starts the RTR; returns posted.
// `message` is a record from take_unexpected(), or one on the caller's
// stack (home null: take_posted_receive()), which goes back to no pool.
status_t match_receive(device_impl_t& device, request_t* recv, unexpected_t* message,
                       bool signal);
// An arrived send, described by `message` (a record on the caller's stack,
// home null; eager: `data` where it landed, no packet), meets a receive
// already posted for it, with no record and no copy into a kept packet.
// true: matched (match_receive, signal). With one thread
// progressing the device it cannot take a receive past an earlier arrival
// of its sender that waits in the backlog: progress() retries those (which
// try this first) before it polls new arrivals, and the receive was posted
// between progress calls (docs/api_compat.md, "Message order").
bool take_posted_receive(device_impl_t& device, matching_engine_impl_t& engine,
                         matching_entry_key_t key, unexpected_t* message);
// The key a receive or an arrived send is matched by (eager and rendezvous
// alike).
matching_entry_key_t matching_key(matching_engine_impl_t& engine, int rank, tag_t tag,
                                  matching_policy_t policy);
// Stores an arrived send in the matching table, or matches it; queued on the
// backlog while the table is full.
void insert_unexpected(device_impl_t& device, matching_engine_impl_t& engine,
                       matching_entry_key_t key, unexpected_t* message);
// Rendezvous steps.
// `rma`: a checked put's RTS, whose rts this fills in (nullptr for the
// other kinds); the put's data travels inline behind it when both fit a
// packet (handle_inline_put).
status_t post_rts(const post_args_t& args, rts_kind_t kind, rma_rts_t* rma);
void start_rtr(device_impl_t& device, request_t* recv, const rts_t& rts);
// What an RTR says of `recv` (a rendezvous receive, or a checked get's):
// its buffer registered for the sender's write, or copy when no
// registration can be had; adds it to the rendezvous table. Retry: a
// registration worth waiting for.
error_t offer_receive(device_impl_t& device, request_t* recv, rtr_t* rtr);
// The sender's side once its receive is offered: `send`'s first rtr.size
// bytes written (then FIN or the write's immediate data) or copied.
void start_write(device_impl_t& device, request_t* send, int rank, const rtr_t& rtr);
// Sends `rtr` to `rank`, from the backlog while the network refuses it.
void send_rtr(device_impl_t& device, int rank, const rtr_t& rtr);
// Answers an RTS with an RTR that moves no data: `refused` (a receive too
// small, a checked put or get the target cannot honour), or `copy` with
// nothing left to copy (a checked put whose bytes are all in place here).
void answer_rts(device_impl_t& device, int rank, const rts_t& rts, rtr_mode_t mode);
// Tells `rank` that the data of its receive `rdv_id` is in place (FIN),
// from the backlog while the network refuses it.
void send_fin(device_impl_t& device, int rank, std::uint32_t rdv_id);
// Sends a small control message (RTS/RTR/FIN/get signal): inject when it
// fits, else through a packet. Retry when the network refuses.
error_t send_control(device_impl_t& device, int rank, const void* data, std::size_t size,
                     std::uint32_t imm);
// Sends `head_size` bytes at `head` followed by `size` bytes at `data` as one
// message, copied into a packet (send_control's packet path; the chunks of a
// copied rendezvous). Retry when no request or packet is free or the
// network refuses.
error_t send_packet(device_impl_t& device, int rank, const void* head, std::size_t head_size,
                    const void* data, std::size_t size, std::uint32_t imm);

}  // namespace lci::detail
