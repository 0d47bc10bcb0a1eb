// cq_impl_t: the completion-queue completion object (paper §3.2, §4.1.4):
// signal() appends a copy of the status, pop() hands out the oldest one.
// It wraps one of the two queues of lci/cq/: the unbounded lcrq_t, of
// pointers to status nodes, or the fixed-capacity basic_faa_array_t, which
// holds the statuses themselves, backed by an overflow list of nodes so
// that no status is ever lost.
//
// Thread safety: signal() and pop() may run concurrently from any threads;
//                the destructor must not run concurrently with anything.
// Blocking:      lcrq: never (see lcrq_t). array_atomic: bounded spin inside
//                basic_faa_array_t; the overflow list is under a spinlock
//                held for a few pointer writes.
// Ownership:     statuses are copied in and out; a buffer a status names
//                passes to the caller of the pop() that returns it. Statuses
//                still queued at destruction are discarded (the buffers they
//                name are not freed).
// Allocation:    at construction the queue: array_atomic, default_length
//                status slots; lcrq, its first segments, a pool of
//                default_length status nodes and the per-thread node caches.
//                On the data path none while at most default_length
//                statuses are queued (lcrq: less what the caches hold, at
//                most node_cache_slots * the cache size, see node_cache_t).
//                Past that (nobody pops) a signal allocates a node rather
//                than lose the status or fail: a completion cannot be
//                refused. The pop() that returns it frees it.
// Limits:        array_atomic: 1 <= default_length <= default_length_max
//                (std::invalid_argument otherwise); beyond default_length
//                queued statuses, signal() spills into a spinlock-protected
//                list (a status is never dropped and signal() never fails).
//                lcrq: unbounded; default_length is the node pool's size.
// Order:         pop() returns statuses in FIFO order of their signals
//                (per signalling thread, and for signals ordered by
//                happens-before). While the overflow list is non-empty every
//                signal goes there too, and pop() takes from the array
//                before the list, so a spill never reorders.
// Progress:      lcrq: lock-free. array_atomic: as basic_faa_array_t; the
//                overflow path is blocking (spinlock).
// Linearization: as the wrapped queue (lcrq_t, basic_faa_array_t); on the
//                overflow path, the list update under its lock. An empty
//                pop costs the queue's own emptiness test, which writes no
//                shared word (the array reads its two counters; lcrq_t
//                claims a hazard slot and reads its head ring's counters).
#pragma once

#include <cstdint>
#include <memory>

#include "lci/api/lci_types.hpp"
#include "lci/comp/comp_impl.hpp"
#include "lci/cq/cq_faa_array.hpp"
#include "lci/cq/cq_lcrq.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/object_pool.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::detail {

// The two implementations of paper §4.1.4; the runtime maps the public
// attr_cq_type_t onto it.
enum class cq_kind_t : std::uint8_t { array_atomic, lcrq };

class cq_impl_t final : public comp_impl_t {
 public:
  static constexpr int default_length_max = 1 << 30;

  cq_impl_t(cq_kind_t kind,
            int default_length);  // throws std::invalid_argument
  ~cq_impl_t() override;

  void signal(status_t status) override;
  // The oldest status, or one whose error is errorcode_t::retry when empty.
  [[nodiscard]] status_t pop();
  cq_kind_t cq_kind() const { return cq_kind_; }
  // Diagnostics for tests: statuses that ever went to the overflow list,
  // and signals whose node was allocated: lcrq, because the pool (and the
  // signaller's cache) had none; array_atomic, every spilled one.
  std::uint64_t spilled_count() const;
  std::uint64_t allocated_nodes_count() const;

 private:
  // A queued status outside the array: what lcrq_t holds (as void*), and
  // a link for the overflow list.
  struct status_node_t {
    status_t status;
    status_node_t* next = nullptr;
  };
  // A node holding `status`: from the calling thread's cache, the pool,
  // or allocated past its bound (always, without a pool: array_atomic).
  status_node_t* make_node(const status_t& status);
  void free_node(status_node_t* node);

  // Free nodes kept by one thread: signal() takes from its own cache and
  // pop() gives back to its own, so a thread that signals and pops (or a
  // pair of threads, one signalling and one popping) touches the shared
  // pool once per half cache (one CAS for the batch) instead of twice per
  // status. Before the caches, the pool's head was the one word besides
  // the queue's own that every signal and every pop of every thread wrote
  // (docs/bench_upstream.md, "Thread scaling"). Cache i belongs to the
  // thread whose util::thread_index() is i, which only it touches: one live
  // thread at a time holds an index, handed on in order when a thread exits
  // (util/thread_context.hpp), so no lock. Threads with higher indices use
  // the pool directly. A thread that exits leaves its cache's nodes there
  // for the next thread given its index, so at most node_cache_slots *
  // capacity nodes stay out of the pool.
  static constexpr std::size_t node_cache_slots = 64;
  static constexpr std::size_t node_cache_capacity_max = 32;
  struct alignas(util::cache_line_bytes) node_cache_t {
    status_node_t* nodes[node_cache_capacity_max];
    std::size_t count = 0;
  };
  node_cache_t* own_node_cache();

  void push_array(const status_t& status);
  void spill(const status_t& status);
  [[nodiscard]] bool pop_array(status_t& out);
  [[nodiscard]] bool take_spilled(status_t& out);

  const cq_kind_t cq_kind_;
  const std::unique_ptr<cq::lcrq_t> lcrq_;  // kind lcrq, else null
  const std::unique_ptr<cq::basic_faa_array_t<status_t>>
      array_;  // kind array_atomic, else null
  // default_length nodes (kind lcrq; null for array_atomic, whose statuses
  // live in the array and whose spilled ones are allocated)
  const std::unique_ptr<util::object_pool_t<status_node_t>> nodes_;
  // Nodes one cache holds at most: node_cache_capacity_max, less for a
  // queue so short that full caches would take most of its nodes (0: no
  // caches, every node comes from the pool or, without one, is allocated).
  const std::size_t node_cache_capacity_;
  const std::unique_ptr<node_cache_t[]> node_caches_;  // node_cache_slots; null without caches

  // The overflow list (array_atomic only). spilled_pending_ (its length) is
  // polled by every signal and pop on the fast path, but written only on the
  // overflow path; the lock and the list, written by spilling signallers and
  // draining poppers, sit on another line.
  struct alignas(util::cache_line_bytes) pending_count_t {
    util::atomic<std::uint64_t> value{0};
  };
  static_assert(alignof(pending_count_t) == util::cache_line_bytes &&
                    sizeof(pending_count_t) % util::cache_line_bytes == 0,
                "the polled count needs its own cache line");

  pending_count_t spilled_pending_;
  alignas(util::cache_line_bytes) mutable util::spinlock_t overflow_lock_;
  status_node_t* overflow_head_ = nullptr;  // guarded by overflow_lock_
  status_node_t* overflow_tail_ = nullptr;  // guarded by overflow_lock_
  std::uint64_t spilled_total_ = 0;         // guarded by overflow_lock_
  util::atomic<std::uint64_t> allocated_nodes_{0};  // written past the pool only
};

}  // namespace lci::detail
