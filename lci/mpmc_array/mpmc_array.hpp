// mpmc_array_t<T>: a growable array that is rarely written and often read
// (paper §4.1.1), e.g. the registered remote-completion table, read on every
// incoming active message and appended to only when a user registers one.
//
// Thread safety: every method may run concurrently with every other.
// Blocking:      get() and size() never block and never write shared memory.
//                put() and push_back() take a spinlock (writers are rare and
//                off the critical path); a resize inside them allocates.
// Ownership:     elements are values (T is trivially copyable and fits one
//                lock-free atomic word: pointers, integers).
// Allocation:    at construction, and in put()/push_back() when an index
//                beyond the current capacity is written (capacity doubles).
// Limits:        indices below capacity_max; put()/push_back() beyond it
//                return retry_nomem and store nothing.
// Memory:        an array replaced by a resize is retired, not freed: a
//                reader may still be reading it, and this structure does not
//                know when the last such reader leaves. Retired arrays are
//                freed by the destructor. Capacities double, so all retired
//                arrays together are smaller than the live one: at most 2x.
//
// Progress: get() is wait-free (two loads); writers are blocking.
// Linearization points: put() at its slot store [W]. get() at its slot load
// [R] if the array it read was still live then; otherwise at the resize [P]
// that retired that array: a retired array is never written again, so the
// value read is the array's content at [P], a moment inside the get().
// Design notes: docs/design/mpmc_array.md.
#pragma once

#include <cstddef>
#include <type_traits>

#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/error.hpp"
#include "lci/util/mutation.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::mpmc_array {

template <typename T>
class mpmc_array_t {
  static_assert(std::is_trivially_copyable_v<T>,
                "elements are copied slot by slot during a resize");

 public:
  static constexpr std::size_t capacity_max_default = std::size_t{1} << 24;

  explicit mpmc_array_t(std::size_t capacity_initial = 8, T default_value = T{},
                        std::size_t capacity_max = capacity_max_default)
      : capacity_max_(capacity_max), default_value_(default_value) {
    LCI_ASSERT(capacity_initial > 0, "initial capacity must be positive");
    LCI_ASSERT(capacity_initial <= capacity_max, "initial capacity over max");
    // relaxed: no other thread can see this object before construction ends.
    storage_.store(storage_t::create(capacity_initial, default_value_, nullptr),
                   util::mo_relaxed);
  }

  ~mpmc_array_t() {
    // relaxed: destruction excludes concurrent use (precondition).
    storage_t* storage = storage_.load(util::mo_relaxed);
    while (storage != nullptr) {
      storage_t* retired = storage->retired_next;
      storage_t::destroy(storage);
      storage = retired;
    }
  }

  mpmc_array_t(const mpmc_array_t&) = delete;
  mpmc_array_t& operator=(const mpmc_array_t&) = delete;

  // Returns the element at `index`, or the default value if it was never
  // written (including any index at or beyond the capacity).
  T get(std::size_t index) const {
    // acquire: pairs with the release publication in grow() [P], so the
    // copied slots of a new array are visible before we read them.
    const storage_t* storage = storage_.load(util::mo_acquire);
    if (index >= storage->capacity) return default_value_;
    // acquire: pairs with the release store in put_locked() [W], so whatever
    // the writer initialised before publishing a pointer is visible.
    return storage->slots[index].load(util::mo_acquire);  // [R]
  }

  // Writes `value` at `index`, growing the array to hold it.
  [[nodiscard]] error_t put(std::size_t index, T value) {
    util::spinlock_guard_t guard(lock_);
    return put_locked(index, value);
  }

  // Appends at index size(); returns the index through `index_out`.
  [[nodiscard]] error_t push_back(T value, std::size_t* index_out) {
    LCI_ASSERT(index_out != nullptr, "push_back needs an index out-pointer");
    util::spinlock_guard_t guard(lock_);
    // relaxed: size_ is written only under lock_, which we hold.
    const std::size_t index = size_.load(util::mo_relaxed);
    const error_t error = put_locked(index, value);
    if (error.is_done()) *index_out = index;
    return error;
  }

