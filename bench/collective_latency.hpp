// The collective latency benchmark: the mean time of one call of each
// collective, by size, as real processes, over LCI
// (collective_latency_lci.cpp: the blocking calls of lci.hpp, as a program
// calls them) and over MPI (collective_latency_mpi.cpp), so that one driver
// times both the same way (bench/compare_collectives.sh,
// docs/bench_collectives.md).
//
// Per operation and size: one call whose result every rank checks (inputs
// from a pattern of rank, index and size; outputs poisoned before), then
// --warmup calls, then --iterations calls timed together, and the output of
// the last timed call is checked again (outputs are poisoned before the
// warm-up). A wrong result ends the program (exit 1) before any number is
// printed for that size. The latency reported is each rank's mean per call,
// the maximum over the ranks. Operations and what "size" is:
//
//   barrier         no data; one row, size 0
//   broadcast       the buffer, from rank 0
//   reduce          each rank's vector, summed (uint64, wrapping) at rank 0
//   allreduce       each rank's vector, summed into every rank's
//   reduce_scatter  the block each rank receives (each sends n blocks)
//   allgather       each rank's block (each receives n blocks)
//   alltoall        one block (each rank sends and receives n blocks)
//
// Data is 8-byte items, so sizes are multiples of 8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace lci::bench {

// One system's collectives over all ranks of the job. Counts are of
// uint64 items; reductions are wrapping sums.
// Thread safety: one thread (the main thread) calls everything.
// Blocking:      every call is collective and returns when this rank's part
//                is complete (the blocking form of each collective).
// Ownership:     buffers stay the caller's; nothing is kept after a call.
// Allocation:    what the system under test allocates per call.
class collectives_t {
 public:
  virtual ~collectives_t() = default;
  int rank_me() const { return rank_me_; }
  int rank_n() const { return rank_n_; }
  // What the report calls it: "lci", "mpi".
  virtual const char* name() const = 0;

  virtual void barrier() = 0;
  virtual void broadcast(std::uint64_t* buffer, std::size_t count, int root) = 0;
  // recv matters at root only.
  virtual void reduce(const std::uint64_t* send, std::uint64_t* recv, std::size_t count,
                      int root) = 0;
  virtual void allreduce(const std::uint64_t* send, std::uint64_t* recv, std::size_t count) = 0;
  // send: rank_n() blocks of count; recv: one block.
  virtual void reduce_scatter(const std::uint64_t* send, std::uint64_t* recv,
                              std::size_t count) = 0;
  // send: one block of count; recv: rank_n() blocks.
  virtual void allgather(const std::uint64_t* send, std::uint64_t* recv, std::size_t count) = 0;
  // send, recv: rank_n() blocks of count.
  virtual void alltoall(const std::uint64_t* send, std::uint64_t* recv, std::size_t count) = 0;

  // The largest of every rank's value; for the report, outside the timing.
  virtual double max_over_ranks(double value) = 0;

 protected:
  // Set by the system's constructor once it knows them.
  int rank_me_ = 0;
  int rank_n_ = 0;
};

using collectives_factory_t = std::function<std::unique_ptr<collectives_t>()>;

// The whole program: parses argv, makes the system's collectives, measures,
// reports on rank 0. Returns the exit status: 0, or 2 for a bad command
// line; a wrong result or a failed call prints the reason on stderr and
// exits the process at once with status 1, without the system's (collective)
// teardown.
int run_collective_latency(int argc, char** argv, const collectives_factory_t& factory);

}  // namespace lci::bench
