// The driver of the libfabric benchmarks: command line, the windowed
// exchange of ofi_bench.hpp on T threads, calibration, report.
#include "bench/ofi_bench.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace lci::bench {

namespace {

constexpr int threads_max = 64;
constexpr std::size_t window_max = 1024;
// The bandwidth bench's answer to a window: one small message.
constexpr std::size_t ack_size_bytes = 8;
// Rounds are capped so that a mis-calibrated run still ends.
constexpr std::uint64_t rounds_max = 100'000'000;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char* bench_name(bench_kind_t bench) {
  return bench == bench_kind_t::msgrate ? "msgrate" : "bandwidth";
}
// The report's name of the exchange: am, am_packet (--am-buffer packet) or
// sendrecv.
const char* op_name(const options_t& options) {
  if (options.op == op_kind_t::sendrecv) return "sendrecv";
  return options.am_buffer == am_buffer_kind_t::packet ? "am_packet" : "am";
}
const char* devices_name(devices_kind_t devices) {
  return devices == devices_kind_t::shared ? "shared" : "dedicated";
}

void print_usage(const char* program, bench_kind_t bench) {
  std::printf(
      "usage: tools/lcirun -n 2N %s [options]\n"
      "  Ranks pair up (r with r + n/2); thread t of each talks to thread t of\n"
      "  its partner. %s\n"
      "  --op am|sendrecv          LCI active messages or send/recv (default %s);\n"
      "                            the raw baseline always does fi_send/fi_recv\n"
      "  --am-buffer copy|packet   an arrived active message as a malloc'd copy, or\n"
      "                            in its packet (zero_copy_am; default copy)\n"
      "  --devices shared|dedicated  one device (endpoint) for all threads, or one\n"
      "                            per thread (default shared)\n"
      "  --threads T               threads per process (default 1)\n"
      "  --window W                messages per window (default 64)\n"
      "  --size B                  msgrate: message size in bytes (default 8)\n"
      "  --sizes MIN:MAX           bandwidth: size range (default 16:1048576)\n"
      "  --step F                  bandwidth: factor between sizes, 2 or 4 (default 4)\n"
      "  --iterations N            rounds measured (per size); default: --duration\n"
      "  --duration S              seconds to measure (per size), calibrated from\n"
      "                            the warm-up (default %s)\n"
      "  --warmup N                first warm-up rounds, doubled until the warm-up\n"
      "                            lasts a tenth of --duration (default %s)\n"
      "  --work-send N             added work before each send: N iterations of a\n"
      "                            dependent loop, ~6 instructions each (default 0)\n"
      "  --work-arrival N          the same per arrived message, after the poll\n"
      "  --work-poll N             the same before each poll\n"
      "  --csv                     machine-readable output\n",
      program,
      bench == bench_kind_t::msgrate
          ? "A round: W messages out, W back. Reports messages sent per second\n"
            "  per process and in total."
          : "A round: W messages of a size out, one 8-byte ack back. Reports the\n"
            "  bytes the initiators sent per second.",
      bench == bench_kind_t::msgrate ? "am" : "sendrecv",
      bench == bench_kind_t::msgrate ? "1" : "0.25", bench == bench_kind_t::msgrate ? "200" : "8");
}

bool parse_size(const char* text, std::size_t* value) {
  char* end = nullptr;
  const unsigned long long parsed = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0') return false;
  *value = static_cast<std::size_t>(parsed);
  return true;
}

// A name on the command line and what it selects.
template <typename kind_t>
struct choice_t {
  const char* name;
  kind_t kind;
};

// Sets *kind to the choice `value` names; returns an error naming `arg`
// and both choices when it names neither (empty on success).
template <typename kind_t>
std::string parse_choice(const std::string& arg, const char* value, choice_t<kind_t> first,
                         choice_t<kind_t> second, kind_t* kind) {
  for (const choice_t<kind_t>& choice : {first, second}) {
    if (std::strcmp(value, choice.name) == 0) {
      *kind = choice.kind;
      return "";
    }
  }
  return arg + ": '" + value + "' is not " + first.name + " or " + second.name;
}

// Returns an error message, empty when `arg` (and its value) parsed.
std::string parse_one(const std::string& arg, const char* value, options_t* options) {
  std::size_t number = 0;
  if (arg == "--op") {
    return parse_choice(arg, value, {"am", op_kind_t::am}, {"sendrecv", op_kind_t::sendrecv},
                        &options->op);
  }
  if (arg == "--am-buffer") {
    return parse_choice(arg, value, {"copy", am_buffer_kind_t::copy},
                        {"packet", am_buffer_kind_t::packet}, &options->am_buffer);
  }
  if (arg == "--devices") {
    return parse_choice(arg, value, {"shared", devices_kind_t::shared},
                        {"dedicated", devices_kind_t::dedicated}, &options->devices);
  }
  if (arg == "--duration") {
    char* end = nullptr;
    options->duration_s = std::strtod(value, &end);
    if (end == value || *end != '\0' || !(options->duration_s > 0)) {
      return "--duration: '" + std::string(value) + "' is not a positive number of seconds";
    }
    return "";
  }
  if (arg == "--sizes") {
    const char* colon = std::strchr(value, ':');
    if (colon == nullptr) return "--sizes: '" + std::string(value) + "' is not MIN:MAX";
    const std::string min_text(value, colon);
    if (!parse_size(min_text.c_str(), &options->size_min_bytes) ||
        !parse_size(colon + 1, &options->size_max_bytes)) {
      return "--sizes: '" + std::string(value) + "' is not MIN:MAX";
    }
    return "";
  }
  if (!parse_size(value, &number)) return arg + ": '" + value + "' is not a number";
  if (arg == "--threads") {
    options->threads = static_cast<int>(std::min<std::size_t>(number, threads_max + 1));
  } else if (arg == "--window") {
    options->window = number;
  } else if (arg == "--size") {
    options->size_bytes = number;
  } else if (arg == "--step") {
    options->size_step = number;
  } else if (arg == "--iterations") {
    options->iterations = number;
  } else if (arg == "--warmup") {
    options->warmup_iterations = number;
  } else if (arg == "--work-send") {
    options->work_send = number;
  } else if (arg == "--work-arrival") {
    options->work_arrival = number;
  } else if (arg == "--work-poll") {
    options->work_poll = number;
  } else {
    return "unknown argument: " + arg;
  }
  return "";
}

std::string check_options(const options_t& options) {
  if (options.threads < 1 || options.threads > threads_max) {
    return "--threads must be in [1, " + std::to_string(threads_max) + "]";
  }
  if (options.window < 1 || options.window > window_max) {
    return "--window " + std::to_string(options.window) + " is not in [1, " +
           std::to_string(window_max) + "]";
  }
  if (options.size_bytes < 1) return "--size must be at least 1";
  if (options.size_min_bytes < 1 || options.size_min_bytes > options.size_max_bytes) {
    return "--sizes: need 1 <= MIN <= MAX, got " + std::to_string(options.size_min_bytes) + ":" +
           std::to_string(options.size_max_bytes);
  }
  if (options.size_step != 2 && options.size_step != 4) {
    return "--step " + std::to_string(options.size_step) + " is not 2 or 4";
  }
  return "";
}

// Returns false (after printing why) on a malformed command line.
bool parse_options(bench_kind_t bench, int argc, char** argv, options_t* options) {
  options->bench = bench;
  if (bench == bench_kind_t::bandwidth) options->op = op_kind_t::sendrecv;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      print_usage(argv[0], bench);
      std::exit(0);
    }
    std::string error;
    if (arg == "--csv") {
      options->csv = true;
    } else if (i + 1 < argc) {
      error = parse_one(arg, argv[++i], options);
    } else {
      error = "argument " + arg + " needs a value (or is unknown)";
    }
    if (!error.empty()) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return false;
    }
  }
  if (options->duration_s == 0) options->duration_s = bench == bench_kind_t::msgrate ? 1.0 : 0.25;
  if (options->warmup_iterations == 0) {
    options->warmup_iterations = bench == bench_kind_t::msgrate ? 200 : 8;
  }
  const std::string error = check_options(*options);
  if (!error.empty()) std::fprintf(stderr, "%s\n", error.c_str());
  return error.empty();
}

