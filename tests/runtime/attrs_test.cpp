// Attributes the runtime does not act on are refused, not ignored
// (lci/runtime/unsupported_attrs.hpp): each one set to anything but its
// default, by a functor's setter, by LCI_ATTR_<NAME> or by
// set_g_default_attr, throws std::invalid_argument naming it and its value
// at the allocation that would use it; the defaults, passed explicitly as
// upstream programs do, are accepted. The net context's max_msg_size and
// max_inject_size are implemented: they bound the devices allocated with it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "lci.hpp"
#include "lci/api/attr_env.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::expect_invalid_argument;
using lci::runtime_test::post_retrying;
using lci::runtime_test::require;
using lci::runtime_test::round_trip;

int peer_of(int rank) { return 1 - rank; }

// Runs `body` on both ranks of a two-rank world between g_runtime_init and
// g_runtime_fina, then proves the runtime still works.
void run_two_ranks(const std::function<void(lci::sim::rank_env_t&)>& body) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 2;
  sweep.configure = [](lci::sim::run_options_t& options) {
    options.world.devices_per_rank_max = 8;  // the tests allocate a few devices
    options.log = false;  // a failure's report names the seed and the replay line
  };
  lci::sim::expect_runs_ok(2, sweep, [&body](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    body(env);
    round_trip(peer_of(env.rank()), 1000);
    lci::barrier();
    lci::g_runtime_fina();
  });
}

// One rank, one deterministic run: for what the process environment
// changes (set before and restored after the run, never during it).
void run_one_rank(const std::function<void()>& body) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 1;
  sweep.concurrent = false;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  lci::sim::expect_runs_ok(1, sweep, [&body](lci::sim::rank_env_t&) { body(); });
}

struct refusal_t {
  std::string what;           // the attribute = value, as the message names it
  std::function<void()> call;  // the allocation given it
};

TEST(Attrs, EveryRefusedAttributeThrowsWhenSetByCode) {
  run_two_ranks([](lci::sim::rank_env_t&) {
    using lci::attr_ibv_odp_strategy_t;
    using lci::attr_ibv_prefetch_strategy_t;
    using lci::attr_ibv_td_strategy_t;
    const std::vector<refusal_t> refusals = {
        {"ibv_gid_idx = 3", [] { lci::alloc_net_context_x().ibv_gid_idx(3)(); }},
        {"ibv_force_gid_auto_select = true",
         [] { lci::alloc_net_context_x().ibv_force_gid_auto_select(true)(); }},
        {"ibv_odp_strategy = explicit_odp",
         [] {
           lci::alloc_net_context_x().ibv_odp_strategy(attr_ibv_odp_strategy_t::explicit_odp)();
         }},
        {"ibv_prefetch_strategy = prefetch",
         [] {
           lci::alloc_net_context_x()
               .ibv_prefetch_strategy(attr_ibv_prefetch_strategy_t::prefetch)();
         }},
        {"use_dmabuf = true", [] { lci::alloc_net_context_x().use_dmabuf(true)(); }},
        {"device_name = \"mlx5_1\"", [] { lci::alloc_net_context_x().device_name("mlx5_1")(); }},
        {"ofi_provider_name = \"tcp\"",
         [] { lci::alloc_net_context_x().ofi_provider_name("tcp")(); }},
        {"net_send_reserved_pct = 0.5",
         [] { lci::alloc_device_x().net_send_reserved_pct(0.5)(); }},
        {"alloc_progress_endpoint = true",
         [] { lci::alloc_device_x().alloc_progress_endpoint(true)(); }},
        {"use_reg_cache = true", [] { lci::alloc_device_x().use_reg_cache(true)(); }},
        {"shm_enable = \"false\"", [] { lci::alloc_device_x().shm_enable(false)(); }},
        {"shm_ring_size = 64", [] { lci::alloc_device_x().shm_ring_size(64)(); }},
        {"shm_slot_size = 4096", [] { lci::alloc_device_x().shm_slot_size(4096)(); }},
        {"shm_producer_cas_attempts = 2",
         [] { lci::alloc_device_x().shm_producer_cas_attempts(2)(); }},
        {"shm_consumer_cas_attempts = 2",
         [] { lci::alloc_device_x().shm_consumer_cas_attempts(2)(); }},
        {"shm_max_polls = 8", [] { lci::alloc_device_x().shm_max_polls(8)(); }},
        {"ibv_td_strategy = per_qp",
         [] { lci::alloc_device_x().ibv_td_strategy(attr_ibv_td_strategy_t::per_qp)(); }},
        {"matching_engine_type = queue",
         [] {
           lci::alloc_matching_engine_x()
               .matching_engine_type(lci::attr_matching_engine_type_t::queue)();
         }},
        {"device_name = \"mlx5_1\"",
         [] {
           lci::runtime_t runtime = lci::alloc_runtime_x().device_name("mlx5_1")();
           lci::free_runtime(&runtime);  // not reached
         }},
    };
    for (const refusal_t& refusal : refusals) {
      expect_invalid_argument(refusal.what, refusal.call, {refusal.what, "no effect here"});
    }
  });
}

