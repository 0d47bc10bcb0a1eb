// Unit tests of graph_impl_t: chains, diamonds, edge callbacks, posted nodes
// completed later by signal() or mark_complete(), retry nodes re-run by
// test(), GRAPH_START / GRAPH_END edges, reuse across rounds, on_complete,
// the lifecycle's invalid calls and free_cb at destruction.
#include "lci/comp/graph.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "lci/comp/counter.hpp"

namespace {

using lci::errorcode_t;
using lci::GRAPH_END;
using lci::graph_node_t;
using lci::GRAPH_START;
using lci::status_t;
using lci::detail::comp_kind_t;
using lci::detail::counter_impl_t;
using lci::detail::graph_impl_t;

// What happened, in order, as "run a", "edge a>b 7", "free a".
using log_t = std::vector<std::string>;

// A node's value: how its fn behaves, and what it saw.
struct node_value_t {
  std::string name;
  log_t* log;
  errorcode_t result = errorcode_t::done;  // after the retries
  int retries_per_round = 0;
  lci::tag_t tag = 0;  // of the status fn returns
  int retries_left = 0;
  int runs_count = 0;
  int freed_count = 0;
  bool throws = false;  // after the retries, instead of returning result
};

status_t run_node(void* value) {
  auto* node = static_cast<node_value_t*>(value);
  ++node->runs_count;
  node->log->push_back("run " + node->name);
  if (node->retries_left > 0) {
    --node->retries_left;
    return status_t(errorcode_t::retry);
  }
  if (node->throws) throw std::runtime_error("node " + node->name + " failed");
  status_t status(node->result);
  status.tag = node->tag;
  return status;
}

std::string name_of(void* value) {
  return value == nullptr ? "null" : static_cast<node_value_t*>(value)->name;
}

log_t* edge_log = nullptr;  // the edge callback's log (one test at a time)

void log_edge(status_t status, void* src_value, void* dst_value) {
  edge_log->push_back("edge " + name_of(src_value) + ">" + name_of(dst_value) +
                      " " + std::to_string(status.tag) +
                      (status.is_done() ? "" : " not-done"));
}

void throw_edge(status_t, void* src_value, void* dst_value) {
  edge_log->push_back("throw " + name_of(src_value) + ">" +
                      name_of(dst_value));
  throw std::runtime_error("edge " + name_of(src_value) + ">" +
                           name_of(dst_value) + " failed");
}

// Keeps the statuses it is signalled with (on_complete of a graph).
class status_log_t final : public lci::detail::comp_impl_t {
 public:
  status_log_t() : comp_impl_t(comp_kind_t::handler) {}
  void signal(status_t status) override { statuses.push_back(status); }
  std::vector<status_t> statuses;
};

// What `call` threw, as "<what()>", or "nothing".
template <typename call_t>
std::string thrown_by(call_t call) {
  try {
    call();
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  return "nothing";
}

void free_node(void* value) {
  ++static_cast<node_value_t*>(value)->freed_count;
}

class GraphTest : public ::testing::Test {
 protected:
  void SetUp() override { edge_log = &log_; }
  void TearDown() override { edge_log = nullptr; }

  node_value_t* value(const std::string& name,
                      errorcode_t result = errorcode_t::done,
                      lci::tag_t tag = 0) {
    values_.push_back(std::make_unique<node_value_t>());
    node_value_t* node = values_.back().get();
    node->name = name;
    node->log = &log_;
    node->result = result;
    node->tag = tag;
    return node;
  }
  graph_node_t add(graph_impl_t& graph, const std::string& name,
                   errorcode_t result = errorcode_t::done, lci::tag_t tag = 0) {
    return graph.add_node(run_node, value(name, result, tag), free_node);
  }
  static status_t completion(graph_node_t node, lci::tag_t tag) {
    status_t status(errorcode_t::done);
    status.user_context = node;
    status.tag = tag;
    return status;
  }
  // Takes what was logged since the last call.
  log_t take_log() {
    log_t taken;
    taken.swap(log_);
    return taken;
  }

  log_t log_;
  std::vector<std::unique_ptr<node_value_t>> values_;
};

TEST_F(GraphTest, EmptyGraphIsDoneRightAfterStart) {
  counter_impl_t on_complete;
  graph_impl_t graph(&on_complete);
  EXPECT_EQ(graph.kind(), comp_kind_t::graph);
  EXPECT_TRUE(graph.test().is_retry()) << "not started yet";
  graph.start();
  EXPECT_EQ(on_complete.get(), 1);
  EXPECT_TRUE(graph.test().is_done());
  EXPECT_TRUE(graph.test().is_retry()) << "done is reported once per round";
  graph.start();
  EXPECT_TRUE(graph.test().is_done());
  EXPECT_EQ(on_complete.get(), 2);
}

TEST_F(GraphTest, ChainRunsInOrderWithEdgeCallbacks) {
  graph_impl_t graph(nullptr);
  graph_node_t a = add(graph, "a", errorcode_t::done, 1);
  graph_node_t b = add(graph, "b", errorcode_t::done, 2);
  graph_node_t c = add(graph, "c", errorcode_t::done, 3);
  graph.add_edge(a, b, log_edge);
  graph.add_edge(b, c, log_edge);
  EXPECT_EQ(graph.nodes_count(), 3u);
  graph.start();
  EXPECT_EQ(take_log(),
            (log_t{"run a", "edge a>b 1", "run b", "edge b>c 2", "run c"}));
  EXPECT_TRUE(graph.test().is_done());
}

TEST_F(GraphTest, NodeWithoutFnCompletesAtOnce) {
  graph_impl_t graph(nullptr);
  graph_node_t empty = graph.add_node(nullptr, value("empty"), nullptr);
  graph_node_t b = add(graph, "b");
  graph.add_edge(empty, b, log_edge);
  graph.start();
  EXPECT_EQ(take_log(), (log_t{"edge empty>b 0", "run b"}));
  EXPECT_TRUE(graph.test().is_done());
}

// a -> {b, c} -> d, with b and c posted: d runs only once both completed,
// each by a later signal.
TEST_F(GraphTest, DiamondWaitsForBothPostedBranches) {
  counter_impl_t on_complete;
  graph_impl_t graph(&on_complete);
  graph_node_t a = add(graph, "a");
  graph_node_t b = add(graph, "b", errorcode_t::posted);
  graph_node_t c = add(graph, "c", errorcode_t::posted);
  graph_node_t d = add(graph, "d");
  graph.add_edge(a, b, nullptr);
  graph.add_edge(a, c, nullptr);
  graph.add_edge(b, d, log_edge);
  graph.add_edge(c, d, log_edge);
  graph.start();
  EXPECT_EQ(take_log(), (log_t{"run a", "run b", "run c"}));
  EXPECT_TRUE(graph.test().is_retry());
  graph.mark_complete(c, completion(c, 30));
  EXPECT_EQ(take_log(), (log_t{"edge c>d 30"}));
  EXPECT_TRUE(graph.test().is_retry());
  EXPECT_EQ(on_complete.get(), 0);
  graph.signal(completion(b, 20));  // user_context names the node
  EXPECT_EQ(take_log(), (log_t{"edge b>d 20", "run d"}));
  EXPECT_EQ(on_complete.get(), 1);
  EXPECT_TRUE(graph.test().is_done());
}

TEST_F(GraphTest, PostedStatusReachesTheEdgeCallback) {
  graph_impl_t graph(nullptr);
  graph_node_t a = add(graph, "a", errorcode_t::posted);
  graph_node_t b = add(graph, "b");
  graph.add_edge(a, b, log_edge);
  graph.start();
  status_t status = completion(a, 99);
  status.error = errorcode_t::done_backlog;
  graph.signal(status);
  EXPECT_EQ(take_log(), (log_t{"run a", "edge a>b 99", "run b"}));
  EXPECT_TRUE(graph.test().is_done());
}

TEST_F(GraphTest, StartEdgesRunTheirCallbackAtStart) {
  graph_impl_t graph(nullptr);
  graph_node_t a = add(graph, "a", errorcode_t::done, 4);
  graph_node_t b = add(graph, "b");
  graph.add_edge(GRAPH_START, b, log_edge);  // b also waits for a
  graph.add_edge(a, b, log_edge);
  graph.add_edge(GRAPH_START, GRAPH_END, log_edge);
  graph.start();
  EXPECT_EQ(take_log(), (log_t{"edge null>b 0", "edge null>null 0", "run a",
                               "edge a>b 4", "run b"}));
  EXPECT_TRUE(graph.test().is_done());
}

TEST_F(GraphTest, NodeWithOnlyAStartEdgeRunsAtStart) {
  graph_impl_t graph(nullptr);
  graph_node_t a = add(graph, "a");
  graph.add_edge(GRAPH_START, a, nullptr);
  graph.start();
  EXPECT_EQ(take_log(), (log_t{"run a"}));
  EXPECT_TRUE(graph.test().is_done());
}

// An edge to GRAPH_END runs its callback when its source completes; the
// graph completes when all nodes do, with or without such edges.
TEST_F(GraphTest, EndEdgesRunWhenTheirSourceCompletes) {
  graph_impl_t graph(nullptr);
  graph_node_t a = add(graph, "a", errorcode_t::posted);
  graph_node_t b = add(graph, "b", errorcode_t::posted);  // no edge to END
  graph.add_edge(a, GRAPH_END, log_edge);
  graph.start();
  EXPECT_EQ(take_log(), (log_t{"run a", "run b"}));
  graph.mark_complete(a, completion(a, 8));
  EXPECT_EQ(take_log(), (log_t{"edge a>null 8"}));
  EXPECT_TRUE(graph.test().is_retry()) << "b has not completed";
  graph.mark_complete(b, completion(b, 9));
  EXPECT_TRUE(take_log().empty());
  EXPECT_TRUE(graph.test().is_done());
}

TEST_F(GraphTest, RetryNodesAreRerunByTest) {
  counter_impl_t on_complete;
  graph_impl_t graph(&on_complete);
  node_value_t* a_value = value("a");
  a_value->retries_left = 2;
  graph_node_t a = graph.add_node(run_node, a_value, nullptr);
  graph_node_t b = add(graph, "b");
  graph.add_edge(a, b, nullptr);
  graph.start();
  EXPECT_EQ(take_log(), (log_t{"run a"}));
  EXPECT_TRUE(graph.test().is_retry());
  EXPECT_EQ(take_log(), (log_t{"run a"}));
  // The third run completes a, then b, and so the round, inside test().
  EXPECT_TRUE(graph.test().is_done());
  EXPECT_EQ(take_log(), (log_t{"run a", "run b"}));
  EXPECT_EQ(on_complete.get(), 1);
  EXPECT_TRUE(graph.test().is_retry());
}

TEST_F(GraphTest, RetryNodeThatThenPostsCompletesOnSignal) {
  graph_impl_t graph(nullptr);
  node_value_t* a_value = value("a", errorcode_t::posted);
  a_value->retries_left = 1;
  graph_node_t a = graph.add_node(run_node, a_value, nullptr);
  graph.start();
  EXPECT_TRUE(graph.test().is_retry());  // re-runs a, which posts
  EXPECT_EQ(a_value->runs_count, 2);
  EXPECT_TRUE(graph.test().is_retry());
  graph.signal(completion(a, 0));
  EXPECT_TRUE(graph.test().is_done());
}

TEST_F(GraphTest, ReusableAcrossRounds) {
  counter_impl_t on_complete;
  graph_impl_t graph(&on_complete);
  graph_node_t a = add(graph, "a");
  graph_node_t b = add(graph, "b", errorcode_t::posted);
  graph_node_t c = add(graph, "c", errorcode_t::posted);
  graph_node_t d = add(graph, "d");
  graph.add_edge(a, b, nullptr);
  graph.add_edge(a, c, nullptr);
  graph.add_edge(b, d, nullptr);
  graph.add_edge(c, d, log_edge);
  for (int round = 1; round <= 5; ++round) {
    graph.start();
    EXPECT_TRUE(graph.test().is_retry());
    // Alternate which branch completes first.
    graph_node_t first = round % 2 == 0 ? b : c;
    graph_node_t second = round % 2 == 0 ? c : b;
    graph.mark_complete(first, completion(first, 1));
    EXPECT_TRUE(graph.test().is_retry());
    graph.mark_complete(second, completion(second, 1));
    EXPECT_TRUE(graph.test().is_done()) << "round " << round;
    EXPECT_EQ(on_complete.get(), round);
    for (const auto& node : values_) EXPECT_EQ(node->runs_count, round);
  }
  EXPECT_EQ(take_log().size(), 5u * 5u);  // 4 runs + 1 edge a round
}

// A user who waits on on_complete may start the next round without test().
TEST_F(GraphTest, StartMayFollowOnCompleteWithoutTest) {
  counter_impl_t on_complete;
  graph_impl_t graph(&on_complete);
  add(graph, "a");
  graph.start();
  EXPECT_EQ(on_complete.get(), 1);
  graph.start();
  EXPECT_EQ(on_complete.get(), 2);
  EXPECT_TRUE(graph.test().is_done());
  EXPECT_TRUE(graph.test().is_retry());
}

TEST_F(GraphTest, GraphOfANodeIsItsGraph) {
  graph_impl_t graph(nullptr);
  graph_node_t a = add(graph, "a");
  EXPECT_EQ(graph_impl_t::graph_of(a), &graph);
}

TEST_F(GraphTest, FreeCallbacksRunAtDestruction) {
  node_value_t* a_value = value("a");
  node_value_t* b_value = value("b");
  node_value_t* c_value = value("c");
  {
    graph_impl_t graph(nullptr);
    EXPECT_NE(graph.add_node(run_node, a_value, free_node), nullptr);
    EXPECT_NE(graph.add_node(run_node, b_value, nullptr), nullptr);
    EXPECT_NE(graph.add_node(run_node, c_value, free_node), nullptr);
    graph.start();
    EXPECT_TRUE(graph.test().is_done());
    EXPECT_EQ(a_value->freed_count, 0);
  }
  EXPECT_EQ(a_value->freed_count, 1);
  EXPECT_EQ(b_value->freed_count, 0);
  EXPECT_EQ(c_value->freed_count, 1);
}

TEST_F(GraphTest, AddingAfterStartIsALogicError) {
  graph_impl_t graph(nullptr);
  graph_node_t a = add(graph, "a");
  graph.start();
  EXPECT_THROW(add(graph, "late"), std::logic_error);
  EXPECT_THROW(graph.add_edge(GRAPH_START, a, nullptr), std::logic_error);
  EXPECT_TRUE(graph.test().is_done());
  EXPECT_THROW(add(graph, "later"), std::logic_error) << "frozen for good";
}

TEST_F(GraphTest, StartWhileRunningIsALogicError) {
  graph_impl_t graph(nullptr);
  graph_node_t a = add(graph, "a", errorcode_t::posted);
  graph.start();
  EXPECT_THROW(graph.start(), std::logic_error);
  graph.signal(completion(a, 0));
  EXPECT_TRUE(graph.test().is_done());
  graph.start();  // fine again
  graph.signal(completion(a, 0));
  EXPECT_TRUE(graph.test().is_done());
}

TEST_F(GraphTest, CycleIsRejectedAtStart) {
  graph_impl_t graph(nullptr);
  graph_node_t a = add(graph, "a");
  graph_node_t b = add(graph, "b");
  graph_node_t c = add(graph, "c");
  graph.add_edge(a, b, nullptr);
  graph.add_edge(b, c, nullptr);
  graph.add_edge(c, b, nullptr);
  try {
    graph.start();
    FAIL() << "a cyclic graph started";
  } catch (const std::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("cycle"), std::string::npos);
  }
  EXPECT_TRUE(log_.empty()) << "nothing may run";
  EXPECT_TRUE(graph.test().is_retry());
}

TEST_F(GraphTest, BadEdgesAreInvalidArguments) {
  graph_impl_t graph(nullptr);
  graph_impl_t other(nullptr);
  graph_node_t a = add(graph, "a");
  graph_node_t foreign = add(other, "foreign");
  EXPECT_THROW(graph.add_edge(a, a, nullptr), std::invalid_argument);
  EXPECT_THROW(graph.add_edge(GRAPH_END, a, nullptr), std::invalid_argument);
  EXPECT_THROW(graph.add_edge(a, GRAPH_START, nullptr), std::invalid_argument);
  EXPECT_THROW(graph.add_edge(a, nullptr, nullptr), std::invalid_argument);
  EXPECT_THROW(graph.add_edge(nullptr, a, nullptr), std::invalid_argument);
  EXPECT_THROW(graph.add_edge(a, foreign, nullptr), std::invalid_argument);
  EXPECT_THROW(graph.add_edge(foreign, a, nullptr), std::invalid_argument);
  // None of them was added: a runs at once.
  graph.start();
  EXPECT_TRUE(graph.test().is_done());
}

// The limits are inclusive: a graph holds exactly nodes_count_max nodes, and
// the next add_node throws std::length_error. (The node limit costs about a
// hundred bytes a node: some 100 MiB.)
TEST_F(GraphTest, AGraphHoldsExactlyNodesCountMaxNodes) {
  graph_impl_t graph(nullptr);
  for (std::size_t i = 0; i < graph_impl_t::nodes_count_max; ++i) {
    (void)graph.add_node(nullptr, nullptr, nullptr);
  }
  EXPECT_THROW((void)graph.add_node(nullptr, nullptr, nullptr),
               std::length_error);
}

// As above for edges_count_max edges (GRAPH_START -> GRAPH_END, 16 bytes
// each: 256 MiB).
TEST_F(GraphTest, AGraphHoldsExactlyEdgesCountMaxEdges) {
  graph_impl_t graph(nullptr);
  for (std::size_t i = 0; i < graph_impl_t::edges_count_max; ++i) {
    graph.add_edge(GRAPH_START, GRAPH_END, nullptr);
  }
  EXPECT_THROW(graph.add_edge(GRAPH_START, GRAPH_END, nullptr),
               std::length_error);
  graph.start();  // every edge runs at start, and the round ends at once
  EXPECT_TRUE(graph.test().is_done());
}

// a -> b (throws) -> c, and d alone: start() throws b's exception after the
// round ran as far as it can (c skipped, d run), the round ends failed, and
// the graph can be started again once b stops throwing.
TEST_F(GraphTest, NodeThatThrowsFailsTheRoundAndStartThrowsIt) {
  status_log_t on_complete;
  graph_impl_t graph(&on_complete);
  graph_node_t a = add(graph, "a");
  node_value_t* b_value = value("b");
  b_value->throws = true;
  graph_node_t b = graph.add_node(run_node, b_value, free_node);
  graph_node_t c = add(graph, "c");
  add(graph, "d");
  graph.add_edge(a, b, log_edge);
  graph.add_edge(b, c, log_edge);
  graph.add_edge(b, GRAPH_END, log_edge);
  EXPECT_EQ(thrown_by([&] { graph.start(); }), "node b failed");
  EXPECT_EQ(take_log(), (log_t{"run a", "edge a>b 0", "run d", "run b"}))
      << "c is skipped, and no edge fn out of b runs";
  ASSERT_EQ(on_complete.statuses.size(), 1u);
  EXPECT_EQ(on_complete.statuses[0].error, errorcode_t::fatal);
  EXPECT_TRUE(graph.test().is_done()) << "already thrown by start()";
  EXPECT_TRUE(graph.test().is_retry());

  b_value->throws = false;
  graph.start();
  EXPECT_EQ(take_log(), (log_t{"run a", "edge a>b 0", "run d", "run b",
                               "edge b>c 0", "edge b>null 0", "run c"}));
  ASSERT_EQ(on_complete.statuses.size(), 2u);
  EXPECT_EQ(on_complete.statuses[1].error, errorcode_t::done);
  EXPECT_TRUE(graph.test().is_done());
}

// A node run by signal() (inside progress) that throws: signal() does not
// throw; the test() that consumes the round's end throws it, once.
TEST_F(GraphTest, NodeThatThrowsInSignalIsThrownByTest) {
  status_log_t on_complete;
  graph_impl_t graph(&on_complete);
  graph_node_t a = add(graph, "a", errorcode_t::posted);
  node_value_t* b_value = value("b");
  b_value->throws = true;
  graph_node_t b = graph.add_node(run_node, b_value, nullptr);
  graph_node_t c = add(graph, "c", errorcode_t::posted);
  graph_node_t d = add(graph, "d");
  graph.add_edge(a, b, nullptr);
  graph.add_edge(b, d, nullptr);
  graph.add_edge(c, d, nullptr);
  graph.start();
  EXPECT_EQ(thrown_by([&] { graph.signal(completion(a, 0)); }), "nothing");
  EXPECT_TRUE(graph.test().is_retry()) << "c is still in flight";
  EXPECT_TRUE(on_complete.statuses.empty());
  graph.signal(completion(c, 0));
  EXPECT_EQ(take_log(), (log_t{"run a", "run c", "run b"})) << "d skipped";
  ASSERT_EQ(on_complete.statuses.size(), 1u);
  EXPECT_EQ(on_complete.statuses[0].error, errorcode_t::fatal);
  EXPECT_EQ(thrown_by([&] { (void)graph.test(); }), "node b failed");
  EXPECT_TRUE(graph.test().is_retry()) << "the round was consumed";

  b_value->throws = false;
  graph.start();
  graph.signal(completion(a, 0));
  graph.signal(completion(c, 0));
  EXPECT_EQ(take_log(), (log_t{"run a", "run c", "run b", "run d"}));
  EXPECT_TRUE(graph.test().is_done());
}

// A retry node that throws when test() re-runs it: that test() throws.
TEST_F(GraphTest, RetryNodeThatThrowsIsThrownByTheTestThatRanIt) {
  graph_impl_t graph(nullptr);
  node_value_t* a_value = value("a");
  a_value->retries_left = 1;
  a_value->throws = true;
  graph_node_t a = graph.add_node(run_node, a_value, nullptr);
  graph_node_t b = add(graph, "b");
  graph.add_edge(a, b, nullptr);
  graph.start();
  EXPECT_EQ(thrown_by([&] { (void)graph.test(); }), "node a failed");
  EXPECT_EQ(take_log(), (log_t{"run a", "run a"})) << "b skipped";
  EXPECT_TRUE(graph.test().is_retry()) << "thrown once, the round consumed";
}

// An edge fn that throws skips the edge's target only; a second exception
// in the same call is dropped (the first is thrown).
TEST_F(GraphTest, EdgeFnThatThrowsSkipsItsTarget) {
  graph_impl_t graph(nullptr);
  graph_node_t a = add(graph, "a");
  graph_node_t b = add(graph, "b");
  graph_node_t c = add(graph, "c");
  graph.add_edge(GRAPH_START, a, throw_edge);
  graph.add_edge(b, c, throw_edge);
  EXPECT_EQ(thrown_by([&] { graph.start(); }), "edge null>a failed");
  EXPECT_EQ(take_log(), (log_t{"throw null>a", "run b", "throw b>c"}));
  EXPECT_TRUE(graph.test().is_done());
}

// A runtime's teardown drops a round its closed devices can no longer
// complete: a posted node and a node in the retry list leave the graph
// destructible, and every free_cb still runs.
TEST_F(GraphTest, AnAbandonedRoundIsDestructible) {
  node_value_t* posted = value("posted", errorcode_t::posted);
  node_value_t* retrying = value("retrying");
  retrying->retries_left = 1;
  {
    graph_impl_t graph(nullptr);
    EXPECT_FALSE(graph.round_in_flight()) << "not started";
    (void)graph.add_node(run_node, posted, free_node);
    (void)graph.add_node(run_node, retrying, free_node);
    graph.start();
    EXPECT_TRUE(graph.round_in_flight());
    graph.abandon_round();
    EXPECT_FALSE(graph.round_in_flight());
  }
  EXPECT_EQ(take_log(), (log_t{"run posted", "run retrying"}));
  EXPECT_EQ(posted->freed_count, 1);
  EXPECT_EQ(retrying->freed_count, 1);
}

TEST_F(GraphTest, ACompletedRoundIsNotInFlight) {
  graph_impl_t graph(nullptr);
  graph_node_t a = add(graph, "a", errorcode_t::posted);
  graph.start();
  EXPECT_TRUE(graph.round_in_flight());
  graph.signal(completion(a, 0));
  EXPECT_FALSE(graph.round_in_flight());
  EXPECT_TRUE(graph.test().is_done());
}

using GraphDeathTest = GraphTest;

TEST_F(GraphDeathTest, CompletingANodeTwiceAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        graph_impl_t graph(nullptr);
        graph_node_t a = add(graph, "a", errorcode_t::posted);
        add(graph, "b", errorcode_t::posted);
        graph.start();
        graph.signal(completion(a, 0));
        graph.signal(completion(a, 0));
      },
      "completed while not running");
}

TEST_F(GraphDeathTest, CompletingANodeThatDidNotRunAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        graph_impl_t graph(nullptr);
        graph_node_t a = add(graph, "a", errorcode_t::posted);
        graph_node_t b = add(graph, "b");
        graph.add_edge(a, b, nullptr);
        graph.start();
        graph.mark_complete(b, completion(b, 0));
      },
      "completed while not running");
}

TEST_F(GraphDeathTest, DestroyingWithAnOperationInFlightAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        graph_impl_t graph(nullptr);
        add(graph, "a", errorcode_t::posted);
        graph.start();
      },
      "in flight");
}

}  // namespace
