// queue_t: a bounded multi-producer single-consumer queue of small messages
// in a region of shared memory that the processes of one node map at
// different addresses (docs/backends/shm.md, "The queue"). One queue per
// receiving device: every local sender pushes, the device's progress pops.
//
// Thread safety: push, reserve and publish may run concurrently from any
//                threads of any processes attached to the region, each with
//                its own producer id (one thread at a time per id). pop runs
//                on one thread of one process (the consumer) at a time.
//                init must finish before any attach (the segment's
//                handshake orders them; the magic word's release/acquire
//                makes a torn header read as "not initialised").
// Blocking:      never. No system call and no lock on any path; every loop
//                is bounded (push_rounds_max, slots_count).
// Ownership:     the region is the caller's and outlives every queue_t
//                attached to it; queue_t keeps only its address and the
//                geometry it validated. Messages are copied in by push and
//                out by pop: the consumer never keeps a reference into a
//                slot that another process can rewrite.
// Allocation:    none (the region is given).
// Limits:        slots_count messages (a power of two, 2..slots_count_max)
//                of at most payload_bytes_max() bytes each; producer ids
//                below producers_max (<= producers_limit). A full queue
//                answers retry and stores nothing.
// Progress:      push is lock-free: a round repeats when the tail moved or
//                a slot changed state, i.e. another producer claimed a slot,
//                or when this core still saw an older state than the tail
//                (a view that newer stores replace in finite time; the
//                round pauses first). A producer that finds the tail slot claimed helps the
//                tail past it, so a producer that stops (or dies) between
//                its claim and moving the tail blocks nobody. pop is
//                wait-free.
// Trust:         every byte of the region may be written by another,
//                possibly faulty, process. pop validates the state word and
//                the fields of the slot it reads and answers corrupt rather
//                than read or write outside the region; the queue's geometry
//                comes from the header once, at attach, never again.
//
// Algorithm. Positions count messages from 0; tail_ is the next position to
// claim. The slot of position p is p % slots_count; its state word packs a
// phase, a producer id and a position (state word layout below):
//   free(p)         empty, waiting for the producer of position p;
//   claimed(p, x)   producer x owns it and is writing message p;
//   published(p, x) message p is complete, the consumer may read it.
// Slot i starts as free(i). A producer reads tail_ = p [P1] and the slot's
// state [P2]: from free(p) it claims the slot by a CAS to claimed(p, x) [P3],
// then moves tail_ from p to p + 1 [P4] (or finds a helper did), writes the
// message and stores published(p, x) [P5]. Any other state of position p,
// or any state of a later lap (p was claimed, and maybe consumed or
// reclaimed since), under tail_ = p means the claimer has not moved the tail
// yet: the producer moves it [P4] and retries. A state of position
// p - slots_count that is not free means the consumer has not yet taken the
// message of the previous lap: the queue is full. The consumer owns head_ =
// h; it reads the state of slot h [C1]; from published(h, x) it copies the
// message out and frees the slot for the next lap, free(h + slots_count)
// [C3]. From claimed(h, x) with x dead it frees the slot by a CAS [C4] and
// goes on to h + 1: the dead producer's message is lost, nothing stalls.
//
// Linearization: a push at its claim [P3] (the claim fixes the message's
// position, hence its order); a full answer at [P2]. A pop at [C1]; it
// answers empty when slot h is free or claimed by a live producer (a claimed
// message behind which later ones may already be published: FIFO order holds
// them back until it is published, so the consumer polls again).
//
// Memory orders: a slot's state word carries every synchronisation; tail_ is
// only a hint about where to claim (a stale tail costs a round: the slot's
// state says where the tail really is), head_ is the consumer's alone.
// [P5] release pairs with [C1] acquire (the message is complete when the
// consumer sees it published); [C3] release pairs with [P3] acquire (the
// consumer's reads of the old message happen before the next lap's writes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>

#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/mutation.hpp"

namespace lci::backend::shm {

#if !defined(LCI_MODEL_CHECK)
// Different processes map one region: the atomics must be the hardware's,
// never libatomic's lock table (which is per process).
static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "shared-memory queues need lock-free 64-bit atomics");
#endif

enum class queue_status_t : std::uint8_t {
  ok,
  retry,       // push: full (or push_rounds_max rounds lost to contention)
  empty,       // pop: nothing published at the head
  corrupt,     // pop: the head slot breaks the protocol; attach: bad header
  bad_params,  // init: parameters out of range or region too small
};

