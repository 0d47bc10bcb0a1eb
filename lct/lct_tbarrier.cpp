// Thread barriers (lct.h, "Thread barrier").
//
// One counter of arrivals: arrival k (0-based, the ticket) belongs to round
// k / nthreads, and that round is complete once nthreads * (round + 1)
// threads have arrived. Arrive is one fetch-and-add (wait-free), test one
// load; the counter never resets, so a slow thread testing an old round
// still sees it complete (64 bits do not wrap in practice).
#include <atomic>
#include <cstdint>
#include <thread>

#include "lct/lct.h"
#include "lct/lct_internal.hpp"

namespace {

struct tbarrier_t {
  explicit tbarrier_t(int n) : nthreads(n) {}
  const std::int64_t nthreads;
  std::atomic<std::int64_t> arrived{0};
};

// Spins before a waiter starts yielding: with more threads than cores the
// last arrival may need the waiter's core.
constexpr int spins_before_yield_max = 64;

}  // namespace

LCT_tbarrier_t LCT_tbarrier_alloc(int nthreads) {
  if (nthreads < 1) lct::fatal("LCT_tbarrier_alloc", "nthreads = %d < 1", nthreads);
  return new tbarrier_t(nthreads);
}

void LCT_tbarrier_free(LCT_tbarrier_t* tbarrier_p) {
  delete static_cast<tbarrier_t*>(*tbarrier_p);
  *tbarrier_p = nullptr;
}

int64_t LCT_tbarrier_arrive(LCT_tbarrier_t tbarrier) {
  auto* barrier = static_cast<tbarrier_t*>(tbarrier);
  // acq_rel: release publishes this thread's writes to whoever sees the
  // round complete (the acquire load in test [B]); the increments form one
  // release sequence, so that load synchronizes with every arrival before.
  return barrier->arrived.fetch_add(1, std::memory_order_acq_rel);  // [A]
}

bool LCT_tbarrier_test(LCT_tbarrier_t tbarrier, int64_t ticket) {
  auto* barrier = static_cast<tbarrier_t*>(tbarrier);
  const std::int64_t round_end = (ticket / barrier->nthreads + 1) * barrier->nthreads;
  // acquire: pairs with the release of every arrival [A] of the round.
  return barrier->arrived.load(std::memory_order_acquire) >= round_end;  // [B]
}

void LCT_tbarrier_wait(LCT_tbarrier_t tbarrier, int64_t ticket) {
  // Not bounded: waits for the round's other threads, as a barrier must.
  for (int spins = 0; !LCT_tbarrier_test(tbarrier, ticket); ++spins) {
    if (spins >= spins_before_yield_max) std::this_thread::yield();
  }
}

void LCT_tbarrier_arrive_and_wait(LCT_tbarrier_t tbarrier) {
  LCT_tbarrier_wait(tbarrier, LCT_tbarrier_arrive(tbarrier));
}
