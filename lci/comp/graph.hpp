// graph_impl_t: the completion graph (paper §3.2, §4.1.4): a DAG of nodes,
// each a user function (usually posting one operation), run in a partial
// order: a node runs once all its predecessors completed, on the thread that
// completed the last of them. The whole graph can be run again (rounds).
//
// Nodes and edges:
//   add_node(fn, value, free_cb): fn(value) runs the node. Its status says
//     done (the node completed at once), posted (the node completes when
//     its operation signals the graph, see below) or retry (nothing
//     happened: the node goes to the retry list, which test() re-runs).
//     fn == nullptr: a no-op node that completes at once (status done).
//   add_edge(src, dst, fn): dst runs after src completed. fn (may be
//     nullptr) runs when src completes, before dst can run, with src's
//     status, src's value and dst's value.
//   GRAPH_START as src: a virtual node that completes when start() is
//     called (status done, value nullptr); its edges run their fn in start().
//     Nodes without any incoming edge are started by start() too, so an
//     edge from GRAPH_START only orders (and adds its fn).
//   GRAPH_END as dst: a virtual node after every node; the fn of an edge to
//     it runs when src completes (dst value nullptr). The graph completes
//     when every node has completed, whatever edges reach GRAPH_END.
//   A node's posted operation completes by signal(status) with
//   status.user_context == the node (graph_add_node_op sets it), or by
//   mark_complete(node, status); either completes the node with status.
//
// Lifecycle (an invalid cell throws std::logic_error, or aborts where
// marked):
//   state \ call   add_node/edge  start()        test()          destroy
//   building       ok             -> running     retry           ok
//   running        logic_error    logic_error    retry, or done  abort: a
//                                                -> idle if it   node is in
//                                                ends the round  flight (**)
//   complete       logic_error    -> running     done* -> idle   ok
//   idle           logic_error    -> running     retry           ok
// (*: a failed round's test() throws instead, see below. **: free_comp
// checks round_in_flight() first and throws std::logic_error; a runtime's
// teardown, after closing its devices, calls abandon_round().)
// start() on a building graph checks it is acyclic (std::logic_error
// otherwise) and freezes it. A round ends on the thread that completes its
// last node: in start() (every node completed at once), in signal() /
// mark_complete(), or in a test() whose re-run of a retry node finished it
// (that test() returns done and the state goes straight to idle; otherwise
// to complete). That thread stores the state and then signals on_complete
// (if not null) once, with status done, as its last touch of the graph, so
// on_complete may free the graph if nobody else still calls into it.
// test() returns done exactly once per round; start() may also follow
// `complete` directly (a user who waits on on_complete instead of test()).
// Retry nodes are re-run only by test(): a graph whose nodes may return
// retry must be polled with test() even when on_complete is used.
//
// A node or edge fn that throws fails the round, which still runs to its
// end so the graph stays destructible and restartable: the throwing node
// (or an edge fn's target) counts as completed without success, every node
// downstream of it is skipped (its fn and the edge fns out of it do not
// run; it just completes), other nodes run as usual, and on_complete is
// signalled with errorcode_t::fatal instead of done. The exception
// propagates from start() or test() when a fn they ran threw (after the
// call finished its bookkeeping; the first exception of the call, others
// are dropped). signal() and mark_complete() never throw it (they run
// inside progress()): the round keeps its first such exception and the
// test() that consumes the round's end throws it instead of returning
// done. After that, or after the round ended in a start() that threw, the
// graph may be destroyed or started again (a new round forgets the
// failure). A user who waits on on_complete without test() sees only the
// fatal status.
//
// Thread safety: add_node/add_edge/start are called by one thread at a time
//                and never concurrently with each other; the destructor
//                never concurrently with anything. signal/mark_complete/test
//                may run concurrently from any threads, and with start().
// Blocking:      runs user code (node and edge fns, on_complete) on the
//                calling thread; graph code itself only takes the retry
//                list's spinlock (every test(), and a retry result) for a
//                few pointer writes (and a failure's record).
// Ownership:     values stay the user's; free_cb(value) runs for each node
//                in the destructor. Statuses are passed by value.
// Allocation:    add_node/add_edge and the first start() (cycle check);
//                never while a round runs.
// Limits:        nodes_count_max nodes and edges_count_max edges
//                (std::length_error beyond).
// Progress:      no graph code waits for another thread except on the retry
//                lock. A completion decrements each successor's counter once
//                and runs the successors it made ready from a local FIFO (in
//                the order their edges were added); each node is ready once
//                a round, so the worklist is bounded by the node count.
// Linearization: a node completes at its phase CAS in complete_node(); a
//                round ends at the decrement of its last unit; test()
//                returns done at the state CAS (or store) that consumes it.
// Details: docs/design/comp.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "lci/api/lci_types.hpp"
#include "lci/comp/comp_impl.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::detail {

class graph_impl_t final : public comp_impl_t {
 public:
  static constexpr std::size_t nodes_count_max = std::size_t{1} << 20;
  static constexpr std::size_t edges_count_max = std::size_t{1} << 24;

  explicit graph_impl_t(comp_impl_t* on_complete);  // on_complete: nullable
  ~graph_impl_t() override;                         // runs every node's free_cb

