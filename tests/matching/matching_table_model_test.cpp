// Model checks of table_t (production source under Relacy):
//
//  - two complementary inserts on one key race (inline slot, and overflow
//    queue with the bucket's inline slots full): exactly one matches the
//    other, and the matcher sees the data the storer wrote before inserting
//    (the bucket lock publishes it);
//  - three threads on one key (send, send, recv), inline and overflow: every
//    execution's history (plus a sequential drain) is linearizable against a
//    FIFO per key (a small allocation-free Wing & Gong search below), and
//    every stored value comes back exactly once;
//  - overflow-node pool take/return racing under two different bucket locks
//    (2 buckets with full inline slots, 2 nodes): one thread takes two nodes
//    and returns one while the other takes one. The free list must stay
//    exact: a pop whose CAS succeeds on a recycled head (ABA) would leave an
//    in-use node on it.
//
// Every bucket and node field is a util::var, so Relacy reports an access
// not ordered by the bucket lock or by the pool's release/acquire pairs as a
// data race. Broken variants (BUILD): matching_bucket_unlocked (an insert
// without its bucket lock), matching_pool_pop_relaxed (pop's acquires
// weakened to relaxed), matching_pool_no_version (the free-list head's
// version never changes: ABA).
#include <cstdint>

#include "lci/matching/matching_table.hpp"
#include "tests/model_check/model_check.hpp"

namespace {

using lci::matching_entry_key_t;
using lci::matching_entry_type_t;
using lci::matching_entry_val_t;
using lci::matching::hash_key;
using lci::matching::insert_kind_t;
using lci::matching::insert_result_t;
using lci::matching::table_t;
using lci::util::var;

constexpr matching_entry_type_t send = matching_entry_type_t::send;
constexpr matching_entry_type_t recv = matching_entry_type_t::recv;

// The n-th key (n >= 0) that hashes into `bucket` of a table with
// buckets_count buckets.
matching_entry_key_t key_in_bucket(std::size_t bucket, std::size_t buckets_count,
                                   int n) {
  for (matching_entry_key_t key = 1;; ++key) {
    if ((hash_key(key) & (buckets_count - 1)) == bucket && n-- == 0) return key;
  }
}

// A value the storing thread fills before inserting: the matcher reads it, so
// a match that does not synchronize with the store is a reported race.
struct payload_t {
  var<int> data;
};

// A table plus payloads; values are payload addresses. Keys that fill the
// inline slots of a bucket (one send each) are inserted in before(), single
// threaded, so the keys under test live on the overflow chain.
template <int payloads_count>
struct world_t {
  table_t* table = nullptr;
  payload_t payloads[payloads_count];
  std::size_t filler_entries_count = 0;

  void build(std::size_t buckets_count, std::size_t nodes_max) {
    table = new table_t(buckets_count, nodes_max);
  }
  void fill_inline_slots(std::size_t bucket) {
    const std::size_t buckets_count = table->buckets_count();
    // Keys 100.. of the bucket are never used by a test body (they use 0..9).
    for (int n = 100; n < 100 + 2; ++n) {
      const insert_result_t result =
          table->insert(key_in_bucket(bucket, buckets_count, n), value(0), send);
      RL_ASSERT(result.kind == insert_kind_t::stored);
      ++filler_entries_count;
    }
  }
  matching_entry_val_t value(int index) { return &payloads[index]; }
  int index_of(matching_entry_val_t value) const {
    for (int i = 0; i < payloads_count; ++i) {
      if (value == &payloads[i]) return i;
    }
    RL_ASSERT(false);  // not a value of this world
    return -1;
  }
  // Store `data` into payload `index`, then insert it.
  insert_result_t insert(matching_entry_key_t key, int index, int data,
                         matching_entry_type_t type) {
    payloads[index].data.store(data);
    return table->insert(key, value(index), type);
  }
  // Read the payload a match returned: ordered after its storer's write.
  int read(const insert_result_t& result) {
    return static_cast<payload_t*>(result.value)->data.load();
  }
  void tear_down() {
    RL_ASSERT(table->entries_count() == filler_entries_count);
    RL_ASSERT(table->overflow_nodes_free_count() == table->overflow_nodes_max());
    delete table;
  }
};

// Two threads insert complementary entries on one key: a send and a receive.
template <bool overflow>
struct complementary_pair_t : rl::test_suite<complementary_pair_t<overflow>, 2> {
  world_t<2> world;
  insert_result_t results[2];
  matching_entry_key_t key = 0;

