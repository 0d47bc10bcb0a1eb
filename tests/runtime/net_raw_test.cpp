// The raw network layer (lci/ops/net_ops.cpp; docs/api_compat.md, "Raw
// network layer") between two ranks, each on a raw device (one without a
// packet pool): sends and receives at 0 bytes and at the device's limits
// with their immediate data, puts, puts with immediate data and gets into
// registered regions (the target's REMOTE_WRITE carrying the data),
// polling until every completion came, the arguments each operation
// refuses, a raw device refused by the protocol's operations and a pooled
// one by the raw layer, and (simulator only) a protection fault and a
// crashed peer reported as ERROR.
//
// The devices come from a net context that asks for limits below every
// network's (msg_size_max, inject_size_max), so the limits are known here
// over the simulator and over libfabric alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::expect_invalid_argument;
using lci::runtime_test::require;

constexpr std::size_t msg_size_max = 16384;
constexpr std::size_t inject_size_max = 32;
// High bits set: an immediate that lost any of its 32 bits shows.
constexpr lci::net_imm_data_t imm_base = 0xa5c30000;

char pattern(int seed, std::size_t index) {
  return static_cast<char>((seed * 31 + static_cast<int>(index % 251)) & 0x7f);
}
void fill(char* bytes, std::size_t size, int seed) {
  for (std::size_t i = 0; i < size; ++i) bytes[i] = pattern(seed, i);
}
bool holds(const char* bytes, std::size_t size, int seed) {
  for (std::size_t i = 0; i < size; ++i) {
    if (bytes[i] != pattern(seed, i)) return false;
  }
  return true;
}
// holds(), for the bytes of a plain put polled while the network may still
// be writing them: the target hears of such a put by its bytes alone, as an
// RDMA program polls a flag. In concurrent mode the simulator copies them
// on the initiator's thread, under no lock the poller takes, so the polling
// read races with that copy by design (a NIC's DMA is invisible to
// ThreadSanitizer; the simulator's memcpy is not): exempt from it, and
// never inlined into instrumented code.
__attribute__((no_sanitize("thread"), noinline)) bool landed(const char* bytes, std::size_t size,
                                                             int seed) {
  for (std::size_t i = 0; i < size; ++i) {
    if (bytes[i] != pattern(seed, i)) return false;
  }
  return true;
}

// A runtime without packet pools or a default device, and one raw device on
// a net context with the limits above.
lci::device_t open_raw_device() {
  lci::g_runtime_init_x().alloc_default_packet_pool(false).alloc_default_device(false)();
  lci::net_context_t net_context =
      lci::alloc_net_context_x().max_msg_size(msg_size_max).max_inject_size(inject_size_max)();
  return lci::alloc_device_x().net_context(net_context)();
}

// The completions of one raw device, polled into a list the test takes
// from by opcode. post() retries a refused post, polling meanwhile (a full
// completion queue empties only by polling).
class raw_cq_t {
 public:
  raw_cq_t(lci::sim::rank_env_t& env, lci::device_t device) : env_(env), device_(device) {}
  ~raw_cq_t() { EXPECT_TRUE(polled_.empty()) << polled_.size() << " completions nobody took"; }

  template <typename Post>
  void post(Post&& post) {
    while (post().is_retry()) poll_once();
  }
  // Polls until `count` completions of `opcode` came; returns them.
  std::vector<lci::net_status_t> take(lci::net_opcode_t opcode, std::size_t count) {
    const auto is_wanted = [opcode](const lci::net_status_t& s) { return s.opcode == opcode; };
    while (static_cast<std::size_t>(std::count_if(polled_.begin(), polled_.end(), is_wanted)) <
           count) {
      poll_once();
    }
    std::vector<lci::net_status_t> taken;
    std::copy_if(polled_.begin(), polled_.end(), std::back_inserter(taken), is_wanted);
    polled_.erase(std::remove_if(polled_.begin(), polled_.end(), is_wanted), polled_.end());
    require(taken.size() == count, "more " + std::string(lci::get_net_opcode_str(opcode)) +
                                       " completions than operations");
    return taken;
  }
  // Polls (the network may need it to move data) until `done()`.
  template <typename Done>
  void poll_until(Done&& done, const char* what) {
    while (!done()) poll_once(what);
  }

