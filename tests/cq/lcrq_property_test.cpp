// Random push/pop sequences on lcrq_t against a sequential model (an
// unbounded FIFO: push always succeeds, pop returns the oldest value or
// nullptr when empty). Tiny rings (2-8 cells) make bursts of pushes close
// rings and link segments, and pops drain, retire and recycle them, so a
// sequence of a few dozen commands crosses many segment turnovers.
#include <rapidcheck/state.h>

#include <cstdint>
#include <deque>

#include "lci/cq/cq_lcrq.hpp"
#include "tests/property/property.hpp"

namespace {

using lci::cq::lcrq_t;

void* as_value(std::uint64_t v) { return reinterpret_cast<void*>((v << 4) | 8); }
// RapidCheck prints the operands of a failed RC_ASSERT; it cannot print a
// void*, so compare the bits.
std::uintptr_t bits(void* value) { return reinterpret_cast<std::uintptr_t>(value); }

struct model_t {
  std::deque<void*> values;
  std::uint64_t next_value = 1;  // values are distinct: a mix-up is visible
};

using command_t = rc::state::Command<model_t, lcrq_t>;

// Pushes `count` fresh values.
struct push_burst_t : command_t {
  int count = *rc::gen::inRange(1, 7);

  void apply(model_t& model) const override {
    for (int i = 0; i < count; ++i) model.values.push_back(as_value(model.next_value++));
  }
  void run(const model_t& model, lcrq_t& queue) const override {
    for (int i = 0; i < count; ++i) queue.push(as_value(model.next_value + i));
  }
  void show(std::ostream& os) const override { os << "push x" << count; }
};

// Pops `count` times; each answer must be the model's oldest value, or
// nullptr exactly when the model is empty.
struct pop_burst_t : command_t {
  int count = *rc::gen::inRange(1, 7);

  void apply(model_t& model) const override {
    for (int i = 0; i < count && !model.values.empty(); ++i) model.values.pop_front();
  }
  void run(const model_t& model, lcrq_t& queue) const override {
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

LCI_PROPERTY(LcrqProperty, MatchesUnboundedFifoModel,
             "lcrq: random push/pop bursts on tiny rings agree with a FIFO", [] {
               const std::size_t ring_size =
                   std::size_t{1} << *rc::gen::inRange<std::size_t>(1, 4);  // 2..8
               lcrq_t queue(ring_size);
               model_t model;
               rc::state::check(model, queue,
                                rc::state::gen::execOneOfWithArgs<push_burst_t,
                                                                  pop_burst_t>());
               // Whatever the sequence, the rest drains in order, then empty.
               // (check() applied the commands to a copy of the model, so
               // drain the queue itself: every value comes out once.)
               std::uint64_t drained_count = 0;
               while (queue.pop() != nullptr) ++drained_count;
               RC_ASSERT(bits(queue.pop()) == 0u);
               RC_TAG(drained_count > 0 ? "non-empty at end" : "empty at end");
             })

}  // namespace
