// Incast: every other rank sends many messages to rank 0 before rank 0
// posts a single receive, the way a task runtime's workers flood a master
// that is busy elsewhere. Rank 0's device keeps the arrivals as unexpected
// messages (docs/design/device.md "Pools"); an eager message copied out
// of its receive region needs a packet, and past the packets it waits in
// the backlog holding its bytes, so that the senders are held back until
// rank 0's receives take the kept ones. However many wait, nothing may be
// lost or corrupted, and rank 0's progress may not fail: nobody can be
// asked to retry it. (Before the backlog could grow, a step past its ring
// made progress throw std::length_error.)
//
// Two shapes, eager messages from one rank (they wait for packets) and
// rendezvous sends from six (their RTSs are more than the device's pool of
// records for unexpected messages: the rest are allocated), each received
// two ways: by receives that match any message (matching_policy_t::none:
// each takes the oldest one stored), and by receives that name their
// message by rank and tag, rank 1's first. The second way needs a receive
// to take its message while messages it will receive only later hold the
// packets (and, before records past the pool were allocated, every record).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "sim/sim_profile.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;
using lci::runtime_test::require;

struct incast_t {
  int ranks_count;
  int messages_per_sender;
  std::size_t message_bytes;
  // Receives name their message's rank and tag (matching_policy_t::rank_tag,
  // tag = the message's index), else match any (matching_policy_t::none).
  bool named;
  // The simulated network behaves as libfabric's shm (provider profile) and
  // rank 0's device receives into multi-receive regions
  // (LCI_OFI_MULTI_RECV=1 over shm); rank 0 checks that its network refused
  // a region because messages waiting unmatched held its receive entries.
  bool shm_regions = false;
};

// Eager: more than a simulated rank's packets, and past those more than its
// backlog's ring holds (256 steps) wait. Rendezvous: more RTSs than a
// simulated device's records for unexpected messages (1024).
constexpr incast_t eager_incast{2, 1500, 8, false};
constexpr incast_t rendezvous_incast{7, 250, 9000, false};
constexpr incast_t named_eager_incast{2, 1500, 8, true};
constexpr incast_t named_rendezvous_incast{7, 250, 9000, true};
// Past the 1024 messages shm keeps unmatched while rank 0's regions wait
// for packets to copy their messages into.
constexpr incast_t shm_regions_incast{6, 600, 1000, false, true};

lci::matching_policy_t policy_of(const incast_t& incast) {
  return incast.named ? lci::matching_policy_t::rank_tag : lci::matching_policy_t::none;
}

// Rank 0 progresses until this many calls in a row change nothing: the
// senders have sent all the network and rank 0's device would take.
constexpr int quiet_polls = 48;

// A message's bytes: its index in the first four, then a pattern of its
// sender and index.
void fill(std::vector<char>* bytes, int sender, int message) {
  for (std::size_t i = 0; i < bytes->size(); ++i) {
    (*bytes)[i] = static_cast<char>(sender * 31 + message * 7 + static_cast<int>(i));
  }
  std::memcpy(bytes->data(), &message, sizeof(message));
}

// Every byte of message `message` from `sender` as it was sent.
void check_bytes(const std::vector<char>& bytes, int sender, int message) {
  std::vector<char> expected(bytes.size());
  fill(&expected, sender, message);
  require(bytes == expected, "message " + std::to_string(message) + " from rank " +
                                 std::to_string(sender) + " arrived with wrong bytes");
}

void send_all(const incast_t& incast, int rank, lci::comp_t counter) {
  // A buffer per message: a rendezvous send reads its buffer until the
  // receiver takes it, which is after every send is posted.
  std::vector<std::vector<char>> data(static_cast<std::size_t>(incast.messages_per_sender),
                                      std::vector<char>(incast.message_bytes));
  for (int m = 0; m < incast.messages_per_sender; ++m) {
    std::vector<char>& bytes = data[static_cast<std::size_t>(m)];
    fill(&bytes, rank, m);
    const lci::status_t status = post_retrying([&] {
      return lci::post_send_x(0, bytes.data(), bytes.size(), static_cast<lci::tag_t>(m), counter)
          .matching_policy(policy_of(incast))
          .allow_done(false)();  // the counter counts every send
    });
    require(status.is_posted(), "a send was not posted");
  }
  while (lci::counter_get(counter) < incast.messages_per_sender) (void)lci::progress();
}

