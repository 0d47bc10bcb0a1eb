// Seeds and replay commands for simulator runs (TigerBeetle's VOPR habit:
// every run names its seed, every failure prints the command that replays it).
//
//   LCI_SIM_SEED=<seed>   run exactly this seed (decimal or 0x-hex); tests
//                         that sweep many seeds run only this one instead.
//
// Thread safety: all functions may run concurrently (they only read the
// environment). Blocking: never.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lci::sim {

inline constexpr const char* seed_env_name = "LCI_SIM_SEED";

// LCI_SIM_SEED if set, else default_seed. A malformed value is a usage error:
// it aborts with a message rather than silently running another seed.
std::uint64_t seed_from_env(std::uint64_t default_seed);

// The seeds a sweep should run: just LCI_SIM_SEED if set, else
// seed_first, seed_first + 1, ... (seeds_count of them).
std::vector<std::uint64_t> seeds_from_env(std::uint64_t seed_first,
                                          std::size_t seeds_count);

// One line that reruns `seed`: `LCI_SIM_SEED=<seed> <command>` (preceded by
// LCI_SIM_PROFILE=<name> when that is set: sim_profile.hpp). <command> is
// `command` if non-empty, else `bazel test --test_env=LCI_SIM_SEED <target>`
// under `bazel test` (TEST_TARGET is set), else the program's own name.
std::string replay_command(std::uint64_t seed, const std::string& command);

}  // namespace lci::sim
