#include "tests/soak/soak_workload.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lci.hpp"
#include "sim/sim_program.hpp"
#include "sim/sim_world.hpp"
#include "tests/soak/soak_checker.hpp"
#include "tests/soak/soak_plan.hpp"

namespace lci::soak {

namespace {

constexpr std::size_t counter_batch_ops_max = 8;
constexpr int arena_slots_per_thread = 8;
constexpr std::size_t arena_slot_bytes_max = std::size_t{64} << 10;
constexpr int inbox_pops_max = 32;
// After a crash: how many loop turns in a row that complete nothing a
// survivor keeps progressing for its peers before it leaves. Below the
// simulator's deadlock verdict (sim::harness_quiet_waits_min quiet waits),
// so that survivors leave instead of being judged deadlocked.
constexpr int crash_grace_quiet_turns_max = 40;
constexpr int registration_attempts_max = 1000;
constexpr std::uint8_t poison_byte = 0xEE;

struct rank_t;
struct thread_t;

// One operation of this rank: an op of the plan, or the receive of a send
// to this rank.
struct op_state_t {
  const op_plan_t* plan = nullptr;
  bool is_recv = false;
  thread_t* owner = nullptr;
  comp_kind_t comp = comp_kind_t::sync;
  std::unique_ptr<std::uint8_t[]> heap;
  std::uint8_t* buffer = nullptr;
  int arena_slot = -1;
  comp_t sync;                  // comp sync: its synchronizer (kept to the epoch's end)
  comp_t graph;                 // comp graph: its graph
  graph_node_t node = nullptr;  // comp graph: its node (the status's user_context)
  bool prepared = false;
  bool finished = false;
  bool abandoned = false;  // a crash: never posted

  int peer() const { return is_recv ? plan->source : plan->target; }
  std::string what() const {
    return is_recv ? "the receive of " + plan->describe() : plan->describe();
  }
};

// Registered memory a device's threads carve buffers from (ops with
// use_mr): one registration per device, as a runtime keeps a pool per NIC.
struct arena_t {
  std::unique_ptr<std::uint8_t[]> bytes;
  std::size_t slot_bytes = 0;
  mr_t mr;
  std::mutex lock;
  std::vector<int> free;  // under lock

  std::uint8_t* take(int* slot) {
    std::lock_guard<std::mutex> guard(lock);
    if (free.empty()) return nullptr;
    *slot = free.back();
    free.pop_back();
    return bytes.get() + static_cast<std::size_t>(*slot) * slot_bytes;
  }
  void give_back(int slot) {
    std::lock_guard<std::mutex> guard(lock);
    free.push_back(slot);
  }
};

struct counter_batch_t {
  comp_t counter;
  std::vector<op_state_t*> ops;  // posted (not done at once)
  bool closed = false;
  bool finished = false;
};

struct graph_run_t {
  comp_t graph;
  std::vector<op_state_t*> ops;
  bool finished = false;
};

struct thread_stats_t {
  // relaxed: counts, read after the thread joined. Graph nodes post from
  // whichever thread runs them.
  std::atomic<std::uint64_t> retries{0};
  std::atomic<std::uint64_t> backlogged{0};
  std::atomic<std::uint64_t> done_at_once{0};
};

struct thread_t {
  rank_t* rank = nullptr;
  int index = 0;
  device_t device;
  comp_t cq;        // LCRQ
  comp_t cq_array;  // fixed array
  arena_t* arena = nullptr;  // its device's
  // The epoch's operations.
  std::vector<std::unique_ptr<op_state_t>> ops;    // plan order
  std::vector<std::unique_ptr<op_state_t>> recvs;  // shuffled
  std::vector<op_state_t*> late_recvs;
  std::size_t next_op = 0;
  std::size_t next_late_recv = 0;
  int in_flight = 0;   // ops posted or being posted, not finished
  int in_flight_max = 0;
  int unfinished = 0;  // ops and receives not finished
  std::vector<op_state_t*> syncs_pending;
  std::vector<std::unique_ptr<counter_batch_t>> batches;
  counter_batch_t* open_batch = nullptr;
  std::vector<std::unique_ptr<graph_run_t>> graphs;
  // Completions handed over by handlers and graph edges (any thread).
  std::mutex handed_lock;
  std::vector<std::pair<op_state_t*, status_t>> handed;  // under handed_lock
  std::vector<pair_counts_t> sent_to;                     // by target
  thread_stats_t stats;
  std::uint64_t ops_completed = 0;
  std::uint64_t recvs_completed = 0;
  std::uint64_t bytes_moved = 0;
  bool quiet_turn = true;  // nothing completed in this loop turn
};

enum class control_type_t : std::uint32_t { rmrs = 1, summary = 2 };

// A control message (an AM to the control rcomp): the window's keys, or
// the epoch's accounting.
struct control_msg_t {
  control_type_t type = control_type_t::rmrs;
  std::uint32_t epoch = 0;
  std::int32_t source = 0;
  std::uint32_t keep_going = 0;
  std::uint32_t rmrs_count = 0;
  std::uint32_t padding = 0;
  rmr_t rmrs[threads_max];
  pair_counts_t sent_to_you;
  pair_counts_t received_from_you;
};

struct rank_t {
  soak_options_t options;
  int me = 0;
  int ranks_count = 0;
  std::size_t bcopy_size_max = 0;
  packet_pool_t pool;  // --exhaust: the tiny pool; else empty (the default)
  device_t control;    // the default device: barriers and control messages
  std::vector<device_t> owned_devices;
  std::vector<device_t> data_devices;  // distinct, by slot
  std::vector<std::size_t> slot_of_thread;
  std::vector<std::unique_ptr<arena_t>> arenas;  // by slot
  std::vector<mr_t> held_mrs;                    // --hold-registrations
  std::vector<std::unique_ptr<std::uint8_t[]>> held_buffers;
  comp_t local_handler;
  comp_t am_cq, am_cq_array, am_handler;
  comp_t sig_cq, sig_cq_array, sig_handler, sig_counter;
  comp_t control_cq;
  rcomp_t rc_am[5] = {};   // by remote_kind_t
  rcomp_t rc_sig[5] = {};  // by remote_kind_t
  rcomp_t rc_control = 0;
  // The epoch.
  std::unique_ptr<epoch_plan_t> plan;
  std::unique_ptr<std::uint8_t[]> window;
  std::size_t window_bytes = 0;
  std::vector<mr_t> window_mrs;               // by slot
  std::vector<std::vector<rmr_t>> rmrs;       // [slot][rank]
  std::unordered_set<const void*> live_ops;   // read-only while threads run
  inbound_ledger_t ledger;
  error_log_t errors;
  std::vector<std::unique_ptr<thread_t>> threads;
  std::atomic<int> threads_done{0};
  std::atomic<bool> stop{false};  // a crash was heard of
  std::vector<control_msg_t> control_stash;
  soak_result_t result;