// What the creator chooses; attach reads it back from the header.
struct queue_params_t {
  std::uint32_t slot_bytes = 0;     // multiple of the cache line, > slot header
  std::uint32_t slots_count = 0;    // power of two, 2..slots_count_max
  std::uint32_t producers_max = 0;  // 1..producers_limit
};

// The fields of a message besides its payload. `source` is the producer id
// that pushed it (checked against the slot's state word by pop).
struct message_t {
  std::uint32_t source = 0;
  std::uint32_t kind = 0;  // opaque to the queue
  std::uint64_t imm = 0;   // opaque to the queue
  std::uint32_t length_bytes = 0;
};

// The state word: bits 0-1 the phase, bits 2-15 the producer id (0 when
// free), bits 16-63 the position modulo 2^48. Positions are compared modulo
// 2^48: a producer would have to stall for 2^48 pushes between reading the
// tail and its claim to mistake one lap for another.
namespace state {
enum phase_t : std::uint64_t { free = 0, claimed = 1, published = 2 };
inline constexpr unsigned producer_shift = 2;
inline constexpr unsigned position_shift = 16;
inline constexpr std::uint64_t phase_mask = 0x3;
inline constexpr std::uint64_t producer_mask = 0x3fff;
inline constexpr std::uint64_t position_mask = (std::uint64_t{1} << 48) - 1;

constexpr std::uint64_t make(phase_t phase, std::uint32_t producer,
                             std::uint64_t position) {
  return (phase & phase_mask) |
         ((std::uint64_t{producer} & producer_mask) << producer_shift) |
         ((position & position_mask) << position_shift);
}
constexpr std::uint64_t phase_of(std::uint64_t word) { return word & phase_mask; }
constexpr std::uint32_t producer_of(std::uint64_t word) {
  return static_cast<std::uint32_t>((word >> producer_shift) & producer_mask);
}
constexpr std::uint64_t position_of(std::uint64_t word) {
  return word >> position_shift;
}
constexpr bool same_position(std::uint64_t word, std::uint64_t position) {
  return position_of(word) == (position & position_mask);
}
// Whether the word's position is `position` or a later one (by less than
// 2^47, i.e. not a stale word from a lap long gone).
constexpr bool at_or_after(std::uint64_t word, std::uint64_t position) {
  return ((position_of(word) - position) & position_mask) < (position_mask >> 1);
}
}  // namespace state

// A claimed slot, between reserve() and publish().
struct reservation_t {
  std::uint64_t position = 0;
  std::uint32_t producer = 0;
  void* payload = nullptr;  // payload_bytes_max() bytes the producer may fill
};

class queue_t {
 public:
  static constexpr std::uint32_t magic_version = 1;
  static constexpr std::uint64_t magic_word = 0x4c43495f53484d51ull;  // LCI_SHMQ
  static constexpr std::uint32_t slots_count_max = std::uint32_t{1} << 24;
  static constexpr std::uint32_t producers_limit =
      static_cast<std::uint32_t>(state::producer_mask);
  // Rounds one push may lose to other producers' claims before it answers
  // retry: far above what a busy node's handful of local senders cause, and
  // a bound against a peer that scribbles on the tail.
  static constexpr std::uint32_t push_rounds_max = 1024;

  // The slot's fields, then its payload. Written by the producer between
  // its claim and its publication, read by the consumer after it.
  struct slot_header_t {
    util::atomic<std::uint64_t> state;
    util::var<std::uint32_t> length_bytes;
    util::var<std::uint32_t> source;
    util::var<std::uint64_t> imm;
    util::var<std::uint32_t> kind;
  };
  // Read once, at attach; written once, at init, before the magic word.
  struct alignas(util::cache_line_bytes) region_header_t {
    util::atomic<std::uint64_t> magic;
    std::uint32_t version;
    std::uint32_t slot_bytes;
    std::uint32_t slots_count;
    std::uint32_t producers_max;
  };
  // tail_ is written by producers, head_ by the consumer: one line each.
  struct alignas(util::cache_line_bytes) counter_line_t {
    util::atomic<std::uint64_t> value;
  };
  static constexpr std::size_t payload_offset_bytes =
      (sizeof(slot_header_t) + 7) / 8 * 8;
  static constexpr std::size_t slots_offset_bytes =
      sizeof(region_header_t) + 2 * sizeof(counter_line_t);

