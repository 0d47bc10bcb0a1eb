// The emulated verbs device's wire rules (backends/ibv_emu/ibv_emu_fabric.hpp):
// receiver-not-ready retries, CQ overrun, RC ordering, write-with-immediate
// consuming a receive, transport retries, and determinism under a seed.
// Each test breaks its rule on purpose and checks the spec'd outcome.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "sim/sim_seed.hpp"
#include "tests/backends/ibv/ibv_emu_test_util.hpp"

namespace lci::backend::ibv_emu::testing {
namespace {

emu_options_t seeded(std::uint64_t seed) {
  emu_options_t options;
  options.seed = seed;
  return options;
}

// ---- receiver not ready ----

TEST(IbvEmuRnr, SendWaitsForAReceiveAndIsRetried) {
  emu_pair_t pair(seeded(sim::seed_from_env(3)));
  pair.connect();
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, "late", 5, 0, 7, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  EXPECT_TRUE(pair.a.poll(1, 50).empty()) << "no receive posted: the send cannot complete";
  const std::uint64_t naks = pair.fabric.stats().rnr_naks;
  EXPECT_GT(naks, 0u) << "the responder NAKed (receiver not ready)";
  EXPECT_EQ(pair.a.state(), IBV_QPS_RTS) << "rnr_retry 7 retries forever";
  char buffer[8] = {};
  ibv_mr* mr = pair.b.reg(buffer, sizeof(buffer), local_rw);
  ASSERT_EQ(pair.b.post_recv(buffer, sizeof(buffer), mr->lkey, 70), 0);
  const std::vector<ibv_wc> sent = pair.a.poll(1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(sent[0].wr_id, 7u);
  EXPECT_EQ(sent[0].opcode, IBV_WC_SEND);
  const std::vector<ibv_wc> got = pair.b.poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(got[0].wr_id, 70u);
  EXPECT_EQ(got[0].byte_len, 5u);
  EXPECT_EQ(got[0].src_qp, pair.a.qp->qp_num);
  EXPECT_EQ(got[0].slid, pair.a.lid);
  EXPECT_STREQ(buffer, "late");
}

TEST(IbvEmuRnr, ExhaustedRetriesFailTheWrAndMoveTheQpToError) {
  pair_options_t options;
  options.rnr_retry = 2;
  emu_pair_t pair(seeded(sim::seed_from_env(4)), options);
  pair.connect();
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, "a", 1, 0, 1, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, "b", 1, 0, 2, IBV_SEND_INLINE), 0);  // unsignaled
  const std::vector<ibv_wc> got = pair.a.poll(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].wr_id, 1u);
  EXPECT_EQ(got[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
  EXPECT_EQ(got[1].wr_id, 2u);
  EXPECT_EQ(got[1].status, IBV_WC_WR_FLUSH_ERR) << "flushed, though posted unsignaled";
  EXPECT_EQ(pair.fabric.stats().rnr_naks, 2u) << "rnr_retry = 2 retries";
  EXPECT_EQ(pair.a.state(), IBV_QPS_ERR);
  EXPECT_EQ(pair.b.state(), IBV_QPS_RTS) << "RNR is the requester's failure only";
}

// ---- CQ overrun ----

TEST(IbvEmuCq, OverrunBreaksTheCqAndItsQps) {
  pair_options_t options;
  options.cq_depth = 4;
  emu_pair_t pair(seeded(sim::seed_from_env(5)), options);
  pair.connect();
  char target[8] = {};
  ibv_mr* mr = pair.b.reg(target, sizeof(target), remote_rw);
  for (std::uint64_t i = 0; i < 5; ++i) {
    ASSERT_EQ(pair.a.post(IBV_WR_RDMA_WRITE, "w", 1, 0, i, IBV_SEND_SIGNALED | IBV_SEND_INLINE,
                          reinterpret_cast<std::uint64_t>(target), mr->rkey),
              0);
  }
  ASSERT_TRUE(pair.fabric.drain()) << "five completions into a CQ of four, none polled";
  EXPECT_EQ(pair.fabric.stats().cq_overruns, 1u);
  ibv_wc wc[8];
  EXPECT_LT(pair.a.verbs->poll_cq(pair.a.cq, 8, wc), 0) << "an overrun CQ is broken";
  EXPECT_LT(pair.a.verbs->poll_cq(pair.a.cq, 8, wc), 0) << "and stays broken";
  EXPECT_EQ(pair.a.state(), IBV_QPS_ERR) << "its QPs enter ERR";
  const std::vector<ibv_async_event> events = pair.a.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event_type, IBV_EVENT_CQ_ERR);
  EXPECT_EQ(events[0].element.cq, pair.a.cq);
  EXPECT_EQ(pair.b.state(), IBV_QPS_RTS) << "the peer's CQ is its own";
}

TEST(IbvEmuCq, AFullCqPolledInTimeDoesNotOverrun) {
  pair_options_t options;
  options.cq_depth = 4;
  emu_pair_t pair(seeded(sim::seed_from_env(5)), options);
  pair.connect();
  char target[8] = {};
  ibv_mr* mr = pair.b.reg(target, sizeof(target), remote_rw);
  std::size_t completed = 0;
  for (std::uint64_t i = 0; i < 12; ++i) {
    ASSERT_EQ(pair.a.post(IBV_WR_RDMA_WRITE, "w", 1, 0, i, IBV_SEND_SIGNALED | IBV_SEND_INLINE,
                          reinterpret_cast<std::uint64_t>(target), mr->rkey),
              0);
    if (i % 4 == 3) completed += pair.a.poll(4).size();
  }
  EXPECT_EQ(completed, 12u);
  EXPECT_EQ(pair.fabric.stats().cq_overruns, 0u);
}

// ---- RC ordering ----

// A second QP on each side, connected to each other (same PD, CQ, SRQ).
std::pair<ibv_qp*, ibv_qp*> add_connected_qps(emu_pair_t& pair) {
  auto make = [](side_t& side) {
    ibv_qp_init_attr init{};
    init.send_cq = side.cq;
    init.recv_cq = side.cq;
    init.srq = side.srq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = 64;
    init.cap.max_send_sge = 1;
    init.cap.max_inline_data = 32;
    return side.verbs->create_qp(side.pd, &init);
  };
  ibv_qp* qa = make(pair.a);
  ibv_qp* qb = make(pair.b);
  auto up = [](ibv::verbs_t& verbs, ibv_qp* qp, std::uint16_t lid, std::uint32_t qp_num) {
    EXPECT_EQ(qp_to_init(verbs, qp, remote_rw), 0);
    ibv_qp_attr rtr = rtr_attr(lid, qp_num, 1);
    EXPECT_EQ(verbs.modify_qp(qp, &rtr, rtr_mask), 0);
    ibv_qp_attr rts = rts_attr(1, 3, 7);
    EXPECT_EQ(verbs.modify_qp(qp, &rts, rts_mask), 0);
  };
  up(*pair.a.verbs, qa, pair.b.lid, qb->qp_num);
  up(*pair.b.verbs, qb, pair.a.lid, qa->qp_num);
  return {qa, qb};
}

int post_inline_send(ibv::verbs_t& verbs, ibv_qp* qp, std::uint32_t value) {
  ibv_sge sge{reinterpret_cast<std::uint64_t>(&value), sizeof(value), 0};
  ibv_send_wr wr{};
  wr.wr_id = value;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_INLINE;
  ibv_send_wr* bad = nullptr;
  return verbs.post_send(qp, &wr, &bad);
}

// Values received, in the order their receives completed.
std::vector<std::uint32_t> receive_values(emu_pair_t& pair, std::size_t count) {
  std::vector<std::uint32_t> slots(count);
  ibv_mr* mr = pair.b.reg(slots.data(), count * sizeof(std::uint32_t), local_rw);
  for (std::size_t i = 0; i < count; ++i) {
    EXPECT_EQ(pair.b.post_recv(&slots[i], sizeof(std::uint32_t), mr->lkey, i), 0);
  }
  std::vector<std::uint32_t> values;
  for (const ibv_wc& wc : pair.b.poll(count)) {
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    values.push_back(slots[wc.wr_id]);
  }
  return values;
}

emu_options_t jittery(std::uint64_t seed) {
  emu_options_t options = seeded(seed);
  options.latency_ticks = 1;
  options.jitter_ticks = 500;  // far more than the gap between two posts
  options.delay_spike_rate = 0.2;
  return options;
}

TEST(IbvEmuRcOrder, OneQpTakesEffectInPostOrderWhateverTheJitter) {
  pair_options_t options;
  options.send_wr_max = 64;
  options.recv_wr_max = 64;
  emu_pair_t pair(jittery(sim::seed_from_env(11)), options);
  pair.connect();
  constexpr std::uint32_t count = 48;
  for (std::uint32_t i = 0; i < count; ++i) {
    ASSERT_EQ(post_inline_send(*pair.a.verbs, pair.a.qp, i), 0);
  }
  const std::vector<std::uint32_t> values = receive_values(pair, count);
  ASSERT_EQ(values.size(), count);
  for (std::uint32_t i = 0; i < count; ++i) EXPECT_EQ(values[i], i) << "at " << i;
  EXPECT_GT(pair.fabric.stats().delay_spikes, 0u) << "the wire did try to reorder";
}

// The control: the same wire reorders messages of two QPs, so the order
// above is the RC rule's doing, not the wire's.
TEST(IbvEmuRcOrder, TwoQpsAreNotOrderedWithEachOther) {
  pair_options_t options;
  options.send_wr_max = 64;
  options.recv_wr_max = 64;
  emu_pair_t pair(jittery(sim::seed_from_env(11)), options);
  pair.connect();
  const auto extra = add_connected_qps(pair);
  constexpr std::uint32_t count = 48;
  for (std::uint32_t i = 0; i < count; ++i) {
    ibv_qp* qp = i % 2 == 0 ? pair.a.qp : extra.first;
    ASSERT_EQ(post_inline_send(*pair.a.verbs, qp, i), 0);
  }
  const std::vector<std::uint32_t> values = receive_values(pair, count);
  ASSERT_EQ(values.size(), count);
  bool reordered = false;
  std::uint32_t last_even = 0;
  std::uint32_t last_odd = 1;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0 && values[i] < values[i - 1]) reordered = true;
    std::uint32_t& last = values[i] % 2 == 0 ? last_even : last_odd;
    if (values[i] > 1) {
      EXPECT_GT(values[i], last) << "each QP stays in order";
    }
    last = values[i];
  }
  EXPECT_TRUE(reordered) << "messages of two QPs interleave out of post order";
  EXPECT_EQ(pair.b.verbs->destroy_qp(extra.second), 0);
  EXPECT_EQ(pair.a.verbs->destroy_qp(extra.first), 0);
}

