// The hazard-pointer protocol [H] (lci/cq/detail/hazard_slots.hpp) as a
// store-buffering litmus test, run on the hardware many times.
//
// A protector re-points its slot at a source (protect(): publish,
// then re-load the source); a reclaimer unlinks the old value from the
// source (an RMW) and then scans the slots. [H] forbids the outcome in which
// protect() returns the old value (its re-load came before the unlink) while
// the scan misses it (it came before the publication): the reclaimer would
// reuse a segment the protector goes on to dereference. With every access
// seq_cst the outcome is a cycle in the total order. With the publication
// store weaker than seq_cst, x86's store buffer alone allows it: the store
// waits in the buffer while the re-load reads the old source. Relacy and
// TSan cannot show that (neither models a store buffer); this test does
// (tools/mutate_records/2026-11-27-runs-05-28.md, run 5: the rows of hazard_slots.hpp's
// publication).
//
// Each round starts both threads together on a spin barrier, so their
// accesses overlap within nanoseconds, the window in which a store buffer
// shows. It needs two cores to mean anything; on one it passes.
#include "lci/cq/detail/hazard_slots.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <thread>

#include "lci/util/atomic.hpp"

namespace {

using lci::cq::detail::hazard_slots_max;
using lci::cq::detail::hazard_slots_t;

struct node_t {
  int unused = 0;
};

// A barrier for two threads, reused: a thread arrives by storing the phase
// it reached and spins until the other reached it too. release/acquire: what
// a thread wrote before arriving is visible to the other once it leaves.
class two_thread_barrier_t {
 public:
  void arrive_and_wait(int self, std::uint64_t phase) {
    reached_[self].value.store(phase, std::memory_order_release);
    // Yields now and then: on a loaded machine the other thread may need
    // this core to arrive.
    for (std::uint32_t spins = 1; reached_[1 - self].value.load(std::memory_order_acquire) < phase;
         ++spins) {
      if (spins % 1024 == 0) std::this_thread::yield();
    }
  }

 private:
  struct alignas(64) counter_t {
    std::atomic<std::uint64_t> value{0};
  };
  counter_t reached_[2];
};

// Delays a thread by `count` PAUSEs.
void pause(std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) lci::util::spin_pause();
}

struct outcome_t {
  std::uint64_t rounds = 0;
  std::uint64_t unlinked_protected = 0;  // rounds in which a miss was possible
  std::uint64_t misses = 0;              // ... and the scan missed the hazard
};

