#include "sim/sim_rank_host.hpp"

#include <deque>

#include "lci/runtime/runtime_impl.hpp"
#include "sim/sim_scheduler.hpp"

namespace lci::sim {

namespace {

// What one fiber or thread is bound to.
struct binding_t {
  rank_host_t* host = nullptr;
  unsigned dispatch_depth = 0;
};

// Deterministic mode: every fiber of a run lives on the OS thread that runs
// the scheduler, so per-fiber bindings are per-thread data indexed by id. A
// deque: growing it keeps earlier records where they are, so a reference
// taken by one fiber survives another fiber's first lookup.
thread_local std::deque<binding_t> t_fiber_bindings;
// Concurrent mode (and any code outside a scheduler).
thread_local binding_t t_thread_binding;

binding_t& current_binding() {
  if (scheduler_t::current() == nullptr) return t_thread_binding;
  const fiber_id_t fiber = scheduler_t::current_fiber();
  // A timer callback runs between fibers or on a fiber's stack with no
  // current fiber: it belongs to no rank.
  if (fiber == fiber_id_invalid) return t_thread_binding;
  if (fiber >= t_fiber_bindings.size()) t_fiber_bindings.resize(fiber + 1);
  return t_fiber_bindings[fiber];
}

lci::detail::host_t* lookup() { return current_binding().host; }

}  // namespace

rank_host_t::~rank_host_t() {
  run_over_ = true;
  delete g_runtime_;
}

void rank_host_t::note_progress() {
  scheduler_t* scheduler = scheduler_t::current();
  if (scheduler != nullptr) {
    scheduler->note_progress();
    return;
  }
  // Concurrent mode: a progress event for the watchdog (sim_harness.hpp).
  if (!run_over_ && world_.mode() == world_mode_t::concurrent) world_.count_progress();
}

bool rank_host_t::network_running() const {
  // A stopped run (world_t::abort_run()) throws from every call, and so
  // does every call of a rank that crashed (a rank_crash fault can hit
  // while its runtime drains at teardown): waiting for the network to take
  // a backlog would never end.
  return !run_over_ && !world_.run_aborted() && !world_.is_crashed(env_.rank());
}

rank_host_t* rank_host_t::current() { return current_binding().host; }

unsigned& rank_host_t::dispatch_depth() { return current_binding().dispatch_depth; }

void rank_host_t::bind_current(rank_host_t* host) {
  binding_t& binding = current_binding();
  binding.host = host;
  binding.dispatch_depth = 0;
}

void rank_host_t::install_lookup() { lci::detail::set_host_lookup(&lookup); }

}  // namespace lci::sim