void receive_all(const incast_t& incast) {
  // Only progress while the senders flood: whatever does not fit waits.
  for (int quiet = 0; quiet < quiet_polls;) {
    quiet = lci::progress().is_done() ? 0 : quiet + 1;
  }
  const std::size_t senders_count = static_cast<std::size_t>(incast.ranks_count - 1);
  const std::size_t per_sender = static_cast<std::size_t>(incast.messages_per_sender);
  std::vector<int> seen(senders_count * per_sender, 0);
  std::vector<char> buffer(incast.message_bytes);
  for (std::size_t received = 0; received < seen.size(); ++received) {
    lci::comp_t sync = lci::alloc_sync();
    // Named: rank 1's messages first, in the order sent.
    const int rank = incast.named ? 1 + static_cast<int>(received / per_sender) : 1;
    const auto tag = static_cast<lci::tag_t>(incast.named ? received % per_sender : 0);
    const lci::status_t posted = post_retrying([&] {
      return lci::post_recv_x(rank, buffer.data(), buffer.size(), tag, sync)
          .matching_policy(policy_of(incast))();
    });
    lci::status_t status = posted;
    if (posted.is_posted()) {
      while (!lci::sync_test(sync, &status)) (void)lci::progress();
    }
    lci::free_comp(&sync);
    require(status.is_done() && status.rank >= 1 && status.rank < incast.ranks_count &&
                status.size == incast.message_bytes,
            "receive " + std::to_string(received) + " ended with a wrong status");
    int message = 0;
    std::memcpy(&message, buffer.data(), sizeof(message));
    require(message >= 0 && message < incast.messages_per_sender,
            "receive " + std::to_string(received) + " holds no message this test sent");
    require(!incast.named || (status.rank == rank && static_cast<lci::tag_t>(message) == tag),
            "the receive of tag " + std::to_string(tag) + " from rank " + std::to_string(rank) +
                " holds message " + std::to_string(message) + " of rank " +
                std::to_string(status.rank));
    check_bytes(buffer, status.rank, message);
    const std::size_t index = static_cast<std::size_t>(status.rank - 1) * per_sender +
                              static_cast<std::size_t>(message);
    require(++seen[index] == 1, "message " + std::to_string(message) + " from rank " +
                                    std::to_string(status.rank) + " arrived twice");
  }
}

void run_incast(const incast_t& incast, lci::sim::rank_env_t& env) {
  lci::g_runtime_init();
  lci::comp_t counter = lci::alloc_counter();
  lci::barrier();
  if (env.rank() == 0) {
    receive_all(incast);
    if (incast.shm_regions) {
      require(lci::sim::profile_refusals(env.world(), lci::sim::refusal_t::recv_entries_full) > 0,
              "the network never refused a region: the flood did not reach its receive entries");
    }
  } else {
    send_all(incast, env.rank(), counter);
  }
  lci::barrier();
  lci::free_comp(&counter);
  lci::g_runtime_fina();
}

void expect_incast_ok(const incast_t& incast) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 2;
  sweep.concurrent = false;  // rank 0's quiet phase counts on simulated time
  sweep.configure = [incast](lci::sim::run_options_t& options) {
    options.log = false;
    if (incast.shm_regions) {
      lci::sim::apply_provider_profile(&options.world, lci::sim::profile_kind_t::shm);
      options.world.multi_recv = true;
    }
  };
  lci::sim::expect_runs_ok(incast.ranks_count, sweep,
                           [incast](lci::sim::rank_env_t& env) { run_incast(incast, env); });
}

TEST(Incast, EagerMessagesWaitWithoutLossBeyondEveryBound) {
  LCI_SIM_ONLY("counts on the simulated network delivering while rank 0 only progresses");
  expect_incast_ok(eager_incast);
}

TEST(Incast, RendezvousSendsFromSixRanksWaitWithoutLoss) {
  LCI_SIM_ONLY("counts on the simulated network delivering while rank 0 only progresses");
  expect_incast_ok(rendezvous_incast);
}

TEST(Incast, ReceivesNamingEagerMessagesTakeThemPastFullRecords) {
  LCI_SIM_ONLY("counts on the simulated network delivering while rank 0 only progresses");
  expect_incast_ok(named_eager_incast);
}

TEST(Incast, ReceivesNamingRendezvousSendsTakeThemPastFullRecords) {
  LCI_SIM_ONLY("counts on the simulated network delivering while rank 0 only progresses");
  expect_incast_ok(named_rendezvous_incast);
}

// A region refused because unmatched messages hold the network's receive
// entries stays refused until receives take those messages: the device
// posts packets meanwhile (device_receives_t::replenish_regions). Without
// them, over libfabric shm with LCI_OFI_MULTI_RECV=1, rank 0 threw
// "fi_recvmsg: Cannot allocate memory" (or, with that taken as a retry,
// waited forever).
TEST(Incast, EagerMessagesPastShmsReceiveEntriesReachRegionsAgain) {
  LCI_SIM_ONLY("counts on the simulated network delivering while rank 0 only progresses");
  expect_incast_ok(shm_regions_incast);
}

}  // namespace
