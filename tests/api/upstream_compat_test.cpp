// What upstream LCI programs use beyond the paper's API compiles and behaves
// as upstream documents it (docs/api_compat.md): status_t conversions and
// getters, the older constant names, enum names, and the global calls
// (global_initialize, get/set_g_default_attr) on the simulated network.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"

namespace {

// Runs `body` as one simulated rank, once.
template <typename body_t>
void on_one_rank(body_t body) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 1;
  sweep.concurrent = false;
  lci::sim::expect_runs_ok(1, sweep, [&body](lci::sim::rank_env_t&) { body(); });
}

// Expects `call` to throw std::invalid_argument whose message holds every
// one of `fragments`.
template <typename call_t>
void expect_refused(call_t call, std::initializer_list<const char*> fragments) {
  try {
    call();
    ADD_FAILURE() << "not refused";
  } catch (const std::invalid_argument& error) {
    for (const char* fragment : fragments) {
      EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos)
          << error.what() << " lacks " << fragment;
    }
  }
}

// A graph node function in upstream's style: returns an errorcode_t.
lci::status_t node_done(void*) { return lci::errorcode_t::done; }

TEST(UpstreamCompat, StatusFromErrorcodeAndGetters) {
  lci::status_t status = node_done(nullptr);
  EXPECT_TRUE(status.is_done());
  status.set_posted();
  EXPECT_TRUE(status.is_posted());
  status.set_retry();
  EXPECT_TRUE(status.get_error().is_retry());
  status.set_done();
  EXPECT_EQ(status.get_error(), lci::errorcode_t::done);

  int context = 0;
  char bytes[4] = {};
  lci::status_t with_context(static_cast<void*>(&context));
  EXPECT_TRUE(with_context.is_done());
  EXPECT_EQ(with_context.get_user_context(), &context);
  with_context.rank = 3;
  with_context.tag = 7;
  with_context.buffer = bytes;
  with_context.size = sizeof(bytes);
  EXPECT_EQ(with_context.get_rank(), 3);
  EXPECT_EQ(with_context.get_tag(), 7u);
  void* raw = with_context.get_buffer();  // upstream: void*
  lci::buffer_t buffer = with_context.get_buffer();  // the paper: buffer_t
  EXPECT_EQ(raw, bytes);
  EXPECT_EQ(buffer.size, sizeof(bytes));
  // As from upstream's void*: a cast to the type the program expects.
  char* as_chars = (char*)with_context.get_buffer();  // NOLINT: the C cast programs write
  const auto* as_ints = static_cast<const int*>(with_context.get_buffer());
  EXPECT_EQ(as_chars, bytes);
  EXPECT_EQ(static_cast<const void*>(as_ints), static_cast<void*>(bytes));
  EXPECT_TRUE(with_context.get_buffer());  // tested as a pointer

  lci::error_t error = lci::errorcode_t::done;
  error.reset_retry();
  EXPECT_TRUE(error.is_retry());
}

TEST(UpstreamCompat, ConstantsAndNames) {
  EXPECT_EQ(lci::COMP_NULL_EXPECT_DONE, lci::COMP_NULL);
  EXPECT_EQ(lci::COMP_NULL_EXPECT_DONE_OR_RETRY, lci::COMP_NULL_RETRY);
  EXPECT_TRUE(lci::MR_HOST.is_empty());
  EXPECT_TRUE(lci::RMR_NULL.is_empty());
  EXPECT_EQ(lci::GRAPH_NODE_DUMMY_CB, nullptr);
  EXPECT_STREQ(lci::get_broadcast_algorithm_str(lci::broadcast_algorithm_t::ring), "ring");
  EXPECT_STREQ(lci::get_reduce_scatter_algorithm_str(lci::reduce_scatter_algorithm_t::direct),
               "direct");
  EXPECT_STREQ(lci::get_allreduce_algorithm_str(lci::allreduce_algorithm_t::tree), "tree");
  EXPECT_STREQ(lci::get_allreduce_algorithm_str(lci::allreduce_algorithm_t::none), "none");
  EXPECT_STREQ(lci::get_net_opcode_str(lci::net_opcode_t::REMOTE_WRITE), "REMOTE_WRITE");
  EXPECT_STREQ(lci::get_net_opcode_str(lci::net_opcode_t::ERROR), "ERROR");
  EXPECT_STREQ(lci::get_errorcode_str(lci::errorcode_t::posted), "posted");
  const lci::peer_failure_error failure(5, "rank 5 failed");
  EXPECT_EQ(failure.failed_rank(), 5);
  EXPECT_STREQ(failure.what(), "rank 5 failed");
}

