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
// Thread safety: process_host() and process_bootstrap() from any thread
//                (the first call creates the host; concurrent first calls
//                wait for it); the bootstrap they return is used by one
//                thread at a time. Members as host_t says; dispatch_depth()
//                is per OS thread. The threads of a rank that is a real
//                process need no binding (every thread of the process
//                belongs to its one host): util::run_threads starts them.
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
// A harness that runs rank bodies as real processes (sim/sim_process.hpp)
// uses this host too: its bodies' runtimes find it through current_host(),
// and its out-of-band collectives go through process_bootstrap().
#pragma once

#include "lci/bootstrap/bootstrap.hpp"
#include "lci/runtime/host.hpp"

namespace lci::detail {

// This process's host, created on first use; throws std::runtime_error when
// no real network backend is compiled in, or when opening the bootstrap or
// the network fails (the message names what is missing).
host_t& process_host();

// The bootstrap process_host()'s network was opened over (creating the host
// as process_host() does): the job's rank, rank count and out-of-band
// exchange. Not thread-safe (bootstrap.hpp): one caller at a time, and not
// while a runtime of this process allocates a device.
bootstrap::bootstrap_t& process_bootstrap();

}  // namespace lci::detail
