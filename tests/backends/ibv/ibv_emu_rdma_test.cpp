// The emulated verbs device's RDMA and protection rules
// (backends/ibv_emu/ibv_emu_fabric.hpp): rkey, bounds and access-flag checks at
// the responder (remote access error: QPs to ERR, later WRs flushed, target
// memory untouched, the connection re-established through RESET), local
// key checks, and a receive too small for its message. Each test breaks its
// rule on purpose.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cstdint>
#include <cstring>
#include <string>
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

std::uint64_t address_of(const void* pointer) { return reinterpret_cast<std::uint64_t>(pointer); }

TEST(IbvEmuRdma, WriteAndReadMoveTheBytes) {
  emu_pair_t pair(seeded(sim::seed_from_env(31)));
  pair.connect();
  char remote[16] = "remote-bytes";
  char local[16] = "local-bytes";
  ibv_mr* remote_mr = pair.b.reg(remote, sizeof(remote), remote_rw);
  ibv_mr* local_mr = pair.a.reg(local, sizeof(local), local_rw);
  char read_back[16] = {};
  ibv_mr* read_mr = pair.a.reg(read_back, sizeof(read_back), local_rw);
  ASSERT_EQ(pair.a.post(IBV_WR_RDMA_READ, read_back, 13, read_mr->lkey, 1, IBV_SEND_SIGNALED,
                        address_of(remote), remote_mr->rkey),
            0);
  ASSERT_EQ(pair.a.post(IBV_WR_RDMA_WRITE, local, 12, local_mr->lkey, 2, IBV_SEND_SIGNALED,
                        address_of(remote), remote_mr->rkey),
            0);
  const std::vector<ibv_wc> got = pair.a.poll(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(got[0].opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(got[1].opcode, IBV_WC_RDMA_WRITE);
  EXPECT_STREQ(read_back, "remote-bytes") << "the read came first (RC order)";
  EXPECT_STREQ(remote, "local-bytes");
  EXPECT_TRUE(pair.b.poll(1, 5).empty()) << "a plain write completes nothing at the target";
}

// The common check of a refused RDMA: the failing WR gets `status`, the
// next one is flushed, both QPs are in ERR, the target is untouched, and
// the connection comes back through RESET.
void expect_remote_failure(emu_pair_t& pair, ibv_wc_status status, const char* target,
                           const char* target_before) {
  const std::vector<ibv_wc> got = pair.a.poll(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].wr_id, 1u);
  EXPECT_EQ(got[0].status, status);
  EXPECT_EQ(got[0].qp_num, pair.a.qp->qp_num);
  EXPECT_EQ(got[1].wr_id, 2u);
  EXPECT_EQ(got[1].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(pair.a.state(), IBV_QPS_ERR);
  EXPECT_EQ(pair.b.state(), IBV_QPS_ERR) << "the responder's QP fails too";
  const std::vector<ibv_async_event> events = pair.b.events();
  ASSERT_EQ(events.size(), 1u) << "the responder hears of it by an async event";
  EXPECT_EQ(events[0].event_type,
            status == IBV_WC_REM_ACCESS_ERR ? IBV_EVENT_QP_ACCESS_ERR : IBV_EVENT_QP_REQ_ERR);
  EXPECT_EQ(events[0].element.qp, pair.b.qp);
  EXPECT_TRUE(pair.a.events().empty()) << "the requester hears of it by its completion";
  EXPECT_STREQ(target, target_before) << "the victim's memory is untouched";
  ASSERT_EQ(pair.reestablish(pair.a, pair.b), 0);
  ASSERT_EQ(pair.reestablish(pair.b, pair.a), 0);
  char buffer[4] = {};
  ibv_mr* mr = pair.b.reg(buffer, sizeof(buffer), local_rw);
  ASSERT_EQ(pair.b.post_recv(buffer, sizeof(buffer), mr->lkey, 9), 0);
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, "ok", 3, 0, 3, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  const std::vector<ibv_wc> after = pair.a.poll(1);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].status, IBV_WC_SUCCESS) << "re-established";
  EXPECT_STREQ(buffer, "ok");
}

