// Runs Relacy model-checking suites and turns their outcomes into an exit
// status (see relacy.bzl).
//
// Each run prints one line: the suite, the scheduler, how many interleavings
// Relacy explored, and whether it found a bug. A normal build must find none;
// a broken-variant build (LCI_MODEL_EXPECT_BUG) must find at least one, or
// the check would be shown unable to fail.
#pragma once

#if !defined(LCI_MODEL_CHECK)
#error "model_check.hpp is for relacy_test targets (LCI_MODEL_CHECK)"
#endif

#include <cstdio>
#include <initializer_list>
#include <ostream>

#include "lci/util/atomic.hpp"  // Relacy, through the project's door
#include "lci/util/mutation.hpp"

namespace lci::model_check {

struct outcome_t {
  const char* name;
  bool bug_found;
  unsigned long long interleavings;
};

inline const char* scheduler_name(rl::scheduler_type_e scheduler) {
  switch (scheduler) {
    case rl::sched_full: return "full search";
    case rl::sched_bound: return "context-bound";
    default: return "random";
  }
}

// Explores Test (an rl::test_suite) with the given scheduler. For
// sched_bound, `bound` is the context bound (preemptions per execution); for
// sched_random it is the number of iterations in thousands.
template <typename Test>
outcome_t run(const char* name, rl::scheduler_type_e scheduler,
              unsigned bound = 2) {
  rl::test_params params;
  params.search_type = scheduler;
  if (scheduler == rl::sched_bound) params.context_bound = bound;
  if (scheduler == rl::sched_random) params.iteration_count = bound * 1000;
  // Quiet: Relacy's percentage lines would bury the summary line. An
  // ostream without a buffer discards what it is given.
  static std::ostream discard(nullptr);
  params.progress_stream = &discard;
  const bool clean = rl::simulate<Test>(params);
  std::printf("[model] %-44s %-13s %2u: %llu interleavings explored, %s\n",
              name, scheduler_name(scheduler),
              scheduler == rl::sched_full ? 0 : bound,
              static_cast<unsigned long long>(params.stop_iteration),
              clean ? "no bug" : "BUG REPORTED");
  std::fflush(stdout);
  return {name, !clean, static_cast<unsigned long long>(params.stop_iteration)};
}

inline int exit_status(std::initializer_list<outcome_t> outcomes) {
  bool any_bug = false;
  for (const outcome_t& outcome : outcomes) any_bug |= outcome.bug_found;
#if defined(LCI_MODEL_EXPECT_BUG)
  std::printf("[model] broken variant %s: %s\n", util::active_mutation,
              any_bug ? "caught, as required" : "NOT CAUGHT — the check is blind");
  return any_bug ? 0 : 1;
#else
  return any_bug ? 1 : 0;
#endif
}

}  // namespace lci::model_check
