// Model checks of mpmc_array_t (production source under Relacy).
#include "lci/mpmc_array/mpmc_array.hpp"
#include "tests/model_check/model_check.hpp"

namespace {

using lci::mpmc_array::mpmc_array_t;
using lci::util::var;

// A writer fills indices 0..2 of an array of capacity 1, resizing twice
// (1 -> 2 -> 4), each element pointing at data written just before the put.
// Readers race the resizes: any pointer they read must show its data (the
// slot store and the array publication order it), and an element read at a
// higher index implies the lower ones are there too (resizes copy them).
template <int readers_count>
struct reads_race_resize_t
    : rl::test_suite<reads_race_resize_t<readers_count>, 1 + readers_count> {
  static constexpr int elements_count = 3;
  var<int> payload[elements_count];
  mpmc_array_t<var<int>*> array{1};

  void thread(unsigned id) {
    if (id == 0) {
      for (int i = 0; i < elements_count; ++i) {
        payload[i].store(10 + i);
        RL_ASSERT(array.put(i, &payload[i]).is_done());
      }
      return;
    }
    bool later_seen = false;
    for (int i = elements_count - 1; i >= 0; --i) {
      var<int>* element = array.get(i);
      if (later_seen) RL_ASSERT(element != nullptr);
      if (element == nullptr) continue;
      RL_ASSERT(element->load() == 10 + i);
      later_seen = true;
    }
  }
  void after() { RL_ASSERT(array.size() == elements_count); }
};

// Two appenders race each other and a reader: indices are distinct and
// dense, and what the reader finds below size() has been written.
struct appends_race_t : rl::test_suite<appends_race_t, 3> {
  var<int> payload[2];
  mpmc_array_t<var<int>*> array{1};
  std::size_t index_of[2] = {99, 99};

  void thread(unsigned id) {
    if (id < 2) {
      payload[id].store(20 + static_cast<int>(id));
      RL_ASSERT(array.push_back(&payload[id], &index_of[id]).is_done());
      return;
    }
    const std::size_t size = array.size();
    for (std::size_t i = 0; i < size; ++i) {
      var<int>* element = array.get(i);
      RL_ASSERT(element != nullptr);
      RL_ASSERT(element->load() >= 20);
    }
  }
  void after() {
    RL_ASSERT(index_of[0] != index_of[1]);
    RL_ASSERT(index_of[0] < 2 && index_of[1] < 2);
    RL_ASSERT(array.size() == 2);
  }
};

}  // namespace

int main() {
  using lci::model_check::run;
  return lci::model_check::exit_status({
      run<reads_race_resize_t<1>>("mpmc_array: read races 2 resizes", rl::sched_bound, 3),
      run<reads_race_resize_t<2>>("mpmc_array: 2 readers race resizes",
                                  rl::sched_bound, 1),
      run<appends_race_t>("mpmc_array: 2 appenders + reader", rl::sched_bound, 2),
  });
}
