// Model check of faa_array_t's full and empty answers against the total
// order of the queue operations (production source of
// lci/cq/cq_faa_array.hpp under Relacy).
//
// Two queues in store-buffering shape, once for each answer:
// - empty: thread 0 pushes onto q1, then pops q2; thread 1 pushes onto q2,
//   then pops q1. In any execution of linearizable queues one of the pops
//   comes after the other thread's push, so they cannot both answer empty.
// - full: both queues hold capacity (1) values; thread 0 pops q1, then
//   pushes onto q2; thread 1 pops q2, then pushes onto q1. One of the pushes
//   comes after the other thread's pop, so they cannot both answer full.
// An answer that ignores an operation which happened before it
// (happens-before) fails faa_array_model_test already. Here the two threads
// share no happens-before edge when both answers are wrong (an empty pop and
// a full push touch no slot), so only the total order S of the seq_cst
// accesses to tail_ and head_ rules the outcome out: what the seq_cst of the
// second load of each ticket ([A2] head_ for a push, [B2] tail_ for a pop)
// and of the ticket CASes ([A], [B]) are for. Broken variants
// faa_array_relaxed_full_head and faa_array_relaxed_empty_tail weaken those
// loads; tools/mutate weakens the CASes (docs/verification.md).
#include "lci/cq/cq_faa_array.hpp"

#include "tests/cq/cq_model_fixture.hpp"
#include "tests/model_check/model_check.hpp"

namespace {

using lci::cq::faa_array_t;

// Per queue: the thread that pushes and the values put in before the
// threads start; the thread that pops and the final drain.
constexpr int producers_max = 2;
constexpr int values_per_producer_max = 1;
constexpr int consumers_max = 2;

using fixture_t = lci::cq::model::queue_fixture_t<faa_array_t, producers_max,
                                                  values_per_producer_max,
                                                  consumers_max>;

struct not_both_empty_t : rl::test_suite<not_both_empty_t, 2> {
  fixture_t q1;
  fixture_t q2;
  bool popped[2];

  void before() {
    q1.build(new faa_array_t(1));
    q2.build(new faa_array_t(1));
  }
  void thread(unsigned id) {
    fixture_t& mine = id == 0 ? q1 : q2;
    fixture_t& other = id == 0 ? q2 : q1;
    RL_ASSERT(mine.push(0, 0));  // capacity 1, empty: accepted
    popped[id] = other.pop(0);
  }
  void after() {
    RL_ASSERT(popped[0] || popped[1]);
    q1.drain_and_check();
    q2.drain_and_check();
  }
};

struct not_both_full_t : rl::test_suite<not_both_full_t, 2> {
  fixture_t q1;
  fixture_t q2;
  bool pushed[2];

  void before() {
    q1.build(new faa_array_t(1));
    q2.build(new faa_array_t(1));
    RL_ASSERT(q1.push(1, 0) && q2.push(1, 0));  // full
  }
  void thread(unsigned id) {
    fixture_t& mine = id == 0 ? q1 : q2;
    fixture_t& other = id == 0 ? q2 : q1;
    RL_ASSERT(mine.pop(0));  // full: a value is there
    pushed[id] = other.push(0, 0);
  }
  void after() {
    RL_ASSERT(pushed[0] || pushed[1]);
    q1.drain_and_check();
    q2.drain_and_check();
  }
};

}  // namespace

int main() {
  using lci::model_check::run;
  return lci::model_check::exit_status({
      run<not_both_empty_t>("faa_array: store buffering, empty", rl::sched_bound, 2),
      run<not_both_full_t>("faa_array: store buffering, full", rl::sched_bound, 2),
  });
}
