// Model checks of pool_t (production source under Relacy), three threads:
// every thread racing for the last packet, a steal from a thief that is
// itself stealing, and a remote put's return racing both the home owner and a
// thief. With three deques a thief's victim is a random choice (Relacy
// explores each), registrations race (a reserved victim slot may still read
// "none"), and a steal may pick an empty thief. Kept apart from
// packet_pool_model_test so each binary stays well under ~20 s.
#include <cstdlib>

#include "tests/packet_pool/packet_pool_model_fixture.hpp"

namespace {

using lci::packet_pool::pool_t;
using lci::packet_pool::model_test::fixture_t;
using lci::packet_pool::model_test::last_packet_race_t;
using lci::util::atomic;
using lci::util::mo_acquire;
using lci::util::mo_release;

// Two packets in the owner's deque (the thread that ran before()); each
// thread gets one packet and puts it back. A thief takes ceil(2/2) = 1, so
// a second thief finds one in the owner's deque or steals from the first
// thief's deque — possibly while that thief puts its packet back. The owner's
// get fails only when its deque was emptied, i.e. both thieves got a packet
// (a thief's put is local and goes to its own deque, never the owner's).
struct steal_from_thief_t : rl::test_suite<steal_from_thief_t, 3> {
  fixture_t world;
  bool got[3] = {};  // each thread writes its own; after() reads
  void before() { world.build(2, 3, pool_t::packet_return_threshold_default); }
  void thread(unsigned id) {
    const int tag = static_cast<int>(id) + 1;
    void* packet = world.pool->get();
    got[id] = packet != nullptr;
    if (packet != nullptr) world.take(packet, tag);
    if (packet != nullptr) world.give_back(packet, tag);
  }
  void after() {
    const std::size_t owner = world.initial_deque;
    if (!got[owner]) {
      for (std::size_t id = 0; id < 3; ++id) RL_ASSERT(got[id] || id == owner);
    }
    world.tear_down();
  }
};

// Thread 0 gets a packet and hands it to thread 1, whose put is remote
// (threshold 0: the return to thread 0's deque fires at once if that lock
// is free), while thread 2 gets and puts, stealing from whichever deque it
// picks — thread 1's, with the returned packet in flight, included.
struct return_races_thief_t : rl::test_suite<return_races_thief_t, 3> {
  fixture_t world;
  atomic<void*> handed{nullptr};
  // Handed instead of a packet when thread 0's get failed (unless thread 0
  // built the pool, its one steal may pick thread 2's empty deque).
  char nothing_handed = 0;
  void before() { world.build(2, 3, 0); }
  void thread(unsigned id) {
    const int tag = static_cast<int>(id) + 1;
    if (id == 0) {
      void* packet = world.pool->get();
      if (id == world.initial_deque) RL_ASSERT(packet != nullptr);
      // release: pairs with the acquire in thread 1 [H]
      handed.store(packet != nullptr ? packet : &nothing_handed, mo_release);
      return;
    }
    if (id == 1) {
      void* packet = nullptr;
      // Bounded by Relacy's scheduler: thread 0 stores once, and each empty
      // load yields, so the spin ends once thread 0 runs.
      while ((packet = handed.load(mo_acquire)) == nullptr) {  // acquire: [H]
        lci::util::spin_pause();
      }
      if (packet == &nothing_handed) return;
      world.take(packet, tag);
      world.give_back(packet, tag);  // remote unless thread 1 built the pool
      return;
    }
    void* packet = world.pool->get();
    if (packet != nullptr) world.take(packet, tag);
    if (packet != nullptr) world.give_back(packet, tag);
  }
  void after() { world.tear_down(); }
};

}  // namespace

// The default run keeps the binary around 10 s on the 2-core VM;
// LCI_MODEL_DEEP=1 (e.g. bazel test --test_env=LCI_MODEL_DEEP=1 ...) adds one
// preemption to every bound: 4.3M, 5.8M and 27.8M interleavings, no bug,
// in about four minutes.
int main() {
  using lci::model_check::run;
  const char* deep = std::getenv("LCI_MODEL_DEEP");
  const unsigned extra = deep != nullptr && deep[0] == '1' ? 1 : 0;
  return lci::model_check::exit_status({
      run<last_packet_race_t<3>>("packet_pool: 3 threads race for last packet",
                                 rl::sched_bound, 1 + extra),
      run<steal_from_thief_t>("packet_pool: 3 threads, steal from a thief",
                              rl::sched_bound, 1 + extra),
      run<return_races_thief_t>("packet_pool: 3 threads, return races thief",
                                rl::sched_bound, 2 + extra),
  });
}