// What one round sends each way.
struct round_t {
  std::size_t out_count;
  std::size_t out_size_bytes;
  std::size_t back_count;
  std::size_t back_size_bytes;
};

// What one bench thread measured; written by that thread only, read after
// it was joined.
struct thread_result_t {
  double start_s = 0;
  double end_s = 0;
  std::string error;
};

// Added work (options_t::work_*): a dependent chain through a volatile,
// which the compiler can neither drop nor shorten.
void spin(std::size_t iterations) {
  thread_local volatile std::size_t sink = 0;
  for (std::size_t i = 0; i < iterations; ++i) sink = sink + i;
}

// One thread's side of `rounds` rounds. The responder's receives for the
// first round were posted before the phase started (see run_phase).
class exchange_t {
 public:
  exchange_t(channel_t& channel, bool initiator, const round_t& round, const options_t& options)
      : channel_(channel),
        initiator_(initiator),
        round_(round),
        work_send_(options.work_send),
        work_arrival_(options.work_arrival),
        work_poll_(options.work_poll) {}

  void run(std::uint64_t rounds) {
    for (std::uint64_t i = 0; i < rounds; ++i) {
      if (initiator_) {
        channel_.expect(round_.back_count, round_.back_size_bytes);
        send_all(round_.out_count, round_.out_size_bytes);
        wait_arrivals(round_.back_count);
      } else {
        wait_arrivals(round_.out_count);
        if (i + 1 < rounds) channel_.expect(round_.out_count, round_.out_size_bytes);
        send_all(round_.back_count, round_.back_size_bytes);
      }
    }
    while (channel_.sends_pending() != 0) arrived_ += poll();
    if (arrived_ != 0) {
      throw std::runtime_error(std::to_string(arrived_) + " messages arrived beyond the rounds");
    }
  }

