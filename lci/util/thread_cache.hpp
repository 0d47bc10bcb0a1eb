// thread_cached_t<T>: gives T an operator new/delete that recycle blocks
// through a per-thread free list, for the runtime's short-lived objects (a
// request per posted receive, an unexpected_t per eager arrival, a status
// node per completion-queue signal).
//
// Why: a message-rate loop keeps a window of such objects live (64 in the
// benchmarks), more than glibc's per-thread cache keeps for one size (7), so
// most new/delete pairs went to the arena: about 250 instructions per pair
// in the libfabric message-rate profile (docs/bench_ofi.md); a hit here is
// a handful.
//
// Thread safety: each thread has its own lists, so nothing is shared; a
//                block deleted on another thread than the one that allocated
//                it joins the deleting thread's list (plain memory: any
//                thread may hand it out next).
// Blocking:      never; a miss (empty list) or an overflow (full list) goes
//                to the global operator new/delete.
// Limits:        blocks_max blocks per size class and thread; beyond it
//                blocks go back to the global allocator, so a thread that
//                only deletes (one completing what others posted) holds at
//                most blocks_max blocks of a class.
// Ownership:     a thread's cached blocks are returned to the global
//                allocator when the thread exits; deletes after that (a
//                runtime torn down by a static destructor) bypass the list.
// Sanitizers:    under AddressSanitizer a cached block is poisoned, so a use
//                after delete is reported until the block is handed out again.
#pragma once

#include <cstddef>
#include <new>

#include "lci/util/assert.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define LCI_THREAD_CACHE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LCI_THREAD_CACHE_ASAN 1
#endif
#endif

#if defined(LCI_THREAD_CACHE_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace lci::util {

namespace detail {

// The free list of one size class on one thread. Trivially destructible and
// zero-initialised, so it is usable at any time in the thread's life,
// including after the releaser below has run at thread exit.
template <std::size_t block_bytes>
class block_list_t {
 public:
  static constexpr std::size_t blocks_max = 256;
  static_assert(block_bytes >= sizeof(void*), "a block must hold the list link");

  static void* allocate() {
    block_list_t& list = local_;
    free_block_t* block = list.head_;
    if (block == nullptr) return ::operator new(block_bytes);
    unpoison(block);
    list.head_ = block->next;
    --list.count_;
    return block;
  }

  // Blocks the calling thread's list holds now.
  static std::size_t cached_count() { return local_.count_; }

  static void deallocate(void* pointer) {
    block_list_t& list = local_;
    if (!list.armed_) arm(list);
    if (list.count_ >= list.limit_) {
      ::operator delete(pointer);
      return;
    }
    auto* block = static_cast<free_block_t*>(pointer);
    block->next = list.head_;
    list.head_ = block;
    ++list.count_;
    LCI_ASSERT(list.count_ <= blocks_max, "a thread cache over its bound");
    poison(block);
  }

 private:
  struct free_block_t {
    free_block_t* next;
  };

  // Empties the thread's list when the thread exits, and closes it: the
  // limit drops to 0, so later deletes go straight to operator delete.
  struct releaser_t {
    ~releaser_t() {
      block_list_t& list = local_;
      while (list.head_ != nullptr) {
        free_block_t* block = list.head_;
        unpoison(block);
        list.head_ = block->next;
        ::operator delete(block);
      }
      list.count_ = 0;
      list.limit_ = 0;
    }
  };

  // The first delete on a thread: constructing the releaser registers its
  // destructor for this thread's exit; only then may the list hold blocks.
  // Armed once: after the release the limit stays 0.
  static void arm(block_list_t& list) {
    static thread_local releaser_t releaser;
    (void)releaser;
    list.armed_ = true;
    list.limit_ = blocks_max;
  }

  static void poison([[maybe_unused]] free_block_t* block) {
#if defined(LCI_THREAD_CACHE_ASAN)
    ASAN_POISON_MEMORY_REGION(block, block_bytes);
#endif
  }
  static void unpoison([[maybe_unused]] free_block_t* block) {
#if defined(LCI_THREAD_CACHE_ASAN)
    ASAN_UNPOISON_MEMORY_REGION(block, block_bytes);
#endif
  }

  free_block_t* head_;
  std::size_t count_;
  std::size_t limit_;  // 0 until armed, and again once released
  bool armed_;

  static thread_local block_list_t local_;
};

template <std::size_t block_bytes>
thread_local block_list_t<block_bytes> block_list_t<block_bytes>::local_{};

// Objects share a list when they round up to the same 64-byte class.
constexpr std::size_t block_class_bytes(std::size_t object_bytes) {
  return (object_bytes + 63) / 64 * 64;
}

}  // namespace detail

// Derive T from thread_cached_t<T> (an empty base) to allocate T through the
// calling thread's list. A class derived from T that is larger than T is
// allocated globally (the sized delete tells which).
template <typename T>
struct thread_cached_t {
  static void* operator new(std::size_t bytes) {
    if (bytes > list_bytes()) return ::operator new(bytes);
    return detail::block_list_t<list_bytes()>::allocate();
  }
  static void operator delete(void* pointer, std::size_t bytes) {
    if (pointer == nullptr) return;
    if (bytes > list_bytes()) {
      ::operator delete(pointer);
      return;
    }
    detail::block_list_t<list_bytes()>::deallocate(pointer);
  }
  // Blocks of T's class the calling thread holds (tests and diagnostics).
  static std::size_t thread_cached_count() {
    return detail::block_list_t<list_bytes()>::cached_count();
  }
  static constexpr std::size_t thread_cached_max() {
    return detail::block_list_t<list_bytes()>::blocks_max;
  }

 private:
  static constexpr std::size_t list_bytes() { return detail::block_class_bytes(sizeof(T)); }
};

}  // namespace lci::util
