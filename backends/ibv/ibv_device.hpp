// ibv_device_t: one network device of the ibv backend (backends/backend.hpp)
// over a verbs table (ibv_verbs.hpp): a PD, one CQ, two SRQs (the caller's
// receives; the device's own empty "notice" receives) and two RC QPs to
// every rank, itself included (a message QP on the caller's SRQ for sends;
// an RMA QP on the notice SRQ for puts, puts with immediate and gets),
// connected at creation by exchanging QP numbers, LID and GID through the
// context's bootstrap (docs/backends/ibv.md, "The device").
//
// The ibv attributes (net_device_attr_t::ibv, checked before anything is
// created, so every rank refuses a bad value before the first exchange):
//   gid_index    a set index (< the port's GID table) addresses the QPs
//                through a GRH with that source GID; -1 on Ethernet (RoCE),
//                or with force_gid_auto_select, picks the first RoCE v2 GID
//                (IPv4-mapped first), else index 0; -1 on InfiniBand: LID
//                routing, no GRH.
//   odp          explicit_odp: registrations with IBV_ACCESS_ON_DEMAND;
//                implicit_odp: one implicit on-demand MR of the whole
//                address space, whose keys every registration uses (no
//                reg_mr per buffer). Only where query_device_ex reports the
//                capability (implicit without IMPLICIT: explicit); without
//                it pinned registrations (resolved attr: none).
//   prefetch     with on-demand paging: register_memory advises the range
//                (advise_mr, synchronous); needs odp != none.
//   td           none (QPs on the PD), all_qp (one TD and parent domain for
//                all QPs), per_qp (one per QP); a provider without thread
//                domains gets none.
// A value outside its enum, a GID index beyond the table, or a prefetch
// without on-demand paging: std::invalid_argument naming the attribute.
//
// Operations: post_sends/post_puts/post_putImms go inline (they copy the
// payload; inject_size_max is the QP's granted max_inline_data);
// post_send/post_put/post_putImm/post_get use the caller's registration (or
// a registration of their own for an empty net_mr_t, released at
// completion); receives go to the caller's SRQ. Every WR is signaled, so a send slot
// is free exactly when its completion is polled; "s" variants are not
// reported on success.
//
// Errors: IBV_WC_REM_ACCESS_ERR / IBV_WC_REM_INV_REQ_ERR on an RMA fail that
// one operation with a protection fault (fault_address = the remote
// address); the WRs flushed behind it are posted again once the QP is
// re-established (RESET -> INIT -> RTR -> RTS to the same peer QP). The
// responder's QP, which the error also moved to ERR, is re-established when
// its async event arrives. A transport or RNR retry exhausted means the peer
// is unreachable: its operations fail with peer_crashed naming the rank, and
// poll_comp reports it once (peer_down). To learn of a dead peer it never
// sends to, an idle device probes its peers in turn with a zero-byte RDMA
// write (8 empty polls in a row trigger one probe); a probe that times out
// 8 times in a row (the QP re-established in between) means the peer is
// gone (a dead process's QPs are destroyed with it). A device that closes
// while its process goes on says goodbye first: a zero-byte send on each
// peer's RMA QP (nothing else sends there), after which the peer no longer
// probes it; so a peer's free_device is never reported as its crash. An
// operation posted to a device that said goodbye still fails as to a dead
// peer (nothing will ever take it).
//
// Thread safety: every method may run concurrently. Try-locks (paper
//                §4.2.2; busy: retry_lock, or 0 completions) per queue:
//                a post takes its QP's lock (per_qp: one per QP; none and
//                all_qp: one for all the device's QPs, as their thread
//                domain requires) and the send-op pool's; post_recv the
//                SRQ's; poll_comp the CQ's, and inside it, by try only,
//                the QP locks of the QPs it re-establishes or probes and
//                the SRQ's to repost (what a busy lock holds back waits for
//                the next poll). So posts to different QPs, receives and
//                polls run in parallel. register_memory/deregister_memory
//                take no lock (libibverbs' registration takes none).
//                Shared between the locks: a channel's `outstanding` and
//                `needs_repair`, a peer's `dead` (atomics: see
//                ibv_device.cpp), and freed or settled ops, which go back
//                through lock-free push-only lists (op_inbox_t).
// Blocking:      never, except the destructor, which polls (calling the
//                bootstrap's wait hook) until every accepted send, and
//                then every goodbye, has completed. A poll_comp that finds nothing calls the wait
//                hook once, holding no lock of the device (a scheduling
//                point under the simulator).
// Ownership:     backend.hpp's; the device owns its verbs objects.
// Allocation:    at construction; on the data path only a registration of
//                its own for a post with an empty net_mr_t.
// Limits:        net_max_sends operations in flight (and as many per QP),
//                net_max_recvs receives, and the device's own notice
//                receives; the CQ holds them all, so it cannot overrun.
//                Beyond them: retry_nomem.
//
// Life cycle:    constructed (collective) -> open -> destroyed (drains the
//                sends). A post after destruction is undefined (the handle
//                is gone).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.hpp"
#include "backends/ibv/ibv_context.hpp"
#include "backends/ibv/ibv_verbs.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::backend::ibv {