 private:
  void send_all(std::size_t count, std::size_t size_bytes) {
    for (std::size_t sent = 0; sent < count;) {
      spin(work_send_);
      if (channel_.try_send(size_bytes)) {
        ++sent;
      } else {
        arrived_ += poll();
      }
    }
  }
  void wait_arrivals(std::size_t count) {
    while (arrived_ < count) arrived_ += poll();
    arrived_ -= count;
  }
  std::size_t poll() {
    spin(work_poll_);
    const std::size_t arrived = channel_.poll();
    spin(arrived * work_arrival_);
    return arrived;
  }

  channel_t& channel_;
  const bool initiator_;
  const round_t round_;
  const std::size_t work_send_;
  const std::size_t work_arrival_;
  const std::size_t work_poll_;
  std::size_t arrived_ = 0;  // arrived and not yet claimed by a wait
};

// Runs `rounds` rounds on every channel, one thread each, all starting
// together after a barrier of the processes. Returns, per thread, when it
// started and ended.
std::vector<thread_result_t> run_phase(transport_t& transport, const options_t& options,
                                       const std::vector<channel_t*>& channels,
                                       const round_t& round, std::uint64_t rounds) {
  const bool initiator = transport.rank_me() < transport.rank_n() / 2;
  const int threads = static_cast<int>(channels.size());
  std::vector<thread_result_t> results(channels.size());
  // seq_cst: a start flag and a count of ready threads, off the measured
  // path; no ordering subtler than "everyone has posted" is needed.
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      thread_result_t& result = results[static_cast<std::size_t>(t)];
      try {
        if (!initiator && rounds > 0) channels[t]->expect(round.out_count, round.out_size_bytes);
      } catch (const std::exception& error) {
        result.error = error.what();
      }
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      if (!result.error.empty()) return;
      try {
        exchange_t exchange(*channels[t], initiator, round, options);
        result.start_s = now_s();
        exchange.run(rounds);
        result.end_s = now_s();
      } catch (const std::exception& error) {
        result.error = error.what();
      }
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  transport.barrier();  // every responder's first receives are posted
  go.store(true);
  for (std::thread& worker : workers) worker.join();
  return results;
}

// The process's wall time of a phase: first start to last end; throws the
// first thread's error.
double phase_wall_s(const std::vector<thread_result_t>& results) {
  double start_s = results.front().start_s;
  double end_s = results.front().end_s;
  for (const thread_result_t& result : results) {
    if (!result.error.empty()) throw std::runtime_error(result.error);
    start_s = std::min(start_s, result.start_s);
    end_s = std::max(end_s, result.end_s);
  }
  return end_s - start_s;
}

// Warm-up, then the measured rounds: --iterations, or as many as fill
// --duration at the warm-up's pace. The warm-up doubles its rounds until it
// lasts a tenth of --duration (short ones are all start-up noise); its pace
// is the slowest rank's, so every rank agrees on the count. Returns the
// measured wall time and sets *rounds.
double measure(transport_t& transport, const options_t& options,
               const std::vector<channel_t*>& channels, const round_t& round,
               std::uint64_t* rounds) {
  std::uint64_t warmup = options.warmup_iterations;
  double warmup_s = 0;
  for (;;) {
    const std::vector<double> walls =
        transport.allgather(phase_wall_s(run_phase(transport, options, channels, round, warmup)));
    warmup_s = *std::max_element(walls.begin(), walls.end());
    if (options.iterations != 0 || warmup_s >= options.duration_s / 10 ||
        warmup >= rounds_max / 2) {
      break;
    }
    warmup *= 2;
  }
  *rounds = options.iterations;
  if (*rounds == 0) {
    const double pace_s = warmup_s / double(warmup);
    const double wanted = std::ceil(options.duration_s / std::max(pace_s, 1e-9));
    *rounds = static_cast<std::uint64_t>(std::clamp(wanted, 1.0, double(rounds_max)));
  }
  return phase_wall_s(run_phase(transport, options, channels, round, *rounds));
}

