#include "sim/sim_program.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "lci/util/atomic.hpp"
#include "lci/util/run_threads.hpp"
#include "sim/sim_harness.hpp"
#include "sim/sim_process.hpp"
#include "sim/sim_rank_host.hpp"
#include "sim/sim_seed.hpp"

namespace lci::sim {

namespace {
int env_int(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 1 || value > ranks_count_max) {
    std::fprintf(stderr, "%s=\"%s\": not a rank count in [1, %d]\n", name, text,
                 ranks_count_max);
    std::exit(2);
  }
  return static_cast<int>(value);
}

// Process mode: this process is the rank.
int run_process_rank(int argc, char** argv, rank_main_t rank_main) {
  try {
    return rank_main(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "rank_main threw: %s\n", error.what());
    return 1;
  }
}

}  // namespace

int run_program(int argc, char** argv, int ranks_default, rank_main_t rank_main) {
  if (process_mode()) return run_process_rank(argc, argv, rank_main);
  const int ranks = env_int("LCI_SIM_RANKS", ranks_default);
  const char* mode_text = std::getenv("LCI_SIM_MODE");
  const world_mode_t mode = mode_text != nullptr && std::strcmp(mode_text, "concurrent") == 0
                                ? world_mode_t::concurrent
                                : world_mode_t::deterministic;
  const std::vector<std::uint64_t> seeds = seeds_from_env(1, 1);
  run_options_t options = default_run_options(seeds.front(), mode);
  options.log = false;
  // The mode comes from the environment: the replay line must set it too.
  if (mode == world_mode_t::concurrent && argc > 0 && argv[0] != nullptr) {
    options.scheduler.replay_command = std::string("LCI_SIM_MODE=concurrent ") + argv[0];
  }
  util::atomic<int> failed_ranks{0};
  const run_report_t report = run_ranks(ranks, options, [&](rank_env_t& env) {
    if (rank_main(argc, argv) != 0) {
      std::fprintf(stderr, "rank %d returned non-zero\n", env.rank());
      failed_ranks.fetch_add(1, util::mo_relaxed);  // relaxed: read after run_ranks joined every rank
    }
  });
  if (!report.ok) {
    std::fprintf(stderr, "%s", report.report.c_str());
    return 1;
  }
  // relaxed: the ranks' threads (or fibers) were joined: their adds happened before.
  return failed_ranks.load(util::mo_relaxed) == 0 ? 0 : 1;
}

void run_threads(int threads_count, const std::function<void(int)>& body) {
  rank_host_t* host = rank_host_t::current();
  if (host == nullptr) {
    lci::util::run_threads(threads_count, body);
    return;
  }
  host->env().run_threads(threads_count, body);
}

}  // namespace lci::sim
