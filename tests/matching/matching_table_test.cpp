#include "lci/matching/matching_table.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using lci::matching_entry_key_t;
using lci::matching_entry_type_t;
using lci::matching_entry_val_t;
using lci::matching_policy_t;
using lci::tag_t;
using lci::matching::insert_kind_t;
using lci::matching::insert_result_t;
using lci::matching::table_t;
namespace detail = lci::matching::detail;

constexpr matching_entry_type_t send = matching_entry_type_t::send;
constexpr matching_entry_type_t recv = matching_entry_type_t::recv;

// Distinct non-null values that carry a number the test can read back.
matching_entry_val_t val(std::uintptr_t id) {
  return reinterpret_cast<matching_entry_val_t>((id << 4) | 8);
}
std::uintptr_t id_of(matching_entry_val_t value) {
  return reinterpret_cast<std::uintptr_t>(value) >> 4;
}

matching_entry_type_t other(matching_entry_type_t type) {
  return type == send ? recv : send;
}

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Nodes a single key with `count` entries occupies when it owns an inline
// slot: the first slot_values_count_max entries are inline.
std::size_t nodes_for_inline_key(std::size_t count) {
  if (count <= detail::slot_values_count_max) return 0;
  return ceil_div(count - detail::slot_values_count_max,
                  detail::node_values_count_max);
}

void expect_stored(const insert_result_t& result) {
  EXPECT_EQ(result.kind, insert_kind_t::stored);
  EXPECT_EQ(result.value, nullptr);
}

void expect_matched(const insert_result_t& result, matching_entry_val_t value) {
  EXPECT_EQ(result.kind, insert_kind_t::matched);
  EXPECT_EQ(result.value, value);
}

TEST(MatchingTable, Defaults) {
  table_t table;
  EXPECT_EQ(table.buckets_count(), table_t::buckets_count_default);
  EXPECT_EQ(table.overflow_nodes_max(), table_t::overflow_nodes_max_default);
  EXPECT_EQ(table.overflow_nodes_free_count(), table.overflow_nodes_max());
  EXPECT_EQ(table.entries_count(), 0u);
}

TEST(MatchingTable, StoreThenMatchEmptiesTheKey) {
  table_t table;
  const matching_entry_key_t key =
      table.make_key(3, 42, matching_policy_t::rank_tag);
  for (matching_entry_type_t first : {send, recv}) {
    expect_stored(table.insert(key, val(1), first));
    EXPECT_EQ(table.entries_count(), 1u);
    expect_matched(table.insert(key, val(2), other(first)), val(1));
    EXPECT_EQ(table.entries_count(), 0u);
    // The key is empty again: the next insert of either type stores.
    expect_stored(table.insert(key, val(3), other(first)));
    expect_matched(table.insert(key, val(4), first), val(3));
    EXPECT_EQ(table.entries_count(), 0u);
  }
}

TEST(MatchingTable, DifferentKeysDoNotMatch) {
  table_t table;
  const matching_entry_key_t a =
      table.make_key(1, 7, matching_policy_t::rank_tag);
  const matching_entry_key_t b =
      table.make_key(2, 7, matching_policy_t::rank_tag);
  expect_stored(table.insert(a, val(1), send));
  expect_stored(table.insert(b, val(2), recv));
  EXPECT_EQ(table.entries_count(), 2u);
  expect_matched(table.insert(b, val(3), send), val(2));
  expect_matched(table.insert(a, val(4), recv), val(1));
}

TEST(MatchingTable, SameTypeInsertsQueueUp) {
  table_t table;
  const matching_entry_key_t key = 77;
  expect_stored(table.insert(key, val(1), recv));
  expect_stored(table.insert(key, val(2), recv));
  expect_stored(table.insert(key, val(3), recv));
  EXPECT_EQ(table.entries_count(), 3u);
  expect_matched(table.insert(key, val(10), send), val(1));
  expect_matched(table.insert(key, val(11), send), val(2));
  expect_matched(table.insert(key, val(12), send), val(3));
  EXPECT_EQ(table.entries_count(), 0u);
}