// Upstream's boundary markers exist, name themselves, and belong to no
// family: is_done/is_posted/is_retry test strictly between them.
TEST(UpstreamCompat, ErrorcodeBoundaryMarkers) {
  using lci::errorcode_t;
  for (errorcode_t marker : {errorcode_t::done_min, errorcode_t::done_max,
                             errorcode_t::posted_min, errorcode_t::posted_max,
                             errorcode_t::retry_min, errorcode_t::retry_max}) {
    const lci::error_t error = marker;
    EXPECT_FALSE(error.is_done() || error.is_posted() || error.is_retry()) << error.get_str();
  }
  EXPECT_STREQ(lci::get_errorcode_str(errorcode_t::retry_max), "retry_max");
  EXPECT_TRUE(lci::error_t(errorcode_t::done_backlog).is_done());
  EXPECT_TRUE(lci::error_t(errorcode_t::posted_backlog).is_posted());
  EXPECT_TRUE(lci::error_t(errorcode_t::retry_backlog).is_retry());
  EXPECT_FALSE(lci::error_t(errorcode_t::fatal).is_retry());
  EXPECT_LT(errorcode_t::done_max, errorcode_t::posted_min);
  EXPECT_LT(errorcode_t::posted_max, errorcode_t::retry_min);
}

TEST(UpstreamCompat, OptionType) {
  const lci::option_t<int> unset;
  const lci::option_t<int> set = 5;
  const lci::option_t<int> defaulted(7, false);
  EXPECT_FALSE(unset.is_set());
  EXPECT_TRUE(set.is_set());
  EXPECT_EQ(unset.get_value_or(3), 3);
  EXPECT_EQ(set.get_value_or(3), 5);
  EXPECT_EQ(defaulted.get_value_or(3), 3);
  EXPECT_EQ(defaulted.get_value(), 7);
  int out = 0;
  EXPECT_FALSE(defaulted.get_set_value(&out));
  EXPECT_EQ(out, 0);
  EXPECT_TRUE(set.get_set_value(&out));
  EXPECT_EQ(out, 5);
  EXPECT_EQ(static_cast<int>(set), 5);
}

// The boundary marker of matching_policy_t is no policy: a post naming it is
// refused.
TEST(UpstreamCompat, MatchingPolicyMaxIsRefused) {
  on_one_rank([] {
    lci::g_runtime_init();
    char byte = 0;
    EXPECT_THROW((void)lci::post_send_x(0, &byte, 1, 1, lci::COMP_NULL_RETRY)
                     .matching_policy(lci::matching_policy_t::max)(),
                 std::invalid_argument);
    lci::g_runtime_fina();
  });
}

// Upstream's lock-mode flags name values of ofi_lock_mode: every
// combination is accepted and kept, LCI_NET_TRYLOCK_MAX is refused.
TEST(UpstreamCompat, NetLockModeFlags) {
  EXPECT_EQ(lci::LCI_NET_LOCK_ALL, lci::LCI_NET_TRYLOCK_SEND | lci::LCI_NET_TRYLOCK_RECV |
                                       lci::LCI_NET_TRYLOCK_POLL | lci::LCI_NET_LOCK_MR);
  on_one_rank([] {
    lci::g_runtime_init();
    lci::device_t all = lci::alloc_device_x().ofi_lock_mode(lci::LCI_NET_LOCK_ALL)();
    EXPECT_EQ(all.get_attr_ofi_lock_mode(), static_cast<std::uint64_t>(lci::LCI_NET_LOCK_ALL));
    lci::free_device(&all);
    EXPECT_THROW(lci::alloc_device_x().ofi_lock_mode(lci::LCI_NET_TRYLOCK_MAX)(),
                 std::invalid_argument);
    lci::g_runtime_fina();
  });
}

