// collective_op_t: one collective in flight, walking its schedule's rounds.
// A round posts its messages with this object as their completion object;
// the round ends when every one completed (a message the network refused
// waits in the device's backlog and completes from there: the collective
// must not end, nor the rank finalize, while one is still there). The
// completion that ends a round runs the round's local work and posts the
// next round, so rounds advance inside whichever progress call completes
// them; the last round's end signals the caller's completion object.
#include "lci/collective/collective.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "lci/comp/comp_impl.hpp"
#include "lci/comp/sync.hpp"
#include "lci/progress/progress.hpp"
#include "lci/protocol/protocol.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/post_mode.hpp"
#include "lci/runtime/resolve.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"

namespace lci::detail::collective {

schedule_t::schedule_t(int rank_me, int rank_n, std::size_t item_size, reduce_op_t op)
    : rank_me_(rank_me), rank_n_(rank_n), item_size_(item_size), op_(op) {
  LCI_ASSERT(rank_n >= 1, "a collective needs a rank");
  LCI_ASSERT(rank_me >= 0 && rank_me < rank_n, "rank_me outside the rank count");
}

round_t& schedule_t::add_round() {
  rounds_.emplace_back();
  return rounds_.back();
}

void* schedule_t::scratch(std::size_t size_bytes) {
  // One byte at least: a zero-size block still needs a distinct address.
  // Not zero-filled (new char[], not make_unique): every algorithm writes
  // its scratch (a copy or a receive) before reading it, and filling a
  // vector-sized buffer on every call cost a reduce of 1 MiB more than its
  // messages did.
  scratch_.push_back(std::unique_ptr<char[]>(new char[size_bytes == 0 ? 1 : size_bytes]));
  return scratch_.back().get();
}

void schedule_t::send(round_t& round, int rank, const void* buffer, std::size_t size,
                      std::uint32_t step) {
  LCI_ASSERT(rank != rank_me_ && rank >= 0 && rank < rank_n_, "a collective sends to a peer");
  LCI_ASSERT(step < steps_max, "a collective step outside its tag field");
  // The protocol only reads a send's buffer; post_args_t has one pointer type.
  round.transfers.push_back({direction_t::OUT, rank, const_cast<void*>(buffer), size, step});
}

void schedule_t::recv(round_t& round, int rank, void* buffer, std::size_t size,
                      std::uint32_t step) {
  LCI_ASSERT(rank != rank_me_ && rank >= 0 && rank < rank_n_, "a collective receives from a peer");
  LCI_ASSERT(step < steps_max, "a collective step outside its tag field");
  round.transfers.push_back({direction_t::IN, rank, buffer, size, step});
}

void schedule_t::copy(round_t& round, const void* source, void* target, std::size_t size_bytes) {
  round.locals.push_back({false, source, nullptr, target, size_bytes});
}

void schedule_t::reduce(round_t& round, const void* left, const void* right, void* target,
                        std::size_t size_bytes) {
  LCI_ASSERT(op_ != nullptr, "a reduction without an operator");
  LCI_ASSERT(item_size_ != 0 && size_bytes % item_size_ == 0, "a reduction of partial items");
  round.locals.push_back({true, left, right, target, size_bytes});
}

void check_steps(std::size_t steps, const char* algorithm) {
  if (steps > steps_max) {
    throw std::invalid_argument(std::string("lci: ") + algorithm + " needs " +
                                std::to_string(steps) + " steps at this rank count; a collective's "
                                "tag has room for " + std::to_string(steps_max));
  }
}

void check_buffers(const char* op, const void* sendbuf, std::size_t send_bytes,
                   const void* recvbuf, std::size_t recv_bytes, const void* in_place) {
  if (send_bytes == 0 || recv_bytes == 0 || recvbuf == in_place) return;
  const auto send_first = reinterpret_cast<std::uintptr_t>(sendbuf);
  const auto recv_first = reinterpret_cast<std::uintptr_t>(recvbuf);
  // Both ranges are the caller's objects, so neither end wraps.
  const bool disjoint =
      recv_first >= send_first + send_bytes || send_first >= recv_first + recv_bytes;
  if (disjoint) return;
  throw std::invalid_argument(std::string("lci: ") + op + ": recvbuf overlaps sendbuf" +
                              (in_place == nullptr
                                   ? " (the buffers must not overlap)"
                                   : " (only recvbuf = sendbuf + rank_me x the block size, "
                                     "in place, may)"));
}

namespace {

class collective_op_t final : public comp_impl_t {
 public:
  collective_op_t(const post_args_t& base, tag_t tag_base, schedule_t&& schedule,
                  comp_impl_t* done)
      : comp_impl_t(comp_kind_t::handler),
        base_(base),
        tag_base_(tag_base),
        schedule_(std::move(schedule)),
        done_(done) {
    LCI_ASSERT(done != nullptr, "a collective without a completion object");
  }

  // Posts rounds until one must wait; deletes this after the last.
  void advance() {
    std::vector<round_t>& rounds = schedule_.rounds();
    while (round_index_ < rounds.size()) {
      const round_t& round = rounds[round_index_];
      // One completion per message, plus one held while posting so that a
      // completion signalled before every post returned cannot end the round.
      const int guarded = static_cast<int>(round.transfers.size()) + 1;
      pending_.store(guarded, util::mo_relaxed);  // relaxed: published by the posts' handoff
      int finished = 1;  // the guard
      for (const transfer_t& transfer : round.transfers) finished += post(transfer);
      // acq_rel: whoever ends the round sees every write of the round.
      if (pending_.fetch_sub(finished, util::mo_acq_rel) != finished) return;
      finish_round();
    }
    complete();
  }

