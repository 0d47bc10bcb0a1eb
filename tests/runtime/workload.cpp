#include "tests/runtime/workload.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lci/util/atomic.hpp"
#include "lci/util/spinlock.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace lci::runtime_test {

namespace {

// A run allocates up to a few hundred MiB of message buffers and windows
// and frees them at its end. Left to its defaults, glibc hands big blocks
// back to the kernel, and faulting them in again on the next run was most
// of the matrix's time: keep them in the heap instead.
const bool g_heap_kept = [] {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  return true;
}();

// ---- payloads ----

// Word `index` of the payload `owner` produces for `reader` in thread
// `thread` (a send, an active message, a put, or a window region a get
// reads). Words, not bytes: megabyte payloads are filled and checked on
// every run.
std::uint64_t pattern_word(int owner, int reader, int thread, std::size_t index) {
  std::uint64_t z = (static_cast<std::uint64_t>(owner) << 48) ^
                    (static_cast<std::uint64_t>(reader) << 32) ^
                    (static_cast<std::uint64_t>(thread) << 24) ^ index;
  z = (z ^ (z >> 31)) * 0x9E3779B97F4A7C15ull;
  return z ^ (z >> 29);
}

void fill(void* buffer, std::size_t size, int owner, int reader, int thread) {
  auto* bytes = static_cast<std::uint8_t*>(buffer);
  for (std::size_t offset = 0; offset < size; offset += sizeof(std::uint64_t)) {
    const std::uint64_t word = pattern_word(owner, reader, thread, offset / sizeof(std::uint64_t));
    std::memcpy(bytes + offset, &word, std::min(sizeof(word), size - offset));
  }
}

void require_pattern(const void* buffer, std::size_t size, int owner, int reader, int thread,
                     const std::string& what) {
  const auto* bytes = static_cast<const std::uint8_t*>(buffer);
  for (std::size_t offset = 0; offset < size; offset += sizeof(std::uint64_t)) {
    const std::uint64_t word = pattern_word(owner, reader, thread, offset / sizeof(std::uint64_t));
    const std::size_t length = std::min(sizeof(word), size - offset);
    if (std::memcmp(bytes + offset, &word, length) == 0) continue;
    throw std::runtime_error(what + ": bytes " + std::to_string(offset) + ".." +
                             std::to_string(offset + length) + " of " + std::to_string(size) +
                             " are wrong (payload from rank " + std::to_string(owner) +
                             " to rank " + std::to_string(reader) + ", thread " +
                             std::to_string(thread) + ")");
  }
}

// ---- local completions ----

// One operation a thread posted, and what its completion must say.
struct op_record_t {
  std::string what;         // "send to rank 2 (thread 1)", for messages
  status_t expected;        // rank, tag, size, buffer, user_context
  bool status_checked = true;  // false: completed by a counter (no status)
  util::atomic<int> completions{0};
  status_t status;  // the last completion's; written before the release below

  void complete(const status_t& completion) {
    status = completion;
    // release: pairs with the acquire in completed(); the owner reads status.
    completions.fetch_add(1, util::mo_release);
  }
  int completed() const { return completions.load(util::mo_acquire); }
};

// Callbacks (handlers, graph edges) are plain function pointers: they find
// their record through the user_context they are given. A key nobody
// registered is a status the runtime made up or misdirected: counted, since
// a callback must not throw.
class record_registry_t {
 public:
  void add(const void* key, op_record_t* record) {
    util::spinlock_guard_t guard(lock_);
    records_[key] = record;
  }
  void remove(const void* key) {
    util::spinlock_guard_t guard(lock_);
    records_.erase(key);
  }
  op_record_t* find(const void* key) {
    util::spinlock_guard_t guard(lock_);
    auto it = records_.find(key);
    return it == records_.end() ? nullptr : it->second;
  }
  void complete(const status_t& status) {
    op_record_t* record = find(status.user_context);
    if (record == nullptr) {
      note_stray();
      return;
    }
    record->complete(status);
  }
  // relaxed: a count read after the run's threads joined.
  void note_stray() { strays_.fetch_add(1, util::mo_relaxed); }
  std::int64_t strays() const { return strays_.load(util::mo_relaxed); }  // relaxed: see above

 private:
  util::spinlock_t lock_;
  std::map<const void*, op_record_t*> records_;  // under lock_
  util::atomic<std::int64_t> strays_{0};
};

record_registry_t& records() {
  static record_registry_t registry;
  return registry;
}

// The keys a thread registered, forgotten when it is done (or unwinds).
class record_keys_t {
 public:
  record_keys_t() = default;
  record_keys_t(const record_keys_t&) = delete;
  record_keys_t& operator=(const record_keys_t&) = delete;
  ~record_keys_t() {
    for (const void* key : keys_) records().remove(key);
  }
  void add(const void* key, op_record_t* record) {
    records().add(key, record);
    keys_.push_back(key);
  }

