// Model checks of lcrq_t (production source of lci/cq/cq_lcrq.hpp and
// lci/cq/detail/* under Relacy).
//
// The 128-bit cell CAS (cmpxchg16b) has no Relacy counterpart: it is modelled
// by the LCI_MODEL_CHECK branch of lci::util::atomic_u64_pair, two Relacy
// atomics (lo, hi) and a model-only guard word taken by compare_exchange and
// by each half-load. A reader can thus see halves written by two different
// CAS2s (as on hardware) but never a half-finished one; every cell access is
// a full barrier, as cmpxchg16b is.
//
// Under LCI_MODEL_CHECK the structure keeps its code but shrinks two
// constants (see detail/hazard_slots.hpp and detail/segment_pool.hpp): 4
// hazard slots instead of 64 (fewer scheduling points per scan) and one free
// segment slot instead of 4, so that a few ring turnovers both recycle a
// segment and delete one. A deleted segment is then an object Relacy tracks:
// any access through a stale pointer is reported as ACCESS TO FREED MEMORY.
//
// Every suite uses the smallest ring (2 cells): 3 pushes close a ring and
// link a new segment; pops drain it, advance head_segment_ and retire the old
// segment through the hazard pointers. Values are pointers to payload words
// written before the push: a popper reads the payload, so a value published
// without a happens-before edge is a data race Relacy reports. after() drains
// the queue and checks that every value was popped exactly once and that each
// producer's values came out in the order it pushed them; Relacy also reports
// leaked segments.
// (Use-after-free reports rely on -fno-lifetime-dse, which relacy_test sets
// for every model test.)

#include "lci/cq/cq_lcrq.hpp"

#include "tests/cq/cq_model_fixture.hpp"
#include "tests/cq/lcrq_model_alloc.hpp"
#include "tests/model_check/model_check.hpp"