TEST(UpstreamCompat, GlobalFinalizeWithoutInitializeThrows) {
  EXPECT_THROW(lci::global_finalize(), std::logic_error);
}

// set_g_default_attr changes what later allocations start from, a setter
// still wins, and get_g_default_attr reads back every value set; restoring
// the defaults read first leaves the process as it was.
TEST(UpstreamCompat, GlobalDefaultAttributes) {
  on_one_rank([] {
    const lci::global_attr_t before = lci::get_g_default_attr();
    lci::global_attr_t changed = before;
    changed.npackets = 48;
    changed.packet_size = 4096;
    changed.sync_threshold = 3;
    changed.net_send_reserved_pct = 0.125;
    changed.device_name = "any device";
    changed.rdv_protocol = lci::attr_rdv_protocol_t::write;
    lci::set_g_default_attr(changed);
    const lci::global_attr_t read = lci::get_g_default_attr();
    EXPECT_EQ(read.npackets, 48u);
    EXPECT_EQ(read.packet_size, 4096u);
    EXPECT_EQ(read.sync_threshold, 3);
    EXPECT_EQ(read.net_send_reserved_pct, 0.125);
    EXPECT_EQ(read.device_name, "any device");
    EXPECT_EQ(read.rdv_protocol, lci::attr_rdv_protocol_t::write);
    // net_send_reserved_pct is only read back: the runtime refuses it at
    // alloc_device (lci/runtime/unsupported_attrs.hpp).
    changed.net_send_reserved_pct = before.net_send_reserved_pct;
    lci::set_g_default_attr(changed);

    lci::g_runtime_init();
    lci::packet_pool_t pool = lci::alloc_packet_pool();
    EXPECT_EQ(pool.get_attr_npackets(), 48u);
    EXPECT_EQ(pool.get_attr_packet_size(), 4096u);
    lci::packet_pool_t set_pool = lci::alloc_packet_pool_x().npackets(40)();
    EXPECT_EQ(set_pool.get_attr_npackets(), 40u);
    lci::free_packet_pool(&pool);
    lci::free_packet_pool(&set_pool);
    lci::g_runtime_fina();

    lci::set_g_default_attr(before);
    EXPECT_EQ(lci::get_g_default_attr().npackets, before.npackets);
    lci::global_attr_t infinite = before;
    infinite.net_send_reserved_pct = 1.0 / 0.0;
    EXPECT_THROW(lci::set_g_default_attr(infinite), std::invalid_argument);
  });
}

// Inside a global_initialize bracket the rank is known without a runtime;
// after it closes, asking without a runtime is refused again.
TEST(UpstreamCompat, GlobalInitializeGivesRanks) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 2;
  lci::sim::expect_runs_ok(3, sweep, [](lci::sim::rank_env_t&) {
    lci::global_initialize();
    const int rank_me = lci::get_rank_me();
    EXPECT_EQ(lci::get_rank_n(), 3);
    lci::g_runtime_init();
    EXPECT_EQ(lci::get_rank_me(), rank_me);
    lci::barrier();
    lci::g_runtime_fina();
    lci::global_finalize();
  });
}

// rdv_protocol defaults to auto_select, which the runtime resolves when it
// is allocated: the simulated network has put-with-immediate, so writeimm.
// An explicit choice stays (LCI_ATTR_RDV_PROTOCOL: generated_header_test).
TEST(UpstreamCompat, RdvProtocolAutoSelect) {
  on_one_rank([] {
    lci::runtime_t runtime = lci::g_runtime_init();
    EXPECT_EQ(runtime.get_attr_rdv_protocol(), lci::attr_rdv_protocol_t::writeimm);
    EXPECT_TRUE(lci::get_default_net_context().get_attr_support_putimm());
    // A rendezvous message (over the packet size) travels with it; the
    // send waits inside the post (COMP_NULL), progressing the receive too.
    std::vector<char> sent(64 * 1024, 'r');
    std::vector<char> received(sent.size(), 0);
    lci::comp_t sync = lci::alloc_sync();
    lci::status_t recv = lci::post_recv(0, received.data(), received.size(), 9, sync);
    lci::status_t send = lci::post_send(0, sent.data(), sent.size(), 9, lci::COMP_NULL);
    EXPECT_TRUE(send.is_done());
    if (recv.is_posted()) lci::sync_wait(sync, &recv);
    EXPECT_EQ(received, sent);
    lci::free_comp(&sync);
    lci::runtime_t chosen =
        lci::alloc_runtime_x().rdv_protocol(lci::attr_rdv_protocol_t::write)();
    EXPECT_EQ(chosen.get_attr_rdv_protocol(), lci::attr_rdv_protocol_t::write);
    lci::free_runtime(&chosen);
    lci::g_runtime_fina();
  });
}

