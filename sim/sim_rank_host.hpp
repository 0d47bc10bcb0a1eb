// rank_host_t: the host (lci/runtime/host.hpp) of one simulated rank: LCI
// runtimes created by the rank's code use the rank's sim network context,
// keep the rank's default runtime, and wait through the harness (a
// scheduling point in deterministic mode).
//
// Binding: bind_current() ties the calling fiber (deterministic mode: all
// fibers share one OS thread, so the binding is per fiber id) or OS thread
// (concurrent mode) to a rank's host; the process-wide host lookup that
// install_lookup() sets answers with that binding. The harness binds every
// rank body and every thread a rank starts.
//
// Thread safety: bind_current() affects only the caller; the host's members
//                may be used by every fiber/thread of its rank.
// Ownership:     the harness owns hosts; a host borrows the context.
#pragma once

#include <atomic>
#include <cstdint>

#include "backends/backend.hpp"
#include "lci/runtime/host.hpp"
#include "sim/sim_harness.hpp"

namespace lci::sim {

class rank_host_t final : public lci::detail::host_t {
 public:
  rank_host_t(backend::net_context_t& context, rank_env_t env)
      : context_(context), env_(env), world_(env_.world()) {}
  // A global runtime the rank's code left behind (it threw, or crashed,
  // before g_runtime_fina) is finalized here, while the world still exists
  // but no longer runs: its devices close without waiting for their
  // backlogs (network_running()).
  ~rank_host_t() override;
  rank_host_t(const rank_host_t&) = delete;
  rank_host_t& operator=(const rank_host_t&) = delete;

  backend::net_context_t& net_context() override { return context_; }
  bool simulated() const override { return true; }
  lci::detail::runtime_impl_t*& g_runtime_slot() override { return g_runtime_; }
  void idle(const char* what) override { env_.wait(what); }
  rank_env_t& env() { return env_; }
  // The calling fiber's/thread's rank host; nullptr outside a simulated rank.
  static rank_host_t* current();
  unsigned& dispatch_depth() override;
  void note_progress() override;
  // Counts, and yields nothing (host.hpp): a yield here would change every
  // seed's schedule. Tests read the count (tests/progress).
  void yield_when_idle() override { idle_yields_.fetch_add(1, std::memory_order_relaxed); }
  // relaxed: a count read after the calls it counts, on the same thread or
  // after the run joined the rank's threads.
  std::uint64_t idle_yields() const { return idle_yields_.load(std::memory_order_relaxed); }
  // The run is over when the host is destroyed: no fiber is scheduled and
  // no delivery fires any more; or once the run was stopped (concurrent
  // mode's watchdog, or a rank's failure), or this rank crashed: every
  // backend call throws.
  bool network_running() const override;

  // nullptr unbinds.
  static void bind_current(rank_host_t* host);
  // Installs the lookup (idempotent).
  static void install_lookup();

 private:
  backend::net_context_t& context_;
  rank_env_t env_;
  world_t& world_;  // the rank's simulated world (outlives its hosts)
  lci::detail::runtime_impl_t* g_runtime_ = nullptr;
  bool run_over_ = false;  // set by the destructor
  std::atomic<std::uint64_t> idle_yields_{0};  // yield_when_idle() calls, by any thread of the rank
};

}  // namespace lci::sim
