// host_t: what a runtime needs from the place it runs in — one simulated
// rank of an in-process world, or a real process started by a launcher
// (process_host.hpp). It supplies the network context, the slot holding the rank's
// default runtime (g_runtime_init / get_g_runtime), and a scheduling point
// for blocking waits.
//
// The simulator runs many ranks in one process, so "the" global runtime is
// per rank: current_host() asks a lookup function the simulator installs
// (set_host_lookup), which maps the calling fiber or thread to its rank.
//
// Thread safety: set_host_lookup() before any runtime exists, from one
//                thread; current_host() from any thread.
// Blocking:      idle() yields (simulator) and never blocks indefinitely.
// Ownership:     the host owns the network context; runtimes borrow it.
#pragma once

#include <cstddef>

#include "backends/backend.hpp"
#include "lci/util/atomic.hpp"

namespace lci::detail {

class runtime_impl_t;

// The queue depths a device asks for when its attributes leave them 0.
struct device_depths_t {
  std::size_t net_max_sends = 0;
  std::size_t net_max_recvs = 0;
  std::size_t net_max_cqes = 0;
};

class host_t {
 public:
  virtual ~host_t() = default;
  virtual backend::net_context_t& net_context() = 0;
  virtual bool simulated() const = 0;
  virtual runtime_impl_t*& g_runtime_slot() = 0;
  // Called on every turn of a blocking wait (sync_wait, barrier, ...);
  // `what` is a literal naming the wait, shown by deadlock reports.
  virtual void idle(const char* what) = 0;
  // Called by progress() on a thread whose progress calls have found
  // nothing to do many times in a row (lci/progress/idle_yield.hpp): a real
  // process lets the other threads of its core run. Nothing by default: a
  // simulated rank's fibers switch at their network calls already, and a
  // yield here would change every seed's schedule.
  virtual void yield_when_idle() {}
  // How deep the calling thread (or simulated thread: a fiber) is inside
  // completion dispatch; progress() refuses to run when it is not 0.
  virtual unsigned& dispatch_depth() = 0;
  // Progress the network did not see: a protocol step of the device backlog
  // went through (a simulator judges deadlock by what changes).
  virtual void note_progress() {}
  // false once nothing can move on the network any more (a simulated rank
  // torn down after its run ended): teardown then stops waiting for it.
  virtual bool network_running() const { return true; }
  // The queue depths a device of this host asks for when its attributes
  // leave them 0: its network's (net_context_t::device_defaults).
  device_depths_t device_depths();

  // Set while a runtime of this host allocates a device (see
  // runtime_impl_t::alloc_device). A flag, not a lock: device allocation
  // calls the network, which may be a scheduling point in the simulator,
  // where no lock may be held.
  util::atomic<bool>& device_allocating() { return device_allocating_; }

  // Runtimes of this host that exist now (created, not yet destroyed). A
  // real process's host reads it at exit (process_host.hpp, "Exit").
  // relaxed: a count only; no runtime's contents are read through it.
  std::size_t runtimes_alive() const { return runtimes_alive_.load(util::mo_relaxed); }

  // Counts a runtime from its construction to its destruction: a member of
  // runtime_impl_t, so a constructor that throws uncounts it too.
  class runtime_count_t {
   public:
    explicit runtime_count_t(host_t& host) : host_(host) {
      // relaxed: as runtimes_alive().
      host_.runtimes_alive_.fetch_add(1, util::mo_relaxed);
    }
    ~runtime_count_t() {
      // relaxed: as runtimes_alive().
      host_.runtimes_alive_.fetch_sub(1, util::mo_relaxed);
    }
    runtime_count_t(const runtime_count_t&) = delete;
    runtime_count_t& operator=(const runtime_count_t&) = delete;

   private:
    host_t& host_;
  };

 private:
  util::atomic<bool> device_allocating_{false};
  util::atomic<std::size_t> runtimes_alive_{0};
};

using host_lookup_fn_t = host_t* (*)();

// nullptr removes the lookup.
void set_host_lookup(host_lookup_fn_t lookup);

// The installed lookup (set_host_lookup), read inline by current_host()
// and resolve_runtime(). acquire/release: a lookup installed by one thread
// is seen with everything it set up by threads that start runtimes
// afterwards.
inline util::atomic<host_lookup_fn_t> g_host_lookup{nullptr};

// The global-runtime slot of this process's own host (process_host()),
// published once that host is built and withdrawn before it goes; nullptr
// otherwise. With no lookup installed it is the slot current_host() would
// give, so resolve_runtime() reads it without the call chain (host lookup,
// host creation guard, virtual call): the path of every operation of a
// program that names no runtime. acquire/release: the slot is seen
// together with the host that owns it.
inline util::atomic<runtime_impl_t**> g_process_runtime_slot{nullptr};

// The calling thread's host: the lookup's answer when a lookup is installed
// (the simulator; a thread outside its ranks gets std::runtime_error), else
// this process's own host (process_host.hpp), which throws when the build
// has no real network backend.
host_t& current_host();

// The calling thread's host as the installed lookup gives it (a simulated
// rank's; a test harness's process host); nullptr with no lookup installed
// (a real process, whose host would open the network) and on a thread
// outside the lookup's ranks. Opens nothing.
host_t* looked_up_host();

// The queue depths of a device left to its defaults on the calling thread's
// host, opening nothing (get_g_default_attr asks before any runtime, when a
// real process has not chosen its network yet): a looked-up host's, or a
// real process's once its network is open; before that (and on a thread
// outside a lookup's ranks), those of the linked backend that
// LCI_ATTR_BACKEND (or set_g_default_attr) names, else of the one the
// process tries first. All 0 when no backend is linked.
device_depths_t linked_device_depths();

}  // namespace lci::detail