  [[nodiscard]] graph_node_t add_node(graph_node_run_cb_t fn, void* value,
                                      graph_node_free_cb_t free_cb);
  void add_edge(graph_node_t src, graph_node_t dst, graph_edge_run_cb_t fn);
  void start();
  // done once every node of the round completed (then the graph is idle and
  // may be started again); retry otherwise. Re-runs the retry list first.
  [[nodiscard]] status_t test();
  // Completes a node whose fn returned posted (status.user_context is not
  // used). Aborts if the node is not running in this round.
  void mark_complete(graph_node_t node, status_t status);
  // mark_complete(status.user_context, status).
  void signal(status_t status) override;

  // A node's operation is in flight or waits in the retry list: destroying
  // the graph now would leave that operation a dangling completion object
  // (free_comp refuses, with std::logic_error). Not concurrently with
  // start().
  bool round_in_flight() const;
  // Teardown of a runtime whose devices are closed: no operation can signal
  // the graph any more, so a round left in flight is dropped (its nodes
  // count as never run) and the graph becomes destructible.
  void abandon_round();

  // The graph a node handle belongs to (for graph_node_mark_complete(node),
  // which names no graph).
  static graph_impl_t* graph_of(graph_node_t node);
  std::size_t nodes_count() const { return nodes_.size(); }

 private:
  enum state_t : std::uint8_t {
    state_building,
    state_running,
    state_complete,
    state_idle
  };
  // Per round: waiting -> running (fn called) -> completed; retrying while
  // in the retry list.
  enum phase_t : std::uint8_t {
    phase_waiting,
    phase_running,
    phase_retrying,
    phase_completed
  };

  struct node_t;
  struct edge_t {
    node_t* target;  // nullptr: GRAPH_END
    graph_edge_run_cb_t fn;
  };
  // One line per node: the counter and the phase are written by different
  // threads (predecessors' completers, then the node's own), never at the
  // same time, and never as another node's fields are.
  struct alignas(util::cache_line_bytes) node_t {
    util::atomic<int> predecessors_pending{0};        // this round
    util::atomic<std::uint8_t> phase{phase_waiting};  // a phase_t
    // This round, a predecessor (or the edge fn from it) failed: the node is
    // skipped. Set before that predecessor releases the node.
    util::atomic<bool> predecessor_failed{false};
    // The one worklist the node is on: a thread's ready list or the retry
    // list. Written only by the thread that put it there.
    node_t* next = nullptr;
    graph_impl_t* graph = nullptr;
    graph_node_run_cb_t fn = nullptr;
    void* value = nullptr;
    graph_node_free_cb_t free_cb = nullptr;
    int predecessors_count = 0;  // incoming edges, GRAPH_START's included
    std::size_t index = 0;       // in nodes_
    std::vector<edge_t> successors;
  };
  static_assert(alignof(node_t) == util::cache_line_bytes,
                "nodes completed by different threads on separate lines");

  // A FIFO of nodes linked through node_t::next: a thread's local list of
  // nodes ready to run, or the retry list. A node is on at most one list.
  struct node_list_t {
    node_t* head = nullptr;
    node_t* tail = nullptr;

    bool empty() const { return head == nullptr; }
    void push_back(node_t* node);
    node_t* pop_front();
  };

  static node_t* node_of(graph_node_t handle);
  node_t* checked_node(graph_node_t handle, const char* what) const;
  void check_building(const char* operation) const;
  void check_acyclic() const;
  void arm_round();
  // The helpers below return true when the call finished the round's last
  // unit; the outermost caller then calls complete_round(), and touches the
  // graph no more.
  // caught: where a start()/test() keeps the first exception of a fn it ran
  // (nullptr in signal()/mark_complete(), which never throw it).
  bool run_ready(node_list_t& ready, std::exception_ptr* caught);
  bool complete_node(node_t* node, const status_t& status, node_list_t& ready,
                     std::exception_ptr* caught);
  bool fail_node(node_t* node, node_list_t& ready);
  void run_edge(const edge_t& edge, const status_t& status, void* src_value,
                std::exception_ptr* caught);
  void note_failure(std::exception_ptr exception, std::exception_ptr* caught);
  std::exception_ptr take_unthrown_failure_locked();
  void release_successor(node_t* target, node_list_t& ready);
  bool finish_unit();
  void complete_round(state_t next);
  void push_retry(node_t* node);
  node_list_t take_retries();

  struct alignas(util::cache_line_bytes) round_t {
    // Units still to finish this round: every node, plus GRAPH_START's (held
    // by start() until it has released everything it starts).
    util::atomic<std::int64_t> pending_units{0};
  };
  static_assert(alignof(round_t) == util::cache_line_bytes &&
                    sizeof(round_t) % util::cache_line_bytes == 0,
                "every completion decrements it: its own cache line");

  round_t round_;
  // Written by start(), the round's last completer and test(): a state_t.
  alignas(util::cache_line_bytes) util::atomic<std::uint8_t> state_{
      state_building};
  // Guards the retry list and the round's failure record.
  alignas(util::cache_line_bytes) util::spinlock_t retry_lock_;
  node_list_t retries_;  // guarded by retry_lock_
  // The round's first exception (null: the round has not failed), and
  // whether a start()/test() already threw it. Guarded by retry_lock_.
  std::exception_ptr failure_;
  bool failure_thrown_ = false;
  // Fixed once started:
  alignas(util::cache_line_bytes) comp_impl_t* const on_complete_;
  std::vector<std::unique_ptr<node_t>> nodes_;
  std::vector<edge_t> start_edges_;  // GRAPH_START's
  std::size_t edges_count_ = 0;
};

}  // namespace lci::detail
