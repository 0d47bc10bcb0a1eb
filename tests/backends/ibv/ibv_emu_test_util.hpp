// Test helpers over the emulated verbs fabric (backends/ibv_emu/ibv_emu_fabric.hpp):
// two HCAs, each with a context, PD, CQ, SRQ (optional) and one RC QP,
// connected to each other through the verbs table only, as a backend does.
// Every call is checked; the rule tests then break one rule on purpose.
//
// Thread safety: one test thread. Allocation: at construction.
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/ibv/ibv_verbs.hpp"
#include "backends/ibv_emu/ibv_emu_fabric.hpp"

namespace lci::backend::ibv_emu::testing {

struct pair_options_t {
  int cq_depth = 64;
  std::uint32_t send_wr_max = 16;
  std::uint32_t recv_wr_max = 16;  // the SRQ's, or the QP's own without one
  std::uint32_t sge_max = 2;
  std::uint32_t inline_max = 32;
  bool use_srq = true;
  int qp_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  std::uint8_t min_rnr_timer = 1;
  std::uint8_t rnr_retry = 7;  // forever
  std::uint8_t retry_cnt = 3;
  std::uint8_t timeout = 1;
};

// The attributes of each step of RESET -> INIT -> RTR -> RTS, with the
// masks the spec requires.
inline int qp_to_init(ibv::verbs_t& verbs, ibv_qp* qp, int access) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = 1;
  attr.qp_access_flags = static_cast<unsigned>(access);
  return verbs.modify_qp(qp, &attr,
                         IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}
constexpr int rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                         IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
inline ibv_qp_attr rtr_attr(std::uint16_t dest_lid, std::uint32_t dest_qp_num,
                            std::uint8_t min_rnr_timer) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = IBV_MTU_4096;
  attr.dest_qp_num = dest_qp_num;
  attr.rq_psn = 0;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = min_rnr_timer;
  attr.ah_attr.dlid = dest_lid;
  attr.ah_attr.port_num = 1;
  return attr;
}
constexpr int rts_mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                         IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
inline ibv_qp_attr rts_attr(std::uint8_t timeout, std::uint8_t retry_cnt, std::uint8_t rnr_retry) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = 0;
  attr.timeout = timeout;
  attr.retry_cnt = retry_cnt;
  attr.rnr_retry = rnr_retry;
  attr.max_rd_atomic = 1;
  return attr;
}

inline ibv_qp_state qp_state_of(ibv::verbs_t& verbs, ibv_qp* qp) {
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  EXPECT_EQ(verbs.query_qp(qp, &attr, IBV_QP_STATE, &init), 0);
  return attr.qp_state;
}

// One HCA's resources.
struct side_t {
  ibv::verbs_t* verbs = nullptr;
  ibv_context* context = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_srq* srq = nullptr;
  ibv_qp* qp = nullptr;
  std::uint16_t lid = 0;
  std::vector<ibv_mr*> mrs;

  ibv_mr* reg(void* address, std::size_t length, int access) {
    ibv_mr* mr = verbs->reg_mr(pd, address, length, access);
    EXPECT_NE(mr, nullptr) << "reg_mr errno " << errno;
    if (mr != nullptr) mrs.push_back(mr);
    return mr;
  }
  void dereg(ibv_mr* mr) {
    for (auto it = mrs.begin(); it != mrs.end(); ++it) {
      if (*it == mr) {
        mrs.erase(it);
        break;
      }
    }
    EXPECT_EQ(verbs->dereg_mr(mr), 0);
  }
  // One receive of [address, address + length) (into the SRQ if any).
  int post_recv(void* address, std::uint32_t length, std::uint32_t lkey, std::uint64_t wr_id) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(address), length, lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return srq != nullptr ? verbs->post_srq_recv(srq, &wr, &bad) : verbs->post_recv(qp, &wr, &bad);
  }
  // One WR of one SGE.
  int post(ibv_wr_opcode opcode, const void* address, std::uint32_t length, std::uint32_t lkey,
           std::uint64_t wr_id, unsigned flags = IBV_SEND_SIGNALED, std::uint64_t remote_addr = 0,
           std::uint32_t rkey = 0, std::uint32_t imm = 0) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(address), length, lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = opcode;
    wr.send_flags = flags;
    wr.imm_data = imm;
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    const int error = verbs->post_send(qp, &wr, &bad);
    if (error != 0) {
      EXPECT_EQ(bad, &wr) << "bad_wr must name the refused WR";
    }
    return error;
  }
  // Polls until `count` completions arrived or `turns_max` polls passed.
  std::vector<ibv_wc> poll(std::size_t count, int turns_max = 10'000) {
    std::vector<ibv_wc> got;
    for (int turn = 0; turn < turns_max && got.size() < count; ++turn) {
      ibv_wc wc[8];
      const int polled = verbs->poll_cq(cq, 8, wc);
      EXPECT_GE(polled, 0) << "poll_cq failed";
      if (polled < 0) break;
      got.insert(got.end(), wc, wc + polled);
    }
    return got;
  }
  ibv_qp_state state() { return qp_state_of(*verbs, qp); }
  // The async events pending on this side's context, in order.
  std::vector<ibv_async_event> events() {
    std::vector<ibv_async_event> got;
    ibv_async_event event{};
    while (verbs->poll_async_event(context, &event) == 0) got.push_back(event);
    return got;
  }
};

