// The collectives (lci/collective/) over the simulated network: every
// collective x rank counts x sizes (0, a few items, one past the eager
// limit) x blocking and non-blocking x every forced algorithm
// (reduce_scatter in place when blocking), each result checked against a
// sequential reference computed locally from every rank's input (a function
// of rank, index and call); then faults, seeds, refused overlapping buffers,
// and collectives running concurrently on two devices of one runtime.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using item_t = std::uint64_t;

// Wrapping sum: associative and commutative, exact in any order.
void sum_op(const void* left, const void* right, void* target, std::size_t n) {
  const auto* a = static_cast<const item_t*>(left);
  const auto* b = static_cast<const item_t*>(right);
  auto* c = static_cast<item_t*>(target);
  for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

// Rank `rank`'s item `index` in call `call` (every rank can compute any
// rank's input, hence the reference).
item_t input_of(int rank, std::size_t index, std::uint64_t call) {
  return call * 0x9e3779b97f4a7c15ull + static_cast<item_t>(rank) * 1000003u + index * 7u + 1u;
}

std::vector<item_t> inputs(int rank, std::size_t count, std::uint64_t call) {
  std::vector<item_t> items(count);
  for (std::size_t i = 0; i < count; ++i) items[i] = input_of(rank, i, call);
  return items;
}

std::vector<item_t> sum_of_all(int rank_n, std::size_t count, std::uint64_t call) {
  std::vector<item_t> sum(count, 0);
  for (int rank = 0; rank < rank_n; ++rank) {
    for (std::size_t i = 0; i < count; ++i) sum[i] += input_of(rank, i, call);
  }
  return sum;
}

constexpr item_t poison = 0xdeadbeefdeadbeefull;

// Blocking when comp is empty; else progresses `device` until comp is done.
void finish(lci::comp_t comp, lci::device_t device) {
  if (comp.is_empty()) return;
  lci::status_t status;
  while (!lci::sync_test(comp, &status)) (void)lci::progress_x().device(device)();
  EXPECT_EQ(status.error.errorcode, lci::errorcode_t::done);
}

// One test context per rank: the call counter (equal on every rank, since
// every rank makes the same calls) and where to run.
struct context_t {
  int rank_me;
  int rank_n;
  lci::device_t device;  // empty: the default device
  std::uint64_t call = 0;
  std::string where() const {
    return "rank " + std::to_string(rank_me) + "/" + std::to_string(rank_n) + " call " +
           std::to_string(call);
  }
};

lci::comp_t maybe_sync(bool blocking) { return blocking ? lci::comp_t{} : lci::alloc_sync(); }
void free_maybe(lci::comp_t comp) {
  if (!comp.is_empty()) lci::free_comp(&comp);
}

void check_allreduce(context_t& c, std::size_t count, lci::allreduce_algorithm_t algorithm,
                     bool blocking, bool in_place) {
  const std::uint64_t call = ++c.call;
  std::vector<item_t> send = inputs(c.rank_me, count, call);
  std::vector<item_t> recv(count, poison);
  item_t* target = in_place ? send.data() : recv.data();
  lci::comp_t comp = maybe_sync(blocking);
  lci::allreduce_x(send.data(), target, count, sizeof(item_t), sum_op)
      .algorithm(algorithm)
      .device(c.device)
      .comp(comp)();
  finish(comp, c.device);
  free_maybe(comp);
  EXPECT_EQ(std::vector<item_t>(target, target + count), sum_of_all(c.rank_n, count, call))
      << "allreduce " << lci::get_allreduce_algorithm_str(algorithm) << " count " << count
      << " in_place " << in_place << " " << c.where();
}

void check_broadcast(context_t& c, std::size_t count, lci::broadcast_algorithm_t algorithm,
                     bool blocking, int ring_nsteps) {
  const std::uint64_t call = ++c.call;
  const int root = static_cast<int>(call % static_cast<std::uint64_t>(c.rank_n));
  std::vector<item_t> buffer =
      c.rank_me == root ? inputs(root, count, call) : std::vector<item_t>(count, poison);
  lci::comp_t comp = maybe_sync(blocking);
  lci::broadcast_x(buffer.data(), count * sizeof(item_t), root)
      .algorithm(algorithm)
      .ring_nsteps(ring_nsteps)
      .device(c.device)
      .comp(comp)();
  finish(comp, c.device);
  free_maybe(comp);
  EXPECT_EQ(buffer, inputs(root, count, call))
      << "broadcast " << lci::get_broadcast_algorithm_str(algorithm) << " count " << count
      << " root " << root << " ring_nsteps " << ring_nsteps << " " << c.where();
}

// in_place: recvbuf is this rank's own block of sendbuf, as upstream LCI's
// own test passes it (sendbuf + rank_me x recvcount).
void check_reduce_scatter(context_t& c, std::size_t recvcount,
                          lci::reduce_scatter_algorithm_t algorithm, bool blocking, bool in_place) {
  const std::uint64_t call = ++c.call;
  const std::size_t n = static_cast<std::size_t>(c.rank_n);
  const std::size_t own_offset = recvcount * static_cast<std::size_t>(c.rank_me);
  std::vector<item_t> send = inputs(c.rank_me, recvcount * n, call);
  std::vector<item_t> recv(recvcount, poison);
  item_t* target = in_place ? send.data() + own_offset : recv.data();
  lci::comp_t comp = maybe_sync(blocking);
  lci::reduce_scatter_x(send.data(), target, recvcount, sizeof(item_t), sum_op)
      .algorithm(algorithm)
      .device(c.device)
      .comp(comp)();
  finish(comp, c.device);
  free_maybe(comp);
  const std::vector<item_t> sum = sum_of_all(c.rank_n, recvcount * n, call);
  const auto first = sum.begin() + static_cast<std::ptrdiff_t>(own_offset);
  EXPECT_EQ(std::vector<item_t>(target, target + recvcount),
            std::vector<item_t>(first, first + static_cast<std::ptrdiff_t>(recvcount)))
      << "reduce_scatter " << lci::get_reduce_scatter_algorithm_str(algorithm) << " recvcount "
      << recvcount << " in_place " << in_place << " " << c.where();
}

void check_reduce(context_t& c, std::size_t count) {
  const std::uint64_t call = ++c.call;
  const int root = static_cast<int>((call * 3) % static_cast<std::uint64_t>(c.rank_n));
  std::vector<item_t> send = inputs(c.rank_me, count, call);
  std::vector<item_t> recv(count, poison);
  // Non-roots' recvbuf means nothing: pass null there.
  lci::reduce_x(send.data(), c.rank_me == root ? recv.data() : nullptr, count, sizeof(item_t),
                sum_op, root)
      .device(c.device)();
  if (c.rank_me == root) {
    EXPECT_EQ(recv, sum_of_all(c.rank_n, count, call))
        << "reduce count " << count << " root " << root << " " << c.where();
  }
}

void check_allgather(context_t& c, std::size_t count) {
  const std::uint64_t call = ++c.call;
  const std::size_t n = static_cast<std::size_t>(c.rank_n);
  std::vector<item_t> send = inputs(c.rank_me, count, call);
  std::vector<item_t> recv(count * n, poison);
  lci::allgather_x(send.data(), recv.data(), count * sizeof(item_t)).device(c.device)();
  std::vector<item_t> expected;
  for (int rank = 0; rank < c.rank_n; ++rank) {
    const std::vector<item_t> block = inputs(rank, count, call);
    expected.insert(expected.end(), block.begin(), block.end());
  }
  EXPECT_EQ(recv, expected) << "allgather count " << count << " " << c.where();
}

// Block j of rank i's input: inputs(i, ...) at offset j * count.
void check_alltoall(context_t& c, std::size_t count, bool blocking) {
  const std::uint64_t call = ++c.call;
  const std::size_t n = static_cast<std::size_t>(c.rank_n);
  std::vector<item_t> send = inputs(c.rank_me, count * n, call);
  std::vector<item_t> recv(count * n, poison);
  lci::comp_t comp = maybe_sync(blocking);
  lci::alltoall_x(send.data(), recv.data(), count * sizeof(item_t))
      .device(c.device)
      .comp(comp)();
  finish(comp, c.device);
  free_maybe(comp);
  std::vector<item_t> expected;
  for (int rank = 0; rank < c.rank_n; ++rank) {
    const std::vector<item_t> all = inputs(rank, count * n, call);
    const auto first =
        all.begin() + static_cast<std::ptrdiff_t>(count * static_cast<std::size_t>(c.rank_me));
    expected.insert(expected.end(), first, first + static_cast<std::ptrdiff_t>(count));
  }
  EXPECT_EQ(recv, expected) << "alltoall count " << count << " " << c.where();
}

// Item counts: none, a few, and one item past the eager limit.
std::vector<std::size_t> counts() {
  return {0, 3, lci::get_max_bcopy_size() / sizeof(item_t) + 1};
}

// Every collective, size, mode and algorithm once.
void every_collective(context_t& c) {
  using lci::allreduce_algorithm_t;
  using lci::broadcast_algorithm_t;
  using lci::reduce_scatter_algorithm_t;
  for (bool blocking : {true, false}) {
    for (std::size_t count : counts()) {
      for (auto algorithm : {allreduce_algorithm_t::none, allreduce_algorithm_t::direct,
                             allreduce_algorithm_t::tree, allreduce_algorithm_t::ring}) {
        check_allreduce(c, count, algorithm, blocking, /*in_place=*/count == 3);
      }
      for (auto algorithm : {broadcast_algorithm_t::none, broadcast_algorithm_t::direct,
                             broadcast_algorithm_t::tree, broadcast_algorithm_t::ring}) {
        check_broadcast(c, count, algorithm, blocking, count > 3 ? 3 : 0);
      }
      for (auto algorithm : {reduce_scatter_algorithm_t::none, reduce_scatter_algorithm_t::direct,
                             reduce_scatter_algorithm_t::tree, reduce_scatter_algorithm_t::ring}) {
        check_reduce_scatter(c, count, algorithm, blocking, /*in_place=*/blocking);
      }
      check_alltoall(c, count, blocking);
      if (blocking) {  // reduce and allgather have no comp option (upstream's API)
        check_reduce(c, count);
        check_allgather(c, count);
      }
    }
  }
  lci::barrier_x().device(c.device)();
}

void every_collective_body(lci::sim::rank_env_t&) {
  lci::g_runtime_init();
  context_t c{lci::get_rank_me(), lci::get_rank_n(), lci::device_t{}};
  every_collective(c);
  lci::g_runtime_fina();
}

class CollectiveRanks : public ::testing::TestWithParam<int> {};

TEST_P(CollectiveRanks, EveryCollectiveMatchesTheReference) {
  const int rank_n = GetParam();
  lci::sim::sweep_t sweep;
  // Larger worlds cost more per run: one seed, deterministic only.
  sweep.seeds_count = rank_n <= 7 ? 2 : 1;
  sweep.concurrent = rank_n <= 7;
  lci::sim::expect_runs_ok(rank_n, sweep, every_collective_body);
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollectiveRanks, ::testing::Values(1, 2, 3, 5, 7, 16, 17),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "_ranks";
                         });