 private:
  void poll_once(const char* what = "raw completions") {
    lci::net_status_t statuses[4];
    const std::size_t polled = lci::net_poll_cq_x(4, statuses).device(device_)();
    require(polled <= 4, "net_poll_cq returned more than max_polls");
    polled_.insert(polled_.end(), statuses, statuses + polled);
    if (polled == 0) env_.wait(what);
  }

  lci::sim::rank_env_t& env_;
  lci::device_t device_;
  std::vector<lci::net_status_t> polled_;
};

void run_two_ranks(const std::function<void(lci::sim::rank_env_t&)>& body) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 4;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  lci::sim::expect_runs_ok(2, sweep, body);
}

// Message i of a rank's stream: sizes at 0 and at each limit, the first
// ones injected (net_post_sends), the others sent from a registration.
struct message_t {
  bool inject;
  std::size_t size;
};
const std::vector<message_t> messages = {
    {true, 0}, {true, inject_size_max}, {false, 0}, {false, 1}, {false, msg_size_max}};

TEST(NetRaw, SendRecvAtZeroAndMaxSizes) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    lci::device_t device = open_raw_device();
    raw_cq_t cq(env, device);
    const int peer = 1 - env.rank();
    const std::size_t count = messages.size();
    // Any message may land in any receive (a shared receive queue): each
    // slot takes the largest.
    std::vector<char> inbox(count * msg_size_max, 0);
    std::vector<char> outbox(count * msg_size_max, 0);
    lci::mr_t inbox_mr = lci::register_memory_x(inbox.data(), inbox.size()).device(device)();
    lci::mr_t outbox_mr = lci::register_memory_x(outbox.data(), outbox.size()).device(device)();
    for (std::size_t i = 0; i < count; ++i) {
      char* slot = inbox.data() + i * msg_size_max;
      cq.post([&] {
        return lci::net_post_recv_x(slot, msg_size_max, inbox_mr)
            .device(device)
            .user_context(slot)();
      });
    }
    env.barrier();  // every receive is posted
    std::vector<int> send_contexts(count);
    for (std::size_t i = 0; i < count; ++i) {
      char* bytes = outbox.data() + i * msg_size_max;
      fill(bytes, messages[i].size, static_cast<int>(i));
      const auto imm = static_cast<lci::net_imm_data_t>(imm_base + i);
      if (messages[i].inject) {
        cq.post([&] {
          return lci::net_post_sends_x(peer, bytes, messages[i].size)
              .device(device)
              .imm_data(imm)();
        });
      } else {
        cq.post([&] {
          return lci::net_post_send_x(peer, bytes, messages[i].size, outbox_mr)
              .device(device)
              .imm_data(imm)
              .user_context(&send_contexts[i])();
        });
      }
    }
    for (const lci::net_status_t& status : cq.take(lci::net_opcode_t::SEND, 3)) {
      require(status.rank == peer, "a SEND completion names rank " + std::to_string(status.rank));
      const auto* context = static_cast<const int*>(status.user_context);
      require(context >= &send_contexts[2] && context <= &send_contexts[4],
              "a SEND completion without its post's user_context");
    }
    std::vector<bool> arrived(count, false);
    for (const lci::net_status_t& status : cq.take(lci::net_opcode_t::RECV, count)) {
      const std::size_t i = status.imm_data - imm_base;
      require(status.imm_data >= imm_base && i < count && !arrived[i],
              "a RECV with imm_data " + std::to_string(status.imm_data));
      arrived[i] = true;
      require(status.rank == peer,
              "message " + std::to_string(i) + " from rank " + std::to_string(status.rank));
      require(status.length == messages[i].size,
              "message " + std::to_string(i) + ": length " + std::to_string(status.length));
      require(
          holds(static_cast<const char*>(status.user_context), status.length, static_cast<int>(i)),
          "message " + std::to_string(i) + ": wrong bytes");
    }
    expect_invalid_argument(
        "an inject over the inject size",
        [&] {
          return lci::net_post_sends_x(peer, outbox.data(), inject_size_max + 1).device(device)();
        },
        {"net_post_sends", "size = 33", "inject size"});
    expect_invalid_argument("a send over max_msg_size",
                            [&] {
                              return lci::net_post_send_x(peer, outbox.data(), msg_size_max + 1,
                                                          outbox_mr)
                                  .device(device)();
                            },
                            {"net_post_send", "size = 16385", "max_msg_size"});
    lci::deregister_memory(&inbox_mr);
    lci::deregister_memory(&outbox_mr);
    env.barrier();  // nothing of the peer's is in flight to this rank
    lci::g_runtime_fina();
  });
}

