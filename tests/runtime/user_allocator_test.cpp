// set_allocator while other threads run: the allocator one thread installs
// is fully built when another thread calls it, both through get_allocator()
// and for the buffer of an active message that a progressing thread
// receives (lci/runtime/allocator.cpp).
//
// The allocator is built in place after the other threads start, and the
// only happens-before edge from its construction to their calls is the
// installed pointer's release (set_allocator) and acquire (get_allocator,
// the AM's allocation). Under ThreadSanitizer a call without that edge reads
// the object's vtable pointer and fields as a data race, which fails the
// test; without TSan the checks below hold on any machine whose stores
// become visible in order (x86, and TSan's own runtime).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;
using lci::runtime_test::require;

// An allocator that checks, on every call, that its constructor's writes
// are visible to the calling thread.
class checked_allocator_t : public lci::allocator_base_t {
 public:
  static constexpr std::uint64_t built_mark = 0x6c63692d616c6c6fu;

  checked_allocator_t() : built_(built_mark) {}
  void* allocate(std::size_t size) override {
    require(built_ == built_mark, "an allocator called before its construction was visible");
    // relaxed: a count read after the threads are joined.
    allocated_.fetch_add(1, std::memory_order_relaxed);
    return std::malloc(size == 0 ? 1 : size);
  }
  void deallocate(void* buffer) override { std::free(buffer); }
  std::uint64_t allocated() const { return allocated_.load(std::memory_order_relaxed); }

 private:
  std::uint64_t built_;
  std::atomic<std::uint64_t> allocated_{0};
};

// Storage whose address the other threads know before the allocator in it
// is built: they wait for get_allocator() to return that address, which
// reads the installed pointer and nothing else.
struct allocator_storage_t {
  alignas(checked_allocator_t) unsigned char bytes[sizeof(checked_allocator_t)];
  lci::allocator_base_t* address() { return reinterpret_cast<checked_allocator_t*>(bytes); }
  checked_allocator_t* build() { return new (bytes) checked_allocator_t; }
};

TEST(UserAllocator, InstalledOnOneThreadIsCalledFullyBuiltOnAnother) {
  allocator_storage_t storage;
  lci::allocator_base_t* const target = storage.address();
  std::thread user([target] {
    lci::allocator_base_t* installed = nullptr;
    while ((installed = lci::get_allocator()) != target) std::this_thread::yield();
    void* block = installed->allocate(8);
    installed->deallocate(block);
  });
  checked_allocator_t* mine = storage.build();
  lci::set_allocator(mine);
  user.join();
  EXPECT_EQ(mine->allocated(), 1u);
  lci::set_allocator(nullptr);
  mine->~checked_allocator_t();
}

// Rank 1's thread 0 installs the allocator while its thread 1 progresses;
// rank 0 sends an active message once it sees the flag `installed`, which
// is relaxed on purpose: neither rank 0 nor the message carries a
// happens-before edge from the construction to thread 1. Thread 1's
// allocation of the AM's buffer reads the installed allocator (acquire),
// and that alone orders the call after the construction.
TEST(UserAllocator, AnAmArrivingAfterTheInstallationUsesTheAllocatorFullyBuilt) {
  LCI_SIM_ONLY("the ranks share one process: one allocator, one flag");
  constexpr std::size_t am_bytes = 64;
  constexpr lci::tag_t am_tag = 3;
  allocator_storage_t storage;
  std::atomic<bool> installed{false};
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 0;  // OS threads only: fibers take turns, so nothing races
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  checked_allocator_t* mine = nullptr;
  lci::sim::expect_runs_ok(2, sweep, [&](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    lci::comp_t cq = lci::alloc_cq();
    const lci::rcomp_t rcomp = lci::register_rcomp(cq);
    if (env.rank() == 0) {
      // relaxed: see the test's comment.
      while (!installed.load(std::memory_order_relaxed)) std::this_thread::yield();
      char payload[am_bytes];
      for (std::size_t i = 0; i < am_bytes; ++i) payload[i] = static_cast<char>('a' + i % 26);
      const lci::status_t sent = post_retrying([&] {
        return lci::post_am_x(1, payload, am_bytes, lci::COMP_NULL_RETRY, rcomp).tag(am_tag)();
      });
      require(sent.is_done(), std::string("the AM's post: ") + sent.error.get_str());
    } else {
      std::atomic<bool> handled{false};
      env.run_threads(2, [&](int thread) {
        if (thread == 0) {
          mine = storage.build();
          lci::set_allocator(mine);
          // relaxed: see the test's comment.
          installed.store(true, std::memory_order_relaxed);
          // No LCI call here until the AM is handled: a call would order
          // this thread's past (the construction) before thread 1's next.
          while (!handled.load(std::memory_order_acquire)) std::this_thread::yield();
          return;
        }
        lci::status_t status;
        while ((status = lci::cq_pop(cq)).is_retry()) (void)lci::progress();
        require(status.is_done() && status.size == am_bytes && status.tag == am_tag,
                std::string("the AM arrived as ") + status.error.get_str());
        const char* bytes = static_cast<const char*>(status.buffer);
        for (std::size_t i = 0; i < am_bytes; ++i) {
          require(bytes[i] == static_cast<char>('a' + i % 26), "the AM's bytes differ");
        }
        lci::get_allocator()->deallocate(status.buffer);
        // release: pairs with thread 0's acquire; nothing of thread 1 follows.
        handled.store(true, std::memory_order_release);
      });
    }
    lci::barrier();
    lci::deregister_rcomp(rcomp);
    lci::free_comp(&cq);
    lci::g_runtime_fina();
  });
  ASSERT_NE(mine, nullptr);
  EXPECT_EQ(mine->allocated(), 1u) << "the AM's buffer came from another allocator";
  lci::set_allocator(nullptr);
  mine->~checked_allocator_t();
}

}  // namespace
