// The attributes runtimes built on upstream LCI read and set, honoured:
// get_g_default_attr reports the numbers a default allocation gets (not 0
// for "default"), so a runtime's sizing code (HPX's parcelport, Reconverse)
// works from real values; what it sets through set_g_default_attr is what
// later allocations get. And tags above max_tag are masked to their low
// bits, as upstream's, rather than refused.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "sim/sim_process.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::require;

std::string text(std::size_t value) { return std::to_string(value); }

// Runs `body` as one rank, once. Not beside other runs: set_g_default_attr
// is process-wide.
void run_alone(void (*body)(lci::sim::rank_env_t&)) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 1;
  sweep.concurrent = false;
  lci::sim::expect_runs_ok(1, sweep, body);
}

// The defaults reported are those a runtime's default resources get.
void reported_defaults_are_real(lci::sim::rank_env_t&) {
  const lci::global_attr_t reported = lci::get_g_default_attr();
  require(reported.npackets > 0 && reported.packet_size > 0, "packet pool defaults reported 0");
  require(reported.net_max_recvs > 0 && reported.net_max_sends > 0 && reported.net_max_cqes > 0,
          "device queue depths reported 0");
  require(reported.packet_return_threshold > 0 && reported.cq_default_length > 0,
          "runtime defaults reported 0");
  lci::g_runtime_init();
  const lci::packet_pool_t pool = lci::get_default_packet_pool();
  require(pool.get_attr_npackets() == reported.npackets,
          "npackets: reported " + text(reported.npackets) + ", the pool has " +
              text(pool.get_attr_npackets()));
  require(pool.get_attr_packet_size() == reported.packet_size, "packet_size differs");
  // The network may grant fewer than a device asks for, never more.
  const lci::device_t device = lci::get_default_device();
  require(device.get_attr_net_max_recvs() <= reported.net_max_recvs,
          "net_max_recvs: reported " + text(reported.net_max_recvs) + ", the device has " +
              text(device.get_attr_net_max_recvs()));
  lci::comp_t cq = lci::alloc_cq();
  require(static_cast<int>(cq.get_attr_default_length()) == reported.cq_default_length,
          "cq_default_length differs");
  lci::free_comp(&cq);
  lci::g_runtime_fina();
}

TEST(ClientAttrs, GetGDefaultAttrReportsRealValues) { run_alone(reported_defaults_are_real); }

// HPX's and Reconverse's sizing: read the defaults, keep the pool at least
// twice the receives of all devices, set them back. Values set are honoured;
// handing back what was read leaves the defaults in force.
void sizing_is_honoured(lci::sim::rank_env_t&) {
  const lci::global_attr_t before = lci::get_g_default_attr();
  lci::set_g_default_attr(before);  // a round trip changes nothing
  const lci::global_attr_t again = lci::get_g_default_attr();
  require(again.npackets == before.npackets && again.net_max_recvs == before.net_max_recvs,
          "a round trip through set_g_default_attr changed the defaults");
  lci::global_attr_t attr = before;
  const std::size_t ndevices = attr.npackets / attr.net_max_recvs;  // the condition below holds
  if (attr.net_max_recvs * ndevices > attr.npackets / 2) {
    attr.net_max_recvs = attr.npackets / 2 / ndevices;
    attr.npackets = attr.npackets + attr.npackets / 2;
  }
  require(attr.net_max_recvs != before.net_max_recvs && attr.npackets != before.npackets,
          "the sizing changed nothing to check");
  lci::set_g_default_attr(attr);
  lci::g_runtime_init();
  require(lci::get_default_packet_pool().get_attr_npackets() == attr.npackets,
          "npackets set: " + text(attr.npackets) + ", the pool has " +
              text(lci::get_default_packet_pool().get_attr_npackets()));
  require(lci::get_default_device().get_attr_net_max_recvs() == attr.net_max_recvs,
          "net_max_recvs set: " + text(attr.net_max_recvs) + ", the device has " +
              text(lci::get_default_device().get_attr_net_max_recvs()));
  lci::g_runtime_fina();
  lci::set_g_default_attr(before);
  require(lci::get_g_default_attr().npackets == before.npackets, "defaults not restored");
}

TEST(ClientAttrs, SetGDefaultAttrSizingIsHonoured) { run_alone(sizing_is_honoured); }