// A rank's window, as its peer writes it: a put of the largest size, an
// injected put, an injected put with immediate data, a put with immediate
// data; then a region the peer reads. None at offset 0: an offset the
// network lost would show.
struct window_layout_t {
  static constexpr std::size_t put = 64;
  static constexpr std::size_t puts = put + msg_size_max;
  static constexpr std::size_t putImms = puts + inject_size_max;
  static constexpr std::size_t putImm = putImms + inject_size_max;
  static constexpr std::size_t putImm_size = 100;
  static constexpr std::size_t get = 2 * msg_size_max;
  static constexpr std::size_t bytes = 3 * msg_size_max;
};

TEST(NetRaw, PutPutImmAndGetIntoRegisteredRegions) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    using layout = window_layout_t;
    lci::device_t device = open_raw_device();
    raw_cq_t cq(env, device);
    const int me = env.rank();
    const int peer = 1 - me;
    std::vector<char> window(layout::bytes, 0);
    fill(window.data() + layout::get, msg_size_max, 100 + me);
    lci::mr_t window_mr = lci::register_memory_x(window.data(), window.size()).device(device)();
    lci::rmr_t mine = lci::get_rmr(window_mr);
    lci::rmr_t rmrs[2];
    env.allgather(&mine, sizeof(mine), rmrs);
    const lci::rmr_t rmr = rmrs[peer];
    // [0, msg_size_max): what this rank puts; then where its get lands.
    std::vector<char> local(2 * msg_size_max, 0);
    fill(local.data(), msg_size_max, me);
    lci::mr_t local_mr = lci::register_memory_x(local.data(), local.size()).device(device)();
    char* const source = local.data();
    char* const landing = local.data() + msg_size_max;
    int put_context = 0;
    int putImm_context = 0;
    int get_context = 0;
    cq.post([&] {
      return lci::net_post_put_x(peer, source, msg_size_max, local_mr, layout::put, rmr)
          .device(device)
          .user_context(&put_context)();
    });
    cq.post([&] {
      return lci::net_post_puts_x(peer, source, inject_size_max, layout::puts, rmr)
          .device(device)();
    });
    cq.post([&] {
      return lci::net_post_putImms_x(peer, source, inject_size_max, layout::putImms, rmr)
          .device(device)
          .imm_data(imm_base + 1)();
    });
    cq.post([&] {
      return lci::net_post_putImm_x(peer, source, layout::putImm_size, local_mr, layout::putImm,
                                    rmr)
          .device(device)
          .imm_data(imm_base + 2)
          .user_context(&putImm_context)();
    });
    cq.post([&] {
      return lci::net_post_get_x(peer, landing, msg_size_max, local_mr, layout::get, rmr)
          .device(device)
          .user_context(&get_context)();
    });
    for (const lci::net_status_t& status : cq.take(lci::net_opcode_t::WRITE, 2)) {
      require(status.rank == peer &&
                  (status.user_context == &put_context || status.user_context == &putImm_context),
              "a WRITE completion of another rank or post");
    }
    const lci::net_status_t read = cq.take(lci::net_opcode_t::READ, 1)[0];
    require(read.rank == peer && read.user_context == &get_context, "a READ of another post");
    require(holds(landing, msg_size_max, 100 + peer), "the get read wrong bytes");
    // A REMOTE_WRITE says its put's data is in place.
    bool remote_writes[2] = {false, false};
    for (const lci::net_status_t& status : cq.take(lci::net_opcode_t::REMOTE_WRITE, 2)) {
      require(status.rank == peer && status.user_context == nullptr,
              "a REMOTE_WRITE of another rank, or with a context");
      const bool injected = status.imm_data == imm_base + 1;
      require(injected || status.imm_data == imm_base + 2,
              "a REMOTE_WRITE with imm_data " + std::to_string(status.imm_data));
      remote_writes[injected ? 0 : 1] = true;
      const std::size_t size = injected ? inject_size_max : layout::putImm_size;
      require(status.length == size,
              "a REMOTE_WRITE of " + std::to_string(status.length) + " bytes");
      require(holds(window.data() + (injected ? layout::putImms : layout::putImm), size, peer),
              "a put with immediate data wrote wrong bytes");
    }
    require(remote_writes[0] && remote_writes[1], "a put with immediate data came twice");
    // Plain puts tell the target nothing: their bytes are awaited.
    cq.poll_until([&] { return landed(window.data() + layout::put, msg_size_max, peer); },
                  "the peer's put");
    cq.poll_until([&] { return landed(window.data() + layout::puts, inject_size_max, peer); },
                  "the peer's injected put");
    expect_invalid_argument(
        "a get into an empty rmr",
        [&] {
          return lci::net_post_get_x(peer, landing, 8, local_mr, 0, lci::rmr_t{}).device(device)();
        },
        {"net_post_get", "rmr is empty"});
    expect_invalid_argument(
        "an injected put over the inject size",
        [&] {
          return lci::net_post_puts_x(peer, source, inject_size_max + 1, 0, rmr).device(device)();
        },
        {"net_post_puts", "size = 33", "inject size"});
    env.barrier();  // no access to this rank's window is left
    lci::deregister_memory(&local_mr);
    lci::deregister_memory(&window_mr);
    lci::g_runtime_fina();
  });
}

