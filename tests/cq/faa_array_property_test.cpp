// Random push/pop sequences on faa_array_t against a sequential model (a
// FIFO bounded by capacity: push returns false exactly when it holds
// capacity values, pop returns the oldest value or nullptr exactly when it is
// empty). Small capacities (1-9, both powers of two, where slots = capacity,
// and others, where slots > capacity) make the queue hit full and empty and
// wrap its ticket ring many times.
#include <rapidcheck/state.h>

#include <cstdint>
#include <deque>

#include "lci/cq/cq_faa_array.hpp"
#include "tests/property/property.hpp"

namespace {

using lci::cq::faa_array_t;

void* as_value(std::uint64_t v) { return reinterpret_cast<void*>((v << 4) | 8); }
// RapidCheck prints the operands of a failed RC_ASSERT; it cannot print a
// void*, so compare the bits.
std::uintptr_t bits(void* value) { return reinterpret_cast<std::uintptr_t>(value); }

struct model_t {
  std::deque<void*> values;
  std::size_t capacity = 0;
  std::uint64_t next_value = 1;  // values are distinct: a mix-up is visible
};

using command_t = rc::state::Command<model_t, faa_array_t>;

// Offers `count` fresh values; each is refused exactly when the model is full.
struct push_burst_t : command_t {
  int count = *rc::gen::inRange(1, 7);

  void apply(model_t& model) const override {
    for (int i = 0; i < count; ++i) {
      void* value = as_value(model.next_value++);
      if (model.values.size() < model.capacity) model.values.push_back(value);
    }
  }
  void run(const model_t& model, faa_array_t& queue) const override {
    std::size_t size = model.values.size();
    for (int i = 0; i < count; ++i) {
      const bool fits = size < model.capacity;
      RC_ASSERT(queue.push(as_value(model.next_value + i)) == fits);
      if (fits) ++size;
    }
  }
  void show(std::ostream& os) const override { os << "push x" << count; }
};

// Pops `count` times against the model's oldest values.
struct pop_burst_t : command_t {
  int count = *rc::gen::inRange(1, 7);

  void apply(model_t& model) const override {
    for (int i = 0; i < count && !model.values.empty(); ++i) model.values.pop_front();
  }
  void run(const model_t& model, faa_array_t& queue) const override {
    std::deque<void*> expected = model.values;
    for (int i = 0; i < count; ++i) {
      void* value = queue.pop();
      if (expected.empty()) {
        RC_ASSERT(bits(value) == 0u);
      } else {
        RC_ASSERT(bits(value) == bits(expected.front()));
        expected.pop_front();
      }
    }
  }
  void show(std::ostream& os) const override { os << "pop x" << count; }
};

LCI_PROPERTY(FaaArrayProperty, MatchesBoundedFifoModel,
             "faa_array: random push/pop bursts agree with a bounded FIFO", [] {
               model_t model;
               model.capacity = *rc::gen::inRange<std::size_t>(1, 10);
               faa_array_t queue(model.capacity);
               RC_ASSERT(queue.capacity() == model.capacity);
               rc::state::check(model, queue,
                                rc::state::gen::execOneOfWithArgs<push_burst_t,
                                                                  pop_burst_t>());
               // Drain, so the destructor's ticket checks see a
               // consistent, empty queue.
               std::size_t drained_count = 0;
               while (queue.pop() != nullptr) ++drained_count;
               RC_ASSERT(drained_count <= model.capacity);
             })

}  // namespace