// Queue depths when the request leaves them 0; the completion queue holds
// both (ibv_device_t).
inline constexpr std::size_t sends_default = 64;
inline constexpr std::size_t recvs_default = 64;

class ibv_device_t final : public backend::net_device_t {
 public:
  ibv_device_t(ibv_context_t& context, const backend::net_device_attr_t& requested);
  ~ibv_device_t() override;
  ibv_device_t(const ibv_device_t&) = delete;
  ibv_device_t& operator=(const ibv_device_t&) = delete;

  const backend::net_device_attr_t& attr() const override { return attr_; }
  // Thread domains the device allocated (0 under td_strategy_t::none or a
  // provider without them; 1 under all_qp; one per QP under per_qp).
  std::size_t thread_domains_count() const { return tds_.size(); }
  // The GID index the QPs' address vectors use (exchanged with the peers);
  // -1: none (InfiniBand LID routing).
  int gid_index() const { return gid_index_; }
  // The ibv attributes in force (net_device_attr_t::ibv, resolved).
  const backend::net_ibv_attr_t& ibv_attr() const { return attr_.ibv; }

  [[nodiscard]] error_t post_recv(void* buffer, std::size_t size, backend::net_mr_t mr,
                                  void* user_context) override;
  [[nodiscard]] error_t post_recv_multi(void* buffer, std::size_t size,
                                        void* user_context) override;
  [[nodiscard]] error_t post_sends(int rank, const void* buffer, std::size_t size,
                                   backend::net_imm_data_t imm_data) override;
  [[nodiscard]] error_t post_send(int rank, const void* buffer, std::size_t size,
                                  backend::net_mr_t mr, backend::net_imm_data_t imm_data,
                                  void* user_context) override;
  [[nodiscard]] error_t post_puts(int rank, const void* buffer, std::size_t size,
                                  std::uint64_t offset, backend::net_rmr_t rmr) override;
  [[nodiscard]] error_t post_put(int rank, const void* buffer, std::size_t size,
                                 backend::net_mr_t mr, std::uint64_t offset,
                                 backend::net_rmr_t rmr, void* user_context) override;
  [[nodiscard]] error_t post_putImms(int rank, const void* buffer, std::size_t size,
                                     std::uint64_t offset, backend::net_rmr_t rmr,
                                     backend::net_imm_data_t imm_data) override;
  [[nodiscard]] error_t post_putImm(int rank, const void* buffer, std::size_t size,
                                    backend::net_mr_t mr, std::uint64_t offset,
                                    backend::net_rmr_t rmr, backend::net_imm_data_t imm_data,
                                    void* user_context) override;
  [[nodiscard]] error_t post_get(int rank, void* buffer, std::size_t size, backend::net_mr_t mr,
                                 std::uint64_t offset, backend::net_rmr_t rmr,
                                 void* user_context) override;
  std::size_t poll_comp(backend::net_status_t* statuses, std::size_t statuses_max) override;
  [[nodiscard]] error_t register_memory(void* address, std::size_t size,
                                        backend::net_mr_t* mr) override;
  void deregister_memory(backend::net_mr_t* mr) override;
  backend::net_rmr_t get_rmr(backend::net_mr_t mr) const override;

