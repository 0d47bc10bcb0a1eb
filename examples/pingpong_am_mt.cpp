// pingpong_am_mt: a multithreaded active-message ping-pong. Ranks pair up
// (0 with 1, 2 with 3, ...); each of T threads of a rank ping-pongs N
// 8-byte messages with the thread of the same number on the partner rank,
// and the lower rank of each pair reports messages per second of wall time.
//
//   bazel run //examples:pingpong_am_mt_sim -- [--threads T] [--round-trips N] [--devices D]
//   LCI_SIM_RANKS=4 bazel run //examples:pingpong_am_mt_sim -- --threads 8
//   LCI_SIM_MODE=concurrent bazel run //examples:pingpong_am_mt_sim   # OS threads
//
// Defaults: T = 4 (or LCI_EXAMPLE_THREADS), N = 1000, D = 2. With an odd
// rank count the last rank has no partner and only joins the barriers.
//
// What it shows (paper §3.2.3): threads that share nothing do not contend.
// Every thread has its own completion queue, registered as an rcomp, and
// thread t posts and progresses device t mod D (a device is a complete set
// of network resources; threads may share one, and one per thread is the
// contention-free setup; the simulated network allows 4 devices per rank,
// the runtime's default device included). Devices are allocated
// collectively, in the same order on every rank, and rcomps are registered
// in the same order too, so thread t's device and queue pair up with thread
// t's on the partner rank. Threads are started with example::run_threads
// (example_main.hpp), which makes them threads of the calling rank: on the
// simulator, fibers of the seeded scheduler in the default deterministic
// mode and OS threads with LCI_SIM_MODE=concurrent; std::threads in a real
// process.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "examples/example_main.hpp"
#include "lci.hpp"

namespace {

struct options_t {
  int threads = 4;
  int round_trips = 1000;
  int devices = 2;
};

// Returns false (after printing why) on a malformed command line.
bool parse_options(int argc, char** argv, options_t* options) {
  if (const char* text = std::getenv("LCI_EXAMPLE_THREADS")) options->threads = std::atoi(text);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) {
      options->threads = std::atoi(argv[++i]);
    } else if (arg == "--round-trips" && i + 1 < argc) {
      options->round_trips = std::atoi(argv[++i]);
    } else if (arg == "--devices" && i + 1 < argc) {
      options->devices = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--threads T] [--round-trips N] [--devices D]\n",
                   argv[0]);
      return false;
    }
  }
  if (options->threads < 1 || options->threads > 64 || options->round_trips < 1 ||
      options->devices < 1) {
    std::fprintf(stderr,
                 "--threads must be in [1, 64], --round-trips and --devices at least 1\n");
    return false;
  }
  return true;
}

// What one thread uses, allocated before the threads start.
struct thread_resources_t {
  lci::device_t device;  // device t mod D, maybe shared with other threads
  lci::comp_t inbox;     // a completion queue, this thread's alone
  lci::rcomp_t inbox_rcomp;
};

enum : lci::tag_t { tag_ping = 1, tag_pong = 2 };

// The value of round trip `index` of thread `thread`: each message is
// distinct, so a lost, duplicated or misrouted one is noticed.
std::uint64_t value_of(int thread, int index) {
  return (static_cast<std::uint64_t>(thread) << 32) | static_cast<std::uint32_t>(index);
}

void send_value(const thread_resources_t& resources, int peer, std::uint64_t value,
                lci::tag_t tag) {
  // 8 bytes fit an inject: the network copies them before post_am returns,
  // so no completion object is needed (COMP_NULL_RETRY: none, and retry
  // comes back to this loop rather than going to the backlog).
  while (lci::post_am_x(peer, &value, sizeof(value), lci::COMP_NULL_RETRY,
                        resources.inbox_rcomp)
             .device(resources.device)
             .tag(tag)()
             .is_retry()) {
    lci::progress_x().device(resources.device)();
  }
}