// One key with many entries: past the inline values into overflow nodes and
// back, with stores and matches interleaved; FIFO holds throughout and every
// node goes home.
TEST(MatchingTable, FifoPerKeyAcrossInlineAndOverflow) {
  for (std::size_t buckets_count : {std::size_t{1}, std::size_t{65536}}) {
    table_t table(buckets_count, 64);
    const matching_entry_key_t key = 5;
    const std::size_t entries_count = 37;
    std::uintptr_t next_id = 0;
    std::uintptr_t expected_id = 0;
    for (std::size_t i = 0; i < entries_count; ++i) {
      expect_stored(table.insert(key, val(next_id++), send));
    }
    EXPECT_EQ(table.entries_count(), entries_count);
    EXPECT_EQ(table.overflow_nodes_max() - table.overflow_nodes_free_count(),
              nodes_for_inline_key(entries_count));
    // Alternate one match and one store (the inline slot refills from the
    // queue each time), then drain a third, refill a third, drain the rest.
    for (std::size_t i = 0; i < 2 * detail::node_values_count_max; ++i) {
      expect_matched(table.insert(key, val(900 + i), recv), val(expected_id++));
      expect_stored(table.insert(key, val(next_id++), send));
    }
    for (std::size_t i = 0; i < entries_count / 3; ++i) {
      expect_matched(table.insert(key, val(1000 + i), recv),
                     val(expected_id++));
    }
    for (std::size_t i = 0; i < entries_count / 3; ++i) {
      expect_stored(table.insert(key, val(next_id++), send));
    }
    while (expected_id < next_id) {
      const insert_result_t result = table.insert(key, val(5000), recv);
      ASSERT_EQ(result.kind, insert_kind_t::matched);
      EXPECT_EQ(id_of(result.value), expected_id);
      ++expected_id;
    }
    EXPECT_EQ(table.entries_count(), 0u);
    EXPECT_EQ(table.overflow_nodes_free_count(), table.overflow_nodes_max());
    // The key flips type once empty: receives now queue up.
    expect_stored(table.insert(key, val(1), recv));
    expect_matched(table.insert(key, val(2), send), val(1));
  }
}

// Many keys in one bucket: two own the inline slots, the rest live on the
// overflow chain; entries are interleaved across keys and removed in an
// interleaved order, checking FIFO per key against a reference model.
TEST(MatchingTable, ManyKeysCollidingInOneBucket) {
  for (std::size_t buckets_count : {std::size_t{1}, std::size_t{2}}) {
    table_t table(buckets_count, 256);
    const std::size_t keys_count = 12;
    const std::size_t per_key_count = 9;
    std::map<matching_entry_key_t, std::deque<std::uintptr_t>> model;
    std::uintptr_t next_id = 1;
    for (std::size_t round = 0; round < per_key_count; ++round) {
      for (std::size_t k = 0; k < keys_count; ++k) {
        const matching_entry_type_t type = k % 2 == 0 ? send : recv;
        expect_stored(table.insert(k * 1000003, val(next_id), type));
        model[k * 1000003].push_back(next_id++);
      }
    }
    EXPECT_EQ(table.entries_count(), keys_count * per_key_count);
    EXPECT_LT(table.overflow_nodes_free_count(), table.overflow_nodes_max());
    // Remove: odd keys from the back of the key list, even keys from the
    // front, one entry per key per pass, and store a few more in between.
    for (std::size_t pass = 0; !model.empty(); ++pass) {
      for (std::size_t j = 0; j < keys_count; ++j) {
        const std::size_t k = j % 2 == 0 ? j : keys_count - j;
        const matching_entry_key_t key = k * 1000003;
        auto it = model.find(key);
        if (it == model.end()) continue;
        const matching_entry_type_t type = k % 2 == 0 ? send : recv;
        if (pass == 2 && k % 3 == 0) {
          expect_stored(table.insert(key, val(next_id), type));
          it->second.push_back(next_id++);
        }
        expect_matched(table.insert(key, val(999999), other(type)),
                       val(it->second.front()));
        it->second.pop_front();
        if (it->second.empty()) model.erase(it);
      }
    }
    EXPECT_EQ(table.entries_count(), 0u);
    EXPECT_EQ(table.overflow_nodes_free_count(), table.overflow_nodes_max());
  }
}