 private:
  enum class op_state_t : std::uint8_t { free, posted, settled, deferred };
  // One operation: a send-side WR or a receive; its index is the wr_id.
  struct op_t {
    op_t* next = nullptr;  // free list, settled list or a peer's deferred list
    op_state_t state = op_state_t::free;
    ibv_wr_opcode opcode = IBV_WR_SEND;  // send side
    bool is_recv = false;
    bool is_notice = false;  // one of the device's own receives on the RMA SRQ
    bool inject = false;                 // net_post_sends/puts: success not reported
    bool is_probe = false;               // the device's own liveness probe
    bool is_goodbye = false;             // the device's own farewell (say_goodbye)
    bool is_inline = false;
    int rank = -1;
    void* user_context = nullptr;
    void* buffer = nullptr;  // the caller's buffer (recv: where the message lands)
    std::size_t length = 0;
    std::uint32_t lkey = 0;
    ibv_mr* own_mr = nullptr;  // a registration of its own (empty net_mr_t)
    std::uint64_t remote_address = 0;
    std::uint32_t rkey = 0;
    backend::net_imm_data_t imm_data = 0;
    backend::net_fault_t fault = backend::net_fault_t::none;  // settled: why
  };
  struct op_list_t {
    op_t* head = nullptr;
    op_t* tail = nullptr;
    void push(op_t* op);
    void push_front(op_t* op);
    void push_front(op_list_t* ops);  // all of *ops, in their order; empties it
    op_t* pop();
    bool empty() const { return head == nullptr; }
  };
  // Ops handed from any thread to the holder of a lock: any thread pushes
  // (lock-free: a CAS fails only when another push succeeded); the holder
  // takes them all at once (an exchange: no ABA, nothing is popped singly).
  struct op_inbox_t {
    util::atomic<op_t*> head{nullptr};
    void push(op_t* op);
    op_list_t take_all();  // oldest first
  };
  // A try-lock alone on its cache line (QP locks under per_qp).
  struct alignas(util::cache_line_bytes) padded_lock_t {
    util::spinlock_t lock;
  };
  // One QP to a peer and what waits on it.
  struct channel_t {
    ibv_qp* qp = nullptr;
    std::uint32_t remote_qp_num = 0;
    util::spinlock_t* lock = nullptr;  // its QP lock (its own, or the device's qps_lock_)
    // WRs posted on qp whose completion is not yet polled: posters add
    // (under lock), the poller subtracts.
    util::atomic<std::size_t> outstanding{0};
    // The QP is in ERR: re-establish it once outstanding == 0. Set by the
    // poller; cleared by the poller holding lock; posters read it.
    util::atomic<bool> needs_repair{false};
    // Under lock: posts made while it needs repair, posted after it.
    op_list_t deferred;
    // !deferred.empty(), written under lock, as a hint the poller reads
    // unlocked (a stale false is seen right at a later poll).
    util::atomic<bool> deferred_waiting{false};
    // The poller's (CQ lock): flushed WRs to post again (moved to deferred
    // under lock), and after a remote access error, whether the QP was
    // re-established with no WR completed since: the peer's QP may still be
    // in ERR until the peer polls, so a transport timeout means "not yet",
    // up to repair_rounds_max rounds.
    op_list_t flushed;
    bool recovering = false;
    std::size_t repair_rounds = 0;
  };
  // Two QPs per peer: sends on the message QP, whose receives are the
  // caller's (the SRQ); RMA on the RMA QP, whose SRQ holds the device's own
  // empty receives, so a write with immediate never takes a caller's buffer
  // and needs none posted (backend.hpp).
  static constexpr std::size_t message_channel = 0;
  static constexpr std::size_t rma_channel = 1;
  static constexpr std::size_t channels_count = 2;
  struct peer_t {
    std::array<channel_t, channels_count> channels;
    std::uint16_t remote_lid = 0;
    ibv_gid remote_gid{};  // addresses the peer on RoCE (Ethernet link layer)
    util::atomic<bool> dead{false};  // unreachable: every operation fails (set by the poller)
    bool dead_reported = false;      // the poller's
    bool closed = false;  // the poller's: its device said goodbye (never probed again)
  };
  struct post_args_t;

  // peer.dead as the poller reads it (relaxed: only the poller writes it,
  // and the CQ lock orders one poller after the other).
  static bool is_dead(const peer_t& peer) { return peer.dead.load(util::mo_relaxed); }

