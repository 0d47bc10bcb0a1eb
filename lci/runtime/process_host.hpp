// process_host_t: the host (host.hpp) of an LCI program that is a real
// process — one rank of a job started by a launcher (tools/lcirun, mpirun,
// srun: lci/bootstrap detects which), or a job of one when started alone.
// It opens the process's bootstrap and, over it, the network context of a
// real backend: libfabric (backends/ofi; provider from
// LCI_ATTR_OFI_PROVIDER_NAME, default the backend's first usable one).
//
// current_host() falls back to process_host() when no host lookup is
// installed, i.e. when no simulator runs in this process; the host is
// created on first use, once per process. A build without a real backend
// (no --config=ofi) has no process host: process_host() throws a
// std::runtime_error saying so.
//
// Thread safety: process_host() from any thread (the first call creates the
//                host; concurrent first calls wait for it). Members as
//                host_t says; dispatch_depth() is per OS thread.
// Blocking:      the first process_host() waits for every rank of the job
//                (bootstrap and network setup are collective); idle()
//                yields the CPU once and returns.
// Ownership:     the host owns its bootstrap and network context, and a
//                global runtime the program left behind (finalized at
//                process exit, before the network closes).
// Allocation:    at creation.
#pragma once

#include "backends/backend.hpp"
#include "lci/runtime/host.hpp"

namespace lci::detail {

// This process's host, created on first use; throws std::runtime_error when
// no real network backend is compiled in, or when opening the bootstrap or
// the network fails (the message names what is missing).
host_t& process_host();

}  // namespace lci::detail