 private:
  std::vector<const void*> keys_;
};

void local_handler(status_t status) { records().complete(status); }

void graph_edge_to_end(status_t status, void* /*src_value*/, void* /*dst_value*/) {
  records().complete(status);
}

// ---- remote completions ----

completion_t remote_completion_of(const workload_t& workload) {
  if (workload.completion == completion_t::graph) return completion_t::cq_lcrq;
  if (workload.completion == completion_t::counter && workload.paradigm == paradigm_t::am) {
    return completion_t::cq_lcrq;
  }
  return workload.completion;
}

bool has_remote_completion(paradigm_t paradigm) {
  return paradigm == paradigm_t::am || paradigm == paradigm_t::put_signal ||
         paradigm == paradigm_t::get_signal;
}

// What thread t's remote completion object received: one status per peer.
class remote_inbox_t {
 public:
  // Registers itself under (runtime, tag) for the handler kind's lookup.
  remote_inbox_t(completion_t kind, int expected_count, const void* runtime, tag_t tag)
      : kind_(kind), expected_count_(expected_count), runtime_(runtime), tag_(tag) {
    switch (kind) {
      case completion_t::sync:
        comp_ = alloc_sync_x().threshold(expected_count)();
        break;
      case completion_t::cq_lcrq:
        comp_ = alloc_cq_x().cq_type(attr_cq_type_t::lcrq)();
        break;
      case completion_t::cq_array:
        comp_ = alloc_cq_x().cq_type(attr_cq_type_t::array_atomic)();
        break;
      case completion_t::handler:
        comp_ = alloc_handler(&remote_handler);
        break;
      case completion_t::counter:
        comp_ = alloc_counter();
        break;
      case completion_t::graph:
        throw std::logic_error("a graph is not a remote completion object");
    }
    rcomp_ = register_rcomp(comp_);
    directory_t& d = directory();
    util::spinlock_guard_t guard(d.lock);
    d.inboxes[{runtime_, tag_}] = this;
  }
  // Only forgets the lookup entry; release() frees the completion object
  // (after a failure the runtime's teardown frees it instead).
  ~remote_inbox_t() {
    directory_t& d = directory();
    util::spinlock_guard_t guard(d.lock);
    d.inboxes.erase({runtime_, tag_});
  }
  remote_inbox_t(const remote_inbox_t&) = delete;
  remote_inbox_t& operator=(const remote_inbox_t&) = delete;

  void release() {
    deregister_rcomp(rcomp_);
    free_comp(&comp_);
  }

  rcomp_t rcomp() const { return rcomp_; }
  completion_t kind() const { return kind_; }

  // Moves what arrived into statuses(); true once every peer was heard.
  bool poll() {
    switch (kind_) {
      case completion_t::sync: {
        std::vector<status_t> round(static_cast<std::size_t>(expected_count_));
        if (sync_test(comp_, round.data())) statuses_ = std::move(round);
        break;
      }
      case completion_t::cq_lcrq:
      case completion_t::cq_array:
        for (status_t status = cq_pop(comp_); !status.is_retry(); status = cq_pop(comp_)) {
          statuses_.push_back(status);
        }
        break;
      case completion_t::handler: {
        util::spinlock_guard_t guard(handled_lock_);
        statuses_.insert(statuses_.end(), handled_.begin(), handled_.end());
        handled_.clear();
        break;
      }
      case completion_t::counter:
        return counter_get(comp_) >= expected_count_;
      case completion_t::graph:
        break;
    }
    return statuses_.size() >= static_cast<std::size_t>(expected_count_);
  }
  // Statuses beyond one per peer (after everything was delivered): a
  // message delivered twice. A synchronizer re-arms after its round, so an
  // extra signal is not visible there.
  std::int64_t extra_count() {
    (void)poll();
    if (kind_ == completion_t::counter) return counter_get(comp_) - expected_count_;
    return static_cast<std::int64_t>(statuses_.size()) - expected_count_;
  }
  const std::vector<status_t>& statuses() const { return statuses_; }

  // The handler of handler-kind inboxes: finds the inbox by its runtime and
  // the tag (the thread index every workload message carries).
  static void remote_handler(status_t status);

 private:
  using key_t = std::pair<const void*, tag_t>;
  struct directory_t {
    util::spinlock_t lock;
    std::map<key_t, remote_inbox_t*> inboxes;  // under lock
  };
  static directory_t& directory() {
    static directory_t instance;
    return instance;
  }

