#include "sim/sim_seed.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "lci/util/assert.hpp"

extern char* program_invocation_name;  // glibc: argv[0]

namespace lci::sim {

std::uint64_t seed_from_env(std::uint64_t default_seed) {
  const char* text = std::getenv(seed_env_name);
  if (text == nullptr || *text == '\0') return default_seed;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 0);  // 0: dec or 0x
  const bool valid = errno == 0 && end != text && *end == '\0' && *text != '-';
  if (!valid) {
    std::fprintf(stderr, "%s=\"%s\" is not an unsigned 64-bit number\n",
                 seed_env_name, text);
  }
  LCI_ASSERT(valid, "malformed LCI_SIM_SEED");
  return static_cast<std::uint64_t>(value);
}

std::vector<std::uint64_t> seeds_from_env(std::uint64_t seed_first,
                                          std::size_t seeds_count) {
  LCI_ASSERT(seeds_count > 0, "a seed sweep needs at least one seed");
  if (std::getenv(seed_env_name) != nullptr) return {seed_from_env(seed_first)};
  std::vector<std::uint64_t> seeds;
  seeds.reserve(seeds_count);
  for (std::size_t i = 0; i < seeds_count; ++i) seeds.push_back(seed_first + i);
  return seeds;
}

std::string replay_command(std::uint64_t seed, const std::string& command) {
  std::string line = std::string(seed_env_name) + "=" + std::to_string(seed) + " ";
  // A provider profile chosen by environment (sim/sim_profile.hpp) is part
  // of what the seed replays.
  const char* profile = std::getenv("LCI_SIM_PROFILE");
  const bool has_profile = profile != nullptr && *profile != '\0';
  if (has_profile) line = "LCI_SIM_PROFILE=" + std::string(profile) + " " + line;
  if (!command.empty()) return line + command;
  const char* target = std::getenv("TEST_TARGET");  // set by `bazel test`
  if (target != nullptr && *target != '\0') {
    return line + "bazel test --test_env=" + seed_env_name +
           (has_profile ? " --test_env=LCI_SIM_PROFILE " : " ") + target;
  }
  const char* program = program_invocation_name;
  return line + (program != nullptr ? program : "<test command>");
}

}  // namespace lci::sim