  void signal(status_t status) override {
    // relaxed: read after the last decrement below (acq_rel) by complete().
    if (status.error == errorcode_t::fatal) failed_rank_.store(status.rank, util::mo_relaxed);
    if (pending_.fetch_sub(1, util::mo_acq_rel) != 1) return;
    finish_round();
    advance();
  }

 private:
  // 1 when the message finished at once (done, or not posted because its
  // peer is known dead, which fails the collective), else 0.
  int post(const transfer_t& transfer) {
    if (base_.device->runtime()->is_peer_dead(transfer.rank)) {
      failed_rank_.store(transfer.rank, util::mo_relaxed);  // relaxed: as in signal()
      return 1;
    }
    post_args_t args = base_;
    args.direction = transfer.direction;
    args.rank = transfer.rank;
    args.buffer = transfer.buffer;
    args.size = transfer.size;
    args.tag = tag_base_ | transfer.step;
    args.comp = this;
    args.mode = post_mode_t::done_posted_queued;  // refused -> backlog, signalled when it leaves
    return post_comm(args).is_done() ? 1 : 0;
  }

  // The round's messages all completed: its local work, then the next.
  void finish_round() {
    const round_t& round = schedule_.rounds()[round_index_];
    for (const local_t& local : round.locals) {
      if (!local.is_reduction) {
        if (local.target != local.left) std::memcpy(local.target, local.left, local.size_bytes);
        continue;
      }
      const std::size_t count = local.size_bytes / schedule_.item_size();
      if (count != 0) schedule_.op()(local.left, local.right, local.target, count);
    }
    ++round_index_;
  }

  void complete() {
    LCI_ASSERT(round_index_ == schedule_.rounds().size(), "a collective ended before its rounds");
    comp_impl_t* done = done_;
    // relaxed: the last round's acq_rel decrement ordered every record.
    const int failed_rank = failed_rank_.load(util::mo_relaxed);
    delete this;
    status_t status(failed_rank < 0 ? errorcode_t::done : errorcode_t::fatal);
    if (failed_rank >= 0) status.rank = failed_rank;
    done->signal(status);
  }

  const post_args_t base_;
  const tag_t tag_base_;
  schedule_t schedule_;
  comp_impl_t* const done_;
  std::size_t round_index_ = 0;
  util::atomic<int> pending_{0};
  util::atomic<int> failed_rank_{-1};  // a peer whose crash failed a round
};

tag_t tag_base_of(const call_t& call) {
  const tag_t ordinal = call.device->collective().ordinal & ((tag_t{1} << ordinal_bits) - 1);
  const tag_t sequence = call.sequence & ((tag_t{1} << sequence_bits) - 1);
  return (ordinal << (sequence_bits + step_bits)) | (sequence << step_bits);
}

}  // namespace

call_t resolve_call(const char* name, runtime_t runtime, device_t device, endpoint_t endpoint,
                    matching_engine_t matching_engine, comp_t comp,
                    comp_semantic_t comp_semantic) {
  runtime_impl_t& rt = resolve_runtime(runtime);
  if (device.is_empty() && !endpoint.is_empty()) device = device_t(endpoint.p_impl->device);
  device_impl_t& device_impl = resolve_device(rt, device);
  device_impl.require_packet_pool(name);
  matching_engine_impl_t& engine = matching_engine.is_empty()
                                       ? rt.collective_matching_engine()
                                       : resolve_matching_engine(rt, matching_engine);
  // relaxed: see device_impl_t::collective_state_t::sequence.
  const std::uint64_t sequence =
      device_impl.collective().sequence.fetch_add(1, util::mo_relaxed);
  return call_t{&rt, &device_impl, &engine, comp_semantic, resolve_comp(comp), sequence, name};
}

void start(const call_t& call, schedule_t&& schedule, comp_impl_t* done) {
  post_args_t base;
  base.device = call.device;
  base.matching_engine = call.matching_engine;
  base.matching_policy = matching_policy_t::rank_tag;
  base.comp_semantic = call.comp_semantic;
  (new collective_op_t(base, tag_base_of(call), std::move(schedule), done))->advance();
}

status_t run_blocking(const call_t& call, schedule_t&& schedule) {
  sync_impl_t finished(1);
  start(call, std::move(schedule), &finished);
  status_t status;
  while (!finished.test(&status)) {
    if (progress_device(*call.device).is_retry()) call.runtime->host().idle(call.name);
  }
  return status;
}

void run(const call_t& call, schedule_t&& schedule) {
  if (call.comp != nullptr) {
    start(call, std::move(schedule), call.comp);
    return;
  }
  const status_t status = run_blocking(call, std::move(schedule));
  if (status.error == errorcode_t::fatal) {
    throw std::runtime_error(std::string("lci: ") + call.name + ": rank " +
                             std::to_string(status.rank) +
                             " crashed before the collective completed");
  }
}

}  // namespace lci::detail::collective
