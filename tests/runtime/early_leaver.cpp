// Ranks that finalize and exit while the last rank still progresses: the
// last rank must not take their exits for crashes (g_runtime_fina is
// collective: an early rank waits in it until every rank entered it;
// docs/design/lifecycle.md, "Leaving"). Run as N >= 2 real processes under
// tools/lcirun (the real-network targets in tests/runtime/BUILD).
//
// Every rank exchanges one message with the last rank; then the others
// call g_runtime_fina and exit at once, while the last rank progresses for
// late_progress_time (long enough for their processes to be gone, and for
// the network's peer checks, ofi: every 1024 empty polls, to look at them
// many times over) before it finalizes too. Every rank prints
// "rank <r>: left cleanly" after g_runtime_fina returned; a rank that
// catches an error prints "rank <r>: error: <what>" and exits 1.
//
// With the argument --no-default-device the runtime starts without a
// default device, as runtimes built on LCI start it: the exchange and the
// late progress run on a device of the program's own, freed before
// g_runtime_fina, which then has no default device to leave on.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "lci.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;

constexpr auto late_progress_time = std::chrono::milliseconds(300);
constexpr lci::tag_t hello_tag = 1;

void run(bool default_device) {
  lci::g_runtime_init_x().alloc_default_device(default_device)();
  lci::device_t device = default_device ? lci::device_t() : lci::alloc_device();
  const int me = lci::get_rank_me();
  const int last = lci::get_rank_n() - 1;
  if (last < 1) throw std::runtime_error("needs at least 2 ranks");
  char out = static_cast<char>(me);
  if (me != last) {
    lci::comp_t sync = lci::alloc_sync();
    if (post_retrying([&] {
          return lci::post_send_x(last, &out, 1, hello_tag, sync).device(device)();
        }, device).is_posted()) {
      lci::sync_wait_x(sync, nullptr).device(device)();
    }
    lci::free_comp(&sync);
  } else {
    for (int peer = 0; peer < last; ++peer) {
      char in = 0;
      lci::comp_t sync = lci::alloc_sync();
      if (post_retrying([&] {
            return lci::post_recv_x(peer, &in, 1, hello_tag, sync).device(device)();
          }, device).is_posted()) {
        lci::sync_wait_x(sync, nullptr).device(device)();
      }
      lci::free_comp(&sync);
      if (in != static_cast<char>(peer)) throw std::runtime_error("wrong byte from a peer");
    }
    const auto until = std::chrono::steady_clock::now() + late_progress_time;
    while (std::chrono::steady_clock::now() < until) (void)lci::progress_x().device(device)();
  }
  if (!default_device) lci::free_device(&device);
  lci::g_runtime_fina();
  std::printf("rank %d: left cleanly\n", me);
}

}  // namespace

int main(int argc, char** argv) {
  const bool default_device = !(argc == 2 && std::strcmp(argv[1], "--no-default-device") == 0);
  try {
    run(default_device);
  } catch (const std::exception& error) {
    std::printf("rank %d: error: %s\n", lci::get_g_runtime().is_empty() ? -1 : lci::get_rank_me(),
                error.what());
    return 1;
  }
  return 0;
}
