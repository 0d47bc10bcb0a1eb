// Throughput of the runtime's resources through the public LCI 2.x API
// only (lci.hpp), so that the same program builds against this LCI and
// against upstream's (bench/build_programs.sh) and the two are compared
// operation for operation (bench/compare_upstream.sh). One operation is a
// pair, done by each thread on one resource shared by all threads:
//
//   cq_signal_pop           comp_signal of a done status into the runtime's
//                           completion queue (alloc_cq), then cq_pop of it
//   matching_insert_pair    matching_engine_insert of a send, then of the
//                           receive with the same key (it matches), on the
//                           default matching engine; keys unique per thread
//   packet_pool_get_put     get_upacket, then put_upacket, on the default
//                           packet pool
//
// bench/resources measures the structures themselves, without the API;
// this program measures what a user of the API gets.
//
//   api_resources [--threads 1,2] [--ops N] [--repetitions R] [--pin] [--csv]
//
// --pin puts thread t on the t-th core the process may use, so that 2
// threads on 2 cores always run in parallel (bench/bench_threads.hpp says
// why).
//
// Prints million operations per second over all threads: median, min and
// max of R timed repetitions after one untimed one. Runs as one process
// without a launcher (set LCI_ATTR_OFI_PROVIDER_NAME=shm over libfabric).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_threads.hpp"
#include "lci.hpp"

namespace {

struct options_t {
  std::vector<int> threads_counts = {1, 2};
  std::uint64_t ops_per_thread = 1000000;
  int repetitions = 5;
  bool pin = false;
  bool csv = false;
};

constexpr int threads_max = 64;
constexpr const char* usage =
    "usage: api_resources [--threads 1,2] [--ops N] [--repetitions R] [--pin] [--csv]\n";

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr, "api_resources: %s\n%s", what.c_str(), usage);
  std::exit(2);
}

options_t parse_options(int argc, char** argv) {
  options_t options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--help" || arg == "-h") {
      std::printf("%s  resources through the public API, Mops over all threads\n", usage);
      std::exit(0);
    } else if (arg == "--csv") {
      options.csv = true;
    } else if (arg == "--pin") {
      options.pin = true;
    } else if (arg == "--threads" && has_value) {
      options.threads_counts = lci::bench::parse_threads_list(argv[++i], threads_max, usage);
    } else if (arg == "--ops" && has_value) {
      options.ops_per_thread = std::strtoull(argv[++i], nullptr, 10);
      if (options.ops_per_thread == 0) usage_error("--ops must be positive");
    } else if (arg == "--repetitions" && has_value) {
      options.repetitions = std::atoi(argv[++i]);
      if (options.repetitions <= 0) usage_error("--repetitions must be positive");
    } else {
      usage_error("unknown argument or missing value: " + arg);
    }
  }
  return options;
}

// One thread's work: `ops` operations as thread `thread_index`; returns a
// checksum the caller folds into a global, so nothing is optimised away.
using thread_body_t = std::function<std::uintptr_t(int thread_index, std::uint64_t ops)>;

struct workload_t {
  const char* name;
  thread_body_t body;
};

// Keys of the matching benchmark: thread t uses [t * ops, (t + 1) * ops),
// shifted by each repetition so no key repeats within a run.
std::atomic<std::uint64_t> key_base_next{1};

std::vector<workload_t> make_workloads(lci::comp_t cq) {
  std::vector<workload_t> workloads;
  workloads.push_back({"cq_signal_pop", [cq](int, std::uint64_t ops) {
    lci::status_t status;
    status.set_done();
    std::uintptr_t checksum = 0;
    for (std::uint64_t i = 0; i < ops; ++i) {
      lci::comp_signal(cq, status);
      lci::status_t popped = lci::cq_pop(cq);
      while (popped.is_retry()) popped = lci::cq_pop(cq);  // another thread took ours
      checksum += static_cast<std::uintptr_t>(popped.size);
    }
    return checksum;
  }});
  workloads.push_back({"matching_insert_pair", [](int thread_index, std::uint64_t ops) {
    const lci::matching_engine_t engine = lci::get_default_matching_engine();
    const std::uint64_t base =
        key_base_next.load() + static_cast<std::uint64_t>(thread_index) * ops;
    std::uintptr_t checksum = 0;
    for (std::uint64_t i = 0; i < ops; ++i) {
      const lci::matching_entry_key_t key = base + i;
      void* const value = reinterpret_cast<void*>(static_cast<std::uintptr_t>(key));
      (void)lci::matching_engine_insert(engine, key, value, lci::matching_entry_type_t::send);
      void* const matched =
          lci::matching_engine_insert(engine, key, value, lci::matching_entry_type_t::recv);
      if (matched != value) {
        std::fprintf(stderr, "api_resources: key %llu did not match its send\n",
                     static_cast<unsigned long long>(key));
        std::exit(1);
      }
      checksum += reinterpret_cast<std::uintptr_t>(matched);
    }
    return checksum;
  }});
  workloads.push_back({"packet_pool_get_put", [](int, std::uint64_t ops) {
    std::uintptr_t checksum = 0;
    for (std::uint64_t i = 0; i < ops; ++i) {
      void* packet = lci::get_upacket();
      if (packet == nullptr) continue;  // all held by other threads for a moment
      checksum += reinterpret_cast<std::uintptr_t>(packet);
      lci::put_upacket(packet);
    }
    return checksum;
  }});
  return workloads;
}

}  // namespace

int main(int argc, char** argv) {
  const options_t options = parse_options(argc, argv);
  lci::g_runtime_init();
  lci::comp_t cq = lci::alloc_cq();
  const std::vector<int> cores = options.pin ? lci::bench::allowed_cores() : std::vector<int>{};
  if (options.csv) {
    std::printf("structure,threads,mops_median,mops_min,mops_max,ops_per_thread,repetitions\n");
  } else {
    std::printf("# %llu ops per thread, %d repetitions (+1 warm-up); Mops over all threads\n",
                static_cast<unsigned long long>(options.ops_per_thread), options.repetitions);
    std::printf("%-22s %7s %12s %10s %10s\n", "structure", "threads", "Mops_median", "Mops_min",
                "Mops_max");
  }
  for (const workload_t& workload : make_workloads(cq)) {
    for (const int threads_count : options.threads_counts) {
      std::vector<double> mops;
      for (int r = -1; r < options.repetitions; ++r) {
        std::atomic<std::uintptr_t> sink{0};
        const double seconds = lci::bench::time_threads(
            threads_count,
            [&](int t) { sink.fetch_add(workload.body(t, options.ops_per_thread)); }, cores);
        if (sink.load() == 1) std::printf(" ");  // never: keeps the checksums alive
        key_base_next.fetch_add(options.ops_per_thread * threads_max);
        if (r >= 0) mops.push_back(double(threads_count) * double(options.ops_per_thread) /
                                   seconds / 1e6);
      }
      std::sort(mops.begin(), mops.end());
      const double median = mops[mops.size() / 2];
      std::printf(options.csv ? "%s,%d,%.2f,%.2f,%.2f,%llu,%d\n"
                              : "%-22s %7d %12.2f %10.2f %10.2f\n",
                  workload.name, threads_count, median, mops.front(), mops.back(),
                  static_cast<unsigned long long>(options.ops_per_thread), options.repetitions);
    }
  }
  lci::free_comp(&cq);
  lci::g_runtime_fina();
  return 0;
}
