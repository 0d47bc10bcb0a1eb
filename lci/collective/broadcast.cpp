// broadcast(): root's buffer into every rank's buffer. Three schedules
// (docs/design/collectives.md says which runs when):
//   direct  the root sends to every rank in one round;
//   tree    a binomial tree: in relative ranks (rank - root mod n) a rank
//           receives from the rank that clears its lowest set bit, then
//           sends to the ranks that add a lower power of two;
//   ring    a pipelined chain root -> root+1 -> ...: the buffer goes in
//           segments, and in round j a rank receives segment j while it
//           forwards segment j-1.
// Steps: the tree's edge of distance 2^k is step k; the ring's segment j
// is step j; direct uses step 0.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "lci/api/lci_generated.hpp"
#include "lci/collective/collective.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/assert.hpp"

namespace lci {

namespace {

using detail::collective::round_t;
using detail::collective::schedule_t;

// The ring's segment when ring_nsteps does not say.
constexpr std::size_t ring_segment_bytes = std::size_t{64} << 10;

int absolute_rank(int relative, int root, int rank_n) { return (relative + root) % rank_n; }

void add_direct(schedule_t& schedule, void* buffer, std::size_t size, int root) {
  const int rank_n = schedule.rank_n();
  round_t& round = schedule.add_round();
  if (schedule.rank_me() != root) {
    schedule.recv(round, root, buffer, size, 0);
    return;
  }
  for (int rank = 0; rank < rank_n; ++rank) {
    if (rank != root) schedule.send(round, rank, buffer, size, 0);
  }
}

void add_tree(schedule_t& schedule, void* buffer, std::size_t size, int root) {
  const int rank_n = schedule.rank_n();
  const int relative = (schedule.rank_me() - root + rank_n) % rank_n;
  // The root's children: distances below the first power of two >= n.
  int distance = 1;
  while (distance < rank_n) distance *= 2;
  if (relative != 0) {
    distance = relative & -relative;  // the lowest set bit: the edge from the parent
    round_t& round = schedule.add_round();
    schedule.recv(round, absolute_rank(relative - distance, root, rank_n), buffer, size,
                  static_cast<std::uint32_t>(__builtin_ctz(static_cast<unsigned>(distance))));
  }
  round_t& round = schedule.add_round();
  for (int child = distance / 2; child >= 1; child /= 2) {
    if (relative + child >= rank_n) continue;
    schedule.send(round, absolute_rank(relative + child, root, rank_n), buffer, size,
                  static_cast<std::uint32_t>(__builtin_ctz(static_cast<unsigned>(child))));
  }
}

std::size_t ring_segments(std::size_t size, int ring_nsteps) {
  std::size_t segments = ring_nsteps > 0 ? static_cast<std::size_t>(ring_nsteps)
                                         : (size + ring_segment_bytes - 1) / ring_segment_bytes;
  segments = std::min(std::max<std::size_t>(segments, 1), size);
  detail::collective::check_steps(segments, "broadcast (ring)");
  return segments;
}

void add_ring(schedule_t& schedule, void* buffer, std::size_t size, int root, int ring_nsteps) {
  const int rank_n = schedule.rank_n();
  const int relative = (schedule.rank_me() - root + rank_n) % rank_n;
  const int previous = absolute_rank(relative - 1 + rank_n, root, rank_n);
  const int next = absolute_rank(relative + 1, root, rank_n);
  const bool receives = relative != 0;
  const bool sends = relative != rank_n - 1;
  const std::size_t segments = ring_segments(size, ring_nsteps);
  const auto segment = [&](std::size_t index, std::size_t* bytes) {
    const std::size_t begin = size * index / segments;
    *bytes = size * (index + 1) / segments - begin;
    return static_cast<char*>(buffer) + begin;
  };
  // Round j: receive segment j, forward segment j - 1 (the root has no
  // segment to wait for, so it sends segment j in round j).
  for (std::size_t j = 0; j <= segments; ++j) {
    round_t& round = schedule.add_round();
    std::size_t bytes = 0;
    if (receives && j < segments) {
      char* data = segment(j, &bytes);
      schedule.recv(round, previous, data, bytes, static_cast<std::uint32_t>(j));
    }
    const std::size_t forwarded = receives ? j - 1 : j;
    if (sends && (receives ? j >= 1 : j < segments)) {
      char* data = segment(forwarded, &bytes);
      schedule.send(round, next, data, bytes, static_cast<std::uint32_t>(forwarded));
    }
  }
}

}  // namespace

broadcast_algorithm_t detail::collective::choose_broadcast(broadcast_algorithm_t algorithm,
                                                           std::size_t size, int rank_n) {
  if (algorithm != broadcast_algorithm_t::none) return algorithm;
  if (rank_n > 3 && size >= ring_bytes_min) return broadcast_algorithm_t::ring;
  return broadcast_algorithm_t::tree;
}

void broadcast_x::call_impl(void* buffer, size_t size, int root, device_t device,
                            endpoint_t endpoint, matching_engine_t matching_engine, comp_t comp,
                            broadcast_algorithm_t algorithm, int ring_nsteps,
                            runtime_t runtime) const {
  const detail::collective::call_t call = detail::collective::resolve_call(
      "broadcast", runtime, device, endpoint, matching_engine, comp);
  call.runtime->check_rank(root, "root");
  schedule_t schedule(call.runtime->rank_me(), call.runtime->rank_n(), 0, nullptr);
  if (size != 0 && schedule.rank_n() > 1) {
    switch (detail::collective::choose_broadcast(algorithm, size, schedule.rank_n())) {
      case broadcast_algorithm_t::direct:
        add_direct(schedule, buffer, size, root);
        break;
      case broadcast_algorithm_t::ring:
        add_ring(schedule, buffer, size, root, ring_nsteps);
        break;
      case broadcast_algorithm_t::tree:
      case broadcast_algorithm_t::none:
        add_tree(schedule, buffer, size, root);
        break;
    }
  }
  detail::collective::run(call, std::move(schedule));
}

}  // namespace lci
