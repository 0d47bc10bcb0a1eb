#include "lci/runtime/device_pools.hpp"

#include <cstddef>
#include <type_traits>

#include "lci/util/assert.hpp"

namespace lci::detail {

device_pools_t::~device_pools_t() {
  // Records of messages nobody received (they sit in a matching table,
  // which never frees what it holds). Ends: nothing uses the pools now.
  for (allocated_unexpected_t* node = allocated_head_; node != nullptr;) {
    allocated_unexpected_t* next = node->next;
    delete node;
    node = next;
  }
}

unexpected_t* device_pools_t::allocate_unexpected() {
  auto* node = new allocated_unexpected_t;
  util::spinlock_guard_t guard(allocated_lock_);
  node->next = allocated_head_;
  if (allocated_head_ != nullptr) allocated_head_->prev = node;
  allocated_head_ = node;
  ++allocated_count_;
  ++allocated_total_;
  return &node->record;
}

void device_pools_t::free_unexpected(unexpected_t* message) {
  // The record is the first member of a standard-layout node, so their
  // addresses are the same.
  static_assert(std::is_standard_layout_v<allocated_unexpected_t> &&
                    offsetof(allocated_unexpected_t, record) == 0,
                "an allocated record's address must be its node's");
  auto* node = reinterpret_cast<allocated_unexpected_t*>(message);
  {
    util::spinlock_guard_t guard(allocated_lock_);
    LCI_ASSERT(allocated_count_ > 0, "a record given back that was never allocated");
    if (node->prev != nullptr) {
      node->prev->next = node->next;
    } else {
      LCI_ASSERT(allocated_head_ == node, "an allocated record not on its list");
      allocated_head_ = node->next;
    }
    if (node->next != nullptr) node->next->prev = node->prev;
    --allocated_count_;
  }
  delete node;
}

std::uint64_t device_pools_t::unexpected_allocated_total() const {
  util::spinlock_guard_t guard(allocated_lock_);
  return allocated_total_;
}

std::size_t device_pools_t::unexpected_allocated_count() const {
  util::spinlock_guard_t guard(allocated_lock_);
  return allocated_count_;
}

bool device_pools_t::all_home() const {
  return requests.taken_count() == 0 && unexpected.taken_count() == 0 &&
         unexpected_allocated_count() == 0 && deferred_posts.taken_count() == 0;
}

}  // namespace lci::detail
