// Property of graph_impl_t (the production source of lci/comp/graph.cpp,
// built into this test so that a broken variant can be switched on): for
// random DAGs (random GRAPH_START / GRAPH_END edges, nodes that complete at
// once, post, or ask to be retried first) and random completion orders of
// the posted nodes, over two rounds:
//   - every node runs exactly once a round (plus once per retry it asks for),
//     and only after all its predecessors completed;
//   - every edge callback runs once a round, after its source completed and
//     before its target ran;
//   - test() returns done exactly when every node has completed, once.
// Callbacks only record what they saw; the checks run after the round, once
// the graph is quiet, so a broken variant fails a check instead of leaving
// the graph in a state its destructor refuses.
#include <rapidcheck.h>

#include <cstddef>
#include <string>
#include <vector>

#include "lci/comp/graph.hpp"
#include "tests/property/property.hpp"

namespace {

using lci::errorcode_t;
using lci::graph_node_t;
using lci::status_t;
using lci::detail::graph_impl_t;

constexpr int nodes_count_max = 8;
constexpr int rounds_count = 2;

struct model_t;

enum class behaviour_t { done, posted };

struct node_model_t {
  model_t* model = nullptr;
  int index = 0;
  graph_node_t handle = nullptr;
  behaviour_t behaviour = behaviour_t::done;
  int retries_per_round = 0;
  std::vector<int> predecessors;  // node indices (GRAPH_START not listed)
  // This round:
  int retries_left = 0;
  int runs_count = 0;
  bool completed = false;
};

struct edge_model_t {
  model_t* model = nullptr;
  int source = -1;      // -1: GRAPH_START
  int target = -1;      // -1: GRAPH_END
  int calls_count = 0;  // this round
};

struct model_t {
  std::vector<node_model_t> nodes;
  std::vector<edge_model_t> edges;
  std::vector<int> posted_pending;  // posted, not yet completed
  std::vector<std::string> violations;

