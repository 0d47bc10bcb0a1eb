// barrier(): a dissemination barrier (Hensgen, Finkel & Manber): in round k
// every rank sends an empty message to rank (me + 2^k) mod n and waits for
// one from rank (me - 2^k) mod n; after ceil(log2 n) rounds every rank has
// heard, directly or not, from every other. Messages go through a matching
// engine with the rank_tag policy; the tag names the barrier's sequence
// number (barriers are collective, so every rank numbers them alike) and
// the round, so rounds of consecutive barriers never match each other.
//
// Non-blocking form (option comp): the rounds advance from the completion
// of each round's receive, inside progress; the user's comp is signalled
// once at the end, fatal (naming the rank) when a round failed because a
// peer crashed. The blocking form waits on the same machinery.
#include "lci/collective/barrier.hpp"

#include <memory>
#include <stdexcept>
#include <string>

#include "lci/api/lci_generated.hpp"
#include "lci/comp/comp_impl.hpp"
#include "lci/comp/sync.hpp"
#include "lci/progress/progress.hpp"
#include "lci/protocol/protocol.hpp"
#include "lci/runtime/resolve.hpp"

namespace lci {

namespace {

constexpr unsigned barrier_round_bits = 6;  // up to 2^64 ranks' worth of rounds
constexpr tag_t barrier_sequence_mask = (tag_t{1} << (32 - barrier_round_bits)) - 1;

// One barrier in flight: the completion object of its own sends and
// receives. A round ends when both its send and its receive completed (a
// send refused by the network waits in the backlog; the barrier must not
// end, and the rank must not finalize, while it is still there).
class barrier_op_t final : public detail::comp_impl_t {
 public:
  barrier_op_t(const detail::post_args_t& base, std::uint64_t sequence, detail::comp_impl_t* done)
      : comp_impl_t(detail::comp_kind_t::handler),
        base_(base),
        sequence_(sequence & barrier_sequence_mask),
        done_(done) {}

  // Starts rounds until one must wait; deletes this after the last.
  void advance() {
    const int rank_n = base_.device->runtime()->rank_n();
    const int rank_me = base_.device->runtime()->rank_me();
    while ((1 << round_) < rank_n) {
      const int distance = 1 << round_;
      const tag_t tag = (sequence_ << barrier_round_bits) | static_cast<tag_t>(round_);
      ++round_;
      // Two completions to wait for, plus one held while posting so that a
      // completion signalled before both posts returned cannot end the round.
      pending_.store(3, util::mo_relaxed);  // relaxed: published by the posts' handoff
      int finished = 1;  // the guard
      finished += post_side(direction_t::OUT, (rank_me + distance) % rank_n, tag);
      finished += post_side(direction_t::IN, (rank_me - distance + rank_n) % rank_n, tag);
      // acq_rel: whoever ends the round sees every write of the round.
      if (pending_.fetch_sub(finished, util::mo_acq_rel) != finished) return;
    }
    detail::comp_impl_t* done = done_;
    // relaxed: the last round's acq_rel decrement ordered every record.
    const int failed_rank = failed_rank_.load(util::mo_relaxed);
    delete this;
    status_t status(failed_rank < 0 ? errorcode_t::done : errorcode_t::fatal);
    if (failed_rank >= 0) status.rank = failed_rank;
    done->signal(status);
  }

  // Posts one side of a round: 1 when it finished at once (done, or not
  // posted because the peer is known dead, which fails the round), else 0.
  int post_side(direction_t direction, int rank, tag_t tag) {
    if (base_.device->runtime()->is_peer_dead(rank)) {
      failed_rank_.store(rank, util::mo_relaxed);  // relaxed: as in signal()
      return 1;
    }
    detail::post_args_t args = base_;
    args.direction = direction;
    args.rank = rank;
    args.tag = tag;
    args.comp = this;
    args.allow_retry = false;  // refused -> backlog, signalled when it leaves
    return detail::post_comm(args).is_done() ? 1 : 0;
  }

  void signal(status_t status) override {
    // relaxed: read after the last decrement below (acq_rel) by advance().
    if (status.error == errorcode_t::fatal) failed_rank_.store(status.rank, util::mo_relaxed);
    if (pending_.fetch_sub(1, util::mo_acq_rel) == 1) advance();
  }

 private:
  const detail::post_args_t base_;
  const tag_t sequence_;
  detail::comp_impl_t* const done_;
  int round_ = 0;
  util::atomic<int> pending_{0};
  util::atomic<int> failed_rank_{-1};  // a peer whose crash failed a round
};

detail::post_args_t barrier_base(detail::device_impl_t& device,
                                 detail::matching_engine_impl_t& matching_engine) {
  detail::post_args_t base;
  base.device = &device;
  base.matching_engine = &matching_engine;
  base.matching_policy = matching_policy_t::rank_tag;
  return base;
}

}  // namespace

namespace detail {

status_t run_barrier(runtime_impl_t& rt, device_impl_t& device,
                     matching_engine_impl_t& matching_engine) {
  sync_impl_t finished(1);
  (new barrier_op_t(barrier_base(device, matching_engine), rt.next_barrier_sequence(),
                    &finished))
      ->advance();
  status_t status;
  while (!finished.test(&status)) {
    if (progress_device(device).is_retry()) rt.host().idle("barrier");
  }
  return status;
}

}  // namespace detail

void barrier_x::call_impl(device_t device, endpoint_t endpoint, matching_engine_t matching_engine,
                          comp_semantic_t comp_semantic, comp_t comp, runtime_t runtime) const {
  (void)comp_semantic;  // empty messages: memory and network semantics agree
  detail::runtime_impl_t& rt = detail::resolve_runtime(runtime);
  if (device.is_empty() && !endpoint.is_empty()) device = device_t(endpoint.p_impl->device);
  detail::device_impl_t& device_impl = detail::resolve_device(rt, device);
  detail::matching_engine_impl_t& engine = matching_engine.is_empty()
                                               ? rt.collective_matching_engine()
                                               : detail::resolve_matching_engine(rt, matching_engine);
  detail::comp_impl_t* user_comp = detail::resolve_comp(comp);
  if (user_comp != nullptr) {
    (new barrier_op_t(barrier_base(device_impl, engine), rt.next_barrier_sequence(),
                      user_comp))
        ->advance();
    return;
  }
  const status_t status = detail::run_barrier(rt, device_impl, engine);
  if (status.error == errorcode_t::fatal) {
    throw std::runtime_error("lci: barrier: rank " + std::to_string(status.rank) +
                             " crashed before the barrier completed");
  }
}

}  // namespace lci