  void before() {
    world.build(1, 2);
    if (overflow) world.fill_inline_slots(0);
    key = key_in_bucket(0, 1, 0);
  }
  void thread(unsigned id) {
    const int index = static_cast<int>(id);
    results[id] = world.insert(key, index, 10 + index, id == 0 ? send : recv);
    if (results[id].kind == insert_kind_t::matched) {
      const int other = 1 - index;
      RL_ASSERT(world.index_of(results[id].value) == other);
      RL_ASSERT(world.read(results[id]) == 10 + other);
    }
  }
  void after() {
    const bool first_matched = results[0].kind == insert_kind_t::matched;
    const bool second_matched = results[1].kind == insert_kind_t::matched;
    RL_ASSERT(first_matched != second_matched);  // exactly one matches
    RL_ASSERT(results[first_matched ? 1 : 0].kind == insert_kind_t::stored);
    world.tear_down();
  }
};

// An operation of a three_on_one_key_t execution: which payload it inserted
// (its identity), its type, what it matched (payload index, or -1 if
// stored), and its real-time interval in the schedule Relacy chose.
struct timed_insert_t {
  int index;
  matching_entry_type_t type;
  int matched;
  std::uint64_t invoke_time;
  std::uint64_t response_time;
};

// Is there an order of ops[0..count) that respects real time (an op that
// responded before another was invoked comes first) and in which a per-key
// FIFO of one type (the sequential matching model) gives every op its
// recorded result? Wing & Gong's search over at most 6 operations, without
// heap allocation: every free is a branch point of Relacy's tree search, so
// tests/linearizability (std::set, std::string) would multiply the
// interleavings by 2^frees.
class tiny_linearizability_t {
 public:
  static constexpr int ops_max = 6;
  tiny_linearizability_t(const timed_insert_t* ops, int count) : ops_(ops), count_(count) {
    RL_ASSERT(count <= ops_max);
  }
  bool check() const {
    int queue[ops_max] = {};
    return search(0, queue, 0);
  }

 private:
  bool search(unsigned done, const int* queue, int queue_count) const {
    if (done == (1u << count_) - 1) return true;
    for (int i = 0; i < count_; ++i) {
      if (!is_candidate(i, done)) continue;
      int next[ops_max];
      int next_count = 0;
      if (!apply(ops_[i], queue, queue_count, next, next_count)) continue;
      if (search(done | (1u << i), next, next_count)) return true;
    }
    return false;
  }
  bool is_candidate(int i, unsigned done) const {
    if (done & (1u << i)) return false;
    for (int j = 0; j < count_; ++j) {
      if (j == i || (done & (1u << j)) != 0) continue;
      if (ops_[j].response_time < ops_[i].invoke_time) return false;
    }
    return true;
  }
  // queue holds payload indexes of waiting entries, oldest first, one type.
  bool apply(const timed_insert_t& op, const int* queue, int queue_count, int* next,
             int& next_count) const {
    const bool complementary =
        queue_count > 0 && ops_type(queue[0]) != op.type;
    if (complementary) {
      if (op.matched != queue[0]) return false;
      for (int k = 1; k < queue_count; ++k) next[next_count++] = queue[k];
      return true;
    }
    if (op.matched != -1) return false;
    for (int k = 0; k < queue_count; ++k) next[next_count++] = queue[k];
    next[next_count++] = op.index;
    return true;
  }
  matching_entry_type_t ops_type(int index) const {
    for (int i = 0; i < count_; ++i) {
      if (ops_[i].index == index) return ops_[i].type;
    }
    RL_ASSERT(false);
    return send;
  }
  const timed_insert_t* ops_;
  int count_;
};

// Three threads on one key: send, send, recv. Each history, followed by a
// drain that matches whatever is left, must be linearizable against a
// per-key FIFO, and each stored value must come back exactly once.
template <bool overflow>
struct three_on_one_key_t : rl::test_suite<three_on_one_key_t<overflow>, 3> {
  static constexpr int drain_index = 3;  // drains use payloads 3, 4, 5
  world_t<6> world;
  timed_insert_t ops[tiny_linearizability_t::ops_max] = {};
  // The schedule's real-time clock. Plain memory, not a var: Relacy runs the
  // threads one at a time, so it is exact, and it must not add races.
  std::uint64_t clock = 0;
  matching_entry_key_t key = 0;