  bool all_completed() const {
    for (const node_model_t& node : nodes) {
      if (!node.completed) return false;
    }
    return true;
  }
};

status_t run_node(void* value) {
  auto* node = static_cast<node_model_t*>(value);
  model_t& model = *node->model;
  ++node->runs_count;
  for (int p : node->predecessors) {
    if (!model.nodes[p].completed) {
      model.violations.push_back("node " + std::to_string(node->index) +
                                 " ran before predecessor " +
                                 std::to_string(p));
    }
  }
  if (node->retries_left > 0) {
    --node->retries_left;
    return status_t(errorcode_t::retry);
  }
  if (node->behaviour == behaviour_t::posted) {
    model.posted_pending.push_back(node->index);
    return status_t(errorcode_t::posted);
  }
  node->completed = true;
  status_t status(errorcode_t::done);
  status.tag = static_cast<lci::tag_t>(node->index);
  return status;
}

// An edge's value pair is (source value, target value); the edge itself is
// found by them.
void run_edge(status_t status, void* src_value, void* dst_value) {
  auto* source = static_cast<node_model_t*>(src_value);
  auto* target = static_cast<node_model_t*>(dst_value);
  model_t* model = source != nullptr ? source->model : target->model;
  const int source_index = source != nullptr ? source->index : -1;
  const int target_index = target != nullptr ? target->index : -1;
  for (edge_model_t& edge : model->edges) {
    if (edge.source != source_index || edge.target != target_index) continue;
    ++edge.calls_count;
    break;
  }
  const std::string name =
      std::to_string(source_index) + ">" + std::to_string(target_index);
  if (!status.is_done())
    model->violations.push_back("edge " + name + " not done");
  if (source != nullptr && !source->completed) {
    model->violations.push_back("edge " + name +
                                " before its source completed");
  }
  if (source != nullptr &&
      status.tag != static_cast<lci::tag_t>(source_index)) {
    model->violations.push_back("edge " + name + " got another node's status");
  }
  if (target != nullptr && target->runs_count > 0) {
    model->violations.push_back("edge " + name + " after its target ran");
  }
}

// Builds a random DAG into model and graph. Edges go from lower to higher
// index only (acyclic); at most one edge per pair, so run_edge can find it.
void build(model_t& model, graph_impl_t& graph) {
  const int nodes_count = *rc::gen::inRange(0, nodes_count_max + 1);
  model.nodes.resize(static_cast<std::size_t>(nodes_count));
  for (int i = 0; i < nodes_count; ++i) {
    node_model_t& node = model.nodes[static_cast<std::size_t>(i)];
    node.model = &model;
    node.index = i;
    node.behaviour = *rc::gen::element(behaviour_t::done, behaviour_t::posted);
    node.retries_per_round = *rc::gen::inRange(0, 3);
    node.handle = graph.add_node(run_node, &node, nullptr);
  }
  auto add_edge = [&](int source, int target) {
    model.edges.push_back({&model, source, target, 0});
    graph.add_edge(source < 0 ? lci::GRAPH_START : model.nodes[source].handle,
                   target < 0 ? lci::GRAPH_END : model.nodes[target].handle,
                   run_edge);
    if (source >= 0 && target >= 0)
      model.nodes[target].predecessors.push_back(source);
  };
  for (int target = 0; target < nodes_count; ++target) {
    for (int source = 0; source < target; ++source) {
      if (*rc::gen::inRange(0, 3) == 0) add_edge(source, target);
    }
    if (*rc::gen::inRange(0, 4) == 0) add_edge(-1, target);
    if (*rc::gen::inRange(0, 4) == 0) add_edge(target, -1);
  }
}

void begin_round(model_t& model) {
  for (node_model_t& node : model.nodes) {
    node.retries_left = node.retries_per_round;
    node.runs_count = 0;
    node.completed = false;
  }
  for (edge_model_t& edge : model.edges) edge.calls_count = 0;
  model.posted_pending.clear();
}

void complete_posted(model_t& model, graph_impl_t& graph, std::size_t which,
                     bool by_signal) {
  const int index = model.posted_pending[which];
  model.posted_pending.erase(model.posted_pending.begin() +
                             static_cast<std::ptrdiff_t>(which));
  node_model_t& node = model.nodes[static_cast<std::size_t>(index)];
  node.completed = true;
  status_t status(errorcode_t::done);
  status.tag = static_cast<lci::tag_t>(index);
  status.user_context = node.handle;
  if (by_signal) {
    graph.signal(status);
  } else {
    graph.mark_complete(node.handle, status);
  }
}

// One round in a random order; returns whether test() reported it done.
bool run_round(model_t& model, graph_impl_t& graph, int round) {
  const std::string prefix = "round " + std::to_string(round) + ": ";
  begin_round(model);
  graph.start();
  int done_count = 0;
  // Enough steps for every posted completion and every retry's test().
  const int steps_max = 4 * nodes_count_max + 8;
  for (int step = 0; step < steps_max && done_count == 0; ++step) {
    const std::size_t pending = model.posted_pending.size();
    const std::size_t choice = *rc::gen::inRange<std::size_t>(0, pending + 1);
    if (choice < pending) {
      complete_posted(model, graph, choice, *rc::gen::arbitrary<bool>());
      continue;
    }
    const bool all_before = model.all_completed();
    const bool done = graph.test().is_done();
    // A retry re-run inside test() may complete the last nodes.
    const bool all_after = model.all_completed();
    if (done) ++done_count;
    if (done && !all_after)
      model.violations.push_back(prefix + "done too early");
    if (!done && all_before)
      model.violations.push_back(prefix + "not done when all completed");
  }
  // Leave the graph quiet whatever went wrong: nothing posted or waiting
  // for a retry (the destructor refuses a node in flight).
  for (int step = 0; step < steps_max && !model.all_completed(); ++step) {
    if (!model.posted_pending.empty()) {
      complete_posted(model, graph, 0, true);
    } else if (graph.test().is_done()) {
      ++done_count;
    }
  }
  if (graph.test().is_done()) ++done_count;
  if (!model.all_completed()) model.violations.push_back(prefix + "stuck");
  if (done_count == 0) model.violations.push_back(prefix + "never done");
  if (done_count > 1) model.violations.push_back(prefix + "done twice");
  for (const node_model_t& node : model.nodes) {
    if (node.runs_count != 1 + node.retries_per_round) {
      model.violations.push_back(prefix + "node " + std::to_string(node.index) +
                                 " ran " + std::to_string(node.runs_count) +
                                 " times");
    }
  }
  for (const edge_model_t& edge : model.edges) {
    if (edge.calls_count != 1) {
      model.violations.push_back(prefix + "edge " +
                                 std::to_string(edge.source) + ">" +
                                 std::to_string(edge.target) + " ran " +
                                 std::to_string(edge.calls_count) + " times");
    }
  }
  return done_count == 1;
}

LCI_PROPERTY(GraphProperty, RunsEveryNodeOnceInDependencyOrder,
             "graph: random DAGs and completion orders, two rounds", [] {
               model_t model;
               graph_impl_t graph(nullptr);
               build(model, graph);
               for (int round = 0; round < rounds_count; ++round) {
                 if (!run_round(model, graph, round)) break;
               }
               if (!model.violations.empty()) RC_FAIL(model.violations.front());
             })

}  // namespace
