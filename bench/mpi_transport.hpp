// The MPI side of the message-rate and bandwidth benchmarks: a transport_t
// (ofi_bench.hpp) whose messages are MPI point-to-point, so the same driver
// and exchange run over LCI and over any MPI (bench/compare_upstream.sh,
// bench/run_all.sh). Built outside Bazel with an MPI compiler wrapper
// (mpicxx.openmpi, mpicxx.mpich: bench/build_programs.sh) and started by
// that MPI's launcher.
//
//   Every message is MPI_Isend with the thread's index as the tag, received
//   by an MPI_Irecv posted in expect() into its own slot (MPI has no active
//   messages: like the raw baseline, it has one exchange and accepts either
//   --op name for it; the report repeats the name given). poll() is
//   MPI_Testsome over the posted receives and the sends in flight.
//   --devices dedicated: each thread its own communicator (MPI_Comm_dup of
//   MPI_COMM_WORLD), the closest MPI has to a device; shared: all threads
//   use MPI_COMM_WORLD.
//   --threads > 1 needs MPI_THREAD_MULTIPLE; the transport fails (exit 1)
//   when the library does not provide it.
// Every arrival's size and source are checked.
//
// Thread safety, blocking, ownership: as transport_t. MPI is initialised by
// make_mpi_transport() and finalised when the transport is destroyed.
#pragma once

#include <memory>

#include "bench/ofi_bench.hpp"

namespace lci::bench {

std::unique_ptr<transport_t> make_mpi_transport(const options_t& options);

}  // namespace lci::bench