  void before() {
    world.build(1, 2);
    if (overflow) world.fill_inline_slots(0);
    key = key_in_bucket(0, 1, 0);
  }
  static matching_entry_type_t type_of(unsigned id) { return id < 2 ? send : recv; }
  timed_insert_t timed_insert(int index, matching_entry_type_t type) {
    timed_insert_t op{index, type, -1, clock++, 0};
    const insert_result_t result = world.insert(key, index, 10 + index, type);
    op.response_time = clock++;
    RL_ASSERT(result.kind != insert_kind_t::retry_nomem);  // 2 nodes suffice
    if (result.kind == insert_kind_t::matched) {
      op.matched = world.index_of(result.value);
      RL_ASSERT(world.read(result) == 10 + op.matched);
    }
    return op;
  }
  void thread(unsigned id) { ops[id] = timed_insert(static_cast<int>(id), type_of(id)); }
  void after() {
    // Drain: the waiting entries share one type: the receive's if it was
    // stored and no send matched it, else the sends'.
    const bool recv_waits =
        ops[2].matched == -1 && ops[0].matched != 2 && ops[1].matched != 2;
    const int waiting_count =
        static_cast<int>(world.table->entries_count() - world.filler_entries_count);
    int count = 3;
    for (int i = 0; i < waiting_count; ++i) {
      ops[count] = timed_insert(drain_index + i, recv_waits ? send : recv);
      RL_ASSERT(ops[count].matched >= 0);
      ++count;
    }
    // Exactly once: every stored op's payload is returned once, and only
    // those are returned.
    for (int stored = 0; stored < 3; ++stored) {
      int returned_count = 0;
      for (int i = 0; i < count; ++i) returned_count += ops[i].matched == stored;
      RL_ASSERT(returned_count == (ops[stored].matched == -1 ? 1 : 0));
    }
    RL_ASSERT(tiny_linearizability_t(ops, count).check());
    world.tear_down();
  }
};

// Node pool take/return under two bucket locks. Thread 0 (bucket 0) stores
// keys a and b on the chain (a node each), then matches a (its node goes back
// to the pool); thread 1 (bucket 1) stores key c on the chain. Two nodes, so
// exactly stored(b) + stored(c) nodes must be in use at the end.
struct pool_take_return_t : rl::test_suite<pool_take_return_t, 2> {
  world_t<5> world;
  insert_result_t results[4];  // a, b, a's match (thread 0); c (thread 1)
  matching_entry_key_t keys[3] = {};

  void before() {
    world.build(2, 2);
    world.fill_inline_slots(0);
    world.fill_inline_slots(1);
    keys[0] = key_in_bucket(0, 2, 0);
    keys[1] = key_in_bucket(0, 2, 1);
    keys[2] = key_in_bucket(1, 2, 0);
  }
  void thread(unsigned id) {
    if (id == 0) {
      results[0] = world.insert(keys[0], 0, 10, send);
      results[1] = world.insert(keys[1], 1, 11, send);
      results[2] = world.insert(keys[0], 2, 12, recv);
      return;
    }
    results[3] = world.insert(keys[2], 3, 13, send);
  }
  void after() {
    // a needs a node and at most one is taken by c: a is always stored, and
    // its match returns it.
    RL_ASSERT(results[0].kind == insert_kind_t::stored);
    RL_ASSERT(results[2].kind == insert_kind_t::matched);
    RL_ASSERT(world.index_of(results[2].value) == 0);
    RL_ASSERT(world.read(results[2]) == 10);
    std::size_t in_use = 0;
    for (int i : {1, 3}) {
      RL_ASSERT(results[i].kind != insert_kind_t::matched);
      if (results[i].kind == insert_kind_t::stored) ++in_use;
    }
    // The free list holds exactly the nodes not in use (a recycled head
    // taken by a stalled pop would leave an in-use node on it).
    RL_ASSERT(world.table->overflow_nodes_free_count() == 2 - in_use);
    // Drain b and c; both nodes must come home.
    for (int i : {1, 3}) {
      if (results[i].kind != insert_kind_t::stored) continue;
      const insert_result_t result =
          world.table->insert(keys[i == 1 ? 1 : 2], world.value(4), recv);
      RL_ASSERT(result.kind == insert_kind_t::matched);
      RL_ASSERT(world.index_of(result.value) == i);
    }
    world.tear_down();
  }
};

}  // namespace

int main() {
  using lci::model_check::run;
  return lci::model_check::exit_status({
      run<complementary_pair_t<false>>("matching: send/recv race, inline", rl::sched_full),
      run<complementary_pair_t<true>>("matching: send/recv race, overflow", rl::sched_full),
      run<three_on_one_key_t<false>>("matching: send,send,recv one key, inline",
                                     rl::sched_bound, 4),
      run<three_on_one_key_t<true>>("matching: send,send,recv one key, overflow",
                                    rl::sched_bound, 2),
      run<pool_take_return_t>("matching: node pool take/return, 2 buckets",
                              rl::sched_bound, 4),
  });
}
