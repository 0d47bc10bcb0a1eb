// Simulator speed: simulated 8-byte sends per second of wall time through
// the raw sim device (post_sends / poll_comp / post_recv) in deterministic
// mode, scheduling steps (fiber switches) per message, and peak memory per
// rank.
//
//   bazel run //bench:sim -- [--csv] [--messages N] [--ranks 2,64] [--seed S]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sim/sim_harness.hpp"

namespace {

struct bench_options_t {
  bool csv = false;
  std::size_t messages_total = 2'000'000;
  std::vector<int> ranks_counts = {2, 64};
  std::uint64_t seed = 1;
};

void print_usage(const char* program) {
  std::printf(
      "usage: %s [--csv] [--messages N] [--ranks R1,R2,...] [--seed S]\n"
      "  Every rank sends N / R 8-byte injects (post_sends) to the next rank\n"
      "  and receives as many, in deterministic mode on one core.\n"
      "  --csv        machine-readable output\n"
      "  --messages   messages per run over all ranks (default 2000000)\n"
      "  --ranks      rank counts to run, comma-separated (default 2,64)\n"
      "  --seed       the simulation seed (default 1)\n"
      "Columns: msgs/s = messages per second of wall time; steps/msg =\n"
      "scheduling steps (fiber switches) per message; KiB/rank = growth of\n"
      "the peak resident set over the run, per rank.\n",
      program);
}

// Returns false (after printing why) on a malformed command line.
bool parse_options(int argc, char** argv, bench_options_t* options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--help" || arg == "-h") {
      print_usage(argv[0]);
      std::exit(0);
    } else if (arg == "--csv") {
      options->csv = true;
    } else if (arg == "--messages" && has_value) {
      options->messages_total = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--seed" && has_value) {
      options->seed = std::strtoull(argv[++i], nullptr, 0);
    } else if (arg == "--ranks" && has_value) {
      options->ranks_counts.clear();
      for (char* item = std::strtok(argv[++i], ","); item != nullptr;
           item = std::strtok(nullptr, ",")) {
        const int ranks = std::atoi(item);
        if (ranks < 1 || ranks > lci::sim::ranks_count_max) {
          std::fprintf(stderr, "--ranks: %s is not in [1, %d]\n", item,
                       lci::sim::ranks_count_max);
          return false;
        }
        options->ranks_counts.push_back(ranks);
      }
    } else {
      std::fprintf(stderr, "unknown or incomplete argument: %s\n", arg.c_str());
      print_usage(argv[0]);
      return false;
    }
  }
  return !options->ranks_counts.empty();
}

long peak_rss_kib() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// Every rank sends `messages` 8-byte injects to the next rank and receives
// as many from the previous one.
void rank_body(lci::sim::rank_env_t& env, std::size_t messages) {
  constexpr std::size_t recvs_count = 16;
  constexpr std::size_t recv_size = 8;
  auto device = env.context().alloc_device({});
  std::vector<char> buffers(recvs_count * recv_size);
  for (std::size_t i = 0; i < recvs_count; ++i) {
    while (device->post_recv(buffers.data() + i * recv_size, recv_size, {}, nullptr).is_retry()) {
      env.wait("post_recv");
    }
  }
  const int next = (env.rank() + 1) % env.ranks_count();
  const char payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  std::size_t sent = 0;
  std::size_t received = 0;
  lci::backend::net_status_t statuses[16];
  while (sent < messages || received < messages) {
    if (sent < messages && device->post_sends(next, payload, 8, 0).is_done()) ++sent;
    const std::size_t count = device->poll_comp(statuses, 16);
    for (std::size_t i = 0; i < count; ++i) {
      ++received;
      while (device->post_recv(statuses[i].buffer, recv_size, {}, nullptr).is_retry()) {
        env.wait("repost");
      }
    }
    if (sent == messages) env.wait("messages");
  }
  env.barrier();
}

}  // namespace

int main(int argc, char** argv) {
  bench_options_t bench;
  if (!parse_options(argc, argv, &bench)) return 2;
  if (bench.csv) {
    std::printf("ranks,messages,wall_s,msgs_per_s,steps_per_msg,ticks,peak_rss_kib,"
                "rss_per_rank_kib\n");
  } else {
    std::printf("%6s %10s %8s %12s %10s %12s %10s\n", "ranks", "messages", "wall_s", "msgs/s",
                "steps/msg", "peak_rss_KiB", "KiB/rank");
  }
  for (int ranks : bench.ranks_counts) {
    // Each rank count runs in its own child process: the peak resident set
    // only grows, so in one process a smaller run after a larger one would
    // show no growth at all.
    std::fflush(stdout);
    const pid_t child = fork();
    if (child < 0) {
      std::perror("fork");
      return 1;
    }
    if (child > 0) {
      int wait_status = 0;
      if (waitpid(child, &wait_status, 0) != child || !WIFEXITED(wait_status) ||
          WEXITSTATUS(wait_status) != 0) {
        return 1;
      }
      continue;
    }
    const std::size_t per_rank = bench.messages_total / static_cast<std::size_t>(ranks);
    lci::sim::run_options_t options = lci::sim::default_run_options(bench.seed);
    options.log = false;
    options.scheduler.steps_max = ~0ull;
    options.scheduler.ticks_max = ~0ull >> 1;
    const long before = peak_rss_kib();
    const auto start = std::chrono::steady_clock::now();
    const lci::sim::run_report_t report = lci::sim::run_ranks(
        ranks, options, [per_rank](lci::sim::rank_env_t& env) { rank_body(env, per_rank); });
    const double wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!report.ok) {
      std::fprintf(stderr, "%s", report.report.c_str());
      std::_Exit(1);
    }
    const std::size_t messages = per_rank * static_cast<std::size_t>(ranks);
    const double steps_per_msg = double(report.steps_count) / double(messages);
    const long peak = peak_rss_kib();
    const double per_rank_kib = double(peak - before) / ranks;
    if (bench.csv) {
      std::printf("%d,%zu,%.3f,%.0f,%.3f,%llu,%ld,%.1f\n", ranks, messages, wall_s,
                  messages / wall_s, steps_per_msg,
                  static_cast<unsigned long long>(report.ticks), peak, per_rank_kib);
    } else {
      std::printf("%6d %10zu %8.3f %12.0f %10.3f %12ld %10.1f\n", ranks, messages, wall_s,
                  messages / wall_s, steps_per_msg, peak, per_rank_kib);
    }
    std::fflush(stdout);
    std::_Exit(0);
  }
  return 0;
}