namespace {

using lci::cq::lcrq_t;
using lci::util::atomic;
using lci::util::mo_relaxed;
using lci::util::var;

constexpr std::size_t ring_size = 2;  // the smallest the queue accepts
constexpr int producers_max = 3;
constexpr int values_per_producer_max = 6;
constexpr int consumers_max = 4;  // threads plus the final drain

using fixture_t = lci::cq::model::queue_fixture_t<lcrq_t, producers_max,
                                                  values_per_producer_max,
                                                  consumers_max>;

// Drains and checks, after first checking the fixture's record against the
// test's own plan: producer p pushed exactly values 0 .. pushed_count[p]-1,
// and the threads used consumer indices below the drain's.
void drain_and_check(fixture_t& world, const int (&pushed_count)[producers_max],
                     int thread_consumers_count) {
  RL_ASSERT(thread_consumers_count <= fixture_t::drain_consumer);
  for (int p = 0; p < producers_max; ++p) {
    for (int i = 0; i < values_per_producer_max; ++i) {
      RL_ASSERT(world.accepted[p][i] == (i < pushed_count[p]));
    }
  }
  world.drain_and_check();
}

// The smallest race, explored exhaustively: one push against one pop on an
// empty queue. The pop returns the value or empty; either way the drain
// finds the rest.
struct push_vs_pop_t : rl::test_suite<push_vs_pop_t, 2> {
  fixture_t world;
  void before() { world.build(new lcrq_t(ring_size)); }
  void thread(unsigned id) {
    if (id == 0) {
      world.push(0, 0);
    } else {
      world.pop(0);
    }
  }
  void after() {
    const int pushed[producers_max] = {1, 0, 0};
    drain_and_check(world, pushed, 1);
  }
};

// Concurrent push and pop on an (almost) empty queue: one pusher, one popper
// that polls twice. An empty answer must not lose the value (fix_state pulls
// the tail past tickets the popper already gave up on).
struct almost_empty_t : rl::test_suite<almost_empty_t, 2> {
  fixture_t world;
  void before() { world.build(new lcrq_t(ring_size)); }
  void thread(unsigned id) {
    if (id == 0) {
      world.push(0, 0);
      world.push(0, 1);
      return;
    }
    world.pop(0);
    world.pop(0);
  }
  void after() {
    const int pushed[producers_max] = {2, 0, 0};
    drain_and_check(world, pushed, 1);
  }
};

// Segment close and turnover against a popper: 3 pushes on a 2-cell ring
// close it and link a recycled segment holding the third value, while the
// popper drains the ring, moves head_segment_ on and retires the old segment
// (recycled into the free array, or parked if still protected).
struct turnover_t : rl::test_suite<turnover_t, 2> {
  fixture_t world;
  void before() { world.build(new lcrq_t(ring_size)); }
  void thread(unsigned id) {
    if (id == 0) {
      for (int i = 0; i < 3; ++i) world.push(0, i);
      return;
    }
    for (int i = 0; i < 3; ++i) world.pop(0);
  }
  void after() {
    const int pushed[producers_max] = {3, 0, 0};
    drain_and_check(world, pushed, 1);
  }
};

// Two pushers find the full ring, close it and race to append their own
// segment (the loser returns its unpublished segment and retries on the
// winner's), while a popper drains and turns the head over.
struct append_race_t : rl::test_suite<append_race_t, 3> {
  fixture_t world;
  void before() {
    world.build(new lcrq_t(ring_size));
    world.push(0, 0);  // the ring is full (tail = 2), not yet closed
    world.push(0, 1);
  }
  void thread(unsigned id) {
    if (id < 2) {
      world.push(1 + static_cast<int>(id), 0);
      return;
    }
    world.pop(0);
    world.pop(0);
    world.pop(0);
  }
  void after() {
    const int pushed[producers_max] = {2, 1, 1};
    drain_and_check(world, pushed, 1);
  }
};

// Two poppers race over a ring turnover. before() pushes v0..v4 (segments
// [v0 v1] [v2 v3] [v4]) and pops v0..v2, which retires the first segment
// into the one free slot; the threads then pop twice each: both try to
// advance head_segment_ past [v3], and the winner retires it while the other
// may still hold it in its hazard slot (then it is parked on the retired
// stack). Unprotected, it is deleted (the free slot is taken): a popper that
// kept a stale, unprotected pointer to it touches freed memory.
struct pop_race_turnover_t : rl::test_suite<pop_race_turnover_t, 2> {
  static constexpr int setup_consumer = 2;
  fixture_t world;
  void before() {
    world.build(new lcrq_t(ring_size));
    for (int i = 0; i < 5; ++i) world.push(0, i);
    for (int i = 0; i < 3; ++i) RL_ASSERT(world.pop(setup_consumer));
  }
  void thread(unsigned id) {
    for (int i = 0; i < 2; ++i) world.pop(static_cast<int>(id));
  }
  void after() {
    const int pushed[producers_max] = {5, 0, 0};
    drain_and_check(world, pushed, setup_consumer + 1);
  }
};

// A thread's owned hazard slot still names the segment of its last
// operation when its next one starts (detail/hazard_slots.hpp): that
// operation must publish the segment it loads now, or a reclaimer deletes it
// under it. before() pushes p0's v0..v5 and p1's v0..v1 (segments [0 1]
// [2 3] [4 5] [p1: 0 1]) and pops v0..v2, which retires the first segment
// into the one free slot. Thread 0 pops v3 (its slot keeps [2 3]); thread
// 1 then pops [2 3] off the list (parked: thread 0's slot names it) and v4;
// then thread 0 pops again while thread 1 pops v5 and moves past [4 5]. The
// second pop must protect [4 5] before using it: else thread 1, finding the
// free slot full, deletes [4 5] under it. Three flags order the threads'
// steps up to thread 0's second pop, so that the search spends its context
// bound on that race itself; relaxed, so they order nothing the queue relies
// on.
struct owned_slot_goes_stale_t : rl::test_suite<owned_slot_goes_stale_t, 2> {
  static constexpr int setup_consumer = 2;
  fixture_t world;
  atomic<int> stale_slot_left;   // thread 0 popped once
  atomic<int> head_moved_on;     // thread 1 moved the head to [4 5]
  atomic<int> second_pop_starts;  // thread 0 is about to pop again
  void before() {
    world.build(new lcrq_t(ring_size));
    for (int i = 0; i < 6; ++i) world.push(0, i);
    for (int i = 0; i < 2; ++i) world.push(1, i);
    for (int i = 0; i < 3; ++i) RL_ASSERT(world.pop(setup_consumer));
    stale_slot_left.store(0, mo_relaxed);
    head_moved_on.store(0, mo_relaxed);
    second_pop_starts.store(0, mo_relaxed);
  }
  void thread(unsigned id) {
    if (id == 0) {
      RL_ASSERT(world.pop(0));  // v3
      stale_slot_left.store(1, mo_relaxed);
      while (head_moved_on.load(mo_relaxed) == 0) lci::util::spin_pause();
      second_pop_starts.store(1, mo_relaxed);
      world.pop(0);
      return;
    }
    while (stale_slot_left.load(mo_relaxed) == 0) lci::util::spin_pause();
    RL_ASSERT(world.pop(1));  // v4, after moving the head past [2 3]
    head_moved_on.store(1, mo_relaxed);
    while (second_pop_starts.load(mo_relaxed) == 0) lci::util::spin_pause();
    for (int i = 0; i < 2; ++i) world.pop(1);
  }
  void after() {
    const int pushed[producers_max] = {6, 2, 0};
    drain_and_check(world, pushed, setup_consumer + 1);
  }
};

// Three threads, each pushing then popping (the CQ pattern of a thread that
// polls the queue it feeds), across a ring turnover.
struct three_mixed_t : rl::test_suite<three_mixed_t, 3> {
  fixture_t world;
  void before() {
    world.build(new lcrq_t(ring_size));
    world.push(0, 0);
  }
  void thread(unsigned id) {
    const int producer = static_cast<int>(id);
    world.push(producer, producer == 0 ? 1 : 0);
    world.pop(producer);
  }
  void after() {
    const int pushed[producers_max] = {2, 1, 1};
    drain_and_check(world, pushed, 3);
  }
};

}  // namespace