  std::string context() const {
    return "soak rank " + std::to_string(me) + " (seed " + std::to_string(options.seed) +
           ", epoch " + std::to_string(plan ? plan->epoch : 0) + ")";
  }
  void note_crash(const std::string& what) {
    if (!stop.exchange(true)) {
      std::fprintf(stderr, "soak rank %d: a peer crashed (%s): stopping\n", me, what.c_str());
    }
  }
  rcomp_t rcomp_for(const op_plan_t& op) const {
    const std::size_t kind = static_cast<std::size_t>(op.remote);
    return op.kind == op_kind_t::am ? rc_am[kind] : rc_sig[kind];
  }
};

// ---- the rank a remote handler runs for ----

std::mutex g_ranks_lock;
std::map<const void*, rank_t*> g_ranks;  // by runtime; under g_ranks_lock

rank_t* current_rank() {
  const void* runtime = get_g_runtime().p_impl;
  std::lock_guard<std::mutex> guard(g_ranks_lock);
  auto it = g_ranks.find(runtime);
  return it == g_ranks.end() ? nullptr : it->second;
}

struct rank_registration_t {
  const void* runtime;
  rank_registration_t(const void* key, rank_t* rank) : runtime(key) {
    std::lock_guard<std::mutex> guard(g_ranks_lock);
    g_ranks[runtime] = rank;
  }
  ~rank_registration_t() {
    std::lock_guard<std::mutex> guard(g_ranks_lock);
    g_ranks.erase(runtime);
  }
};

// Ranks that left after a crash with operations still in flight: kept (and
// reachable, for leak checkers) to the end of the process.
std::mutex g_abandoned_lock;
std::vector<std::shared_ptr<rank_t>> g_abandoned;  // under g_abandoned_lock

// ---- crash-aware LCI calls ----

bool is_crash_tolerated(rank_t& rank, const std::runtime_error& error) {
  if (!rank.options.tolerate_crashes) return false;
  rank.note_crash(error.what());
  return true;
}

void progress_device(rank_t& rank, device_t device) {
  try {
    (void)progress_x().device(device)();
  } catch (const sim::rank_crashed_t&) {
    throw;
  } catch (const std::runtime_error& error) {
    if (!is_crash_tolerated(rank, error)) throw;
  }
}

void progress_all(rank_t& rank) {
  for (device_t device : rank.data_devices) progress_device(rank, device);
  if (std::find(rank.data_devices.begin(), rank.data_devices.end(), rank.control) ==
      rank.data_devices.end()) {
    progress_device(rank, rank.control);
  }
}

// ---- arrivals at this rank ----

void deliver_am(rank_t& rank, const status_t& status, remote_kind_t via) {
  if (!status.is_done() && rank.options.tolerate_crashes) {
    rank.note_crash("an active message completed with " + std::string(status.error.get_str()));
    std::free(status.buffer);
    return;
  }
  rank.ledger.on_am(status, via, rank.errors);
}

void deliver_signal(rank_t& rank, const status_t& status, remote_kind_t via) {
  if (!status.is_done() && rank.options.tolerate_crashes) {
    rank.note_crash("a signal completed with " + std::string(status.error.get_str()));
    return;
  }
  rank.ledger.on_signal(status, via, rank.errors);
}

// A handler may still run after its rank's body left (threw, or a crash
// unwound it) while the runtime is torn down: nothing to check then.
void am_handler(status_t status) {
  rank_t* rank = current_rank();
  if (rank == nullptr) {
    std::free(status.buffer);
    return;
  }
  deliver_am(*rank, status, remote_kind_t::handler);
}

void signal_handler(status_t status) {
  rank_t* rank = current_rank();
  if (rank == nullptr) return;
  deliver_signal(*rank, status, remote_kind_t::handler);
}

// Pops the rank's remote completion queues (any thread).
void poll_inboxes(rank_t& rank) {
  struct queue_t {
    comp_t comp;
    remote_kind_t via;
    bool am;
  };
  const queue_t queues[] = {{rank.am_cq, remote_kind_t::cq, true},
                            {rank.am_cq_array, remote_kind_t::cq_array, true},
                            {rank.sig_cq, remote_kind_t::cq, false},
                            {rank.sig_cq_array, remote_kind_t::cq_array, false}};
  for (const queue_t& queue : queues) {
    for (int i = 0; i < inbox_pops_max; ++i) {
      const status_t status = cq_pop(queue.comp);
      if (status.is_retry()) break;
      if (queue.am) {
        deliver_am(rank, status, queue.via);
      } else {
        deliver_signal(rank, status, queue.via);
      }
    }
  }
}

// ---- local completions ----

void hand_over(op_state_t* op, const status_t& status) {
  thread_t& owner = *op->owner;
  std::lock_guard<std::mutex> guard(owner.handed_lock);
  owner.handed.emplace_back(op, status);
}

// The local handler: the status's user_context is the op.
void local_handler(status_t status) {
  rank_t* rank = current_rank();
  if (rank == nullptr) return;  // see am_handler
  if (rank->live_ops.count(status.user_context) == 0) {
    rank->errors.fail("the local handler got a status whose user_context is no operation");
    return;
  }
  hand_over(static_cast<op_state_t*>(status.user_context), status);
}

// The edge from a graph node to GRAPH_END: the node's value is its op.
void graph_edge_done(status_t status, void* src_value, void* /*dst_value*/) {
  hand_over(static_cast<op_state_t*>(src_value), status);
}

void release_buffer(thread_t& th, op_state_t& op) {
  if (op.arena_slot >= 0) th.arena->give_back(op.arena_slot);
  op.arena_slot = -1;
  op.heap.reset();
  op.buffer = nullptr;
}

// An op completed (status_known: its status came with it; a counter's
// completion carries none).
void finish_op(thread_t& th, op_state_t& op, const status_t& status, bool status_known) {
  rank_t& rank = *th.rank;
  th.quiet_turn = false;
  if (op.finished) {
    rank.errors.fail(op.what() + ": completed again");
    return;
  }
  op.finished = true;
  if (!op.is_recv) --th.in_flight;
  --th.unfinished;
  const op_plan_t& plan = *op.plan;
  const std::string what = op.what();
  if (status_known && !status.is_done() && rank.options.tolerate_crashes) {
    rank.note_crash(what + " completed with " + status.error.get_str());
    release_buffer(th, op);
    return;
  }
  if (status_known) {
    const void* user_context = op.comp == comp_kind_t::graph ? op.node : &op;
    check_local_status(status, op.peer(), plan.tag, plan.size, op.buffer, user_context, what,
                       rank.errors);
  }
  // A counter counts failed operations too (it keeps no status): once a
  // peer may have crashed, its bytes prove nothing.
  const bool bytes_meaningful = status_known || !rank.options.tolerate_crashes;
  if (bytes_meaningful &&
      (op.is_recv || plan.kind == op_kind_t::get || plan.kind == op_kind_t::get_signal)) {
    check_received_bytes(*rank.plan, plan, op.buffer, what, rank.errors);
  }
  if (op.is_recv) {
    rank.ledger.on_recv(plan, rank.errors);
    ++th.recvs_completed;
  } else {
    ++th.ops_completed;
    th.bytes_moved += plan.size;
    if (seen_by_target(plan)) {
      pair_counts_t& counts = th.sent_to[static_cast<std::size_t>(plan.target)];
      ++counts.ops[static_cast<int>(plan.kind)];
      counts.bytes += plan.size;
    }
  }
  release_buffer(th, op);
}

// ---- posting ----

// Buffer (arena slot or heap) with the payload (outgoing) or poison
// (incoming), and the op's synchronizer.
void prepare(thread_t& th, op_state_t& op) {
  if (op.prepared) return;
  op.prepared = true;
  const op_plan_t& plan = *op.plan;
  const bool use_mr = op.is_recv ? plan.recv_use_mr : plan.use_mr;
  if (use_mr && plan.size <= th.arena->slot_bytes) op.buffer = th.arena->take(&op.arena_slot);
  if (op.buffer == nullptr) {
    op.heap.reset(new std::uint8_t[std::max<std::size_t>(plan.size, 1)]);
    op.buffer = op.heap.get();
  }
  const bool incoming = op.is_recv || plan.kind == op_kind_t::get ||
                        plan.kind == op_kind_t::get_signal;
  if (incoming) {
    std::memset(op.buffer, poison_byte, std::max<std::size_t>(plan.size, 1));
  } else {
    fill_payload(op.buffer, plan.size, key_of(*th.rank->plan, plan));
  }
  if (op.comp == comp_kind_t::sync) op.sync = alloc_sync();
}

rmr_t rmr_of(const rank_t& rank, const thread_t& th, int target) {
  return rank.rmrs[rank.slot_of_thread[static_cast<std::size_t>(th.index)]]
                  [static_cast<std::size_t>(target)];
}

status_t post_op(thread_t& th, op_state_t& op, comp_t comp, void* user_context) {
  rank_t& rank = *th.rank;
  const op_plan_t& p = *op.plan;
  const mr_t mr = op.arena_slot >= 0 ? th.arena->mr : mr_t{};
  if (op.is_recv) {
    return post_recv_x(p.source, op.buffer, p.size, p.tag, comp)
        .device(th.device)
        .packet_pool(rank.pool)
        .mr(mr)
        .user_context(user_context)();
  }
  const comp_semantic_t semantic =
      p.network_semantic ? comp_semantic_t::network : comp_semantic_t::memory;
  const bool allow_done = !p.force_posted;
  const bool allow_retry = !p.backlog;
  const std::uintptr_t put_disp = rank.plan->get_area_bytes + p.remote_offset;
  switch (p.kind) {
    case op_kind_t::am:
      return post_am_x(p.target, op.buffer, p.size, comp, rank.rcomp_for(p))
          .device(th.device).packet_pool(rank.pool).comp_semantic(semantic).mr(mr).tag(p.tag)
          .user_context(user_context).allow_done(allow_done).allow_retry(allow_retry)();
    case op_kind_t::send:
      return post_send_x(p.target, op.buffer, p.size, p.tag, comp)
          .device(th.device).packet_pool(rank.pool).comp_semantic(semantic).mr(mr)
          .user_context(user_context).allow_done(allow_done).allow_retry(allow_retry)();
    case op_kind_t::put:
    case op_kind_t::put_signal:
      return post_put_x(p.target, op.buffer, p.size, comp, put_disp, rmr_of(rank, th, p.target))
          .device(th.device).packet_pool(rank.pool).comp_semantic(semantic).mr(mr).tag(p.tag)
          .remote_comp(p.kind == op_kind_t::put_signal ? rank.rcomp_for(p) : 0)
          .user_context(user_context).allow_done(allow_done).allow_retry(allow_retry)();
    case op_kind_t::get:
    case op_kind_t::get_signal:
      return post_get_x(p.target, op.buffer, p.size, comp, p.remote_offset,
                        rmr_of(rank, th, p.target))
          .device(th.device).packet_pool(rank.pool).mr(mr).tag(p.tag)
          .remote_comp(p.kind == op_kind_t::get_signal ? rank.rcomp_for(p) : 0)
          .user_context(user_context).allow_done(allow_done).allow_retry(allow_retry)();
  }
  throw std::logic_error("post_op: unknown kind");
}

counter_batch_t& batch_for_counter_op(thread_t& th) {
  if (th.open_batch != nullptr && th.open_batch->ops.size() >= counter_batch_ops_max) {
    th.open_batch->closed = true;
    th.open_batch = nullptr;
  }
  if (th.open_batch == nullptr) {
    th.batches.push_back(std::make_unique<counter_batch_t>());
    th.open_batch = th.batches.back().get();
    th.open_batch->counter = alloc_counter();
  }
  return *th.open_batch;
}

comp_t comp_for(thread_t& th, op_state_t& op) {
  switch (op.comp) {
    case comp_kind_t::sync: return op.sync;
    case comp_kind_t::cq: return th.cq;
    case comp_kind_t::cq_array: return th.cq_array;
    case comp_kind_t::handler: return th.rank->local_handler;
    case comp_kind_t::counter: return batch_for_counter_op(th).counter;
    case comp_kind_t::none: return COMP_NULL_RETRY;
    case comp_kind_t::graph: return op.graph;
  }
  return COMP_NULL_RETRY;
}

// Notes what a post returned (graph nodes too).
void count_post(thread_t& th, const status_t& status) {
  // relaxed: counts (thread_stats_t).
  if (status.is_retry()) th.stats.retries.fetch_add(1, std::memory_order_relaxed);
  if (status.error.errorcode == errorcode_t::posted_backlog ||
      status.error.errorcode == errorcode_t::done_backlog) {
    th.stats.backlogged.fetch_add(1, std::memory_order_relaxed);
  }
  if (status.is_done()) th.stats.done_at_once.fetch_add(1, std::memory_order_relaxed);
}

// One attempt to post `op`; false when it returned retry (nothing
// happened: progress, then post it again).
bool try_post(thread_t& th, op_state_t& op) {
  rank_t& rank = *th.rank;
  prepare(th, op);
  const comp_t comp = comp_for(th, op);
  if (!op.is_recv) ++th.in_flight;
  status_t status;
  try {
    status = post_op(th, op, comp, &op);
  } catch (const sim::rank_crashed_t&) {
    throw;
  } catch (const std::runtime_error& error) {
    // A post naming a dead rank is refused: the op is given up.
    if (!is_crash_tolerated(rank, error)) throw;
    if (!op.is_recv) --th.in_flight;
    op.abandoned = true;
    op.finished = true;
    --th.unfinished;
    release_buffer(th, op);
    return true;
  }
  count_post(th, status);
  if (status.is_retry()) {
    if (!op.is_recv) --th.in_flight;
    return false;
  }
  if (status.is_done()) {
    finish_op(th, op, status, true);
    return true;
  }
  if (!status.is_posted()) {
    rank.errors.fail(op.what() + ": the post returned " + status.error.get_str());
    return true;
  }
  switch (op.comp) {
    case comp_kind_t::sync: th.syncs_pending.push_back(&op); break;
    case comp_kind_t::counter: th.open_batch->ops.push_back(&op); break;
    case comp_kind_t::none:
      rank.errors.fail(op.what() + ": a COMP_NULL_RETRY post returned " + status.error.get_str());
      break;
    default: break;
  }
  return true;
}

// A graph node: posts its op with the graph as completion object.
status_t run_graph_node(void* value) {
  op_state_t& op = *static_cast<op_state_t*>(value);
  const status_t status = post_op(*op.owner, op, op.graph, op.node);
  count_post(*op.owner, status);
  return status;
}

// Starts the graph of the group at th.ops[first]: its nodes post in the
// group's order of edges (a chained op after its predecessor).
void start_graph(thread_t& th, std::size_t first) {
  const std::size_t length = th.ops[first]->plan->graph_group_size;
  auto run = std::make_unique<graph_run_t>();
  run->graph = alloc_graph();
  graph_node_t previous = nullptr;
  for (std::size_t i = first; i < first + length; ++i) {
    op_state_t& op = *th.ops[i];
    prepare(th, op);
    op.graph = run->graph;
    op.node = graph_add_node_x(run->graph, &run_graph_node).value(&op)();
    if (op.plan->graph_chain && previous != nullptr) {
      graph_add_edge(run->graph, previous, op.node);
    }
    graph_add_edge_x(run->graph, op.node, GRAPH_END).fn(&graph_edge_done)();
    previous = op.node;
    run->ops.push_back(&op);
  }
  th.in_flight += static_cast<int>(length);
  graph_run_t& started = *run;
  th.graphs.push_back(std::move(run));
  graph_start(started.graph);
}

void close_open_batch(thread_t& th) {
  if (th.open_batch == nullptr) return;
  th.open_batch->closed = true;
  th.open_batch = nullptr;
}

// Late receives first (never held back by the window: a peer's send may
// wait for them), then ops up to the window.
void post_round(thread_t& th) {
  rank_t& rank = *th.rank;
  while (th.next_late_recv < th.late_recvs.size()) {
    if (!try_post(th, *th.late_recvs[th.next_late_recv])) break;
    ++th.next_late_recv;
  }
  const int window = rank.options.window;
  while (!rank.stop.load() && th.next_op < th.ops.size() && th.in_flight < window) {
    op_state_t& op = *th.ops[th.next_op];
    if (op.comp == comp_kind_t::graph) {
      const int length = op.plan->graph_group_size;
      if (th.in_flight > 0 && th.in_flight + length > window) break;
      th.next_op += static_cast<std::size_t>(length);
      start_graph(th, th.next_op - static_cast<std::size_t>(length));
      continue;
    }
    if (!try_post(th, op)) break;
    ++th.next_op;
  }
  th.in_flight_max = std::max(th.in_flight_max, th.in_flight);
  close_open_batch(th);
}

// ---- draining ----

bool is_own_op(const thread_t& th, const void* user_context) {
  if (th.rank->live_ops.count(user_context) == 0) return false;
  return static_cast<const op_state_t*>(user_context)->owner == &th;
}

void drain_cq(thread_t& th, comp_t cq, const char* name) {
  for (status_t status = cq_pop(cq); !status.is_retry(); status = cq_pop(cq)) {
    if (!is_own_op(th, status.user_context)) {
      th.rank->errors.fail(std::string("thread ") + std::to_string(th.index) + "'s " + name +
                           " popped a status whose user_context is none of its operations");
      continue;
    }
    finish_op(th, *static_cast<op_state_t*>(status.user_context), status, true);
  }
}

void drain_handed(thread_t& th) {
  std::vector<std::pair<op_state_t*, status_t>> handed;
  {
    std::lock_guard<std::mutex> guard(th.handed_lock);
    handed.swap(th.handed);
  }
  for (auto& [op, status] : handed) finish_op(th, *op, status, true);
}

void drain_syncs(thread_t& th) {
  auto& pending = th.syncs_pending;
  for (std::size_t i = 0; i < pending.size();) {
    status_t status;
    if (sync_test(pending[i]->sync, &status)) {
      finish_op(th, *pending[i], status, true);
      pending[i] = pending.back();
      pending.pop_back();
    } else {
      ++i;
    }
  }
}

void drain_batches(thread_t& th) {
  for (auto& batch : th.batches) {
    if (batch->finished || !batch->closed) continue;
    const std::int64_t count = counter_get(batch->counter);
    const auto posted = static_cast<std::int64_t>(batch->ops.size());
    if (count < posted) continue;
    if (count > posted) {
      th.rank->errors.fail("a counter of thread " + std::to_string(th.index) + " reached " +
                           std::to_string(count) + " for " + std::to_string(posted) +
                           " posted operations");
    }
    batch->finished = true;
    for (op_state_t* op : batch->ops) finish_op(th, *op, status_t(), false);
  }
}

void drain_graphs(thread_t& th) {
  for (auto& run : th.graphs) {
    if (run->finished) continue;
    status_t status;
    try {
      status = graph_test(run->graph);
    } catch (const sim::rank_crashed_t&) {
      throw;
    } catch (const std::runtime_error& error) {
      if (!is_crash_tolerated(*th.rank, error)) throw;
      continue;
    }
    if (status.is_retry()) continue;
    run->finished = true;
    drain_handed(th);  // every edge ran before the round ended
    for (op_state_t* op : run->ops) {
      if (!op->finished) th.rank->errors.fail(op->what() + ": its graph ended before it did");
    }
    free_comp(&run->graph);
  }
}

void drain_local(thread_t& th) {
  drain_cq(th, th.cq, "LCRQ");
  drain_cq(th, th.cq_array, "array CQ");
  drain_handed(th);
  drain_syncs(th);
  drain_batches(th);
  drain_graphs(th);
}

// ---- one thread's epoch ----

void post_early_recvs(thread_t& th) {
  rank_t& rank = *th.rank;
  for (auto& recv : th.recvs) {
    if (!recv->plan->recv_early) continue;
    while (!try_post(th, *recv)) progress_device(rank, th.device);
  }
}

bool rank_complete(rank_t& rank) {
  return rank.threads_done.load() == rank.options.threads &&
         rank.ledger.complete(counter_get(rank.sig_counter));
}

void run_thread_loop(thread_t& th) {
  rank_t& rank = *th.rank;
  int quiet_turns = 0;
  while (!rank.errors.failed()) {
    th.quiet_turn = true;
    post_round(th);
    progress_device(rank, th.device);
    drain_local(th);
    poll_inboxes(rank);
    if (rank.stop.load()) {
      quiet_turns = th.quiet_turn ? quiet_turns + 1 : 0;
      if (th.in_flight == 0 || quiet_turns > crash_grace_quiet_turns_max) break;
    } else if (th.unfinished == 0) {
      break;
    }
  }
  rank.threads_done.fetch_add(1);
  // Until the rank heard everything the plan promises, and its other
  // threads are done: their devices, and peers' operations through ours,
  // need someone to progress them.
  while (!rank.errors.failed() && !rank.stop.load() && !rank_complete(rank)) {
    progress_device(rank, th.device);
    drain_local(th);
    poll_inboxes(rank);
  }
}

void run_thread(thread_t& th, bool early_phase) {
  try {
    if (early_phase) {
      post_early_recvs(th);
    } else {
      run_thread_loop(th);
    }
  } catch (const sim::rank_crashed_t&) {
    throw;  // this rank crashed (the sim's fault): it unwinds
  } catch (const std::exception& error) {
    th.rank->errors.fail("thread " + std::to_string(th.index) + " threw: " + error.what());
  }
}

// ---- control messages ----

void send_controls(rank_t& rank, std::vector<control_msg_t>& messages) {
  std::vector<comp_t> syncs;
  for (control_msg_t& message : messages) {
    const int peer = message.source;  // the caller put the target here
    message.source = rank.me;
    comp_t sync = alloc_sync();
    syncs.push_back(sync);
    for (;;) {
      status_t status;
      try {
        status = post_am_x(peer, &message, sizeof(message), sync, rank.rc_control)
                     .device(rank.control)();
      } catch (const sim::rank_crashed_t&) {
        throw;
      } catch (const std::runtime_error& error) {
        if (!is_crash_tolerated(rank, error)) throw;
        status = status_t(errorcode_t::done);
      }
      if (status.is_done()) comp_signal(sync, status);
      if (!status.is_retry()) break;
      progress_all(rank);
      if (rank.stop.load()) break;
    }
  }
  for (comp_t& sync : syncs) {
    while (!rank.stop.load() && !sync_test(sync, nullptr)) progress_all(rank);
    if (!rank.stop.load()) free_comp(&sync);
  }
}

// The control message of `type` and `epoch` from `source`; false when a
// crash ended the wait.
bool wait_control(rank_t& rank, control_type_t type, std::uint32_t epoch, int source,
                  control_msg_t* out) {
  for (;;) {
    for (auto it = rank.control_stash.begin(); it != rank.control_stash.end(); ++it) {
      if (it->type == type && it->epoch == epoch && it->source == source) {
        *out = *it;
        rank.control_stash.erase(it);
        return true;
      }
    }
    const status_t status = cq_pop(rank.control_cq);
    if (status.is_retry()) {
      if (rank.stop.load() || rank.errors.failed()) return false;
      progress_all(rank);
      continue;
    }
    if (!status.is_done() || status.size != sizeof(control_msg_t)) {
      std::free(status.buffer);
      if (rank.options.tolerate_crashes) {
        rank.note_crash("a control message completed with " + std::string(status.error.get_str()));
        return false;
      }
      throw std::runtime_error(rank.context() + ": a control message of " +
                               std::to_string(status.size) + " bytes, status " +
                               status.error.get_str());
    }
    control_msg_t message;
    std::memcpy(&message, status.buffer, sizeof(message));
    std::free(status.buffer);
    rank.control_stash.push_back(message);
  }
}

// A barrier over LCI that keeps every device progressed (and the inboxes
// polled: after the epoch, whatever arrives is a duplicate).
void barrier_progressing(rank_t& rank) {
  comp_t done = alloc_sync();
  try {
    barrier_x().device(rank.control).comp(done)();
  } catch (const sim::rank_crashed_t&) {
    throw;
  } catch (const std::runtime_error& error) {
    if (!is_crash_tolerated(rank, error)) throw;
  }
  while (!rank.stop.load() && !sync_test(done, nullptr)) {
    progress_all(rank);
    poll_inboxes(rank);
  }
  if (!rank.stop.load()) free_comp(&done);
}

// ---- setup ----

device_t alloc_data_device(rank_t& rank) {
  if (!rank.options.exhaust) return alloc_device_x().packet_pool(rank.pool)();
  return alloc_device_x()
      .packet_pool(rank.pool)
      .net_max_sends(exhaust_net_max_sends)
      .net_max_recvs(exhaust_net_max_recvs)
      .net_max_cqes(exhaust_net_max_cqes)();
}

// register_memory throws when the network refuses (the sim's
// registration_failure fault): try again, as a user would.
mr_t register_retrying(rank_t& rank, void* address, std::size_t size, device_t device) {
  for (int attempt = 1;; ++attempt) {
    try {
      return register_memory_x(address, size).device(device)();
    } catch (const sim::rank_crashed_t&) {
      throw;
    } catch (const std::runtime_error&) {
      if (attempt == registration_attempts_max) throw;
    }
    progress_all(rank);
  }
}

comp_t alloc_array_cq(const rank_t& rank) {
  return alloc_cq_x()
      .cq_type(attr_cq_type_t::array_atomic)
      .default_length(rank.options.exhaust ? exhaust_cq_length : 0)();
}

void setup_devices(rank_t& rank) {
  const soak_options_t& options = rank.options;
  if (options.exhaust) rank.pool = alloc_packet_pool_x().npackets(exhaust_npackets)();
  rank.bcopy_size_max = get_max_bcopy_size_x().packet_pool(rank.pool)();
  rank.control = get_default_device();
  // Collective: every rank allocates the same devices in the same order.
  const int distinct = options.devices == device_mode_t::shared ? 1 : options.threads;
  for (int slot = 0; slot < distinct; ++slot) {
    if (slot == 0 && !options.exhaust) {
      rank.data_devices.push_back(rank.control);
    } else {
      rank.owned_devices.push_back(alloc_data_device(rank));
      rank.data_devices.push_back(rank.owned_devices.back());
    }
  }
  for (int t = 0; t < options.threads; ++t) {
    rank.slot_of_thread.push_back(options.devices == device_mode_t::shared
                                      ? 0
                                      : static_cast<std::size_t>(t));
  }
}

// Registered in this order on every rank, so the ids agree.
void setup_remote_comps(rank_t& rank) {
  rank.local_handler = alloc_handler(&local_handler);
  rank.am_cq = alloc_cq_x().cq_type(attr_cq_type_t::lcrq)();
  rank.am_cq_array = alloc_array_cq(rank);
  rank.am_handler = alloc_handler(&am_handler);
  rank.sig_cq = alloc_cq_x().cq_type(attr_cq_type_t::lcrq)();
  rank.sig_cq_array = alloc_array_cq(rank);
  rank.sig_handler = alloc_handler(&signal_handler);
  rank.sig_counter = alloc_counter();
  rank.control_cq = alloc_cq_x().cq_type(attr_cq_type_t::lcrq)();
  rank.rc_am[static_cast<int>(remote_kind_t::cq)] = register_rcomp(rank.am_cq);
  rank.rc_am[static_cast<int>(remote_kind_t::cq_array)] = register_rcomp(rank.am_cq_array);
  rank.rc_am[static_cast<int>(remote_kind_t::handler)] = register_rcomp(rank.am_handler);
  rank.rc_sig[static_cast<int>(remote_kind_t::cq)] = register_rcomp(rank.sig_cq);
  rank.rc_sig[static_cast<int>(remote_kind_t::cq_array)] = register_rcomp(rank.sig_cq_array);
  rank.rc_sig[static_cast<int>(remote_kind_t::handler)] = register_rcomp(rank.sig_handler);
  rank.rc_sig[static_cast<int>(remote_kind_t::counter)] = register_rcomp(rank.sig_counter);
  rank.rc_control = register_rcomp(rank.control_cq);
}

void setup_arenas(rank_t& rank) {
  const std::size_t slot_bytes =
      std::min(std::max<std::size_t>(rank.options.size_max, 64), arena_slot_bytes_max);
  for (std::size_t slot = 0; slot < rank.data_devices.size(); ++slot) {
    const auto threads = static_cast<int>(
        std::count(rank.slot_of_thread.begin(), rank.slot_of_thread.end(), slot));
    const int slots = arena_slots_per_thread * threads;
    auto arena = std::make_unique<arena_t>();
    arena->slot_bytes = slot_bytes;
    arena->bytes.reset(new std::uint8_t[slot_bytes * static_cast<std::size_t>(slots)]);
    arena->mr = register_retrying(rank, arena->bytes.get(),
                                  slot_bytes * static_cast<std::size_t>(slots),
                                  rank.data_devices[slot]);
    for (int s = 0; s < slots; ++s) arena->free.push_back(s);
    rank.arenas.push_back(std::move(arena));
    // --hold-registrations: memory a program keeps registered for itself.
    for (int held = 0; held < rank.options.held_registrations; ++held) {
      rank.held_buffers.emplace_back(new std::uint8_t[4096]);
      rank.held_mrs.push_back(register_retrying(rank, rank.held_buffers.back().get(), 4096,
                                                rank.data_devices[slot]));
    }
  }
}

void setup_threads(rank_t& rank) {
  for (int t = 0; t < rank.options.threads; ++t) {
    auto th = std::make_unique<thread_t>();
    th->rank = &rank;
    th->index = t;
    const std::size_t slot = rank.slot_of_thread[static_cast<std::size_t>(t)];
    th->device = rank.data_devices[slot];
    th->arena = rank.arenas[slot].get();
    th->cq = alloc_cq_x().cq_type(attr_cq_type_t::lcrq)();
    th->cq_array = alloc_array_cq(rank);
    rank.threads.push_back(std::move(th));
  }
}

// ---- one epoch ----

// The window: get area, then put area; registered with every data device,
// its keys exchanged. False when a crash ended the exchange.
bool setup_window(rank_t& rank) {
  const epoch_plan_t& plan = *rank.plan;
  const std::size_t put_bytes = plan.put_area_bytes[static_cast<std::size_t>(rank.me)];
  rank.window_bytes = plan.get_area_bytes + put_bytes;
  rank.window.reset(new std::uint8_t[rank.window_bytes]);
  fill_get_area(rank.window.get(), plan.get_area_bytes, plan.seed, plan.epoch, rank.me);
  fill_canary(rank.window.get() + plan.get_area_bytes, put_bytes, plan.seed, plan.epoch, rank.me);
  const std::size_t slots = rank.data_devices.size();
  rank.rmrs.assign(slots, std::vector<rmr_t>(static_cast<std::size_t>(rank.ranks_count)));
  rank.window_mrs.clear();
  control_msg_t mine;
  mine.type = control_type_t::rmrs;
  mine.epoch = plan.epoch;
  mine.rmrs_count = static_cast<std::uint32_t>(slots);
  for (std::size_t slot = 0; slot < slots; ++slot) {
    rank.window_mrs.push_back(
        register_retrying(rank, rank.window.get(), rank.window_bytes, rank.data_devices[slot]));
    mine.rmrs[slot] = get_rmr(rank.window_mrs.back());
    rank.rmrs[slot][static_cast<std::size_t>(rank.me)] = mine.rmrs[slot];
  }
  std::vector<control_msg_t> out;
  for (int peer = 0; peer < rank.ranks_count; ++peer) {
    if (peer == rank.me) continue;
    out.push_back(mine);
    out.back().source = peer;
  }
  send_controls(rank, out);
  for (int peer = 0; peer < rank.ranks_count; ++peer) {
    if (peer == rank.me) continue;
    control_msg_t theirs;
    if (!wait_control(rank, control_type_t::rmrs, plan.epoch, peer, &theirs)) return false;
    for (std::size_t slot = 0; slot < slots; ++slot) {
      rank.rmrs[slot][static_cast<std::size_t>(peer)] = theirs.rmrs[slot];
    }
  }
  return true;
}

op_state_t* add_op_state(rank_t& rank, thread_t& th,
                         std::vector<std::unique_ptr<op_state_t>>& list, const op_plan_t& plan,
                         bool is_recv) {
  auto op = std::make_unique<op_state_t>();
  op->plan = &plan;
  op->is_recv = is_recv;
  op->owner = &th;
  op->comp = is_recv ? plan.recv_comp : plan.comp;
  rank.live_ops.insert(op.get());
  list.push_back(std::move(op));
  ++th.unfinished;
  return list.back().get();
}

void setup_thread_epoch(rank_t& rank, thread_t& th) {
  const epoch_plan_t& plan = *rank.plan;
  th.ops.clear();
  th.recvs.clear();
  th.late_recvs.clear();
  th.next_op = 0;
  th.next_late_recv = 0;
  th.in_flight = 0;
  th.unfinished = 0;
  th.sent_to.assign(static_cast<std::size_t>(rank.ranks_count), pair_counts_t{});
  for (const op_plan_t& op : plan.ops_of(rank.me, th.index)) {
    add_op_state(rank, th, th.ops, op, false);
  }
  for (const op_plan_t* op : plan.recvs_by_thread[static_cast<std::size_t>(th.index)]) {
    op_state_t* recv = add_op_state(rank, th, th.recvs, *op, true);
    if (!op->recv_early) th.late_recvs.push_back(recv);
  }
}

// After the end barrier: nothing may be signalled again, nothing left over.
void check_thread_after_epoch(rank_t& rank, thread_t& th) {
  const std::string who = "thread " + std::to_string(th.index);
  drain_local(th);
  if (th.unfinished != 0) {
    rank.errors.fail(who + ": " + std::to_string(th.unfinished) + " operations never completed");
  }
  for (auto& op : th.ops) {
    if (op->sync.is_empty()) continue;
    if (sync_test(op->sync, nullptr)) {
      rank.errors.fail(op->what() + ": its synchronizer was signalled again");
    }
  }
  for (auto& op : th.recvs) {
    if (!op->sync.is_empty() && sync_test(op->sync, nullptr)) {
      rank.errors.fail(op->what() + ": its synchronizer was signalled again");
    }
  }
  for (auto& batch : th.batches) {
    const std::int64_t count = counter_get(batch->counter);
    if (count != static_cast<std::int64_t>(batch->ops.size())) {
      rank.errors.fail(who + ": a counter holds " + std::to_string(count) + " for " +
                       std::to_string(batch->ops.size()) + " posted operations");
    }
  }
}

void free_thread_epoch(thread_t& th) {
  for (auto* list : {&th.ops, &th.recvs}) {
    for (auto& op : *list) {
      if (!op->sync.is_empty()) free_comp(&op->sync);
    }
  }
  for (auto& batch : th.batches) free_comp(&batch->counter);
  th.batches.clear();
  th.graphs.clear();
  th.syncs_pending.clear();
  th.ops.clear();
  th.recvs.clear();
  th.late_recvs.clear();
}

// Each rank tells each peer what it completed towards it and what it
// received from it; each compares. Returns rank 0's keep-going verdict.
bool exchange_accounting(rank_t& rank, bool keep_going_mine) {
  const std::size_t ranks = static_cast<std::size_t>(rank.ranks_count);
  std::vector<pair_counts_t> sent(ranks);
  for (auto& th : rank.threads) {
    for (std::size_t p = 0; p < ranks; ++p) {
      for (int k = 0; k < op_kinds_count; ++k) sent[p].ops[k] += th->sent_to[p].ops[k];
      sent[p].bytes += th->sent_to[p].bytes;
    }
  }
  const std::uint32_t epoch = rank.plan->epoch;
  std::vector<control_msg_t> out;
  for (int peer = 0; peer < rank.ranks_count; ++peer) {
    if (peer == rank.me) {
      const pair_counts_t received = rank.ledger.received_from(peer);
      if (!(sent[static_cast<std::size_t>(peer)] == received)) {
        rank.errors.fail("accounting with itself: completed " +
                         sent[static_cast<std::size_t>(peer)].describe() + ", received " +
                         received.describe());
      }
      continue;
    }
    control_msg_t message;
    message.type = control_type_t::summary;
    message.epoch = epoch;
    message.source = peer;
    message.keep_going = keep_going_mine ? 1 : 0;
    message.sent_to_you = sent[static_cast<std::size_t>(peer)];
    message.received_from_you = rank.ledger.received_from(peer);
    out.push_back(message);
  }
  send_controls(rank, out);
  bool keep_going = keep_going_mine;
  for (int peer = 0; peer < rank.ranks_count; ++peer) {
    if (peer == rank.me) continue;
    control_msg_t theirs;
    if (!wait_control(rank, control_type_t::summary, epoch, peer, &theirs)) return false;
    const pair_counts_t received = rank.ledger.received_from(peer);
    if (!(theirs.sent_to_you == received)) {
      rank.errors.fail("accounting: rank " + std::to_string(peer) + " completed " +
                       theirs.sent_to_you.describe() + " towards rank " +
                       std::to_string(rank.me) + ", which received " + received.describe());
    }
    if (!(theirs.received_from_you == sent[static_cast<std::size_t>(peer)])) {
      rank.errors.fail("accounting: rank " + std::to_string(peer) + " received " +
                       theirs.received_from_you.describe() + " from rank " +
                       std::to_string(rank.me) + ", which completed " +
                       sent[static_cast<std::size_t>(peer)].describe());
    }
    if (peer == 0) keep_going = theirs.keep_going != 0;
  }
  return keep_going;
}

// Printed as well as thrown: tearing down a runtime with operations in
// flight may abort before the harness prints what the rank threw.
void throw_if_failed(rank_t& rank, const char* where) {
  if (!rank.errors.failed()) return;
  const std::string message =
      rank.context() + ": " + std::to_string(rank.errors.count()) + " failed checks (" + where +
      "):\n" + rank.errors.report() + "  replay: the same options with --seed " +
      std::to_string(rank.options.seed) + " (simulator: LCI_SIM_SEED=" +
      std::to_string(rank.options.seed) + ")";
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
  throw std::runtime_error(message);
}

void collect_stats(rank_t& rank) {
  for (auto& th : rank.threads) {
    rank.result.ops_completed += th->ops_completed;
    rank.result.recvs_completed += th->recvs_completed;
    rank.result.bytes_moved += th->bytes_moved;
    rank.result.retries += th->stats.retries.exchange(0);
    rank.result.backlogged += th->stats.backlogged.exchange(0);
    rank.result.done_at_once += th->stats.done_at_once.exchange(0);
    rank.result.in_flight_max = std::max(rank.result.in_flight_max, th->in_flight_max);
    th->ops_completed = th->recvs_completed = th->bytes_moved = 0;
  }
}

// One epoch; returns whether another follows (false also after a crash).
bool run_epoch(const std::shared_ptr<rank_t>& rank_owner, std::uint32_t epoch,
               std::chrono::steady_clock::time_point started) {
  rank_t& rank = *rank_owner;
  const soak_options_t& options = rank.options;
  rank.plan = std::make_unique<epoch_plan_t>(
      make_epoch_plan(options, rank.ranks_count, rank.me, epoch, rank.bcopy_size_max));
  if (!setup_window(rank)) return false;
  const epoch_plan_t& plan = *rank.plan;
  rank.ledger.reset(rank.plan.get(), rank.window.get() + plan.get_area_bytes);
  counter_set(rank.sig_counter, 0);
  rank.live_ops.clear();
  for (auto& th : rank.threads) setup_thread_epoch(rank, *th);
  rank.threads_done.store(0);
  lci::sim::run_threads(options.threads,
                        [rank_owner](int t) { run_thread(*rank_owner->threads[t], true); });
  throw_if_failed(rank, "posting the early receives");
  barrier_progressing(rank);  // start: every rank posted its early receives
  lci::sim::run_threads(options.threads,
                        [rank_owner](int t) { run_thread(*rank_owner->threads[t], false); });
  throw_if_failed(rank, "the epoch's operations");
  if (rank.stop.load()) return false;
  barrier_progressing(rank);  // end: every rank heard everything it expects
  if (rank.stop.load()) return false;
  check_put_area(plan, rank.window.get() + plan.get_area_bytes, rank.errors);
  rank.ledger.check_final(counter_get(rank.sig_counter), rank.errors);
  for (auto& th : rank.threads) check_thread_after_epoch(rank, *th);
  throw_if_failed(rank, "the end of the epoch");
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const bool keep_going = options.duration_s > 0 ? elapsed_s < options.duration_s
                                                 : epoch + 1 < static_cast<std::uint32_t>(options.epochs);
  const bool next = exchange_accounting(rank, keep_going);
  throw_if_failed(rank, "the accounting exchange");
  if (rank.stop.load()) return false;
  std::uint64_t arrivals = 0;
  for (int source = 0; source < rank.ranks_count; ++source) {
    const pair_counts_t counts = rank.ledger.received_from(source);
    for (int k = 0; k < op_kinds_count; ++k) arrivals += counts.ops[k];
  }
  rank.result.arrivals += arrivals + static_cast<std::uint64_t>(rank.ledger.counter_expected());
  collect_stats(rank);
  ++rank.result.epochs;
  for (mr_t& mr : rank.window_mrs) deregister_memory(&mr);
  for (auto& th : rank.threads) free_thread_epoch(*th);
  rank.live_ops.clear();
  rank.window.reset();
  if (rank.me == 0 && !options.quiet) {
    std::printf("soak: epoch %u done at %.1f s: rank 0 completed %llu ops, %llu arrivals so far\n",
                epoch, elapsed_s, static_cast<unsigned long long>(rank.result.ops_completed),
                static_cast<unsigned long long>(rank.result.arrivals));
    std::fflush(stdout);
  }
  return next;
}

void free_run(rank_t& rank) {
  for (int kind = 0; kind < 5; ++kind) {
    if (rank.rc_am[kind] != 0) deregister_rcomp(rank.rc_am[kind]);
    if (rank.rc_sig[kind] != 0) deregister_rcomp(rank.rc_sig[kind]);
  }
  deregister_rcomp(rank.rc_control);
  for (auto& arena : rank.arenas) deregister_memory(&arena->mr);
  for (mr_t& mr : rank.held_mrs) deregister_memory(&mr);
  for (auto& th : rank.threads) {
    free_comp(&th->cq);
    free_comp(&th->cq_array);
  }
  for (comp_t* comp : {&rank.local_handler, &rank.am_cq, &rank.am_cq_array, &rank.am_handler,
                       &rank.sig_cq, &rank.sig_cq_array, &rank.sig_handler, &rank.sig_counter,
                       &rank.control_cq}) {
    free_comp(comp);
  }
  for (device_t& device : rank.owned_devices) free_device(&device);
  if (!rank.pool.is_empty()) free_packet_pool(&rank.pool);
}

}  // namespace

std::string soak_result_t::describe() const {
  return std::to_string(epochs) + " epochs, " + std::to_string(ops_completed) + " ops, " +
         std::to_string(recvs_completed) + " receives, " + std::to_string(arrivals) +
         " arrivals checked, " + std::to_string(bytes_moved) + " bytes; posts: " +
         std::to_string(retries) + " retried, " + std::to_string(backlogged) + " backlogged, " +
         std::to_string(done_at_once) + " done at once; up to " + std::to_string(in_flight_max) +
         " ops in flight per thread" +
         (crash_seen ? "; a peer crashed" : "");
}

soak_result_t run_soak_rank(const soak_options_t& options) {
  if (options.threads < 1 || options.threads > threads_max) {
    throw std::invalid_argument("soak: threads must be in [1, " + std::to_string(threads_max) + "]");
  }
  // Shared with the threads' bodies: on the simulator a failed run tears
  // down the rank's fiber before its threads' fibers, which still unwind
  // through the rank's state.
  const auto rank_owner = std::make_shared<rank_t>();
  rank_t& rank = *rank_owner;
  rank.options = options;
  if (rank.options.tolerate_crashes) {
    rank.options.comp_kinds_mask &= ~(1u << static_cast<unsigned>(comp_kind_t::graph));
  }
  g_runtime_init();
  rank.me = get_rank_me();
  rank.ranks_count = get_rank_n();
  rank.result.rank = rank.me;
  if (rank.me == 0 && !options.quiet) {
    std::printf("soak: %d ranks, %s\n", rank.ranks_count, describe(rank.options).c_str());
    std::fflush(stdout);
  }
  rank_registration_t registration(get_g_runtime().p_impl, &rank);
  setup_devices(rank);
  setup_remote_comps(rank);
  setup_arenas(rank);
  setup_threads(rank);
  const auto started = std::chrono::steady_clock::now();
  for (std::uint32_t epoch = 0; run_epoch(rank_owner, epoch, started); ++epoch) {
  }
  rank.result.crash_seen = rank.stop.load();
  if (rank.stop.load()) {
    // A peer crashed: what is in flight is left to the runtime's teardown,
    // and its buffers (and the window peers may still write) to the end of
    // the process: the network may still read or write them.
    {
      std::lock_guard<std::mutex> guard(g_abandoned_lock);
      g_abandoned.push_back(rank_owner);
    }
    try {
      g_runtime_fina();
    } catch (const sim::rank_crashed_t&) {
      throw;
    } catch (const std::runtime_error&) {  // names the dead rank: expected
    }
    return rank.result;
  }
  barrier_progressing(rank);  // nobody needs this rank's devices any more
  free_run(rank);
  g_runtime_fina();
  return rank.result;
}

}  // namespace lci::soak