  const completion_t kind_;
  const int expected_count_;
  const void* const runtime_;
  const tag_t tag_;
  comp_t comp_;
  rcomp_t rcomp_ = 0;
  std::vector<status_t> statuses_;  // the owning thread's
  util::spinlock_t handled_lock_;
  std::vector<status_t> handled_;  // handler kind: under handled_lock_
};

void remote_inbox_t::remote_handler(status_t status) {
  const void* runtime = get_g_runtime().p_impl;
  remote_inbox_t* inbox = nullptr;
  {
    directory_t& d = directory();
    util::spinlock_guard_t guard(d.lock);
    auto it = d.inboxes.find({runtime, status.tag});
    if (it != d.inboxes.end()) inbox = it->second;
  }
  if (inbox == nullptr) {
    records().note_stray();
    return;
  }
  util::spinlock_guard_t guard(inbox->handled_lock_);
  inbox->handled_.push_back(status);
}

// ---- one rank ----

enum class op_kind_t : std::uint8_t { send, recv, am, put, get };

struct op_t {
  op_kind_t kind = op_kind_t::send;
  int rank = 0;
  void* buffer = nullptr;
  std::size_t size = 0;
  tag_t tag = 0;
  rcomp_t remote_comp = 0;
  std::uintptr_t remote_disp = 0;
  rmr_t rmr;
  comp_semantic_t comp_semantic = comp_semantic_t::memory;
  op_record_t* record = nullptr;
};

struct rank_t {
  sim::rank_env_t* env = nullptr;
  workload_t workload;
  std::size_t size = 0;
  int me = 0;
  int ranks_count = 0;
  std::vector<device_t> devices;  // by thread; all the default device when shared
  std::vector<device_t> owned_devices;
  comp_t shared_cq;  // cq kinds: every thread's local completions
  std::vector<std::unique_ptr<remote_inbox_t>> inboxes;  // by thread
  util::atomic<int> threads_done{0};  // threads of this rank past their work
  std::vector<std::uint8_t> window;  // RMA: region (source, thread) per peer thread
  std::vector<mr_t> window_mrs;      // by device
  std::vector<std::vector<rmr_t>> rmrs;  // [device][rank]