// Context bounds: the largest that keeps the binary at a few seconds
// (exhaustive search does not finish even for push_vs_pop_t: every cell
// access is 3-6 Relacy operations, every operation claims a hazard slot).
// lcrq_model_deep_test (manual) raises each bound by one.
#if defined(LCI_CQ_MODEL_DEEP)
constexpr unsigned deeper = 1;
#else
constexpr unsigned deeper = 0;
#endif

int main() {
  using lci::model_check::run;
  return lci::model_check::exit_status({
      run<push_vs_pop_t>("lcrq: push vs pop on empty", rl::sched_bound, 3 + deeper),
      run<almost_empty_t>("lcrq: 2 pushes vs 2 pops, almost empty",
                          rl::sched_bound, 2 + deeper),
      run<turnover_t>("lcrq: ring close + turnover vs popper", rl::sched_bound,
                      2 + deeper),
      run<append_race_t>("lcrq: 2 pushers race append + popper", rl::sched_bound,
                         1 + deeper),
      run<pop_race_turnover_t>("lcrq: 2 poppers race turnover, retire",
                               rl::sched_bound, 1 + deeper),
      run<three_mixed_t>("lcrq: 3 threads push+pop over turnover",
                         rl::sched_bound, 1 + deeper),
      run<owned_slot_goes_stale_t>("lcrq: an owned slot left on an older segment",
                                   rl::sched_bound, 1 + deeper),
  });
}
