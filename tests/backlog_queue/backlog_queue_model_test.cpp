// Model checks of backlog_queue_t (production source under Relacy).
#include "lci/backlog_queue/backlog_queue.hpp"
#include "tests/model_check/model_check.hpp"

namespace {

using lci::backlog_queue::backlog_queue_t;
using lci::util::var;

// One pusher races two pollers on an almost-empty queue. Every popped
// request is one that was pushed, none is popped twice, and after the run a
// final drain finds exactly the rest: nothing phantom, nothing stranded.
struct push_races_polls_t : rl::test_suite<push_races_polls_t, 3> {
  static constexpr int pushes_count = 2;
  backlog_queue_t<int> queue{4};
  lci::util::atomic<int> popped_bits{0};  // bit r-1 set once request r popped

  void record(int request) {
    RL_ASSERT(request >= 1 && request <= pushes_count);  // not a phantom
    const int bit = 1 << (request - 1);
    // relaxed: only the bits matter, read after all threads joined.
    const int before = popped_bits.fetch_or(bit, lci::util::mo_relaxed);
    RL_ASSERT((before & bit) == 0);  // not popped twice
  }

  void thread(unsigned id) {
    if (id == 0) {
      for (int request = 1; request <= pushes_count; ++request) {
        queue.push(request);
      }
      return;
    }
    for (int poll = 0; poll < 2; ++poll) {
      if (auto request = queue.pop()) record(*request);
    }
  }

  void after() {
    while (auto request = queue.pop()) record(*request);
    RL_ASSERT(popped_bits.load(lci::util::mo_relaxed) == (1 << pushes_count) - 1);
    RL_ASSERT(queue.is_empty_hint());
  }
};

// A request pushed by one thread carries data written before the push; the
// popper reads it without any other synchronisation than the queue.
struct handover_publishes_t : rl::test_suite<handover_publishes_t, 2> {
  var<int> payload;
  backlog_queue_t<var<int>*> queue{2};

  void thread(unsigned id) {
    if (id == 0) {
      payload.store(42);
      queue.push(&payload);
    } else if (auto request = queue.pop()) {
      RL_ASSERT((*request)->load() == 42);
    }
  }
  void after() { (void)queue.pop(); }
};

}  // namespace

int main() {
  using lci::model_check::run;
  return lci::model_check::exit_status({
      run<push_races_polls_t>("backlog: 1 pusher, 2 pollers", rl::sched_bound, 3),
      run<handover_publishes_t>("backlog: hand-over publishes data", rl::sched_full),
  });
}
