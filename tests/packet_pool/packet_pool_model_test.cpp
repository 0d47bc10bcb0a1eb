// Model checks of pool_t (production source under Relacy), two threads: a
// steal racing the owner, a steal racing the owner's get on the LAST packet,
// and a remote put's return racing the home deque's owner. Relacy sees every
// deque head/tail access (util::var) and every lock operation, so a steal or
// return that skipped a lock is reported as a data race (the broken variants,
// see BUILD). Three-thread configurations: packet_pool_model_three_threads_test.
#include "tests/packet_pool/packet_pool_model_fixture.hpp"

namespace {

using lci::packet_pool::pool_t;
using lci::packet_pool::model_test::fixture_t;
using lci::packet_pool::model_test::last_packet_race_t;
using lci::util::atomic;
using lci::util::mo_acquire;
using lci::util::mo_release;

// The thread that ran before() owns all 3 packets and churns at its tail; the
// other starts empty and steals (once per get). No packet may be handed out
// twice or lost.
struct steal_races_owner_t : rl::test_suite<steal_races_owner_t, 2> {
  fixture_t world;
  void before() { world.build(3, 2, pool_t::packet_return_threshold_default); }
  void thread(unsigned id) {
    const int tag = static_cast<int>(id) + 1;
    void* first = world.pool->get();
    // Thread id works on deque id % 2. The owner's first get always succeeds:
    // one steal takes at most ceil(3/2) = 2 of its 3 packets.
    if (id == world.initial_deque) RL_ASSERT(first != nullptr);
    if (first != nullptr) world.take(first, tag);
    void* second = world.pool->get();
    if (second != nullptr) world.take(second, tag);
    if (first != nullptr) world.give_back(first, tag);
    if (second != nullptr) world.give_back(second, tag);
  }
  void after() { world.tear_down(); }
};

// Thread 0 gets a packet and hands it to thread 1, which puts it (a remote
// put; threshold 0 returns it to thread 0's deque at once, if that deque's
// lock is free) while thread 0 keeps getting and putting on that deque.
struct return_races_home_t : rl::test_suite<return_races_home_t, 2> {
  fixture_t world;
  atomic<void*> handed{nullptr};
  void before() { world.build(3, 2, 0); }
  void thread(unsigned id) {
    if (id == 0) {
      void* packet = world.pool->get();
      RL_ASSERT(packet != nullptr);
      handed.store(packet, mo_release);  // release: pairs with the acquire below [H]
      void* other = world.pool->get();
      if (other != nullptr) world.take(other, 1);
      if (other != nullptr) world.give_back(other, 1);
      return;
    }
    void* packet = nullptr;
    // Bounded by Relacy's scheduler: thread 0 stores once, and each empty
    // load yields, so the spin ends once thread 0 runs.
    while ((packet = handed.load(mo_acquire)) == nullptr) {  // acquire: [H]
      lci::util::spin_pause();
    }
    world.take(packet, 2);
    world.give_back(packet, 2);
  }
  void after() { world.tear_down(); }
};

}  // namespace

int main() {
  using lci::model_check::run;
  return lci::model_check::exit_status({
      run<steal_races_owner_t>("packet_pool: steal races owner", rl::sched_bound, 2),
      run<last_packet_race_t<2>>("packet_pool: steal races owner, last packet",
                                 rl::sched_bound, 3),
      run<return_races_home_t>("packet_pool: return races home", rl::sched_bound, 3),
  });
}
