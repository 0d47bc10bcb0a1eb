// Packets as send buffers (docs/design/protocol.md, "Packets as send
// buffers"): a program that writes every message into a packet from
// get_upacket() and posts it, as HPX's parcelport builds each parcel header,
// never gives the packets back itself; the runtime must. Rank 0 posts many
// times more operations than its device's packet pool holds, each from a
// fresh upacket, over every path that can carry one: send and active
// message (inject, eager from the packet itself, eager copied behind a
// header, rendezvous), put with and without a remote completion, each
// finished in the post (memory semantic) or later (network semantic).
// get_upacket() must never run dry for good, and once the device is freed
// its pool holds as many packets as before the device existed. A
// collective, which posts its buffers itself, leaves them the program's.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lci.hpp"
#include "lci/runtime/resources.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::require;

enum class kind_t { send, am, put, put_signal };
// One way of posting from a upacket; the schedule cycles through them.
struct path_t {
  kind_t kind;
  std::size_t size;  // 0: the pool's whole packet
  bool header;       // a tag beyond the immediate data: a header leads the message
  lci::comp_semantic_t semantic;
};

constexpr std::size_t inject_bytes = 8;
constexpr std::size_t eager_bytes = 1000;
// A tag that does not fit imm_nbits_tag (16 by default) bits.
constexpr lci::tag_t header_tag_base = lci::tag_t{1} << 20;
constexpr lci::comp_semantic_t memory = lci::comp_semantic_t::memory;
constexpr lci::comp_semantic_t network = lci::comp_semantic_t::network;
const path_t paths[] = {
    {kind_t::send, inject_bytes, false, memory},
    {kind_t::send, eager_bytes, false, memory},
    {kind_t::send, eager_bytes, false, network},
    {kind_t::send, eager_bytes, true, memory},
    {kind_t::send, 0, true, network},  // header + a whole packet: rendezvous
    {kind_t::am, inject_bytes, false, memory},
    {kind_t::am, eager_bytes, false, network},
    {kind_t::am, 0, true, memory},
    {kind_t::put, inject_bytes, false, memory},
    {kind_t::put, eager_bytes, false, network},
    {kind_t::put_signal, eager_bytes, false, memory},
    {kind_t::put_signal, eager_bytes, false, network},
};
constexpr std::size_t paths_count = sizeof(paths) / sizeof(paths[0]);
// Operations per batch (both ranks meet between batches) and batches:
// 16 times the packets of the pool below in all.
constexpr std::size_t batch_ops = 4 * paths_count;
constexpr std::size_t pool_packets = 256;
constexpr std::size_t batches_count = 16 * pool_packets / batch_ops;
// Progress calls a get_upacket() may wait for a packet to come back.
constexpr int upacket_waits_max = 1000;

lci::tag_t tag_of(std::size_t path) {
  return static_cast<lci::tag_t>(paths[path].header ? header_tag_base + path : path);
}

struct world_t {
  lci::sim::rank_env_t& env;
  lci::packet_pool_t pool;
  lci::device_t device;
  std::size_t packet_bytes = 0;
  lci::comp_t cq;     // rank 0: local completions; rank 1: receives
  lci::comp_t am_cq;  // rank 1: active messages and put signals
  lci::rcomp_t rcomp = 0;
  std::vector<char> window;  // rank 1: the puts' target
  lci::mr_t mr;
  lci::rmr_t peer_rmr;

  std::size_t size_of(std::size_t path) const {
    return paths[path].size == 0 ? packet_bytes : paths[path].size;
  }
  void step() {
    if (lci::progress_x().device(device)().is_retry()) env.wait("progress of the upacket device");
  }
  // Pops `count` statuses from `comp`, progressing meanwhile.
  void pop(lci::comp_t comp, std::size_t count, const char* what) {
    for (std::size_t popped = 0; popped < count;) {
      const lci::status_t status = lci::cq_pop(comp);
      if (status.is_retry()) {
        step();
        continue;
      }
      require(status.is_done(), std::string(what) + ": an operation failed");
      if (comp == am_cq && status.buffer != nullptr) std::free(status.buffer);
      ++popped;
    }
  }
};

void* take_upacket(world_t& w) {
  for (int waits = 0; waits < upacket_waits_max; ++waits) {
    void* packet = lci::get_upacket_x().packet_pool(w.pool)();
    if (packet != nullptr) return packet;
    w.step();
  }
  throw std::runtime_error("get_upacket: no packet came back to the pool after " +
                           std::to_string(upacket_waits_max) +
                           " progress calls (posted upackets are not returned)");
}

// 1 when the completion comes through w.cq later.
std::size_t post_from_upacket(world_t& w, std::size_t path, std::size_t slot) {
  const std::size_t size = w.size_of(path);
  const lci::tag_t tag = tag_of(path);
  for (;;) {
    void* packet = take_upacket(w);
    std::memset(packet, static_cast<int>(path), size);
    const path_t& p = paths[path];
    const std::uintptr_t disp = slot * w.packet_bytes;
    lci::status_t status;
    switch (p.kind) {
      case kind_t::send:
        status = lci::post_send_x(1, packet, size, tag, w.cq).device(w.device).comp_semantic(
            p.semantic)();
        break;
      case kind_t::am:
        status = lci::post_am_x(1, packet, size, w.cq, w.rcomp)
                     .device(w.device)
                     .tag(tag)
                     .comp_semantic(p.semantic)();
        break;
      case kind_t::put:
      case kind_t::put_signal:
        status = lci::post_put_x(1, packet, size, w.cq, disp, w.peer_rmr)
                     .device(w.device)
                     .remote_comp(p.kind == kind_t::put_signal ? w.rcomp : 0)
                     .comp_semantic(p.semantic)();
        break;
    }
    if (!status.is_retry()) return status.is_posted() ? 1 : 0;
    lci::put_upacket(packet);  // a refused post leaves it the program's
    w.step();
  }
}

