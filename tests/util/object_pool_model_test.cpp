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

}  // namespace

int main() {
  using lci::model_check::run;
  return lci::model_check::exit_status({
      run<no_shared_slot_t>("object_pool: 3 threads, 2 slots", rl::sched_bound, 2),
  });
}
