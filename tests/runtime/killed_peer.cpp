// A process killed in the middle of a stream of messages: its peers must
// report an error naming it and end, never hang. Run as N >= 2 real
// processes under `tools/lcirun -n N --grace S` (built with --config=ofi;
// the real-network targets in tests/runtime/BUILD). The victim is the last
// rank; every other rank (a survivor) streams network-semantic active
// messages, sends and puts at it, each waited for, while the victim takes
// them in until it has seen kills_after_arrivals active messages, then
// does raise(SIGKILL) — no cleanup, as a crash would leave it.
//
// A survivor prints "rank <r>: error reported: <what>" once progress() or a
// post throws, and exits 3 when <what> names the victim ("rank <v>"), 1
// otherwise; it prints "rank <r>: no error naming rank <v> within <s> s"
// and exits 4 if nothing was thrown within deadline_s (a correctness bound:
// the runtime must not hang). lcirun then exits with the victim's status,
// 137 (SIGKILL). The victim never prints.
//
// A survivor that exits ends its connections, and over tcp a survivor that
// has not yet noticed the victim's death would notice that first and name
// the wrong rank. So survivors wait for each other before exiting: each
// creates a marker file once it has its answer and exits when every
// survivor's marker exists (or at the deadline). The markers live in
// $TEST_TMPDIR, named by the launcher's job token $LCIRUN_JOB; without
// both (a run by hand), survivors exit at once.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "lci.hpp"

namespace {

constexpr int deadline_s = 20;
constexpr int kills_after_arrivals = 16;
constexpr lci::tag_t rmr_tag = 1;
constexpr lci::tag_t stream_tag = 2;
constexpr std::size_t window_bytes = 4096;
constexpr std::size_t message_bytes = 256;

using clock_type = std::chrono::steady_clock;

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

// Sends its window's rmr to every survivor, takes in active messages, and
// dies after kills_after_arrivals of them.
[[noreturn]] void victim(int rank_n, lci::comp_t inbox) {
  std::vector<char> window(window_bytes, 0);
  lci::mr_t mr = lci::register_memory(window.data(), window.size());
  lci::rmr_t rmr = lci::get_rmr(mr);
  for (int survivor = 0; survivor < rank_n - 1; ++survivor) {
    // COMP_NULL: done once the runtime has taken the bytes (or retry).
    (void)post_taken(
        [&] { return lci::post_send(survivor, &rmr, sizeof(rmr), rmr_tag, lci::COMP_NULL); });
  }
  lci::barrier();  // every survivor has the window (it waits for it first)
  int arrivals = 0;
  while (arrivals < kills_after_arrivals) {
    lci::progress();
    const lci::status_t arrived = lci::cq_pop(inbox);
    if (arrived.is_retry()) continue;
    std::free(arrived.buffer);
    ++arrivals;
  }
  std::raise(SIGKILL);
  std::abort();  // not reached
}

// One operation of the stream at the victim, waited for with progress();
// throws what the runtime throws.
void stream_one(int index, int victim_rank, std::vector<char>& payload, lci::comp_t done,
                lci::rcomp_t inbox_rcomp, lci::rmr_t rmr, clock_type::time_point deadline) {
  const lci::status_t status = post_taken([&]() -> lci::status_t {
    switch (index % 3) {
      case 0:
        return lci::post_am_x(victim_rank, payload.data(), payload.size(), done, inbox_rcomp)
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
    if (clock_type::now() > deadline) return;
  }
}

// Streams at the victim until the runtime throws or deadline_s passes;
// returns the exit code (see the top of this file).
int survivor(int rank_me, int rank_n, lci::rcomp_t inbox_rcomp) {
  const int victim_rank = victim_of(rank_n);
  lci::rmr_t rmr;
  lci::comp_t got_rmr = lci::alloc_sync();
  lci::status_t status = post_taken(
      [&] { return lci::post_recv(victim_rank, &rmr, sizeof(rmr), rmr_tag, got_rmr); });
  if (status.is_posted()) lci::sync_wait(got_rmr, &status);
  lci::barrier();
  std::vector<char> payload(message_bytes, static_cast<char>('a' + rank_me));
  lci::comp_t done = lci::alloc_sync();
  const auto deadline = clock_type::now() + std::chrono::seconds(deadline_s);
  const std::string victim_named = "rank " + std::to_string(victim_rank);
  try {
    for (int index = 0; clock_type::now() <= deadline; ++index) {
      stream_one(index, victim_rank, payload, done, inbox_rcomp, rmr, deadline);
    }
  } catch (const std::exception& error) {
    std::printf("rank %d: error reported: %s\n", rank_me, error.what());
    std::fflush(stdout);
    return std::strstr(error.what(), victim_named.c_str()) != nullptr ? 3 : 1;
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
int main() {
  lci::g_runtime_init();
  const int rank_me = lci::get_rank_me();
  const int rank_n = lci::get_rank_n();
  if (rank_n < 2) {
    std::fprintf(stderr, "killed_peer needs at least 2 ranks, got %d\n", rank_n);
    return 2;
  }
  lci::comp_t inbox = lci::alloc_cq();
  const lci::rcomp_t inbox_rcomp = lci::register_rcomp(inbox);
  if (rank_me == victim_of(rank_n)) victim(rank_n, inbox);
  const int code = survivor(rank_me, rank_n, inbox_rcomp);
  wait_for_survivors(rank_me, rank_n,
                     clock_type::now() + std::chrono::seconds(deadline_s));
  std::_Exit(code);
}
