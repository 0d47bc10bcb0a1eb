// The emulated verbs device's local rules (backends/ibv_emu/ibv_emu_fabric.hpp):
// the QP state machine, send-queue/SRQ/receive-queue depths, the inline
// limit, registration access flags, and resources in use. Each test breaks
// its rule on purpose and checks the outcome the verbs spec gives.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "tests/backends/ibv/ibv_emu_test_util.hpp"

namespace lci::backend::ibv_emu::testing {
namespace {

emu_options_t quiet_options(std::uint64_t seed = 1) {
  emu_options_t options;
  options.seed = seed;
  return options;
}

// ---- QP state machine ----

TEST(IbvEmuQpState, FollowsResetInitRtrRts) {
  emu_pair_t pair(quiet_options());
  ibv::verbs_t& verbs = *pair.a.verbs;
  EXPECT_EQ(pair.a.state(), IBV_QPS_RESET);
  EXPECT_EQ(pair.a.qp->state, IBV_QPS_RESET);
  ASSERT_EQ(qp_to_init(verbs, pair.a.qp, remote_rw), 0);
  EXPECT_EQ(pair.a.state(), IBV_QPS_INIT);
  ibv_qp_attr rtr = rtr_attr(pair.b.lid, pair.b.qp->qp_num, 1);
  ASSERT_EQ(verbs.modify_qp(pair.a.qp, &rtr, rtr_mask), 0);
  EXPECT_EQ(pair.a.state(), IBV_QPS_RTR);
  ibv_qp_attr rts = rts_attr(1, 3, 7);
  ASSERT_EQ(verbs.modify_qp(pair.a.qp, &rts, rts_mask), 0);
  EXPECT_EQ(pair.a.state(), IBV_QPS_RTS);
  EXPECT_EQ(pair.a.qp->state, IBV_QPS_RTS);  // the public field follows
}

TEST(IbvEmuQpState, RefusesSkippedAndBackwardTransitions) {
  emu_pair_t pair(quiet_options());
  ibv::verbs_t& verbs = *pair.a.verbs;
  ibv_qp_attr rtr = rtr_attr(pair.b.lid, pair.b.qp->qp_num, 1);
  ibv_qp_attr rts = rts_attr(1, 3, 7);
  EXPECT_EQ(verbs.modify_qp(pair.a.qp, &rtr, rtr_mask), EINVAL) << "RESET -> RTR";
  EXPECT_EQ(verbs.modify_qp(pair.a.qp, &rts, rts_mask), EINVAL) << "RESET -> RTS";
  EXPECT_EQ(pair.a.state(), IBV_QPS_RESET);
  ASSERT_EQ(qp_to_init(verbs, pair.a.qp, remote_rw), 0);
  EXPECT_EQ(verbs.modify_qp(pair.a.qp, &rts, rts_mask), EINVAL) << "INIT -> RTS";
  EXPECT_EQ(pair.a.state(), IBV_QPS_INIT);
  ASSERT_EQ(verbs.modify_qp(pair.a.qp, &rtr, rtr_mask), 0);
  ASSERT_EQ(verbs.modify_qp(pair.a.qp, &rts, rts_mask), 0);
  EXPECT_EQ(verbs.modify_qp(pair.a.qp, &rtr, rtr_mask), EINVAL) << "RTS -> RTR";
  EXPECT_EQ(qp_to_init(verbs, pair.a.qp, remote_rw), EINVAL) << "RTS -> INIT";
  EXPECT_EQ(pair.a.state(), IBV_QPS_RTS);
}

TEST(IbvEmuQpState, RefusesMissingOrForeignAttributes) {
  emu_pair_t pair(quiet_options());
  ibv::verbs_t& verbs = *pair.a.verbs;
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 1;
  EXPECT_EQ(verbs.modify_qp(pair.a.qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT),
            EINVAL)
      << "RESET -> INIT without IBV_QP_ACCESS_FLAGS";
  EXPECT_EQ(verbs.modify_qp(pair.a.qp, &init,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS |
                                IBV_QP_DEST_QPN),
            EINVAL)
      << "RESET -> INIT with IBV_QP_DEST_QPN, which it does not allow";
  EXPECT_EQ(pair.a.state(), IBV_QPS_RESET);
  ASSERT_EQ(qp_to_init(verbs, pair.a.qp, remote_rw), 0);
  ibv_qp_attr rtr = rtr_attr(pair.b.lid, pair.b.qp->qp_num, 1);
  EXPECT_EQ(verbs.modify_qp(pair.a.qp, &rtr, rtr_mask & ~IBV_QP_DEST_QPN), EINVAL)
      << "INIT -> RTR without IBV_QP_DEST_QPN";
  EXPECT_EQ(verbs.modify_qp(pair.a.qp, &rtr, rtr_mask & ~IBV_QP_MIN_RNR_TIMER), EINVAL)
      << "INIT -> RTR without IBV_QP_MIN_RNR_TIMER";
  EXPECT_EQ(pair.a.state(), IBV_QPS_INIT);
  ASSERT_EQ(verbs.modify_qp(pair.a.qp, &rtr, rtr_mask), 0);
  ibv_qp_attr rts = rts_attr(1, 3, 7);
  EXPECT_EQ(verbs.modify_qp(pair.a.qp, &rts, rts_mask & ~IBV_QP_RNR_RETRY), EINVAL)
      << "RTR -> RTS without IBV_QP_RNR_RETRY";
  EXPECT_EQ(pair.a.state(), IBV_QPS_RTR);
}

TEST(IbvEmuQpState, RefusesValuesOutOfRange) {
  emu_pair_t pair(quiet_options());
  ibv::verbs_t& verbs = *pair.a.verbs;
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 2;  // one port per HCA
  EXPECT_EQ(verbs.modify_qp(pair.a.qp, &init,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
            EINVAL);
  ASSERT_EQ(qp_to_init(verbs, pair.a.qp, remote_rw), 0);
  ibv_qp_attr rtr = rtr_attr(pair.b.lid, pair.b.qp->qp_num, 32);  // min_rnr_timer is 5 bits
  EXPECT_EQ(verbs.modify_qp(pair.a.qp, &rtr, rtr_mask), EINVAL);
  rtr = rtr_attr(0, pair.b.qp->qp_num, 1);  // LID 0 is no destination
  EXPECT_EQ(verbs.modify_qp(pair.a.qp, &rtr, rtr_mask), EINVAL);
  // A GRH's source GID index names an entry of the port's GID table.
  rtr = rtr_attr(pair.b.lid, pair.b.qp->qp_num, 1);
  rtr.ah_attr.is_global = 1;
  rtr.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(quiet_options().gid_types.size());
  EXPECT_EQ(verbs.modify_qp(pair.a.qp, &rtr, rtr_mask), EINVAL) << "a GID index past the table";
  rtr = rtr_attr(pair.b.lid, pair.b.qp->qp_num, 1);
  ASSERT_EQ(verbs.modify_qp(pair.a.qp, &rtr, rtr_mask), 0);
  ibv_qp_attr rts = rts_attr(1, 8, 7);  // retry_cnt is 3 bits
  EXPECT_EQ(verbs.modify_qp(pair.a.qp, &rts, rts_mask), EINVAL);
  EXPECT_EQ(pair.a.state(), IBV_QPS_RTR);
}

// A fabric of N HCAs has verbs tables 0..N-1; asking for another is a bug
// in the test that asks, stopped at once.
TEST(IbvEmuFabricDeathTest, VerbsOfAnHcaOutsideTheFabricAreRefused) {
  emu_options_t emu = quiet_options();
  emu.hcas_count = 2;
  emu_fabric_t fabric(emu);
  EXPECT_NE(&fabric.verbs(0), &fabric.verbs(1));
  EXPECT_DEATH((void)fabric.verbs(2), "no such emulated HCA");
  EXPECT_DEATH((void)fabric.verbs(-1), "no such emulated HCA");
}

// query_gid and query_gid_ex answer for the entries of the port's GID
// table, and refuse an index past it.
TEST(IbvEmuGid, QueriesPastTheTableAreEinval) {
  emu_pair_t pair(quiet_options());
  ibv::verbs_t& verbs = *pair.a.verbs;
  const int entries = static_cast<int>(quiet_options().gid_types.size());
  ibv_gid gid{};
  EXPECT_EQ(verbs.query_gid(pair.a.context, 1, entries - 1, &gid), 0);
  EXPECT_EQ(verbs.query_gid(pair.a.context, 1, entries, &gid), EINVAL);
  ibv_gid_entry entry{};
  EXPECT_EQ(verbs.query_gid_ex(pair.a.context, 1, static_cast<std::uint32_t>(entries - 1), &entry,
                               0),
            0);
  EXPECT_EQ(entry.gid_index, static_cast<std::uint32_t>(entries - 1));
  EXPECT_EQ(verbs.query_gid_ex(pair.a.context, 1, static_cast<std::uint32_t>(entries), &entry, 0),
            EINVAL);
}

TEST(IbvEmuQpState, ErrorIsLeftOnlyThroughReset) {
  emu_pair_t pair(quiet_options());
  pair.connect();
  ibv::verbs_t& verbs = *pair.a.verbs;
  ibv_qp_attr error{};
  error.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(verbs.modify_qp(pair.a.qp, &error, IBV_QP_STATE), 0);
  EXPECT_EQ(pair.a.state(), IBV_QPS_ERR);
  ibv_qp_attr rts = rts_attr(1, 3, 7);
  EXPECT_EQ(verbs.modify_qp(pair.a.qp, &rts, rts_mask), EINVAL) << "ERR -> RTS";
  EXPECT_EQ(qp_to_init(verbs, pair.a.qp, remote_rw), EINVAL) << "ERR -> INIT";
  EXPECT_EQ(pair.a.state(), IBV_QPS_ERR);
  // Through RESET it comes back, and carries traffic again.
  ASSERT_EQ(pair.reestablish(pair.a, pair.b), 0);
  EXPECT_EQ(pair.a.state(), IBV_QPS_RTS);
  char buffer[8] = {};
  ibv_mr* mr = pair.b.reg(buffer, sizeof(buffer), local_rw);
  ASSERT_EQ(pair.b.post_recv(buffer, sizeof(buffer), mr->lkey, 9), 0);
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, "hi", 3, 0, 1, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  const std::vector<ibv_wc> sent = pair.a.poll(1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, IBV_WC_SUCCESS);
  const std::vector<ibv_wc> got = pair.b.poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_STREQ(buffer, "hi");
}

TEST(IbvEmuQpState, PostsRefusedBeforeTheirState) {
  pair_options_t options;
  options.use_srq = false;
  emu_pair_t pair(quiet_options(), options);
  char buffer[8] = {};
  ibv_mr* mr = pair.a.reg(buffer, sizeof(buffer), local_rw);
  EXPECT_EQ(pair.a.post_recv(buffer, 8, mr->lkey, 1), EINVAL) << "post_recv in RESET";
  EXPECT_EQ(pair.a.post(IBV_WR_SEND, buffer, 8, mr->lkey, 1), EINVAL) << "post_send in RESET";
  ASSERT_EQ(qp_to_init(*pair.a.verbs, pair.a.qp, remote_rw), 0);
  EXPECT_EQ(pair.a.post_recv(buffer, 8, mr->lkey, 1), 0) << "post_recv in INIT is allowed";
  EXPECT_EQ(pair.a.post(IBV_WR_SEND, buffer, 8, mr->lkey, 1), EINVAL) << "post_send in INIT";
  ibv_qp_attr rtr = rtr_attr(pair.b.lid, pair.b.qp->qp_num, 1);
  ASSERT_EQ(pair.a.verbs->modify_qp(pair.a.qp, &rtr, rtr_mask), 0);
  EXPECT_EQ(pair.a.post(IBV_WR_SEND, buffer, 8, mr->lkey, 1), EINVAL) << "post_send in RTR";
}

TEST(IbvEmuQpState, PostsInErrorCompleteAsFlushed) {
  pair_options_t options;
  options.use_srq = false;
  emu_pair_t pair(quiet_options(), options);
  pair.connect();
  char buffer[8] = {};
  ibv_mr* mr = pair.a.reg(buffer, sizeof(buffer), local_rw);
  ASSERT_EQ(pair.a.post_recv(buffer, 8, mr->lkey, 41), 0);
  ibv_qp_attr error{};
  error.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(pair.a.verbs->modify_qp(pair.a.qp, &error, IBV_QP_STATE), 0);
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, buffer, 8, mr->lkey, 42, 0), 0)
      << "a post in ERR is accepted (and flushed), even unsignaled";
  const std::vector<ibv_wc> got = pair.a.poll(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].wr_id, 41u) << "the posted receive is flushed first";
  EXPECT_EQ(got[1].wr_id, 42u);
  for (const ibv_wc& wc : got) {
    EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
    EXPECT_EQ(wc.qp_num, pair.a.qp->qp_num);
    EXPECT_NE(wc.opcode, IBV_WC_SEND) << "an error completion's opcode is not valid";
  }
}

