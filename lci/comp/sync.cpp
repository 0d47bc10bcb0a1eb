// The synchronizer's two layouts; the protocol and its orders are described
// in sync.hpp and docs/design/comp.md.
#include "lci/comp/sync.hpp"

#include <stdexcept>
#include <string>

#include "lci/util/assert.hpp"
#include "lci/util/mutation.hpp"

namespace lci::detail {

namespace {

int checked_threshold(int threshold) {
  if (threshold < 1 || threshold > sync_impl_t::threshold_max) {
    throw std::invalid_argument("alloc_sync: threshold must be in [1, " +
                                std::to_string(sync_impl_t::threshold_max) +
                                "], got " + std::to_string(threshold));
  }
  return threshold;
}

}  // namespace

sync_impl_t::sync_impl_t(int threshold)
    : comp_impl_t(comp_kind_t::sync),
      flag_(flag_empty),
      threshold_(checked_threshold(threshold)),
      slots_(threshold_ == 1 ? &one_slot_ : new util::var<status_t>[threshold_]) {}

sync_impl_t::~sync_impl_t() {
  // relaxed: teardown; nothing runs concurrently (the owner's contract).
  LCI_ASSERT(flag_.load(util::mo_relaxed) != flag_writing,
             "synchronizer destroyed while a signal is recording");
  LCI_ASSERT(claimed_.value.load(util::mo_relaxed) ==
                 filled_.value.load(util::mo_relaxed),  // relaxed: teardown
             "synchronizer destroyed while a signal is recording");
  if (slots_ != &one_slot_) delete[] slots_;
}

void sync_impl_t::signal(status_t status) {
  if (threshold_ == 1) {
    signal_flag(status);
  } else {
    signal_slots(status);
  }
}

bool sync_impl_t::test(status_t* p_out) {
  return threshold_ == 1 ? test_flag(p_out) : test_slots(p_out);
}

void sync_impl_t::signal_flag(const status_t& status) {
  std::uint8_t expected = flag_empty;
  // acquire: pairs with the release reset [R1] in test_flag(), so the
  // previous round's read of the slot happens before our write. relaxed on
  // failure: we abort.
  const bool claimed = flag_.compare_exchange_strong(
      expected, flag_writing, util::mo_acquire, util::mo_relaxed);
  LCI_ASSERT(claimed,
             "synchronizer (threshold 1) signalled twice before test() "
             "returned true");
  slots_[0].store(status);
  // [F1] release: pairs with the acquire [T1] in test_flag(), publishing
  // the slot. (Broken variant, tests/comp: relaxed, publishing nothing.)
  flag_.store(flag_full, util::mutated("sync_flag_relaxed_publish")
                             ? util::mo_relaxed
                             : util::mo_release);
}

bool sync_impl_t::test_flag(status_t* p_out) {
  // [T1] acquire: pairs with [F1], so the slot write is visible.
  if (flag_.load(util::mo_acquire) != flag_full) return false;
  if (p_out != nullptr) p_out[0] = slots_[0].load();
  // [R1] release: pairs with the acquire claim in signal_flag(): our read
  // of the slot happens before the next round's write.
  flag_.store(flag_empty, util::mo_release);
  return true;
}

void sync_impl_t::signal_slots(const status_t& status) {
  // [C] acquire: pairs with the release reset [R] in test_slots(), so the
  // previous round's reads of the slots (and its reset of filled_) happen
  // before our write and our increment.
  const int slot = claimed_.value.fetch_add(1, util::mo_acquire);
  LCI_ASSERT(slot >= 0, "synchronizer claim counter corrupted");
  LCI_ASSERT(slot < threshold_,
             "synchronizer signalled more than threshold times before "
             "test() returned true");
  // (Broken variant, tests/comp: counted as filled before it is written.)
  const bool count_first = util::mutated("sync_filled_before_write");
  // [F] release: pairs with the acquire [T] in test_slots(); the
  // fetch_adds form a release sequence, so the load that reads threshold
  // synchronizes with every signaller. (Broken variant, tests/comp:
  // relaxed, publishing nothing.)
  const util::memory_order fill_order = util::mutated("sync_relaxed_filled")
                                            ? util::mo_relaxed
                                            : util::mo_release;
  if (count_first) filled_.value.fetch_add(1, fill_order);
  slots_[slot].store(status);
  if (!count_first) filled_.value.fetch_add(1, fill_order);
}

bool sync_impl_t::test_slots(status_t* p_out) {
  // [T] acquire: pairs with every signaller's [F] (see there).
  const int filled = filled_.value.load(util::mo_acquire);
  LCI_ASSERT(filled >= 0, "synchronizer fill counter corrupted");
  LCI_ASSERT(filled <= threshold_,
             "synchronizer filled more than threshold slots");
  if (filled < threshold_) return false;
  if (p_out != nullptr) {
    for (int i = 0; i < threshold_; ++i) p_out[i] = slots_[i].load();
  }
  // relaxed: no signaller touches filled_ before it claims a slot, and the
  // release exchange below orders this store before every later claim.
  filled_.value.store(0, util::mo_relaxed);
  // [R] release: pairs with the acquire claim [C]. The exchange also
  // checks the round: exactly threshold slots were claimed.
  const int claimed = claimed_.value.exchange(0, util::mo_release);
  LCI_ASSERT(claimed == threshold_,
             "synchronizer signalled more than threshold times before "
             "test() returned true");
  return true;
}

}  // namespace lci::detail
