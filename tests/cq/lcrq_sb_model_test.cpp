// Model check of the LCRQ's empty answer against the total order of the
// queue operations (production source of lci/cq/cq_lcrq.hpp under Relacy).
//
// Two queues, store-buffering shape: thread 0 pushes A onto q1, then pops q2;
// thread 1 pushes B onto q2, then pops q1. In any execution of linearizable
// queues one of the two pops comes after the other thread's push, so the pops
// cannot both answer empty. A pop that answers empty on data that happened
// before it (happens-before) would already fail lcrq_model_test; this test
// catches an empty answer that ignores a push which precedes it only in the
// total order, which is what the seq_cst of the empty pop's tail loads is
// for: [P2], the test before a ticket is taken, and [T], after one
// (lci/cq/detail/crq_segment.hpp); the broken variant weakens both.
//
// Why two more threads: with fresh queues, each pop that answers empty took
// ticket 0 and emptied cell 0 before the other thread's push reached that
// cell, and every cell access is a full barrier in the model; both pops
// would need that, a cycle. Threads 2 and 3 each take ticket 0 of one queue
// (q2, q1) and are preempted before writing the cell, so the pushes of A and
// B land in cell 1 and the pops can answer empty without ever touching the
// cells of the other thread, i.e. without a happens-before edge between
// threads 0 and 1. Thread 1's pop of q1 then reads a tail that covers only
// thread 3's ticket, which fix_state() leaves as it is (no CAS that thread
// 0's push of A could synchronize with), so thread 0's [T] load of q2's tail
// is the only place the total order can show: a tail of 1 (thread 2's
// ticket) instead of 2 (B's) answers empty. The preempted pushes find their
// cell emptied by a pop and store on the next lap.
//
// Search: random schedules (Relacy seeds each from its iteration number, so
// a run is reproducible). The schedule above needs only two preemptions, but
// the context-bound search over four threads of lcrq_t operations had not
// reached it after five minutes; with [T] relaxed, about 8 in a million
// random schedules end with both pops empty.

#include "lci/cq/cq_lcrq.hpp"

#include "tests/cq/cq_model_fixture.hpp"
#include "tests/cq/lcrq_model_alloc.hpp"
#include "tests/model_check/model_check.hpp"

namespace {

using lci::cq::lcrq_t;

constexpr std::size_t ring_size = 2;  // the smallest the queue accepts
// Per queue: one pushing thread and one preempted pusher; one popping thread
// and the final drain.
constexpr int producers_max = 2;
constexpr int values_per_producer_max = 1;
constexpr int consumers_max = 2;

using fixture_t = lci::cq::model::queue_fixture_t<lcrq_t, producers_max,
                                                  values_per_producer_max,
                                                  consumers_max>;

struct store_buffering_t : rl::test_suite<store_buffering_t, 4> {
  fixture_t q1;
  fixture_t q2;
  bool popped[2];  // by threads 0 and 1

  void before() {
    q1.build(new lcrq_t(ring_size));
    q2.build(new lcrq_t(ring_size));
  }
  void thread(unsigned id) {
    switch (id) {
      case 0:
        q1.push(0, 0);
        popped[0] = q2.pop(0);
        break;
      case 1:
        q2.push(0, 0);
        popped[1] = q1.pop(0);
        break;
      case 2:
        q2.push(1, 0);
        break;
      default:
        q1.push(1, 0);
        break;
    }
  }
  void after() {
    RL_ASSERT(popped[0] || popped[1]);  // not both empty
    q1.drain_and_check();
    q2.drain_and_check();
  }
};

}  // namespace

int main() {
  using lci::model_check::run;
  return lci::model_check::exit_status({
      run<store_buffering_t>("lcrq: store buffering, 2 queues", rl::sched_random,
                             1000),
  });
}
