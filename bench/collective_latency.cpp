// The driver of the collective latency benchmark (see collective_latency.hpp):
// command line, inputs and their checks, timing, report.
#include "bench/collective_latency.hpp"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace lci::bench {

namespace {

enum class op_t { barrier, broadcast, reduce, allreduce, reduce_scatter, allgather, alltoall };
constexpr op_t ops_all[] = {op_t::barrier,        op_t::broadcast, op_t::reduce,
                            op_t::allreduce,      op_t::reduce_scatter,
                            op_t::allgather,      op_t::alltoall};
constexpr const char* op_names[] = {"barrier",        "broadcast", "reduce", "allreduce",
                                    "reduce_scatter", "allgather", "alltoall"};
static_assert(sizeof(ops_all) / sizeof(ops_all[0]) == sizeof(op_names) / sizeof(op_names[0]),
              "one name per operation");

constexpr std::size_t item_bytes = sizeof(std::uint64_t);
constexpr std::size_t size_bytes_max = std::size_t{16} << 20;
constexpr std::uint64_t iterations_max = 10'000'000;
constexpr int root = 0;
// Outputs hold this before a call; no pattern value is expected to equal it
// (a check that found it would still report the item).
constexpr std::uint64_t poison = 0xdeadbeefdeadbeefULL;

const char* op_name(op_t op) { return op_names[static_cast<int>(op)]; }

struct options_t {
  std::vector<op_t> ops{std::begin(ops_all), std::end(ops_all)};
  std::size_t size_min_bytes = 8;
  std::size_t size_max_bytes = std::size_t{1} << 20;
  std::size_t size_step = 4;
  std::uint64_t iterations = 100;
  std::uint64_t iterations_large = 20;      // for sizes >= large_size_bytes_min
  std::size_t large_size_bytes_min = 64 * 1024;
  std::uint64_t warmup = 5;
  bool csv = false;
};

void print_usage(const char* program) {
  std::printf(
      "usage: tools/lcirun -n N %s [options]   (MPI: mpirun -np N %s [options])\n"
      "  Mean latency per call of each collective by size, the maximum over ranks;\n"
      "  every result is checked on the first call and the last timed call.\n"
      "  --ops LIST              comma-separated, of barrier, broadcast, reduce,\n"
      "                          allreduce, reduce_scatter, allgather, alltoall\n"
      "                          (default all)\n"
      "  --sizes MIN:MAX         bytes, multiples of 8 (default 8:1048576)\n"
      "  --step F                factor between sizes, 2 or 4 (default 4); MAX is\n"
      "                          measured too where the steps pass it by\n"
      "  --iterations N          timed calls per size below 64 KiB (default 100)\n"
      "  --iterations-large N    timed calls per size from 64 KiB (default 20)\n"
      "  --warmup N              untimed calls before them (default 5)\n"
      "  --csv                   machine-readable output\n",
      program, program);
}

bool parse_count(const char* text, std::uint64_t* value) {
  char* end = nullptr;
  const unsigned long long parsed = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0') return false;
  *value = parsed;
  return true;
}

std::string parse_ops(const std::string& list, options_t* options) {
  options->ops.clear();
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, comma - start);
    bool known = false;
    for (op_t op : ops_all) {
      if (name == op_name(op)) {
        options->ops.push_back(op);
        known = true;
      }
    }
    if (!known) return "--ops: unknown operation '" + name + "'";
    start = comma + 1;
  }
  return "";
}

std::string parse_sizes(const char* value, options_t* options) {
  const char* colon = std::strchr(value, ':');
  std::uint64_t low = 0;
  std::uint64_t high = 0;
  if (colon == nullptr || !parse_count(std::string(value, colon).c_str(), &low) ||
      !parse_count(colon + 1, &high)) {
    return std::string("--sizes: '") + value + "' is not MIN:MAX";
  }
  if (low == 0 || low > high || high > size_bytes_max || low % item_bytes != 0 ||
      high % item_bytes != 0) {
    return "--sizes: MIN and MAX must be multiples of 8, 8 <= MIN <= MAX <= 16 MiB";
  }
  options->size_min_bytes = low;
  options->size_max_bytes = high;
  return "";
}

// Returns an error message, empty when `arg` (and its value) parsed.
std::string parse_one(const std::string& arg, const char* value, options_t* options) {
  if (arg == "--ops") return parse_ops(value, options);
  if (arg == "--sizes") return parse_sizes(value, options);
  std::uint64_t number = 0;
  if (!parse_count(value, &number)) return arg + ": '" + value + "' is not a number";
  if (arg == "--step") {
    if (number != 2 && number != 4) return "--step: 2 or 4";
    options->size_step = number;
    return "";
  }
  if (number > iterations_max) return arg + ": at most 10000000";
  if (arg == "--warmup") {
    options->warmup = number;
    return "";
  }
  if (number == 0) return arg + ": at least 1";
  if (arg == "--iterations") {
    options->iterations = number;
  } else if (arg == "--iterations-large") {
    options->iterations_large = number;
  } else {
    return "unknown option " + arg;
  }
  return "";
}