  // Bytes a region needs for these parameters (0 if they are out of range).
  static std::size_t region_bytes(const queue_params_t& params);

  // The creator lays the queue out in `region` (cache-line aligned, `bytes`
  // long, not yet shared). bad_params leaves the region untouched.
  [[nodiscard]] queue_status_t init(void* region, std::size_t bytes,
                                    const queue_params_t& params);
  // Any other process, after init: checks the header against `bytes`;
  // corrupt if it does not describe a queue that fits.
  [[nodiscard]] queue_status_t attach(void* region, std::size_t bytes);
  // The creator, once no process uses the queue any more: ends the lifetime
  // of the atomics init constructed (free in production; the model checker
  // tracks them). The region stays the caller's.
  void destroy();

  // Producer side. push copies `length_bytes` <= payload_bytes_max() bytes;
  // ok or retry (full: nothing stored). `producer` < producers_max.
  [[nodiscard]] queue_status_t push(std::uint32_t producer, std::uint32_t kind,
                                    std::uint64_t imm, const void* payload,
                                    std::uint32_t length_bytes);
  // The two halves of push, for a producer that writes its payload in place:
  // reserve claims a slot (ok or retry); publish completes it. A process that
  // dies between them leaves the slot claimed until pop reclaims it.
  [[nodiscard]] queue_status_t reserve(std::uint32_t producer, reservation_t& out);
  void publish(const reservation_t& reservation, std::uint32_t kind,
               std::uint64_t imm, std::uint32_t length_bytes);

  // Consumer side. Copies the head message into `header` and `payload` (at
  // least payload_bytes_max() bytes): ok, empty, or corrupt (the head slot is
  // left as it is; the queue cannot go on past it). is_dead(x) says whether
  // producer x has died: a slot it claimed and never published is freed and
  // skipped. Unchecked precondition: is_dead(x) is true only once x can no
  // longer write (a process that is gone).
  template <typename IsDead>
  [[nodiscard]] queue_status_t pop(message_t& header, void* payload,
                                   IsDead&& is_dead);
  [[nodiscard]] queue_status_t pop(message_t& header, void* payload) {
    return pop(header, payload, [](std::uint32_t) { return false; });
  }

  std::uint32_t payload_bytes_max() const {
    return slot_bytes_ - static_cast<std::uint32_t>(payload_offset_bytes);
  }
  std::uint32_t slots_count() const { return slots_count_; }
  std::uint32_t producers_max() const { return producers_max_; }
  // Slots of dead producers that pop has freed (consumer only).
  std::uint64_t reclaimed_count() const { return reclaimed_count_; }

 private:
  static bool params_valid(const queue_params_t& params);
  void bind(unsigned char* region, const queue_params_t& params);
  slot_header_t& slot(std::uint64_t position) const {
    return *reinterpret_cast<slot_header_t*>(
        slots_ + (position & (slots_count_ - 1)) * std::size_t{slot_bytes_});
  }
  unsigned char* payload_of(slot_header_t& slot_header) const {
    return reinterpret_cast<unsigned char*>(&slot_header) + payload_offset_bytes;
  }
  // Why pop stopped at the head slot, or that it delivered.
  template <typename IsDead>
  queue_status_t pop_one(std::uint64_t head, message_t& header, void* payload,
                         IsDead& is_dead, bool& reclaimed);
  queue_status_t deliver(std::uint64_t head, slot_header_t& slot_header,
                         std::uint64_t word, message_t& header, void* payload);
  void advance_head(std::uint64_t head, slot_header_t& slot_header);

  region_header_t* header_ = nullptr;
  counter_line_t* tail_ = nullptr;
  counter_line_t* head_ = nullptr;
  unsigned char* slots_ = nullptr;
  std::uint32_t slot_bytes_ = 0;
  std::uint32_t slots_count_ = 0;
  std::uint32_t producers_max_ = 0;
  std::uint64_t reclaimed_count_ = 0;
};

#if !defined(LCI_MODEL_CHECK)
// The layout other processes rely on (and the tests write through).
static_assert(sizeof(queue_t::slot_header_t) == 32, "slot header layout");
static_assert(sizeof(queue_t::region_header_t) == util::cache_line_bytes &&
                  sizeof(queue_t::counter_line_t) == util::cache_line_bytes,
              "each counter needs its own cache line");
static_assert(queue_t::payload_offset_bytes == 32 &&
                  queue_t::slots_offset_bytes == 3 * util::cache_line_bytes,
              "region layout");
#endif

