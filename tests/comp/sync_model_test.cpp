// Model checks of sync_impl_t (the production source of lci/comp/sync.cpp,
// compiled under Relacy): signallers against one tester, for the atomic-flag
// layout (threshold 1) and the slot array with two counters (threshold 2
// and 3), over one and two rounds.
//
// Each signaller records a status whose tag names it; the tester polls
// test() until it returns true and checks that it got every tag of the round
// exactly once. A slot read before its write is published is a data race on
// the slot (a util::var), which Relacy reports; so is a next-round write
// that is not ordered after the tester's read. The second round begins when
// the tester, after its test() returned true, releases `round` (the
// synchronizer's contract: a round's signals happen after the test() that
// ended the previous one).
#include "lci/comp/sync.hpp"
#include "tests/model_check/model_check.hpp"

namespace {

using lci::status_t;
using lci::detail::sync_impl_t;
using lci::util::atomic;
using lci::util::mo_acquire;
using lci::util::mo_release;

constexpr int signallers_max = 3;

status_t tagged(int tag) {
  status_t status(lci::errorcode_t::done);
  status.tag = static_cast<lci::tag_t>(tag);
  status.rank = tag;
  return status;
}

// Polls until the round is complete, then checks it holds exactly the tags
// first_tag .. first_tag + threshold - 1.
void wait_round(sync_impl_t& sync, int first_tag) {
  status_t out[signallers_max];
  while (!sync.test(out)) lci::util::spin_pause();
  bool seen[signallers_max] = {};
  for (int i = 0; i < sync.threshold(); ++i) {
    const int index = static_cast<int>(out[i].tag) - first_tag;
    RL_ASSERT(index >= 0 && index < sync.threshold());
    RL_ASSERT(!seen[index]);
    RL_ASSERT(out[i].rank == static_cast<int>(out[i].tag));
    RL_ASSERT(out[i].is_done());
    seen[index] = true;
  }
  // Re-armed: nothing is ready until the next round's signals, which wait
  // for the caller to release them.
  RL_ASSERT(!sync.test(nullptr));
}

// threshold signallers and one tester (the last thread), `rounds` rounds.
template <int threshold, int rounds>
struct rounds_t : rl::test_suite<rounds_t<threshold, rounds>, threshold + 1> {
  sync_impl_t* sync = nullptr;
  atomic<int> round{0};

  void before() { sync = new sync_impl_t(threshold); }
  void thread(unsigned id) {
    if (static_cast<int>(id) == threshold) {
      for (int r = 0; r < rounds; ++r) {
        wait_round(*sync, r * threshold);
        // release: pairs with the signallers' acquire below.
        round.store(r + 1, mo_release);
      }
      return;
    }
    for (int r = 0; r < rounds; ++r) {
      // acquire: pairs with the tester's release; this round's signal
      // happens after the test() that ended the last one.
      while (round.load(mo_acquire) != r) lci::util::spin_pause();
      sync->signal(tagged(r * threshold + static_cast<int>(id)));
    }
  }
  void after() { delete sync; }
};

}  // namespace

int main() {
  using lci::model_check::run;
  return lci::model_check::exit_status({
      run<rounds_t<1, 1>>("sync: flag, 1 signaller", rl::sched_full),
      run<rounds_t<1, 2>>("sync: flag, 1 signaller, 2 rounds", rl::sched_bound,
                          4),
      run<rounds_t<2, 1>>("sync: slots, 2 signallers", rl::sched_bound, 4),
      run<rounds_t<2, 2>>("sync: slots, 2 signallers, 2 rounds",
                          rl::sched_bound, 2),
      run<rounds_t<3, 1>>("sync: slots, 3 signallers", rl::sched_bound, 3),
  });
}
