// The graph's own memory orders as the only synchronization between
// threads: what a node's work writes in plain (non-atomic) memory is read
// by its successor on another thread and, once test() answers done, by the
// thread that called it. Under --config=tsan, a happens-before the graph
// fails to give (a predecessor count or the round's unit count decremented
// without acquire and release) is a reported data race; the stress tests
// synchronize through atomics of their own and cannot show it.
//
// Each round: a and b are posted nodes, c their successor, and d a's second
// successor. Worker 0 writes a's datum and signals a; worker 1 writes b's
// and signals b. The interleaving is forced with relaxed atomics, which
// order nothing: a's edge to d (after its edge to c) waits until c has run,
// and worker 1 signals b only once worker 0 is in that edge. So worker 1
// releases c and runs it while worker 0 has decremented c's count but not
// yet finished a's unit: only c's count can order a's datum before c. The
// main thread starts each round, polls test(), and then reads every datum;
// the workers learn of a new round from an atomic the main thread stores
// (release: it orders the main thread before them, never them before it).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "lci/comp/graph.hpp"
#include "tests/comp/comp_test_scale.hpp"

namespace {

using lci::errorcode_t;
using lci::graph_node_t;
using lci::status_t;
using lci::comp::test::scaled;
using lci::detail::graph_impl_t;

struct round_data_t {
  int a = -1;      // written by worker 0 before it signals a
  int b = -1;      // written by worker 1 before it signals b
  int c_sum = -1;  // written by c: a + b as c saw them
  int d = -1;      // written by d (on worker 0): a as d saw it
  // relaxed only: they force the interleaving without ordering anything
  std::atomic<int> a_in_edge{-1};  // the round whose a -> d edge runs
  std::atomic<int> c_ran{-1};      // the round whose c has run
};

status_t posted(void*) { return status_t(errorcode_t::posted); }

status_t run_c(void* value) {
  auto* data = static_cast<round_data_t*>(value);
  data->c_sum = data->a + data->b;
  data->c_ran.store(data->b, std::memory_order_relaxed);
  return status_t(errorcode_t::done);
}

status_t run_d(void* value) {
  auto* data = static_cast<round_data_t*>(value);
  data->d = data->a;
  return status_t(errorcode_t::done);
}

// a -> d, on worker 0: a's datum is written and c's count decremented.
void wait_for_c(status_t, void*, void* dst_value) {
  auto* data = static_cast<round_data_t*>(dst_value);
  const int round = data->a;  // worker 0's own write
  data->a_in_edge.store(round, std::memory_order_relaxed);
  while (data->c_ran.load(std::memory_order_relaxed) != round) std::this_thread::yield();
}

TEST(GraphPublication, NodeWorkIsVisibleToSuccessorsAndToTheCallerOfTest) {
  const int rounds = scaled(400);
  round_data_t data;
  graph_impl_t graph(nullptr);
  graph_node_t a = graph.add_node(posted, nullptr, nullptr);
  graph_node_t b = graph.add_node(posted, nullptr, nullptr);
  graph_node_t c = graph.add_node(run_c, &data, nullptr);
  graph_node_t d = graph.add_node(run_d, &data, nullptr);
  graph.add_edge(a, c, nullptr);  // before a -> d: c's count drops first
  graph.add_edge(a, d, wait_for_c);
  graph.add_edge(b, c, nullptr);

  std::atomic<int> go{-1};  // the round the workers may complete; -2: stop
  auto worker = [&](int which) {
    int seen = -1;
    for (;;) {
      int round;
      // acquire: pairs with the main thread's release store of the round.
      while ((round = go.load(std::memory_order_acquire)) == seen) std::this_thread::yield();
      if (round == -2) return;
      seen = round;
      if (which == 0) {
        data.a = round;
      } else {
        while (data.a_in_edge.load(std::memory_order_relaxed) != round) std::this_thread::yield();
        data.b = round;
      }
      status_t status(errorcode_t::done);
      status.user_context = which == 0 ? a : b;
      graph.signal(status);
    }
  };
  std::thread worker0(worker, 0);
  std::thread worker1(worker, 1);
  for (int round = 0; round < rounds; ++round) {
    graph.start();
    go.store(round, std::memory_order_release);
    while (!graph.test().is_done()) std::this_thread::yield();
    // Plain reads: ordered after the workers' writes by the graph alone.
    ASSERT_EQ(data.a, round);
    ASSERT_EQ(data.b, round);
    ASSERT_EQ(data.c_sum, 2 * round) << "c ran before a predecessor's work was visible";
    ASSERT_EQ(data.d, round);
  }
  go.store(-2, std::memory_order_release);
  worker0.join();
  worker1.join();
}

}  // namespace
