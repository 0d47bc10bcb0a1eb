// Concurrent stress tests of the matching table: conservation (every entry
// matched at most once, with an entry of the same key and the other type;
// leftovers + matched == inserted) and FIFO per key between two threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "lci/matching/matching_table.hpp"

namespace {

using lci::matching_entry_key_t;
using lci::matching_entry_type_t;
using lci::matching_entry_val_t;
using lci::matching::insert_kind_t;
using lci::matching::insert_result_t;
using lci::matching::table_t;
namespace detail = lci::matching::detail;

#if defined(__SANITIZE_THREAD__)
#define LCI_TEST_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LCI_TEST_UNDER_TSAN 1
#endif
#endif

#if defined(LCI_TEST_UNDER_TSAN)
constexpr std::size_t ops_scale_divisor = 4;
#else
constexpr std::size_t ops_scale_divisor = 1;
#endif

constexpr matching_entry_type_t send = matching_entry_type_t::send;
constexpr matching_entry_type_t recv = matching_entry_type_t::recv;

matching_entry_val_t val(std::size_t id) {
  return reinterpret_cast<matching_entry_val_t>((std::uintptr_t{id} << 4) | 8);
}
std::size_t id_of(matching_entry_val_t value) {
  return static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(value) >> 4);
}

struct conservation_config_t {
  std::size_t buckets_count;
  std::size_t keys_count;
};