// Every fault of the simulated network but crashes, at once, on every
// collective: reordered and delayed messages, refused posts and receives,
// short polls. Tags must keep every message apart however late it comes.
TEST(CollectiveFaults, EveryCollectiveUnderFaults) {
  LCI_SIM_ONLY("injected faults");
  using lci::sim::fault_kind_t;
  lci::sim::sweep_t sweep;
  sweep.seed_first = 101;
  sweep.seeds_count = 2;
  sweep.concurrent = false;
  sweep.configure = [](lci::sim::run_options_t& run) {
    run.world.faults.rate(fault_kind_t::send_queue_full) = 0.1;
    run.world.faults.rate(fault_kind_t::no_recv_buffer) = 0.1;
    run.world.faults.rate(fault_kind_t::cq_pressure) = 0.3;
    run.world.faults.rate(fault_kind_t::lock_busy) = 0.1;
    run.world.faults.rate(fault_kind_t::reorder) = 0.5;
    run.world.faults.rate(fault_kind_t::delay_spike) = 0.02;
    run.world.faults.rate(fault_kind_t::registration_failure) = 0.1;
  };
  const auto reports = lci::sim::expect_runs_ok(5, sweep, every_collective_body);
  for (const auto& report : reports) {
    EXPECT_GT(report.faults_injected[static_cast<std::size_t>(fault_kind_t::reorder)], 0u);
    EXPECT_GT(report.faults_injected[static_cast<std::size_t>(fault_kind_t::send_queue_full)], 0u);
  }
}