// With the node pool exhausted an insert that needs a node stores nothing
// and says retry_nomem; inserts that need no node still work; once matches
// free a node the same insert succeeds.
TEST(MatchingTable, OverflowExhaustionReturnsRetryNomem) {
  const std::size_t nodes_max = 2;
  table_t table(1, nodes_max);
  // Keys 0 and 1 take the two inline slots; keys 2 and 3 one node each.
  const std::size_t inline_keys_count = detail::bucket_slots_count;
  const std::size_t keys_count = inline_keys_count + nodes_max;
  for (std::size_t k = 0; k < keys_count; ++k) {
    expect_stored(table.insert(k, val(k + 1), send));
  }
  EXPECT_EQ(table.overflow_nodes_free_count(), 0u);
  const std::size_t stored_count = table.entries_count();
  EXPECT_EQ(stored_count, keys_count);

  const matching_entry_key_t new_key = keys_count;
  for (matching_entry_type_t type : {send, recv}) {
    const insert_result_t result = table.insert(new_key, val(100), type);
    EXPECT_EQ(result.kind, insert_kind_t::retry_nomem);
    EXPECT_EQ(result.value, nullptr);
    EXPECT_EQ(table.entries_count(), stored_count);
  }
  // A key on the chain still has room in its node; an inline key needs a
  // node once its slot is full.
  expect_stored(table.insert(keys_count - 1, val(200), send));
  expect_stored(table.insert(0, val(201), send));  // second inline value
  EXPECT_EQ(table.insert(0, val(202), send).kind, insert_kind_t::retry_nomem);
  // Matches need no node, and matching key 2's only entry frees its node.
  expect_matched(table.insert(inline_keys_count, val(300), recv),
                 val(inline_keys_count + 1));
  EXPECT_EQ(table.overflow_nodes_free_count(), 1u);
  expect_stored(table.insert(new_key, val(100), send));
  expect_matched(table.insert(new_key, val(101), recv), val(100));
  // Drain what is left: key 0 (two values), key 1, key 3 (two values).
  expect_matched(table.insert(0, val(1), recv), val(1));
  expect_matched(table.insert(0, val(1), recv), val(201));
  expect_matched(table.insert(1, val(1), recv), val(2));
  expect_matched(table.insert(keys_count - 1, val(1), recv), val(keys_count));
  expect_matched(table.insert(keys_count - 1, val(1), recv), val(200));
  EXPECT_EQ(table.entries_count(), 0u);
  EXPECT_EQ(table.overflow_nodes_free_count(), nodes_max);
}

TEST(MatchingTable, NoOverflowNodesStillMatchesInline) {
  table_t table(1, 0);
  expect_stored(table.insert(1, val(1), send));
  expect_stored(table.insert(2, val(2), recv));
  EXPECT_EQ(table.insert(3, val(3), send).kind, insert_kind_t::retry_nomem);
  expect_matched(table.insert(1, val(4), recv), val(1));
  expect_stored(table.insert(3, val(3), send));
}

matching_entry_key_t key_ignoring_tag(int rank, tag_t, matching_policy_t) {
  return static_cast<matching_entry_key_t>(rank);
}

TEST(MatchingTable, UserKeyFunctionIgnoringTag) {
  table_t table(table_t::buckets_count_default,
                table_t::overflow_nodes_max_default, &key_ignoring_tag);
  const matching_entry_key_t send_key =
      table.make_key(4, 100, matching_policy_t::rank_tag);
  const matching_entry_key_t recv_key =
      table.make_key(4, 200, matching_policy_t::rank_tag);
  EXPECT_EQ(send_key, recv_key);
  expect_stored(table.insert(send_key, val(1), send));
  expect_matched(table.insert(recv_key, val(2), recv), val(1));
  // Another rank is another key.
  expect_stored(table.insert(
      table.make_key(5, 100, matching_policy_t::rank_tag), val(3), send));
  EXPECT_EQ(table.entries_count(), 1u);
}