bool parse_options(int argc, char** argv, options_t* options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      print_usage(argv[0]);
      return false;
    }
    if (arg == "--csv") {
      options->csv = true;
      continue;
    }
    std::string error = "option " + arg + " needs a value";
    if (i + 1 < argc) error = parse_one(arg, argv[++i], options);
    if (!error.empty()) {
      std::fprintf(stderr, "%s: %s (--help lists the options)\n", argv[0], error.c_str());
      return false;
    }
  }
  return true;
}

// The input item `index` of `rank` for a vector of `count` items per block:
// distinct per rank, index and size, so that a block from the wrong rank or
// offset, or a stale result of another size, fails the check.
std::uint64_t input_value(int rank, std::size_t index, std::size_t count) {
  std::uint64_t x = (static_cast<std::uint64_t>(rank) + 1) * 0x9e3779b97f4a7c15ULL +
                    index * 0xbf58476d1ce4e5b9ULL + count;
  x ^= x >> 31;
  return x == poison ? x + 1 : x;
}

std::uint64_t sum_over_ranks(int rank_n, std::size_t index, std::size_t count) {
  std::uint64_t sum = 0;
  for (int rank = 0; rank < rank_n; ++rank) sum += input_value(rank, index, count);
  return sum;
}

// What item k of `me`'s output holds after `op` on blocks of `count`.
std::uint64_t expected_value(op_t op, int me, int rank_n, std::size_t count, std::size_t k) {
  switch (op) {
    case op_t::broadcast:
      return input_value(root, k, count);
    case op_t::reduce:
    case op_t::allreduce:
      return sum_over_ranks(rank_n, k, count);
    case op_t::reduce_scatter:
      return sum_over_ranks(rank_n, static_cast<std::size_t>(me) * count + k, count);
    case op_t::allgather:
      return input_value(static_cast<int>(k / count), k % count, count);
    case op_t::alltoall:
      return input_value(static_cast<int>(k / count),
                         static_cast<std::size_t>(me) * count + k % count, count);
    case op_t::barrier:
      break;
  }
  return poison;
}

// One operation's buffers at one size, and its call.
// Allocation: at construction (outside the timing).
class case_t {
 public:
  case_t(collectives_t& system, op_t op, std::size_t count)
      : system_(system), op_(op), count_(count) {
    const std::size_t blocks = static_cast<std::size_t>(system.rank_n());
    const bool sends_blocks = op == op_t::reduce_scatter || op == op_t::alltoall;
    const bool receives_blocks = op == op_t::allgather || op == op_t::alltoall;
    send_.resize(op == op_t::broadcast ? 0 : (sends_blocks ? blocks : 1) * count);
    recv_.resize((receives_blocks ? blocks : 1) * count);
    for (std::size_t k = 0; k < send_.size(); ++k) {
      send_[k] = input_value(system.rank_me(), k, count);
    }
    poison_outputs();
  }

  // Outputs back to poison; the root's broadcast buffer to its input.
  void poison_outputs() {
    const bool input = op_ == op_t::broadcast && system_.rank_me() == root;
    for (std::size_t k = 0; k < recv_.size(); ++k) {
      recv_[k] = input ? input_value(root, k, count_) : poison;
    }
  }

  void call() {
    switch (op_) {
      case op_t::barrier:
        return system_.barrier();
      case op_t::broadcast:
        return system_.broadcast(recv_.data(), count_, root);
      case op_t::reduce:
        return system_.reduce(send_.data(), recv_.data(), count_, root);
      case op_t::allreduce:
        return system_.allreduce(send_.data(), recv_.data(), count_);
      case op_t::reduce_scatter:
        return system_.reduce_scatter(send_.data(), recv_.data(), count_);
      case op_t::allgather:
        return system_.allgather(send_.data(), recv_.data(), count_);
      case op_t::alltoall:
        return system_.alltoall(send_.data(), recv_.data(), count_);
    }
  }