// Posts the failing WR (1) and one behind it (2).
void post_write_and_follower(emu_pair_t& pair, std::uint64_t remote_addr, std::uint32_t rkey,
                             std::uint32_t length = 4) {
  ASSERT_EQ(pair.a.post(IBV_WR_RDMA_WRITE, "evil", length, 0, 1,
                        IBV_SEND_SIGNALED | IBV_SEND_INLINE, remote_addr, rkey),
            0);
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, "next", 5, 0, 2, IBV_SEND_INLINE), 0);
}

TEST(IbvEmuRdmaProtection, UnknownRkeyIsARemoteAccessError) {
  emu_pair_t pair(seeded(sim::seed_from_env(32)));
  pair.connect();
  char target[16] = "victim";
  ibv_mr* mr = pair.b.reg(target, sizeof(target), remote_rw);
  post_write_and_follower(pair, address_of(target), mr->rkey ^ 0x5500);
  expect_remote_failure(pair, IBV_WC_REM_ACCESS_ERR, target, "victim");
}

TEST(IbvEmuRdmaProtection, OneByteOutOfBoundsIsARemoteAccessError) {
  emu_pair_t pair(seeded(sim::seed_from_env(33)));
  pair.connect();
  char target[16] = "victim";
  ibv_mr* mr = pair.b.reg(target, 8, remote_rw);  // only the first 8 bytes
  post_write_and_follower(pair, address_of(target) + 5, mr->rkey);  // [5, 9)
  expect_remote_failure(pair, IBV_WC_REM_ACCESS_ERR, target, "victim");
}

TEST(IbvEmuRdmaProtection, WriteWithoutRemoteWriteAccessIsARemoteAccessError) {
  emu_pair_t pair(seeded(sim::seed_from_env(34)));
  pair.connect();
  char target[16] = "victim";
  ibv_mr* mr = pair.b.reg(target, sizeof(target), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  post_write_and_follower(pair, address_of(target), mr->rkey);
  expect_remote_failure(pair, IBV_WC_REM_ACCESS_ERR, target, "victim");
}

TEST(IbvEmuRdmaProtection, ReadWithoutRemoteReadAccessIsARemoteAccessError) {
  emu_pair_t pair(seeded(sim::seed_from_env(35)));
  pair.connect();
  char target[16] = "secret";
  ibv_mr* mr = pair.b.reg(target, sizeof(target), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  char sink[16] = "sink";
  ibv_mr* sink_mr = pair.a.reg(sink, sizeof(sink), local_rw);
  ASSERT_EQ(pair.a.post(IBV_WR_RDMA_READ, sink, 7, sink_mr->lkey, 1, IBV_SEND_SIGNALED,
                        address_of(target), mr->rkey),
            0);
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, "next", 5, 0, 2, IBV_SEND_INLINE), 0);
  expect_remote_failure(pair, IBV_WC_REM_ACCESS_ERR, target, "secret");
  EXPECT_STREQ(sink, "sink") << "nothing was read";
}

TEST(IbvEmuRdmaProtection, StaleRkeyAfterDeregistrationIsARemoteAccessError) {
  emu_pair_t pair(seeded(sim::seed_from_env(36)));
  pair.connect();
  char target[16] = "victim";
  ibv_mr* mr = pair.b.reg(target, sizeof(target), remote_rw);
  const std::uint32_t rkey = mr->rkey;
  pair.b.dereg(mr);
  ibv_mr* again = pair.b.reg(target, sizeof(target), remote_rw);  // same memory, new key
  ASSERT_NE(again->rkey, rkey) << "keys are never reused";
  post_write_and_follower(pair, address_of(target), rkey);
  expect_remote_failure(pair, IBV_WC_REM_ACCESS_ERR, target, "victim");
}

TEST(IbvEmuRdmaProtection, AnotherPdsMrIsARemoteAccessError) {
  emu_pair_t pair(seeded(sim::seed_from_env(37)));
  pair.connect();
  ibv_pd* other_pd = pair.b.verbs->alloc_pd(pair.b.context);
  ASSERT_NE(other_pd, nullptr);
  char target[16] = "victim";
  ibv_mr* mr = pair.b.verbs->reg_mr(other_pd, target, sizeof(target), remote_rw);
  ASSERT_NE(mr, nullptr);
  post_write_and_follower(pair, address_of(target), mr->rkey);
  expect_remote_failure(pair, IBV_WC_REM_ACCESS_ERR, target, "victim");
  EXPECT_EQ(pair.b.verbs->dereg_mr(mr), 0);
  EXPECT_EQ(pair.b.verbs->dealloc_pd(other_pd), 0);
}

