// pool_t: LCI's packet pool (paper §4.1.2): fixed-size, pre-allocated,
// cache-line-aligned packets kept in per-thread deques with steal-half.
//
// Thread safety: every member function may run concurrently from any threads.
//                Thread t works on deque thread_index() % deques_count_max;
//                two threads mapped to one deque share it correctly (lock).
// Blocking:      get()/put() take their own deque's spinlock with lock()
//                (waits only while another thread is inside a short, bounded
//                critical section); every other deque is only try_locked, so
//                a busy victim is a failed steal, never a wait.
// Ownership:     get() hands the packet to the caller, who owns it until it
//                passes it to put() (from any thread). After put() the caller
//                must not touch it. nullptr from get() transfers nothing.
// Allocation:    at construction only: the packets (one block), the deques
//                and their ring storage. get()/put() never allocate.
// Limits:        packets_count <= packets_count_max; deques_count_max <=
//                deques_count_limit. An empty pool makes get() return nullptr
//                (the caller reports retry_nopacket); put() always succeeds
//                (a deque can hold every packet).
// Progress:      blocking (per-deque spinlock), deadlock-free: a thread holds
//                at most its own lock while it try_locks one other.
// Linearization: get() at the pop from its deque's tail (own or, after a
//                steal, stolen packets); put() at the push to its deque's
//                tail; a steal at the move under both locks.
//
// Initial distribution: every packet starts in the deque of the constructing
// thread. Its first get() needs no steal, and no packet is stranded in a
// deque no thread ever uses; other threads steal half on their first get().
//
// Victims: the paper keeps the list of deques in an MPMC array; here it is a
// fixed append-only array of the deques that have been used (bounded by
// deques_count_max, so it never resizes). A thief picks a random active deque
// other than its own, so an unused deque is never a (necessarily failing)
// victim.
//
// Remote puts: a put by a thread whose deque is not the packet's home deque
// (the deque of the thread that got it) lands in the putter's own deque. If
// that deque then holds more than packet_return_threshold packets, the oldest
// packets beyond threshold/2 move to the packet's home deque, so a
// producer-consumer pair does not strand every packet on the consumer side.
//
// Reserved packets: the last reserved_count packets live in a deque of their
// own that is never a steal victim. get() never hands them out; only
// get_reserved() does, and put() returns each to that deque, whoever puts it.
// What the reserve is for is the owner's (the runtime keeps it for a device
// with no receive posted: runtime/resources.hpp); the pool guarantees that
// no number of get()s can take it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "lci/packet_pool/packet.hpp"
#include "lci/packet_pool/packet_pool_deque.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/mutation.hpp"
#include "lci/util/spinlock.hpp"
#include "lci/util/thread_context.hpp"

namespace lci::packet_pool {

class pool_t {
 public:
  static constexpr std::size_t packets_count_max = std::size_t{1} << 30;
  static constexpr std::size_t deques_count_limit = std::size_t{1} << 16;
  static constexpr std::size_t packet_size_bytes_max = std::size_t{1} << 30;
  static constexpr std::size_t packet_return_threshold_default = 64;

  // packets_count counts the reserved packets too (reserved_count <
  // packets_count: at least one packet is get()'s).
  pool_t(std::size_t packet_size_bytes, std::size_t packets_count,
         std::size_t deques_count_max = 64,
         std::size_t packet_return_threshold = packet_return_threshold_default,
         std::size_t reserved_count = 0);
  ~pool_t();  // asserts every packet is home: none lost, none still out
  pool_t(const pool_t&) = delete;
  pool_t& operator=(const pool_t&) = delete;

  // A payload pointer (cache-line aligned, packet_size_bytes() writable), or
  // nullptr when the local deque is empty and one steal attempt failed.
  [[nodiscard]] void* get();
  // A reserved packet (see the class comment), or nullptr when every one is
  // out. Takes the reserve's lock (waits only for another get_reserved() or
  // a put() of a reserved packet).
  [[nodiscard]] void* get_reserved();
  // Returns a packet from any thread: a reserved one to the reserve, any
  // other to the putter's deque. Aborts on a pointer this pool does not
  // own or on a packet that is already in the pool (double put).
  void put(void* payload);

