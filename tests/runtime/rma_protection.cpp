// RMA outside what the target registered, as real processes (2 ranks under
// tools/lcirun, the real-network targets in tests/runtime/BUILD):
//
// (a) out of bounds: rank 0 puts 8192 bytes at offset 4000, and 1 KiB at
//     offset 2^40, into rank 1's 4096-byte window, and gets out of it: each
//     must fail that one operation (fatal), refused by the target's checked
//     RMA (rmr_t carries no size), on every provider. shm checks no key or
//     bound at the target: a put that got there would wait forever; tcp
//     would drop the connection.
// (b) refused at the target: rank 1 registered a second region, handed out
//     its rmr and deregistered it; rank 0 puts there (a stale key), then
//     puts 8192 bytes at 4000 into the window, with messages in flight
//     around both. Each must fail that one
//     operation (its synchronizer gets errorcode_t::fatal; progress() throws
//     nothing), and the ranks then still pass a barrier, exchange messages
//     and put into the live window. Over every provider: the target checks
//     each put and get before any byte moves (checked RMA,
//     lci/protocol/rma_checked.cpp), since a bad key would stall shm's
//     endpoint (libfabric 1.17 checks none) and drop tcp's connection
//     (docs/backends/ofi.md, "Faults").
//
// Around (b) both ranks flood each other with active messages of 8 B and
// 1 KiB (flood_count each way, half of rank 0's right behind each put):
// each must arrive exactly once. Over tcp;ofi_rxm a bad key that reached
// the provider dropped the connection and lost messages already sent on it
// (docs/backends/ofi.md, "Faults").
//
// Every rank prints "rank <r>: ok" at the end; a failure prints
// "rank <r>: error: <what>" and exits 1. Every wait is bounded by wait_max,
// so a lost completion fails the run instead of hanging it. An argument
// "bounds" or "refused" runs (a) or (b) alone (default: both), so that each
// can be watched failing on its own.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lci.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;
using lci::runtime_test::require;
using lci::runtime_test::round_trip;

constexpr std::size_t window_bytes = 4096;
constexpr lci::tag_t rmr_tag = 1;
constexpr lci::tag_t round_trip_tag = 2;
constexpr int round_trips_count = 8;
constexpr int flood_count = 512;
constexpr auto wait_max = std::chrono::seconds(20);

// What rank 1 hands out: its live window and a deregistered region.
struct keys_t {
  lci::rmr_t window;
  lci::rmr_t stale;
};

// Waits for `sync` with progress(), at most wait_max.
lci::status_t wait_for(lci::comp_t sync, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + wait_max;
  lci::status_t status;
  while (!lci::sync_test(sync, &status)) {
    (void)lci::progress();
    require(std::chrono::steady_clock::now() < deadline, what + ": no completion within the wait");
  }
  return status;
}

// Posts (retrying) and waits; the status of the operation.
lci::status_t post_and_wait(lci::comp_t sync, const std::string& what,
                            const std::function<lci::status_t()>& post) {
  const lci::status_t status = post_retrying(post);
  return status.is_posted() ? wait_for(sync, what) : status;
}

// A put the target refuses must fail alone: fatal, naming rank 1
// (progress() throws nothing meanwhile). `meanwhile` runs between its post
// and the wait.
void expect_put_fails(lci::comp_t sync, const std::string& what, std::size_t size,
                      std::uintptr_t remote_disp, lci::rmr_t rmr,
                      const std::function<void()>& meanwhile) {
  std::vector<char> source(size, 's');
  lci::status_t status = post_retrying([&] {
    return lci::post_put(1, source.data(), source.size(), sync, remote_disp, rmr);
  });
  meanwhile();
  if (status.is_posted()) status = wait_for(sync, what);
  require(status.error.errorcode == lci::errorcode_t::fatal,
          what + " completed " + status.error.get_str());
  require(status.rank == 1, what + ": the failed put names rank " + std::to_string(status.rank));
}

// (a): rmr_t carries no size (upstream's layout), so the target refuses
// each access outside its window; each fails alone.
void out_of_bounds(const keys_t& keys, lci::comp_t sync) {
  const auto nothing = [] {};
  expect_put_fails(sync, "a put of 8192 bytes at 4000", 8192, 4000, keys.window, nothing);
  expect_put_fails(sync, "a put at 2^40", 1024, std::uintptr_t{1} << 40, keys.window, nothing);
  std::vector<char> sink(2 * window_bytes, 0);
  lci::status_t got = post_retrying(
      [&] { return lci::post_get(1, sink.data(), 8192, sync, 4000, keys.window); });
  if (got.is_posted()) got = wait_for(sync, "a get of 8192 bytes at 4000");
  require(got.error.errorcode == lci::errorcode_t::fatal,
          std::string("a get of 8192 bytes at 4000 completed ") + got.error.get_str());
}

// Rank 0's side of (b), each put followed at once by part of the flood
// (`flood_part(k)`, k = 0, 1), so that messages are in flight around it.
void refused_at_target(const keys_t& keys, lci::comp_t sync,
                       const std::function<void(int)>& flood_part) {
  // Over the inject size, so that each put completes through its
  // synchronizer (an injected put is done at once).
  expect_put_fails(sync, "the put with a stale key", 1024, 0, keys.stale,
                   [&] { flood_part(0); });
  expect_put_fails(sync, "a put of 8192 bytes at 4000", 8192, 4000, keys.window,
                   [&] { flood_part(1); });
}

