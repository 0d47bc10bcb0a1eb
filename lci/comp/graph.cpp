// The completion graph: building and checking the DAG, and running its
// rounds with per-node counters of unfinished predecessors (paper §4.1.4).
// Semantics and the lifecycle table are in graph.hpp; the orders in
// docs/design/comp.md.
#include "lci/comp/graph.hpp"

#include <exception>
#include <stdexcept>
#include <string>

#include "lci/util/assert.hpp"
#include "lci/util/mutation.hpp"

namespace lci::detail {

graph_impl_t::graph_impl_t(comp_impl_t* on_complete)
    : comp_impl_t(comp_kind_t::graph), on_complete_(on_complete) {}

graph_impl_t::~graph_impl_t() {
  for (const auto& node : nodes_) {
    // relaxed: teardown, after the round by the owner's contract.
    const std::uint8_t phase = node->phase.load(util::mo_relaxed);
    LCI_ASSERT(phase != phase_running,
               "graph destroyed while a node's operation is in flight");
    LCI_ASSERT(phase != phase_retrying,
               "graph destroyed while a node waits in its retry list");
  }
  for (const auto& node : nodes_) {
    if (node->free_cb != nullptr) node->free_cb(node->value);
  }
}

bool graph_impl_t::round_in_flight() const {
  for (const auto& node : nodes_) {
    // relaxed: a snapshot for a caller that owns the graph's lifetime; a
    // node that starts running meanwhile needs a start() or a completion
    // of the caller's own round, which the contract excludes.
    const std::uint8_t phase = node->phase.load(util::mo_relaxed);
    if (phase == phase_running || phase == phase_retrying) return true;
  }
  return false;
}

void graph_impl_t::abandon_round() {
  {
    util::spinlock_guard_t guard(retry_lock_);
    retries_ = node_list_t{};
  }
  for (const auto& node : nodes_) {
    // relaxed: teardown; nothing signals the graph any more.
    node->phase.store(phase_waiting, util::mo_relaxed);
  }
  state_.store(state_idle, util::mo_relaxed);  // relaxed: as above
}

graph_node_t graph_impl_t::add_node(graph_node_run_cb_t fn, void* value,
                                    graph_node_free_cb_t free_cb) {
  check_building("graph_add_node");
  if (nodes_.size() >= nodes_count_max) {
    throw std::length_error("graph_add_node: a graph holds at most " +
                            std::to_string(nodes_count_max) + " nodes");
  }
  auto node = std::make_unique<node_t>();
  node->graph = this;
  node->fn = fn;
  node->value = value;
  node->free_cb = free_cb;
  node->index = nodes_.size();
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

void graph_impl_t::add_edge(graph_node_t src, graph_node_t dst,
                            graph_edge_run_cb_t fn) {
  check_building("graph_add_edge");
  if (src == GRAPH_END) {
    throw std::invalid_argument("graph_add_edge: src must not be GRAPH_END");
  }
  if (dst == GRAPH_START) {
    throw std::invalid_argument("graph_add_edge: dst must not be GRAPH_START");
  }
  if (edges_count_ >= edges_count_max) {
    throw std::length_error("graph_add_edge: a graph holds at most " +
                            std::to_string(edges_count_max) + " edges");
  }
  node_t* source = src == GRAPH_START ? nullptr : checked_node(src, "src");
  node_t* target = dst == GRAPH_END ? nullptr : checked_node(dst, "dst");
  if (source != nullptr && source == target) {
    throw std::invalid_argument(
        "graph_add_edge: an edge from a node to itself is a cycle");
  }
  (source != nullptr ? source->successors : start_edges_)
      .push_back({target, fn});
  if (target != nullptr) ++target->predecessors_count;
  ++edges_count_;
}

void graph_impl_t::start() {
  // acquire: pairs with the release in complete_round() or test() that
  // ended the previous round, so arm_round() follows all of it.
  // Equivalent mutants: mo_weaken (as long as the CAS below stays acquire).
  // That CAS reads the newest state, stored by complete_round() (release)
  // or by test()'s CAS, which is in that store's release sequence, so its
  // acquire alone orders arm_round() after the round. Nothing before it
  // reads what another thread wrote (check_acyclic() reads this thread's
  // building). One of the two acquires is needed.
  std::uint8_t state = state_.load(util::mo_acquire);
  if (state == state_building) check_acyclic();
  // At most two laps: only test() changes the state under us (complete ->
  // idle), and only once.
  for (;;) {
    if (state == state_running) {
      throw std::logic_error(
          "graph_start: the graph is running; start it again after "
          "graph_test returned done or its completion object was signalled");
    }
    // acquire: as above; relaxed on failure: we look at the state again.
    // Equivalent mutants: cas_weak, mo_weaken (the latter as long as the
    // load above stays acquire). A spurious failure hands back the state,
    // which is not running (only start() stores that, and no other start()
    // runs), so the loop tries again. Relaxed, the CAS still follows the
    // round: the load above synchronized with complete_round() (directly,
    // or through test()'s CAS in its release sequence), and what test() did
    // after its CAS, under the retry lock, is ordered by arm_round()'s
    // taking that lock.
    if (state_.compare_exchange_strong(state, state_running, util::mo_acquire,
                                       util::mo_relaxed)) {
      break;
    }
  }
  arm_round();
  std::exception_ptr caught;
  node_list_t ready;
  for (const edge_t& edge : start_edges_) {
    run_edge(edge, status_t(errorcode_t::done), nullptr, &caught);
    if (edge.target != nullptr) release_successor(edge.target, ready);
  }
  for (const auto& node : nodes_) {
    if (node->predecessors_count == 0) ready.push_back(node.get());
  }
  // GRAPH_START's unit keeps the round open, so these runs cannot end it.
  const bool ended_early = run_ready(ready, &caught);
  LCI_ASSERT(!ended_early, "graph round ended while start() held a unit");
  if (finish_unit()) complete_round(state_complete);
  // The round is consistent (it ends without this call), so the user's
  // exception may leave now; `caught` is ours, not the graph's.
  if (caught != nullptr) std::rethrow_exception(caught);
}

status_t graph_impl_t::test() {
  node_list_t retries = take_retries();
  std::exception_ptr caught;
  if (run_ready(retries, &caught)) {
    // This call completed the round: it is consumed here, and the graph
    // must not be touched after complete_round() (see graph.hpp).
    std::exception_ptr unthrown;
    {
      util::spinlock_guard_t guard(retry_lock_);
      unthrown = take_unthrown_failure_locked();
    }
    complete_round(state_idle);
    if (caught != nullptr) std::rethrow_exception(caught);
    if (unthrown != nullptr) std::rethrow_exception(unthrown);
    return status_t(errorcode_t::done);
  }
  if (caught != nullptr) std::rethrow_exception(caught);
  // acquire: pairs with the release in complete_round(), so the caller sees
  // everything the round's nodes did.
  std::uint8_t state = state_.load(util::mo_acquire);
  if (state != state_complete) return status_t(errorcode_t::retry);
  // (Broken variant, tests/comp: reports the completion without consuming
  // it, so every later test() is done too.)
  if (util::mutated("graph_test_keeps_completion")) {
    return status_t(errorcode_t::done);
  }
  std::exception_ptr unthrown;
  {
    // Under the lock, so the next round's arm_round() (which takes it
    // after its start() left complete/idle) cannot clear the failure
    // between consuming the round and reading its failure.
    util::spinlock_guard_t guard(retry_lock_);
    // release: pairs with the acquire in start(), ordering this call before
    // the next round. relaxed on failure: a start() or another test() took
    // the completion.
    // Equivalent mutants: mo_weaken (stronger than needed). The CAS is a
    // read-modify-write in the release sequence of complete_round()'s
    // store, so a start() that acquires `idle` from it synchronizes with
    // complete_round() anyway; what this call did before (nodes it ran from
    // the retry list) finished before the round ended, and what it does
    // after is under the retry lock, which arm_round() takes.
    if (!state_.compare_exchange_strong(state, state_idle, util::mo_release,
                                        util::mo_relaxed)) {
      return status_t(errorcode_t::retry);
    }
    unthrown = take_unthrown_failure_locked();
  }
  if (unthrown != nullptr) std::rethrow_exception(unthrown);
  return status_t(errorcode_t::done);
}

void graph_impl_t::mark_complete(graph_node_t handle, status_t status) {
  node_t* node = node_of(handle);
  LCI_ASSERT(node->graph == this,
             "graph_node_mark_complete: the node belongs to another graph");
  node_list_t ready;
  // No `caught`: a fn's exception is kept for test() (see graph.hpp).
  const bool ended_by_node = complete_node(node, status, ready, nullptr);
  LCI_DEBUG_ASSERT(!ended_by_node || ready.empty(),
                   "graph round ended with nodes still ready to run");
  const bool ended_by_successors = run_ready(ready, nullptr);
  if (ended_by_node || ended_by_successors) complete_round(state_complete);
}

void graph_impl_t::signal(status_t status) {
  mark_complete(status.user_context, status);
}

graph_impl_t* graph_impl_t::graph_of(graph_node_t handle) {
  return node_of(handle)->graph;
}

graph_impl_t::node_t* graph_impl_t::node_of(graph_node_t handle) {
  LCI_ASSERT(handle != nullptr, "null graph node");
  LCI_ASSERT(handle != GRAPH_START && handle != GRAPH_END,
             "GRAPH_START and GRAPH_END are not nodes that complete");
  return static_cast<node_t*>(handle);
}

graph_impl_t::node_t* graph_impl_t::checked_node(graph_node_t handle,
                                                 const char* what) const {
  if (handle == nullptr) {
    throw std::invalid_argument(std::string("graph_add_edge: ") + what +
                                " is a null node");
  }
  auto* node = static_cast<node_t*>(handle);
  if (node->graph != this) {
    throw std::invalid_argument(std::string("graph_add_edge: ") + what +
                                " is a node of another graph");
  }
  return node;
}

void graph_impl_t::check_building(const char* operation) const {
  // relaxed: building is single-threaded (see graph.hpp); this thread's own
  // start() wrote any other state.
  if (state_.load(util::mo_relaxed) != state_building) {
    throw std::logic_error(std::string(operation) +
                           ": the graph was already started; add nodes and "
                           "edges before the first graph_start");
  }
}

// Kahn's algorithm, once, at the first start(): every node must become
// ready, or the graph would never complete.
void graph_impl_t::check_acyclic() const {
  std::vector<int> pending(nodes_.size());
  for (const auto& node : nodes_)
    pending[node->index] = node->predecessors_count;
  std::vector<const node_t*> ready;
  auto release = [&](const edge_t& edge) {
    if (edge.target != nullptr && --pending[edge.target->index] == 0) {
      ready.push_back(edge.target);
    }
  };
  for (const edge_t& edge : start_edges_) release(edge);
  for (const auto& node : nodes_) {
    if (node->predecessors_count == 0) ready.push_back(node.get());
  }
  std::size_t reached_count = 0;
  // Ends: each node is pushed once, when its count reaches zero.
  while (!ready.empty()) {
    const node_t* node = ready.back();
    ready.pop_back();
    ++reached_count;
    for (const edge_t& edge : node->successors) release(edge);
  }
  if (reached_count != nodes_.size()) {
    throw std::logic_error("graph_start: the graph has a cycle (" +
                           std::to_string(nodes_.size() - reached_count) +
                           " of " + std::to_string(nodes_.size()) +
                           " nodes can never run)");
  }
}

void graph_impl_t::arm_round() {
  // relaxed: the round's nodes are touched only after these stores, here or
  // on threads that start() hands work to (a posted operation, a
  // predecessor's completion), which carries happens-before.
  round_.pending_units.store(static_cast<std::int64_t>(nodes_.size()) + 1,
                             util::mo_relaxed);
  for (const auto& node : nodes_) {
    LCI_DEBUG_ASSERT(node->next == nullptr, "graph node still on a list");
    // relaxed: as above.
    node->predecessors_pending.store(node->predecessors_count,
                                     util::mo_relaxed);
    node->phase.store(phase_waiting, util::mo_relaxed);  // relaxed: as above
    node->predecessor_failed.store(false, util::mo_relaxed);  // as above
  }
  util::spinlock_guard_t guard(retry_lock_);
  failure_ = nullptr;  // the previous round's, consumed or not
  failure_thrown_ = false;
}

// Runs every node on the ready list, and those their completions make ready
// (appended, so they run in the order their edges were added). Ends: a node
// goes on a ready list at most once per run (by its last predecessor, by
// start(), or by take_retries()), and each lap takes one off.
bool graph_impl_t::run_ready(node_list_t& ready, std::exception_ptr* caught) {
  bool ended = false;
  while (!ready.empty()) {
    node_t* node = ready.pop_front();
    // relaxed: whoever completes a posted node does so after fn posted its
    // operation, after this store (the runtime carries that order).
    node->phase.store(phase_running, util::mo_relaxed);
    // relaxed: stored before the predecessor's acq_rel release that made
    // the node ready (release_successor()).
    if (node->predecessor_failed.load(util::mo_relaxed)) {
      if (fail_node(node, ready)) ended = true;
      continue;
    }
    status_t status(errorcode_t::done);
    try {
      if (node->fn != nullptr) status = node->fn(node->value);
    } catch (...) {
      note_failure(std::current_exception(), caught);
      if (fail_node(node, ready)) ended = true;
      continue;
    }
    // posted: the node (maybe the graph) belongs to the operation's
    // completion now; do not touch it.
    if (status.is_done()) {
      if (complete_node(node, status, ready, caught)) ended = true;
    } else if (status.is_retry()) {
      push_retry(node);
    } else {
      LCI_ASSERT(status.is_posted(),
                 "graph node fn returned neither done, posted nor retry");
    }
  }
  return ended;
}

bool graph_impl_t::complete_node(node_t* node, const status_t& status,
                                 node_list_t& ready,
                                 std::exception_ptr* caught) {
  std::uint8_t expected = phase_running;
  // relaxed: only detects a second completion, or one of a node that is not
  // running; the completion is published by the acq_rel counters below.
  const bool was_running = node->phase.compare_exchange_strong(
      expected, phase_completed, util::mo_relaxed, util::mo_relaxed);
  LCI_ASSERT(was_running,
             "graph node completed while not running (completed twice, or "
             "before its predecessors completed)");
  for (const edge_t& edge : node->successors) {
    run_edge(edge, status, node->value, caught);
    if (edge.target != nullptr) release_successor(edge.target, ready);
  }
  return finish_unit();
}

// A node whose fn threw, or one downstream of such a node: completes it
// without running anything of the user's and skips its successors.
bool graph_impl_t::fail_node(node_t* node, node_list_t& ready) {
  // relaxed: as in complete_node().
  const std::uint8_t phase = node->phase.exchange(phase_completed,
                                                  util::mo_relaxed);
  LCI_ASSERT(phase == phase_running, "graph node failed while not running");
  for (const edge_t& edge : node->successors) {
    if (edge.target == nullptr) continue;
    // relaxed: release_successor()'s acq_rel decrement publishes it.
    edge.target->predecessor_failed.store(true, util::mo_relaxed);
    release_successor(edge.target, ready);
  }
  return finish_unit();
}

// Runs an edge's fn (if any); one that throws fails the edge's target.
void graph_impl_t::run_edge(const edge_t& edge, const status_t& status,
                            void* src_value, std::exception_ptr* caught) {
  if (edge.fn == nullptr) return;
  try {
    edge.fn(status, src_value,
            edge.target != nullptr ? edge.target->value : nullptr);
  } catch (...) {
    note_failure(std::current_exception(), caught);
    if (edge.target != nullptr) {
      // relaxed: the caller's release_successor() publishes it.
      edge.target->predecessor_failed.store(true, util::mo_relaxed);
    }
  }
}

// Records a fn's exception: the round's first is kept, and a start()/test()
// (caught != nullptr) keeps its own first to throw it when it returns.
void graph_impl_t::note_failure(std::exception_ptr exception,
                                std::exception_ptr* caught) {
  LCI_ASSERT(exception != nullptr, "graph failure without an exception");
  const bool caller_throws = caught != nullptr && *caught == nullptr;
  if (caller_throws) *caught = exception;
  util::spinlock_guard_t guard(retry_lock_);
  if (failure_ != nullptr) return;
  failure_ = std::move(exception);
  failure_thrown_ = caller_throws;
}

// The round's failure if no start()/test() threw it yet, now marked thrown.
// The caller holds retry_lock_.
std::exception_ptr graph_impl_t::take_unthrown_failure_locked() {
  if (failure_ == nullptr || failure_thrown_) return nullptr;
  failure_thrown_ = true;
  return failure_;
}

void graph_impl_t::release_successor(node_t* target, node_list_t& ready) {
  // acq_rel: the release publishes this predecessor's work (its fn, its edge
  // fns); the decrement that reads 1 acquires every predecessor's, so the
  // target runs after all of them.
  const int before =
      target->predecessors_pending.fetch_sub(1, util::mo_acq_rel);
  LCI_ASSERT(before >= 1,
             "graph node released by more predecessors than it has");
  // (Broken variant, tests/comp: ready once its first predecessor is done.)
  const int ready_at = util::mutated("graph_ready_after_first_predecessor")
                           ? target->predecessors_count
                           : 1;
  if (before == ready_at) ready.push_back(target);
}

bool graph_impl_t::finish_unit() {
  // acq_rel: the release publishes this unit's work; the decrement that ends
  // the round acquires every unit's, and complete_round() passes it on.
  const std::int64_t before =
      round_.pending_units.fetch_sub(1, util::mo_acq_rel);
  LCI_ASSERT(before >= 1, "graph round finished more units than it has");
  return before == 1;
}

void graph_impl_t::complete_round(state_t next) {
  // Read first: once the state is stored the graph may be started again, or
  // freed by whoever waits for it.
  comp_impl_t* const on_complete = on_complete_;
  bool failed = false;
  {
    util::spinlock_guard_t guard(retry_lock_);
    failed = failure_ != nullptr;
  }
  // relaxed: finish_unit() acquired start()'s unit, which followed its
  // store of state_running.
  LCI_DEBUG_ASSERT(state_.load(util::mo_relaxed) == state_running,
                   "graph round completed while not running");
  // release: pairs with the acquire in test() and start(), handing them
  // the whole round (acquired by finish_unit()).
  // Equivalent mutants: mo_weaken (stronger than needed while the lock
  // above is taken). This thread took retry_lock_ after acquiring the whole
  // round and before this store; a test() that reads the end takes that
  // lock before it answers done (the consuming CAS). A start() comes after
  // such a test() or after on_complete's signal below, whose completion
  // object orders this thread before its waiter. So the round is ordered
  // before either without this release.
  // //tests/comp:graph_publication_test passes under TSan with it relaxed.
  state_.store(next, util::mo_release);
  if (on_complete != nullptr) {
    on_complete->signal(
        status_t(failed ? errorcode_t::fatal : errorcode_t::done));
  }
}

void graph_impl_t::push_retry(node_t* node) {
  util::spinlock_guard_t guard(retry_lock_);
  // relaxed: read only by complete_node()'s misuse check; the re-run after
  // take_retries() is ordered by the lock.
  node->phase.store(phase_retrying, util::mo_relaxed);
  retries_.push_back(node);
}

// The whole retry list, in FIFO order, as a ready list.
graph_impl_t::node_list_t graph_impl_t::take_retries() {
  util::spinlock_guard_t guard(retry_lock_);
  node_list_t taken = retries_;
  retries_ = node_list_t{};
  return taken;
}

void graph_impl_t::node_list_t::push_back(node_t* node) {
  LCI_DEBUG_ASSERT(node->next == nullptr, "graph node already on a list");
  if (tail == nullptr) {
    head = node;
  } else {
    tail->next = node;
  }
  tail = node;
}

graph_impl_t::node_t* graph_impl_t::node_list_t::pop_front() {
  node_t* node = head;
  LCI_ASSERT(node != nullptr, "pop_front of an empty graph node list");
  head = node->next;
  if (head == nullptr) tail = nullptr;
  node->next = nullptr;
  return node;
}

}  // namespace lci::detail