TEST(IbvEmuRdmaProtection, QpWithoutRemoteWriteRefusesWritesAsInvalidRequest) {
  pair_options_t options;
  options.qp_access = IBV_ACCESS_LOCAL_WRITE;
  emu_pair_t pair(seeded(sim::seed_from_env(38)), options);
  pair.connect();
  char target[16] = "victim";
  ibv_mr* mr = pair.b.reg(target, sizeof(target), remote_rw);
  post_write_and_follower(pair, address_of(target), mr->rkey);
  expect_remote_failure(pair, IBV_WC_REM_INV_REQ_ERR, target, "victim");
}

TEST(IbvEmuRdmaProtection, ZeroLengthWriteChecksNoKey) {
  emu_pair_t pair(seeded(sim::seed_from_env(39)));
  pair.connect();
  ASSERT_EQ(pair.a.post(IBV_WR_RDMA_WRITE, nullptr, 0, 0, 1, IBV_SEND_SIGNALED, 0x1000, 0xbad), 0);
  const std::vector<ibv_wc> got = pair.a.poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(pair.a.state(), IBV_QPS_RTS);
}

TEST(IbvEmuLocalProtection, SendFromAnUnregisteredBufferIsALocalProtectionError) {
  emu_pair_t pair(seeded(sim::seed_from_env(40)));
  pair.connect();
  char buffer[8] = "data";
  ibv_mr* mr = pair.a.reg(buffer, 4, local_rw);  // 4 bytes registered
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, buffer, 8, mr->lkey, 1), 0);  // 8 sent
  const std::vector<ibv_wc> got = pair.a.poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, IBV_WC_LOC_PROT_ERR);
  EXPECT_EQ(pair.a.state(), IBV_QPS_ERR);
  EXPECT_EQ(pair.b.state(), IBV_QPS_RTS) << "a local error is the requester's alone";
}

TEST(IbvEmuLocalProtection, ReadIntoAnMrWithoutLocalWriteIsALocalProtectionError) {
  emu_pair_t pair(seeded(sim::seed_from_env(41)));
  pair.connect();
  char remote[8] = "remote";
  ibv_mr* remote_mr = pair.b.reg(remote, sizeof(remote), remote_rw);
  char sink[8] = "sink";
  ibv_mr* sink_mr = pair.a.reg(sink, sizeof(sink), 0);  // read-only locally
  ASSERT_EQ(pair.a.post(IBV_WR_RDMA_READ, sink, 7, sink_mr->lkey, 1, IBV_SEND_SIGNALED,
                        address_of(remote), remote_mr->rkey),
            0);
  const std::vector<ibv_wc> got = pair.a.poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, IBV_WC_LOC_PROT_ERR);
  EXPECT_STREQ(sink, "sink");
}

TEST(IbvEmuRecvLength, MessageOverItsReceiveFailsBothSides) {
  emu_pair_t pair(seeded(sim::seed_from_env(42)));
  pair.connect();
  char small[4] = "abc";
  ibv_mr* mr = pair.b.reg(small, sizeof(small), local_rw);
  ASSERT_EQ(pair.b.post_recv(small, sizeof(small), mr->lkey, 77), 0);
  ASSERT_EQ(pair.a.post(IBV_WR_SEND, "too long", 9, 0, 1, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  const std::vector<ibv_wc> sent = pair.a.poll(1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, IBV_WC_REM_INV_REQ_ERR);
  const std::vector<ibv_wc> got = pair.b.poll(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].wr_id, 77u);
  EXPECT_EQ(got[0].status, IBV_WC_LOC_LEN_ERR);
  EXPECT_STREQ(small, "abc") << "nothing was scattered";
  EXPECT_EQ(pair.a.state(), IBV_QPS_ERR);
  EXPECT_EQ(pair.b.state(), IBV_QPS_ERR);
}

}  // namespace
}  // namespace lci::backend::ibv_emu::testing