// Overlapping send and receive buffers are refused before anything is sent
// (every rank refuses alike, so none waits for the others), but for
// reduce_scatter's in-place form, which every schedule above computes.
void overlapping_buffers_body(lci::sim::rank_env_t&) {
  lci::g_runtime_init();
  const std::size_t n = static_cast<std::size_t>(lci::get_rank_n());
  std::vector<item_t> send(2 * n + 1, 1);
  item_t* const own_block = send.data() + 2 * static_cast<std::size_t>(lci::get_rank_me());
  using lci::runtime_test::expect_invalid_argument;
  const std::initializer_list<std::string> overlap = {"recvbuf overlaps sendbuf"};
  expect_invalid_argument(
      "reduce_scatter into the middle of its own block",
      [&] { lci::reduce_scatter(send.data(), own_block + 1, 2, sizeof(item_t), sum_op); }, overlap);
  expect_invalid_argument(
      "reduce_scatter into a block not its own",
      [&] { lci::reduce_scatter(send.data() + 1, send.data() + 2, 2, sizeof(item_t), sum_op); },
      overlap);
  expect_invalid_argument(
      "alltoall in place", [&] { lci::alltoall(send.data(), send.data(), sizeof(item_t)); },
      overlap);
  expect_invalid_argument(
      "alltoall into its last block",
      [&] { lci::alltoall(send.data(), send.data() + n - 1, sizeof(item_t)); }, overlap);
  // The refused calls left nothing behind: the next collective agrees.
  std::vector<item_t> recv(2, poison);
  lci::reduce_scatter(send.data(), recv.data(), 2, sizeof(item_t), sum_op);
  EXPECT_EQ(recv, std::vector<item_t>(2, n));
  lci::g_runtime_fina();
}

