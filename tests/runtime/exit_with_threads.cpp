// A program that ends while other threads of it are still inside LCI: the
// way a runtime with a progress thread (or workers blocked in a wait) ends
// after an error, or a rank stopped by a signal whose handler calls exit().
// The process must end as the program asked (exit status 0 here), not crash
// in the progress thread (process_host.hpp, "Exit"). Run as real processes
// under tools/lcirun (the real-network targets in tests/runtime/BUILD).
//
// Each rank starts a progress thread (progress() in a loop) and a worker
// that keeps sends and receives to itself in flight; once both have been
// inside LCI many times, the main thread prints "rank <r>: exiting" and
// calls std::exit(0) without g_runtime_fina, so the global runtime is left
// behind with both threads still calling into it. With the argument
// "alloc" the threads use a runtime of alloc_runtime instead, which the
// program never frees; the global runtime is never initialized.
//
// The runtime is then abandoned, and libfabric's shm provider leaves its
// /dev/shm file (named "<pid>:..."), which this test removes itself before
// exiting: unlinking a name keeps the mapping, so the threads are unaffected.
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <system_error>
#include <thread>

#include "lci.hpp"

namespace {

constexpr std::uint64_t laps_before_exit = 20000;
constexpr std::int64_t pairs_in_flight_max = 32;
constexpr lci::tag_t self_tag = 7;

lci::runtime_t g_used_runtime;  // empty: the global runtime
std::atomic<std::uint64_t> progress_laps{0};
std::atomic<std::uint64_t> worker_laps{0};

// Errors in the threads are ignored on purpose: the test is about the
// process's end, and an exception leaving a detached thread would abort it.
void progress_loop() {
  for (;;) {
    try {
      (void)lci::progress_x().runtime(g_used_runtime)();
    } catch (const std::exception&) {
    }
    progress_laps.fetch_add(1, std::memory_order_relaxed);
  }
}

void worker_loop() {
  const lci::runtime_t runtime = g_used_runtime;
  const int me = lci::get_rank_me_x().runtime(runtime)();
  lci::comp_t done = lci::alloc_counter_x().runtime(runtime)();
  std::uint64_t out = 0;
  std::uint64_t in = 0;
  std::int64_t pairs_posted = 0;
  const auto post_send = [&] {
    return lci::post_send_x(me, &out, sizeof(out), self_tag, done).runtime(runtime)();
  };
  for (;;) {
    try {
      // Each pair signals the counter twice (receive and send); keep at
      // most pairs_in_flight_max pairs outstanding.
      if (pairs_posted - lci::counter_get(done) / 2 < pairs_in_flight_max) {
        lci::status_t recv =
            lci::post_recv_x(me, &in, sizeof(in), self_tag, done).runtime(runtime)();
        if (recv.is_done()) lci::comp_signal(done, recv);
        if (!recv.is_retry()) {
          lci::status_t send = post_send();
          while (send.is_retry()) {
            (void)lci::progress_x().runtime(runtime)();
            send = post_send();
          }
          if (send.is_done()) lci::comp_signal(done, send);
          ++pairs_posted;
        }
      }
      (void)lci::progress_x().runtime(runtime)();
    } catch (const std::exception&) {
    }
    worker_laps.fetch_add(1, std::memory_order_relaxed);
  }
}

void remove_own_shm_files() {
  const std::string prefix = std::to_string(::getpid()) + ":";
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ignored)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) {
      std::filesystem::remove(entry.path(), ignored);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "alloc") {
    g_used_runtime = lci::alloc_runtime();
  } else {
    lci::g_runtime_init();
  }
  const int me = lci::get_rank_me_x().runtime(g_used_runtime)();
  std::thread(progress_loop).detach();
  std::thread(worker_loop).detach();
  while (progress_laps.load(std::memory_order_relaxed) < laps_before_exit ||
         worker_laps.load(std::memory_order_relaxed) < laps_before_exit) {
    std::this_thread::yield();
  }
  std::printf("rank %d: exiting\n", me);
  std::fflush(stdout);
  remove_own_shm_files();
  std::exit(0);
}