  int threads_count() const { return workload.threads_count; }
  std::size_t region_offset(int source, int thread) const {
    return (static_cast<std::size_t>(source) * threads_count() + thread) * size;
  }
  std::size_t device_slot(int thread) const { return workload.device_per_thread ? thread : 0; }
  // Devices the run uses: one per thread, or the shared one.
  std::size_t device_slots_count() const {
    return workload.device_per_thread ? static_cast<std::size_t>(threads_count()) : 1;
  }
};

void progress_or_wait(rank_t& rank, device_t device, const char* what) {
  if (progress_x().device(device)().is_retry()) rank.env->wait(what);
}

// Builds the functor of `op` and hands it to `use` (which posts it, or
// makes it a graph node).
template <typename Use>
auto with_functor(const rank_t& rank, const op_t& op, device_t device, comp_t comp, Use&& use) {
  const bool allow_retry = !rank.workload.backlog;
  switch (op.kind) {
    case op_kind_t::send:
      return use(post_send_x(op.rank, op.buffer, op.size, op.tag, comp)
                     .device(device)
                     .user_context(op.record)
                     .allow_retry(allow_retry));
    case op_kind_t::recv:
      return use(post_recv_x(op.rank, op.buffer, op.size, op.tag, comp)
                     .device(device)
                     .user_context(op.record)
                     .allow_retry(allow_retry));
    case op_kind_t::am:
      return use(post_am_x(op.rank, op.buffer, op.size, comp, op.remote_comp)
                     .device(device)
                     .tag(op.tag)
                     .user_context(op.record)
                     .allow_retry(allow_retry));
    case op_kind_t::put:
      return use(post_put_x(op.rank, op.buffer, op.size, comp, op.remote_disp, op.rmr)
                     .device(device)
                     .tag(op.tag)
                     .remote_comp(op.remote_comp)
                     .comp_semantic(op.comp_semantic)
                     .user_context(op.record)
                     .allow_retry(allow_retry));
    case op_kind_t::get:
      break;
  }
  return use(post_get_x(op.rank, op.buffer, op.size, comp, op.remote_disp, op.rmr)
                 .device(device)
                 .tag(op.tag)
                 .remote_comp(op.remote_comp)
                 .user_context(op.record)
                 .allow_retry(allow_retry));
}

// What thread `thread` posts, and the buffers its operations use.
struct thread_plan_t {
  std::vector<std::unique_ptr<op_record_t>> records;
  std::vector<op_t> ops;
  std::vector<std::vector<std::uint8_t>> out;  // by rank: payload sent to it
  std::vector<std::vector<std::uint8_t>> in;   // by rank: what it sends us / we read
};

op_t& add_op(thread_plan_t& plan, op_kind_t kind, int peer, void* buffer, std::size_t size,
             int thread, const char* what) {
  auto record = std::make_unique<op_record_t>();
  record->what = std::string(what) + " rank " + std::to_string(peer) + " (thread " +
                 std::to_string(thread) + ", " + std::to_string(size) + " bytes)";
  record->expected.rank = peer;
  record->expected.tag = static_cast<tag_t>(thread);
  record->expected.size = size;
  record->expected.buffer = buffer;
  record->expected.user_context = record.get();
  op_t op;
  op.kind = kind;
  op.rank = peer;
  op.buffer = buffer;
  op.size = size;
  op.tag = static_cast<tag_t>(thread);
  op.record = record.get();
  plan.records.push_back(std::move(record));
  plan.ops.push_back(op);
  return plan.ops.back();
}

thread_plan_t plan_thread(const rank_t& rank, int thread) {
  thread_plan_t plan;
  const std::size_t peers = static_cast<std::size_t>(rank.ranks_count);
  plan.out.resize(peers);
  plan.in.resize(peers);
  // Every buffer has a byte at least: an empty message still names a real
  // buffer, and the status must give that buffer back.
  const std::size_t capacity = rank.size > 0 ? rank.size : 1;
  const paradigm_t paradigm = rank.workload.paradigm;
  const std::size_t slot = rank.device_slot(thread);
  for (int peer = 0; peer < rank.ranks_count; ++peer) {
    if (peer == rank.me) continue;
    std::vector<std::uint8_t>& out = plan.out[static_cast<std::size_t>(peer)];
    std::vector<std::uint8_t>& in = plan.in[static_cast<std::size_t>(peer)];
    out.assign(capacity, 0);
    in.assign(capacity, 0);
    fill(out.data(), rank.size, rank.me, peer, thread);
    const rcomp_t rcomp = has_remote_completion(paradigm) ? rank.inboxes[thread]->rcomp() : 0;
    switch (paradigm) {
      case paradigm_t::send_recv:
        add_op(plan, op_kind_t::recv, peer, in.data(), rank.size, thread, "receive from");
        add_op(plan, op_kind_t::send, peer, out.data(), rank.size, thread, "send to");
        break;
      case paradigm_t::am:
        add_op(plan, op_kind_t::am, peer, out.data(), rank.size, thread, "active message to")
            .remote_comp = rcomp;
        break;
      case paradigm_t::put:
      case paradigm_t::put_signal: {
        op_t& op = add_op(plan, op_kind_t::put, peer, out.data(), rank.size, thread, "put to");
        op.remote_comp = rcomp;
        op.rmr = rank.rmrs[slot][static_cast<std::size_t>(peer)];
        op.remote_disp = rank.region_offset(rank.me, thread);
        // Without a remote completion, the network semantic is how the
        // initiator learns its data is in the target's window.
        if (paradigm == paradigm_t::put) op.comp_semantic = comp_semantic_t::network;
        break;
      }
      case paradigm_t::get:
      case paradigm_t::get_signal: {
        op_t& op = add_op(plan, op_kind_t::get, peer, in.data(), rank.size, thread, "get from");
        op.remote_comp = rcomp;
        op.rmr = rank.rmrs[slot][static_cast<std::size_t>(peer)];
        op.remote_disp = rank.region_offset(rank.me, thread);
        break;
      }
    }
  }
  return plan;
}

// Local completions of the kinds a thread polls (all but graph): the
// completion object each operation gets, and moving what arrived into the
// operations' records.
class local_waiter_t {
 public:
  explicit local_waiter_t(const rank_t& rank) : rank_(rank) {
    switch (rank.workload.completion) {
      case completion_t::handler:
        comp_ = alloc_handler(&local_handler);
        break;
      case completion_t::counter:
        comp_ = alloc_counter();
        break;
      case completion_t::cq_lcrq:
      case completion_t::cq_array:
        comp_ = rank.shared_cq;
        break;
      case completion_t::sync:
        break;
      case completion_t::graph:
        throw std::logic_error("graph operations are posted by their graph");
    }
  }
  local_waiter_t(const local_waiter_t&) = delete;
  local_waiter_t& operator=(const local_waiter_t&) = delete;

