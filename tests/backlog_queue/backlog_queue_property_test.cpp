// Random push/pop sequences against a sequential model of the backlog queue
// (a bounded FIFO whose empty flag always tells the truth when no other
// thread runs).
#include <rapidcheck/state.h>

#include <deque>

#include "lci/backlog_queue/backlog_queue.hpp"
#include "tests/property/property.hpp"

namespace {

using lci::errorcode_t;
using queue_t = lci::backlog_queue::backlog_queue_t<int>;

struct model_t {
  std::deque<int> requests;
  std::size_t entries_max = 0;
};

using command_t = rc::state::Command<model_t, queue_t>;

struct push_t : command_t {
  int request = *rc::gen::inRange(0, 1000);

  void apply(model_t& model) const override {
    if (model.requests.size() < model.entries_max) model.requests.push_back(request);
  }
  void run(const model_t& model, queue_t& queue) const override {
    const lci::error_t result = queue.push(request);
    if (model.requests.size() < model.entries_max) {
      RC_ASSERT(result.is_done());
    } else {
      RC_ASSERT(result.errorcode == errorcode_t::retry_nomem);
    }
    RC_ASSERT(!queue.is_empty_hint());
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

LCI_PROPERTY(BacklogQueueProperty, MatchesBoundedFifoModel,
             "backlog_queue: random push/pop agree with a bounded FIFO", [] {
               model_t model;
               model.entries_max = *rc::gen::inRange<std::size_t>(1, 6);
               queue_t queue(model.entries_max);
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