inline bool queue_t::params_valid(const queue_params_t& params) {
  const std::uint32_t slots = params.slots_count;
  return params.slot_bytes % util::cache_line_bytes == 0 &&
         params.slot_bytes > payload_offset_bytes && slots >= 2 &&
         slots <= slots_count_max && (slots & (slots - 1)) == 0 &&
         params.producers_max >= 1 && params.producers_max <= producers_limit;
}

inline std::size_t queue_t::region_bytes(const queue_params_t& params) {
  if (!params_valid(params)) return 0;
  return slots_offset_bytes + std::size_t{params.slots_count} * params.slot_bytes;
}

inline void queue_t::bind(unsigned char* region, const queue_params_t& params) {
  header_ = reinterpret_cast<region_header_t*>(region);
  tail_ = reinterpret_cast<counter_line_t*>(region + sizeof(region_header_t));
  head_ = tail_ + 1;
  slots_ = region + slots_offset_bytes;
  slot_bytes_ = params.slot_bytes;
  slots_count_ = params.slots_count;
  producers_max_ = params.producers_max;
}

inline queue_status_t queue_t::init(void* region, std::size_t bytes,
                                    const queue_params_t& params) {
  const std::size_t needed_bytes = region_bytes(params);
  if (needed_bytes == 0 || bytes < needed_bytes) return queue_status_t::bad_params;
  LCI_ASSERT(region != nullptr, "shm queue region is null");
  LCI_ASSERT(reinterpret_cast<std::uintptr_t>(region) % util::cache_line_bytes == 0,
             "shm queue region must be cache-line aligned");
  auto* bytes_at = static_cast<unsigned char*>(region);
  // The region is not shared yet: construct the atomics in place, relaxed.
  auto* header = new (bytes_at) region_header_t();
  new (bytes_at + sizeof(region_header_t)) counter_line_t();
  new (bytes_at + sizeof(region_header_t) + sizeof(counter_line_t)) counter_line_t();
  bind(bytes_at, params);
  tail_->value.store(0, util::mo_relaxed);  // relaxed: not shared yet
  head_->value.store(0, util::mo_relaxed);  // relaxed: not shared yet
  for (std::uint32_t i = 0; i < slots_count_; ++i) {
    auto* slot_header = new (slots_ + std::size_t{i} * slot_bytes_) slot_header_t();
    // relaxed: not shared yet; the magic's release publishes it.
    slot_header->state.store(state::make(state::free, 0, i), util::mo_relaxed);
  }
  header->version = magic_version;
  header->slot_bytes = params.slot_bytes;
  header->slots_count = params.slots_count;
  header->producers_max = params.producers_max;
  // release: pairs with the acquire in attach(); the layout above is
  // complete before anyone sees the magic.
  // Equivalent mutants: mo_weaken. attach runs after init by contract (the
  // segment's handshake orders them); these orders only make an attach that
  // breaks the contract read "not initialised" rather than a torn header.
  header->magic.store(magic_word, util::mo_release);
  return queue_status_t::ok;
}

inline queue_status_t queue_t::attach(void* region, std::size_t bytes) {
  if (region == nullptr || bytes < slots_offset_bytes) return queue_status_t::corrupt;
  auto* bytes_at = static_cast<unsigned char*>(region);
  auto* header = reinterpret_cast<region_header_t*>(bytes_at);
  // acquire: pairs with the release in init().
  // Equivalent mutants: mo_weaken. As in init(): the handshake orders them.
  if (header->magic.load(util::mo_acquire) != magic_word) return queue_status_t::corrupt;
  if (header->version != magic_version) return queue_status_t::corrupt;
  // Read each field once: the header lives in memory others can write.
  queue_params_t params;
  params.slot_bytes = header->slot_bytes;
  params.slots_count = header->slots_count;
  params.producers_max = header->producers_max;
  const std::size_t needed_bytes = region_bytes(params);
  if (needed_bytes == 0 || needed_bytes > bytes) return queue_status_t::corrupt;
  bind(bytes_at, params);
  return queue_status_t::ok;
}

inline void queue_t::destroy() {
  LCI_ASSERT(slots_ != nullptr, "shm queue destroyed before init");
  for (std::uint32_t i = 0; i < slots_count_; ++i) slot(i).~slot_header_t();
  head_->~counter_line_t();
  tail_->~counter_line_t();
  header_->~region_header_t();
  *this = queue_t();
}

