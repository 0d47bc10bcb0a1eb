// End-to-end message rate of LCI on the simulated network: 8-byte active
// messages through the whole runtime (post_am -> protocol -> sim device ->
// progress -> completion queue -> cq_pop), deterministic mode, one core,
// reported per second of wall time.
//
//   bazel run //bench:sim_msgrate -- [--ranks 2,64] [--messages N] [--window W]
//                                    [--seed S] [--csv]
//
// Ranks pair up (0 with 1, 2 with 3, ...); each rank sends its share of the
// N messages to its partner as active messages into the partner's
// completion queue and receives as many, keeping at most W (default 32) of
// its own messages ahead of what it has received (a window of messages in
// flight). The clock runs from the first rank starting to send to the last
// rank receiving its last message; runtime start-up and teardown are
// outside it. Every received payload is checked (a sum over its values).
//
// Where the time goes (callgrind, marginal instructions per message, method
// and full tables in docs/bench_sim_msgrate.md):
//                                              2 ranks         64 ranks
//   simulated network (device, wire, world,
//     scheduler, trace hash, rank lookup)   1593 (46 %)     2403 (58 %)
//   LCI post path (resolve, post_comm, eager) 535 (15 %)      478 (12 %)
//   LCI completion queue (push + pop)         358 (10 %)      303 ( 7 %)
//   LCI progress, AM arrival, packet pool     524 (15 %)      423 (10 %)
//   malloc/free (AM buffer, cq node)          320 ( 9 %)      386 ( 9 %)
//   memcpy, benchmark loop                    133 ( 4 %)      115 ( 3 %)
//   total                                    3462            4108
// Top single functions at 2 ranks: scheduler_t::call_point 4.1 %, _int_free
// 4.0 %, world_t::deliver_send 3.5 %, progress_device 3.5 %,
// world_t::trace_event 3.2 %, post_send_or_am 3.1 %, resolve 3.0 %.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness.hpp"

