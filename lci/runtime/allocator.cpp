#include "lci/runtime/allocator.hpp"

#include <cstdlib>
#include <new>

#include "lci/util/atomic.hpp"

namespace lci::detail {

namespace {
// acquire/release: an allocator installed by one thread is fully built
// when another thread's allocation calls it.
util::atomic<allocator_base_t*> g_allocator{nullptr};
}  // namespace

void* allocate_user_buffer(std::size_t size) {
  allocator_base_t* allocator = g_allocator.load(util::mo_acquire);
  void* buffer = allocator != nullptr ? allocator->allocate(size) : std::malloc(size == 0 ? 1 : size);
  if (buffer == nullptr) throw std::bad_alloc();
  return buffer;
}

void deallocate_user_buffer(void* buffer) {
  allocator_base_t* allocator = g_allocator.load(util::mo_acquire);
  if (allocator != nullptr) {
    allocator->deallocate(buffer);
  } else {
    std::free(buffer);
  }
}

void set_user_allocator(allocator_base_t* allocator) { g_allocator.store(allocator, util::mo_release); }
allocator_base_t* get_user_allocator() { return g_allocator.load(util::mo_acquire); }

}  // namespace lci::detail