// Every refused attribute at its default, given explicitly: accepted.
TEST(Attrs, DefaultsGivenExplicitlyPass) {
  run_two_ranks([](lci::sim::rank_env_t&) {
    lci::net_context_t context = lci::alloc_net_context_x()
                                     .ibv_gid_idx(-1)
                                     .ibv_force_gid_auto_select(false)
                                     .ibv_odp_strategy(lci::attr_ibv_odp_strategy_t::none)
                                     .ibv_prefetch_strategy(lci::attr_ibv_prefetch_strategy_t::none)
                                     .use_dmabuf(false)
                                     .device_name("")
                                     .ofi_provider_name("")();
    lci::device_t device = lci::alloc_device_x()
                               .net_send_reserved_pct(0.25)
                               .ofi_lock_mode(0)
                               .alloc_progress_endpoint(false)
                               .use_reg_cache(false)
                               .shm_enable(true)
                               .shm_ring_size(0)
                               .shm_slot_size(0)
                               .shm_producer_cas_attempts(0)
                               .shm_consumer_cas_attempts(0)
                               .shm_max_polls(0)
                               .ibv_td_strategy(lci::attr_ibv_td_strategy_t::none)
                               .net_context(context)();
    lci::matching_engine_t engine = lci::alloc_matching_engine_x()
                                        .matching_engine_type(lci::attr_matching_engine_type_t::map)();
    lci::free_matching_engine(&engine);
    lci::free_device(&device);
    lci::free_net_context(&context);
  });
}

// Through the environment: a device attribute fails the runtime's default
// device, a net context attribute its default net context, both at
// g_runtime_init; without a default device the device attribute fails the
// first alloc_device instead.
TEST(Attrs, RefusedFromTheEnvironment) {
  ASSERT_EQ(setenv("LCI_ATTR_SHM_RING_SIZE", "64", 1), 0);
  run_one_rank([] {
    expect_invalid_argument("LCI_ATTR_SHM_RING_SIZE=64", [] { lci::g_runtime_init(); },
                            {"alloc_device", "shm_ring_size = 64"});
    lci::g_runtime_init_x().alloc_default_device(false)();
    expect_invalid_argument("LCI_ATTR_SHM_RING_SIZE=64", [] { lci::alloc_device(); },
                            {"alloc_device", "shm_ring_size = 64"});
    lci::g_runtime_fina();
  });
  ASSERT_EQ(unsetenv("LCI_ATTR_SHM_RING_SIZE"), 0);

  ASSERT_EQ(setenv("LCI_ATTR_IBV_GID_IDX", "3", 1), 0);
  run_one_rank([] {
    expect_invalid_argument("LCI_ATTR_IBV_GID_IDX=3", [] { lci::g_runtime_init(); },
                            {"default net context", "ibv_gid_idx = 3"});
  });
  ASSERT_EQ(unsetenv("LCI_ATTR_IBV_GID_IDX"), 0);

  // The runtime's backend names the network of its default net context.
  ASSERT_EQ(setenv("LCI_ATTR_BACKEND", "ofi", 1), 0);
  run_one_rank([] {
    expect_invalid_argument("LCI_ATTR_BACKEND=ofi", [] { lci::g_runtime_init(); },
                            {"backend = ofi", "not the network this rank runs on"});
  });
  ASSERT_EQ(unsetenv("LCI_ATTR_BACKEND"), 0);
}

