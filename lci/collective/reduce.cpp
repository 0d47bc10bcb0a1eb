// The reductions: reduce(), reduce_scatter() and allreduce(). op must be
// associative and commutative (the schedules combine contributions in
// different orders on different ranks) and may write its target over
// either operand (the schedules reduce in place).
//
// Schedules (docs/design/collectives.md says which runs when):
//   binomial reduce     (reduce; reduce_scatter tree) in relative ranks, a
//                       rank receives the partial result of rank + 2^k
//                       from the lowest k up, then sends its own to the
//                       rank that clears its lowest set bit; step k.
//   direct              (reduce_scatter, allreduce) every rank sends every
//                       peer what it needs in one round (step 0) and
//                       reduces what it received in rank order.
//   recursive doubling  (allreduce tree) with Rabenseifner's fold for a
//                       rank count that is not a power of two: the first
//                       2r ranks (r = n - 2^floor(log2 n)) pair up, odd
//                       ranks take their even neighbour's data (step 0) and
//                       stand for both; 2^m ranks exchange and reduce with
//                       the partner that differs in bit k (step k + 1);
//                       odd ranks hand the result back (step m + 1).
//   ring                (reduce_scatter, allreduce) in n - 1 steps each
//                       rank sends a block's partial result to rank + 1 and
//                       reduces the block it gets from rank - 1; allreduce
//                       then circulates the reduced blocks in n - 1 more
//                       steps (steps n - 1 ...).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "lci/api/lci_generated.hpp"
#include "lci/collective/collective.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/assert.hpp"

