// emu_fabric_t: an emulated InfiniBand subnet — hcas_count host channel
// adapters (one port each, LID = index + 1) on a seeded wire in virtual
// time — and, per HCA, a verbs table (ibv_verbs.hpp) over it. The ibv
// backend runs on it unchanged, deterministically: one seed fixes every
// delivery time, hence every completion order (trace_hash() proves it).
// Design and the list of rules: docs/backends/ibv.md, "The emulated device".
//
// Rules it enforces, as the verbs spec states them (each has a test in
// tests/backends/ibv/ that breaks it on purpose):
//   QP state machine  RESET->INIT->RTR->RTS, any->RESET, any->ERR, INIT->INIT,
//                     RTS->RTS; any other transition, a missing required
//                     attribute or one not allowed for the transition:
//                     EINVAL, state unchanged. post_send before RTS,
//                     post_recv in RESET: EINVAL. Posts in ERR are accepted
//                     and completed at once with IBV_WC_WR_FLUSH_ERR.
//   queue depths      send queue max_send_wr (a WR holds its slot until its
//                     completion is polled; an unsignaled one until a later
//                     signaled completion of its QP is polled), SRQ max_wr,
//                     QP receive queue max_recv_wr: ENOMEM beyond. num_sge
//                     over the cap: EINVAL.
//   inline            IBV_SEND_INLINE over max_inline_data: EINVAL; the
//                     payload is copied at post time (the buffer may be
//                     reused at once); create_qp over the device's inline
//                     limit fails.
//   receiver not ready a SEND or WRITE_WITH_IMM that finds no receive is
//                     NAKed and retried after the responder's min_rnr_timer;
//                     after rnr_retry retries (7: forever) the WR completes
//                     with IBV_WC_RNR_RETRY_EXC_ERR and the QP enters ERR.
//   CQ overrun        a completion into a full CQ breaks it: poll_cq returns
//                     a negative value from then on and every QP on it
//                     enters ERR.
//   RDMA protection   the rkey must name a live MR of the responder's PD,
//                     with REMOTE_WRITE (write) or REMOTE_READ (read), whose
//                     range holds [remote_addr, remote_addr + length), on a
//                     QP whose access flags allow it. Otherwise
//                     IBV_WC_REM_ACCESS_ERR (QP flags: IBV_WC_REM_INV_REQ_ERR),
//                     the target memory is untouched, both QPs enter ERR and
//                     the requester's later WRs are flushed. Local SGEs: a
//                     live MR of the QP's PD covering them (LOCAL_WRITE for
//                     a read's or a receive's), else IBV_WC_LOC_PROT_ERR.
//                     reg_mr with REMOTE_WRITE without LOCAL_WRITE: EINVAL.
//   RC ordering       a QP's WRs take effect at the responder in post order,
//                     whatever the wire's jitter; QPs are independent.
//   write-with-imm    consumes a receive (RNR when there is none), completes
//                     there as IBV_WC_RECV_RDMA_WITH_IMM with byte_len the
//                     write's length.
//   transport retry   a QP whose peer QP is gone, not in RTR/RTS or not
//                     connected back to it completes with
//                     IBV_WC_RETRY_EXC_ERR after retry_cnt timeouts.
//   error completions carry only wr_id, status, qp_num and vendor_err valid,
//                     as the spec says; opcode and byte_len are poisoned.
//
// Time. Every verbs call on the data path advances virtual time one tick
// and performs what is due; a poll_cq that finds its CQ empty advances time
// to the next event, so a caller spinning on poll_cq always moves the wire.
//
// Thread safety: every method of every table may run concurrently (one
//                fabric-wide mutex, never held across a call outside the
//                fabric: fibers of the deterministic harness never switch
//                inside).
// Blocking:      never (the mutex guards bounded critical sections).
// Ownership:     the fabric owns every emulated object; the tables hand out
//                pointers to them as libibverbs does. The fabric must
//                outlive its tables' users.
// Allocation:    at object creation; on the data path, one payload copy per
//                inline send and per WR's scatter list.
// Limits:        emu_options_t (the device attributes query_device reports).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/ibv/ibv_verbs.hpp"

