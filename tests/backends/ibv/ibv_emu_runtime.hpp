// Runs simulated ranks whose LCI runtimes use the ibv backend over one
// emulated verbs fabric (backends/ibv_emu/ibv_emu_fabric.hpp) instead of the
// simulated network: each rank's runtime gets an ibv_context_t over its own
// HCA, bootstrapped through the harness (sim::run_options_t::
// make_runtime_context). The fabric is seeded with the run's seed, so a
// replay line replays both.
//
// Ownership: the options keep the fabric alive (shared) until the run is
//            over and its contexts are gone.
#pragma once

#include <memory>

#include "backends/ibv/ibv_context.hpp"
#include "backends/ibv_emu/ibv_emu_fabric.hpp"
#include "sim/sim_harness.hpp"

namespace lci::ibv_test {

// Points `options` (whose world.seed is set) at a fresh emulated fabric of
// `ranks_count` HCAs (`emu` says the rest) and returns it (for its
// describe() and stats()).
inline std::shared_ptr<backend::ibv_emu::emu_fabric_t> use_emulated_ibv(
    sim::run_options_t* options, int ranks_count, backend::ibv_emu::emu_options_t emu = {}) {
  emu.hcas_count = ranks_count;
  emu.seed = options->world.seed;
  // Room for a device per thread (two SRQs each) as on a real HCA, which
  // has millions; the emulation's default of 8 is for the rule tests.
  emu.max_srq = 64;
  auto fabric = std::make_shared<backend::ibv_emu::emu_fabric_t>(emu);
  options->make_runtime_context = [fabric](sim::rank_env_t env) {
    return std::unique_ptr<backend::net_context_t>(new backend::ibv::ibv_context_t(
        fabric->verbs(env.rank()), env.rank(), env.ranks_count(),
        backend::ibv::ibv_bootstrap_t{
            [env](const void* mine, std::size_t bytes, void* all) mutable {
              env.allgather(mine, bytes, all);
            },
            [env](const char* what) mutable { env.wait(what); }}));
  };
  return fabric;
}

}  // namespace lci::ibv_test