// comp_type reports which allocation made a completion object.
TEST(UpstreamCompat, CompTypeIsReported) {
  on_one_rank([] {
    lci::g_runtime_init();
    std::vector<lci::comp_t> comps = {lci::alloc_sync(), lci::alloc_counter(), lci::alloc_cq(),
                                      lci::alloc_handler([](lci::status_t) {}),
                                      lci::alloc_graph()};
    const lci::attr_comp_type_t expected[] = {
        lci::attr_comp_type_t::sync, lci::attr_comp_type_t::counter, lci::attr_comp_type_t::cq,
        lci::attr_comp_type_t::handler, lci::attr_comp_type_t::graph};
    for (std::size_t i = 0; i < comps.size(); ++i) {
      EXPECT_EQ(comps[i].get_attr_comp_type(), expected[i]) << i;
      EXPECT_EQ(comps[i].get_attr().comp_type, expected[i]) << i;
    }
    for (lci::comp_t& comp : comps) lci::free_comp(&comp);
    lci::g_runtime_fina();
  });
}

// comp_signal hands a status to any completion object as an operation's
// completion would: a synchronizer, a CQ and a handler get it whole, a
// counter counts it. (A handler is a plain function: what it saw goes here.)
lci::tag_t g_handled_tag = 0;
void note_handled_tag(lci::status_t status) { g_handled_tag = status.tag; }

TEST(UpstreamCompat, CompSignalReachesEveryKind) {
  on_one_rank([] {
    lci::g_runtime_init();
    lci::status_t sent(lci::errorcode_t::done);
    sent.rank = 0;
    sent.tag = 77;
    sent.user_context = &sent;
    g_handled_tag = 0;
    lci::comp_t sync = lci::alloc_sync();
    lci::comp_t cq = lci::alloc_cq();
    lci::comp_t counter = lci::alloc_counter();
    lci::comp_t handler = lci::alloc_handler(&note_handled_tag);
    for (lci::comp_t comp : {sync, cq, counter, handler}) lci::comp_signal(comp, sent);
    lci::status_t got;
    ASSERT_TRUE(lci::sync_test(sync, &got));
    EXPECT_EQ(got.tag, 77u);
    EXPECT_EQ(got.user_context, &sent);
    got = lci::cq_pop(cq);
    ASSERT_TRUE(got.is_done());
    EXPECT_EQ(got.tag, 77u);
    EXPECT_EQ(lci::counter_get(counter), 1);
    EXPECT_EQ(g_handled_tag, 77u);
    for (lci::comp_t* comp : {&sync, &cq, &counter, &handler}) lci::free_comp(comp);
    lci::g_runtime_fina();
  });
}

// Resources allocated without a name are named DEFAULT_NAME ("unnamed").
TEST(UpstreamCompat, DefaultName) {
  EXPECT_STREQ(lci::DEFAULT_NAME, "unnamed");
  on_one_rank([] {
    lci::runtime_t runtime = lci::g_runtime_init();
    EXPECT_EQ(runtime.get_attr_name(), lci::DEFAULT_NAME);
    EXPECT_EQ(lci::get_default_net_context().get_attr_name(), lci::DEFAULT_NAME);
    EXPECT_EQ(lci::get_default_device().get_attr_name(), lci::DEFAULT_NAME);
    EXPECT_EQ(lci::get_default_endpoint().get_attr_name(), lci::DEFAULT_NAME);
    EXPECT_EQ(lci::get_default_packet_pool().get_attr_name(), lci::DEFAULT_NAME);
    EXPECT_EQ(lci::get_default_matching_engine().get_attr_name(), lci::DEFAULT_NAME);
    lci::comp_t sync = lci::alloc_sync();
    EXPECT_EQ(sync.get_attr_name(), lci::DEFAULT_NAME);
    lci::comp_t named = lci::alloc_sync_x().name("mine")();
    EXPECT_STREQ(named.get_attr_name(), "mine");
    lci::free_comp(&sync);
    lci::free_comp(&named);
    lci::g_runtime_fina();
  });
}

