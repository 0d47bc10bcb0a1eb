#include "lci/runtime/allocator.hpp"

#include <new>

#include "lci/util/atomic.hpp"

namespace lci::detail {

namespace {
// acquire/release: an allocator installed by one thread is fully built
// when another thread's allocation calls it, with no other synchronization
// between the two (tests/runtime:user_allocator_test, under TSan).
// Never nullptr: set_user_allocator(nullptr) puts the default back.
util::atomic<allocator_base_t*> g_allocator{&g_allocator_default};
}  // namespace

void* allocate_user_buffer(std::size_t size) {
  void* buffer = g_allocator.load(util::mo_acquire)->allocate(size);
  if (buffer == nullptr) throw std::bad_alloc();
  return buffer;
}

void set_user_allocator(allocator_base_t* allocator) {
  g_allocator.store(allocator != nullptr ? allocator : &g_allocator_default, util::mo_release);
}
allocator_base_t* get_user_allocator() { return g_allocator.load(util::mo_acquire); }

}  // namespace lci::detail