  // The constructor's work; it destroys what it made if this throws.
  void resolve_ibv_attr(const backend::net_ibv_attr_t& requested);
  int select_gid_index(const backend::net_ibv_attr_t& requested) const;
  void resolve_odp(const backend::net_ibv_attr_t& requested);
  void set_up();
  void destroy_verbs_objects();
  void create_queues();
  ibv_pd* qp_domain();
  void connect_peers();
  int bring_up(const peer_t& peer, channel_t& channel);
  int bring_up_to_rtr(const peer_t& peer, channel_t& channel);
  int rtr_to_rts(channel_t& channel);
  [[nodiscard]] error_t post_op(const char* what, const post_args_t& args);
  [[nodiscard]] error_t fill_op(op_t* op, const post_args_t& args);
  int post_wr(channel_t& channel, op_t* op);
  channel_t& channel_of(const op_t* op);
  [[nodiscard]] error_t post_recv_op(op_t* op);
  ibv_mr* reg_range(void* address, std::size_t size, int access);
  int dereg_range(ibv_mr* mr);
  void prefetch(ibv_mr* mr, void* address, std::size_t size);
  void assign_qp_locks();
  op_t* alloc_op(bool is_recv);
  void release_op(op_t* op);
  void settle_deferred_of_dead(peer_t& peer, channel_t& channel);
  void repair_channel(peer_t& peer, channel_t& channel);
  void repost_recvs();
  std::size_t poll_locked(backend::net_status_t* statuses, std::size_t statuses_max);
  std::size_t drain_settled(backend::net_status_t* statuses, std::size_t statuses_max);
  bool take_wc(const ibv_wc& wc, backend::net_status_t* status);
  bool take_recv_wc(const ibv_wc& wc, op_t* op, backend::net_status_t* status);
  bool take_send_error(const ibv_wc& wc, op_t* op, backend::net_status_t* status);
  void mark_dead(int rank);
  void check_async_events();
  void repair_peers();
  bool probe_next_peer();
  void say_goodbye();
  void post_deferred(channel_t& channel);
  int rank_of_qp_num(std::uint32_t qp_num) const;
  void drain();

  ibv_context_t& context_;
  verbs_t& verbs_;
  const int rank_;
  const int ranks_count_;
  backend::net_device_attr_t attr_;
  std::size_t sends_max_ = 0;
  std::size_t recvs_max_ = 0;
  std::size_t notices_max_ = 0;
  std::uint32_t inline_max_ = 0;
  int gid_index_ = -1;
  ibv_gid gid_{};          // the entry gid_index_ names (zero without one)
  int odp_access_ = 0;     // IBV_ACCESS_ON_DEMAND under explicit_odp
  ibv_mr* implicit_mr_ = nullptr;  // under implicit_odp: every registration's keys
  ibv_pd* pd_ = nullptr;
  std::vector<ibv_td*> tds_;             // per attr_.ibv.td
  std::vector<ibv_pd*> parent_domains_;  // one per TD: where the QPs are created
  bool tds_unsupported_ = false;         // alloc_td said EOPNOTSUPP: QPs on the PD
  ibv_cq* cq_ = nullptr;
  ibv_srq* srq_ = nullptr;         // the caller's receives
  ibv_srq* notice_srq_ = nullptr;  // the device's own, for writes with immediate
  std::vector<peer_t> peers_;
  std::vector<std::pair<std::uint32_t, int>> qp_nums_;  // sorted (local qp_num, rank)
  // sends_max_ send ops, recvs_max_ receives, then notices_max_ notice receives.
  std::vector<op_t> ops_;
  std::vector<unsigned char> inline_arena_;  // inline_max_ bytes per send op
  op_t* free_sends_ = nullptr;  // under send_pool_lock_
  op_t* free_recvs_ = nullptr;  // under srq_lock_
  op_inbox_t freed_sends_;      // released send ops, taken into free_sends_ when it is empty
  op_inbox_t freed_recvs_;
  op_inbox_t settled_by_posts_;  // posts to dead peers, taken by the poller
  // The poller's (cq_lock_):
  op_list_t settled_;
  op_list_t recvs_to_repost_;
  std::size_t dead_to_report_ = 0;  // peers dead and not yet reported
  std::size_t polls_count_ = 0;
  std::size_t idle_polls_ = 0;     // polls in a row that found nothing
  std::size_t probe_next_rank_ = 0;
  // The try-locks, each on its own cache line (posters, receivers and the
  // poller take different ones at once).
  padded_lock_t cq_lock_;
  padded_lock_t srq_lock_;         // the caller's SRQ and free_recvs_
  padded_lock_t send_pool_lock_;   // free_sends_
  padded_lock_t qps_lock_;         // every QP's, under td none and all_qp
  std::unique_ptr<padded_lock_t[]> qp_locks_;  // one per QP, under per_qp
};
static_assert(alignof(ibv_device_t) >= util::cache_line_bytes,
              "the device's try-locks sit on cache lines of their own");

}  // namespace lci::backend::ibv