inline queue_status_t queue_t::reserve(std::uint32_t producer, reservation_t& out) {
  LCI_ASSERT(slots_ != nullptr, "shm queue used before init or attach");
  LCI_ASSERT(producer < producers_max_, "shm queue producer id out of range");
  // relaxed [P1]: tail_ is a hint; the slot's state below decides.
  std::uint64_t tail = tail_->value.load(util::mo_relaxed);
  // Equivalent mutants: bound. A round more only moves the point where a
  // push that keeps losing to other producers gives up with retry.
  for (std::uint32_t round = 0; round < push_rounds_max; ++round) {
    slot_header_t& slot_header = slot(tail);
    // relaxed [P2]: it only decides where to claim, help or answer full; the
    // claim [P3] is what orders our writes.
    std::uint64_t word = slot_header.state.load(util::mo_relaxed);
    if (word == state::make(state::free, 0, tail)) {
      // acquire [P3]: pairs with the consumer's release [C3], so its reads of
      // the previous lap's message happen before our writes. relaxed on
      // failure: the state is read again.
      // Equivalent mutants: cas_weak. A spurious failure reads the state
      // again, still free(tail), and claims again.
      if (slot_header.state.compare_exchange_strong(
              word, state::make(state::claimed, producer, tail), util::mo_acquire,
              util::mo_relaxed)) {
        std::uint64_t expected = tail;
        // relaxed [P4]: the tail is a hint; failure means a helper moved it.
        // Equivalent mutants: cas_weak. A spurious failure leaves the tail
        // to the next producer's help, as a claimer's death does.
        (void)tail_->value.compare_exchange_strong(expected, tail + 1,
                                                   util::mo_relaxed, util::mo_relaxed);
        out.position = tail;
        out.producer = producer;
        out.payload = payload_of(slot_header);
        return queue_status_t::ok;
      }
      continue;  // another producer claimed it: this slot's state moved on
    }
    if (state::at_or_after(word, tail) && !util::mutated("shm_queue_no_help")) {
      // Claimed at the tail (or at a later lap: claimed, used and freed
      // since), so the tail belongs past it. Its claimer has not moved the
      // tail yet, and may never (a dead process, whose slot the consumer
      // may have freed already): move it for them.
      // relaxed [P4]: as above; on failure `tail` is the newer tail.
      // Equivalent mutants: cas_weak. A spurious failure leaves `tail` as it
      // was, and the round repeats.
      if (tail_->value.compare_exchange_strong(tail, tail + 1, util::mo_relaxed,
                                               util::mo_relaxed)) {
        ++tail;
      }
      continue;
    }
    if (state::same_position(word, tail - slots_count_) &&
        state::phase_of(word) != state::free) {
      return queue_status_t::retry;  // full at [P2]: last lap's message unread
    }
    // A stale state (older than the tail says): the newer one is on its
    // way to this core. Pause (under the model checker, a yield, after which
    // it lets the load see newer stores), then look again.
    util::spin_pause();
    tail = tail_->value.load(util::mo_relaxed);  // relaxed: as [P1]
  }
  return queue_status_t::retry;
}

inline void queue_t::publish(const reservation_t& reservation, std::uint32_t kind,
                             std::uint64_t imm, std::uint32_t length_bytes) {
  LCI_ASSERT(length_bytes <= payload_bytes_max(), "shm queue message too long");
  LCI_ASSERT(reservation.producer < producers_max_, "shm queue producer id out of range");
  slot_header_t& slot_header = slot(reservation.position);
  LCI_ASSERT(reservation.payload == payload_of(slot_header),
             "shm queue reservation of another slot");
  slot_header.length_bytes.store(length_bytes);
  slot_header.source.store(reservation.producer);
  slot_header.imm.store(imm);
  slot_header.kind.store(kind);
  // release [P5]: pairs with the consumer's acquire [C1]. (Broken variant,
  // tests/backends/shm: relaxed, so the fields are not published.)
  slot_header.state.store(
      state::make(state::published, reservation.producer, reservation.position),
      util::mutated("shm_queue_relaxed_publish") ? util::mo_relaxed
                                                 : util::mo_release);
}

inline queue_status_t queue_t::push(std::uint32_t producer, std::uint32_t kind,
                                    std::uint64_t imm, const void* payload,
                                    std::uint32_t length_bytes) {
  LCI_ASSERT(length_bytes <= payload_bytes_max(), "shm queue message too long");
  reservation_t reservation;
  const queue_status_t status = reserve(producer, reservation);
  if (status != queue_status_t::ok) return status;
  if (length_bytes > 0) std::memcpy(reservation.payload, payload, length_bytes);
  publish(reservation, kind, imm, length_bytes);
  return queue_status_t::ok;
}

