// Stress of graph_impl_t: a layered DAG whose posted nodes are completed by
// 4 worker threads (signal() from each), so completions, successor runs and
// round ends race, while the main thread polls test() (which re-runs retry
// nodes). Over many rounds: every node runs exactly once a round (twice for
// a node that asks to be retried), only after all its predecessors
// completed; every edge callback runs once a round, after its source
// completed; test() is done only once every node completed.
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "lci/comp/graph.hpp"
#include "tests/comp/comp_test_scale.hpp"

namespace {

using lci::errorcode_t;
using lci::graph_node_t;
using lci::status_t;
using lci::detail::graph_impl_t;

constexpr int workers_count = 4;
constexpr int layers_count = 6;
constexpr int layer_width = 10;

struct world_t;

struct node_state_t {
  world_t* world = nullptr;
  int index = 0;
  graph_node_t handle = nullptr;
  std::vector<int> predecessors;
  bool posted = false;
  bool retry_once = false;
  std::atomic<int> runs_count{0};        // this round
  std::atomic<int> completed_round{-1};  // the last round it completed in
  std::atomic<int> retried_round{-1};
};

struct world_t {
  graph_impl_t* graph = nullptr;
  std::vector<std::unique_ptr<node_state_t>> nodes;
  int round = 0;  // written by the main thread before start()
  std::mutex work_mutex;
  std::deque<node_state_t*> work;  // posted nodes waiting for a worker
  std::atomic<int> order_violations{0};
  std::atomic<int> edge_calls_count{0};
  std::atomic<bool> stop{false};

  bool predecessors_done(const node_state_t& node) const {
    for (int p : node.predecessors) {
      // acquire: pairs with the release store of whoever completed p.
      if (nodes[p]->completed_round.load(std::memory_order_acquire) != round) {
        return false;
      }
    }
    return true;
  }
};

status_t run_node(void* value) {
  auto* node = static_cast<node_state_t*>(value);
  world_t& world = *node->world;
  node->runs_count.fetch_add(1, std::memory_order_relaxed);
  if (!world.predecessors_done(*node)) world.order_violations.fetch_add(1);
  if (node->retry_once &&
      node->retried_round.exchange(world.round, std::memory_order_relaxed) !=
          world.round) {
    return status_t(errorcode_t::retry);
  }
  if (!node->posted) {
    node->completed_round.store(world.round, std::memory_order_release);
    return status_t(errorcode_t::done);
  }
  std::lock_guard<std::mutex> guard(world.work_mutex);
  world.work.push_back(node);
  return status_t(errorcode_t::posted);
}

void count_edge(status_t status, void* src_value, void* /*dst_value*/) {
  auto* source = static_cast<node_state_t*>(src_value);
  world_t& world = *source->world;
  if (!status.is_done() ||
      source->completed_round.load(std::memory_order_acquire) != world.round) {
    world.order_violations.fetch_add(1);
  }
  world.edge_calls_count.fetch_add(1, std::memory_order_relaxed);
}

void work(world_t& world) {
  while (!world.stop.load(std::memory_order_relaxed)) {
    node_state_t* node = nullptr;
    {
      std::lock_guard<std::mutex> guard(world.work_mutex);
      if (!world.work.empty()) {
        node = world.work.front();
        world.work.pop_front();
      }
    }
    if (node == nullptr) {
      std::this_thread::yield();
      continue;
    }
    node->completed_round.store(world.round, std::memory_order_release);
    status_t status(errorcode_t::done);
    status.user_context = node->handle;
    world.graph->signal(status);
  }
}

TEST(GraphStressTest, ConcurrentCompletionsOverManyRounds) {
  const int rounds = lci::comp::test::scaled(2000);
  world_t world;
  graph_impl_t graph(nullptr);
  world.graph = &graph;
  std::mt19937 random(2024);
  int edges_with_callback = 0;
  for (int layer = 0; layer < layers_count; ++layer) {
    for (int i = 0; i < layer_width; ++i) {
      auto node = std::make_unique<node_state_t>();
      node->world = &world;
      node->index = static_cast<int>(world.nodes.size());
      node->posted = node->index % 3 != 0;
      node->retry_once = node->index % 7 == 3;
      node->handle = graph.add_node(run_node, node.get(), nullptr);
      if (layer > 0) {
        const int edges = 1 + static_cast<int>(random() % 3);
        for (int e = 0; e < edges; ++e) {
          const int p = (layer - 1) * layer_width +
                        static_cast<int>(random() % layer_width);
          node->predecessors.push_back(p);
          graph.add_edge(world.nodes[p]->handle, node->handle, count_edge);
          ++edges_with_callback;
        }
      } else if (i % 4 == 0) {
        graph.add_edge(lci::GRAPH_START, node->handle, nullptr);
      }
      if (layer == layers_count - 1) {
        graph.add_edge(node->handle, lci::GRAPH_END, count_edge);
        ++edges_with_callback;
      }
      world.nodes.push_back(std::move(node));
    }
  }

  std::vector<std::thread> workers;
  for (int w = 0; w < workers_count; ++w) {
    workers.emplace_back([&world] { work(world); });
  }
  int bad_rounds = 0;
  for (int r = 0; r < rounds; ++r) {
    world.round = r;  // workers see it through the work queue's mutex
    for (auto& node : world.nodes) node->runs_count.store(0);
    graph.start();
    while (!graph.test().is_done()) std::this_thread::yield();
    bool good = world.edge_calls_count.exchange(0) == edges_with_callback;
    for (auto& node : world.nodes) {
      good &= node->completed_round.load(std::memory_order_acquire) == r;
      good &= node->runs_count.load() == (node->retry_once ? 2 : 1);
    }
    if (!good) ++bad_rounds;
  }
  world.stop.store(true);
  for (auto& thread : workers) thread.join();
  EXPECT_EQ(bad_rounds, 0) << "rounds with a node or edge run wrongly";
  EXPECT_EQ(world.order_violations.load(), 0)
      << "a node or edge ran before its predecessors completed";
}

}  // namespace
