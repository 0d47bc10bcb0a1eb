// Sends on one device, their receives posted on another device of the peer
// that shares the matching engine (how HPX's parcelport uses two devices):
// every message arrives on the device paired with the sender's, and a
// receive posted elsewhere must still take it, eager and rendezvous alike,
// whether it was posted before the message arrived or after. Also the same
// with the receives on the sender's device. Each case runs several sends in
// flight at once, over the simulator (several seeds) and as real processes
// over shm and tcp (tests/runtime/BUILD).
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <tuple>
#include <vector>

#include "lci.hpp"
#include "lci/runtime/resources.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::require;

constexpr int messages_count = 8;
// One eager size, one rendezvous size (above any packet).
constexpr std::size_t sizes[] = {100, std::size_t{64} << 10};

// other_pool: device B has a packet pool of its own (a message stored in
// a packet of A's pool goes back there when B's receive takes it).
enum class receive_device_t { other, other_pool, same };
// Whether the receives are posted before the messages arrive (the sender
// starts after an out-of-band barrier) or after: the receiver waits until
// all are stored in the matching engine, or polls a fixed number of times
// first, as a program on a real network lets messages come in (on the
// simulator they have all arrived by then: its time stands still only
// while a rank still acts).
enum class posted_t { before_arrival, after_arrival, after_polls };
constexpr int idle_polls = 1000;

char payload_byte(int message, std::size_t i) { return static_cast<char>(message * 41 + i * 3); }

// Progresses both devices, as a runtime that owns them does.
void progress_both(lci::sim::rank_env_t& env, lci::device_t a, lci::device_t b) {
  const bool idle_a = lci::progress_x().device(a)().is_retry();
  const bool idle_b = lci::progress_x().device(b)().is_retry();
  if (idle_a && idle_b) env.wait("progress of both devices");
}

// Runs `post` until it is accepted; 1 when its completion will come through
// the cq (posted), 0 when it finished at once.
template <typename Post>
int post_until_accepted(lci::sim::rank_env_t& env, lci::device_t a, lci::device_t b, Post&& post) {
  lci::status_t status = post();
  while (status.is_retry()) {
    progress_both(env, a, b);
    status = post();
  }
  return status.is_posted() ? 1 : 0;
}

// Messages waiting in the default matching engine. Exact here: the only
// thread that inserts into it is the caller's own progress.
std::size_t unexpected_count() {
  return lci::get_default_matching_engine().p_impl->table.entries_count();
}

void wait_all(lci::sim::rank_env_t& env, lci::comp_t cq, lci::device_t a, lci::device_t b,
              int count, const char* what) {
  for (int done = 0; done < count;) {
    const lci::status_t status = lci::cq_pop(cq);
    if (status.is_retry()) {
      progress_both(env, a, b);
      continue;
    }
    require(status.is_done(), std::string(what) + ": an operation failed");
    ++done;
  }
}

void sender(lci::sim::rank_env_t& env, lci::device_t a, lci::device_t b, std::size_t size) {
  lci::comp_t cq = lci::alloc_cq();
  std::vector<std::vector<char>> out(messages_count, std::vector<char>(size));
  int posted_count = 0;
  for (int m = 0; m < messages_count; ++m) {
    for (std::size_t i = 0; i < size; ++i) out[m][i] = payload_byte(m, i);
    posted_count += post_until_accepted(env, a, b, [&] {
      return lci::post_send_x(1, out[m].data(), size, m, cq).device(a)();
    });
  }
  wait_all(env, cq, a, b, posted_count, "the sends");
  lci::free_comp(&cq);
}

void receiver(lci::sim::rank_env_t& env, lci::device_t a, lci::device_t b, lci::device_t on,
              std::size_t size, posted_t posted) {
  lci::comp_t cq = lci::alloc_cq();
  if (posted == posted_t::after_arrival) {
    while (unexpected_count() < messages_count) progress_both(env, a, b);
  }
  if (posted == posted_t::after_polls) {
    for (int i = 0; i < idle_polls; ++i) progress_both(env, a, b);
  }
  std::vector<std::vector<char>> in(messages_count, std::vector<char>(size, 0));
  int posted_count = 0;
  for (int m = 0; m < messages_count; ++m) {
    posted_count += post_until_accepted(env, a, b, [&] {
      return lci::post_recv_x(0, in[m].data(), size, m, cq).device(on)();
    });
  }
  if (posted == posted_t::before_arrival) env.barrier();  // the sender starts now
  wait_all(env, cq, a, b, posted_count, "the receives");
  for (int m = 0; m < messages_count; ++m) {
    for (std::size_t i = 0; i < size; ++i) {
      require(in[m][i] == payload_byte(m, i), "message " + std::to_string(m) + ": byte " +
                                                  std::to_string(i) + " is wrong");
    }
  }
  lci::free_comp(&cq);
}

void body(lci::sim::rank_env_t& env, std::size_t size, receive_device_t where, posted_t posted) {
  lci::g_runtime_init();
  ASSERT_EQ(lci::get_rank_n(), 2);
  // Collective: devices pair across ranks by allocation order.
  lci::device_t a = lci::alloc_device();
  lci::packet_pool_t pool_b;
  if (where == receive_device_t::other_pool) pool_b = lci::alloc_packet_pool();
  lci::device_t b = lci::alloc_device_x().packet_pool(pool_b)();
  if (lci::get_rank_me() == 0) {
    if (posted == posted_t::before_arrival) env.barrier();
    sender(env, a, b, size);
  } else {
    receiver(env, a, b, where == receive_device_t::same ? a : b, size, posted);
  }
  // Both sides finished: nothing of the other's is in flight on either
  // device once both have drained them.
  for (lci::device_t device : {a, b}) {
    while (!lci::test_drained_x().device(device)().is_done()) progress_both(env, a, b);
  }
  env.barrier();
  lci::free_device(&b);
  if (!pool_b.is_empty()) lci::free_packet_pool(&pool_b);
  lci::free_device(&a);
  lci::g_runtime_fina();
}

using param_t = std::tuple<std::size_t, receive_device_t, posted_t>;
class CrossDevice : public ::testing::TestWithParam<param_t> {};

TEST_P(CrossDevice, ReceivesTakeMessagesThatArrivedOnAnyDevice) {
  const std::size_t size = std::get<0>(GetParam());
  const receive_device_t where = std::get<1>(GetParam());
  const posted_t posted = std::get<2>(GetParam());
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 4;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  lci::sim::expect_runs_ok(2, sweep, [size, where, posted](lci::sim::rank_env_t& env) {
    body(env, size, where, posted);
  });
}

std::string case_name(const ::testing::TestParamInfo<param_t>& info) {
  const receive_device_t where = std::get<1>(info.param);
  const posted_t posted = std::get<2>(info.param);
  const char* when = posted == posted_t::before_arrival  ? "_posted_before"
                     : posted == posted_t::after_arrival ? "_posted_after"
                                                         : "_posted_after_polls";
  return std::to_string(std::get<0>(info.param)) + "_bytes_" +
         (where == receive_device_t::other        ? "other_device"
          : where == receive_device_t::other_pool ? "other_device_own_pool"
                                                  : "same_device") +
         when;
}

INSTANTIATE_TEST_SUITE_P(SizesDevicesOrders, CrossDevice,
                         ::testing::Combine(::testing::ValuesIn(sizes),
                                            ::testing::Values(receive_device_t::other,
                                                              receive_device_t::other_pool,
                                                              receive_device_t::same),
                                            ::testing::Values(posted_t::before_arrival,
                                                              posted_t::after_arrival,
                                                              posted_t::after_polls)),
                         case_name);

}  // namespace