template <typename IsDead>
queue_status_t queue_t::pop(message_t& header, void* payload, IsDead&& is_dead) {
  LCI_ASSERT(slots_ != nullptr, "shm queue used before init or attach");
  // relaxed: only the consumer writes head_.
  const std::uint64_t head_first = head_->value.load(util::mo_relaxed);
  // Each round either delivers, stops, or frees one dead producer's slot
  // and moves on: at most a lap of them.
  // Equivalent mutants: bound. After a lap of reclaims, one round more
  // reads the first slot again, which the first reclaim left free for this
  // position (empty) or a producer has claimed since (handled as any head).
  for (std::uint64_t head = head_first; head - head_first < slots_count_; ++head) {
    bool reclaimed = false;
    const queue_status_t status = pop_one(head, header, payload, is_dead, reclaimed);
    if (!reclaimed) return status;
  }
  return queue_status_t::empty;
}

template <typename IsDead>
queue_status_t queue_t::pop_one(std::uint64_t head, message_t& header, void* payload,
                                IsDead& is_dead, bool& reclaimed) {
  slot_header_t& slot_header = slot(head);
  // acquire [C1]: pairs with the producer's release [P5].
  std::uint64_t word = slot_header.state.load(util::mo_acquire);
  if (!state::same_position(word, head)) return queue_status_t::corrupt;
  const std::uint64_t phase = state::phase_of(word);
  const std::uint32_t producer = state::producer_of(word);
  if (phase == state::free) {
    return producer == 0 ? queue_status_t::empty : queue_status_t::corrupt;
  }
  if (producer >= producers_max_) return queue_status_t::corrupt;
  if (phase == state::published) return deliver(head, slot_header, word, header, payload);
  if (phase != state::claimed) return queue_status_t::corrupt;
  if (util::mutated("shm_queue_ignores_dead") || !is_dead(producer)) {
    return queue_status_t::empty;  // its producer is still writing it
  }
  // relaxed [C4]: the consumer has read and written nothing of this slot
  // since its release [C3] of the previous lap, and this CAS continues that
  // store's release sequence (as the dead claim did), so the next
  // claimer's acquire [P3] still synchronises with [C3]. The dead
  // producer's partial writes need no order: it writes no more (the
  // precondition of is_dead). relaxed on failure: the producer published
  // after all, so the next pop delivers it.
  if (!slot_header.state.compare_exchange_strong(
          word, state::make(state::free, 0, head + slots_count_), util::mo_relaxed,
          util::mo_relaxed)) {
    return queue_status_t::empty;
  }
  // relaxed: only the consumer writes head_.
  head_->value.store(head + 1, util::mo_relaxed);
  ++reclaimed_count_;
  reclaimed = true;
  return queue_status_t::empty;
}

inline queue_status_t queue_t::deliver(std::uint64_t head, slot_header_t& slot_header,
                                       std::uint64_t word, message_t& header,
                                       void* payload) {
  // Each field is read once: the producer could rewrite it meanwhile.
  const std::uint32_t length_bytes = slot_header.length_bytes.load();
  const std::uint32_t source = slot_header.source.load();
  if (length_bytes > payload_bytes_max()) return queue_status_t::corrupt;
  if (source != state::producer_of(word)) return queue_status_t::corrupt;
  header.source = source;
  header.kind = slot_header.kind.load();
  header.imm = slot_header.imm.load();
  header.length_bytes = length_bytes;
  if (length_bytes > 0) std::memcpy(payload, payload_of(slot_header), length_bytes);
  advance_head(head, slot_header);
  return queue_status_t::ok;
}

inline void queue_t::advance_head(std::uint64_t head, slot_header_t& slot_header) {
  // release [C3]: pairs with the acquire [P3] of the next lap's
  // producer. (Broken variant, tests/backends/shm: relaxed, so its writes
  // may race with our reads above.)
  slot_header.state.store(state::make(state::free, 0, head + slots_count_),
                          util::mutated("shm_queue_relaxed_free") ? util::mo_relaxed
                                                                  : util::mo_release);
  // relaxed: only the consumer writes head_.
  head_->value.store(head + 1, util::mo_relaxed);
}

}  // namespace lci::backend::shm