void report_msgrate(transport_t& transport, const options_t& options,
                    const std::vector<channel_t*>& channels) {
  const round_t round{options.window, options.size_bytes, options.window, options.size_bytes};
  std::uint64_t rounds = 0;
  const double wall_s = measure(transport, options, channels, round, &rounds);
  // Each process sends one window per round per thread.
  const double sent = double(rounds) * double(options.window) * double(options.threads);
  const std::vector<double> rates = transport.allgather(sent / wall_s);
  if (transport.rank_me() != 0) return;
  const char* const name = transport.name();
  const char* const op = op_name(options);
  const char* const devices = devices_name(options.devices);
  double total = 0;
  if (!options.csv && options.work_send + options.work_arrival + options.work_poll != 0) {
    std::printf("added work (iterations): %zu per send, %zu per arrival, %zu per poll\n",
                options.work_send, options.work_arrival, options.work_poll);
  }
  if (!options.csv) {
    std::printf("%-4s %-8s %-9s %7s %6s %6s %9s %6s %14s\n", "impl", "op", "devices", "threads",
                "size", "window", "rounds", "rank", "msgs/s");
  }
  for (std::size_t rank = 0; rank <= rates.size(); ++rank) {
    const bool is_total = rank == rates.size();
    const double rate = is_total ? total : rates[rank];
    total += is_total ? 0 : rate;
    const std::string rank_text = is_total ? "total" : std::to_string(rank);
    if (options.csv) {
      std::printf("%s,msgrate,%s,%s,%d,%zu,%zu,%llu,%s,%.0f\n", name, op, devices,
                  options.threads, options.size_bytes, options.window,
                  static_cast<unsigned long long>(rounds), rank_text.c_str(), rate);
    } else {
      std::printf("%-4s %-8s %-9s %7d %6zu %6zu %9llu %6s %14.0f\n", name, op, devices,
                  options.threads, options.size_bytes, options.window,
                  static_cast<unsigned long long>(rounds), rank_text.c_str(), rate);
    }
  }
}

void report_bandwidth(transport_t& transport, const options_t& options,
                      const std::vector<channel_t*>& channels) {
  const bool initiator = transport.rank_me() < transport.rank_n() / 2;
  if (transport.rank_me() == 0 && !options.csv) {
    std::printf("%-4s %-8s %-9s %7s %6s %8s %8s %14s %14s\n", "impl", "op", "devices", "threads",
                "window", "size", "rounds", "bytes/s", "msgs/s");
  }
  for (const std::size_t size : options.sizes_bytes()) {
    const round_t round{options.window, size, 1, ack_size_bytes};
    std::uint64_t rounds = 0;
    const double wall_s = measure(transport, options, channels, round, &rounds);
    const double sent = initiator ? double(rounds) * double(options.window) * options.threads : 0;
    const std::vector<double> rates = transport.allgather(sent / wall_s);
    if (transport.rank_me() != 0) continue;
    double messages_per_s = 0;
    for (double rate : rates) messages_per_s += rate;
    const char* format = options.csv ? "%s,bandwidth,%s,%s,%d,%zu,%zu,%llu,%.0f,%.0f\n"
                                     : "%-4s %-8s %-9s %7d %6zu %8zu %8llu %14.0f %14.0f\n";
    std::printf(format, transport.name(), op_name(options), devices_name(options.devices),
                options.threads, options.window, size, static_cast<unsigned long long>(rounds),
                messages_per_s * double(size), messages_per_s);
    std::fflush(stdout);
  }
}

}  // namespace

std::size_t options_t::message_size_max_bytes() const {
  const std::size_t data = bench == bench_kind_t::msgrate ? size_bytes : size_max_bytes;
  return std::max(data, ack_size_bytes);
}

std::vector<std::size_t> options_t::sizes_bytes() const {
  std::vector<std::size_t> sizes;
  for (std::size_t size = size_min_bytes; size <= size_max_bytes; size *= size_step) {
    sizes.push_back(size);
  }
  return sizes;
}

void fail(const std::string& what, const std::string& detail) {
  throw std::runtime_error(what + ": " + detail);
}

int run_main(bench_kind_t bench, int argc, char** argv, const transport_factory_t& factory) {
  options_t options;
  if (!parse_options(bench, argc, argv, &options)) return 2;
  try {
    std::unique_ptr<transport_t> transport = factory(options);
    if (transport->rank_n() < 2 || transport->rank_n() % 2 != 0) {
      std::fprintf(stderr, "%s needs an even number of ranks (started with %d): run it as "
                   "tools/lcirun -n 2 %s ...\n", bench_name(bench), transport->rank_n(), argv[0]);
      return 2;
    }
    std::vector<channel_t*> channels;
    for (int t = 0; t < options.threads; ++t) channels.push_back(&transport->open_channel(t));
    if (bench == bench_kind_t::msgrate) {
      report_msgrate(*transport, options, channels);
    } else {
      report_bandwidth(*transport, options, channels);
    }
    transport->barrier();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s: %s\n", bench_name(bench), error.what());
    return 1;
  }
  return 0;
}

}  // namespace lci::bench
