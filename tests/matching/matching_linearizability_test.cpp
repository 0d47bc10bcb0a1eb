// Linearizability of table_t::insert on real threads: small histories
// (4 threads x 4 inserts over 2 keys of one bucket) recorded many times and
// checked against the FIFO-per-key matching model of tests/linearizability
// (argument = key, argument2 = value | type << 63, result = 0 if stored, else
// the matched value). Each run's operation plan comes from a PRNG with a
// fixed seed per run, so the workload is deterministic; only the thread
// interleaving varies, and a correct table must be accepted in every run.
//
// Half the runs first fill the bucket's two inline slots with other keys, so
// the keys under test live on the overflow chain (per-key queues of pool
// nodes); the other half start empty (inline slots, spilling to the chain
// after two entries of a key).
//
// A planted-bug build (LCI_TEST_MUTANT with matching_lifo_within_key, see
// BUILD) runs a second workload whose histories a LIFO-within-key table can
// never produce linearizably, and expects every run rejected.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "lci/matching/matching_table.hpp"
#include "tests/linearizability/checker.hpp"
#include "tests/linearizability/models.hpp"
#include "tests/linearizability/runner.hpp"

namespace {

using lci::matching_entry_key_t;
using lci::matching_entry_type_t;
using lci::matching_entry_val_t;
using lci::linearizability::check_runs;
using lci::linearizability::matching_model_t;
using lci::linearizability::recorder_t;
using lci::linearizability::runs_summary_t;
using lci::matching::insert_kind_t;
using lci::matching::insert_result_t;
using lci::matching::table_t;

#if defined(__SANITIZE_THREAD__)
constexpr int runs_count = 100;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr int runs_count = 100;
#else
constexpr int runs_count = 400;
#endif
#else
constexpr int runs_count = 400;
#endif

constexpr int threads_count = 4;
constexpr int inserts_per_thread_count = 4;
constexpr int insert_kind = 0;  // matching_model_t's one operation kind
// One bucket, so both keys (and the fillers) share it; nodes enough for all
// 16 entries of a run on the chain: retry_nomem never occurs.
constexpr std::size_t buckets_count = 1;
constexpr std::size_t overflow_nodes_max = 16;
constexpr matching_entry_key_t keys[2] = {11, 12};
constexpr matching_entry_key_t filler_keys[2] = {901, 902};

matching_entry_val_t value_of(std::uint64_t id) {
  return reinterpret_cast<matching_entry_val_t>(static_cast<std::uintptr_t>((id << 4) | 8));
}
std::uint64_t id_of(matching_entry_val_t value) {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(value) >> 4);
}

struct planned_insert_t {
  matching_entry_key_t key;
  matching_entry_type_t type;
  std::uint64_t id;  // nonzero, unique in the run
};

// One insert on the table, recorded for the checker.
void insert_recorded(table_t& table, const planned_insert_t& insert, int thread,
                     recorder_t& recorder) {
  const std::uint64_t type_bit =
      insert.type == matching_entry_type_t::recv ? matching_model_t::type_bit : 0;
  const auto t0 = recorder.now();
  const insert_result_t result = table.insert(insert.key, value_of(insert.id), insert.type);
  const std::uint64_t matched =
      result.kind == insert_kind_t::matched ? id_of(result.value) : 0;
  recorder.record(thread, insert_kind, insert.key, insert.id | type_bit, matched, t0);
  // Plenty of nodes: a retry would be a bug (and is not in the model).
  ASSERT_NE(result.kind, insert_kind_t::retry_nomem);
}

std::shared_ptr<table_t> make_table(bool fill_inline_slots) {
  auto table = std::make_shared<table_t>(buckets_count, overflow_nodes_max);
  if (fill_inline_slots) {
    for (matching_entry_key_t key : filler_keys) {
      // Fillers are not in the history: their keys are never used again.
      EXPECT_EQ(table->insert(key, value_of(1000 + key), matching_entry_type_t::send).kind,
                insert_kind_t::stored);
    }
  }
  return table;
}

