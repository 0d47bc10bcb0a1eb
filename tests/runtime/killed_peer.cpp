// A process killed in the middle of a stream of messages: its peers must
// report an error naming it and end, never hang. Run as N >= 2 real
// processes under `tools/lcirun -n N --grace S` (built with --config=ofi;
// the real-network targets in tests/runtime/BUILD). The victim is the last
// rank; every other rank (a survivor) streams network-semantic active
// messages, sends and puts at it, each waited for, while the victim takes
// them in until it has seen kills_after_arrivals active messages, then
// does raise(SIGKILL) — no cleanup, as a crash would leave it.
//
// With the argument --random-kill the victim dies at a random moment
// instead (a thread of its own raises SIGKILL 0 to kill_delay_us_max
// microseconds after the barrier, whatever the victim is doing): the
// survivors stream active messages of 256 bytes, 8 KiB and 64 KiB
// (eager, packet-sized, rendezvous), and the victim answers each with one
// of its own, so that survivors are receiving from it, too, when it dies.
//
// A survivor prints "rank <r>: peer failure of rank <f> reported at <t>
// ns: <what>" once progress() or a post throws lci::peer_failure_error,
// and exits 0 when <f> is the victim (so that the launcher's status is
// the victim's however soon the survivor heard), 1 otherwise; "rank <r>:
// error reported: <what>" and exits 1 for any other error; "rank <r>: no
// error naming rank <v> within <s> s" and exits 4 if nothing was thrown within
// deadline_s (a correctness bound: the runtime must not hang). <t> is the
// steady clock (CLOCK_MONOTONIC, one for the host), as is the victim's one
// line in random mode, "rank <v>: killed at <t> ns", printed right before
// it dies: their difference is how long the survivor took to hear of the
// death. lcirun then exits with the victim's status, 137 (SIGKILL).
//
// A survivor that exits ends its connections, and over tcp a survivor that
// has not yet noticed the victim's death would notice that first and name
// the wrong rank. So survivors wait for each other before exiting: each
// creates a marker file once it has its answer and exits when every
// survivor's marker exists (or at the deadline). The markers live in
// $TEST_TMPDIR, named by the launcher's job token $LCIRUN_JOB; without
// both (a run by hand), survivors exit at once.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "lci.hpp"

namespace {

constexpr int deadline_s = 20;
constexpr int kills_after_arrivals = 16;
constexpr long kill_delay_us_max = 300'000;
// Random mode's message sizes, in turn; answers are capped at
// answer_bytes_max (a packet's payload: eager from a packet).
constexpr std::size_t random_message_bytes[] = {256, 8192, 65536};
constexpr std::size_t answer_bytes_max = 6000;
constexpr lci::tag_t rmr_tag = 1;
constexpr lci::tag_t stream_tag = 2;
constexpr std::size_t window_bytes = 4096;
constexpr std::size_t message_bytes = 256;

using clock_type = std::chrono::steady_clock;

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             clock_type::now().time_since_epoch())
      .count();
}

int victim_of(int rank_n) { return rank_n - 1; }

// Posts until the runtime takes it (retry: progress and post again).
template <typename post_t>
lci::status_t post_taken(const post_t& post) {
  for (;;) {
    const lci::status_t status = post();
    if (!status.is_retry()) return status;
    lci::progress();
  }
}

// Random mode: SIGKILL after a random delay, from a thread of its own.
void start_killer(int rank_me) {
  std::random_device entropy;
  const long delay_us = std::uniform_int_distribution<long>(0, kill_delay_us_max)(entropy);
  std::thread([rank_me, delay_us] {
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    std::printf("rank %d: killed at %lld ns\n", rank_me, now_ns());
    std::fflush(stdout);
    std::raise(SIGKILL);
  }).detach();
}

// Sends its window's rmr to every survivor, takes in active messages (in
// random mode answering each), and dies after kills_after_arrivals of them
// (in random mode, when its killer thread strikes).
[[noreturn]] void victim(int rank_n, lci::comp_t inbox, lci::rcomp_t inbox_rcomp,
                         bool random_kill) {
  std::vector<char> window(window_bytes, 0);
  lci::mr_t mr = lci::register_memory(window.data(), window.size());
  lci::rmr_t rmr = lci::get_rmr(mr);
  for (int survivor = 0; survivor < rank_n - 1; ++survivor) {
    // COMP_NULL: done once the runtime has taken the bytes (or retry).
    (void)post_taken(
        [&] { return lci::post_send(survivor, &rmr, sizeof(rmr), rmr_tag, lci::COMP_NULL); });
  }
  lci::barrier();  // every survivor has the window (it waits for it first)
  if (random_kill) start_killer(rank_n - 1);
  const std::vector<char> answer(answer_bytes_max, 'v');
  int arrivals = 0;
  while (random_kill || arrivals < kills_after_arrivals) {
    lci::progress();
    const lci::status_t arrived = lci::cq_pop(inbox);
    if (arrived.is_retry()) continue;
    std::free(arrived.buffer);
    ++arrivals;
    if (!random_kill) continue;
    const std::size_t size = std::min(arrived.size, answer_bytes_max);
    (void)post_taken([&] {
      return lci::post_am(arrived.rank, const_cast<char*>(answer.data()), size, lci::COMP_NULL,
                          inbox_rcomp);
    });
  }
  std::raise(SIGKILL);
  std::abort();  // not reached
}