  // A synchronizer per operation; one shared object of the other kinds.
  comp_t comp_for(op_record_t* record) {
    if (rank_.workload.completion != completion_t::sync) return comp_;
    syncs_.emplace_back(record, alloc_sync());
    return syncs_.back().second;
  }
  // `record`'s operation returned posted: its completion comes through us.
  void note_posted(op_record_t* record) {
    if (rank_.workload.completion != completion_t::counter) return;
    record->status_checked = false;  // a counter keeps no status
    counted_.push_back(record);
  }
  void poll() {
    switch (rank_.workload.completion) {
      case completion_t::sync:
        for (auto& entry : syncs_) {
          status_t status;
          if (entry.first->completed() == 0 && sync_test(entry.second, &status)) {
            entry.first->complete(status);
          }
        }
        return;
      case completion_t::cq_lcrq:
      case completion_t::cq_array:
        for (status_t s = cq_pop(comp_); !s.is_retry(); s = cq_pop(comp_)) records().complete(s);
        return;
      case completion_t::counter:
        if (!counted_done_ && counter_get(comp_) >= static_cast<std::int64_t>(counted_.size())) {
          for (op_record_t* record : counted_) record->complete(record->expected);
          counted_done_ = true;
        }
        return;
      case completion_t::handler:  // the handler completes records itself
      case completion_t::graph:
        return;
    }
  }
  // Once every operation completed: checks that no completion object heard
  // of one twice, and frees them. (After a failure the runtime's teardown
  // frees them instead.)
  void release() {
    for (auto& entry : syncs_) {
      status_t status;
      require(!sync_test(entry.second, &status),
              entry.first->what + ": its synchronizer was signalled again");
      free_comp(&entry.second);
    }
    const completion_t kind = rank_.workload.completion;
    if (kind == completion_t::counter) {
      const std::int64_t extra = counter_get(comp_) - static_cast<std::int64_t>(counted_.size());
      require(extra == 0, "the counter was signalled " + std::to_string(extra) +
                              " more times than operations were posted");
    }
    if (kind == completion_t::handler || kind == completion_t::counter) free_comp(&comp_);
  }