// The concurrent workload: every thread runs its planned inserts at once.
runs_summary_t check_random_plans(int runs) {
  auto run_index = std::make_shared<int>(0);
  return check_runs<matching_model_t>(
      runs, threads_count,
      [run_index] {
        const int run = (*run_index)++;
        std::mt19937 random(static_cast<std::uint32_t>(run) * 2654435761u + 1);
        auto plans = std::make_shared<std::vector<std::vector<planned_insert_t>>>(
            threads_count);
        std::uint64_t id = 1;
        for (auto& plan : *plans) {
          for (int i = 0; i < inserts_per_thread_count; ++i) {
            const auto key = keys[random() % 2];
            const auto type = random() % 2 == 0 ? matching_entry_type_t::send
                                                : matching_entry_type_t::recv;
            plan.push_back({key, type, id++});
          }
        }
        auto table = make_table(run % 2 == 1);
        return std::function<void(int, recorder_t&)>(
            [plans, table](int thread, recorder_t& recorder) {
              for (const planned_insert_t& insert : (*plans)[thread]) {
                insert_recorded(*table, insert, thread, recorder);
              }
            });
      },
      [] { return matching_model_t{}; });
}

TEST(MatchingLinearizability, RandomPlansAreAlwaysLinearizable) {
#if defined(LCI_TEST_MUTANT)
  GTEST_SKIP() << "planted-bug build: see OrderedHandoffIsFifo";
#endif
  const runs_summary_t summary = check_random_plans(runs_count);
  EXPECT_EQ(summary.runs_count, runs_count);
  EXPECT_EQ(summary.operations_count,
            static_cast<std::size_t>(runs_count * threads_count * inserts_per_thread_count));
  EXPECT_EQ(summary.rejected_count, 0);
}

// Thread 0 stores three sends on key 0 in program order, then thread 1
// receives three times on key 0 (after thread 0 finished), while threads 2
// and 3 race a send and a receive on key 1. FIFO demands thread 1 gets the
// sends in thread 0's order, so a LIFO-within-key table is rejected in every
// run, and a correct one in none.
runs_summary_t check_ordered_handoff(int runs) {
  return check_runs<matching_model_t>(
      runs, threads_count,
      [] {
        auto table = make_table(false);
        auto sends_done = std::make_shared<std::atomic<bool>>(false);
        return std::function<void(int, recorder_t&)>(
            [table, sends_done](int thread, recorder_t& recorder) {
              if (thread == 0) {
                for (std::uint64_t id = 1; id <= 3; ++id) {
                  insert_recorded(*table, {keys[0], matching_entry_type_t::send, id}, 0,
                                  recorder);
                }
                sends_done->store(true, std::memory_order_release);
              } else if (thread == 1) {
                while (!sends_done->load(std::memory_order_acquire)) std::this_thread::yield();
                for (std::uint64_t id = 4; id <= 6; ++id) {
                  insert_recorded(*table, {keys[0], matching_entry_type_t::recv, id}, 1,
                                  recorder);
                }
              } else {
                const auto type = thread == 2 ? matching_entry_type_t::send
                                              : matching_entry_type_t::recv;
                insert_recorded(*table, {keys[1], type, static_cast<std::uint64_t>(5 + thread)},
                                thread, recorder);
              }
            });
      },
      [] { return matching_model_t{}; });
}

TEST(MatchingLinearizability, OrderedHandoffIsFifo) {
  const runs_summary_t summary = check_ordered_handoff(runs_count / 4);
#if defined(LCI_TEST_MUTANT)
  // Planted LIFO-within-key bug: every run must be rejected.
  EXPECT_EQ(summary.rejected_count, summary.runs_count);
#else
  EXPECT_EQ(summary.rejected_count, 0);
#endif
}

}  // namespace
