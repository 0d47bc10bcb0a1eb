// A program's own completion object (lci::comp_impl_t subclassed, as
// runtimes built on upstream LCI do: lci/comp/comp_impl.hpp states the
// contract) on every post kind and completion path: send, recv, an active
// message (local completion and, through register_rcomp, the remote one),
// put, put with signal, get; each at an eager and a rendezvous size, with
// allow_done on (a post may complete at once) and off (signal() is called
// inside the post or later inside progress). Also register_rcomp(COMP_NULL):
// a put with signal, and an active message, to a target that wants no
// completion.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "sim/sim_process.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::require;

// Records every status it is signalled with; signal() may run on any thread.
class recording_comp_t : public lci::comp_impl_t {
 public:
  void signal(lci::status_t status) override {
    std::lock_guard<std::mutex> guard(lock_);
    statuses_.push_back(status);
    // release: pairs with the acquire in wait_for(), after the push.
    count_.fetch_add(1, std::memory_order_release);
  }

  // Progresses until `count` statuses came in; returns the count-th.
  lci::status_t wait_for(int count) {
    while (count_.load(std::memory_order_acquire) < count) (void)lci::progress();
    std::lock_guard<std::mutex> guard(lock_);
    return statuses_[count - 1];
  }
  int count() const { return count_.load(std::memory_order_acquire); }

 private:
  std::mutex lock_;
  std::vector<lci::status_t> statuses_;  // under lock_
  std::atomic<int> count_{0};
};

// Runs `body` as two ranks over `seeds_count` seeds.
void run_two_ranks(void (*body)(lci::sim::rank_env_t&), std::size_t seeds_count) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = seeds_count;
  lci::sim::expect_runs_ok(2, sweep, body);
}

void fill(std::vector<char>& buffer, int seed) {
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<char>(seed + i * 3);
}
std::vector<char> filled(std::size_t size, int seed) {
  std::vector<char> buffer(size);
  fill(buffer, seed);
  return buffer;
}

// One post's own completion object, wrapped as upstream's programs wrap
// theirs (comp_t from a void*).
struct one_post_t {
  recording_comp_t object;
  lci::comp_t comp{static_cast<void*>(&object)};

  // The post's status if done at once, else the one signal() got; either
  // way the object is signalled exactly when the post was posted.
  lci::status_t completion(lci::status_t posted, bool allow_done, const std::string& what) {
    if (!allow_done) require(!posted.is_done(), what + ": done despite allow_done(false)");
    if (posted.is_done()) {
      require(object.count() == 0, what + ": done, yet signalled");
      return posted;
    }
    require(posted.is_posted(), what + ": neither done nor posted");
    return object.wait_for(1);
  }
};

void check_status(const lci::status_t& status, int rank, const void* buffer, std::size_t size,
                  void* user_context, const std::string& what) {
  require(status.error.is_done(), what + ": not done");
  require(status.rank == rank, what + ": rank " + std::to_string(status.rank));
  require(status.get_buffer() == buffer, what + ": another buffer");
  require(status.size == size, what + ": size " + std::to_string(status.size));
  require(status.user_context == user_context, what + ": another user_context");
}

struct case_t {
  std::size_t size;
  bool allow_done;
};

