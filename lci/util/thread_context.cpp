#include "lci/util/thread_context.hpp"

#include <functional>
#include <mutex>
#include <queue>
#include <vector>

#include "lci/util/assert.hpp"

namespace lci::util {
namespace {

// The indices of threads that have exited, handed to the next threads that
// ask, smallest first: a program that keeps creating short-lived threads (a
// thread per request, a pool that grows and shrinks) keeps its indices
// dense, so its threads stay on the per-index paths of the structures
// (hazard slots, CQ node caches, packet pool deques), which serve the first
// few dozen indices without locks or RMWs.
//
// The lock orders everything a thread did under its index before everything
// the next holder does (release at the exiting thread's unlock, acquire at
// the next holder's lock): per-index state needs no lock of its own, since
// at most one live thread holds an index.
//
// Reached through a pointer that is never deleted: a detached thread may
// exit, and give its index back, after static destruction has begun.
struct index_registry_t {
  std::mutex lock;
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<std::size_t>> free;
  std::size_t next = 0;  // every index below it was handed out once
};

index_registry_t& registry() {
  static index_registry_t* const instance = new index_registry_t;
  return *instance;
}

// Gives the thread's index back when the thread exits. Constructed (and its
// destructor registered) by the thread's first thread_index(). A thread_local
// destructor that runs after it (one constructed before that first call) and
// calls thread_index() again gets an index anew (the smallest free one,
// often the one just given back), which is never given back again:
// the holder is gone and is not constructed twice. That index stays taken,
// as every index did before indices were reused; none is ever shared.
struct index_holder_t {
  ~index_holder_t() {
    const std::size_t plus_one = detail::thread_index_plus_one;
    // Constructed only by assign_thread_index(), after it set the index, and
    // destroyed once: the thread holds an index here.
    LCI_ASSERT(plus_one != 0, "index holder destroyed on a thread without an index");
    detail::thread_index_plus_one = 0;
    index_registry_t& indices = registry();
    const std::lock_guard<std::mutex> guard(indices.lock);
    indices.free.push(plus_one - 1);
  }
};
thread_local index_holder_t t_index_holder;

}  // namespace

std::size_t detail::assign_thread_index() {
  std::size_t index = 0;
  {
    index_registry_t& indices = registry();
    const std::lock_guard<std::mutex> guard(indices.lock);
    if (indices.free.empty()) {
      index = indices.next++;
    } else {
      index = indices.free.top();
      indices.free.pop();
    }
  }
  thread_index_plus_one = index + 1;
  (void)&t_index_holder;  // first use: constructs it, so its destructor runs at exit
  return index;
}

std::uint32_t thread_random(std::uint32_t limit) {
  LCI_ASSERT(limit > 0, "thread_random needs a non-empty range");
  // xorshift64*, seeded per thread from its index so runs are repeatable for
  // a given thread start order; never zero (xorshift's fixed point).
  thread_local std::uint64_t state =
      0x9E3779B97F4A7C15ull * (thread_index() + 1);
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  const std::uint64_t mixed = state * 0x2545F4914F6CDD1Dull;
  // Multiply-shift maps the top 32 bits onto [0, limit) without a division.
  return static_cast<std::uint32_t>(((mixed >> 32) * limit) >> 32);
}

}  // namespace lci::util
