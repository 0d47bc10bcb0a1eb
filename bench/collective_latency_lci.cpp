// The collective latency benchmark over LCI (collective_latency.hpp): the
// blocking collectives of lci.hpp, called as a program calls them, on the
// default device of the global runtime; their algorithms are the runtime's
// choice (docs/design/collectives.md, "Which algorithm, when").
//   tools/lcirun -n 4 bazel-bin/bench/collective_latency_lci [--help]
// Uses nothing but the public API, so bench/build_programs.sh builds it
// against an installed LCI as well.
#include <algorithm>
#include <cstdint>
#include <memory>

#include "bench/collective_latency.hpp"
#include "lci.hpp"

namespace lci::bench {

namespace {

constexpr std::size_t item_bytes = sizeof(std::uint64_t);

void sum_op(const void* left, const void* right, void* dst, std::size_t n) {
  const auto* a = static_cast<const std::uint64_t*>(left);
  const auto* b = static_cast<const std::uint64_t*>(right);
  auto* out = static_cast<std::uint64_t*>(dst);
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];  // dst may be left or right
}

void max_op(const void* left, const void* right, void* dst, std::size_t n) {
  const auto* a = static_cast<const double*>(left);
  const auto* b = static_cast<const double*>(right);
  auto* out = static_cast<double*>(dst);
  for (std::size_t i = 0; i < n; ++i) out[i] = std::max(a[i], b[i]);
}

class lci_collectives_t final : public collectives_t {
 public:
  lci_collectives_t() {
    g_runtime_init();
    rank_me_ = get_rank_me();
    rank_n_ = get_rank_n();
  }
  ~lci_collectives_t() override { g_runtime_fina(); }

  const char* name() const override { return "lci"; }

  void barrier() override { lci::barrier(); }
  void broadcast(std::uint64_t* buffer, std::size_t count, int root) override {
    lci::broadcast(buffer, count * item_bytes, root);
  }
  void reduce(const std::uint64_t* send, std::uint64_t* recv, std::size_t count,
              int root) override {
    lci::reduce(send, recv, count, item_bytes, sum_op, root);
  }
  void allreduce(const std::uint64_t* send, std::uint64_t* recv, std::size_t count) override {
    lci::allreduce(send, recv, count, item_bytes, sum_op);
  }
  void reduce_scatter(const std::uint64_t* send, std::uint64_t* recv,
                      std::size_t count) override {
    lci::reduce_scatter(send, recv, count, item_bytes, sum_op);
  }
  void allgather(const std::uint64_t* send, std::uint64_t* recv, std::size_t count) override {
    lci::allgather(send, recv, count * item_bytes);
  }
  void alltoall(const std::uint64_t* send, std::uint64_t* recv, std::size_t count) override {
    lci::alltoall(send, recv, count * item_bytes);
  }

  double max_over_ranks(double value) override {
    double result = value;
    lci::allreduce(&value, &result, 1, sizeof(double), max_op);
    return result;
  }
};

}  // namespace

}  // namespace lci::bench

int main(int argc, char** argv) {
  return lci::bench::run_collective_latency(
      argc, argv, [] { return std::make_unique<lci::bench::lci_collectives_t>(); });
}