// ---- queue depths ----

TEST(IbvEmuSendQueue, FullMeansEnomemUntilCompletionsArePolled) {
  pair_options_t options;
  options.send_wr_max = 4;
  emu_pair_t pair(quiet_options(), options);
  pair.connect();
  char buffer[64] = {};
  ibv_mr* mr = pair.b.reg(buffer, sizeof(buffer), local_rw);
  for (int i = 0; i < 8; ++i) ASSERT_EQ(pair.b.post_recv(buffer, 64, mr->lkey, i), 0);
  for (std::uint64_t i = 0; i < 4; ++i) {
    ASSERT_EQ(pair.a.post(IBV_WR_SEND, "x", 1, 0, i, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  }
  EXPECT_EQ(pair.a.post(IBV_WR_SEND, "x", 1, 0, 4, IBV_SEND_SIGNALED | IBV_SEND_INLINE), ENOMEM);
  ASSERT_TRUE(pair.fabric.drain());
  EXPECT_EQ(pair.a.post(IBV_WR_SEND, "x", 1, 0, 4, IBV_SEND_SIGNALED | IBV_SEND_INLINE), ENOMEM)
      << "a completed WR holds its slot until its completion is polled";
  ibv_wc wc[1];
  ASSERT_EQ(pair.a.verbs->poll_cq(pair.a.cq, 1, wc), 1);
  EXPECT_EQ(pair.a.post(IBV_WR_SEND, "x", 1, 0, 4, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
}

TEST(IbvEmuSendQueue, UnsignaledWrsHoldSlotsUntilALaterSignaledOneIsPolled) {
  pair_options_t options;
  options.send_wr_max = 4;
  emu_pair_t pair(quiet_options(), options);
  pair.connect();
  char target[16] = {};
  ibv_mr* mr = pair.b.reg(target, sizeof(target), remote_rw);
  for (std::uint64_t i = 0; i < 3; ++i) {
    ASSERT_EQ(pair.a.post(IBV_WR_RDMA_WRITE, "u", 1, 0, i, IBV_SEND_INLINE,
                          reinterpret_cast<std::uint64_t>(target) + i, mr->rkey),
              0);
  }
  ASSERT_TRUE(pair.fabric.drain());
  EXPECT_EQ(std::string(target, 3), "uuu") << "unsignaled writes took effect";
  ASSERT_EQ(pair.a.post(IBV_WR_RDMA_WRITE, "s", 1, 0, 3, IBV_SEND_INLINE | IBV_SEND_SIGNALED,
                        reinterpret_cast<std::uint64_t>(target) + 3, mr->rkey),
            0);
  ASSERT_TRUE(pair.fabric.drain());
  EXPECT_EQ(pair.a.post(IBV_WR_RDMA_WRITE, "v", 1, 0, 4, IBV_SEND_INLINE,
                        reinterpret_cast<std::uint64_t>(target), mr->rkey),
            ENOMEM)
      << "three done unsignaled WRs and one unpolled signaled one fill the queue";
  const std::vector<ibv_wc> got = pair.a.poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].wr_id, 3u);
  for (std::uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(pair.a.post(IBV_WR_RDMA_WRITE, "v", 1, 0, 10 + i, IBV_SEND_INLINE,
                          reinterpret_cast<std::uint64_t>(target), mr->rkey),
              0)
        << "polling the signaled completion freed all four slots";
  }
}

TEST(IbvEmuSendQueue, ChainStopsAtTheFirstRefusedWr) {
  pair_options_t options;
  options.send_wr_max = 2;
  emu_pair_t pair(quiet_options(), options);
  pair.connect();
  ibv_sge sge{reinterpret_cast<std::uint64_t>("abc"), 3, 0};
  ibv_send_wr wrs[3]{};
  for (int i = 0; i < 3; ++i) {
    wrs[i].wr_id = static_cast<std::uint64_t>(i);
    wrs[i].sg_list = &sge;
    wrs[i].num_sge = 1;
    wrs[i].opcode = IBV_WR_SEND;
    wrs[i].send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
    wrs[i].next = i < 2 ? &wrs[i + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(pair.a.verbs->post_send(pair.a.qp, &wrs[0], &bad), ENOMEM);
  EXPECT_EQ(bad, &wrs[2]) << "the first two were posted, the third refused";
  EXPECT_EQ(pair.fabric.in_flight_count(), 2u);
}

// The send_queue_full fault: a post refused as if the queue were full,
// changing nothing (the WR is not on the wire).
TEST(IbvEmuSendQueue, InjectedFullQueueIsEnomem) {
  emu_options_t options = quiet_options();
  options.send_queue_full_rate = 1.0;
  emu_pair_t pair(options);
  pair.connect();
  EXPECT_EQ(pair.a.post(IBV_WR_SEND, "x", 1, 0, 1, IBV_SEND_SIGNALED | IBV_SEND_INLINE), ENOMEM);
  EXPECT_EQ(pair.fabric.in_flight_count(), 0u);
  EXPECT_EQ(pair.fabric.stats().send_queue_full_faults, 1u);
}

TEST(IbvEmuSendQueue, TooManySgesIsEinval) {
  pair_options_t options;
  options.sge_max = 1;
  emu_pair_t pair(quiet_options(), options);
  pair.connect();
  char buffer[8] = {};
  ibv_mr* mr = pair.a.reg(buffer, sizeof(buffer), local_rw);
  ibv_sge sges[2] = {{reinterpret_cast<std::uint64_t>(buffer), 4, mr->lkey},
                     {reinterpret_cast<std::uint64_t>(buffer + 4), 4, mr->lkey}};
  ibv_send_wr wr{};
  wr.sg_list = sges;
  wr.num_sge = 2;
  wr.opcode = IBV_WR_SEND;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(pair.a.verbs->post_send(pair.a.qp, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
}

TEST(IbvEmuSrq, FullMeansEnomem) {
  pair_options_t options;
  options.recv_wr_max = 4;
  emu_pair_t pair(quiet_options(), options);
  char buffer[64] = {};
  ibv_mr* mr = pair.b.reg(buffer, sizeof(buffer), local_rw);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(pair.b.post_recv(buffer, 16, mr->lkey, i), 0);
  EXPECT_EQ(pair.b.post_recv(buffer, 16, mr->lkey, 4), ENOMEM);
  // A message consumes one; then there is room for exactly one more.
  pair.connect();
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, "m", 1, 0, 1, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  ASSERT_EQ(pair.b.poll(1).size(), 1u);
  EXPECT_EQ(pair.b.post_recv(buffer, 16, mr->lkey, 5), 0);
  EXPECT_EQ(pair.b.post_recv(buffer, 16, mr->lkey, 6), ENOMEM);
}

TEST(IbvEmuSrq, TooManySgesAndPostRecvOnAnSrqQpAreEinval) {
  pair_options_t options;
  options.sge_max = 1;
  emu_pair_t pair(quiet_options(), options);
  char buffer[8] = {};
  ibv_mr* mr = pair.b.reg(buffer, sizeof(buffer), local_rw);
  ibv_sge sges[2] = {{reinterpret_cast<std::uint64_t>(buffer), 4, mr->lkey},
                     {reinterpret_cast<std::uint64_t>(buffer + 4), 4, mr->lkey}};
  ibv_recv_wr wr{};
  wr.sg_list = sges;
  wr.num_sge = 2;
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(pair.b.verbs->post_srq_recv(pair.b.srq, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  wr.num_sge = 1;
  bad = nullptr;
  EXPECT_EQ(pair.b.verbs->post_recv(pair.b.qp, &wr, &bad), EINVAL)
      << "a QP with an SRQ takes no receives of its own";
  EXPECT_EQ(bad, &wr);
}

TEST(IbvEmuRecvQueue, FullMeansEnomemWithoutSrq) {
  pair_options_t options;
  options.use_srq = false;
  options.recv_wr_max = 2;
  emu_pair_t pair(quiet_options(), options);
  pair.connect();
  char buffer[8] = {};
  ibv_mr* mr = pair.b.reg(buffer, sizeof(buffer), local_rw);
  EXPECT_EQ(pair.b.post_recv(buffer, 8, mr->lkey, 1), 0);
  EXPECT_EQ(pair.b.post_recv(buffer, 8, mr->lkey, 2), 0);
  EXPECT_EQ(pair.b.post_recv(buffer, 8, mr->lkey, 3), ENOMEM);
}

// ---- inline ----

TEST(IbvEmuInline, OverTheQpsLimitIsEinval) {
  pair_options_t options;
  options.inline_max = 32;
  emu_pair_t pair(quiet_options(), options);
  pair.connect();
  const std::string payload(33, 'i');
  EXPECT_EQ(pair.a.post(IBV_WR_SEND, payload.data(), 33, 0, 1, IBV_SEND_INLINE), EINVAL);
  EXPECT_EQ(pair.a.post(IBV_WR_SEND, payload.data(), 32, 0, 1, IBV_SEND_INLINE), 0);
  EXPECT_EQ(pair.a.post(IBV_WR_RDMA_READ, payload.data(), 4, 0, 1, IBV_SEND_INLINE), EINVAL)
      << "a read has no inline form";
}

TEST(IbvEmuInline, QpOverTheDevicesLimitIsNotCreated) {
  emu_options_t fabric_options = quiet_options();
  fabric_options.max_inline_data = 64;
  pair_options_t options;
  emu_pair_t pair(fabric_options, options);
  ibv_qp_init_attr init{};
  init.send_cq = pair.a.cq;
  init.recv_cq = pair.a.cq;
  init.srq = pair.a.srq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 4;
  init.cap.max_send_sge = 1;
  init.cap.max_inline_data = 65;
  errno = 0;
  EXPECT_EQ(pair.a.verbs->create_qp(pair.a.pd, &init), nullptr);
  EXPECT_EQ(errno, EINVAL);
  init.cap.max_inline_data = 64;
  ibv_qp* qp = pair.a.verbs->create_qp(pair.a.pd, &init);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(init.cap.max_inline_data, 64u) << "the granted capabilities are written back";
  EXPECT_EQ(pair.a.verbs->destroy_qp(qp), 0);
}

// Inline: copied at post time, no lkey needed. Not inline: the HCA reads the
// buffer when the WR goes out, so changing it before the completion shows.
TEST(IbvEmuInline, PayloadIsCopiedAtPostTime) {
  emu_pair_t pair(quiet_options());
  pair.connect();
  char received[2][8] = {};
  ibv_mr* recv_mr = pair.b.reg(received, sizeof(received), local_rw);
  ASSERT_EQ(pair.b.post_recv(received[0], 8, recv_mr->lkey, 0), 0);
  ASSERT_EQ(pair.b.post_recv(received[1], 8, recv_mr->lkey, 1), 0);
  char inline_buffer[8] = "before";
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, inline_buffer, 7, 0xdead, 1,
                        IBV_SEND_SIGNALED | IBV_SEND_INLINE),
            0)
      << "an inline send's lkey is not looked at";
  std::strcpy(inline_buffer, "after!");
  char dma_buffer[8] = "before";
  ibv_mr* send_mr = pair.a.reg(dma_buffer, sizeof(dma_buffer), local_rw);
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, dma_buffer, 7, send_mr->lkey, 2), 0);
  std::strcpy(dma_buffer, "after!");
  ASSERT_EQ(pair.a.poll(2).size(), 2u);
  ASSERT_EQ(pair.b.poll(2).size(), 2u);
  EXPECT_STREQ(received[0], "before") << "inline: the bytes at post time";
  EXPECT_STREQ(received[1], "after!") << "DMA: the bytes when the WR went out";
}

// ---- registration and resources ----

TEST(IbvEmuRegMr, RemoteWriteWithoutLocalWriteIsEinval) {
  emu_pair_t pair(quiet_options());
  char buffer[16];
  errno = 0;
  EXPECT_EQ(pair.a.verbs->reg_mr(pair.a.pd, buffer, sizeof(buffer), IBV_ACCESS_REMOTE_WRITE),
            nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_mr* mr = pair.a.verbs->reg_mr(pair.a.pd, buffer, sizeof(buffer),
                                    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(mr->addr, buffer);
  EXPECT_EQ(mr->length, sizeof(buffer));
  EXPECT_NE(mr->lkey, mr->rkey);
  EXPECT_EQ(pair.a.verbs->dereg_mr(mr), 0);
}

TEST(IbvEmuResources, DestroyingWhatIsInUseIsEbusy) {
  emu_pair_t pair(quiet_options());
  EXPECT_EQ(pair.a.verbs->destroy_cq(pair.a.cq), EBUSY) << "a QP uses the CQ";
  EXPECT_EQ(pair.a.verbs->destroy_srq(pair.a.srq), EBUSY) << "a QP uses the SRQ";
  EXPECT_EQ(pair.a.verbs->dealloc_pd(pair.a.pd), EBUSY) << "objects live on the PD";
  EXPECT_EQ(pair.a.verbs->close_device(pair.a.context), EBUSY) << "objects live on the context";
  // Another HCA's object is foreign to this table.
  EXPECT_EQ(pair.a.verbs->destroy_qp(pair.b.qp), EINVAL);
}

TEST(IbvEmuResources, ParentDomainsBindQpsToAThreadDomain) {
  emu_pair_t pair(quiet_options());
  ibv::verbs_t& verbs = *pair.a.verbs;
  ibv_td_init_attr td_init{};
  ibv_td* td = verbs.alloc_td(pair.a.context, &td_init);
  ASSERT_NE(td, nullptr);
  ibv_parent_domain_init_attr parent_init{};
  parent_init.pd = pair.a.pd;
  parent_init.td = td;
  ibv_pd* parent = verbs.alloc_parent_domain(pair.a.context, &parent_init);
  ASSERT_NE(parent, nullptr);
  EXPECT_EQ(verbs.dealloc_td(td), EBUSY) << "the parent domain uses the TD";
  ibv_qp_init_attr init{};
  init.send_cq = pair.a.cq;
  init.recv_cq = pair.a.cq;
  init.srq = pair.a.srq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 4;
  init.cap.max_send_sge = 1;
  ibv_qp* qp = verbs.create_qp(parent, &init);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(qp->pd, parent);
  // An MR of the parent's PD serves the QP of the parent domain.
  char buffer[8] = {};
  ibv_mr* mr = pair.a.reg(buffer, sizeof(buffer), local_rw);
  EXPECT_NE(mr, nullptr);
  EXPECT_EQ(verbs.dealloc_pd(parent), EBUSY) << "the QP uses the parent domain";
  EXPECT_EQ(verbs.destroy_qp(qp), 0);
  EXPECT_EQ(verbs.dealloc_pd(parent), 0);
  EXPECT_EQ(verbs.dealloc_td(td), 0);
}

}  // namespace
}  // namespace lci::backend::ibv_emu::testing