// MR_HOST and MR_UNKNOWN (all memory is host memory here) post like no
// registration; MR_DEVICE is refused by every operation that takes an mr.
TEST(UpstreamCompat, MemoryRegistrationSentinels) {
  EXPECT_TRUE(lci::MR_HOST.is_empty());
  EXPECT_TRUE(lci::MR_DEVICE.is_empty());
  EXPECT_TRUE(lci::MR_UNKNOWN.is_empty());
  EXPECT_NE(lci::MR_DEVICE, lci::MR_UNKNOWN);
  EXPECT_THROW((void)lci::MR_DEVICE.get_impl(), std::invalid_argument);
  on_one_rank([] {
    lci::g_runtime_init();
    char sent[16] = "sentinel";
    char received[16] = {};
    lci::status_t send =
        lci::post_send_x(0, sent, sizeof(sent), 3, lci::COMP_NULL).mr(lci::MR_UNKNOWN)();
    EXPECT_TRUE(send.is_done());
    lci::status_t recv = lci::post_recv(0, received, sizeof(received), 3, lci::COMP_NULL);
    EXPECT_TRUE(recv.is_done());
    EXPECT_STREQ(received, "sentinel");

    const std::initializer_list<const char*> device_memory = {"mr = MR_DEVICE",
                                                              "no device (GPU) memory"};
    expect_refused(
        [&] {
          (void)lci::post_send_x(0, sent, sizeof(sent), 3, lci::COMP_NULL).mr(lci::MR_DEVICE)();
        },
        device_memory);
    lci::mr_t mr = lci::register_memory(received, sizeof(received));
    const lci::rmr_t rmr = lci::get_rmr(mr);
    expect_refused(
        [&] {
          (void)lci::post_put_x(0, sent, sizeof(sent), lci::COMP_NULL, 0, rmr)
              .mr(lci::MR_DEVICE)();
        },
        device_memory);
    const lci::buffers_t buffers = {{sent, 4}, {sent + 4, 4}};
    expect_refused(
        [&] {
          (void)lci::post_send_x(0, nullptr, 0, 3, lci::COMP_NULL)
              .local_buffers(buffers)
              .mr(lci::MR_DEVICE)();
        },
        device_memory);
    expect_refused([&] { (void)lci::get_rmr(lci::MR_DEVICE); }, device_memory);
    lci::mr_t device_mr = lci::MR_DEVICE;
    expect_refused([&] { lci::deregister_memory(&device_mr); }, device_memory);
    lci::mr_t unknown_mr = lci::MR_UNKNOWN;
    expect_refused([&] { lci::deregister_memory(&unknown_mr); }, {"mr is empty"});
    expect_refused([&] { (void)lci::get_rmr(lci::MR_UNKNOWN); }, {"mr is empty"});
    lci::deregister_memory(&mr);
    lci::g_runtime_fina();

    // The raw network layer needs a registration: MR_DEVICE is refused as
    // above, MR_UNKNOWN as no registration.
    lci::g_runtime_init_x().alloc_default_packet_pool(false)();
    expect_refused([&] { (void)lci::net_post_send(0, sent, sizeof(sent), lci::MR_DEVICE); },
                   device_memory);
    expect_refused([&] { (void)lci::net_post_send(0, sent, sizeof(sent), lci::MR_UNKNOWN); },
                   {"net_post_send", "mr is empty"});
    lci::g_runtime_fina();
  });
}