// Rank 0 fills the window through a put (proves RMA still works); rank 1
// checks it after the barrier that follows.
void put_into_window(const keys_t& keys, lci::comp_t sync) {
  std::vector<char> source(window_bytes, 'w');
  const lci::status_t status = post_and_wait(sync, "the put into the window", [&] {
    return lci::post_put(1, source.data(), source.size(), sync, 0, keys.window);
  });
  require(status.is_done(), std::string("the put into the window: ") + status.error.get_str());
}

// Rank 1: registers the window and a region it deregisters at once, and
// sends both keys to rank 0.
void hand_out_keys(std::vector<char>& window, lci::mr_t* window_mr, lci::comp_t sync) {
  keys_t keys{};
  *window_mr = lci::register_memory(window.data(), window.size());
  keys.window = lci::get_rmr(*window_mr);
  std::vector<char> doomed(window_bytes, 0);
  lci::mr_t doomed_mr = lci::register_memory(doomed.data(), doomed.size());
  keys.stale = lci::get_rmr(doomed_mr);
  lci::deregister_memory(&doomed_mr);  // keys.stale names no region from here on
  const lci::status_t sent = post_and_wait(sync, "sending the keys", [&] {
    return lci::post_send(0, &keys, sizeof(keys), rmr_tag, sync);
  });
  require(sent.is_done(), "sending the keys failed");
}

// Active messages to `peer`: [first, last) of flood_count, each carrying
// its index, 8 B and 1 KiB in turn.
void flood(int peer, lci::rcomp_t rcomp, int first, int last) {
  std::vector<char> message(1024, 'f');
  for (int i = first; i < last; ++i) {
    std::memcpy(message.data(), &i, sizeof(i));
    const std::size_t size = i % 2 == 0 ? 8 : message.size();
    const lci::status_t sent = post_retrying([&] {
      return lci::post_am(peer, message.data(), size, lci::COMP_NULL_RETRY, rcomp);
    });
    require(sent.is_done(), "message " + std::to_string(i) + ": " + sent.error.get_str());
  }
}

// Takes the peer's flood from `cq`: each index once, at most wait_max.
void take_flood(lci::comp_t cq) {
  std::vector<bool> seen(flood_count, false);
  const auto deadline = std::chrono::steady_clock::now() + wait_max;
  for (int taken = 0; taken < flood_count;) {
    const lci::status_t status = lci::cq_pop(cq);
    if (status.is_retry()) {
      (void)lci::progress();
      require(std::chrono::steady_clock::now() < deadline,
              "only " + std::to_string(taken) + " of the peer's " +
                  std::to_string(flood_count) + " messages arrived");
      continue;
    }
    int index = -1;
    std::memcpy(&index, status.buffer, sizeof(index));
    std::free(status.buffer);
    require(index >= 0 && index < flood_count && !seen[static_cast<std::size_t>(index)],
            "message " + std::to_string(index) + " arrived twice or is not one sent");
    seen[static_cast<std::size_t>(index)] = true;
    ++taken;
  }
}

keys_t take_keys(lci::comp_t sync) {
  keys_t keys{};
  const lci::status_t got = post_and_wait(sync, "receiving the keys", [&] {
    return lci::post_recv(1, &keys, sizeof(keys), rmr_tag, sync);
  });
  require(got.is_done() && got.size == sizeof(keys), "receiving the keys failed");
  return keys;
}

void run(bool bounds, bool refused) {
  lci::g_runtime_init();
  const int me = lci::get_rank_me();
  require(lci::get_rank_n() == 2, "needs exactly 2 ranks");
  const int peer = 1 - me;
  lci::comp_t sync = lci::alloc_sync();
  lci::comp_t inbox = lci::alloc_cq();
  const lci::rcomp_t inbox_rcomp = lci::register_rcomp(inbox);  // the same on both ranks
  std::vector<char> window(window_bytes, 0);
  lci::mr_t window_mr;
  if (me == 1) {
    hand_out_keys(window, &window_mr, sync);
    if (refused) flood(peer, inbox_rcomp, 0, flood_count);
  } else {
    const keys_t keys = take_keys(sync);
    if (bounds) {
      out_of_bounds(keys, sync);
      std::printf("rank 0: out-of-bounds accesses failed alone\n");
    }
    if (refused) {
      refused_at_target(keys, sync, [&](int k) {
        flood(peer, inbox_rcomp, k * flood_count / 2, (k + 1) * flood_count / 2);
      });
      std::printf("rank 0: the puts refused at the target failed alone\n");
    }
    put_into_window(keys, sync);
  }
  if (refused) {
    take_flood(inbox);
    std::printf("rank %d: every message of the flood arrived once\n", me);
  }
  lci::barrier();
  for (int i = 0; i < round_trips_count; ++i) round_trip(peer, round_trip_tag);
  if (me == 1) {
    for (char c : window) require(c == 'w', "the window does not hold rank 0's put");
    lci::deregister_memory(&window_mr);
  }
  lci::deregister_rcomp(inbox_rcomp);
  lci::free_comp(&inbox);
  lci::free_comp(&sync);
  lci::g_runtime_fina();
  std::printf("rank %d: ok\n", me);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string part = argc > 1 ? argv[1] : "";
  try {
    run(part != "refused", part != "bounds");
  } catch (const std::exception& error) {
    std::printf("rank %d: error: %s\n",
                lci::get_g_runtime().is_empty() ? -1 : lci::get_rank_me(), error.what());
    std::fflush(stdout);
    std::_Exit(1);
  }
  return 0;
}