// Threads insert random sends and receives over a small key space. Values are
// unique ids; the test knows each id's key, type and inserting thread.
void run_conservation(const conservation_config_t& config) {
  const std::size_t threads_count = 4;
  const std::size_t ops_per_thread = 250000 / ops_scale_divisor;
  const std::size_t ops_count = threads_count * ops_per_thread;
  // Enough nodes that retry_nomem cannot happen (exhaustion is tested
  // single-threaded): a key's queue has only full segments except its head
  // and tail, so n entries need at most n / node_values_count_max + 2 nodes.
  const std::size_t nodes_max =
      ops_count / detail::node_values_count_max + 2 * config.keys_count;
  auto table = std::make_unique<table_t>(config.buckets_count, nodes_max);
  auto keys = std::make_unique<matching_entry_key_t[]>(ops_count);
  auto types = std::make_unique<matching_entry_type_t[]>(ops_count);
  // matched[t]: (own id, matched id) pairs seen by thread t.
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> matched(
      threads_count);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < threads_count; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 random(0xabc0 + t);
      for (std::size_t i = 0; i < ops_per_thread; ++i) {
        const std::size_t id = t * ops_per_thread + i;
        keys[id] = random() % config.keys_count * 0x9e3779b9ull;
        types[id] = random() % 2 == 0 ? send : recv;
        const insert_result_t result =
            table->insert(keys[id], val(id), types[id]);
        ASSERT_NE(result.kind, insert_kind_t::retry_nomem);
        if (result.kind == insert_kind_t::matched) {
          matched[t].emplace_back(id, id_of(result.value));
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();

  std::vector<int> times_matched(ops_count, 0);
  std::size_t pairs_count = 0;
  for (const auto& pairs : matched) {
    for (const auto& [own, other] : pairs) {
      ASSERT_LT(other, ops_count);
      EXPECT_EQ(keys[own], keys[other]) << own << " matched " << other;
      EXPECT_NE(types[own], types[other]) << own << " matched " << other;
      ++times_matched[own];
      ++times_matched[other];
      ++pairs_count;
    }
  }
  for (std::size_t id = 0; id < ops_count; ++id) {
    ASSERT_LE(times_matched[id], 1) << "id " << id << " matched twice";
  }
  EXPECT_GT(pairs_count, 0u);
  EXPECT_EQ(table->entries_count() + 2 * pairs_count, ops_count);

  // Leftovers: per key one type only; draining with the other type returns
  // exactly the unmatched ids, each thread's in its insertion order.
  std::map<matching_entry_key_t, std::vector<std::size_t>> unmatched;
  for (std::size_t id = 0; id < ops_count; ++id) {
    if (times_matched[id] == 0) unmatched[keys[id]].push_back(id);
  }
  for (const auto& [key, ids] : unmatched) {
    const matching_entry_type_t type = types[ids.front()];
    std::vector<std::size_t> drained;
    std::vector<std::size_t> last_by_thread(threads_count, 0);
    for (std::size_t id : ids) {
      ASSERT_EQ(types[id], type) << "both types waiting on one key";
      const insert_result_t result =
          table->insert(key, val(ops_count), type == send ? recv : send);
      ASSERT_EQ(result.kind, insert_kind_t::matched);
      const std::size_t got = id_of(result.value);
      const std::size_t thread = got / ops_per_thread;
      EXPECT_GE(got + 1, last_by_thread[thread]) << "FIFO broken";
      last_by_thread[thread] = got + 1;
      drained.push_back(got);
    }
    std::sort(drained.begin(), drained.end());
    EXPECT_EQ(drained, ids);
  }
  EXPECT_EQ(table->entries_count(), 0u);
  EXPECT_EQ(table->overflow_nodes_free_count(), table->overflow_nodes_max());
}

TEST(MatchingTableStress, ConservationManyBuckets) {
  run_conservation({table_t::buckets_count_default, 16});
}

// Four buckets, 64 keys: most keys live on overflow chains, so threads pop
// and push overflow nodes concurrently from different buckets.
TEST(MatchingTableStress, ConservationOverflowChains) {
  run_conservation({4, 64});
}

// One key, one sender and one receiver: since only one type ever waits, the
// k-th send matches the k-th receive, whichever side found the match. Two
// more threads hammer other keys of the same (single) bucket, each inserting
// a send and then its receive, which must match each other.
TEST(MatchingTableStress, FifoPerKeyWithOneSenderAndOneReceiver) {
  const std::size_t messages_count = 400000 / ops_scale_divisor;
  // Enough nodes for the worst case (see run_conservation): key 42 plus at
  // most 16 noise keys with one entry each.
  const std::size_t nodes_max =
      messages_count / detail::node_values_count_max + 2 * 17;
  auto table = std::make_unique<table_t>(1, nodes_max);
  const matching_entry_key_t key = 42;
  // Sends carry ids 2k, receives 2k + 1.
  auto pairs_bad_count = std::make_unique<std::size_t>(0);
  auto pairs_seen =
      std::make_unique<std::vector<std::size_t>>(messages_count, 0);
  auto order_bad_count = std::make_unique<std::size_t>(0);
  auto run = [&](matching_entry_type_t type, std::size_t* bad,
                 std::size_t* order_bad) {
    std::size_t last_matched_index = 0;
    bool any = false;
    for (std::size_t k = 0; k < messages_count; ++k) {
      const std::size_t id = 2 * k + (type == send ? 0 : 1);
      const insert_result_t result = table->insert(key, val(id), type);
      ASSERT_EQ(result.kind != insert_kind_t::retry_nomem, true);
      if (result.kind != insert_kind_t::matched) continue;
      const std::size_t other = id_of(result.value);
      ASSERT_NE(other % 2, id % 2);
      const std::size_t other_index = other / 2;
      if (other_index != k) ++*bad;
      ++(*pairs_seen)[k];
      if (any && other_index <= last_matched_index) ++*order_bad;
      last_matched_index = other_index;
      any = true;
    }
  };
  auto receiver_bad = std::make_unique<std::size_t>(0);
  auto receiver_order_bad = std::make_unique<std::size_t>(0);
  auto noise_bad = std::make_unique<std::vector<std::size_t>>(2, 0);
  std::vector<std::thread> threads;
  threads.emplace_back(run, send, pairs_bad_count.get(), order_bad_count.get());
  threads.emplace_back(run, recv, receiver_bad.get(), receiver_order_bad.get());
  for (std::size_t n = 0; n < 2; ++n) {
    threads.emplace_back([&, n] {
      for (std::size_t i = 0; i < messages_count / 2; ++i) {
        const matching_entry_key_t noise_key = 1000 + n * 100 + i % 8;
        const std::size_t id =
            4 * messages_count + 2 * (n * messages_count + i);
        const insert_result_t stored = table->insert(noise_key, val(id), send);
        const insert_result_t matched =
            table->insert(noise_key, val(id + 1), recv);
        if (stored.kind != insert_kind_t::stored ||
            matched.kind != insert_kind_t::matched ||
            matched.value != val(id)) {
          ++(*noise_bad)[n];
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(*pairs_bad_count, 0u);
  EXPECT_EQ(*receiver_bad, 0u);
  EXPECT_EQ(*order_bad_count, 0u);
  EXPECT_EQ(*receiver_order_bad, 0u);
  EXPECT_EQ((*noise_bad)[0], 0u);
  EXPECT_EQ((*noise_bad)[1], 0u);
  // Every message index matched exactly once (by one side or the other; the
  // two sides write different k only when FIFO broke, counted above).
  EXPECT_EQ(table->entries_count(), 0u);
  EXPECT_EQ(table->overflow_nodes_free_count(), table->overflow_nodes_max());
}

}  // namespace