// Output attributes: uids number devices and endpoints in allocation order;
// get_attr() gives the whole struct, under upstream's names too.
TEST(UpstreamCompat, OutputAttributes) {
  on_one_rank([] {
    lci::runtime_t runtime = lci::g_runtime_init();
    // The limits are the real ones: a put with a remote completion takes
    // max_imm_tag and refuses one more; a send takes max_tag, and a larger
    // tag is masked (tests/api:client_attrs_test).
    EXPECT_EQ(runtime.get_attr_max_imm_rcomp(), (1u << runtime.get_attr_imm_nbits_rcomp()) - 1);
    const std::uint64_t max_imm_tag = runtime.get_attr_max_imm_tag();
    EXPECT_EQ(max_imm_tag, (1u << (28 - runtime.get_attr_imm_nbits_rcomp())) - 1);
    EXPECT_EQ(runtime.get_attr_max_tag(), 0xffffffffu);
    EXPECT_EQ(runtime.get_attr_max_rcomp(), 0xffffffffu);
    std::uint64_t word = 0;
    lci::mr_t mr = lci::register_memory(&word, sizeof(word));
    const lci::rmr_t rmr = lci::get_rmr(mr);
    lci::comp_t counter = lci::alloc_counter();
    const lci::rcomp_t rcomp = lci::register_rcomp(counter);
    const std::uint64_t one = 1;
    EXPECT_TRUE(lci::post_put_x(0, const_cast<std::uint64_t*>(&one), sizeof(one), lci::COMP_NULL,
                                0, rmr)
                    .remote_comp(rcomp)
                    .tag(max_imm_tag)()
                    .is_done());
    expect_refused(
        [&] {
          (void)lci::post_put_x(0, const_cast<std::uint64_t*>(&one), sizeof(one), lci::COMP_NULL,
                                0, rmr)
              .remote_comp(rcomp)
              .tag(max_imm_tag + 1)();
        },
        {"does not fit the immediate data"});
    // A send and its receive at max_tag match; a receive above it is taken
    // for its low bits (0: nothing waits there).
    char byte = 'm';
    char got = 0;
    const lci::tag_t max_tag = runtime.get_attr_max_tag();
    EXPECT_TRUE(lci::post_send(0, &byte, 1, max_tag, lci::COMP_NULL).is_done());
    EXPECT_TRUE(lci::post_recv(0, &got, 1, max_tag, lci::COMP_NULL).is_done());
    EXPECT_EQ(got, 'm');
    EXPECT_TRUE(lci::post_recv(0, &got, 1, max_tag + 1, lci::COMP_NULL_RETRY).is_retry());
    while (lci::counter_get(counter) < 1) lci::progress();
    lci::deregister_rcomp(rcomp);
    lci::free_comp(&counter);
    lci::deregister_memory(&mr);
    lci::device_t first = lci::get_default_device();
    lci::device_t second = lci::alloc_device();
    EXPECT_GE(first.get_attr_uid(), 0);
    EXPECT_GT(second.get_attr_uid(), first.get_attr_uid());
    const lci::device_t::attr_t attr = second.get_attr();
    EXPECT_EQ(attr.uid, second.get_attr_uid());
    const lci::device_attr_t& same = attr;
    EXPECT_EQ(same.net_max_sends, second.get_attr_net_max_sends());
    lci::endpoint_t endpoint = lci::alloc_endpoint_x().device(second)();
    EXPECT_GT(endpoint.get_attr_uid(), lci::get_default_endpoint().get_attr_uid());
    lci::free_endpoint(&endpoint);
    lci::free_device(&second);
    lci::net_context_t context = lci::alloc_net_context();
    EXPECT_TRUE(context.get_attr_support_putimm());
    lci::free_net_context(&context);
    lci::g_runtime_fina();
  });
}

// graph_add_node_op takes any functor: a post_*_x (status_t), one returning
// errorcode_t, or one returning nothing; the last two complete their node
// when they return.
TEST(UpstreamCompat, GraphNodeOfAnyFunctor) {
  on_one_rank([] {
    lci::g_runtime_init();
    int runs = 0;
    lci::comp_t graph = lci::alloc_graph();
    lci::graph_node_t code = lci::graph_add_node_op(graph, [&runs]() -> lci::errorcode_t {
      ++runs;
      return lci::errorcode_t::done;
    });
    lci::graph_node_t plain = lci::graph_add_node_op(graph, [&runs]() { ++runs; });
    lci::graph_add_edge(graph, code, plain);
    lci::graph_start(graph);
    while (!lci::graph_test(graph).is_done()) lci::progress();
    EXPECT_EQ(runs, 2);
    lci::free_comp(&graph);
    lci::g_runtime_fina();
  });
}