class emu_pair_t {
 public:
  explicit emu_pair_t(const emu_options_t& fabric_options, const pair_options_t& options = {})
      : fabric(fabric_options), options_(options) {
    open(&a, 0);
    open(&b, 1);
  }
  ~emu_pair_t() {
    close(&a);
    close(&b);
  }

  // Both QPs RESET -> INIT -> RTR -> RTS, each pointing at the other.
  void connect() {
    ASSERT_EQ(bring_up(a, b), 0);
    ASSERT_EQ(bring_up(b, a), 0);
  }
  int bring_up(side_t& side, const side_t& peer) {
    if (int error = qp_to_init(*side.verbs, side.qp, options_.qp_access)) return error;
    ibv_qp_attr rtr = rtr_attr(peer.lid, peer.qp->qp_num, options_.min_rnr_timer);
    if (int error = side.verbs->modify_qp(side.qp, &rtr, rtr_mask)) return error;
    ibv_qp_attr rts = rts_attr(options_.timeout, options_.retry_cnt, options_.rnr_retry);
    return side.verbs->modify_qp(side.qp, &rts, rts_mask);
  }
  // Takes `side`'s QP through RESET and up again (how a backend
  // re-establishes a connection after an error).
  int reestablish(side_t& side, const side_t& peer) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RESET;
    if (int error = side.verbs->modify_qp(side.qp, &attr, IBV_QP_STATE)) return error;
    return bring_up(side, peer);
  }

  emu_fabric_t fabric;
  side_t a;
  side_t b;

 private:
  void open(side_t* side, int hca) {
    side->verbs = &fabric.verbs(hca);
    ibv::verbs_t& verbs = *side->verbs;
    int devices_count = 0;
    ibv_device** devices = verbs.get_device_list(&devices_count);
    ASSERT_EQ(devices_count, 1);
    side->context = verbs.open_device(devices[0]);
    verbs.free_device_list(devices);
    ASSERT_NE(side->context, nullptr);
    ibv_port_attr port{};
    ASSERT_EQ(verbs.query_port(side->context, 1, &port), 0);
    side->lid = port.lid;
    side->pd = verbs.alloc_pd(side->context);
    ASSERT_NE(side->pd, nullptr);
    side->cq = verbs.create_cq(side->context, options_.cq_depth);
    ASSERT_NE(side->cq, nullptr);
    ibv_qp_init_attr init{};
    if (options_.use_srq) {
      ibv_srq_init_attr srq_init{};
      srq_init.attr.max_wr = options_.recv_wr_max;
      srq_init.attr.max_sge = options_.sge_max;
      side->srq = verbs.create_srq(side->pd, &srq_init);
      ASSERT_NE(side->srq, nullptr);
    } else {
      init.cap.max_recv_wr = options_.recv_wr_max;
      init.cap.max_recv_sge = options_.sge_max;
    }
    init.send_cq = side->cq;
    init.recv_cq = side->cq;
    init.srq = side->srq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = options_.send_wr_max;
    init.cap.max_send_sge = options_.sge_max;
    init.cap.max_inline_data = options_.inline_max;
    side->qp = verbs.create_qp(side->pd, &init);
    ASSERT_NE(side->qp, nullptr) << "create_qp errno " << errno;
  }
  void close(side_t* side) {
    ibv::verbs_t& verbs = *side->verbs;
    if (side->qp != nullptr) {
      EXPECT_EQ(verbs.destroy_qp(side->qp), 0);
    }
    if (side->srq != nullptr) {
      EXPECT_EQ(verbs.destroy_srq(side->srq), 0);
    }
    for (ibv_mr* mr : side->mrs) EXPECT_EQ(verbs.dereg_mr(mr), 0);
    if (side->cq != nullptr) {
      EXPECT_EQ(verbs.destroy_cq(side->cq), 0);
    }
    if (side->pd != nullptr) {
      EXPECT_EQ(verbs.dealloc_pd(side->pd), 0);
    }
    if (side->context != nullptr) {
      EXPECT_EQ(verbs.close_device(side->context), 0);
    }
  }

  pair_options_t options_;
};

constexpr int local_rw = IBV_ACCESS_LOCAL_WRITE;
constexpr int remote_rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

}  // namespace lci::backend::ibv_emu::testing
