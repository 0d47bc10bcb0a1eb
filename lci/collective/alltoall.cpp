// alltoall(): block j (size bytes) of rank i's sendbuf into block i of rank
// j's recvbuf. Two schedules (docs/design/collectives.md says which runs
// when):
//   direct    every message in one round (step 0);
//   pairwise  n - 1 rounds: in step k a rank sends to rank me + k and
//             receives from rank me - k, so each rank has one message in
//             each direction in flight.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "lci/api/lci_generated.hpp"
#include "lci/collective/collective.hpp"
#include "lci/runtime/runtime_impl.hpp"

namespace lci {

namespace {

using detail::collective::round_t;
using detail::collective::schedule_t;

}  // namespace

bool detail::collective::alltoall_in_one_round(std::size_t size) {
  return size <= short_bytes_max;
}

void alltoall_x::call_impl(const void* sendbuf, void* recvbuf, size_t size, device_t device,
                           endpoint_t endpoint, matching_engine_t matching_engine, comp_t comp,
                           comp_semantic_t comp_semantic, runtime_t runtime) const {
  const detail::collective::call_t call = detail::collective::resolve_call(
      "alltoall", runtime, device, endpoint, matching_engine, comp, comp_semantic);
  schedule_t schedule(call.runtime->rank_me(), call.runtime->rank_n(), 0, nullptr);
  const int rank_n = schedule.rank_n();
  const int rank_me = schedule.rank_me();
  const char* const source = static_cast<const char*>(sendbuf);
  char* const target = static_cast<char*>(recvbuf);
  const auto block = [size](int rank) { return static_cast<std::size_t>(rank) * size; };
  detail::collective::check_buffers("alltoall", sendbuf, block(rank_n), recvbuf, block(rank_n),
                                    nullptr);
  if (size != 0) {
    std::memcpy(target + block(rank_me), source + block(rank_me), size);
    const bool direct = detail::collective::alltoall_in_one_round(size);
    if (!direct) detail::collective::check_steps(static_cast<std::size_t>(rank_n), "alltoall");
    round_t* round = direct ? &schedule.add_round() : nullptr;
    for (int k = 1; k < rank_n; ++k) {
      if (!direct) round = &schedule.add_round();
      const int target_rank = (rank_me + k) % rank_n;
      const int source_rank = (rank_me - k + rank_n) % rank_n;
      const auto step = static_cast<std::uint32_t>(direct ? 0 : k);
      schedule.send(*round, target_rank, source + block(target_rank), size, step);
      schedule.recv(*round, source_rank, target + block(source_rank), size, step);
    }
  }
  detail::collective::run(call, std::move(schedule));
}

}  // namespace lci