// The default allocator is upstream's g_allocator_default, and comes back
// after set_allocator(nullptr).
TEST(UpstreamCompat, DefaultAllocator) {
  EXPECT_EQ(lci::get_allocator(), &lci::g_allocator_default);
  lci::allocator_default_t mine;
  lci::set_allocator(&mine);
  EXPECT_EQ(lci::get_allocator(), &mine);
  lci::set_allocator(nullptr);
  EXPECT_EQ(lci::get_allocator(), &lci::g_allocator_default);
  void* block = lci::g_allocator_default.allocate(0);
  EXPECT_NE(block, nullptr);
  lci::g_allocator_default.deallocate(block);
}

// lci_config.hpp's macros, through lci.hpp, as upstream's programs use them:
// the version, the default packet size, a statuses array for net_poll_cq.
TEST(UpstreamCompat, ConfigMacros) {
  static_assert(LCI_VERSION_HEX == 0x020000);
  EXPECT_STREQ(LCI_VERSION_STRING, "2.0.0");
  static_assert(LCI_WITH_SHM && !LCI_USE_REG_CACHE);
  on_one_rank([] {
    lci::g_runtime_init();
    EXPECT_EQ(lci::get_default_packet_pool().get_attr_packet_size(),
              std::size_t{LCI_PACKET_SIZE_DEFAULT});
    lci::g_runtime_fina();
    lci::g_runtime_init_x().alloc_default_packet_pool(false)();
    lci::net_status_t statuses[LCI_BACKEND_MAX_POLLS];
    EXPECT_EQ(lci::net_poll_cq(LCI_BACKEND_MAX_POLLS, statuses), 0u);
    lci::g_runtime_fina();
  });
}

// A wildcard receive matches with the policy its wildcards imply when its
// own would compare the wildcard's field, as upstream's receives do (its
// tests/unit/loopback/test_matching_policy posts post_recv(0, ..., ANY_TAG)
// for messages sent with rank_only): ANY_TAG -> rank_only, ANY_SOURCE ->
// tag_only, both -> none. Each message below waits before its receive is
// posted; one sent with rank_tag waits too, and only a rank_tag receive
// takes it.
TEST(UpstreamCompat, WildcardReceivesTakeThePolicyTheyImply) {
  on_one_rank([] {
    lci::g_runtime_init();
    using lci::matching_policy_t;
    const auto send = [](lci::tag_t tag, matching_policy_t policy) {
      std::uint64_t value = 1000 + tag;
      const lci::status_t status =
          lci::post_send_x(0, &value, sizeof(value), tag, lci::COMP_NULL).matching_policy(policy)();
      ASSERT_TRUE(status.is_done());
    };
    // Takes the one waiting message `recv` matches; expects `tag`.
    const auto expect_received = [](lci::tag_t tag, const std::function<lci::status_t(void*)>& recv,
                                    const char* what) {
      std::uint64_t value = 0;
      const lci::status_t status = recv(&value);
      ASSERT_TRUE(status.is_done()) << what;
      EXPECT_EQ(status.tag, tag) << what;
      EXPECT_EQ(status.rank, 0) << what;
      EXPECT_EQ(value, 1000 + tag) << what;
    };
    constexpr std::size_t size = sizeof(std::uint64_t);
    send(5, matching_policy_t::rank_tag);
    send(6, matching_policy_t::rank_only);
    expect_received(
        6,
        [](void* buffer) { return lci::post_recv(0, buffer, size, lci::ANY_TAG, lci::COMP_NULL); },
        "ANY_TAG with rank_tag");
    send(7, matching_policy_t::tag_only);
    expect_received(
        7,
        [](void* buffer) {
          return lci::post_recv(lci::ANY_SOURCE, buffer, size, 7, lci::COMP_NULL);
        },
        "ANY_SOURCE with rank_tag");
    send(8, matching_policy_t::tag_only);
    expect_received(
        8,
        [](void* buffer) {
          return lci::post_recv_x(lci::ANY_SOURCE, buffer, size, 8, lci::COMP_NULL)
              .matching_policy(matching_policy_t::rank_only)();
        },
        "ANY_SOURCE with rank_only");
    send(9, matching_policy_t::none);
    expect_received(
        9,
        [](void* buffer) {
          return lci::post_recv(lci::ANY_SOURCE, buffer, size, lci::ANY_TAG, lci::COMP_NULL);
        },
        "ANY_SOURCE and ANY_TAG with rank_tag");
    send(10, matching_policy_t::none);
    expect_received(
        10,
        [](void* buffer) {
          return lci::post_recv_x(0, buffer, size, lci::ANY_TAG, lci::COMP_NULL)
              .matching_policy(matching_policy_t::none)();
        },
        "ANY_TAG with none");
    // The rank_tag message waited through every wildcard receive above.
    expect_received(
        5, [](void* buffer) { return lci::post_recv(0, buffer, size, 5, lci::COMP_NULL); },
        "rank_tag");
    lci::g_runtime_fina();
  });
}

