// Model checks of object_pool_t (production source under Relacy): takers
// and givers on a pool smaller than the threads' demand never share a slot
// (the version defeats ABA), and a slot's object is ordered between its
// successive owners (give_back's release, take's acquire).
#include "lci/util/object_pool.hpp"
#include "tests/model_check/model_check.hpp"

namespace {

using lci::util::var;

struct record_t {
  var<int> owner;  // plain data: an unordered hand-over is a reported race
};

// Thread 0 takes and gives back twice (the ABA pattern: its second take
// can see the slot it gave back on top again); threads 1 and 2 take one
// each, write their mark, check it, give it back. Two slots for three
// threads: takers also meet an empty pool.
struct no_shared_slot_t : rl::test_suite<no_shared_slot_t, 3> {
  lci::util::object_pool_t<record_t> pool{2};

  void use_once(int me) {
    record_t* record = pool.take();
    if (record == nullptr) return;
    record->owner.store(me);
    RL_ASSERT(record->owner.load() == me);
    pool.give_back(record);
  }

  void thread(unsigned index) {
    const int me = static_cast<int>(index) + 1;
    use_once(me);
    if (index == 0) use_once(me);
  }

  void after() {
    record_t* first = pool.take();
    record_t* second = pool.take();
    RL_ASSERT(first != nullptr && second != nullptr && first != second);
    RL_ASSERT(pool.take() == nullptr);
    pool.give_back(first);
    pool.give_back(second);
  }
};

// Batches: thread 0 takes up to three at once and gives them back in one
// CAS, thread 1 takes two and gives them back one by one, thread 2 takes
// and gives back singly, on three slots. Each writes its mark into every
// record it holds and checks it: a walk over a stale link that still won
// its CAS would hand a slot to two threads; a chain published without
// release races with the next taker.
struct batches_t : rl::test_suite<batches_t, 3> {
  lci::util::object_pool_t<record_t> pool{3};

  void thread(unsigned index) {
    const int me = static_cast<int>(index) + 1;
    record_t* held[3] = {};
    const std::size_t want = index == 0 ? 3 : (index == 1 ? 2 : 1);
    const std::size_t got = index == 2 ? (held[0] = pool.take()) != nullptr
                                       : pool.take_up_to(held, want);
    RL_ASSERT(got <= want);
    for (std::size_t i = 0; i < got; ++i) held[i]->owner.store(me);
    for (std::size_t i = 0; i < got; ++i) RL_ASSERT(held[i]->owner.load() == me);
    if (got == 0) return;
    if (index == 0) {
      pool.give_back_all(held, got);
    } else {
      for (std::size_t i = 0; i < got; ++i) pool.give_back(held[i]);
    }
  }

  void after() {
    record_t* all[4] = {};
    RL_ASSERT(pool.take_up_to(all, 4) == 3);
    RL_ASSERT(all[0] != all[1] && all[1] != all[2] && all[0] != all[2]);
    pool.give_back_all(all, 3);
  }
};

}  // namespace

int main() {
  using lci::model_check::run;
  return lci::model_check::exit_status({
      run<no_shared_slot_t>("object_pool: 3 threads, 2 slots", rl::sched_bound, 2),
      run<batches_t>("object_pool: batches, 3 threads, 3 slots", rl::sched_bound, 2),
  });
}