void every_post_kind(lci::sim::rank_env_t& env) {
  lci::g_runtime_init();
  const int me = lci::get_rank_me();
  const int peer = 1 - me;
  recording_comp_t remote;
  const lci::comp_t remote_comp = &remote;  // the implicit form
  require(remote_comp.get_attr_comp_type() == lci::attr_comp_type_t::custom, "comp_type");
  const lci::rcomp_t rcomp = lci::register_rcomp(remote_comp);  // same number on both ranks
  int remote_signals = 0;
  const std::size_t bcopy = lci::get_max_bcopy_size();
  std::vector<char> window(2 * bcopy + 64, 0);
  lci::mr_t mr = lci::register_memory(window.data(), window.size());
  lci::rmr_t rmrs[2];
  const lci::rmr_t mine = lci::get_rmr(mr);
  env.allgather(&mine, sizeof(mine), rmrs);
  const lci::rmr_t peer_rmr = rmrs[peer];
  lci::tag_t tag = 0;
  int context_value = 0;
  void* const context = &context_value;

  for (const case_t c : {case_t{8, true}, case_t{8, false}, case_t{bcopy + 1, true},
                         case_t{bcopy + 1, false}}) {
    const std::string name = "size " + std::to_string(c.size) +
                             (c.allow_done ? ", allow_done" : ", not allow_done");
    const std::vector<char> expected = filled(c.size, peer);
    // send / recv
    ++tag;
    std::vector<char> out = filled(c.size, me), in(c.size, 0);
    one_post_t recv_post, send_post;
    const lci::status_t recv = lci::runtime_test::post_retrying([&] {
      return lci::post_recv_x(peer, in.data(), c.size, tag, recv_post.comp)
          .user_context(context)
          .allow_done(c.allow_done)();
    });
    env.barrier();  // both receives are posted before the sends
    const lci::status_t send = lci::runtime_test::post_retrying([&] {
      return lci::post_send_x(peer, out.data(), c.size, tag, send_post.comp)
          .user_context(context)
          .allow_done(c.allow_done)();
    });
    check_status(send_post.completion(send, c.allow_done, name + ": send"), peer, out.data(),
                 c.size, context, name + ": send");
    const lci::status_t received = recv_post.completion(recv, c.allow_done, name + ": recv");
    check_status(received, peer, in.data(), c.size, context, name + ": recv");
    require(received.tag == tag, name + ": recv tag");
    require(in == expected, name + ": recv data");

    // active message: local completion here, remote completion at the peer
    one_post_t am_post;
    const lci::status_t am = lci::runtime_test::post_retrying([&] {
      return lci::post_am_x(peer, out.data(), c.size, am_post.comp, rcomp)
          .tag(tag)
          .user_context(context)
          .allow_done(c.allow_done)();
    });
    check_status(am_post.completion(am, c.allow_done, name + ": am"), peer, out.data(), c.size,
                 context, name + ": am");
    const lci::status_t arrived = remote.wait_for(++remote_signals);
    require(arrived.rank == peer && arrived.tag == tag && arrived.size == c.size &&
                arrived.user_context == nullptr,
            name + ": am at the target");
    require(std::memcmp((char*)arrived.get_buffer(), expected.data(), c.size) == 0,
            name + ": am data");
    lci::get_allocator()->deallocate(arrived.buffer);
    env.barrier();  // both AMs arrived: the next signal of `remote` is a put's

    // put, put with signal to the peer's remote_comp, get
    one_post_t put_post, put_signal_post, get_post;
    const lci::status_t put = lci::runtime_test::post_retrying([&] {
      return lci::post_put_x(peer, out.data(), c.size, put_post.comp, 0, peer_rmr)
          .user_context(context)
          .allow_done(c.allow_done)();
    });
    check_status(put_post.completion(put, c.allow_done, name + ": put"), peer, out.data(),
                 c.size, context, name + ": put");
    const lci::status_t put_signal = lci::runtime_test::post_retrying([&] {
      return lci::post_put_x(peer, out.data(), c.size, put_signal_post.comp, 32, peer_rmr)
          .remote_comp(rcomp)
          .tag(tag)
          .user_context(context)
          .allow_done(c.allow_done)();
    });
    check_status(put_signal_post.completion(put_signal, c.allow_done, name + ": put with signal"),
                 peer, out.data(), c.size, context, name + ": put with signal");
    const lci::status_t landed = remote.wait_for(++remote_signals);
    require(landed.rank == peer && landed.tag == tag && landed.size == c.size &&
                landed.user_context == nullptr,
            name + ": put with signal at the target");
    require(std::memcmp(window.data() + 32, expected.data(), c.size) == 0,
            name + ": put with signal data");
    env.barrier();  // both puts landed before either rank reads back
    std::vector<char> got(c.size, 0);
    const lci::status_t get = lci::runtime_test::post_retrying([&] {
      return lci::post_get_x(peer, got.data(), c.size, get_post.comp, 32, peer_rmr)
          .user_context(context)
          .allow_done(c.allow_done)();
    });
    check_status(get_post.completion(get, c.allow_done, name + ": get"), peer, got.data(),
                 c.size, context, name + ": get");
    require(got == out, name + ": get data");
    env.barrier();  // the peer read this rank's window: the next round may overwrite it
    for (const one_post_t* post :
         {&recv_post, &send_post, &am_post, &put_post, &put_signal_post, &get_post}) {
      require(post->object.count() <= 1, name + ": a post signalled twice");
    }
  }
  lci::deregister_memory(&mr);
  lci::deregister_rcomp(rcomp);
  lci::barrier();
  lci::g_runtime_fina();
  require(remote.count() == remote_signals, "a remote completion signalled too often");
}