  // Receives. A packet posted as a network receive is marked with its
  // poster's `mark` (nonzero) by its holder before the post, and unmarked
  // by the holder that takes its arrival, so that a device closing with
  // receives still posted (a closed network completes none of them) can put
  // exactly those back: reclaim_marked() puts back every packet still out
  // with `mark` and returns how many. It may run beside other threads'
  // get/put; the caller guarantees nobody else holds a packet with `mark`.
  void mark_receive(void* payload, std::uint32_t mark);
  void unmark_receive(void* payload);
  std::size_t reclaim_marked(std::uint32_t mark);

  // Teardown only (no get/put may run): puts back every packet still out and
  // returns how many there were. For an owner that knows its packets are
  // unreachable, e.g. unexpected messages nobody received when the runtime
  // ends.
  std::size_t reclaim_outstanding();

  std::size_t packet_size_bytes() const { return packet_size_bytes_; }
  std::size_t packets_count() const { return packets_count_; }  // reserved ones too
  std::size_t reserved_count() const { return packets_count_ - reserved_begin_; }
  // Packets in the pool, the reserve's too. Takes each deque's lock in turn:
  // exact when no get/put runs concurrently.
  std::size_t packets_free_count() const;
  std::size_t reserved_free_count() const;  // locks the reserve
  // True iff `payload` is the payload pointer of one of this pool's packets.
  bool owns(const void* payload) const;
  // The payload pointer of the packet whose payload holds `address`;
  // nullptr when no packet of this pool does (for a buffer the runtime
  // handed out inside a packet, e.g. a zero-copy active message).
  void* payload_containing(const void* address) const;

  // Introspection for tests and diagnostics (not on the data path).
  std::size_t deques_count_max() const { return deques_count_max_; }
  std::size_t packet_return_threshold() const { return packet_return_threshold_; }
  std::size_t deque_index_of_this_thread() const;
  std::size_t deque_packets_count(std::size_t deque_index) const;  // locks it

 private:
  std::uint32_t own_deque_index();
  void register_deque(std::uint32_t deque_index);
  packet_header_t* steal_into(deque_t& own, std::uint32_t own_index);
  void* hand_out(packet_header_t* packet, std::uint32_t home_index);
  void return_excess(deque_t& own, std::uint32_t home_index);
  packet_header_t* header_at(std::size_t packet_index) const;
  packet_header_t* checked_header_of(void* payload) const;
  void* payload_of(packet_header_t* packet) const;
  void assert_all_home() const;