namespace lci::backend::ibv_emu {

struct emu_options_t {
  int hcas_count = 2;
  std::uint64_t seed = 0;
  // The wire: a WR takes latency + uniform[0, jitter] + length / bandwidth.
  std::uint64_t latency_ticks = 10;
  std::uint64_t jitter_ticks = 20;
  std::uint64_t bytes_per_tick = 256;
  // Device limits (query_device, query_port).
  int max_qp = 64;
  int max_qp_wr = 64;
  int max_sge = 4;
  int max_cq = 16;
  int max_cqe = 4096;
  int max_srq = 8;
  int max_srq_wr = 256;
  int max_srq_sge = 4;
  int max_mr = 4096;
  int max_pd = 16;
  std::uint32_t max_inline_data = 64;
  std::uint32_t max_msg_sz = 1u << 30;
  // Ticks per unit of the QP's timers: RNR waits (min_rnr_timer + 1) *
  // rnr_tick_ticks, a transport timeout (timeout + 1) * timeout_tick_ticks.
  std::uint64_t rnr_tick_ticks = 16;
  std::uint64_t timeout_tick_ticks = 64;
  // The port's link layer and GID table (query_port, query_gid_ex). On
  // InfiniBand QPs route by LID. On Ethernet (RoCE) the port has LID 0 and
  // a QP routes by its address vector's GID: grh.dgid names the peer HCA's
  // GID entry, grh.sgid_index one of its own, of the same type (RoCE v1 and
  // v2 do not talk to each other). Every HCA sits on an IP subnet of its
  // own, so RoCE v1 (layer 2) reaches only its own HCA: to another, its WRs
  // time out. GID i of HCA h: IB and RoCE v1 fe80::i:(h+1), RoCE v2
  // ::ffff:10.i.(h+1) (IPv4-mapped).
  bool ethernet = false;
  std::vector<ibv_gid_type> gid_types{IBV_GID_TYPE_IB};
  // On-demand paging (query_device_ex's odp_caps): reg_mr with
  // IBV_ACCESS_ON_DEMAND (EINVAL without odp), advise_mr (EOPNOTSUPP
  // without); implicit: reg_mr(pd, nullptr, SIZE_MAX, ON_DEMAND | ...)
  // registers the whole address space.
  bool odp = false;
  bool odp_implicit = false;
  // Concurrent runs (ranks as OS threads): with paced_polls_max > 0 a poll
  // does not tick; one that finds its CQ empty moves time on (a tick, then
  // to the next event) only once every CQ polled lately (in the last 8
  // moves) has been polled empty since time last moved, or after
  // paced_polls_max empty polls since. Virtual time then follows every
  // poller's progress, not the busiest one's (a responder that polls is
  // not outrun by its requester's timers); a CQ nobody polls any more
  // stops counting, and the bound keeps a slow one from stopping the
  // clock. 0: each poll ticks, and an empty one moves to the next event
  // (deterministic runs).
  std::uint64_t paced_polls_max = 0;
  // Concurrent runs: called, under the fabric's lock, for each event that
  // is progress (a completion, a transport retry), so that the simulator's
  // watchdog (world_t::count_progress) sees the wire move while a backend
  // finds out a peer is gone. Deterministic runs tell the scheduler.
  std::function<void()> on_progress;
  // Faults (seeded; off by default): a WR's delivery is delayed by
  // delay_spike_ticks more; reg_mr fails with ENOMEM; post_send refuses a
  // WR with ENOMEM as if the send queue were full.
  double delay_spike_rate = 0.0;
  std::uint64_t delay_spike_ticks = 1000;
  double reg_mr_failure_rate = 0.0;
  double send_queue_full_rate = 0.0;
};

// What happened on the wire so far (tests assert on these).
struct emu_stats_t {
  std::uint64_t wrs_delivered = 0;   // WRs that took effect at the responder
  std::uint64_t rnr_naks = 0;        // receiver-not-ready retries
  std::uint64_t transport_retries = 0;
  std::uint64_t error_completions = 0;  // flushes included
  std::uint64_t flushed_wrs = 0;
  std::uint64_t cq_overruns = 0;
  std::uint64_t delay_spikes = 0;
  std::uint64_t reg_mr_failures = 0;
  std::uint64_t send_queue_full_faults = 0;
  std::uint64_t thread_domains = 0;     // alloc_td calls accepted
  std::uint64_t odp_registrations = 0;  // reg_mr with IBV_ACCESS_ON_DEMAND
  // advise_mr calls accepted, by advice.
  std::uint64_t prefetches = 0;
  std::uint64_t prefetches_write = 0;
  std::uint64_t prefetches_no_fault = 0;
};

class emu_fabric_t {
 public:
  explicit emu_fabric_t(const emu_options_t& options);
  ~emu_fabric_t();
  emu_fabric_t(const emu_fabric_t&) = delete;
  emu_fabric_t& operator=(const emu_fabric_t&) = delete;

  // The verbs table of HCA `hca` (in [0, hcas_count)): its device list holds
  // that one device ("emu<hca>").
  ibv::verbs_t& verbs(int hca);
  const emu_options_t& options() const;

  std::uint64_t now_ticks() const;
  // WRs posted and not yet taken effect (waiting on the wire, or RNR/timeout).
  std::size_t in_flight_count() const;
  // Advances virtual time event by event until nothing is in flight, or
  // ticks_max ticks passed; returns whether the wire is idle.
  bool drain(std::uint64_t ticks_max = 1'000'000);
  // A hash of every event so far (deliveries, NAKs, timeouts, completions
  // with their times): equal for equal seeds and calls.
  std::uint64_t trace_hash() const;
  emu_stats_t stats() const;
  // The access flags `mr` (of any HCA) was registered with; -1 when it is
  // not a live MR.
  int access_of(const ibv_mr* mr) const;
  // The source GID index (grh.sgid_index) of the address vector of every
  // QP of HCA `hca` that has a global one, in QP number order.
  std::vector<int> sgid_indices(int hca) const;
  // The line to print before a run: seed and wire parameters.
  std::string describe() const;

  struct impl_t;

 private:
  std::unique_ptr<impl_t> impl_;
};

}  // namespace lci::backend::ibv_emu