// Upstream's own raw use: the default device of a runtime without a packet
// pool, a message to this rank itself, operations without a device option.
TEST(NetRaw, DefaultDeviceOfARuntimeWithoutPacketPool) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    lci::g_runtime_init_x().alloc_default_packet_pool(false)();
    raw_cq_t cq(env, lci::device_t{});
    std::vector<char> bytes(1024, 0);
    std::vector<char> received(1024, 0);
    fill(bytes.data(), bytes.size(), env.rank());
    lci::mr_t send_mr = lci::register_memory(bytes.data(), bytes.size());
    lci::mr_t recv_mr = lci::register_memory(received.data(), received.size());
    int recv_context = 0;
    int send_context = 0;
    cq.post([&] {
      return lci::net_post_recv_x(received.data(), received.size(), recv_mr)
          .user_context(&recv_context)();
    });
    cq.post([&] {
      return lci::net_post_send_x(env.rank(), bytes.data(), bytes.size(), send_mr)
          .user_context(&send_context)();
    });
    const lci::net_status_t sent = cq.take(lci::net_opcode_t::SEND, 1)[0];
    const lci::net_status_t got = cq.take(lci::net_opcode_t::RECV, 1)[0];
    require(sent.user_context == &send_context && got.user_context == &recv_context,
            "completions without their posts' user_context");
    require(got.rank == env.rank() && got.length == bytes.size() &&
                holds(received.data(), received.size(), env.rank()),
            "the message to this rank arrived wrong");
    lci::net_status_t none[2];
    require(lci::net_poll_cq(2, none) == 0, "a completion of no operation");
    lci::deregister_memory(&send_mr);
    lci::deregister_memory(&recv_mr);
    lci::g_runtime_fina();
  });
}