 private:
  const rank_t& rank_;
  comp_t comp_;
  std::vector<std::pair<op_record_t*, comp_t>> syncs_;
  std::vector<op_record_t*> counted_;
  bool counted_done_ = false;
};

bool all_completed(const thread_plan_t& plan) {
  for (const auto& record : plan.records) {
    if (record->completed() == 0) return false;
  }
  return true;
}

// Posts every operation of the plan directly and waits for them.
void post_and_wait(rank_t& rank, thread_plan_t& plan, device_t device) {
  local_waiter_t waiter(rank);
  record_keys_t keys;
  for (const op_t& op : plan.ops) {
    keys.add(op.record, op.record);
    const bool null_comp =
        rank.workload.comp_null && (op.kind == op_kind_t::send || op.kind == op_kind_t::am);
    const comp_t comp = null_comp ? COMP_NULL : waiter.comp_for(op.record);
    status_t status;
    workload_stats_t* stats = rank.workload.stats;
    for (;;) {
      status = with_functor(rank, op, device, comp, [](const auto& post) { return post(); });
      if (!status.is_retry()) break;
      require(!rank.workload.backlog && !null_comp,
              op.record->what + ": retry returned although retry was not allowed");
      if (stats != nullptr) stats->retries.fetch_add(1, util::mo_relaxed);  // relaxed: a count
      progress_or_wait(rank, device, "a post that returned retry");
    }
    // posted_backlog: queued; done_backlog: queued, and waited for inside
    // the post (COMP_NULL).
    const errorcode_t code = status.error.errorcode;
    if (stats != nullptr &&
        (code == errorcode_t::posted_backlog || code == errorcode_t::done_backlog)) {
      stats->backlogged.fetch_add(1, util::mo_relaxed);  // relaxed: a count
    }
    require(status.is_done() || status.is_posted(), op.record->what + ": neither done nor posted");
    require(status.is_done() || !null_comp,
            op.record->what + ": a COMP_NULL post returned posted, not done");
    if (status.is_done()) {
      op.record->complete(status);
      // COMP_NULL: the buffer is ours again when the post returns.
      // Scribbling over it makes the target's pattern check catch a runtime
      // that still reads it.
      if (null_comp && op.size > 0) std::memset(op.buffer, 0xA5, op.size);
    } else {
      waiter.note_posted(op.record);
    }
  }
  while (!all_completed(plan)) {
    waiter.poll();
    if (!all_completed(plan)) progress_or_wait(rank, device, "local completions");
  }
  waiter.release();
}

// Makes every operation of the plan a node of one graph, runs it, waits.
void run_graph(rank_t& rank, thread_plan_t& plan, device_t device) {
  comp_t graph = alloc_graph();
  record_keys_t keys;
  for (const op_t& op : plan.ops) {
    const graph_node_t node = with_functor(
        rank, op, device, graph, [graph](const auto& post) { return graph_add_node_op(graph, post); });
    op.record->expected.user_context = node;  // graph_add_node_op's doing
    keys.add(node, op.record);
    graph_add_edge_x(graph, node, GRAPH_END).fn(&graph_edge_to_end)();
  }
  graph_start(graph);
  while (graph_test(graph).is_retry()) progress_or_wait(rank, device, "the graph");
  require(all_completed(plan), "the graph completed before all its operations did");
  free_comp(&graph);
}

void check_local(const rank_t& rank, const thread_plan_t& plan, int thread) {
  for (const auto& record : plan.records) {
    const int completions = record->completed();
    require(completions == 1, record->what + ": completed " + std::to_string(completions) +
                                  " times");
    if (!record->status_checked) continue;
    const status_t& got = record->status;
    const status_t& want = record->expected;
    require(got.is_done(), record->what + ": status " + got.error.get_str());
    require(got.rank == want.rank, record->what + ": status.rank " + std::to_string(got.rank));
    require(got.tag == want.tag, record->what + ": status.tag " + std::to_string(got.tag));
    require(got.size == want.size, record->what + ": status.size " + std::to_string(got.size));
    require(got.buffer == want.buffer, record->what + ": status.buffer is not its buffer");
    require(got.user_context == want.user_context,
            record->what + ": status.user_context is not its user_context");
  }
  const paradigm_t paradigm = rank.workload.paradigm;
  const bool receives = paradigm == paradigm_t::send_recv || paradigm == paradigm_t::get ||
                        paradigm == paradigm_t::get_signal;
  if (!receives) return;
  for (int peer = 0; peer < rank.ranks_count; ++peer) {
    if (peer == rank.me) continue;
    require_pattern(plan.in[static_cast<std::size_t>(peer)].data(), rank.size, peer, rank.me,
                    thread, "the data received from rank " + std::to_string(peer));
  }
}

void check_window_region(const rank_t& rank, int source, int thread) {
  require_pattern(rank.window.data() + rank.region_offset(source, thread), rank.size, source,
                  rank.me, thread, "the window region of rank " + std::to_string(source));
}

// Waits for thread `thread`'s remote completions (one per peer) and checks
// them.
void wait_remote(rank_t& rank, int thread, device_t device) {
  remote_inbox_t& inbox = *rank.inboxes[static_cast<std::size_t>(thread)];
  while (!inbox.poll()) progress_or_wait(rank, device, "remote completions");
  if (inbox.kind() == completion_t::counter) return;  // no statuses; windows checked at the end
  std::vector<bool> heard(static_cast<std::size_t>(rank.ranks_count), false);
  for (const status_t& status : inbox.statuses()) {
    const std::string what = "a remote completion from rank " + std::to_string(status.rank);
    require(status.is_done(), what + ": status " + status.error.get_str());
    require(status.rank >= 0 && status.rank < rank.ranks_count && status.rank != rank.me,
            what + ": not a peer");
    require(!heard[static_cast<std::size_t>(status.rank)], what + ": heard twice");
    heard[static_cast<std::size_t>(status.rank)] = true;
    require(status.tag == static_cast<tag_t>(thread), what + ": tag " + std::to_string(status.tag));
    switch (rank.workload.paradigm) {
      case paradigm_t::am:
        require(status.size == rank.size, what + ": size " + std::to_string(status.size));
        require(status.size == 0 || status.buffer != nullptr, what + ": no buffer");
        require_pattern(status.buffer, status.size, status.rank, rank.me, thread, what);
        std::free(status.buffer);  // the default allocator is malloc
        break;
      case paradigm_t::put_signal:
        require(status.size == rank.size, what + ": size " + std::to_string(status.size));
        check_window_region(rank, status.rank, thread);
        break;
      default:
        break;
    }
  }
}

void run_thread(rank_t& rank, int thread) {
  const device_t device = rank.devices[static_cast<std::size_t>(thread)];
  thread_plan_t plan = plan_thread(rank, thread);
  if (rank.workload.completion == completion_t::graph) {
    run_graph(rank, plan, device);
  } else {
    post_and_wait(rank, plan, device);
  }
  check_local(rank, plan, thread);
  if (has_remote_completion(rank.workload.paradigm)) wait_remote(rank, thread, device);
  // A completed operation may still owe the network a protocol step (a get's
  // signal, a rendezvous FIN) that found it busy and waits in the device's
  // backlog; once this thread stops, nobody progresses a device of its own.
  wait_drained_x().device(device)();
  // With manual progress (libfabric over tcp or shm) a peer's get or put
  // through this thread's device completes only while someone polls it: keep
  // polling until every thread of the rank is done; from then on
  // finish_rank() polls every device until the whole job is.
  // relaxed: the count only ends the polling; it publishes nothing (what
  // finish_rank() reads of the threads is ordered by their join).
  rank.threads_done.fetch_add(1, util::mo_relaxed);
  while (rank.threads_done.load(util::mo_relaxed) < rank.threads_count()) {
    progress_or_wait(rank, device, "the rank's other threads");
  }
}

// register_memory throws when the network refuses (the registration_failure
// fault); the window is registered before any traffic, so trying again is
// the user's remedy.
constexpr int window_registration_attempts_max = 64;

mr_t register_window(rank_t& rank, device_t device) {
  for (int attempt = 1;; ++attempt) {
    try {
      return register_memory_x(rank.window.data(), rank.window.size()).device(device)();
    } catch (const std::runtime_error&) {
      if (attempt == window_registration_attempts_max) throw;
    }
    rank.env->wait("window registration");
  }
}

void setup_rank(rank_t& rank) {
  const workload_t& workload = rank.workload;
  const int threads = workload.threads_count;
  if (workload.device_per_thread) {
    // Collective: every rank allocates them here, in the same order.
    for (int t = 0; t < threads; ++t) rank.owned_devices.push_back(alloc_device());
    rank.devices = rank.owned_devices;
  } else {
    rank.devices.assign(static_cast<std::size_t>(threads), get_default_device());
  }
  if (workload.completion == completion_t::cq_lcrq || workload.completion == completion_t::cq_array) {
    rank.shared_cq = alloc_cq_x()
                         .cq_type(workload.completion == completion_t::cq_lcrq
                                      ? attr_cq_type_t::lcrq
                                      : attr_cq_type_t::array_atomic)();
  }
  if (has_remote_completion(workload.paradigm)) {
    // Registered in thread order on every rank: thread t's rcomp is the
    // same number everywhere.
    for (int t = 0; t < threads; ++t) {
      rank.inboxes.push_back(std::make_unique<remote_inbox_t>(
          remote_completion_of(workload), rank.ranks_count - 1, get_g_runtime().p_impl,
          static_cast<tag_t>(t)));
    }
  }
  const paradigm_t paradigm = workload.paradigm;
  if (paradigm != paradigm_t::send_recv && paradigm != paradigm_t::am) {
    rank.window.assign(std::max<std::size_t>(1, rank.region_offset(rank.ranks_count, 0)), 0);
    if (paradigm == paradigm_t::get || paradigm == paradigm_t::get_signal) {
      for (int source = 0; source < rank.ranks_count; ++source) {
        for (int t = 0; t < threads; ++t) {
          fill(rank.window.data() + rank.region_offset(source, t), rank.size, rank.me, source, t);
        }
      }
    }
    const std::size_t slots = rank.device_slots_count();
    rank.rmrs.assign(slots, std::vector<rmr_t>(static_cast<std::size_t>(rank.ranks_count)));
    for (std::size_t slot = 0; slot < slots; ++slot) {
      rank.window_mrs.push_back(register_window(rank, rank.devices[slot]));
      const rmr_t mine = get_rmr(rank.window_mrs.back());
      static_assert(sizeof(rmr_t) <= sim::allgather_bytes_max, "an rmr fits the allgather");
      rank.env->allgather(&mine, sizeof(mine), rank.rmrs[slot].data());
    }
  }
  // Nobody sends before every peer registered its rcomps and windows.
  rank.env->barrier();
}

void finish_rank(rank_t& rank) {
  // One barrier per device, in the same order everywhere: each polls what
  // its device still holds (completions of sends the peers received), and
  // after the first no peer will touch our window again. While one waits,
  // every device of this rank is polled: a peer thread may still wait on
  // an operation that needs this rank's progress on its own device (with
  // manual progress, e.g. libfabric shm, a small put completes only once
  // the target polls), and it would never reach the barrier otherwise.
  const std::size_t slots = rank.device_slots_count();
  for (std::size_t slot = 0; slot < slots; ++slot) {
    comp_t done = alloc_sync();
    barrier_x().device(rank.devices[slot]).comp(done)();
    while (!sync_test(done, nullptr)) {
      bool idle = true;
      for (std::size_t other = 0; other < slots; ++other) {
        if (progress_x().device(rank.devices[other])().is_done()) idle = false;
      }
      if (idle) rank.env->wait("the barriers that end the run");
    }
    free_comp(&done);
  }
  if (rank.workload.paradigm == paradigm_t::put ||
      (rank.workload.paradigm == paradigm_t::put_signal && !rank.inboxes.empty() &&
       rank.inboxes.front()->kind() == completion_t::counter)) {
    for (int source = 0; source < rank.ranks_count; ++source) {
      if (source == rank.me) continue;
      for (int t = 0; t < rank.threads_count(); ++t) check_window_region(rank, source, t);
    }
  }
  for (std::size_t t = 0; t < rank.inboxes.size(); ++t) {
    const std::int64_t extra = rank.inboxes[t]->extra_count();
    require(extra == 0, "thread " + std::to_string(t) + "'s remote completion object got " +
                            std::to_string(extra) + " completions too many");
    rank.inboxes[t]->release();
  }
  rank.inboxes.clear();
  if (!rank.shared_cq.is_empty()) {
    require(cq_pop(rank.shared_cq).is_retry(), "the completion queue holds an extra status");
    free_comp(&rank.shared_cq);
  }
  for (mr_t& mr : rank.window_mrs) deregister_memory(&mr);
  for (device_t& device : rank.owned_devices) free_device(&device);
}

}  // namespace