TEST(Attrs, RefusedFromSetGDefaultAttr) {
  run_one_rank([] {
    const lci::global_attr_t before = lci::get_g_default_attr();
    lci::global_attr_t changed = before;
    changed.use_reg_cache = true;
    lci::set_g_default_attr(changed);
    expect_invalid_argument("set_g_default_attr use_reg_cache", [] { lci::g_runtime_init(); },
                            {"use_reg_cache = true"});
    // Back to the environment's values (restoring `before` would pin them
    // for the tests that follow).
    lci::detail::set_attr_global_values({});
    EXPECT_EQ(lci::get_g_default_attr().use_reg_cache, before.use_reg_cache);
    lci::g_runtime_init();
    lci::g_runtime_fina();
  });
}

// A device of a net context with max_msg_size takes messages up to it and
// refuses larger ones; one below the packet size is refused at alloc_device
// (an eager message travels whole in one packet), one equal to it is not.
TEST(Attrs, MaxMsgSizeBoundsTheNetContextsDevices) {
  constexpr std::size_t limit = 16384;  // over the simulator's 8 KiB packets: rendezvous
  run_two_ranks([](lci::sim::rank_env_t& env) {
    const int peer = peer_of(env.rank());
    lci::net_context_t small = lci::alloc_net_context_x().max_msg_size(1024)();
    expect_invalid_argument("max_msg_size below the packet size",
                            [&] { lci::alloc_device_x().net_context(small)(); },
                            {"max_msg_size = 1024", "packet_size"});
    lci::free_net_context(&small);
    // Exactly one packet is enough.
    const std::size_t packet_size = lci::get_default_packet_pool().get_attr_packet_size();
    lci::net_context_t exact = lci::alloc_net_context_x().max_msg_size(packet_size)();
    lci::device_t at_packet = lci::alloc_device_x().net_context(exact)();
    lci::free_device(&at_packet);
    lci::free_net_context(&exact);

    lci::net_context_t context = lci::alloc_net_context_x().max_msg_size(limit)();
    require(context.get_attr_max_msg_size() == limit, "max_msg_size not kept");
    lci::device_t device = lci::alloc_device_x().net_context(context)();
    std::vector<char> out(limit + 1, static_cast<char>('a' + env.rank()));
    std::vector<char> in(limit, 0);
    lci::comp_t send_sync = lci::alloc_sync();
    lci::comp_t recv_sync = lci::alloc_sync();
    expect_invalid_argument(
        "post_send over the net context's max_msg_size",
        [&] { (void)lci::post_send_x(peer, out.data(), limit + 1, 7, send_sync).device(device)(); },
        {"size = 16385", "max_msg_size 16384"});
    lci::status_t received = post_retrying(
        [&] { return lci::post_recv_x(peer, in.data(), limit, 7, recv_sync).device(device)(); },
        device);
    lci::status_t sent = post_retrying(
        [&] { return lci::post_send_x(peer, out.data(), limit, 7, send_sync).device(device)(); },
        device);
    if (sent.is_posted()) lci::sync_wait_x(send_sync, &sent).device(device)();
    if (received.is_posted()) lci::sync_wait_x(recv_sync, &received).device(device)();
    require(received.is_done() && received.size == limit, "the message at the limit failed");
    require(in[0] == 'a' + peer && in[limit - 1] == 'a' + peer, "wrong data at the limit");
    lci::free_comp(&send_sync);
    lci::free_comp(&recv_sync);
    lci::free_device(&device);
    lci::free_net_context(&context);
  });
}

