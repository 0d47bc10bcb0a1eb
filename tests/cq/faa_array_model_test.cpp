// Model checks of faa_array_t (production source of lci/cq/cq_faa_array.hpp
// under Relacy).
//
// Values are pointers to payload words written before the push; the popper
// reads the payload, so a value handed over without a happens-before edge is
// a data race Relacy reports (as is the slot's own value word, a util::var).
// after() drains the queue and checks: every accepted value popped exactly
// once, refused values never, at most `capacity` values left for the drain,
// and each producer's values in push order. A push or pop waiting on a slot
// spins with spin_pause (a Relacy yield); a wait that never ends is reported
// as a livelock.
#include "lci/cq/cq_faa_array.hpp"
#include "tests/cq/cq_model_fixture.hpp"
#include "tests/model_check/model_check.hpp"

namespace {

using lci::cq::faa_array_t;
using lci::util::atomic;
using lci::util::mo_relaxed;
using lci::util::var;

constexpr int producers_max = 2;
constexpr int values_per_producer_max = 3;
constexpr int consumers_max = 3;  // threads plus the final drain

using fixture_t = lci::cq::model::queue_fixture_t<faa_array_t, producers_max,
                                                  values_per_producer_max,
                                                  consumers_max>;

// Drains and checks; a bounded queue never holds more than its capacity.
void drain_and_check(fixture_t& world, std::size_t capacity) {
  RL_ASSERT(world.drain_and_check() <= capacity);
}

// The smallest race, explored exhaustively: one push against one pop on an
// empty queue of capacity 1.
struct push_vs_pop_t : rl::test_suite<push_vs_pop_t, 2> {
  static constexpr std::size_t capacity = 1;
  fixture_t world;
  void before() { world.build(new faa_array_t(capacity)); }
  void thread(unsigned id) {
    if (id == 0) {
      RL_ASSERT(world.push(0, 0));
    } else {
      world.pop(0);
    }
  }
  void after() { drain_and_check(world, capacity); }
};

// Capacity 1 (two slots): a pusher offers two values while a popper polls
// twice, on a queue that is empty or full at almost every step.
struct handover_t : rl::test_suite<handover_t, 2> {
  static constexpr std::size_t capacity = 1;
  fixture_t world;
  void before() { world.build(new faa_array_t(capacity)); }
  void thread(unsigned id) {
    if (id == 0) {
      world.push(0, 0);
      world.push(0, 1);
      return;
    }
    world.pop(0);
    world.pop(0);
  }
  void after() { drain_and_check(world, capacity); }
};

// Capacity 2 = slots: three pushes against three pops wrap the ring, so a
// push waits for the previous lap's pop of its slot.
struct wrap_t : rl::test_suite<wrap_t, 2> {
  static constexpr std::size_t capacity = 2;
  fixture_t world;
  void before() {
    world.build(new faa_array_t(capacity));
    RL_ASSERT(world.push(1, 0));  // the ring starts one lap in
    RL_ASSERT(world.pop(1));
  }
  void thread(unsigned id) {
    if (id == 0) {
      for (int i = 0; i < 3; ++i) world.push(0, i);
      return;
    }
    for (int i = 0; i < 3; ++i) world.pop(0);
  }
  void after() { drain_and_check(world, capacity); }
};

// Capacity 3 (four slots): two pushers race for the admission while a
// popper takes tickets; exercises capacity < slots.
struct two_pushers_t : rl::test_suite<two_pushers_t, 3> {
  static constexpr std::size_t capacity = 3;
  fixture_t world;
  void before() {
    world.build(new faa_array_t(capacity));
    RL_ASSERT(world.push(1, 0));
  }
  void thread(unsigned id) {
    if (id < 2) {
      world.push(static_cast<int>(id), id == 0 ? 0 : 1);
      world.push(static_cast<int>(id), id == 0 ? 1 : 2);
      return;
    }
    world.pop(0);
    world.pop(0);
  }
  void after() { drain_and_check(world, capacity); }
};

// Capacity 1: two poppers race for one value while it is being pushed.
struct two_poppers_t : rl::test_suite<two_poppers_t, 3> {
  static constexpr std::size_t capacity = 1;
  fixture_t world;
  void before() { world.build(new faa_array_t(capacity)); }
  void thread(unsigned id) {
    if (id == 0) {
      world.push(0, 0);
      world.push(0, 1);
      return;
    }
    world.pop(static_cast<int>(id) - 1);
  }
  void after() { drain_and_check(world, capacity); }
};

}  // namespace

int main() {
  using lci::model_check::run;
  return lci::model_check::exit_status({
      run<push_vs_pop_t>("faa: push vs pop on empty", rl::sched_full),
      run<handover_t>("faa: cap 1, 2 pushes vs 2 pops", rl::sched_bound, 8),
      run<wrap_t>("faa: cap 2, 3 pushes vs 3 pops, wraps", rl::sched_bound, 5),
      run<two_pushers_t>("faa: cap 3, 2 pushers + popper", rl::sched_bound, 4),
      run<two_poppers_t>("faa: cap 1, pusher + 2 poppers", rl::sched_bound, 5),
  });
}