// Waits for the next message in this thread's queue; progresses only this
// thread's device (the partner's thread t sends on its device t mod D,
// which is paired with ours).
std::uint64_t receive_value(const thread_resources_t& resources, int peer, lci::tag_t tag,
                            int* errors) {
  lci::status_t status;
  for (;;) {
    status = lci::cq_pop(resources.inbox);
    if (status.is_done()) break;
    lci::progress_x().device(resources.device)();
  }
  std::uint64_t value = 0;
  if (status.size == sizeof(value)) std::memcpy(&value, status.buffer, sizeof(value));
  std::free(status.buffer);  // the runtime's allocation, now ours
  if (status.rank != peer || status.tag != tag || status.size != sizeof(value)) ++*errors;
  return value;
}

// One thread's half of the ping-pong; returns the number of wrong messages.
int ping_pong(const thread_resources_t& resources, int thread, int peer, bool initiator,
              int round_trips) {
  int errors = 0;
  for (int i = 0; i < round_trips; ++i) {
    const std::uint64_t expected = value_of(thread, i);
    if (initiator) {
      send_value(resources, peer, expected, tag_ping);
      if (receive_value(resources, peer, tag_pong, &errors) != expected) ++errors;
    } else {
      if (receive_value(resources, peer, tag_ping, &errors) != expected) ++errors;
      send_value(resources, peer, expected, tag_pong);
    }
  }
  return errors;
}

}  // namespace

int example::rank_main(int argc, char** argv) {
  options_t options;
  if (!parse_options(argc, argv, &options)) return 2;
  lci::g_runtime_init();
  const int rank_me = lci::get_rank_me();
  const int rank_n = lci::get_rank_n();
  const int peer = rank_me ^ 1;
  const bool has_peer = peer < rank_n;

  // Collective allocation, one thread at a time, in the same order everywhere.
  std::vector<lci::device_t> devices(static_cast<std::size_t>(options.devices));
  for (lci::device_t& device : devices) device = lci::alloc_device();
  std::vector<thread_resources_t> resources(static_cast<std::size_t>(options.threads));
  for (std::size_t t = 0; t < resources.size(); ++t) {
    resources[t].device = devices[t % devices.size()];
    resources[t].inbox = lci::alloc_cq();
    resources[t].inbox_rcomp = lci::register_rcomp(resources[t].inbox);
  }
  lci::barrier();  // every rank registered its queues before anyone sends

  // One slot per thread, written only by that thread and read after all
  // of them returned: no synchronisation needed beyond run_threads' join.
  std::vector<int> errors(resources.size(), 0);
  const auto start = std::chrono::steady_clock::now();
  if (has_peer) {
    example::run_threads(options.threads, [&](int thread) {
      errors[static_cast<std::size_t>(thread)] =
          ping_pong(resources[static_cast<std::size_t>(thread)], thread, peer,
                    rank_me < peer, options.round_trips);
    });
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  int errors_total = 0;
  for (int e : errors) errors_total += e;
  if (has_peer && rank_me < peer) {
    const long messages = 2L * options.threads * options.round_trips;
    std::printf("pingpong: ranks %d and %d, %d threads x %d round trips, %d devices, "
                "%ld messages, %.4f s, %.0f messages/s\n",
                rank_me, peer, options.threads, options.round_trips, options.devices, messages,
                wall_s, messages / wall_s);
  }
  if (errors_total != 0) std::fprintf(stderr, "rank %d: %d wrong messages\n", rank_me, errors_total);

  lci::barrier();  // no queue goes away while a partner may still send to it
  for (thread_resources_t& r : resources) {
    lci::deregister_rcomp(r.inbox_rcomp);
    lci::free_comp(&r.inbox);
  }
  for (lci::device_t& device : devices) lci::free_device(&device);
  lci::g_runtime_fina();
  return errors_total == 0 ? 0 : 1;
}
