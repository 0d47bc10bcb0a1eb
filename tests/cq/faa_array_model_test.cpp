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
#include "tests/model_check/model_check.hpp"

namespace {

using lci::cq::faa_array_t;
using lci::util::atomic;
using lci::util::mo_relaxed;
using lci::util::var;

constexpr int producers_max = 2;
constexpr int values_per_producer_max = 3;
constexpr int consumers_max = 3;  // threads plus the final drain

// Shared fixture. Value (p, i) is &payload[p][i], holding 100 * p + i + 1.
struct fixture_t {
  faa_array_t* queue = nullptr;
  var<int> payload[producers_max][values_per_producer_max];
  atomic<int> popped_count[producers_max][values_per_producer_max];
  bool accepted[producers_max][values_per_producer_max];
  int last_popped[consumers_max][producers_max];  // sequence, -1 = none
  int popped_by[producers_max][values_per_producer_max];

  void build(std::size_t capacity) {
    queue = new faa_array_t(capacity);
    for (int p = 0; p < producers_max; ++p) {
      for (int i = 0; i < values_per_producer_max; ++i) {
        // relaxed: before the threads start.
        popped_count[p][i].store(0, mo_relaxed);
        accepted[p][i] = false;
        popped_by[p][i] = -1;
      }
    }
    for (int c = 0; c < consumers_max; ++c) {
      for (int p = 0; p < producers_max; ++p) last_popped[c][p] = -1;
    }
  }

  bool push(int producer, int sequence) {
    payload[producer][sequence].store(100 * producer + sequence + 1);
    accepted[producer][sequence] = queue->push(&payload[producer][sequence]);
    return accepted[producer][sequence];
  }

  bool pop(int consumer) {
    void* value = queue->pop();
    if (value == nullptr) return false;
    const int index = static_cast<int>(static_cast<var<int>*>(value) - &payload[0][0]);
    RL_ASSERT(index >= 0 && index < producers_max * values_per_producer_max);
    const int producer = index / values_per_producer_max;
    const int sequence = index % values_per_producer_max;
    RL_ASSERT(payload[producer][sequence].load() == 100 * producer + sequence + 1);
    // relaxed: only the count matters (a duplicate reads 1).
    RL_ASSERT(popped_count[producer][sequence].fetch_add(1, mo_relaxed) == 0);
    RL_ASSERT(sequence > last_popped[consumer][producer]);
    last_popped[consumer][producer] = sequence;
    popped_by[producer][sequence] = consumer;
    return true;
  }

  void drain_and_check(std::size_t capacity) {
    const int drain = consumers_max - 1;
    std::size_t drained_count = 0;
    while (pop(drain)) ++drained_count;
    RL_ASSERT(drained_count <= capacity);  // never more stored than capacity
    for (int p = 0; p < producers_max; ++p) {
      for (int i = 0; i < values_per_producer_max; ++i) {
        // relaxed: all threads joined.
        const int count = popped_count[p][i].load(mo_relaxed);
        RL_ASSERT(count == (accepted[p][i] ? 1 : 0));
        for (int j = i + 1; j < values_per_producer_max; ++j) {
          // j popped by a thread, i left for the drain: i was overtaken.
          RL_ASSERT(!(popped_by[p][i] == drain && popped_by[p][j] >= 0 &&
                      popped_by[p][j] != drain));
        }
      }
    }
    delete queue;  // asserts tickets and size agree
  }
};

// The smallest race, explored exhaustively: one push against one pop on an
// empty queue of capacity 1.
struct push_vs_pop_t : rl::test_suite<push_vs_pop_t, 2> {
  static constexpr std::size_t capacity = 1;
  fixture_t world;
  void before() { world.build(capacity); }
  void thread(unsigned id) {
    if (id == 0) {
      RL_ASSERT(world.push(0, 0));
    } else {
      world.pop(0);
    }
  }
  void after() { world.drain_and_check(capacity); }
};

// Capacity 1 (two slots): a pusher offers two values while a popper polls
// twice, on a queue that is empty or full at almost every step.
struct handover_t : rl::test_suite<handover_t, 2> {
  static constexpr std::size_t capacity = 1;
  fixture_t world;
  void before() { world.build(capacity); }
  void thread(unsigned id) {
    if (id == 0) {
      world.push(0, 0);
      world.push(0, 1);
      return;
    }
    world.pop(0);
    world.pop(0);
  }
  void after() { world.drain_and_check(capacity); }
};

// Capacity 2 = slots: three pushes against three pops wrap the ring, so a
// push waits for the previous lap's pop of its slot.
struct wrap_t : rl::test_suite<wrap_t, 2> {
  static constexpr std::size_t capacity = 2;
  fixture_t world;
  void before() {
    world.build(capacity);
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
  void after() { world.drain_and_check(capacity); }
};

// Capacity 3 (four slots): two pushers race for the admission while a
// popper takes tickets; exercises capacity < slots.
struct two_pushers_t : rl::test_suite<two_pushers_t, 3> {
  static constexpr std::size_t capacity = 3;
  fixture_t world;
  void before() {
    world.build(capacity);
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
  void after() { world.drain_and_check(capacity); }
};

// Capacity 1: two poppers race for one value while it is being pushed.
struct two_poppers_t : rl::test_suite<two_poppers_t, 3> {
  static constexpr std::size_t capacity = 1;
  fixture_t world;
  void before() { world.build(capacity); }
  void thread(unsigned id) {
    if (id == 0) {
      world.push(0, 0);
      world.push(0, 1);
      return;
    }
    world.pop(static_cast<int>(id) - 1);
  }
  void after() { world.drain_and_check(capacity); }
};

}  // namespace

int main() {
  using lci::model_check::run;
  return lci::model_check::exit_status({
      run<push_vs_pop_t>("faa: push vs pop on empty", rl::sched_full),
      run<handover_t>("faa: cap 1, 2 pushes vs 2 pops", rl::sched_bound, 4),
      run<wrap_t>("faa: cap 2, 3 pushes vs 3 pops, wraps", rl::sched_bound, 2),
      run<two_pushers_t>("faa: cap 3, 2 pushers + popper", rl::sched_bound, 2),
      run<two_poppers_t>("faa: cap 1, pusher + 2 poppers", rl::sched_bound, 3),
  });
}
