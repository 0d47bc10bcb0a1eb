// Simulator speed: simulated 8-byte sends per second of wall time through
// the raw sim device (post_sends / poll_comp / post_recv) in deterministic
// mode, and peak memory per rank.
//
//   bazel run //bench:sim -- [--csv] [--messages N]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sim/sim_harness.hpp"

namespace {

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
  bool csv = false;
  std::size_t messages_total = 2'000'000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--csv") == 0) csv = true;
    if (std::strcmp(argv[i], "--messages") == 0 && i + 1 < argc) {
      messages_total = std::strtoull(argv[++i], nullptr, 10);
    }
  }
  if (csv) std::printf("ranks,messages,wall_s,msgs_per_s,ticks,peak_rss_kib,rss_per_rank_kib\n");
  if (!csv) {
    std::printf("%6s %10s %8s %12s %12s %12s\n", "ranks", "messages", "wall_s", "msgs/s",
                "peak_rss_KiB", "KiB/rank");
  }
  for (int ranks : {2, 64}) {
    const std::size_t per_rank = messages_total / ranks;
    lci::sim::run_options_t options = lci::sim::default_run_options(1);
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
      return 1;
    }
    const std::size_t messages = per_rank * ranks;
    const long peak = peak_rss_kib();
    const double per_rank_kib = double(peak - before) / ranks;
    if (csv) {
      std::printf("%d,%zu,%.3f,%.0f,%llu,%ld,%.1f\n", ranks, messages, wall_s, messages / wall_s,
                  static_cast<unsigned long long>(report.ticks), peak, per_rank_kib);
    } else {
      std::printf("%6d %10zu %8.3f %12.0f %12ld %12.1f\n", ranks, messages, wall_s,
                  messages / wall_s, peak, per_rank_kib);
    }
  }
  return 0;
}