TEST(MatchingTable, BadConstructorArgumentsThrow) {
  for (std::size_t bad : {std::size_t{0}, std::size_t{3}, std::size_t{65535}}) {
    try {
      table_t table(bad, 1);
      ADD_FAILURE() << "buckets_count " << bad << " accepted";
    } catch (const std::invalid_argument& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("buckets_count = " + std::to_string(bad)),
                std::string::npos)
          << message;
    }
  }
  EXPECT_THROW(table_t(1, table_t::overflow_nodes_max_limit + 1),
               std::invalid_argument);
}

// The limits themselves are accepted (tables that large cannot be built
// here, so the checks are called directly), one past them refused.
TEST(MatchingTable, SizeLimitsAreInclusive) {
  EXPECT_EQ(table_t::checked_buckets_count(table_t::buckets_count_max),
            table_t::buckets_count_max);
  EXPECT_EQ(table_t::checked_buckets_count(1), 1u);
  EXPECT_THROW(table_t::checked_buckets_count(table_t::buckets_count_max * 2),
               std::invalid_argument);
  EXPECT_THROW(table_t::checked_buckets_count(0), std::invalid_argument);
  EXPECT_EQ(table_t::checked_overflow_nodes_max(table_t::overflow_nodes_max_limit),
            table_t::overflow_nodes_max_limit);
  EXPECT_THROW(table_t::checked_overflow_nodes_max(table_t::overflow_nodes_max_limit + 1),
               std::invalid_argument);
}

// A pointer one past the pool's last node is not one of its nodes.
TEST(MatchingTableDeathTest, PushOfANodePastThePoolAborts) {
  detail::overflow_pool_t pool(4);
  detail::overflow_node_t* const first = pool.pop();  // node 0: the free list starts in order
  ASSERT_NE(first, nullptr);
  EXPECT_DEATH(pool.push(first + 4), "push of a node from another pool");
  pool.push(first);
}

TEST(MatchingTableDeathTest, NullValueAborts) {
  table_t table(1, 1);
  EXPECT_DEATH((void)table.insert(1, nullptr, send), "nullptr is not a valid");
}

// Random operations over a few keys in one or two buckets with a tiny node
// pool, checked step by step against a reference model (per key: the type
// waiting and its FIFO of values). retry_nomem must leave the table as it was
// and only happen with the pool empty.
TEST(MatchingTable, MatchesReferenceModelUnderRandomOps) {
  const std::uint64_t seed = 0x5eed0001;
  std::printf("seed = %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 random(seed);
  for (int round = 0; round < 40; ++round) {
    const std::size_t buckets_count = round % 2 == 0 ? 1 : 2;
    const std::size_t nodes_max = round % 5;
    const std::size_t keys_count = 2 + round % 7;
    table_t table(buckets_count, nodes_max);
    struct queue_t {
      matching_entry_type_t type = send;
      std::deque<std::uintptr_t> ids;
    };
    std::map<matching_entry_key_t, queue_t> model;
    std::size_t model_entries_count = 0;
    std::size_t retries_count = 0;
    for (std::uintptr_t id = 1; id <= 3000; ++id) {
      const matching_entry_key_t key = random() % keys_count;
      // Bias toward one type per phase so queues grow past inline room.
      const bool send_phase = (id / 200) % 2 == 0;
      const matching_entry_type_t type =
          (random() % 4 != 0) == send_phase ? send : recv;
      const insert_result_t result = table.insert(key, val(id), type);
      queue_t& queue = model[key];
      if (result.kind == insert_kind_t::retry_nomem) {
        ++retries_count;
        ASSERT_EQ(table.overflow_nodes_free_count(), 0u) << "round " << round;
        ASSERT_TRUE(queue.ids.empty() || queue.type == type);
      } else if (!queue.ids.empty() && queue.type != type) {
        ASSERT_EQ(result.kind, insert_kind_t::matched) << "round " << round;
        ASSERT_EQ(id_of(result.value), queue.ids.front()) << "round " << round;
        queue.ids.pop_front();
        --model_entries_count;
      } else {
        ASSERT_EQ(result.kind, insert_kind_t::stored) << "round " << round;
        queue.type = type;
        queue.ids.push_back(id);
        ++model_entries_count;
      }
      ASSERT_EQ(table.entries_count(), model_entries_count);
    }
    if (nodes_max <= 1) {
      EXPECT_GT(retries_count, 0u) << "round " << round;
    }
  }
}

}  // namespace