// register_memory(ptr, 0) gives a registration, as upstream's does (its
// loopback tests register every size of a sweep from 0): a handle that
// takes nothing of the network's, so more of them than the device may hold
// at once leave registering possible. Posts of 0 bytes with it, and puts
// and gets of 0 bytes through its rmr, with and without a remote
// completion, are done at once; a post of more bytes with it is refused.
TEST(UpstreamCompat, ZeroSizeRegistration) {
  on_one_rank([] {
    lci::g_runtime_init();
    char byte = 0;
    std::vector<lci::mr_t> empties;
    for (int i = 0; i < 64; ++i) empties.push_back(lci::register_memory(&byte, 0));
    lci::mr_t mr = lci::register_memory(&byte, 1);
    EXPECT_FALSE(lci::get_rmr(mr).is_empty());
    lci::deregister_memory(&mr);

    lci::mr_t empty = empties.back();
    const lci::rmr_t rmr = lci::get_rmr(empty);
    EXPECT_FALSE(rmr.is_empty());
    EXPECT_EQ(rmr.base, reinterpret_cast<std::uintptr_t>(&byte));
    EXPECT_EQ(rmr.opaque_rkey, 0u);  // no key: a peer's access of a byte fails at the target
    EXPECT_TRUE(lci::post_send_x(0, &byte, 0, 4, lci::COMP_NULL).mr(empty)().is_done());
    EXPECT_TRUE(lci::post_recv_x(0, &byte, 0, 4, lci::COMP_NULL).mr(empty)().is_done());
    expect_refused([&] { (void)lci::post_send_x(0, &byte, 1, 4, lci::COMP_NULL).mr(empty)(); },
                   {"mr: does not cover local_buffer"});

    lci::comp_t signals = lci::alloc_cq();
    const lci::rcomp_t rcomp = lci::register_rcomp(signals);
    EXPECT_TRUE(lci::post_put(0, &byte, 0, lci::COMP_NULL, 0, rmr).is_done());
    EXPECT_TRUE(lci::post_get(0, &byte, 0, lci::COMP_NULL, 0, rmr).is_done());
    EXPECT_TRUE(
        lci::post_put_x(0, &byte, 0, lci::COMP_NULL, 0, rmr).remote_comp(rcomp).tag(7)().is_done());
    EXPECT_TRUE(
        lci::post_get_x(0, &byte, 0, lci::COMP_NULL, 0, rmr).remote_comp(rcomp).tag(8)().is_done());
    std::vector<lci::tag_t> signalled;
    for (int polls = 0; signalled.size() < 2 && polls < 100000; ++polls) {
      (void)lci::progress();
      const lci::status_t status = lci::cq_pop(signals);
      if (!status.is_done()) continue;
      EXPECT_EQ(status.size, 0u);
      EXPECT_EQ(status.rank, 0);
      signalled.push_back(status.tag);
    }
    std::sort(signalled.begin(), signalled.end());
    EXPECT_EQ(signalled, (std::vector<lci::tag_t>{7, 8}));
    lci::deregister_rcomp(rcomp);
    lci::free_comp(&signals);

    for (std::size_t i = 0; i + 1 < empties.size(); ++i) lci::deregister_memory(&empties[i]);
    expect_refused([&] { lci::deregister_memory(&empties[0]); }, {"mr is empty"});
    // The last one is left to g_runtime_fina, as a program may.
    lci::g_runtime_fina();
  });
}

}  // namespace