TEST(UserComp, EveryPostKindAndPath) { run_two_ranks(every_post_kind, 3); }

// A program's object where the runtime switches on the kind of a
// completion object: as a graph's and a non-blocking barrier's completion
// object it is signalled once; the typed operations refuse it.
void graphs_collectives_and_typed_operations(lci::sim::rank_env_t&) {
  lci::g_runtime_init();
  recording_comp_t object;
  const lci::comp_t comp(static_cast<void*>(&object));
  lci::barrier_x().comp(comp)();
  (void)object.wait_for(1);
  lci::comp_t graph = lci::alloc_graph_x().comp(comp)();
  const lci::graph_node_t node = lci::graph_add_node(graph, lci::GRAPH_NODE_DUMMY_CB);
  lci::graph_add_edge(graph, lci::GRAPH_START, node);
  lci::graph_add_edge(graph, node, lci::GRAPH_END);
  lci::graph_start(graph);
  (void)object.wait_for(2);
  require(lci::graph_test(graph).is_done(), "the graph's round is not done");
  lci::free_comp(&graph);
  lci::status_t status;
  lci::runtime_test::expect_invalid_argument(
      "sync_test", [&] { (void)lci::sync_test(comp, &status); }, {"another kind"});
  lci::runtime_test::expect_invalid_argument(
      "cq_pop", [&] { (void)lci::cq_pop(comp); }, {"another kind"});
  lci::runtime_test::expect_invalid_argument(
      "counter_get", [&] { (void)lci::counter_get(comp); }, {"another kind"});
  lci::g_runtime_fina();
  require(object.count() == 2, "signalled " + std::to_string(object.count()) + " times");
}

TEST(UserComp, GraphsCollectivesAndTypedOperations) {
  run_two_ranks(graphs_collectives_and_typed_operations, 2);
}

// Counts, per rank, the buffers handed back to the user allocator: the
// runtime frees an active message for an rcomp registered as COMP_NULL.
class counting_allocator_t : public lci::allocator_base_t {
 public:
  static constexpr int ranks_max = 2;
  void* allocate(std::size_t size) override { return lci::g_allocator_default.allocate(size); }
  void deallocate(void* ptr) override {
    // relaxed: a count read only by its own rank's progress loop
    frees_[lci::get_rank_me()].fetch_add(1, std::memory_order_relaxed);
    lci::g_allocator_default.deallocate(ptr);
  }
  int frees(int rank) const { return frees_[rank].load(std::memory_order_relaxed); }

 private:
  std::atomic<int> frees_[ranks_max] = {};
};
counting_allocator_t g_counting_allocator;