const char* get_paradigm_str(paradigm_t paradigm) {
  switch (paradigm) {
    case paradigm_t::send_recv: return "send_recv";
    case paradigm_t::am: return "am";
    case paradigm_t::put: return "put";
    case paradigm_t::put_signal: return "put_signal";
    case paradigm_t::get: return "get";
    case paradigm_t::get_signal: return "get_signal";
  }
  return "?";
}

const char* get_size_class_str(size_class_t size) {
  switch (size) {
    case size_class_t::zero: return "zero";
    case size_class_t::eight: return "eight";
    case size_class_t::inject: return "inject";
    case size_class_t::inject_plus_1: return "inject_plus_1";
    case size_class_t::bcopy: return "bcopy";
    case size_class_t::bcopy_plus_1: return "bcopy_plus_1";
    case size_class_t::k64: return "64KiB";
    case size_class_t::m1: return "1MiB";
  }
  return "?";
}

const char* get_completion_str(completion_t completion) {
  switch (completion) {
    case completion_t::sync: return "sync";
    case completion_t::cq_lcrq: return "cq_lcrq";
    case completion_t::cq_array: return "cq_array";
    case completion_t::handler: return "handler";
    case completion_t::counter: return "counter";
    case completion_t::graph: return "graph";
  }
  return "?";
}

