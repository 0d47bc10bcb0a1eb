#include "tests/soak/soak_options.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

namespace lci::soak {

namespace {

const char* const op_kind_names[op_kinds_count] = {"am",  "send", "put",
                                                   "put_signal", "get", "get_signal"};
const char* const comp_kind_names[comp_kinds_count] = {"sync",    "cq",    "cq_array", "handler",
                                                       "counter", "graph", "none"};

bool parse_u64(const char* text, std::uint64_t* out) {
  if (text == nullptr || *text == '\0' || *text == '-') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 0);
  if (errno != 0 || *end != '\0') return false;
  *out = value;
  return true;
}

bool parse_int(const char* text, int min, int max, int* out) {
  std::uint64_t value = 0;
  if (!parse_u64(text, &value) || value < static_cast<std::uint64_t>(min) ||
      value > static_cast<std::uint64_t>(max)) {
    return false;
  }
  *out = static_cast<int>(value);
  return true;
}

// "a,b,c" over `names` -> a bit per name; false on an unknown name.
bool parse_mask(const char* text, const char* const* names, int names_count, unsigned* out) {
  unsigned mask = 0;
  std::stringstream stream(text == nullptr ? "" : text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    int found = -1;
    for (int i = 0; i < names_count; ++i) {
      if (item == names[i]) found = i;
    }
    if (found < 0) return false;
    mask |= 1u << static_cast<unsigned>(found);
  }
  if (mask == 0) return false;
  *out = mask;
  return true;
}

std::string describe_mask(unsigned mask, const char* const* names, int names_count) {
  if (mask == (1u << static_cast<unsigned>(names_count)) - 1) return "all";
  std::string text;
  for (int i = 0; i < names_count; ++i) {
    if (((mask >> static_cast<unsigned>(i)) & 1u) == 0) continue;
    if (!text.empty()) text += ",";
    text += names[i];
  }
  return text;
}

}  // namespace

const char* get_op_kind_str(op_kind_t kind) { return op_kind_names[static_cast<int>(kind)]; }

const char* get_comp_kind_str(comp_kind_t kind) {
  return comp_kind_names[static_cast<int>(kind)];
}

soak_options_t default_soak_options() {
  soak_options_t options;
  std::uint64_t seed = 0;
  if (parse_u64(std::getenv("LCI_SIM_SEED"), &seed)) options.seed = seed;
  const char* crash = std::getenv("LCI_SIM_FAULT_RANK_CRASH");
  options.tolerate_crashes = crash != nullptr && std::strtod(crash, nullptr) > 0;
  return options;
}

std::string soak_usage() {
  return "usage: soak [--ranks N] [--threads N] [--devices shared|per-thread] [--ops N]\n"
         "            [--epochs N | --duration SECONDS] [--window N] [--size-max BYTES]\n"
         "            [--ops-mix am,send,put,put_signal,get,get_signal]\n"
         "            [--comps sync,cq,cq_array,handler,counter,graph,none]\n"
         "            [--no-self] [--seed S] [--exhaust] [--hold-registrations N]\n"
         "            [--expect-in-flight N] [--tolerate-crashes] [--quiet]\n";
}

bool parse_soak_options(int argc, char** argv, soak_options_t* options, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    bool ok = true;
    bool takes_value = true;
    if (arg == "--ranks") {
      ok = parse_int(value, 1, 4096, &options->ranks);
    } else if (arg == "--threads") {
      ok = parse_int(value, 1, threads_max, &options->threads);
    } else if (arg == "--devices") {
      const std::string mode = value == nullptr ? "" : value;
      ok = mode == "shared" || mode == "per-thread";
      options->devices = mode == "shared" ? device_mode_t::shared : device_mode_t::per_thread;
    } else if (arg == "--ops") {
      ok = parse_int(value, 0, 1 << 24, &options->ops_per_thread);
    } else if (arg == "--epochs") {
      ok = parse_int(value, 1, 1 << 30, &options->epochs);
    } else if (arg == "--duration") {
      char* end = nullptr;
      options->duration_s = value == nullptr ? 0 : std::strtod(value, &end);
      ok = value != nullptr && *end == '\0' && options->duration_s > 0;
    } else if (arg == "--window") {
      ok = parse_int(value, 1, 1 << 20, &options->window);
    } else if (arg == "--size-max") {
      std::uint64_t size = 0;
      ok = parse_u64(value, &size) && size <= size_max_max;
      options->size_max = static_cast<std::size_t>(size);
    } else if (arg == "--ops-mix") {
      ok = parse_mask(value, op_kind_names, op_kinds_count, &options->op_kinds_mask);
    } else if (arg == "--comps") {
      ok = parse_mask(value, comp_kind_names, comp_kinds_count, &options->comp_kinds_mask);
    } else if (arg == "--expect-in-flight") {
      ok = parse_int(value, 0, 1 << 20, &options->expect_in_flight);
    } else if (arg == "--hold-registrations") {
      ok = parse_int(value, 0, 1 << 16, &options->held_registrations);
    } else if (arg == "--seed") {
      ok = parse_u64(value, &options->seed);
    } else {
      takes_value = false;
      if (arg == "--no-self") {
        options->self = false;
      } else if (arg == "--exhaust") {
        options->exhaust = true;
      } else if (arg == "--tolerate-crashes") {
        options->tolerate_crashes = true;
      } else if (arg == "--quiet") {
        options->quiet = true;
      } else {
        *error = "unknown argument \"" + arg + "\"\n" + soak_usage();
        return false;
      }
    }
    if (!ok) {
      *error = arg + " \"" + (value == nullptr ? "" : value) + "\": not a valid value\n" +
               soak_usage();
      return false;
    }
    if (takes_value) ++i;
  }
  return true;
}

std::string describe(const soak_options_t& options) {
  std::ostringstream text;
  text << "threads=" << options.threads
       << " devices=" << (options.devices == device_mode_t::shared ? "shared" : "per-thread")
       << " ops=" << options.ops_per_thread << " window=" << options.window;
  if (options.duration_s > 0) {
    text << " duration=" << options.duration_s << "s";
  } else {
    text << " epochs=" << options.epochs;
  }
  text << " size_max=" << options.size_max
       << " ops_mix=" << describe_mask(options.op_kinds_mask, op_kind_names, op_kinds_count)
       << " comps=" << describe_mask(options.comp_kinds_mask, comp_kind_names, comp_kinds_count)
       << " self=" << (options.self ? 1 : 0) << " seed=" << options.seed
       << " exhaust=" << (options.exhaust ? 1 : 0)
       << " held_registrations=" << options.held_registrations
       << " tolerate_crashes=" << (options.tolerate_crashes ? 1 : 0);
  return text.str();
}

soak_options_t test_soak_options(int threads, device_mode_t devices, int ops_per_thread,
                                 std::size_t size_max) {
  soak_options_t options;
  options.threads = threads;
  options.devices = devices;
  options.ops_per_thread = ops_per_thread;
  options.size_max = size_max;
  options.quiet = true;
  return options;
}

}  // namespace lci::soak