  // Read-only after construction (read by every get/put).
  std::size_t packet_size_bytes_;
  std::size_t packets_count_;
  std::size_t deques_count_max_;
  std::size_t packet_return_threshold_;
  std::size_t packet_stride_bytes_;
  std::size_t reserved_begin_;  // packets from this index on are reserved
  std::uintptr_t packets_begin_;  // first packet (its header)
  std::uintptr_t packets_end_;    // one past the last packet
  std::uint32_t initial_deque_index_;
  deque_t* deques_;  // deques_count_max_ of threads, then the reserve
  deque_t* reserve_;
  std::unique_ptr<deque_t[]> deques_storage_;
  std::unique_ptr<packet_header_t*[]> slots_storage_;
  std::unique_ptr<util::atomic<std::uint32_t>[]> active_deque_indices_;
  // Written by each deque's first registration (rare), on its own line,
  // apart from the read-mostly fields above that every get/put reads (the
  // class is padded to a whole line after it by its alignment).
  alignas(util::cache_line_bytes) util::atomic<std::uint32_t> active_deques_count_{0};
};

inline constexpr std::uint32_t deque_index_none = 0xFFFFFFFFu;

// ---- data path --------------------------------------------------------------

inline std::uint32_t pool_t::own_deque_index() {
  const std::size_t thread_index = util::thread_index();
  // The modulo (a division) only for threads beyond the deque count.
  const std::size_t index = thread_index < deques_count_max_
                                ? thread_index
                                : thread_index % deques_count_max_;
  // relaxed: the flag only says whether registration already happened; the
  // deque itself was constructed before the pool was shared.
  if (__builtin_expect(deques_[index].registered.load(util::mo_relaxed) == 0, 0)) {
    register_deque(static_cast<std::uint32_t>(index));
  }
  return static_cast<std::uint32_t>(index);
}

inline void* pool_t::get() {
  const std::uint32_t own_index = own_deque_index();
  deque_t& own = deques_[own_index];
  own.lock.lock();
  packet_header_t* packet = own.pop_tail();
  if (__builtin_expect(packet == nullptr, 0)) packet = steal_into(own, own_index);
  own.lock.unlock();
  if (packet == nullptr) return nullptr;
  return hand_out(packet, own_index);
}

// A packet just taken from a deque under its lock becomes the caller's.
inline void* pool_t::hand_out(packet_header_t* packet, std::uint32_t home_index) {
  // The second path of the in-pool/out invariant (put() checks the first).
#if defined(LCI_DEBUG) && LCI_DEBUG
  // acq_rel exchange: detects even a racing double put; pairs with the
  // exchange in put() [S].
  // Equivalent mutants: mo_weaken, mo_to_relaxed. Relaxed would do: the check needs only the
  // exchange's atomicity (it reads the latest state whatever its order); the deque lock
  // orders the packet, as in the release build below
  // (tools/mutate_records/2026-11-26-runs-01-04.md, run 2a).
  const std::uint8_t state = packet->state.exchange(
      static_cast<std::uint8_t>(packet_state_t::out), util::mo_acq_rel);
#else
  // relaxed: the packet reached us through the deque lock, which orders the
  // putter's store [S] before this load; the state is only a check.
  const std::uint8_t state = packet->state.load(util::mo_relaxed);
  packet->state.store(static_cast<std::uint8_t>(packet_state_t::out),
                      util::mo_relaxed);  // relaxed: as the load above
#endif
  LCI_ASSERT(state == static_cast<std::uint8_t>(packet_state_t::in_pool),
             "get: packet in a deque is not marked in_pool (corrupt header?)");
  // (The mutation, tests only, forgets the new home: a later put is judged
  // local or remote against a stale deque.)
  if (!util::mutated("packet_pool_home_not_recorded")) packet->home_deque_index.store(home_index);
  return payload_of(packet);
}

inline void* pool_t::get_reserved() {
  reserve_->lock.lock();
  packet_header_t* packet = reserve_->pop_tail();
  reserve_->lock.unlock();
  if (packet == nullptr) return nullptr;
  // The reserve's index as the home: put() sends a reserved packet back by
  // its packet index and never reads it.
  return hand_out(packet, static_cast<std::uint32_t>(deques_count_max_));
}

inline void pool_t::put(void* payload) {
  packet_header_t* packet = checked_header_of(payload);
#if defined(LCI_DEBUG) && LCI_DEBUG
  // acq_rel [S]: pairs with the exchange in get() and with a racing put.
  // Equivalent mutants: mo_weaken, mo_to_relaxed. Relaxed would do, as in get(): only the
  // exchange's atomicity matters; the deque lock or the caller's hand-off orders the packet
  // (tools/mutate_records/2026-11-26-runs-01-04.md, run 2a).
  const std::uint8_t state = packet->state.exchange(
      static_cast<std::uint8_t>(packet_state_t::in_pool), util::mo_acq_rel);
#else
  // relaxed [S]: the caller obtained the packet through get() (deque lock)
  // or its own synchronised hand-off; the push below publishes the store.
  const std::uint8_t state = packet->state.load(util::mo_relaxed);
  packet->state.store(static_cast<std::uint8_t>(packet_state_t::in_pool),
                      util::mo_relaxed);  // relaxed: as the load above
#endif
  LCI_ASSERT(state != static_cast<std::uint8_t>(packet_state_t::in_pool),
             "put: double put (packet is already in the pool)");
  LCI_ASSERT(state == static_cast<std::uint8_t>(packet_state_t::out),
             "put: packet header corrupt (state is neither in_pool nor out)");
  // (The mutation, tests only, lets reserved packets into the deques, where
  // get() hands them out.)
  if (__builtin_expect(packet->packet_index >= reserved_begin_, 0) &&
      !util::mutated("packet_pool_reserve_not_kept")) {
    util::spinlock_guard_t guard(reserve_->lock);
    reserve_->push_tail(packet);
    return;
  }
  const std::uint32_t home_index = packet->home_deque_index.load();
  const std::uint32_t own_index = own_deque_index();
  deque_t& own = deques_[own_index];
  own.lock.lock();
  own.push_tail(packet);
  if (home_index != own_index && own.size() > packet_return_threshold_) {
    return_excess(own, home_index);
  }
  own.lock.unlock();
}

inline void* pool_t::payload_of(packet_header_t* packet) const {
  return reinterpret_cast<char*>(packet) + packet_header_bytes;
}

inline packet_header_t* pool_t::header_at(std::size_t packet_index) const {
  return reinterpret_cast<packet_header_t*>(packets_begin_ +
                                            packet_index * packet_stride_bytes_);
}

// The cheap always-on checks: in range, line aligned, and the header's own
// index maps back to this address (no division on the data path).
inline packet_header_t* pool_t::checked_header_of(void* payload) const {
  const auto address = reinterpret_cast<std::uintptr_t>(payload);
  LCI_ASSERT(address >= packets_begin_ + packet_header_bytes && address < packets_end_,
             "put: pointer is not a packet of this pool");
  LCI_ASSERT(address % util::cache_line_bytes == 0,
             "put: pointer is not a packet of this pool (misaligned)");
  auto* packet = reinterpret_cast<packet_header_t*>(address - packet_header_bytes);
  const std::size_t packet_index = packet->packet_index;
  // Equivalent mutants: bound. At packet_index == packets_count_, header_at() is one stride
  // past the block, never `packet` (confined to the block above); the `<` matters for a
  // larger, corrupted index whose index * stride wraps around
  // (tools/mutate_records/2026-11-27-runs-05-28.md, run 9).
  LCI_ASSERT(packet_index < packets_count_ && header_at(packet_index) == packet,
             "put: pointer is not a packet of this pool (not a payload start)");
  return packet;
}

// ---- slow paths (steal, return, registration) ---------------------------------

// Own lock held and own deque empty. Exactly one attempt: a random active
// deque other than ours, try_locked; busy or empty is a failed steal.
inline packet_header_t* pool_t::steal_into(deque_t& own, std::uint32_t own_index) {
  LCI_DEBUG_ASSERT(own.size() == 0, "steal with packets still in the own deque");
  // relaxed: we only need some count of reserved slots; a slot whose index is
  // not stored yet reads deque_index_none and is skipped below.
  const std::uint32_t active_count = active_deques_count_.load(util::mo_relaxed);
  if (active_count < 2) return nullptr;  // only our own deque is active
  std::uint32_t slot = util::thread_random(active_count);
  // relaxed: the value is just an index; the deque's contents are read under
  // its lock, which orders them.
  std::uint32_t victim_index = active_deque_indices_[slot].load(util::mo_relaxed);
  if (victim_index == own_index) {
    slot = slot + 1 == active_count ? 0 : slot + 1;  // each deque is listed once
    victim_index = active_deque_indices_[slot].load(util::mo_relaxed);  // relaxed: as above
  }
  if (victim_index == deque_index_none) return nullptr;  // registration in flight
  // Equivalent mutants: bound. Strict already: the active list holds only registered deque
  // indices, each below deques_count_max_ (tools/mutate_records/2026-11-27-runs-05-28.md, run 9).
  LCI_ASSERT(victim_index != own_index && victim_index < deques_count_max_,
             "steal: bad victim index");
  deque_t& victim = deques_[victim_index];
  // (The mutation, model checking only, steals without the victim's lock.)
  const bool lock_victim = !util::mutated("packet_pool_steal_unlocked");
  if (lock_victim && !victim.lock.try_lock()) return nullptr;  // busy victim: failed steal
  // Half, rounded up (the mutation, tests only, rounds down: a victim with
  // one packet is never robbed, and an odd victim keeps the larger half).
  const std::uint32_t steal_count =
      (victim.size() + (util::mutated("packet_pool_steal_rounds_down") ? 0 : 1)) / 2;
  if (steal_count > 0) deque_t::move_head_to_tail(victim, own, steal_count);
  if (lock_victim) victim.lock.unlock();
  return own.pop_tail();  // nullptr if the victim was empty
}

// Own lock held; own deque over the threshold after a remote put. Moves the
// oldest packets beyond threshold/2 to the home deque, if its lock is free
// now; if not, the next remote put tries again.
inline void pool_t::return_excess(deque_t& own, std::uint32_t home_index) {
  // Equivalent mutants: bound. Strict already: a packet's home is the folded deque index of
  // the thread that got it, or the constructor's (tools/mutate_records/2026-11-27-runs-05-28.md,
  // run 9).
  LCI_ASSERT(home_index < deques_count_max_, "return: bad home deque index");
  deque_t& home = deques_[home_index];
  LCI_ASSERT(&home != &own, "return: home is the own deque");
  // (The mutation, model checking only, returns without the home's lock.)
  const bool lock_home = !util::mutated("packet_pool_return_unlocked");
  if (lock_home && !home.lock.try_lock()) return;
  const std::uint32_t keep_count =
      static_cast<std::uint32_t>(packet_return_threshold_ / 2);
  const std::uint32_t own_count = own.size();
  // Equivalent mutants: bound. Strict already: put() returns packets only from a deque over
  // packet_return_threshold_, which is at least keep_count
  // (tools/mutate_records/2026-11-27-runs-05-28.md, run 9).
  LCI_ASSERT(own_count > keep_count, "return: nothing in excess");
  deque_t::move_head_to_tail(own, home, own_count - keep_count);
  if (lock_home) home.lock.unlock();
}

// ---- construction, teardown, introspection (not on the data path) ------------

inline pool_t::pool_t(std::size_t packet_size_bytes, std::size_t packets_count,
                      std::size_t deques_count_max,
                      std::size_t packet_return_threshold, std::size_t reserved_count)
    : packet_size_bytes_(packet_size_bytes),
      packets_count_(packets_count),
      deques_count_max_(deques_count_max),
      packet_return_threshold_(packet_return_threshold),
      reserved_begin_(packets_count - reserved_count) {
  LCI_ASSERT(packet_size_bytes > 0, "packet_size_bytes must be positive");
  LCI_ASSERT(packet_size_bytes <= packet_size_bytes_max, "packet_size_bytes over the limit");
  LCI_ASSERT(packets_count > 0, "packets_count must be positive");
  // Unreachable mutants: bound. The mutant differs only for a pool of exactly 2^30 packets
  // (at least 128 GiB), which nothing here can allocate
  // (tools/mutate_records/2026-11-27-runs-05-28.md, run 9).
  LCI_ASSERT(packets_count <= packets_count_max, "packets_count over the limit");
  LCI_ASSERT(deques_count_max > 0, "deques_count_max must be positive");
  LCI_ASSERT(deques_count_max <= deques_count_limit, "deques_count_max over the limit");
  LCI_ASSERT(reserved_count < packets_count, "every packet reserved: get() would have none");
  const std::size_t line = util::cache_line_bytes;
  packet_stride_bytes_ = packet_header_bytes + (packet_size_bytes + line - 1) / line * line;
  std::size_t capacity = 1;
  // Equivalent mutants: bound. Memory only: for a power-of-two packets_count the deques get
  // twice the slots, and every deque still holds every packet
  // (tools/mutate_records/2026-11-27-runs-05-28.md, run 9).
  while (capacity < packets_count) capacity *= 2;  // <= 2^30: bounded
  // Packets: one line-aligned block, never resized.
  const std::size_t block_bytes = packet_stride_bytes_ * packets_count;
  LCI_ASSERT(block_bytes / packets_count == packet_stride_bytes_, "pool size overflows");
  void* block = ::operator new(block_bytes, std::align_val_t{line});
  packets_begin_ = reinterpret_cast<std::uintptr_t>(block);
  packets_end_ = packets_begin_ + block_bytes;
  // Rings: every deque can hold every packet, so a push never finds it full.
  // Allocated here, uninitialised: pages of deques no thread uses are never
  // touched (the OS maps them lazily), and the data path never allocates.
  deques_storage_ = std::make_unique<deque_t[]>(deques_count_max + 1);
  deques_ = deques_storage_.get();
  reserve_ = &deques_[deques_count_max];  // never registered: no thief sees it
  slots_storage_.reset(new packet_header_t*[capacity * (deques_count_max + 1)]);
  active_deque_indices_ =
      std::make_unique<util::atomic<std::uint32_t>[]>(deques_count_max);
  for (std::size_t d = 0; d <= deques_count_max; ++d) {
    deques_[d].init(&slots_storage_[d * capacity], static_cast<std::uint32_t>(capacity));
  }
  for (std::size_t d = 0; d < deques_count_max; ++d) {
    active_deque_indices_[d].store(deque_index_none, util::mo_relaxed);  // relaxed: not shared yet
  }
  const std::size_t thread_index = util::thread_index();
  initial_deque_index_ = static_cast<std::uint32_t>(thread_index % deques_count_max);
  register_deque(initial_deque_index_);
  deque_t& initial = deques_[initial_deque_index_];
  // Both locks for the debug lock checks.
  util::spinlock_guard_t guard(initial.lock);
  util::spinlock_guard_t reserve_guard(reserve_->lock);
  for (std::size_t i = 0; i < packets_count; ++i) {
    auto* packet = new (reinterpret_cast<void*>(header_at(i))) packet_header_t;
    packet->packet_index = static_cast<std::uint32_t>(i);
    packet->home_deque_index.store(initial_deque_index_);
    packet->receive_mark.store(0, util::mo_relaxed);  // relaxed: not shared yet
    packet->state.store(static_cast<std::uint8_t>(packet_state_t::in_pool),
                        util::mo_relaxed);  // relaxed: not shared yet
    (i < reserved_begin_ ? initial : *reserve_).push_tail(packet);
  }
}

inline pool_t::~pool_t() {
  assert_all_home();
  // packet_header_t is trivially destructible in production; end its
  // lifetime explicitly anyway so a model-checking build sees it.
  for (std::size_t i = 0; i < packets_count_; ++i) header_at(i)->~packet_header_t();
  ::operator delete(reinterpret_cast<void*>(packets_begin_),
                    std::align_val_t{util::cache_line_bytes});
}

// Teardown: no get/put may run. Every packet is in exactly one deque and
// marked in_pool, each reserved one in the reserve.
inline void pool_t::assert_all_home() const {
  std::vector<bool> seen(packets_count_, false);
  std::size_t home_count = 0;
  for (std::size_t d = 0; d <= deques_count_max_; ++d) {
    util::spinlock_guard_t guard(deques_[d].lock);
    const std::uint32_t size = deques_[d].size();
    for (std::uint32_t i = 0; i < size; ++i) {
      const packet_header_t* packet = deques_[d].at(i);
      LCI_ASSERT(!seen[packet->packet_index], "teardown: a packet is in the pool twice");
      seen[packet->packet_index] = true;
      LCI_ASSERT((packet->packet_index >= reserved_begin_) == (&deques_[d] == reserve_),
                 "teardown: a reserved packet outside the reserve, or another in it");
      // relaxed: no concurrent users at teardown.
      LCI_ASSERT(packet->state.load(util::mo_relaxed) ==
                     static_cast<std::uint8_t>(packet_state_t::in_pool),
                 "teardown: a packet in a deque is not marked in_pool");
    }
    home_count += size;
  }
  LCI_ASSERT(home_count == packets_count_,
             "teardown: packets still out (or lost) when the pool is destroyed");
}

inline void pool_t::mark_receive(void* payload, std::uint32_t mark) {
  LCI_ASSERT(mark != 0, "a receive mark of 0 (0 means unmarked)");
  // relaxed: see packet_header_t::receive_mark.
  checked_header_of(payload)->receive_mark.store(mark, util::mo_relaxed);
}

inline void pool_t::unmark_receive(void* payload) {
  // relaxed: see packet_header_t::receive_mark.
  checked_header_of(payload)->receive_mark.store(0, util::mo_relaxed);
}

inline std::size_t pool_t::reclaim_marked(std::uint32_t mark) {
  LCI_ASSERT(mark != 0, "reclaiming the unmarked packets");
  std::size_t reclaimed = 0;
  for (std::size_t i = 0; i < packets_count_; ++i) {
    packet_header_t* packet = header_at(i);
    // relaxed: a packet with `mark` is the caller's (see the declaration),
    // marked before the caller's hand-off to this thread; any other packet
    // reads as another mark or 0, and is left alone.
    if (packet->receive_mark.load(util::mo_relaxed) != mark) continue;
    packet->receive_mark.store(0, util::mo_relaxed);
    put(payload_of(packet));
    ++reclaimed;
  }
  return reclaimed;
}

inline std::size_t pool_t::reclaim_outstanding() {
  std::size_t reclaimed = 0;
  for (std::size_t i = 0; i < packets_count_; ++i) {
    packet_header_t* packet = header_at(i);
    // relaxed: no concurrent users at teardown.
    if (packet->state.load(util::mo_relaxed) == static_cast<std::uint8_t>(packet_state_t::out)) {
      put(payload_of(packet));
      ++reclaimed;
    }
  }
  return reclaimed;
}

// Cold: the first get/put by a thread of a new deque. Exactly one thread
// wins the flag and appends the deque to the list of steal victims.
inline void pool_t::register_deque(std::uint32_t deque_index) {
  // Equivalent mutants: bound. Strict already: both callers pass a thread index folded into
  // [0, deques_count_max_) (tools/mutate_records/2026-11-27-runs-05-28.md, run 9).
  LCI_ASSERT(deque_index < deques_count_max_, "register: bad deque index");
  std::uint8_t expected = 0;
  // relaxed: the flag only elects one registering thread; it publishes
  // nothing (the index store below is read with relaxed, see steal_into()).
  if (!deques_[deque_index].registered.compare_exchange_strong(
          expected, 1, util::mo_relaxed, util::mo_relaxed)) {
    return;
  }
  // relaxed: reserves a slot; a thief that reads the count before the index
  // store below sees deque_index_none there and fails that steal.
  const std::uint32_t slot = active_deques_count_.fetch_add(1, util::mo_relaxed);
  // Equivalent mutants: bound. Strict already: each deque registers once (the flag above),
  // so at most deques_count_max_ slots are ever reserved
  // (tools/mutate_records/2026-11-27-runs-05-28.md, run 9).
  LCI_ASSERT(slot < deques_count_max_, "register: more active deques than deques");
  active_deque_indices_[slot].store(deque_index, util::mo_relaxed);  // relaxed: see steal_into()
}

inline std::size_t pool_t::packets_free_count() const {
  std::size_t free_count = 0;
  for (std::size_t d = 0; d <= deques_count_max_; ++d) {
    util::spinlock_guard_t guard(deques_[d].lock);
    free_count += deques_[d].size();
  }
  LCI_ASSERT(free_count <= packets_count_, "more free packets than packets");
  return free_count;
}

inline std::size_t pool_t::reserved_free_count() const {
  util::spinlock_guard_t guard(reserve_->lock);
  return reserve_->size();
}

inline bool pool_t::owns(const void* payload) const {
  const auto address = reinterpret_cast<std::uintptr_t>(payload);
  if (address < packets_begin_ + packet_header_bytes || address >= packets_end_) return false;
  return (address - packets_begin_ - packet_header_bytes) % packet_stride_bytes_ == 0;
}

inline void* pool_t::payload_containing(const void* address) const {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  if (at < packets_begin_ || at >= packets_end_) return nullptr;
  const std::uintptr_t offset = (at - packets_begin_) % packet_stride_bytes_;
  if (offset < packet_header_bytes || offset >= packet_header_bytes + packet_size_bytes_) {
    return nullptr;  // in a header or in a packet's padding
  }
  return reinterpret_cast<void*>(at - offset + packet_header_bytes);
}

inline std::size_t pool_t::deque_index_of_this_thread() const {
  return util::thread_index() % deques_count_max_;
}

inline std::size_t pool_t::deque_packets_count(std::size_t deque_index) const {
  LCI_ASSERT(deque_index < deques_count_max_, "deque index out of range");
  util::spinlock_guard_t guard(deques_[deque_index].lock);
  return deques_[deque_index].size();
}

}  // namespace lci::packet_pool
