// Aligned operator new/delete for the lcrq_t model tests; include it from
// exactly one source file of a relacy_test binary (it replaces the global
// allocation functions).
#pragma once

#include <cstdlib>
#include <new>

#include "tests/model_check/model_check.hpp"

// Relacy replaces the plain operator new/delete only. crq_segment_t is
// alignas(64), so `new crq_segment_t` calls the align_val_t overloads, which
// would go to the C library: segments would be invisible to Relacy (no leak
// report, and a stale access to a deleted segment would corrupt the heap
// instead of being reported). Route them to Relacy too. Relacy's blocks are
// 16-byte aligned, which is all the model build needs (no instruction there
// relies on the 64-byte alignment, which only serves cache-line placement).
void* operator new(std::size_t size, std::align_val_t alignment) {
  if (rl::is_ctx()) return ::operator new(size);
  const auto align = static_cast<std::size_t>(alignment);
  void* p = std::aligned_alloc(align, (size + align - 1) / align * align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return operator new(size, alignment);
}
void operator delete(void* p, std::align_val_t) noexcept { ::operator delete(p); }
void operator delete[](void* p, std::align_val_t) noexcept { ::operator delete(p); }
