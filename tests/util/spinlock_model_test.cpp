// Model checks of spinlock_t and try_locked (production source under Relacy).
#include "lci/util/spinlock.hpp"
#include "lci/util/try_lock.hpp"
#include "tests/model_check/model_check.hpp"

namespace {

using lci::util::spinlock_t;
using lci::util::var;

// N threads each increment plain shared data under lock(); the lock's
// acquire/release must order every increment (a missing release shows as a
// data race on `count`) and none may be lost.
template <int threads_count>
struct lock_counts_t : rl::test_suite<lock_counts_t<threads_count>, threads_count> {
  spinlock_t lock;
  var<int> count;

  void thread(unsigned) {
    lock.lock();
    count.store(count.load() + 1);
    lock.unlock();
  }
  void after() { RL_ASSERT(count.load() == threads_count); }
};

// try_locked either runs its body exclusively or returns retry_lock; the
// bodies that ran are exactly the done results.
struct try_locked_t : rl::test_suite<try_locked_t, 3> {
  spinlock_t lock;
  var<int> ran;
  lci::util::atomic<int> done_count{0};

  void thread(unsigned) {
    const lci::error_t result = lci::util::try_locked(lock, [&]() -> lci::error_t {
      ran.store(ran.load() + 1);
      return lci::errorcode_t::done;
    });
    if (result.is_done()) {
      done_count.fetch_add(1, lci::util::mo_relaxed);  // relaxed: read in after()
    } else {
      RL_ASSERT(result.errorcode == lci::errorcode_t::retry_lock);
    }
  }
  void after() {
    RL_ASSERT(ran.load() == done_count.load(lci::util::mo_relaxed));
    RL_ASSERT(ran.load() >= 1);  // the first to arrive always gets the lock
  }
};

}  // namespace

int main() {
  using lci::model_check::run;
  return lci::model_check::exit_status({
      run<lock_counts_t<2>>("spinlock: 2 threads lock/unlock", rl::sched_full),
      run<lock_counts_t<3>>("spinlock: 3 threads lock/unlock", rl::sched_bound, 3),
      run<try_locked_t>("try_locked: 3 threads", rl::sched_full),
  });
}
