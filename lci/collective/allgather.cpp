// allgather(): every rank's sendbuf (size bytes), in rank order, into every
// rank's recvbuf (rank_n * size bytes). Two schedules
// (docs/design/collectives.md says which runs when):
//   Bruck  ceil(log2 n) rounds on any rank count: a scratch vector holds
//          blocks me, me + 1, ...; in round k (distance 2^k) a rank sends
//          its first min(2^k, n - 2^k) blocks to rank me - 2^k and appends
//          as many from rank me + 2^k (step k); a final rotation puts the
//          blocks in rank order.
//   ring   n - 1 rounds: in step s a rank forwards block me - s to rank
//          me + 1 and receives block me - s - 1 from rank me - 1, in place.
#include <algorithm>
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

void add_bruck(schedule_t& schedule, const void* sendbuf, void* recvbuf, std::size_t size) {
  const int rank_n = schedule.rank_n();
  const int rank_me = schedule.rank_me();
  const std::size_t n = static_cast<std::size_t>(rank_n);
  char* const rotated = static_cast<char*>(schedule.scratch(n * size));
  std::memcpy(rotated, sendbuf, size);
  std::uint32_t step = 0;
  for (int distance = 1; distance < rank_n; distance *= 2, ++step) {
    const std::size_t blocks = static_cast<std::size_t>(std::min(distance, rank_n - distance));
    round_t& round = schedule.add_round();
    schedule.send(round, (rank_me - distance + rank_n) % rank_n, rotated, blocks * size, step);
    schedule.recv(round, (rank_me + distance) % rank_n,
                  rotated + static_cast<std::size_t>(distance) * size, blocks * size, step);
  }
  // rotated[i] is rank me + i's block: two copies put it at recvbuf[me + i].
  round_t& round = schedule.add_round();
  const std::size_t head = n - static_cast<std::size_t>(rank_me);
  char* const target = static_cast<char*>(recvbuf);
  schedule.copy(round, rotated, target + static_cast<std::size_t>(rank_me) * size, head * size);
  schedule.copy(round, rotated + head * size, target, static_cast<std::size_t>(rank_me) * size);
}

void add_ring(schedule_t& schedule, const void* sendbuf, void* recvbuf, std::size_t size) {
  const int rank_n = schedule.rank_n();
  const int rank_me = schedule.rank_me();
  char* const blocks = static_cast<char*>(recvbuf);
  const auto block = [&](int i) {
    return blocks + static_cast<std::size_t>(((i % rank_n) + rank_n) % rank_n) * size;
  };
  std::memmove(block(rank_me), sendbuf, size);
  for (int s = 0; s < rank_n - 1; ++s) {
    round_t& round = schedule.add_round();
    const auto step = static_cast<std::uint32_t>(s);
    schedule.send(round, (rank_me + 1) % rank_n, block(rank_me - s), size, step);
    schedule.recv(round, (rank_me - 1 + rank_n) % rank_n, block(rank_me - s - 1), size, step);
  }
}

}  // namespace

void allgather_x::call_impl(const void* sendbuf, void* recvbuf, size_t size, device_t device,
                            endpoint_t endpoint, matching_engine_t matching_engine,
                            runtime_t runtime) const {
  const detail::collective::call_t call =
      detail::collective::resolve_call("allgather", runtime, device, endpoint, matching_engine, {});
  schedule_t schedule(call.runtime->rank_me(), call.runtime->rank_n(), 0, nullptr);
  const std::size_t total_bytes = size * static_cast<std::size_t>(schedule.rank_n());
  const bool ring_fits =
      static_cast<std::size_t>(schedule.rank_n() - 1) <= detail::collective::steps_max;
  if (size == 0) {
    // Nothing to move.
  } else if (total_bytes <= detail::collective::short_bytes_max || !ring_fits) {
    add_bruck(schedule, sendbuf, recvbuf, size);
  } else {
    add_ring(schedule, sendbuf, recvbuf, size);
  }
  detail::collective::run(call, std::move(schedule));
}

}  // namespace lci
