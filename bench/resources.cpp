// Throughput of the runtime's resources on their critical-path operations
// (paper §5.2.3): completion queue push+pop (LCRQ and FAA array), matching
// engine send+recv insert pair, packet pool get+put, MPMC array read. A
// calibration row — every thread doing fetch_add on one shared counter —
// is the physical ceiling for anything built on one contended atomic.
//
//   bazel run //bench:resources -- --threads 1,2,4 [--csv]
//       [--ops N] (operations per thread, default 2000000)
//       [--repetitions R] (default 5; the table shows median, min and max)
//       [--pin] (thread t on the t-th core the process may use, as
//               upstream's resource benchmarks pin theirs;
//               bench/bench_threads.hpp says why)
//
// Figures are million operations per second over all threads (an operation
// is one pair where the row says so). Compare rows measured in one run only:
// these shared VMs vary up to 2x from run to run.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "bench/bench_threads.hpp"
#include "lci/cq/cq_faa_array.hpp"
#include "lci/cq/cq_lcrq.hpp"
#include "lci/matching/matching_table.hpp"
#include "lci/mpmc_array/mpmc_array.hpp"
#include "lci/packet_pool/packet_pool.hpp"

namespace {

struct options_t {
  std::vector<int> threads_counts = {1, 2, 4};
  std::size_t ops_per_thread = 2000000;
  int repetitions = 5;
  bool pin = false;
  bool csv = false;
};

constexpr int threads_max = 256;
constexpr const char* usage =
    "usage: resources [--threads 1,2,4] [--ops N] [--repetitions R] [--pin] [--csv]\n";

[[noreturn]] void usage_error(const char* what) {
  std::fprintf(stderr, "resources: %s\n%s", what, usage);
  std::exit(2);
}

options_t parse_options(int argc, char** argv) {
  options_t options;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--csv") == 0) {
      options.csv = true;
    } else if (std::strcmp(argv[i], "--pin") == 0) {
      options.pin = true;
    } else if (std::strcmp(argv[i], "--threads") == 0 && has_value) {
      options.threads_counts = lci::bench::parse_threads_list(argv[++i], threads_max, usage);
    } else if (std::strcmp(argv[i], "--ops") == 0 && has_value) {
      options.ops_per_thread = std::strtoull(argv[++i], nullptr, 10);
      if (options.ops_per_thread == 0) usage_error("--ops must be positive");
    } else if (std::strcmp(argv[i], "--repetitions") == 0 && has_value) {
      options.repetitions = std::atoi(argv[++i]);
      if (options.repetitions <= 0) usage_error("--repetitions must be positive");
    } else {
      usage_error("unknown or incomplete argument");
    }
  }
  return options;
}

// The work of one thread: runs `ops` operations as thread `thread_id`.
using thread_body_t = std::function<void(int thread_id, std::size_t ops)>;

// One benchmarked operation: make() builds a fresh structure for a
// repetition and returns the per-thread body that exercises it.
struct workload_t {
  const char* name;
  std::function<thread_body_t(int threads_count, std::size_t ops)> make;
};

// Results are folded into this atomic so the compiler cannot drop the
// measured work.
std::atomic<std::uintptr_t> sink{0};

void* as_value(std::uintptr_t i) { return reinterpret_cast<void*>(i + 1); }