std::string describe(const workload_t& workload) {
  std::string text = std::string(get_paradigm_str(workload.paradigm)) + "_" +
                     get_size_class_str(workload.size) + "_" +
                     get_completion_str(workload.completion) + "_t" +
                     std::to_string(workload.threads_count) +
                     (workload.device_per_thread ? "_device_per_thread" : "_shared_device");
  if (workload.backlog) text += "_backlog";
  if (workload.comp_null) text += "_comp_null";
  if (workload.rdv_protocol == attr_rdv_protocol_t::write) text += "_rdv_write";
  return text;
}

std::size_t resolve_size(size_class_t size, std::size_t bcopy_size_max) {
  switch (size) {
    case size_class_t::zero: return 0;
    case size_class_t::eight: return 8;
    case size_class_t::inject: return sim::world_options_t().inject_size_max;
    case size_class_t::inject_plus_1: return sim::world_options_t().inject_size_max + 1;
    case size_class_t::bcopy: return bcopy_size_max;
    case size_class_t::bcopy_plus_1: return bcopy_size_max + 1;
    case size_class_t::k64: return std::size_t{64} << 10;
    case size_class_t::m1: return std::size_t{1} << 20;
  }
  return 0;
}

int devices_per_rank(const workload_t& workload) {
  return 1 + (workload.device_per_thread ? workload.threads_count : 0);
}

void run_workload(sim::rank_env_t& env, const workload_t& workload) {
  require(workload.threads_count >= 1, "a workload needs a thread");
  require(!workload.comp_null || workload.completion != completion_t::graph,
          "COMP_NULL sends are not graph nodes");
  g_runtime_init_x().rdv_protocol(workload.rdv_protocol)();
  rank_t rank;
  rank.env = &env;
  rank.workload = workload;
  rank.size = resolve_size(workload.size, get_max_bcopy_size());
  rank.me = get_rank_me();
  rank.ranks_count = get_rank_n();
  const std::int64_t strays_before = records().strays();
  setup_rank(rank);
  env.run_threads(workload.threads_count, [&rank](int thread) { run_thread(rank, thread); });
  finish_rank(rank);
  // Any rank's stray counts: every rank of the run checks the same total.
  require(records().strays() == strays_before,
          "a callback got a status no operation of the run is waiting for");
  g_runtime_fina();
}

}  // namespace lci::runtime_test