// Random mode: frees what the victim's answers brought.
void drain_inbox(lci::comp_t inbox) {
  for (lci::status_t arrived = lci::cq_pop(inbox); !arrived.is_retry();
       arrived = lci::cq_pop(inbox)) {
    std::free(arrived.buffer);
  }
}

// One operation of the stream at the victim, waited for with progress();
// throws what the runtime throws. Random mode: an active message of the
// index's size; else in turn an active message, a send, a put.
void stream_one(int index, int victim_rank, std::vector<char>& payload, lci::comp_t done,
                lci::comp_t inbox, lci::rcomp_t inbox_rcomp, lci::rmr_t rmr,
                clock_type::time_point deadline, bool random_kill) {
  const std::size_t sizes_count = std::size(random_message_bytes);
  const std::size_t size =
      random_kill ? random_message_bytes[static_cast<std::size_t>(index) % sizes_count]
                  : message_bytes;
  const lci::status_t status = post_taken([&]() -> lci::status_t {
    switch (random_kill ? 0 : index % 3) {
      case 0:
        return lci::post_am_x(victim_rank, payload.data(), size, done, inbox_rcomp)
            .comp_semantic(lci::comp_semantic_t::network)();
      case 1:
        return lci::post_send_x(victim_rank, payload.data(), payload.size(), stream_tag, done)
            .comp_semantic(lci::comp_semantic_t::network)();
      default:
        return lci::post_put_x(victim_rank, payload.data(), payload.size(), done, 0, rmr)
            .comp_semantic(lci::comp_semantic_t::network)();
    }
  });
  if (status.is_done()) return;
  lci::status_t result;
  while (!lci::sync_test(done, &result)) {
    lci::progress();
    if (random_kill) drain_inbox(inbox);
    if (clock_type::now() > deadline) return;
  }
}

// Streams at the victim until the runtime throws or deadline_s passes;
// returns the exit code (see the top of this file).
int survivor(int rank_me, int rank_n, lci::comp_t inbox, lci::rcomp_t inbox_rcomp,
             bool random_kill) {
  const int victim_rank = victim_of(rank_n);
  lci::rmr_t rmr;
  lci::comp_t got_rmr = lci::alloc_sync();
  lci::status_t status = post_taken(
      [&] { return lci::post_recv(victim_rank, &rmr, sizeof(rmr), rmr_tag, got_rmr); });
  if (status.is_posted()) lci::sync_wait(got_rmr, &status);
  lci::barrier();
  std::vector<char> payload(random_kill ? random_message_bytes[std::size(random_message_bytes) - 1]
                                        : message_bytes,
                            static_cast<char>('a' + rank_me));
  lci::comp_t done = lci::alloc_sync();
  const auto deadline = clock_type::now() + std::chrono::seconds(deadline_s);
  try {
    for (int index = 0; clock_type::now() <= deadline; ++index) {
      stream_one(index, victim_rank, payload, done, inbox, inbox_rcomp, rmr, deadline,
                 random_kill);
    }
  } catch (const lci::peer_failure_error& error) {
    std::printf("rank %d: peer failure of rank %d reported at %lld ns: %s\n", rank_me,
                error.failed_rank(), now_ns(), error.what());
    std::fflush(stdout);
    return error.failed_rank() == victim_rank ? 0 : 1;
  } catch (const std::exception& error) {
    std::printf("rank %d: error reported: %s\n", rank_me, error.what());
    std::fflush(stdout);
    return 1;
  }
  std::printf("rank %d: no error naming rank %d within %d s\n", rank_me, victim_rank, deadline_s);
  std::fflush(stdout);
  return 4;
}

// The marker of survivor `rank`, or "" when the run has no place for them.
std::string marker_path(int rank) {
  const char* directory = std::getenv("TEST_TMPDIR");
  const char* job = std::getenv("LCIRUN_JOB");
  if (directory == nullptr || job == nullptr) return "";
  return std::string(directory) + "/killed_peer." + job + "." + std::to_string(rank);
}

bool marker_exists(int rank) { return std::ifstream(marker_path(rank)).good(); }

// Announces that this survivor has its answer, then waits until every
// survivor has one (see the top of this file) or the deadline passes.
void wait_for_survivors(int rank_me, int rank_n, clock_type::time_point deadline) {
  if (marker_path(rank_me).empty()) return;
  std::ofstream(marker_path(rank_me)) << "answered\n";
  for (int rank = 0; rank < victim_of(rank_n); ++rank) {
    while (!marker_exists(rank) && clock_type::now() <= deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

}  // namespace

// Ends without finalizing: the job lost a rank; the launcher ends it.
int main(int argc, char** argv) {
  const bool random_kill = argc == 2 && std::strcmp(argv[1], "--random-kill") == 0;
  lci::g_runtime_init();
  const int rank_me = lci::get_rank_me();
  const int rank_n = lci::get_rank_n();
  if (rank_n < 2) {
    std::fprintf(stderr, "killed_peer needs at least 2 ranks, got %d\n", rank_n);
    return 2;
  }
  lci::comp_t inbox = lci::alloc_cq();
  const lci::rcomp_t inbox_rcomp = lci::register_rcomp(inbox);
  if (rank_me == victim_of(rank_n)) victim(rank_n, inbox, inbox_rcomp, random_kill);
  const int code = survivor(rank_me, rank_n, inbox, inbox_rcomp, random_kill);
  wait_for_survivors(rank_me, rank_n,
                     clock_type::now() + std::chrono::seconds(deadline_s));
  std::_Exit(code);
}