namespace lci {

namespace {

using detail::collective::round_t;
using detail::collective::schedule_t;

std::uint32_t log2_floor(int value) {
  LCI_ASSERT(value >= 1, "log2 of a non-positive number");
  return 31 - static_cast<std::uint32_t>(__builtin_clz(static_cast<unsigned>(value)));
}

// Steps a binomial tree over rank_n ranks takes: ceil(log2 n).
std::uint32_t binomial_steps(int rank_n) {
  return rank_n == 1 ? 0 : log2_floor(rank_n - 1) + 1;
}

void check_op(reduce_op_t op, std::size_t size_bytes) {
  if (op == nullptr && size_bytes != 0) throw std::invalid_argument("lci: reduction op is null");
}

// Reduces every rank's `accumulator` (size_bytes) into root's; the others'
// accumulators are scratch afterwards. Steps 0 .. binomial_steps(n) - 1.
void add_binomial_reduce(schedule_t& schedule, void* accumulator, std::size_t size_bytes,
                         int root) {
  const int rank_n = schedule.rank_n();
  const int relative = (schedule.rank_me() - root + rank_n) % rank_n;
  void* incoming = schedule.scratch(size_bytes);
  for (int distance = 1; distance < rank_n; distance *= 2) {
    const std::uint32_t step = log2_floor(distance);
    round_t& round = schedule.add_round();
    if ((relative & distance) != 0) {
      schedule.send(round, (relative - distance + root) % rank_n, accumulator, size_bytes, step);
      return;
    }
    if (relative + distance >= rank_n) continue;
    schedule.recv(round, (relative + distance + root) % rank_n, incoming, size_bytes, step);
    schedule.reduce(round, accumulator, incoming, accumulator, size_bytes);
  }
}

// A block of a vector of `count` items cut into rank_n near-equal blocks.
struct block_t {
  std::size_t offset_bytes;
  std::size_t size_bytes;
};

block_t block_of(std::size_t count, std::size_t item_size, int rank_n, int index) {
  const std::size_t n = static_cast<std::size_t>(rank_n);
  const std::size_t i = static_cast<std::size_t>(index);
  const std::size_t begin = count * i / n;
  return {begin * item_size, (count * (i + 1) / n - begin) * item_size};
}

// ---- allreduce ----

void add_allreduce_direct(schedule_t& schedule, const void* own, void* result,
                          std::size_t size_bytes) {
  const int rank_n = schedule.rank_n();
  const int rank_me = schedule.rank_me();
  round_t& round = schedule.add_round();
  std::vector<const void*> contributions(static_cast<std::size_t>(rank_n), own);
  for (int rank = 0; rank < rank_n; ++rank) {
    if (rank == rank_me) continue;
    void* incoming = schedule.scratch(size_bytes);
    contributions[static_cast<std::size_t>(rank)] = incoming;
    schedule.send(round, rank, own, size_bytes, 0);
    schedule.recv(round, rank, incoming, size_bytes, 0);
  }
  schedule.copy(round, contributions[0], result, size_bytes);
  for (int rank = 1; rank < rank_n; ++rank) {
    schedule.reduce(round, result, contributions[static_cast<std::size_t>(rank)], result,
                    size_bytes);
  }
}

// The rank a recursive-doubling participant `index` is (see the top).
int folded_rank(int index, int remainder) {
  return index < remainder ? 2 * index + 1 : index + remainder;
}

void add_allreduce_doubling(schedule_t& schedule, void* result, std::size_t size_bytes) {
  const int rank_n = schedule.rank_n();
  const int rank_me = schedule.rank_me();
  const int power = 1 << log2_floor(rank_n);
  const int remainder = rank_n - power;
  const std::uint32_t unfold_step = log2_floor(power) + 1;
  void* incoming = schedule.scratch(size_bytes);
  if (rank_me < 2 * remainder && rank_me % 2 == 0) {
    schedule.send(schedule.add_round(), rank_me + 1, result, size_bytes, 0);
    schedule.recv(schedule.add_round(), rank_me + 1, result, size_bytes, unfold_step);
    return;
  }
  if (rank_me < 2 * remainder) {
    round_t& round = schedule.add_round();
    schedule.recv(round, rank_me - 1, incoming, size_bytes, 0);
    schedule.reduce(round, incoming, result, result, size_bytes);
  }
  const int index = rank_me < 2 * remainder ? rank_me / 2 : rank_me - remainder;
  for (int mask = 1; mask < power; mask *= 2) {
    const int partner = folded_rank(index ^ mask, remainder);
    const std::uint32_t step = log2_floor(mask) + 1;
    round_t& round = schedule.add_round();
    schedule.send(round, partner, result, size_bytes, step);
    schedule.recv(round, partner, incoming, size_bytes, step);
    // Lower ranks' data on the left, as a sequential reduction has it.
    if (partner < rank_me) {
      schedule.reduce(round, incoming, result, result, size_bytes);
    } else {
      schedule.reduce(round, result, incoming, result, size_bytes);
    }
  }
  if (rank_me < 2 * remainder) {
    schedule.send(schedule.add_round(), rank_me - 1, result, size_bytes, unfold_step);
  }
}

void add_allreduce_ring(schedule_t& schedule, void* result, std::size_t count) {
  const int rank_n = schedule.rank_n();
  const int rank_me = schedule.rank_me();
  const std::size_t item_size = schedule.item_size();
  const int right = (rank_me + 1) % rank_n;
  const int left = (rank_me - 1 + rank_n) % rank_n;
  char* const data = static_cast<char*>(result);
  void* incoming = schedule.scratch(block_of(count, item_size, rank_n, rank_n - 1).size_bytes);
  const auto index = [rank_n](int i) { return ((i % rank_n) + rank_n) % rank_n; };
  // Reduce-scatter: after step s, block me - s - 1 holds s + 2 ranks' data;
  // rank me ends owning block me + 1.
  for (int s = 0; s < rank_n - 1; ++s) {
    const block_t out = block_of(count, item_size, rank_n, index(rank_me - s));
    const block_t in = block_of(count, item_size, rank_n, index(rank_me - s - 1));
    round_t& round = schedule.add_round();
    const auto step = static_cast<std::uint32_t>(s);
    schedule.send(round, right, data + out.offset_bytes, out.size_bytes, step);
    schedule.recv(round, left, incoming, in.size_bytes, step);
    schedule.reduce(round, data + in.offset_bytes, incoming, data + in.offset_bytes,
                    in.size_bytes);
  }
  // Allgather: the reduced blocks go around the ring, received in place.
  for (int s = 0; s < rank_n - 1; ++s) {
    const block_t out = block_of(count, item_size, rank_n, index(rank_me + 1 - s));
    const block_t in = block_of(count, item_size, rank_n, index(rank_me - s));
    round_t& round = schedule.add_round();
    const auto step = static_cast<std::uint32_t>(rank_n - 1 + s);
    schedule.send(round, right, data + out.offset_bytes, out.size_bytes, step);
    schedule.recv(round, left, data + in.offset_bytes, in.size_bytes, step);
  }
}

// ---- reduce_scatter ----

void add_reduce_scatter_direct(schedule_t& schedule, const void* sendbuf, void* recvbuf,
                               std::size_t block_bytes) {
  const int rank_n = schedule.rank_n();
  const int rank_me = schedule.rank_me();
  const char* const blocks = static_cast<const char*>(sendbuf);
  const std::size_t own_offset = static_cast<std::size_t>(rank_me) * block_bytes;
  round_t& round = schedule.add_round();
  std::vector<const void*> incoming(static_cast<std::size_t>(rank_n), nullptr);
  for (int rank = 0; rank < rank_n; ++rank) {
    if (rank == rank_me) continue;
    void* block = schedule.scratch(block_bytes);
    incoming[static_cast<std::size_t>(rank)] = block;
    schedule.send(round, rank, blocks + static_cast<std::size_t>(rank) * block_bytes, block_bytes,
                  0);
    schedule.recv(round, rank, block, block_bytes, 0);
  }
  // The own contribution first: in place, recvbuf is that block of sendbuf
  // (the one overlap reduce_scatter_x::call_impl lets through), and a
  // reduction into recvbuf before it was read would overwrite it.
  schedule.copy(round, blocks + own_offset, recvbuf, block_bytes);
  for (int rank = 0; rank < rank_n; ++rank) {
    if (rank == rank_me) continue;
    schedule.reduce(round, recvbuf, incoming[static_cast<std::size_t>(rank)], recvbuf,
                    block_bytes);
  }
}

void add_reduce_scatter_tree(schedule_t& schedule, const void* sendbuf, void* recvbuf,
                             std::size_t block_bytes) {
  const int rank_n = schedule.rank_n();
  const std::size_t total_bytes = block_bytes * static_cast<std::size_t>(rank_n);
  char* const accumulator = static_cast<char*>(schedule.scratch(total_bytes));
  std::memcpy(accumulator, sendbuf, total_bytes);
  add_binomial_reduce(schedule, accumulator, total_bytes, 0);
  // Rank 0 holds the whole result: block r to rank r.
  const std::uint32_t step = binomial_steps(rank_n);
  round_t& round = schedule.add_round();
  if (schedule.rank_me() != 0) {
    schedule.recv(round, 0, recvbuf, block_bytes, step);
    return;
  }
  for (int rank = 1; rank < rank_n; ++rank) {
    schedule.send(round, rank, accumulator + static_cast<std::size_t>(rank) * block_bytes,
                  block_bytes, step);
  }
  schedule.copy(round, accumulator, recvbuf, block_bytes);
}

// Rank me ends owning block me: at step s it sends the partial result of
// block me - s - 1 (its own contribution at s = 0) and reduces block
// me - s - 2 from rank me - 1 with its own contribution.
void add_reduce_scatter_ring(schedule_t& schedule, const void* sendbuf, void* recvbuf,
                             std::size_t block_bytes) {
  const int rank_n = schedule.rank_n();
  const int rank_me = schedule.rank_me();
  const int right = (rank_me + 1) % rank_n;
  const int left = (rank_me - 1 + rank_n) % rank_n;
  const char* const blocks = static_cast<const char*>(sendbuf);
  const auto own = [&](int i) {
    return blocks + static_cast<std::size_t>(((i % rank_n) + rank_n) % rank_n) * block_bytes;
  };
  void* incoming = schedule.scratch(block_bytes);
  void* partials[2] = {schedule.scratch(block_bytes), schedule.scratch(block_bytes)};
  const void* outgoing = own(rank_me - 1);
  for (int s = 0; s < rank_n - 1; ++s) {
    round_t& round = schedule.add_round();
    const auto step = static_cast<std::uint32_t>(s);
    schedule.send(round, right, outgoing, block_bytes, step);
    schedule.recv(round, left, incoming, block_bytes, step);
    void* target = s == rank_n - 2 ? recvbuf : partials[s % 2];
    schedule.reduce(round, incoming, own(rank_me - s - 2), target, block_bytes);
    outgoing = target;
  }
}

reduce_scatter_algorithm_t choose_reduce_scatter(reduce_scatter_algorithm_t algorithm,
                                                 std::size_t block_bytes, int rank_n) {
  if (algorithm != reduce_scatter_algorithm_t::none) return algorithm;
  const bool ring_fits = static_cast<std::size_t>(rank_n - 1) <= detail::collective::steps_max;
  if (block_bytes <= detail::collective::short_bytes_max || rank_n <= 2 || !ring_fits) {
    return reduce_scatter_algorithm_t::direct;
  }
  return reduce_scatter_algorithm_t::ring;
}

}  // namespace

allreduce_algorithm_t detail::collective::choose_allreduce(allreduce_algorithm_t algorithm,
                                                           std::size_t count,
                                                           std::size_t size_bytes, int rank_n) {
  if (algorithm != allreduce_algorithm_t::none) return algorithm;
  const bool ring_fits = 2 * static_cast<std::size_t>(rank_n - 1) <= steps_max;
  const bool short_message = size_bytes <= short_bytes_max;
  if (short_message || count < static_cast<std::size_t>(rank_n) || !ring_fits) {
    return allreduce_algorithm_t::tree;
  }
  return allreduce_algorithm_t::ring;
}

void reduce_x::call_impl(const void* sendbuf, void* recvbuf, size_t count, size_t item_size,
                         reduce_op_t op, int root, device_t device, endpoint_t endpoint,
                         matching_engine_t matching_engine, runtime_t runtime) const {
  const detail::collective::call_t call =
      detail::collective::resolve_call("reduce", runtime, device, endpoint, matching_engine, {});
  call.runtime->check_rank(root, "root");
  const std::size_t size_bytes = count * item_size;
  check_op(op, size_bytes);
  schedule_t schedule(call.runtime->rank_me(), call.runtime->rank_n(), item_size, op);
  if (size_bytes != 0) {
    // Non-roots' recvbuf means nothing (it may be null): they reduce in scratch.
    void* accumulator = schedule.rank_me() == root ? recvbuf : schedule.scratch(size_bytes);
    if (accumulator != sendbuf) std::memcpy(accumulator, sendbuf, size_bytes);
    add_binomial_reduce(schedule, accumulator, size_bytes, root);
  }
  detail::collective::run(call, std::move(schedule));
}

void reduce_scatter_x::call_impl(const void* sendbuf, void* recvbuf, size_t recvcount,
                                 size_t item_size, reduce_op_t op, device_t device,
                                 endpoint_t endpoint, matching_engine_t matching_engine,
                                 comp_t comp, reduce_scatter_algorithm_t algorithm,
                                 int ring_nsteps, runtime_t runtime) const {
  (void)ring_nsteps;  // upstream's option; this ring always takes rank_n - 1 steps
  const detail::collective::call_t call = detail::collective::resolve_call(
      "reduce_scatter", runtime, device, endpoint, matching_engine, comp);
  const std::size_t block_bytes = recvcount * item_size;
  check_op(op, block_bytes);
  schedule_t schedule(call.runtime->rank_me(), call.runtime->rank_n(), item_size, op);
  const int rank_n = schedule.rank_n();
  const char* const own_block = static_cast<const char*>(sendbuf) +
                                static_cast<std::size_t>(schedule.rank_me()) * block_bytes;
  detail::collective::check_buffers("reduce_scatter", sendbuf,
                                    block_bytes * static_cast<std::size_t>(rank_n), recvbuf,
                                    block_bytes, own_block);
  if (block_bytes != 0 && rank_n == 1) {
    schedule.copy(schedule.add_round(), sendbuf, recvbuf, block_bytes);
  } else if (block_bytes != 0) {
    switch (choose_reduce_scatter(algorithm, block_bytes, rank_n)) {
      case reduce_scatter_algorithm_t::tree:
        add_reduce_scatter_tree(schedule, sendbuf, recvbuf, block_bytes);
        break;
      case reduce_scatter_algorithm_t::ring:
        detail::collective::check_steps(static_cast<std::size_t>(rank_n - 1),
                                        "reduce_scatter (ring)");
        add_reduce_scatter_ring(schedule, sendbuf, recvbuf, block_bytes);
        break;
      case reduce_scatter_algorithm_t::direct:
      case reduce_scatter_algorithm_t::none:
        add_reduce_scatter_direct(schedule, sendbuf, recvbuf, block_bytes);
        break;
    }
  }
  detail::collective::run(call, std::move(schedule));
}

void allreduce_x::call_impl(const void* sendbuf, void* recvbuf, size_t count, size_t item_size,
                            reduce_op_t op, device_t device, endpoint_t endpoint,
                            matching_engine_t matching_engine, comp_t comp,
                            allreduce_algorithm_t algorithm, int ring_nsteps,
                            runtime_t runtime) const {
  (void)ring_nsteps;  // upstream's option; this ring always takes 2 (rank_n - 1) steps
  const detail::collective::call_t call = detail::collective::resolve_call(
      "allreduce", runtime, device, endpoint, matching_engine, comp);
  const std::size_t size_bytes = count * item_size;
  check_op(op, size_bytes);
  schedule_t schedule(call.runtime->rank_me(), call.runtime->rank_n(), item_size, op);
  const int rank_n = schedule.rank_n();
  if (size_bytes != 0) {
    const allreduce_algorithm_t chosen =
        detail::collective::choose_allreduce(algorithm, count, size_bytes, rank_n);
    if (chosen == allreduce_algorithm_t::direct) {
      // In place: the own contribution must outlive the result's first copy.
      const void* own = sendbuf;
      if (sendbuf == recvbuf) own = std::memcpy(schedule.scratch(size_bytes), sendbuf, size_bytes);
      add_allreduce_direct(schedule, own, recvbuf, size_bytes);
    } else {
      if (recvbuf != sendbuf) std::memcpy(recvbuf, sendbuf, size_bytes);
      if (chosen == allreduce_algorithm_t::ring) {
        detail::collective::check_steps(2 * static_cast<std::size_t>(rank_n - 1),
                                        "allreduce (ring)");
        add_allreduce_ring(schedule, recvbuf, count);
      } else {
        add_allreduce_doubling(schedule, recvbuf, size_bytes);
      }
    }
  }
  detail::collective::run(call, std::move(schedule));
}

}  // namespace lci