  // Throws, naming the first wrong item, unless the output is as expected.
  void check(const char* which_call) const {
    if (op_ == op_t::reduce && system_.rank_me() != root) return;  // no output
    for (std::size_t k = 0; k < recv_.size(); ++k) {
      const std::uint64_t expected =
          expected_value(op_, system_.rank_me(), system_.rank_n(), count_, k);
      if (recv_[k] == expected) continue;
      char text[256];
      std::snprintf(text, sizeof(text),
                    "%s: %s, %zu bytes, %d ranks, rank %d: item %zu of %zu is 0x%016" PRIx64
                    ", expected 0x%016" PRIx64 "%s",
                    system_.name(), op_name(op_), count_ * item_bytes, system_.rank_n(),
                    system_.rank_me(), k, recv_.size(), recv_[k], expected,
                    recv_[k] == poison ? " (never written)" : "");
      throw std::runtime_error(std::string("wrong result of the ") + which_call + ": " + text);
    }
  }

 private:
  collectives_t& system_;
  const op_t op_;
  const std::size_t count_;
  std::vector<std::uint64_t> send_;
  std::vector<std::uint64_t> recv_;
};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// This rank's mean seconds per call of `op` on blocks of `count` items,
// with both checks.
double measure(collectives_t& system, op_t op, std::size_t count, std::uint64_t warmup,
               std::uint64_t iterations) {
  case_t one(system, op, count);
  one.call();
  one.check("first call");
  one.poison_outputs();
  system.barrier();
  for (std::uint64_t i = 0; i < warmup; ++i) one.call();
  system.barrier();
  const double start_s = now_s();
  for (std::uint64_t i = 0; i < iterations; ++i) one.call();
  const double elapsed_s = now_s() - start_s;
  one.check("last timed call");
  return elapsed_s / static_cast<double>(iterations);
}

void report_header(const collectives_t& system, const options_t& options) {
  if (options.csv) {
    std::printf("impl,collective,op,ranks,size,iterations,latency_us\n");
    return;
  }
  std::printf("# %s, %d ranks: mean latency per call, max over ranks; %" PRIu64
              " warm-up calls, then %" PRIu64 " timed (%" PRIu64
              " from 64 KiB); results checked\n",
              system.name(), system.rank_n(), options.warmup, options.iterations,
              options.iterations_large);
  std::printf("%-5s %-15s %5s %9s %10s %12s\n", "impl", "op", "ranks", "size", "iterations",
              "latency_us");
}

void report_row(const collectives_t& system, const options_t& options, op_t op,
                std::size_t size_bytes, std::uint64_t iterations, double latency_s) {
  const char* format = options.csv ? "%s,collective,%s,%d,%zu,%" PRIu64 ",%.3f\n"
                                   : "%-5s %-15s %5d %9zu %10" PRIu64 " %12.3f\n";
  std::printf(format, system.name(), op_name(op), system.rank_n(), size_bytes, iterations,
              latency_s * 1e6);
  std::fflush(stdout);
}

// MIN, MIN x step, ... while at most MAX, and MAX itself where the steps
// pass it by (8:1048576 by 4 ends 131072, 524288, 1048576).
std::vector<std::size_t> sizes_bytes(const options_t& options) {
  std::vector<std::size_t> sizes;
  for (std::size_t size = options.size_min_bytes; size <= options.size_max_bytes;
       size *= options.size_step) {
    sizes.push_back(size);
  }
  if (sizes.back() != options.size_max_bytes) sizes.push_back(options.size_max_bytes);
  return sizes;
}

void run_all(collectives_t& system, const options_t& options) {
  if (system.rank_me() == 0) report_header(system, options);
  for (op_t op : options.ops) {
    for (std::size_t size : sizes_bytes(options)) {
      const bool barrier = op == op_t::barrier;
      const std::uint64_t iterations =
          size >= options.large_size_bytes_min ? options.iterations_large : options.iterations;
      const double mean_s = measure(system, op, barrier ? 0 : size / item_bytes,
                                    options.warmup, iterations);
      const double latency_s = system.max_over_ranks(mean_s);
      if (system.rank_me() == 0) {
        report_row(system, options, op, barrier ? 0 : size, iterations, latency_s);
      }
      if (barrier) break;  // one row: a barrier has no size
    }
  }
}

}  // namespace

int run_collective_latency(int argc, char** argv, const collectives_factory_t& factory) {
  options_t options;
  if (!parse_options(argc, argv, &options)) return 2;
  std::unique_ptr<collectives_t> system;
  try {
    system = factory();
    run_all(*system, options);
    system->barrier();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "collective_latency: %s\n", error.what());
    std::fflush(stderr);
    // Not through the system's teardown: LCI's and MPI's finalization are
    // collective, and the other ranks may be waiting in a collective this
    // rank left. The launcher ends them when it sees this exit.
    std::_Exit(1);
  }
  return 0;
}

}  // namespace lci::bench