// Rounds of one protector (a thread of its own) against one reclaimer (the
// caller), until `rounds_max` or `seconds_max` (on a loaded machine the
// barrier is slow; fewer rounds make a weaker test, never a false failure).
//
// The window is a few nanoseconds wide and where it falls depends on the
// machine, so the start of each round is skewed: the reclaimer delays by
// `skew` PAUSEs when it is positive, the protector by -skew when negative.
// The skew walks towards the window: after a round in which protect()
// returned the fresh value (the protector was late) the reclaimer's delay
// grows; after one in which it returned `first` before the source changed
// (early) the protector's does.
//
// The source holds `first` at the start of a round. The reclaimer first
// stores `unlinked` into it when `unlinked != first` (so the protector's
// re-load may see a change and re-publish, the store of validate()), waits
// a few PAUSEs (a different number each round), then unlinks `unlinked`
// (exchange to `fresh`) and scans for it. A miss: protect() returned
// `unlinked` and the scan did not see it.
// With `owned`, the protector is the owner of slot 0 and starts each round
// with acquire() instead of protect(): its slot still names the parked
// node, so acquire()'s own publication is the store that races.
outcome_t run_rounds(bool republish, bool owned = false) {
  constexpr std::uint64_t rounds_max = 1'000'000;
  constexpr auto seconds_max = std::chrono::seconds(10);
  constexpr std::int64_t skew_max = 4096;
  node_t first_node, unlinked_node, fresh_node, parked_node;
  node_t* const first = &first_node;
  node_t* const unlinked = republish ? &unlinked_node : first;
  hazard_slots_t<node_t> hazards;
  lci::util::atomic<node_t*> source{first};
  // Where the protector points its slot between rounds: never `unlinked`.
  lci::util::atomic<node_t*> parking{&parked_node};
  two_thread_barrier_t barrier;
  // Written by one thread, read by the other after the next barrier.
  node_t* protected_value = nullptr;
  std::uint64_t rounds = rounds_max;
  std::int64_t skew = 0;

  std::thread protector([&] {
    constexpr std::size_t owner = 0;
    const std::size_t slot = hazards.acquire(parking, owner).first;
    for (std::uint64_t round = 1; round <= rounds; ++round) {
      hazards.protect(slot, parking);
      barrier.arrive_and_wait(0, 2 * round - 1);
      pause(-skew);
      protected_value = owned ? hazards.acquire(source, owner).second
                              : hazards.protect(slot, source);
      barrier.arrive_and_wait(0, 2 * round);
    }
    hazards.release(slot);
  });

  outcome_t outcome;
  const auto deadline = std::chrono::steady_clock::now() + seconds_max;
  for (std::uint64_t round = 1; round <= rounds; ++round) {
    // relaxed: the barrier orders the reset before the protector's round.
    source.store(first, lci::util::mo_relaxed);
    barrier.arrive_and_wait(1, 2 * round - 1);
    pause(skew);
    if (republish) {
      source.store(unlinked, lci::util::mo_seq_cst);
      pause(static_cast<std::int64_t>(round % 8));  // a change for the re-load to see
    }
    // seq_cst: the unlink, as advance_head's CAS on head_segment_.
    source.exchange(&fresh_node, lci::util::mo_seq_cst);
    const bool kept = hazards.is_protected(unlinked, hazard_slots_max);
    // Ends the protector's loop with this round: it reads `rounds` after
    // the barrier below.
    if (round % 64 == 0 && std::chrono::steady_clock::now() > deadline) rounds = round;
    barrier.arrive_and_wait(1, 2 * round);
    ++outcome.rounds;
    if (protected_value == unlinked) {
      ++outcome.unlinked_protected;
      if (!kept) ++outcome.misses;
    }
    if (protected_value == &fresh_node) {  // late: delay the reclaimer more
      skew = std::min<std::int64_t>(skew + 1, skew_max);
    } else if (protected_value == first) {  // early: delay the protector more
      skew = std::max<std::int64_t>(skew - 1, -skew_max);
    }
  }
  protector.join();
  return outcome;
}

void expect_no_miss(const outcome_t& outcome) {
  // The test is only as strong as the number of rounds in which protect()
  // returned the unlinked value: print it.
  std::printf("%llu rounds, %llu protected the unlinked value, the scan missed %llu\n",
              static_cast<unsigned long long>(outcome.rounds),
              static_cast<unsigned long long>(outcome.unlinked_protected),
              static_cast<unsigned long long>(outcome.misses));
  EXPECT_EQ(outcome.misses, 0u) << "a reclaimer's scan missed a hazard published before a "
                                   "re-load that read the value it unlinked";
}

// protect()'s first publication (hazard_slots.hpp, "[H] publication").
TEST(HazardSlotsStoreBuffering, APublicationBeforeTheUnlinkIsSeenByTheScan) {
  expect_no_miss(run_rounds(false));
}

// acquire()'s publication in an owned slot that named another node.
TEST(HazardSlotsStoreBuffering, AnOwnedSlotsPublicationBeforeTheUnlinkIsSeenByTheScan) {
  expect_no_miss(run_rounds(false, true));
}

// validate()'s re-publication after the source changed under protect().
TEST(HazardSlotsStoreBuffering, ARepublicationBeforeTheUnlinkIsSeenByTheScan) {
  expect_no_miss(run_rounds(true));
}

}  // namespace
