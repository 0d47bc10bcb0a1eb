// Model checks of pool_t (production source under Relacy): a steal racing the
// owner, and a remote put's return racing the home deque's owner. Relacy sees
// every deque head/tail access (util::var) and every lock operation, so a
// steal or return that skipped a lock is reported as a data race (the two
// broken variants, see BUILD).
#include "lci/packet_pool/packet_pool.hpp"
#include "tests/model_check/model_check.hpp"

namespace {

using lci::packet_pool::pool_t;
using lci::util::atomic;
using lci::util::mo_acquire;
using lci::util::mo_relaxed;
using lci::util::mo_release;

constexpr int packets_count = 3;

// Shared fixture: the pool is built in before() (Relacy thread 0, so its
// deque holds every packet) and torn down in after(), whose destructor
// asserts every packet is home exactly once. `holders` catches a packet
// handed to two threads at once.
struct fixture_t {
  pool_t* pool = nullptr;
  std::size_t initial_deque = 0;  // the deque of whichever thread ran before()
  void* addresses[packets_count] = {};
  atomic<int> holders[packets_count];

  void build(std::size_t threshold) {
    pool = new pool_t(64, packets_count, 2, threshold);
    initial_deque = pool->deque_index_of_this_thread();
    for (int i = 0; i < packets_count; ++i) addresses[i] = pool->get();
    for (int i = 0; i < packets_count; ++i) {
      RL_ASSERT(addresses[i] != nullptr);
      pool->put(addresses[i]);
      holders[i].store(0, mo_relaxed);  // relaxed: before the threads start
    }
  }
  int index_of(void* packet) const {
    for (int i = 0; i < packets_count; ++i) {
      if (addresses[i] == packet) return i;
    }
    RL_ASSERT(false);  // not a packet of the pool
    return 0;
  }
  void take(void* packet, int tag) {
    // relaxed: only the value matters (a duplicate reads a nonzero tag).
    RL_ASSERT(holders[index_of(packet)].exchange(tag, mo_relaxed) == 0);
  }
  void give_back(void* packet, int tag) {
    // relaxed: as in take().
    RL_ASSERT(holders[index_of(packet)].exchange(0, mo_relaxed) == tag);
    pool->put(packet);
  }
  void tear_down() {
    RL_ASSERT(pool->packets_free_count() == packets_count);
    delete pool;  // asserts all home, none twice
  }
};

// The thread that ran before() owns all packets and churns at its tail; the
// other starts empty and steals (once per get). No packet may be handed out
// twice or lost.
struct steal_races_owner_t : rl::test_suite<steal_races_owner_t, 2> {
  fixture_t world;
  void before() { world.build(pool_t::packet_return_threshold_default); }
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
  void before() { world.build(0); }
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
      run<return_races_home_t>("packet_pool: return races home", rl::sched_bound, 3),
  });
}