TEST(CollectiveMisuse, OverlappingBuffersAreRefused) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 1;
  lci::sim::expect_runs_ok(3, sweep, overlapping_buffers_body);
}

// Collectives on two devices of one runtime, concurrently. Non-blocking
// ones started in opposite orders on even and odd ranks: with one sequence
// per runtime, rank 0's first call (on the second device) and rank 1's
// first call (on the default one) would take each other's messages. Then
// blocking ones from two threads, one per device.
void two_devices_body(lci::sim::rank_env_t& env) {
  lci::g_runtime_init();
  const int rank_me = lci::get_rank_me();
  const int rank_n = lci::get_rank_n();
  lci::device_t second = lci::alloc_device();
  context_t contexts[2] = {{rank_me, rank_n, lci::device_t{}}, {rank_me, rank_n, second}};
  contexts[1].call = 1000000;  // different data on each device
  const std::size_t count = lci::get_max_bcopy_size() / sizeof(item_t) + 1;
  for (int round = 0; round < 3; ++round) {
    std::vector<item_t> send[2], recv[2];
    lci::comp_t comps[2];
    std::uint64_t calls[2];
    for (int k = 0; k < 2; ++k) {
      const int d = rank_me % 2 == 0 ? 1 - k : k;  // even ranks start on the second device
      calls[d] = ++contexts[d].call;
      send[d] = inputs(rank_me, count, calls[d]);
      recv[d].assign(count, poison);
      comps[d] = lci::alloc_sync();
      lci::allreduce_x(send[d].data(), recv[d].data(), count, sizeof(item_t), sum_op)
          .device(contexts[d].device)
          .comp(comps[d])();
    }
    bool done[2] = {false, false};
    while (!done[0] || !done[1]) {
      for (int d = 0; d < 2; ++d) {
        lci::status_t status;
        if (!done[d] && lci::sync_test(comps[d], &status)) done[d] = true;
        (void)lci::progress_x().device(contexts[d].device)();
      }
    }
    for (int d = 0; d < 2; ++d) {
      lci::free_comp(&comps[d]);
      EXPECT_EQ(recv[d], sum_of_all(rank_n, count, calls[d]))
          << "device " << d << " " << contexts[d].where();
    }
  }
  env.run_threads(2, [&contexts](int thread) {
    context_t& c = contexts[thread];
    for (int round = 0; round < 2; ++round) {
      check_allreduce(c, 3, lci::allreduce_algorithm_t::none, true, false);
      check_broadcast(c, 300, lci::broadcast_algorithm_t::tree, true, 0);
      check_alltoall(c, 3, true);
      lci::barrier_x().device(c.device)();
    }
  });
  // The last messages' packets may still be out (memory semantic: done
  // once copied); the device is freed once the network returned them.
  lci::wait_drained_x().device(second)();
  lci::free_device(&second);
  lci::g_runtime_fina();
}