  // One past the highest index written so far (a hint while writers run).
  std::size_t size() const {
    // acquire: pairs with the release in put_locked(), so an index below the
    // returned size has been written.
    return size_.load(util::mo_acquire);
  }

  // Capacity of the current array (a hint while writers run).
  std::size_t capacity() const {
    return storage_.load(util::mo_acquire)->capacity;  // acquire: as get()
  }

  std::size_t capacity_max() const { return capacity_max_; }

 private:
  struct storage_t {
    std::size_t capacity;
    storage_t* retired_next;  // older arrays, kept until destruction
    util::atomic<T>* slots;

    static storage_t* create(std::size_t capacity, T fill,
                             storage_t* retired_next) {
      auto* storage = new storage_t{capacity, retired_next, nullptr};
      storage->slots = new util::atomic<T>[capacity];
      for (std::size_t i = 0; i < capacity; ++i) {
        // relaxed: the array is private until grow() publishes it [P].
        storage->slots[i].store(fill, util::mo_relaxed);
      }
      return storage;
    }
    static void destroy(storage_t* storage) {
      delete[] storage->slots;
      delete storage;
    }
  };

  error_t put_locked(std::size_t index, T value) {
    LCI_ASSERT(lock_.is_locked(), "writers hold the lock");
    if (index >= capacity_max_) return errorcode_t::retry_nomem;
    // relaxed: storage_ is replaced only under lock_, which we hold.
    storage_t* storage = storage_.load(util::mo_relaxed);
    if (index >= storage->capacity) storage = grow(storage, index);
    // Equivalent mutants: bound. Strict already: it asserts what the line above establishes,
    // which the tests of that line and of grow() check
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 6).
    LCI_ASSERT(index < storage->capacity, "grow() made room for index");
    // release: pairs with the acquire load [R] in get() [W].
    storage->slots[index].store(
        value, util::mutated("mpmc_array_relaxed_slot_store") ? util::mo_relaxed
                                                              : util::mo_release);
    // relaxed: only writers (under lock_) touch size_ before this store.
    if (index >= size_.load(util::mo_relaxed)) {
      size_.store(index + 1, util::mo_release);  // release: pairs with size()
    }
    return errorcode_t::done;
  }

  // Replaces `old_storage` with an array of at least index + 1 slots.
  storage_t* grow(storage_t* old_storage, std::size_t index) {
    std::size_t capacity = old_storage->capacity;
    while (capacity <= index) capacity *= 2;
    // Equivalent mutants: bound. At equality the clamp assigns the value capacity already has
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 6).
    if (capacity > capacity_max_) capacity = capacity_max_;
    // Equivalent mutants: bound. Strict already: the loop above and the caller's check
    // index < capacity_max_ establish it (tools/mutate_records/2026-11-27-runs-05-28.md, run 6).
    LCI_ASSERT(capacity > index, "capacity_max was checked by the caller");
    storage_t* storage = storage_t::create(capacity, default_value_, old_storage);
    // The broken variant forgets the last slot of the old array.
    const std::size_t copy_count =
        old_storage->capacity - (util::mutated("mpmc_array_resize_drops_last") ? 1 : 0);
    for (std::size_t i = 0; i < copy_count; ++i) {
      // relaxed: slots change only under lock_, which we hold.
      storage->slots[i].store(old_storage->slots[i].load(util::mo_relaxed),
                              util::mo_relaxed);
    }
    // release: publishes the copied slots to get()'s acquire loads [P].
    storage_.store(storage, util::mutated("mpmc_array_relaxed_publish")
                                ? util::mo_relaxed
                                : util::mo_release);
    return storage;
  }

  const std::size_t capacity_max_;
  const T default_value_;
  util::atomic<storage_t*> storage_;
  util::atomic<std::size_t> size_;
  util::spinlock_t lock_;
};

}  // namespace lci::mpmc_array
