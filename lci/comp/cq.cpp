// The completion queue: status copies through lcrq_t's nodes or in
// basic_faa_array_t's slots, and the overflow list that keeps the bounded
// array from losing a status.
#include "lci/comp/cq.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "lci/util/assert.hpp"
#include "lci/util/thread_context.hpp"

namespace lci::detail {

namespace {

int checked_length(cq_kind_t kind, int default_length) {
  if (kind == cq_kind_t::array_atomic &&
      (default_length < 1 || default_length > cq_impl_t::default_length_max)) {
    throw std::invalid_argument("alloc_cq: default_length must be in [1, " +
                                std::to_string(cq_impl_t::default_length_max) +
                                "] for cq_type array_atomic, got " +
                                std::to_string(default_length));
  }
  return default_length;
}

// A sixteenth of the queue's nodes over all caches at most: the caches
// never keep a short queue's signals from its pool.
std::size_t node_cache_capacity(int default_length, std::size_t slots, std::size_t most) {
  const std::size_t share = static_cast<std::size_t>(std::max(1, default_length)) / 16 / slots;
  return std::min(share, most);
}

}  // namespace

cq_impl_t::cq_impl_t(cq_kind_t kind, int default_length)
    : comp_impl_t(comp_kind_t::cq),
      cq_kind_(kind),
      lcrq_(kind == cq_kind_t::lcrq ? std::make_unique<cq::lcrq_t>() : nullptr),
      array_(kind == cq_kind_t::array_atomic
                 ? std::make_unique<cq::basic_faa_array_t<status_t>>(
                       static_cast<std::size_t>(checked_length(kind, default_length)))
                 : nullptr),
      // lcrq ignores default_length as a capacity, not as the statuses it
      // queues without allocating.
      nodes_(kind == cq_kind_t::lcrq ? std::make_unique<util::object_pool_t<status_node_t>>(
                                           static_cast<std::size_t>(std::max(1, default_length)))
                                     : nullptr),
      node_cache_capacity_(kind == cq_kind_t::lcrq ? node_cache_capacity(default_length,
                                                                         node_cache_slots,
                                                                         node_cache_capacity_max)
                                                   : 0),
      node_caches_(node_cache_capacity_ >= 2 ? new node_cache_t[node_cache_slots] : nullptr) {
  LCI_ASSERT((lcrq_ == nullptr) != (array_ == nullptr),
             "a completion queue wraps exactly one queue");
}

cq_impl_t::~cq_impl_t() {
  // Discard what nobody popped (pop() drains the overflow list too). Ends:
  // nothing signals concurrently (precondition).
  while (!pop().is_retry()) {
  }
  LCI_ASSERT(overflow_head_ == nullptr,
             "completion queue overflow list not drained at teardown");
  // relaxed: teardown, nothing runs concurrently (precondition).
  LCI_ASSERT(spilled_pending_.value.load(util::mo_relaxed) == 0,
             "completion queue overflow count not zero at teardown");
}

cq_impl_t::node_cache_t* cq_impl_t::own_node_cache() {
  if (node_caches_ == nullptr) return nullptr;
  const std::size_t index = util::thread_index();
  return index < node_cache_slots ? &node_caches_[index] : nullptr;
}

cq_impl_t::status_node_t* cq_impl_t::make_node(const status_t& status) {
  status_node_t* node = nullptr;
  if (node_cache_t* cache = own_node_cache(); cache != nullptr) {
    // Refill half: the other half is room for what this thread's pops give
    // back before the cache must flush.
    if (cache->count == 0) cache->count = nodes_->take_up_to(cache->nodes, node_cache_capacity_ / 2);
    if (cache->count > 0) node = cache->nodes[--cache->count];
  } else if (nodes_ != nullptr) {
    node = nodes_->take();
  }
  if (node == nullptr) {
    node = new status_node_t;  // past default_length, or spilled (see Allocation)
    // relaxed: a count for tests, ordered by nothing.
    allocated_nodes_.fetch_add(1, util::mo_relaxed);
  }
  node->status = status;
  return node;
}

void cq_impl_t::free_node(status_node_t* node) {
  if (nodes_ == nullptr || !nodes_->owns(node)) {
    delete node;
    return;
  }
  node_cache_t* cache = own_node_cache();
  if (cache == nullptr) {
    nodes_->give_back(node);
    return;
  }
  if (cache->count == node_cache_capacity_) {
    // Flush the older half (the bottom of the cache) in one batch.
    const std::size_t flushed = node_cache_capacity_ / 2;
    nodes_->give_back_all(cache->nodes, flushed);
    std::copy(cache->nodes + flushed, cache->nodes + cache->count, cache->nodes);
    cache->count -= flushed;
  }
  cache->nodes[cache->count++] = node;
}

void cq_impl_t::signal(status_t status) {
  if (lcrq_ != nullptr) {
    lcrq_->push(make_node(status));
  } else {
    push_array(status);
  }
}

status_t cq_impl_t::pop() {
  status_t status(errorcode_t::retry);
  if (lcrq_ == nullptr) {
    (void)pop_array(status);  // empty: status stays retry
    return status;
  }
  auto* node = static_cast<status_node_t*>(lcrq_->pop());
  if (node == nullptr) return status;
  LCI_DEBUG_ASSERT(node->next == nullptr, "a queued status is still linked");
  status = node->status;
  free_node(node);
  return status;
}

std::uint64_t cq_impl_t::spilled_count() const {
  util::spinlock_guard_t guard(overflow_lock_);
  return spilled_total_;
}

std::uint64_t cq_impl_t::allocated_nodes_count() const {
  return allocated_nodes_.load(util::mo_relaxed);  // relaxed: see make_node()
}

// The array first, unless earlier statuses wait in the overflow list: a
// signal must not overtake them.
void cq_impl_t::push_array(const status_t& status) {
  // relaxed: a hint only. The count is written under overflow_lock_; by
  // coherence a signal that happens after a spill reads a non-zero count
  // (until a pop drains the list), which is all the FIFO order needs. The
  // status itself travels through the array's or the lock's own ordering.
  if (spilled_pending_.value.load(util::mo_relaxed) == 0 &&
      array_->push(status)) {
    return;
  }
  spill(status);
}

void cq_impl_t::spill(const status_t& status) {
  status_node_t* node = make_node(status);  // allocated: the array kind has no pool
  util::spinlock_guard_t guard(overflow_lock_);
  if (overflow_tail_ == nullptr) {
    LCI_ASSERT(overflow_head_ == nullptr, "overflow list head without tail");
    overflow_head_ = node;
  } else {
    overflow_tail_->next = node;
  }
  overflow_tail_ = node;
  ++spilled_total_;
  // relaxed: see push_array(); written only under the lock.
  spilled_pending_.value.fetch_add(1, util::mo_relaxed);
}

// Array before list: every status in the array was signalled before, or
// concurrently with, those in the list (see push_array()).
bool cq_impl_t::pop_array(status_t& out) {
  if (array_->pop(out)) return true;
  // relaxed: a hint, as in push_array(); a pop that happens after a spill
  // reads a non-zero count by coherence.
  if (spilled_pending_.value.load(util::mo_relaxed) == 0) return false;
  return take_spilled(out);
}

// The array once more, then the list head, both under the lock. The empty
// array seen above may predate a status signalled before the list head was
// spilled; taking the lock acquires that spill, and with it the earlier
// status's push, so the array pop here finds it (or another pop took it).
// The array pop may wait a few instructions for a pusher to publish its
// slot (basic_faa_array_t's bounded spin); that pusher never needs this lock.
bool cq_impl_t::take_spilled(status_t& out) {
  status_node_t* node = nullptr;
  {
    util::spinlock_guard_t guard(overflow_lock_);
    if (array_->pop(out)) return true;
    node = overflow_head_;
    if (node == nullptr) return false;  // another pop drained it first
    overflow_head_ = node->next;
    if (overflow_head_ == nullptr) overflow_tail_ = nullptr;
    node->next = nullptr;
    // relaxed: see push_array(); written only under the lock.
    const std::uint64_t pending =
        spilled_pending_.value.fetch_sub(1, util::mo_relaxed);
    LCI_ASSERT(pending > 0, "overflow count out of step with its list");
  }
  out = node->status;
  free_node(node);
  return true;
}

}  // namespace lci::detail