// A packet pool's packet_size has a floor (the largest control message):
// one byte below it is refused naming it, and exactly it is accepted.
TEST(Attrs, TheSmallestPacketSizeIsAccepted) {
  run_one_rank([] {
    lci::g_runtime_init();
    std::size_t floor = 0;
    try {
      lci::packet_pool_t tiny = lci::alloc_packet_pool_x().packet_size(1)();
      lci::free_packet_pool(&tiny);
    } catch (const std::invalid_argument& error) {
      const std::string message = error.what();
      const std::size_t at = message.find("must be at least ");
      require(at != std::string::npos, "the refusal names no floor: " + message);
      floor = std::stoul(message.substr(at + std::string("must be at least ").size()));
    }
    require(floor > 1, "packet_size = 1 was accepted");
    expect_invalid_argument(
        "packet_size one below the floor",
        [&] { (void)lci::alloc_packet_pool_x().packet_size(floor - 1)(); },
        {"packet_size = " + std::to_string(floor - 1)});
    lci::packet_pool_t smallest = lci::alloc_packet_pool_x().packet_size(floor)();
    require(smallest.get_attr_packet_size() == floor, "packet_size not kept");
    lci::free_packet_pool(&smallest);
    lci::g_runtime_fina();
  });
}

// The smallest pool: one packet, which a device on it still posts as a
// receive (a device gets one whatever the pool's receive share) where the
// network takes packets as receives; closing the device drops that receive,
// every packet of the pool, and the pool frees.
TEST(Attrs, APoolOfOnePacketServesADevice) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 1;
  sweep.concurrent = false;
  sweep.configure = [](lci::sim::run_options_t& options) {
    options.log = false;
    options.world.multi_recv = false;  // receives are the pool's packets
  };
  lci::sim::expect_runs_ok(1, sweep, [](lci::sim::rank_env_t&) {
    lci::g_runtime_init();
    lci::packet_pool_t pool = lci::alloc_packet_pool_x().npackets(1)();
    lci::device_t device = lci::alloc_device_x().packet_pool(pool)();
    (void)lci::progress_x().device(device)();  // the receives are posted by now
    lci::free_device(&device);
    lci::free_packet_pool(&pool);
    lci::g_runtime_fina();
  });
}

// A device of a net context with max_inject_size injects no more: a put
// of that size completes inside the post (done), one byte more is posted
// and completes through its synchronizer.
TEST(Attrs, MaxInjectSizeBoundsTheNetContextsDevices) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    lci::net_context_t context = lci::alloc_net_context_x().max_inject_size(8)();
    lci::device_t device = lci::alloc_device_x().net_context(context)();
    std::vector<char> window(64, 0);
    lci::mr_t mr = lci::register_memory_x(window.data(), window.size()).device(device)();
    const lci::rmr_t mine = lci::get_rmr(mr);
    lci::rmr_t all[2];
    env.allgather(&mine, sizeof(mine), all);
    char buffer[9] = {};
    lci::comp_t sync = lci::alloc_sync();
    const auto put = [&](std::size_t size) {
      return post_retrying([&] {
        return lci::post_put_x(peer_of(env.rank()), buffer, size, sync, 0,
                               all[peer_of(env.rank())])
            .device(device)();
      }, device);
    };
    const lci::status_t injected = put(8);
    require(injected.is_done(), std::string("an 8-byte put: ") + injected.error.get_str());
    const lci::status_t over = put(9);
    require(over.is_posted(), std::string("a 9-byte put: ") + over.error.get_str());
    lci::status_t status;
    while (!lci::sync_test(sync, &status)) (void)lci::progress_x().device(device)();
    require(status.is_done(), std::string("the 9-byte put completed ") + status.error.get_str());
    lci::free_comp(&sync);
    env.barrier();  // the peer's registration stays until nobody uses it
    lci::deregister_memory(&mr);
    lci::free_device(&device);
    lci::free_net_context(&context);
  });
}

}  // namespace