// A raw device refuses the protocol's operations; a pooled one the raw
// layer's; the raw operations refuse bad arguments, naming them.
TEST(NetRaw, MisuseIsRefused) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    lci::g_runtime_init_x().alloc_default_packet_pool(false)();
    const int peer = 1 - env.rank();
    std::vector<char> bytes(64, 'x');
    char* const buffer = bytes.data();
    lci::comp_t sync = lci::alloc_sync();
    expect_invalid_argument("progress on a raw device", [] { return lci::progress(); },
                            {"progress", "no packet pool"});
    expect_invalid_argument("post_send on a raw device",
                            [&] { return lci::post_send(peer, buffer, 8, 1, sync); },
                            {"post_*", "no packet pool"});
    expect_invalid_argument("post_recv on a raw device",
                            [&] { return lci::post_recv(peer, buffer, 8, 1, sync); },
                            {"post_*", "no packet pool"});
    expect_invalid_argument("post_am on a raw device",
                            [&] { return lci::post_am(peer, buffer, 8, sync, 1); },
                            {"post_*", "no packet pool"});
    expect_invalid_argument("barrier on a raw device",
                            [] {
                              lci::barrier();
                              return 0;
                            },
                            {"barrier", "no packet pool"});
    expect_invalid_argument("test_drained on a raw device", [] { return lci::test_drained(); },
                            {"progress", "no packet pool"});

    lci::packet_pool_t pool = lci::alloc_packet_pool();
    lci::device_t pooled = lci::alloc_device_x().packet_pool(pool)();
    expect_invalid_argument("net_post_sends on a pooled device",
                            [&] { return lci::net_post_sends_x(peer, buffer, 8).device(pooled)(); },
                            {"net_post_sends", "has a packet pool"});
    lci::net_status_t status;
    expect_invalid_argument("net_poll_cq on a pooled device",
                            [&] { return lci::net_poll_cq_x(1, &status).device(pooled)(); },
                            {"net_poll_cq", "has a packet pool"});
    lci::mr_t pooled_mr = lci::register_memory_x(buffer, bytes.size()).device(pooled)();

    lci::mr_t mr = lci::register_memory(buffer, 32);
    expect_invalid_argument("a rank out of range",
                            [&] { return lci::net_post_sends(2, buffer, 8); },
                            {"net_post_sends: rank = 2", "out of range"});
    expect_invalid_argument("a null buffer",
                            [&] { return lci::net_post_send(peer, nullptr, 8, mr); },
                            {"net_post_send", "buffer = nullptr with size = 8"});
    expect_invalid_argument("an empty mr",
                            [&] { return lci::net_post_send(peer, buffer, 8, lci::mr_t{}); },
                            {"net_post_send", "mr is empty"});
    expect_invalid_argument("a buffer past its mr",
                            [&] { return lci::net_post_recv(buffer + 16, 17, mr); },
                            {"net_post_recv", "17 bytes from buffer lie outside mr"});
    expect_invalid_argument("another device's mr",
                            [&] { return lci::net_post_send(peer, buffer, 8, pooled_mr); },
                            {"net_post_send", "mr: registered with another device"});
    expect_invalid_argument("an endpoint of another device",
                            [&] {
                              return lci::net_post_sends_x(peer, buffer, 8)
                                  .device(lci::get_default_device())
                                  .endpoint(lci::get_default_endpoint_x().device(pooled)())();
                            },
                            {"net_post_sends", "endpoint: belongs to another device"});
    expect_invalid_argument("no statuses to poll into",
                            [&] { return lci::net_poll_cq(1, nullptr); },
                            {"net_poll_cq", "statuses = nullptr with max_polls = 1"});
    require(lci::net_poll_cq(0, nullptr) == 0, "polling for nothing polled something");

    lci::deregister_memory(&mr);
    lci::deregister_memory(&pooled_mr);
    lci::free_device(&pooled);
    lci::free_packet_pool(&pool);
    lci::free_comp(&sync);
    lci::g_runtime_fina();
  });
}

