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
// once at the end. The blocking form waits on the same machinery.
#include <memory>
#include <stdexcept>

#include "lci/api/lci_generated.hpp"
#include "lci/comp/comp_impl.hpp"
#include "lci/comp/counter.hpp"
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
      detail::post_args_t send = base_;
      send.direction = direction_t::OUT;
      send.rank = (rank_me + distance) % rank_n;
      send.tag = tag;
      send.comp = this;
      send.allow_retry = false;  // refused -> backlog, signalled when it leaves
      if (detail::post_comm(send).is_done()) ++finished;
      detail::post_args_t recv = base_;
      recv.direction = direction_t::IN;
      recv.rank = (rank_me - distance + rank_n) % rank_n;
      recv.tag = tag;
      recv.comp = this;
      recv.allow_retry = false;
      if (detail::post_comm(recv).is_done()) ++finished;
      // acq_rel: whoever ends the round sees every write of the round.
      if (pending_.fetch_sub(finished, util::mo_acq_rel) != finished) return;
    }
    detail::comp_impl_t* done = done_;
    delete this;
    if (done != nullptr) done->signal(status_t(errorcode_t::done));
  }

  void signal(status_t) override {
    if (pending_.fetch_sub(1, util::mo_acq_rel) == 1) advance();
  }

 private:
  const detail::post_args_t base_;
  const tag_t sequence_;
  detail::comp_impl_t* const done_;
  int round_ = 0;
  util::atomic<int> pending_{0};
};

}  // namespace

void barrier_x::call_impl(device_t device, endpoint_t endpoint, matching_engine_t matching_engine,
                          comp_semantic_t comp_semantic, comp_t comp, runtime_t runtime) const {
  (void)comp_semantic;  // empty messages: memory and network semantics agree
  detail::runtime_impl_t& rt = detail::resolve_runtime(runtime);
  if (device.is_empty() && !endpoint.is_empty()) device = device_t(endpoint.p_impl->device);
  detail::post_args_t base;
  base.device = &detail::resolve_device(rt, device);
  base.matching_engine = matching_engine.is_empty() ? &rt.collective_matching_engine()
                                                    : &detail::resolve_matching_engine(rt, matching_engine);
  base.matching_policy = matching_policy_t::rank_tag;
  const std::uint64_t sequence = rt.next_barrier_sequence();
  detail::comp_impl_t* user_comp = detail::resolve_comp(comp);
  if (user_comp != nullptr) {
    (new barrier_op_t(base, sequence, user_comp))->advance();
    return;
  }
  detail::counter_impl_t finished;
  (new barrier_op_t(base, sequence, &finished))->advance();
  while (finished.get() == 0) {
    if (detail::progress_device(*base.device).is_retry()) rt.host().idle("barrier");
  }
}

}  // namespace lci