TEST(IbvEmuRcOrder, ARetriedWrIsNotOvertakenByTheNextOne) {
  emu_pair_t pair(seeded(sim::seed_from_env(12)));
  pair.connect();
  ASSERT_EQ(post_inline_send(*pair.a.verbs, pair.a.qp, 1), 0);
  ASSERT_EQ(post_inline_send(*pair.a.verbs, pair.a.qp, 2), 0);
  EXPECT_TRUE(pair.b.poll(1, 20).empty());
  EXPECT_GT(pair.fabric.stats().rnr_naks, 0u);
  std::uint32_t slot = 0;
  ibv_mr* mr = pair.b.reg(&slot, sizeof(slot), local_rw);
  ASSERT_EQ(pair.b.post_recv(&slot, sizeof(slot), mr->lkey, 0), 0);
  ASSERT_EQ(pair.b.poll(1).size(), 1u);
  EXPECT_EQ(slot, 1u) << "the first WR, NAKed, still lands first";
}

// ---- write with immediate ----

TEST(IbvEmuWriteImm, ConsumesAReceive) {
  emu_pair_t pair(seeded(sim::seed_from_env(13)));
  pair.connect();
  char target[16] = {};
  char spare[8] = {};
  ibv_mr* target_mr = pair.b.reg(target, sizeof(target), remote_rw);
  ibv_mr* spare_mr = pair.b.reg(spare, sizeof(spare), local_rw);
  ASSERT_EQ(pair.b.post_recv(spare, sizeof(spare), spare_mr->lkey, 100), 0);
  ASSERT_EQ(pair.a.post(IBV_WR_RDMA_WRITE_WITH_IMM, "payload", 8, 0, 1,
                        IBV_SEND_SIGNALED | IBV_SEND_INLINE,
                        reinterpret_cast<std::uint64_t>(target), target_mr->rkey, 0xabcd),
            0);
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, "s", 2, 0, 2, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  const std::vector<ibv_wc> got = pair.b.poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(got[0].wr_id, 100u) << "the write took the posted receive";
  EXPECT_EQ(got[0].imm_data, 0xabcdu);
  EXPECT_TRUE(got[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(got[0].byte_len, 8u);
  EXPECT_STREQ(target, "payload");
  EXPECT_STREQ(spare, "") << "nothing lands in the receive's buffer";
  // The one receive is gone: the send behind the write now finds none.
  EXPECT_TRUE(pair.b.poll(1, 30).empty());
  EXPECT_GT(pair.fabric.stats().rnr_naks, 0u);
  ASSERT_EQ(pair.b.post_recv(spare, sizeof(spare), spare_mr->lkey, 101), 0);
  const std::vector<ibv_wc> then = pair.b.poll(1);
  ASSERT_EQ(then.size(), 1u);
  EXPECT_EQ(then[0].opcode, IBV_WC_RECV);
}

TEST(IbvEmuWriteImm, WithoutAReceiveWritesNothingYet) {
  emu_pair_t pair(seeded(sim::seed_from_env(14)));
  pair.connect();
  char target[8] = {};
  ibv_mr* mr = pair.b.reg(target, sizeof(target), remote_rw);
  ASSERT_EQ(pair.a.post(IBV_WR_RDMA_WRITE_WITH_IMM, "data", 5, 0, 1,
                        IBV_SEND_SIGNALED | IBV_SEND_INLINE,
                        reinterpret_cast<std::uint64_t>(target), mr->rkey, 7),
            0);
  EXPECT_TRUE(pair.a.poll(1, 30).empty());
  EXPECT_GT(pair.fabric.stats().rnr_naks, 0u) << "receiver not ready";
  EXPECT_STREQ(target, "") << "the write waits with its receive";
  char spare[4];
  ibv_mr* spare_mr = pair.b.reg(spare, sizeof(spare), local_rw);
  ASSERT_EQ(pair.b.post_recv(spare, sizeof(spare), spare_mr->lkey, 1), 0);
  ASSERT_EQ(pair.a.poll(1).size(), 1u);
  EXPECT_STREQ(target, "data");
}

// ---- transport retries ----

TEST(IbvEmuTransport, APeerQpThatIsGoneFailsAfterRetryCnt) {
  pair_options_t options;
  options.retry_cnt = 3;
  emu_pair_t pair(seeded(sim::seed_from_env(15)), options);
  pair.connect();
  ibv_qp_attr reset{};
  reset.qp_state = IBV_QPS_RESET;
  ASSERT_EQ(pair.b.verbs->modify_qp(pair.b.qp, &reset, IBV_QP_STATE), 0);
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, "x", 1, 0, 5, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  const std::vector<ibv_wc> got = pair.a.poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_EQ(got[0].wr_id, 5u);
  EXPECT_EQ(pair.fabric.stats().transport_retries, 3u);
  EXPECT_EQ(pair.a.state(), IBV_QPS_ERR);
}

TEST(IbvEmuTransport, AQpConnectedElsewhereIsUnreachable) {
  emu_pair_t pair(seeded(sim::seed_from_env(16)));
  ASSERT_EQ(pair.bring_up(pair.a, pair.b), 0);
  // b points at a QP number that is not a's.
  ASSERT_EQ(qp_to_init(*pair.b.verbs, pair.b.qp, remote_rw), 0);
  ibv_qp_attr rtr = rtr_attr(pair.a.lid, pair.a.qp->qp_num + 1, 1);
  ASSERT_EQ(pair.b.verbs->modify_qp(pair.b.qp, &rtr, rtr_mask), 0);
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, "x", 1, 0, 5, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  const std::vector<ibv_wc> got = pair.a.poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, IBV_WC_RETRY_EXC_ERR);
}

// ---- determinism ----

// A busy exchange in both directions, with jitter and delay spikes: the
// trace hash and the completion order it yields.
std::pair<std::uint64_t, std::vector<std::uint64_t>> run_exchange(std::uint64_t seed) {
  pair_options_t options;
  options.send_wr_max = 64;
  options.recv_wr_max = 64;
  emu_pair_t pair(jittery(seed), options);
  pair.connect();
  const auto extra = add_connected_qps(pair);
  std::vector<std::uint32_t> slots(64);
  ibv_mr* mr = pair.b.reg(slots.data(), slots.size() * sizeof(std::uint32_t), local_rw);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    EXPECT_EQ(pair.b.post_recv(&slots[i], sizeof(std::uint32_t), mr->lkey, i), 0);
  }
  for (std::uint32_t i = 0; i < 40; ++i) {
    EXPECT_EQ(post_inline_send(*pair.a.verbs, i % 3 == 0 ? extra.first : pair.a.qp, i), 0);
  }
  std::vector<std::uint64_t> order;
  for (const ibv_wc& wc : pair.b.poll(40)) order.push_back(slots[wc.wr_id]);
  EXPECT_EQ(order.size(), 40u);
  EXPECT_EQ(pair.b.verbs->destroy_qp(extra.second), 0);
  EXPECT_EQ(pair.a.verbs->destroy_qp(extra.first), 0);
  return {pair.fabric.trace_hash(), order};
}

TEST(IbvEmuDeterminism, SameSeedSameRunOtherSeedOtherRun) {
  const std::uint64_t seed = sim::seed_from_env(21);
  const auto first = run_exchange(seed);
  const auto again = run_exchange(seed);
  EXPECT_EQ(first.first, again.first) << "replay: " << sim::replay_command(seed, "");
  EXPECT_EQ(first.second, again.second);
  bool differs = false;
  for (std::uint64_t other = seed + 1; other < seed + 5 && !differs; ++other) {
    const auto run = run_exchange(other);
    differs = run.first != first.first && run.second != first.second;
  }
  EXPECT_TRUE(differs) << "the seed drives the wire";
}

}  // namespace
}  // namespace lci::backend::ibv_emu::testing