TEST(CollectiveDevices, ConcurrentCollectivesOnTwoDevices) {
  for (int rank_n : {2, 3, 5}) {
    lci::sim::sweep_t sweep;
    sweep.seeds_count = 2;
    lci::sim::expect_runs_ok(rank_n, sweep, two_devices_body);
  }
}

// A second thread of each rank progresses the device while the first runs
// non-blocking collectives and waits for them: a round's messages then
// complete on either thread, and whichever ends the round (the poster's
// last decrement in advance(), or a completion's in signal()) reads what
// the other wrote. Under TSan this is the check of those decrements'
// acq_rel (docs/verification.md, collective.cpp's round counter).
void progress_thread_body(lci::sim::rank_env_t& env) {
  lci::g_runtime_init();
  context_t c{lci::get_rank_me(), lci::get_rank_n(), lci::device_t{}};
  lci::runtime_test::run_beside_progress_thread(env, [&c] {
    for (int round = 0; round < 150; ++round) {
      check_alltoall(c, 3, false);
      check_allreduce(c, 3, lci::allreduce_algorithm_t::tree, false, false);
      check_broadcast(c, 40, lci::broadcast_algorithm_t::tree, false, 0);
    }
  });
  lci::barrier();
  lci::g_runtime_fina();
}

TEST(CollectiveThreads, RoundsEndOnEitherThread) {
  LCI_SIM_ONLY("injected faults");
  using lci::sim::fault_kind_t;
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 0;  // OS threads only: fibers take turns, so nothing races
  // Refused posts go to the backlog, which either thread's progress runs,
  // and a thread that loses its core after a call leaves the round to the
  // other: more of a round's completions land on the thread that did not
  // post, and more rounds end there.
  sweep.configure = [](lci::sim::run_options_t& run) {
    run.world.faults.rate(fault_kind_t::send_queue_full) = 0.3;
    run.world.faults.rate(fault_kind_t::lock_busy) = 0.2;
    run.world.faults.rate(fault_kind_t::preempt) = 0.2;
  };
  lci::sim::expect_runs_ok(3, sweep, progress_thread_body);
}

}  // namespace