std::vector<workload_t> make_workloads() {
  std::vector<workload_t> workloads;

  workloads.push_back({"calibration_fetch_add", [](int, std::size_t) {
    auto counter = std::make_shared<std::atomic<std::uint64_t>>(0);
    return thread_body_t([counter](int, std::size_t ops) {
      for (std::size_t i = 0; i < ops; ++i) {
        counter->fetch_add(1, std::memory_order_relaxed);
      }
    });
  }});

  workloads.push_back({"cq_lcrq_push_pop", [](int, std::size_t) {
    auto queue = std::make_shared<lci::cq::lcrq_t>();
    return thread_body_t([queue](int thread_id, std::size_t ops) {
      std::uintptr_t checksum = 0;
      for (std::size_t i = 0; i < ops; ++i) {
        queue->push(as_value(i + thread_id));
        checksum += reinterpret_cast<std::uintptr_t>(queue->pop());
      }
      sink.fetch_add(checksum, std::memory_order_relaxed);
    });
  }});

  workloads.push_back({"cq_faa_array_push_pop", [](int, std::size_t) {
    auto queue = std::make_shared<lci::cq::faa_array_t>(65536);
    return thread_body_t([queue](int thread_id, std::size_t ops) {
      std::uintptr_t checksum = 0;
      for (std::size_t i = 0; i < ops; ++i) {
        if (!queue->push(as_value(i + thread_id))) std::abort();
        checksum += reinterpret_cast<std::uintptr_t>(queue->pop());
      }
      sink.fetch_add(checksum, std::memory_order_relaxed);
    });
  }});

  workloads.push_back({"matching_insert_send_recv", [](int, std::size_t) {
    auto table = std::make_shared<lci::matching::table_t>();
    return thread_body_t([table](int thread_id, std::size_t ops) {
      using lci::matching_entry_type_t;
      using lci::matching::insert_kind_t;
      // Unique keys: thread t owns keys [t * ops, (t + 1) * ops).
      const std::uint64_t key_base = std::uint64_t(thread_id) * ops;
      std::uintptr_t checksum = 0;
      for (std::size_t i = 0; i < ops; ++i) {
        const auto sent = table->insert(key_base + i, as_value(i),
                                        matching_entry_type_t::send);
        const auto received = table->insert(key_base + i, as_value(i + 1),
                                            matching_entry_type_t::recv);
        if (sent.kind != insert_kind_t::stored ||
            received.kind != insert_kind_t::matched) {
          std::abort();
        }
        checksum += reinterpret_cast<std::uintptr_t>(received.value);
      }
      sink.fetch_add(checksum, std::memory_order_relaxed);
    });
  }});

  workloads.push_back({"packet_pool_get_put", [](int, std::size_t) {
    auto pool = std::make_shared<lci::packet_pool::pool_t>(8192, 4096);
    return thread_body_t([pool](int, std::size_t ops) {
      std::uintptr_t checksum = 0;
      std::size_t misses = 0;
      for (std::size_t i = 0; i < ops; ++i) {
        void* packet = pool->get();
        if (packet == nullptr) {
          ++misses;  // another thread holds them all for a moment: retry
          continue;
        }
        checksum += reinterpret_cast<std::uintptr_t>(packet);
        pool->put(packet);
      }
      sink.fetch_add(checksum + misses, std::memory_order_relaxed);
    });
  }});

  workloads.push_back({"mpmc_array_read", [](int, std::size_t) {
    constexpr std::size_t entries_count = 1024;
    auto array = std::make_shared<lci::mpmc_array::mpmc_array_t<void*>>(
        entries_count);
    for (std::size_t i = 0; i < entries_count; ++i) {
      if (!array->put(i, as_value(i)).is_done()) std::abort();
    }
    return thread_body_t([array](int thread_id, std::size_t ops) {
      std::uintptr_t checksum = 0;
      for (std::size_t i = 0; i < ops; ++i) {
        checksum += reinterpret_cast<std::uintptr_t>(
            array->get((i + thread_id) & (entries_count - 1)));
      }
      sink.fetch_add(checksum, std::memory_order_relaxed);
    });
  }});

  return workloads;
}

struct result_t {
  double mops_median;
  double mops_min;
  double mops_max;
};

result_t measure(const workload_t& workload, int threads_count, const options_t& options,
                 const std::vector<int>& cores) {
  std::vector<double> mops;
  // One untimed warm-up run (page faults, frequency ramp), then the samples.
  for (int r = -1; r < options.repetitions; ++r) {
    const thread_body_t body = workload.make(threads_count, options.ops_per_thread);
    const double seconds = lci::bench::time_threads(
        threads_count, [&](int t) { body(t, options.ops_per_thread); }, cores);
    if (r < 0) continue;
    mops.push_back(double(threads_count) * options.ops_per_thread / seconds / 1e6);
  }
  std::sort(mops.begin(), mops.end());
  return {mops[mops.size() / 2], mops.front(), mops.back()};
}

}  // namespace

int main(int argc, char** argv) {
  const options_t options = parse_options(argc, argv);
  const std::vector<workload_t> workloads = make_workloads();
  const std::vector<int> cores =
      options.pin ? lci::bench::allowed_cores() : std::vector<int>{};
  if (options.csv) {
    std::printf("structure,threads,mops_median,mops_min,mops_max,"
                "vs_calibration,ops_per_thread,repetitions\n");
  } else {
    std::printf("# %zu ops per thread, %d repetitions (+1 warm-up); Mops = "
                "million operations per second, all threads together\n",
                options.ops_per_thread, options.repetitions);
    std::printf("%-28s %7s %12s %10s %10s %15s\n", "structure", "threads",
                "Mops median", "min", "max", "vs calibration");
  }
  for (const int threads_count : options.threads_counts) {
    double calibration_mops = 0;
    for (const auto& workload : workloads) {
      const result_t result = measure(workload, threads_count, options, cores);
      if (calibration_mops == 0) calibration_mops = result.mops_median;
      const double ratio = result.mops_median / calibration_mops;
      if (options.csv) {
        std::printf("%s,%d,%.2f,%.2f,%.2f,%.3f,%zu,%d\n", workload.name,
                    threads_count, result.mops_median, result.mops_min,
                    result.mops_max, ratio, options.ops_per_thread,
                    options.repetitions);
      } else {
        std::printf("%-28s %7d %12.2f %10.2f %10.2f %15.3f\n", workload.name,
                    threads_count, result.mops_median, result.mops_min,
                    result.mops_max, ratio);
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
