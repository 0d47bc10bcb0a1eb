// The collective latency benchmark over MPI (collective_latency.hpp): the
// same operations as MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Allreduce,
// MPI_Reduce_scatter_block, MPI_Allgather and MPI_Alltoall on
// MPI_COMM_WORLD (uint64 items, MPI_SUM), algorithms the MPI's own choice.
// Built with an MPI compiler wrapper (bench/build_programs.sh --mpi) and
// started by that MPI's launcher:
//   mpirun.openmpi --allow-run-as-root --oversubscribe -np 4 DIR/collective_latency
#include <mpi.h>

#include <memory>

#include "bench/collective_latency.hpp"
#include "bench/mpi_check.hpp"

namespace lci::bench {

namespace {

int as_int(std::size_t count) { return static_cast<int>(count); }

class mpi_collectives_t final : public collectives_t {
 public:
  mpi_collectives_t() {
    check_mpi(MPI_Init(nullptr, nullptr), "MPI_Init");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_me_);
    MPI_Comm_size(MPI_COMM_WORLD, &rank_n_);
  }
  ~mpi_collectives_t() override { MPI_Finalize(); }

  const char* name() const override { return "mpi"; }

  void barrier() override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  void broadcast(std::uint64_t* buffer, std::size_t count, int root) override {
    check_mpi(MPI_Bcast(buffer, as_int(count), MPI_UINT64_T, root, MPI_COMM_WORLD), "MPI_Bcast");
  }
  void reduce(const std::uint64_t* send, std::uint64_t* recv, std::size_t count,
              int root) override {
    check_mpi(MPI_Reduce(send, recv, as_int(count), MPI_UINT64_T, MPI_SUM, root, MPI_COMM_WORLD),
              "MPI_Reduce");
  }
  void allreduce(const std::uint64_t* send, std::uint64_t* recv, std::size_t count) override {
    check_mpi(MPI_Allreduce(send, recv, as_int(count), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
  }
  void reduce_scatter(const std::uint64_t* send, std::uint64_t* recv,
                      std::size_t count) override {
    check_mpi(MPI_Reduce_scatter_block(send, recv, as_int(count), MPI_UINT64_T, MPI_SUM,
                                       MPI_COMM_WORLD),
              "MPI_Reduce_scatter_block");
  }
  void allgather(const std::uint64_t* send, std::uint64_t* recv, std::size_t count) override {
    check_mpi(MPI_Allgather(send, as_int(count), MPI_UINT64_T, recv, as_int(count), MPI_UINT64_T,
                            MPI_COMM_WORLD),
              "MPI_Allgather");
  }
  void alltoall(const std::uint64_t* send, std::uint64_t* recv, std::size_t count) override {
    check_mpi(MPI_Alltoall(send, as_int(count), MPI_UINT64_T, recv, as_int(count), MPI_UINT64_T,
                           MPI_COMM_WORLD),
              "MPI_Alltoall");
  }

  double max_over_ranks(double value) override {
    double result = value;
    check_mpi(MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD),
              "MPI_Allreduce");
    return result;
  }
};

}  // namespace

}  // namespace lci::bench

int main(int argc, char** argv) {
  return lci::bench::run_collective_latency(
      argc, argv, [] { return std::make_unique<lci::bench::mpi_collectives_t>(); });
}
