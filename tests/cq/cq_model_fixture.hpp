// The Relacy fixture shared by the completion-queue model tests
// (lcrq_model_test.cpp, faa_array_model_test.cpp): values with payloads,
// and the checks every linearizable FIFO must pass.
//
// Value (p, i) is &payload[p][i], holding 100 * p + i + 1. pop() checks that
// the payload written before the push is visible (a missing release shows as
// a data race), that no value comes out twice, and per-producer FIFO as seen
// by each consumer; drain_and_check() drains as the last consumer and checks
// that exactly the accepted values came out, and that no value left for the
// drain is older than one a thread popped from the same producer.
#pragma once

#include <cstddef>
#include <type_traits>

#include "tests/model_check/model_check.hpp"

namespace lci::cq::model {

template <typename queue_t, int producers_max, int values_per_producer_max,
          int consumers_max>
struct queue_fixture_t {
  static constexpr int drain_consumer = consumers_max - 1;

  queue_t* queue = nullptr;
  util::var<int> payload[producers_max][values_per_producer_max];
  util::atomic<int> popped_count[producers_max][values_per_producer_max];
  bool accepted[producers_max][values_per_producer_max];
  int last_popped[consumers_max][producers_max];  // sequence, -1 = none
  int popped_by[producers_max][values_per_producer_max];  // consumer, -1 = none

  // Takes ownership of the queue (allocated inside the test, so Relacy
  // tracks it).
  void build(queue_t* built) {
    queue = built;
    for (int p = 0; p < producers_max; ++p) {
      for (int i = 0; i < values_per_producer_max; ++i) {
        // relaxed: before the threads start.
        popped_count[p][i].store(0, util::mo_relaxed);
        accepted[p][i] = false;
        popped_by[p][i] = -1;
      }
    }
    for (int c = 0; c < consumers_max; ++c) {
      for (int p = 0; p < producers_max; ++p) last_popped[c][p] = -1;
    }
  }

  // Returns whether the queue accepted the value (an unbounded queue always
  // does; a bounded one may be full).
  bool push(int producer, int sequence) {
    payload[producer][sequence].store(100 * producer + sequence + 1);
    void* value = &payload[producer][sequence];
    if constexpr (std::is_void_v<decltype(queue->push(value))>) {
      queue->push(value);
      accepted[producer][sequence] = true;
    } else {
      accepted[producer][sequence] = queue->push(value);
    }
    return accepted[producer][sequence];
  }

  // Pops once as `consumer`; returns whether a value came out.
  bool pop(int consumer) {
    void* value = queue->pop();
    if (value == nullptr) return false;
    const int index =
        static_cast<int>(static_cast<util::var<int>*>(value) - &payload[0][0]);
    RL_ASSERT(index >= 0 && index < producers_max * values_per_producer_max);
    const int producer = index / values_per_producer_max;
    const int sequence = index % values_per_producer_max;
    // The payload was written before the push: it must be visible here.
    RL_ASSERT(payload[producer][sequence].load() == 100 * producer + sequence + 1);
    // relaxed: only the count matters (a duplicate reads 1).
    RL_ASSERT(popped_count[producer][sequence].fetch_add(1, util::mo_relaxed) == 0);
    // Per-producer FIFO as seen by this consumer.
    RL_ASSERT(sequence > last_popped[consumer][producer]);
    last_popped[consumer][producer] = sequence;
    popped_by[producer][sequence] = consumer;
    return true;
  }

  // After the threads joined. Destroys the queue (its destructor asserts its
  // own teardown invariants; Relacy reports anything not freed). Returns how
  // many values the drain found.
  std::size_t drain_and_check() {
    std::size_t drained_count = 0;
    while (pop(drain_consumer)) ++drained_count;
    RL_ASSERT(queue->pop() == nullptr);
    for (int p = 0; p < producers_max; ++p) {
      for (int i = 0; i < values_per_producer_max; ++i) {
        // relaxed: all threads joined.
        const int count = popped_count[p][i].load(util::mo_relaxed);
        RL_ASSERT(count == (accepted[p][i] ? 1 : 0));
        for (int j = i + 1; j < values_per_producer_max; ++j) {
          // j popped by a thread, i left for the drain: i was overtaken.
          RL_ASSERT(!(popped_by[p][i] == drain_consumer && popped_by[p][j] >= 0 &&
                      popped_by[p][j] != drain_consumer));
        }
      }
    }
    delete queue;
    queue = nullptr;
    return drained_count;
  }
};

}  // namespace lci::cq::model
