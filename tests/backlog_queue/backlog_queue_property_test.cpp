// Random push/pop sequences against a sequential model of the backlog queue
// (a FIFO whose empty flag always tells the truth when no other thread
// runs), from rings of 1 to 5 slots: pushes past a full ring grow it, also
// while its entries wrap around its end.
#include <rapidcheck/state.h>

#include <deque>

#include "lci/backlog_queue/backlog_queue.hpp"
#include "tests/property/property.hpp"

namespace {

using queue_t = lci::backlog_queue::backlog_queue_t<int>;

struct model_t {
  std::deque<int> requests;
};

using command_t = rc::state::Command<model_t, queue_t>;

struct push_t : command_t {
  int request = *rc::gen::inRange(0, 1000);

  void apply(model_t& model) const override { model.requests.push_back(request); }
  void run(const model_t& model, queue_t& queue) const override {
    queue.push(request);
    RC_ASSERT(!queue.is_empty_hint());
    RC_ASSERT(queue.size() == model.requests.size() + 1);
  }
  void show(std::ostream& os) const override { os << "push(" << request << ")"; }
};

struct pop_t : command_t {
  void apply(model_t& model) const override {
    if (!model.requests.empty()) model.requests.pop_front();
  }
  void run(const model_t& model, queue_t& queue) const override {
    RC_ASSERT(queue.is_empty_hint() == model.requests.empty());
    const auto request = queue.pop();
    if (model.requests.empty()) {
      RC_ASSERT(!request.has_value());
    } else {
      RC_ASSERT(request.has_value());
      RC_ASSERT(*request == model.requests.front());
    }
    RC_ASSERT(queue.size() == model.requests.size() - (model.requests.empty() ? 0 : 1));
  }
  void show(std::ostream& os) const override { os << "pop()"; }
};

LCI_PROPERTY(BacklogQueueProperty, MatchesFifoModel,
             "backlog_queue: random push/pop agree with a FIFO", [] {
               model_t model;
               queue_t queue(*rc::gen::inRange<std::size_t>(1, 6));
               // The destructor asserts nothing was dropped; empty the queue
               // even when a failed assertion unwinds out of check().
               struct drain_on_exit_t {
                 queue_t& queue;
                 ~drain_on_exit_t() { queue.drain([](int) {}); }
               } drain_on_exit{queue};
               rc::state::check(model, queue,
                                rc::state::gen::execOneOfWithArgs<push_t, pop_t>());
             })

}  // namespace
