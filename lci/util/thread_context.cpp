#include "lci/util/thread_context.hpp"

#include <atomic>

#include "lci/util/assert.hpp"

namespace lci::util {
namespace {

// Plain std::atomic is fine here: this counter is not part of any structure
// that is model-checked (under LCI_MODEL_CHECK the header does not use it).
std::atomic<std::size_t> next_thread_index{0};

}  // namespace

std::size_t detail::assign_thread_index() {
  // relaxed: the value only needs to be unique, it publishes nothing.
  const std::size_t index = next_thread_index.fetch_add(1, std::memory_order_relaxed);
  thread_index_plus_one = index + 1;
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
