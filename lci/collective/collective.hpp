// The machinery every collective (barrier, broadcast, reduce,
// reduce_scatter, allreduce, allgather, alltoall) runs on: a collective is a
// schedule_t, a list of rounds computed at the call from the rank, the rank
// count and the sizes; a round is a set of sends and receives posted
// together (post_comm, as post_send/post_recv do) followed by local work
// (copies, reductions) once all of them completed. collective_op_t walks
// the rounds from the completions of their messages, inside progress;
// blocking calls wait on the same machinery. docs/design/collectives.md
// says which algorithm builds which schedule, and when.
//
// Tags: a collective's messages match in the runtime's collective matching
// engine (or the engine the caller names) with the rank_tag policy. The
// tag names the device (its ordinal), the call (the device's collective
// sequence number: every rank calls a device's collectives in the same
// order) and the step of the algorithm, so that no two messages between
// the same pair of ranks that might be unmatched at once share a tag: the
// network does not keep messages in order.
//
// Thread safety: schedule_t belongs to the building thread until start()
//                hands it to the collective; a collective's rounds then
//                advance from any thread's progress, one at a time.
// Blocking:      start() never; run() until the collective completes,
//                progressing its device meanwhile.
// Ownership:     the user's buffers stay the user's but must not be touched
//                until the collective completed; scratch buffers belong to
//                the schedule and are freed when the collective completes.
// Allocation:    per call: the schedule, its rounds and scratch buffers.
// Limits:        steps_max steps per algorithm (an algorithm whose step
//                count exceeds it for the rank count is refused with
//                std::invalid_argument, or not chosen automatically);
//                2^sequence_bits collectives of one device in flight, and
//                2^ordinal_bits devices running collectives at once, before
//                tags repeat.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "lci/api/lci_generated.hpp"
#include "lci/api/lci_types.hpp"

namespace lci::detail {

class runtime_impl_t;
class device_impl_t;
class matching_engine_impl_t;
class comp_impl_t;

namespace collective {

// The tag layout: ordinal | sequence | step, 32 bits in all (the widest tag
// the rank_tag matching policy keys on).
inline constexpr unsigned step_bits = 14;
inline constexpr unsigned sequence_bits = 13;
inline constexpr unsigned ordinal_bits = 5;
static_assert(step_bits + sequence_bits + ordinal_bits == 32, "tags are 32 bits under rank_tag");
inline constexpr std::uint32_t steps_max = std::uint32_t{1} << step_bits;

// Messages up to this size are "short": one packet each at the upstream
// default packet size (8 KiB), so their cost is latency and the algorithms
// for them minimise rounds; longer ones go by rendezvous and the algorithms
// for them minimise the bytes each rank moves. A constant, not the device's
// packet size, since every rank must choose the same algorithm.
inline constexpr std::size_t short_bytes_max = 8192;
// At and above this a broadcast over more than three ranks is
// bandwidth-bound: the chain moves each byte once per rank instead of
// log2(n) times on the root's path.
inline constexpr std::size_t ring_bytes_min = std::size_t{256} << 10;

// The algorithm an operation runs when the caller forces none: the table
// "Which algorithm, when" of docs/design/collectives.md, from values every
// rank has, so that every rank chooses the same. A forced `algorithm` is
// returned as it is.
broadcast_algorithm_t choose_broadcast(broadcast_algorithm_t algorithm, std::size_t size,
                                       int rank_n);
allreduce_algorithm_t choose_allreduce(allreduce_algorithm_t algorithm, std::size_t count,
                                       std::size_t size_bytes, int rank_n);
// Whether alltoall sends every message in one round (else pairwise, one
// exchange per round).
bool alltoall_in_one_round(std::size_t size);

// One message of a round.
struct transfer_t {
  direction_t direction;
  int rank;
  void* buffer;
  std::size_t size;
  std::uint32_t step;  // equal on both sides; unique per ordered pair of ranks
};

// Local work after a round's messages: a copy (right unused) or a
// reduction target = op(left, right) over size_bytes / item_size items.
struct local_t {
  bool is_reduction;
  const void* left;
  const void* right;
  void* target;
  std::size_t size_bytes;
};

struct round_t {
  std::vector<transfer_t> transfers;
  std::vector<local_t> locals;
};

class schedule_t {
 public:
  schedule_t(int rank_me, int rank_n, std::size_t item_size, reduce_op_t op);

  int rank_me() const { return rank_me_; }
  int rank_n() const { return rank_n_; }
  std::size_t item_size() const { return item_size_; }
  reduce_op_t op() const { return op_; }
  // Rounds run in the order added. The reference stays valid until the
  // next add_round().
  round_t& add_round();
  // A buffer of size_bytes owned by the schedule (never nullptr); its bytes
  // are indeterminate until written.
  void* scratch(std::size_t size_bytes);

  void send(round_t& round, int rank, const void* buffer, std::size_t size, std::uint32_t step);
  void recv(round_t& round, int rank, void* buffer, std::size_t size, std::uint32_t step);
  void copy(round_t& round, const void* source, void* target, std::size_t size_bytes);
  void reduce(round_t& round, const void* left, const void* right, void* target,
              std::size_t size_bytes);

  std::vector<round_t>& rounds() { return rounds_; }

 private:
  const int rank_me_;
  const int rank_n_;
  const std::size_t item_size_;
  const reduce_op_t op_;
  std::vector<round_t> rounds_;
  std::vector<std::unique_ptr<char[]>> scratch_;
};

// Throws std::invalid_argument when `steps` steps do not fit a tag.
void check_steps(std::size_t steps, const char* algorithm);

// Throws std::invalid_argument naming `op` when the send range
// [sendbuf, + send_bytes) and the receive range [recvbuf, + recv_bytes)
// share a byte, unless recvbuf is `in_place` (the one overlap a collective
// allows: reduce_scatter's own block of sendbuf; nullptr: none allowed).
// A schedule reads its send buffer while messages land in the receive
// buffer, so any other overlap would give wrong results, not an error.
void check_buffers(const char* op, const void* sendbuf, std::size_t send_bytes,
                   const void* recvbuf, std::size_t recv_bytes, const void* in_place);

// What a call resolved its options to.
struct call_t {
  runtime_impl_t* runtime;
  device_impl_t* device;
  matching_engine_impl_t* matching_engine;
  comp_semantic_t comp_semantic;
  comp_impl_t* comp;       // nullptr: blocking
  std::uint64_t sequence;  // this call's number on the device
  const char* name;        // the operation, for errors and idle()
};

// Resolves a call's options (an empty device: the endpoint's device, else
// the default one; an empty matching engine: the runtime's collective
// engine) and takes the device's next collective sequence number. Every
// collective calls it exactly once per call, also when it sends nothing,
// so that the numbers agree across ranks.
call_t resolve_call(const char* name, runtime_t runtime, device_t device, endpoint_t endpoint,
                    matching_engine_t matching_engine, comp_t comp,
                    comp_semantic_t comp_semantic = comp_semantic_t::memory);

// Starts the schedule; `done` is signalled once with done, or fatal naming
// a rank whose crash cut a round.
void start(const call_t& call, schedule_t&& schedule, comp_impl_t* done);

// Blocking: runs the schedule to completion and returns its status.
status_t run_blocking(const call_t& call, schedule_t&& schedule);

// The public operations' common end: non-blocking when call.comp is set,
// else blocking, throwing std::runtime_error naming a crashed peer.
void run(const call_t& call, schedule_t&& schedule);

}  // namespace collective
}  // namespace lci::detail