// The protocol never registers on a raw device, so the program may hold
// every registration the network allows (a device with a packet pool keeps
// a quarter for the protocol's sends, puts and gets).
TEST(NetRaw, ProgramMayHoldEveryRegistration) {
  LCI_SIM_ONLY("the simulated network's registrations_max");
  constexpr std::size_t registrations_max = 8;
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 2;
  sweep.configure = [](lci::sim::run_options_t& options) {
    options.log = false;
    options.world.registrations_max = registrations_max;
  };
  lci::sim::expect_runs_ok(2, sweep, [](lci::sim::rank_env_t&) {
    lci::device_t device = open_raw_device();
    std::vector<char> bytes(registrations_max, 0);
    std::vector<lci::mr_t> mrs;
    for (std::size_t i = 0; i < registrations_max; ++i) {
      mrs.push_back(lci::register_memory_x(&bytes[i], 1).device(device)());
    }
    for (lci::mr_t& mr : mrs) lci::deregister_memory(&mr);
    lci::g_runtime_fina();
  });
}

// What the network fails comes back as ERROR: a put past the target's
// window and a put with a stale key (the target's protection faults: rmr_t
// carries no size, and the raw layer leaves bounds to the network) with
// its post's user_context; a crashed peer as the network's own report,
// naming it, with none.
TEST(NetRaw, FaultsAndCrashedPeersAreErrors) {
  LCI_SIM_ONLY("a stale key refused at the target and a crashed rank");
  constexpr int victim = 1;
  run_two_ranks([](lci::sim::rank_env_t& env) {
    lci::device_t device = open_raw_device();
    std::vector<char> bytes(4096, 'x');
    lci::mr_t mr = lci::register_memory_x(bytes.data(), bytes.size()).device(device)();
    lci::rmr_t mine = lci::get_rmr(mr);
    lci::rmr_t rmrs[2];
    env.allgather(&mine, sizeof(mine), rmrs);
    if (env.rank() == victim) {
      env.barrier();  // the put past the window failed
      lci::deregister_memory(&mr);
      env.barrier();  // the key is stale
      env.barrier();  // the stale put failed
      env.crash();
    }
    raw_cq_t cq(env, device);
    int context = 0;
    cq.post([&] {
      return lci::net_post_put_x(victim, bytes.data(), 8, mr, bytes.size() - 4, rmrs[victim])
          .device(device)
          .user_context(&context)();
    });
    const lci::net_status_t past = cq.take(lci::net_opcode_t::ERROR, 1)[0];
    require(past.rank == victim && past.user_context == &context,
            "the put past the window's ERROR lacks its rank or context");
    env.barrier();
    env.barrier();
    cq.post([&] {
      return lci::net_post_put_x(victim, bytes.data(), 8, mr, 0, rmrs[victim])
          .device(device)
          .user_context(&context)();
    });
    const lci::net_status_t fault = cq.take(lci::net_opcode_t::ERROR, 1)[0];
    require(fault.rank == victim && fault.user_context == &context,
            "the stale put's ERROR lacks its rank or context");
    env.barrier();
    const lci::net_status_t down = cq.take(lci::net_opcode_t::ERROR, 1)[0];
    require(down.rank == victim && down.user_context == nullptr,
            "the crash's ERROR names rank " + std::to_string(down.rank) + " or has a context");
    lci::deregister_memory(&mr);
    lci::g_runtime_fina();
  });
}

}  // namespace