namespace {

struct bench_options_t {
  bool csv = false;
  std::size_t messages_total = 1'000'000;
  std::size_t window = 32;
  std::vector<int> ranks_counts = {2, 64};
  std::uint64_t seed = 1;
};

void print_usage(const char* program) {
  std::printf(
      "usage: %s [--csv] [--messages N] [--window W] [--ranks R1,R2,...] [--seed S]\n"
      "  Pairs of ranks exchange 8-byte active messages (post_am to a completion\n"
      "  queue, cq_pop, progress) through the LCI runtime on the simulated network,\n"
      "  deterministic mode, one core.\n"
      "  --csv        machine-readable output\n"
      "  --messages   messages per run over all ranks (default 1000000)\n"
      "  --window     messages a rank keeps ahead of what it received (default 32)\n"
      "  --ranks      even rank counts to run, comma-separated (default 2,64)\n"
      "  --seed       the simulation seed (default 1)\n"
      "Columns: wall_s = seconds of wall time of the exchange; msgs/s = messages\n"
      "(sent by all ranks) per wall second; msgs/s/pair = the same per rank pair;\n"
      "steps/msg = scheduling steps (fiber switches) per message, whole run.\n",
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
    } else if (arg == "--window" && has_value) {
      options->window = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--seed" && has_value) {
      options->seed = std::strtoull(argv[++i], nullptr, 0);
    } else if (arg == "--ranks" && has_value) {
      options->ranks_counts.clear();
      for (char* item = std::strtok(argv[++i], ","); item != nullptr;
           item = std::strtok(nullptr, ",")) {
        const int ranks = std::atoi(item);
        if (ranks < 2 || ranks % 2 != 0 || ranks > lci::sim::ranks_count_max) {
          std::fprintf(stderr, "--ranks: %s is not an even count in [2, %d]\n", item,
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
  if (options->window < 1) {
    std::fprintf(stderr, "--window must be at least 1\n");
    return false;
  }
  return !options->ranks_counts.empty();
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What one rank measured; each rank writes only its own slot, read after
// run_ranks returned.
struct rank_result_t {
  double start_s = 0;
  double end_s = 0;
  bool ok = false;
};

// Sends `messages` 8-byte AMs carrying 1..messages to the partner rank and
// receives as many; returns whether the received values sum as expected.
bool exchange(int partner, lci::rcomp_t rcomp, lci::comp_t queue, std::uint64_t messages,
              std::uint64_t window) {
  std::uint64_t sent = 0;
  std::uint64_t received = 0;
  std::uint64_t received_sum = 0;
  bool sizes_ok = true;
  while (received < messages || sent < messages) {
    // The partner's messages may arrive ahead of ours: received can exceed
    // sent, hence no subtraction.
    while (sent < messages && sent < received + window) {
      std::uint64_t value = sent + 1;
      // 8 bytes go out as an inject: done at once, no completion object.
      if (lci::post_am(partner, &value, sizeof(value), lci::COMP_NULL_RETRY, rcomp).is_retry()) {
        break;
      }
      ++sent;
    }
    (void)lci::progress();
    for (lci::status_t status = lci::cq_pop(queue); status.is_done();
         status = lci::cq_pop(queue)) {
      std::uint64_t value = 0;
      sizes_ok = sizes_ok && status.size == sizeof(value) && status.rank == partner;
      if (status.size == sizeof(value)) std::memcpy(&value, status.buffer, sizeof(value));
      std::free(status.buffer);
      received_sum += value;
      ++received;
    }
  }
  return sizes_ok && received_sum == messages * (messages + 1) / 2;
}

void rank_body(lci::sim::rank_env_t& env, std::uint64_t messages, std::uint64_t window,
               std::vector<rank_result_t>* results) {
  lci::g_runtime_init();
  lci::comp_t queue = lci::alloc_cq();
  const lci::rcomp_t rcomp = lci::register_rcomp(queue);
  lci::barrier();  // every queue registered before the first message
  env.barrier();   // out of band: the clock starts with everyone ready
  rank_result_t& result = (*results)[static_cast<std::size_t>(env.rank())];
  result.start_s = now_s();
  result.ok = exchange(env.rank() ^ 1, rcomp, queue, messages, window);
  result.end_s = now_s();
  lci::barrier();
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&queue);
  lci::g_runtime_fina();
}

}  // namespace

int main(int argc, char** argv) {
  bench_options_t bench;
  if (!parse_options(argc, argv, &bench)) return 2;
  if (bench.csv) {
    std::printf("ranks,messages,wall_s,msgs_per_s,msgs_per_s_per_pair,steps_per_msg\n");
  } else {
    std::printf("%6s %10s %8s %12s %12s %10s\n", "ranks", "messages", "wall_s", "msgs/s",
                "msgs/s/pair", "steps/msg");
  }
  for (int ranks : bench.ranks_counts) {
    const std::uint64_t per_rank = bench.messages_total / static_cast<std::size_t>(ranks);
    lci::sim::run_options_t options = lci::sim::default_run_options(bench.seed);
    options.log = false;
    options.scheduler.steps_max = ~0ull;
    options.scheduler.ticks_max = ~0ull >> 1;
    std::vector<rank_result_t> results(static_cast<std::size_t>(ranks));
    const lci::sim::run_report_t report =
        lci::sim::run_ranks(ranks, options, [&](lci::sim::rank_env_t& env) {
          rank_body(env, per_rank, bench.window, &results);
        });
    if (!report.ok) {
      std::fprintf(stderr, "%s", report.report.c_str());
      return 1;
    }
    double start_s = results.front().start_s;
    double end_s = results.front().end_s;
    for (const rank_result_t& result : results) {
      if (!result.ok) {
        std::fprintf(stderr, "%d ranks: a rank received wrong messages\n", ranks);
        return 1;
      }
      start_s = std::min(start_s, result.start_s);
      end_s = std::max(end_s, result.end_s);
    }
    const double wall_s = end_s - start_s;
    const std::uint64_t messages = per_rank * static_cast<std::uint64_t>(ranks);
    const double rate = double(messages) / wall_s;
    const double steps_per_msg = double(report.steps_count) / double(messages);
    if (bench.csv) {
      std::printf("%d,%llu,%.3f,%.0f,%.0f,%.3f\n", ranks,
                  static_cast<unsigned long long>(messages), wall_s, rate, rate / (ranks / 2),
                  steps_per_msg);
    } else {
      std::printf("%6d %10llu %8.3f %12.0f %12.0f %10.3f\n", ranks,
                  static_cast<unsigned long long>(messages), wall_s, rate, rate / (ranks / 2),
                  steps_per_msg);
    }
  }
  return 0;
}
