// HPX's LCI parcelport, as its code uses LCI, built against an installed
// LCI (tests/install) and run on the simulated network (2 ranks). Each step
// is one of the usage patterns that once failed here:
//   [1] links LCI::LCI and LCI::LCT and includes lct.h (CMakeLists.txt);
//       LCT_init/LCT_fina, LCT_time_t and the pcounter types
//   [2] comp_t made from and compared with nullptr; (char*) get_buffer()
//   [3] free_comp after g_runtime_fina (HPX's destructors)
//   [4] parcel headers built in get_upacket() packets and posted: the pool
//       takes them back, so it never drains
//   [5] two devices sharing the matching engine: a rendezvous send on one,
//       its receive posted on the other after the RTS arrived
//   [6] a tag counter beyond 32 bits (masked, as upstream's)
//   [7] the pool sized from get_g_default_attr()'s real defaults
//   ([8], the launcher variable HPX looks for, is lcirun's: lcirun_test)
// Prints "hpx_patterns: ok" on rank 0, or names the pattern that failed.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lci.hpp"
#include "lct.h"
#include "sim/sim_program.hpp"

namespace {

void check(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "hpx_patterns: %s\n", what);
  std::exit(1);
}

constexpr int ndevices = 2;
constexpr lci::tag_t header_tag = 3;
// [6] beyond 32 bits; a receive with the same tag matches it.
constexpr lci::tag_t wide_tag = (lci::tag_t(1) << 40) | 0x2a;

// [7] HPX's sizing of the pool per device, from the reported defaults.
void size_pool() {
  lci::global_attr_t attr = lci::get_g_default_attr();
  check(attr.npackets > 0 && attr.net_max_recvs > 0, "[7] defaults reported as 0");
  if (attr.net_max_recvs * ndevices > attr.npackets / 2) {
    attr.net_max_recvs = attr.npackets / 2 / ndevices;
  }
  lci::set_g_default_attr(attr);
}

// [5] rank 0 sends on device 0 (paired with the peer's device 0); rank 1
// lets the RTS arrive there, then posts the receive on device 1.
void cross_device_rendezvous(const lci::device_t (&devices)[ndevices], lci::comp_t cq) {
  const std::size_t size = 4 * lci::get_max_bcopy_size();
  std::vector<char> buffer(size, lci::get_rank_me() == 0 ? 'p' : 0);
  if (lci::get_rank_me() == 0) {
    while (lci::post_send_x(1, buffer.data(), size, wide_tag, cq).device(devices[0])().is_retry()) {
      lci::progress_x().device(devices[0])();
    }
  } else {
    for (int i = 0; i < 1000; ++i) lci::progress_x().device(devices[0])();
    while (lci::post_recv_x(0, buffer.data(), size, wide_tag, cq).device(devices[1])().is_retry()) {
      lci::progress_x().device(devices[1])();
    }
  }
  lci::status_t status;
  do {
    for (const lci::device_t& device : devices) lci::progress_x().device(device)();
    status = lci::cq_pop(cq);
  } while (status.is_retry());
  check(status.is_done(), "[5] the rendezvous failed");
  check(status.get_size() == size, "[5] wrong size");
  if (lci::get_rank_me() == 1) {
    const char* received = (char*)status.get_buffer();  // [2]
    check(received == buffer.data() && received[0] == 'p' && received[size - 1] == 'p',
          "[5] wrong payload");
  }
}

// [4] rank 0 posts four pools' worth of headers from upackets as active
// messages; rank 1 counts them. Without the packets coming back, rank 0's
// pool runs dry after one pool's worth.
void upacket_headers(lci::device_t device, lci::rcomp_t rcomp, lci::comp_t am_cq) {
  const std::size_t headers = 4 * lci::get_default_packet_pool().get_attr_npackets();
  if (lci::get_rank_me() == 0) {
    lci::comp_t sent = lci::alloc_counter();
    std::int64_t posted = 0;  // sends that signal `sent` later
    for (std::size_t i = 0; i < headers; ++i) {
      void* packet = nullptr;
      for (int tries = 0; packet == nullptr; ++tries) {
        check(tries < 1000000, "[4] the packet pool ran dry");
        packet = lci::get_upacket();
        if (packet == nullptr) lci::progress_x().device(device)();
      }
      std::memcpy(packet, &i, sizeof(i));
      lci::status_t status;
      while ((status = lci::post_am_x(1, packet, sizeof(i), sent, rcomp)
                           .device(device)
                           .tag(header_tag)())
                 .is_retry()) {
        lci::progress_x().device(device)();
      }
      if (status.is_posted()) ++posted;
    }
    while (lci::counter_get(sent) < posted) lci::progress_x().device(device)();
    lci::free_comp(&sent);
  } else {
    std::size_t received = 0;
    while (received < headers) {
      lci::progress_x().device(device)();
      lci::status_t status = lci::cq_pop(am_cq);
      if (status.is_retry()) continue;
      check(status.get_size() == sizeof(std::size_t), "[4] wrong header size");
      lci::get_allocator()->deallocate(status.get_buffer());
      ++received;
    }
  }
}

int rank_main(int /*argc*/, char** /*argv*/) {
  LCT_init();                    // [1]
  const LCT_time_t start = LCT_now();
  lci::global_initialize();
  size_pool();
  lci::g_runtime_init_x().alloc_default_device(false)();
  lci::device_t devices[ndevices];
  for (lci::device_t& device : devices) device = lci::alloc_device();

  lci::comp_t none = nullptr;    // [2]
  check(none == nullptr && none.is_empty(), "[2] comp_t from nullptr is not empty");
  lci::comp_t cq = lci::alloc_cq();
  check(!(cq == nullptr), "[2] an allocated cq compares equal to nullptr");
  lci::comp_t am_cq = lci::alloc_cq();
  const lci::rcomp_t rcomp = lci::register_rcomp(am_cq);

  cross_device_rendezvous(devices, cq);
  upacket_headers(devices[1], rcomp, am_cq);

  lci::barrier_x().device(devices[0])();
  for (lci::device_t& device : devices) lci::free_device(&device);
  lci::deregister_rcomp(rcomp);
  const bool leader = lci::get_rank_me() == 0;
  lci::g_runtime_fina();
  lci::free_comp(&cq);           // [3]
  lci::free_comp(&am_cq);
  lci::global_finalize();
  check(LCT_time_to_us(LCT_now() - start) >= 0, "[1] LCT's clock went back");
  LCT_fina();
  if (leader) std::printf("hpx_patterns: ok\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return lci::sim::run_program(argc, argv, /*ranks_default=*/2, rank_main);
}
