// util::thread_cached_t: blocks are recycled per thread, bounded, handed
// between threads as plain memory, and returned to the global allocator
// when a thread exits — counted through a replacement global operator new.
#include "lci/util/thread_cache.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <thread>
#include <vector>

namespace {

std::atomic<long> g_global_news{0};
std::atomic<long> g_global_deletes{0};

}  // namespace

void* operator new(std::size_t bytes) {
  g_global_news.fetch_add(1, std::memory_order_relaxed);
  if (void* pointer = std::malloc(bytes == 0 ? 1 : bytes)) return pointer;
  throw std::bad_alloc();
}
void operator delete(void* pointer) noexcept {
  if (pointer == nullptr) return;
  g_global_deletes.fetch_add(1, std::memory_order_relaxed);
  std::free(pointer);
}
void operator delete(void* pointer, std::size_t) noexcept { operator delete(pointer); }

namespace {

// Globally allocated blocks not yet returned.
long global_live() {
  return g_global_news.load(std::memory_order_relaxed) -
         g_global_deletes.load(std::memory_order_relaxed);
}

struct small_t : lci::util::thread_cached_t<small_t> {
  long payload[5] = {};
};

struct large_t : small_t {
  char extra[200] = {};
};

constexpr std::size_t blocks_max = small_t::thread_cached_max();

// Runs `body` on a new thread and waits for it to exit.
template <typename Body>
void on_new_thread(Body body) {
  std::thread thread(body);
  thread.join();
}

TEST(ThreadCache, ReusesTheLastDeletedBlockWithoutTheGlobalAllocator) {
  on_new_thread([] {
    small_t* first = new small_t;
    delete first;
    ASSERT_EQ(small_t::thread_cached_count(), 1u);
    const long news_before = g_global_news.load();
    small_t* second = new small_t;
    EXPECT_EQ(second, first);
    EXPECT_EQ(g_global_news.load(), news_before);
    EXPECT_EQ(small_t::thread_cached_count(), 0u);
    delete second;
  });
}

TEST(ThreadCache, HoldsAtMostBlocksMaxAndReturnsTheRest) {
  on_new_thread([] {
    std::vector<small_t*> objects;
    for (std::size_t i = 0; i < blocks_max + 10; ++i) objects.push_back(new small_t);
    const long deletes_before = g_global_deletes.load();
    for (small_t* object : objects) delete object;
    EXPECT_EQ(small_t::thread_cached_count(), blocks_max);
    EXPECT_EQ(g_global_deletes.load() - deletes_before, 10);
  });
}

TEST(ThreadCache, ABlockDeletedElsewhereJoinsTheDeletingThreadsList) {
  on_new_thread([] {
    small_t* object = new small_t;
    object->payload[0] = 7;
    on_new_thread([object] {
      EXPECT_EQ(object->payload[0], 7);
      delete object;
      EXPECT_EQ(small_t::thread_cached_count(), 1u);
      small_t* again = new small_t;
      EXPECT_EQ(again, object);
      delete again;
    });
    EXPECT_EQ(small_t::thread_cached_count(), 0u);
  });
}

TEST(ThreadCache, AnExitingThreadReturnsItsBlocks) {
  const long live_before = global_live();
  on_new_thread([] {
    std::vector<small_t*> objects;
    for (int i = 0; i < 50; ++i) objects.push_back(new small_t);
    for (small_t* object : objects) delete object;
    EXPECT_EQ(small_t::thread_cached_count(), 50u);
  });
  EXPECT_EQ(global_live(), live_before);
}

// A thread_local destroyed after the cache released its list (it was
// constructed before the first delete armed the cache) still deletes
// correctly, and nothing is left behind.
struct deletes_at_exit_t {
  small_t* held = nullptr;
  ~deletes_at_exit_t() { delete held; }
};

TEST(ThreadCache, DeletesAfterTheReleaseGoToTheGlobalAllocator) {
  const long live_before = global_live();
  on_new_thread([] {
    static thread_local deletes_at_exit_t late;
    late.held = new small_t;
    delete new small_t;  // arms the cache: its releaser runs before `late`
    EXPECT_EQ(small_t::thread_cached_count(), 1u);
  });
  EXPECT_EQ(global_live(), live_before);
}

TEST(ThreadCache, ALargerDerivedClassUsesTheGlobalAllocator) {
  on_new_thread([] {
    const long news_before = g_global_news.load();
    const long deletes_before = g_global_deletes.load();
    small_t* object = new large_t;
    EXPECT_EQ(g_global_news.load() - news_before, 1);
    delete static_cast<large_t*>(object);
    EXPECT_EQ(g_global_deletes.load() - deletes_before, 1);
    EXPECT_EQ(small_t::thread_cached_count(), 0u);
  });
}

#if defined(LCI_THREAD_CACHE_ASAN)
TEST(ThreadCacheDeathTest, AddressSanitizerReportsAUseAfterDeleteOfACachedBlock) {
  EXPECT_DEATH(
      {
        small_t* object = new small_t;
        delete object;
        volatile long read = object->payload[1];
        (void)read;
      },
      "use-after-poison");
}
#endif

}  // namespace
