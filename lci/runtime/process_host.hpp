// process_host_t: the host (host.hpp) of an LCI program that is a real
// process — one rank of a job started by a launcher (tools/lcirun, mpirun,
// srun: lci/bootstrap detects which), or a job of one when started alone.
// It opens the process's bootstrap and, over it, the network context of a
// real backend of this build (backends/linked_backends.hpp: libfabric with
// --config=ofi): the one LCI_ATTR_BACKEND names, or the best that opens;
// LCI_ATTR_OFI_PROVIDER_NAME and LCI_ATTR_DEVICE_NAME go to the backend.
//
// current_host() falls back to process_host() when no host lookup is
// installed, i.e. when no simulator runs in this process; the host is
// created on first use, once per process. A build without a real backend
// (no --config=ofi) has no process host: process_host() throws a
// std::runtime_error saying so ("lci: no network for this process: ..."),
// as it does for a LCI_ATTR_BACKEND this build lacks.
//
// Thread safety: process_host() from any thread (the first call creates the
//                host; concurrent first calls wait for it). Members as
//                host_t says; dispatch_depth() is per OS thread.
// Blocking:      the first process_host() waits for every rank of the job
//                (bootstrap and network setup are collective); idle()
//                yields the CPU once and returns.
// Ownership:     the host owns its bootstrap and network context, and a
//                global runtime the program left behind (see Exit).
// Allocation:    at creation.
//
// Exit: when the process exits (main returns, exit()), a global runtime
// the program left behind is destroyed (its devices first send what their
// backlogs still hold), then the network closes, then the bootstrap. The
// runtime and the network are abandoned instead, not destroyed, when
// - the exiting thread is not the process's only thread: another may still
//   be inside the runtime (a progress thread, a worker in sync_wait, a
//   program whose signal handler called exit()); or
// - a runtime of alloc_runtime is still alive: it is the program's, and
//   the network cannot close under its devices.
// Then only the bootstrap is finalized. Abandoned means: what the backlogs
// held is not sent, peers may see this rank's exit as a crash, and what the
// network would remove at close stays (libfabric's shm provider: its
// /dev/shm file, 16 MiB sparse, per device). Freeing every runtime
// (g_runtime_fina, free_runtime) before exiting is the clean way out
// (tests/runtime:exit_with_threads).
//
// real_process_host_t and open_real_network() are the two parts, for a
// harness that runs rank bodies as processes with a bootstrap of its own
// (sim/sim_process.hpp).
#pragma once

#include <memory>

#include "backends/backend.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "lci/runtime/host.hpp"

namespace lci::detail {

// This process's host, created on first use; throws std::runtime_error when
// no real network backend is compiled in, or when opening the bootstrap or
// the network fails (the message names what is missing).
host_t& process_host();

// The network context of a real backend of this build over `bootstrap`
// (collective), chosen and configured by the net context attributes
// (LCI_ATTR_BACKEND, ...); throws std::runtime_error when no real backend
// is compiled in, the one named is not, or it fails to open.
std::unique_ptr<backend::net_context_t> open_real_network(bootstrap::bootstrap_t& bootstrap);

// The host of a real process over a network context it does not own; owns
// a global runtime the program left behind (deleted first, while the
// network still exists).
class real_process_host_t final : public host_t {
 public:
  explicit real_process_host_t(backend::net_context_t& context) : context_(context) {}
  ~real_process_host_t() override;
  real_process_host_t(const real_process_host_t&) = delete;
  real_process_host_t& operator=(const real_process_host_t&) = delete;

  backend::net_context_t& net_context() override { return context_; }
  bool simulated() const override { return false; }
  runtime_impl_t*& g_runtime_slot() override { return g_runtime_; }
  // Yields the CPU once: the peers may share this machine.
  void idle(const char* what) override;
  // Yields the CPU once (sched_yield), as idle() does.
  void yield_when_idle() override;
  unsigned& dispatch_depth() override;  // per OS thread

 private:
  backend::net_context_t& context_;
  runtime_impl_t* g_runtime_ = nullptr;
};

}  // namespace lci::detail