// register_rcomp(COMP_NULL): the rcomp of a target that wants no
// completion. A put with signal to it lands and signals nothing there; an
// active message to it is dropped, its buffer freed by the runtime. Eager
// and rendezvous sizes.
void no_remote_completion(lci::sim::rank_env_t& env) {
  lci::g_runtime_init();
  const int me = lci::get_rank_me();
  const int peer = 1 - me;
  // Every rank installs it: the simulated ranks share one process (and one
  // allocator), each real one has its own.
  lci::set_allocator(&g_counting_allocator);
  const lci::rcomp_t rcomp = lci::register_rcomp(lci::COMP_NULL);
  require(rcomp != 0, "register_rcomp(COMP_NULL) gave 0");
  const std::size_t bcopy = lci::get_max_bcopy_size();
  std::vector<char> window(bcopy + 1, 0);
  lci::mr_t mr = lci::register_memory(window.data(), window.size());
  lci::rmr_t rmrs[2];
  const lci::rmr_t mine = lci::get_rmr(mr);
  env.allgather(&mine, sizeof(mine), rmrs);
  int frees_expected = g_counting_allocator.frees(me);
  for (const std::size_t size : {std::size_t{8}, bcopy + 1}) {
    const std::vector<char> out = filled(size, me + static_cast<int>(size));
    char* const data = const_cast<char*>(out.data());
    lci::comp_t sync = lci::alloc_sync();
    lci::status_t status = lci::runtime_test::post_retrying([&] {
      return lci::post_put_x(peer, data, size, sync, 0, rmrs[peer])
          .remote_comp(rcomp)
          .comp_semantic(lci::comp_semantic_t::network)();  // done: landed at the peer
    });
    if (status.is_posted()) lci::sync_wait(sync, &status);
    require(status.error.is_done(), "put with signal to COMP_NULL's rcomp failed");
    status = lci::runtime_test::post_retrying(
        [&] { return lci::post_am(peer, data, size, sync, rcomp); });
    if (status.is_posted()) lci::sync_wait(sync, &status);
    require(status.error.is_done(), "am to COMP_NULL's rcomp failed");
    // The peer's active message arrives and is freed here.
    ++frees_expected;
    while (g_counting_allocator.frees(me) < frees_expected) (void)lci::progress();
    env.barrier();  // both puts landed
    require(std::memcmp(window.data(), filled(size, peer + static_cast<int>(size)).data(),
                        size) == 0,
            "the put's bytes did not land");
    env.barrier();  // read before the next round's put
    lci::free_comp(&sync);
  }
  require(g_counting_allocator.frees(me) == frees_expected, "a buffer freed twice");
  lci::deregister_memory(&mr);
  lci::deregister_rcomp(rcomp);
  lci::g_runtime_fina();
  env.barrier();  // no rank frees through it any more
  lci::set_allocator(nullptr);
}

TEST(UserComp, RegisterRcompOfCompNull) { run_two_ranks(no_remote_completion, 3); }

// free_comp needs no runtime: a runtime's completion object freed after
// g_runtime_fina (runtimes that free them from destructors run after it),
// and a program's own object freed by free_comp (deleted, as upstream's).
void free_after_fina(lci::sim::rank_env_t&) {
  lci::g_runtime_init();
  lci::comp_t cq = lci::alloc_cq();
  lci::comp_t sync = lci::alloc_sync();
  lci::comp_t own = static_cast<void*>(new recording_comp_t);
  lci::comp_signal(own, lci::status_t(lci::errorcode_t::done));
  lci::g_runtime_fina();
  lci::free_comp(&cq);
  lci::free_comp(&sync);
  lci::free_comp(&own);
  require(cq == nullptr && sync == nullptr && own == nullptr, "free_comp left a handle set");
  lci::runtime_test::expect_invalid_argument("free_comp twice", [&] { lci::free_comp(&cq); },
                                             {"empty"});
}

TEST(UserComp, FreeCompAfterRuntimeFina) { run_two_ranks(free_after_fina, 1); }

}  // namespace