void sender(world_t& w) {
  for (std::size_t batch = 0; batch < batches_count; ++batch) {
    w.env.barrier();  // rank 1's receives of this batch are posted
    std::size_t posted = 0;
    for (std::size_t op = 0; op < batch_ops; ++op) {
      posted += post_from_upacket(w, op % paths_count, op);
    }
    w.pop(w.cq, posted, "the sender's operations");
    while (!lci::test_drained_x().device(w.device)().is_done()) w.step();
    w.env.barrier();  // everything of this batch arrived
  }
}

void receiver(world_t& w) {
  std::vector<char> in(batch_ops * w.packet_bytes);
  for (std::size_t batch = 0; batch < batches_count; ++batch) {
    std::size_t receives = 0;
    std::size_t am_cq_statuses = 0;
    for (std::size_t op = 0; op < batch_ops; ++op) {
      const std::size_t path = op % paths_count;
      if (paths[path].kind == kind_t::am || paths[path].kind == kind_t::put_signal) {
        ++am_cq_statuses;
      }
      if (paths[path].kind != kind_t::send) continue;
      lci::status_t status;
      do {
        status = lci::post_recv_x(0, in.data() + op * w.packet_bytes, w.size_of(path),
                                  tag_of(path), w.cq)
                     .device(w.device)();
        if (status.is_retry()) w.step();
      } while (status.is_retry());
      receives += status.is_posted() ? 1 : 0;
    }
    w.env.barrier();
    w.pop(w.cq, receives, "the receives");
    w.pop(w.am_cq, am_cq_statuses, "the active messages and put signals");
    while (!lci::test_drained_x().device(w.device)().is_done()) w.step();
    w.env.barrier();
  }
}

std::size_t pool_free_count(lci::packet_pool_t pool) {
  return pool.p_impl->pool.packets_free_count();
}

void body(lci::sim::rank_env_t& env) {
  lci::g_runtime_init();
  ASSERT_EQ(lci::get_rank_n(), 2);
  require(header_tag_base + paths_count <= lci::get_g_runtime().get_attr_max_tag(),
          "the header tags are valid tags");
  world_t w{env};
  w.pool = lci::alloc_packet_pool_x().npackets(pool_packets)();
  const std::size_t free_before = pool_free_count(w.pool);
  w.device = lci::alloc_device_x().packet_pool(w.pool)();
  w.packet_bytes = w.pool.p_impl->attr.packet_size;  // what a upacket holds
  w.cq = lci::alloc_cq();
  w.am_cq = lci::alloc_cq();
  w.rcomp = lci::register_rcomp(w.am_cq);  // the same on both ranks
  w.window.assign(batch_ops * w.packet_bytes, 0);
  w.mr = lci::register_memory_x(w.window.data(), w.window.size()).device(w.device)();
  const lci::rmr_t mine = lci::get_rmr(w.mr);
  lci::rmr_t rmrs[2];
  env.allgather(&mine, sizeof(mine), rmrs);
  w.peer_rmr = rmrs[1 - lci::get_rank_me()];
  if (lci::get_rank_me() == 0) {
    sender(w);
  } else {
    receiver(w);
  }
  lci::deregister_memory(&w.mr);
  lci::free_device(&w.device);
  EXPECT_EQ(pool_free_count(w.pool), free_before)
      << "packets of the pool out after its device was freed";
  lci::free_packet_pool(&w.pool);
  lci::deregister_rcomp(w.rcomp);
  lci::free_comp(&w.am_cq);
  lci::free_comp(&w.cq);
  lci::g_runtime_fina();
}

// A collective posts its buffers itself, the root's to several peers: a
// packet as its buffer stays the program's, readable after the call and
// given back by the program.
void broadcast_body(lci::sim::rank_env_t&) {
  lci::g_runtime_init();
  const std::size_t size = lci::get_max_bcopy_size();
  void* packet = nullptr;
  while ((packet = lci::get_upacket()) == nullptr) (void)lci::progress();
  if (lci::get_rank_me() == 0) std::memset(packet, 0x5a, size);
  lci::broadcast(packet, size, 0);
  const auto* bytes = static_cast<const unsigned char*>(packet);
  for (std::size_t i = 0; i < size; ++i) require(bytes[i] == 0x5a, "a broadcast byte");
  lci::put_upacket(packet);
  lci::g_runtime_fina();
}

TEST(Upacket, CollectivesLeaveAPacketBufferTheProgramsOwn) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 2;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  lci::sim::expect_runs_ok(3, sweep, broadcast_body);
}

TEST(Upacket, PostedUpacketsGoBackToTheirPool) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 2;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  lci::sim::expect_runs_ok(2, sweep, body);
}

}  // namespace