// Every attribute the clients set, as they set it, honoured: Reconverse's
// set_g_default_attr (npackets, net_max_recvs, ofi_lock_mode with the three
// try-lock flags) and g_runtime_init_x().alloc_default_device(false) (LCW's
// too), devices allocated afterwards; HPX's alloc_cq_x().zero_copy_am(true),
// whose active messages arrive in their packet. A lock mode past the flags
// is refused.
void every_client_set_attribute(lci::sim::rank_env_t&) {
  const lci::global_attr_t before = lci::get_g_default_attr();
  lci::global_attr_t attr = before;
  attr.npackets = before.npackets * 2;
  attr.net_max_recvs = before.net_max_recvs / 2;
  attr.ofi_lock_mode = lci::LCI_NET_TRYLOCK_SEND | lci::LCI_NET_TRYLOCK_RECV |
                       lci::LCI_NET_TRYLOCK_POLL;
  lci::set_g_default_attr(attr);
  lci::g_runtime_init_x().alloc_default_device(false)();
  require(lci::get_g_runtime().get_attr_alloc_default_device() == false, "alloc_default_device");
  require(lci::get_default_packet_pool().get_attr_npackets() == attr.npackets, "npackets");
  lci::device_t device = lci::alloc_device();
  require(device.get_attr_net_max_recvs() == attr.net_max_recvs, "net_max_recvs");
  require(device.get_attr_ofi_lock_mode() == attr.ofi_lock_mode, "ofi_lock_mode");
  lci::runtime_test::expect_invalid_argument(
      "ofi_lock_mode past the flags",
      [] { (void)lci::alloc_device_x().ofi_lock_mode(lci::LCI_NET_TRYLOCK_MAX)(); },
      {"ofi_lock_mode = 16"});

  lci::comp_t cq = lci::alloc_cq_x().zero_copy_am(true)();
  require(cq.get_attr_zero_copy_am(), "zero_copy_am");
  const lci::rcomp_t rcomp = lci::register_rcomp(cq);
  char byte = 'z';
  (void)lci::runtime_test::post_retrying(
      [&] {
        return lci::post_am_x(0, &byte, 1, lci::COMP_NULL, rcomp).device(device)();
      },
      device);
  lci::status_t arrived;
  do {
    (void)lci::progress_x().device(device)();
    arrived = lci::cq_pop(cq);
  } while (arrived.is_retry());
  require(*static_cast<char*>(arrived.get_buffer()) == 'z', "the active message's byte");
  lci::put_upacket(arrived.buffer);  // in its packet: zero_copy_am was honoured
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&cq);
  lci::free_device(&device);
  lci::g_runtime_fina();
  lci::set_g_default_attr(before);
}

TEST(ClientAttrs, EveryClientSetAttributeIsHonoured) { run_alone(every_client_set_attribute); }

// A send's tag above max_tag is masked to its low bits (upstream's
// behaviour; runtimes count tags up without wrapping): it matches a receive
// for the masked value. An active message, whose header holds 64 bits,
// delivers it whole.
void tags_are_masked(lci::sim::rank_env_t&) {
  lci::g_runtime_init();
  const std::uint64_t max_tag = lci::get_g_runtime().get_attr_max_tag();
  require(max_tag < ~std::uint64_t{0}, "max_tag leaves no tag above it");
  const lci::tag_t masked = 5;
  const lci::tag_t above = (max_tag + 1) | masked;  // low bits: 5
  char out = 'x', in = 0;
  lci::comp_t sync = lci::alloc_sync();
  lci::status_t recv = lci::runtime_test::post_retrying(
      [&] { return lci::post_recv(0, &in, 1, masked, sync); });
  lci::status_t send = lci::runtime_test::post_retrying(
      [&] { return lci::post_send(0, &out, 1, above, lci::COMP_NULL); });
  require(send.is_done(), "the send with a tag above max_tag failed");
  if (!recv.is_done()) lci::sync_wait(sync, &recv);
  require(in == 'x' && recv.tag == masked, "the receive for the masked tag got nothing");
  lci::comp_t cq = lci::alloc_cq();
  const lci::rcomp_t rcomp = lci::register_rcomp(cq);
  (void)lci::runtime_test::post_retrying(
      [&] { return lci::post_am_x(0, &out, 1, lci::COMP_NULL, rcomp).tag(above)(); });
  lci::status_t arrived;
  do {
    (void)lci::progress();
    arrived = lci::cq_pop(cq);
  } while (arrived.is_retry());
  require(arrived.tag == above, "an active message's tag arrived as " + text(arrived.tag));
  lci::get_allocator()->deallocate(arrived.buffer);
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&cq);
  lci::free_comp(&sync);
  lci::g_runtime_fina();
}

TEST(ClientAttrs, TagsAboveMaxTagAreMasked) { run_alone(tags_are_masked); }

}  // namespace
