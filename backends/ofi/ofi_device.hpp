// ofi_device_t: one LCI network device over libfabric (paper §4.2.4): its
// own domain, an FI_EP_RDM endpoint, a completion queue (FI_CQ_FORMAT_DATA,
// read with fi_cq_readfrom so every completion names its peer) and an
// FI_AV_TABLE address vector holding every rank (a map each way between
// rank and fi_addr_t: shm does not always number a new AV from 0).
//
// Mapping of the contract onto libfabric:
//   post_recv             fi_recv (any source)
//   post_recv_multi       fi_recvmsg with FI_MULTI_RECV (any source; below)
//   post_send / _sends    fi_sendmsg with FI_REMOTE_CQ_DATA = imm; the "s"
//                         variant adds FI_INJECT (size <= inject_size_max)
//   post_put / _puts      fi_writemsg, FI_DELIVERY_COMPLETE (+ FI_INJECT)
//   post_putImm / _putImms  the same with FI_REMOTE_CQ_DATA = length << 32 |
//                         imm: providers need not report a remote write's
//                         length (tcp reports 0), so it travels in the data
//                         (emulated where the source is not reported: below)
//   post_get              fi_readmsg
// The "s" variants still pass an op context and ask for a completion: on
// success it is swallowed (they return done and report nothing), but a fault
// comes back naming the rank and address, with user_context == nullptr, as
// the contract requires. Except post_sends over shm: its inject copies the
// message into the peer's receive queue inside the call, so nothing stays
// in flight that could fail later; it is fi_injectdata, with no op and no
// completion to read (a dead peer still fails it: see Faults).
// FI_DELIVERY_COMPLETE makes a put complete only once the target has
// accepted it, so a refused key (tcp: the target drops the
// connection and the put fails) reaches the initiator as a fault.
//
// Put-with-immediate: the target's remote_write must name the source rank.
// fi_cq_readfrom gives it for remote CQ data on shm, but ofi_rxm writes
// remote-write completions without a source (it reports rank 0). Where the
// source is not known to be reported (every provider but shm), putImm is
// emulated: the write (delivery complete) and then, from the poll that sees
// its completion, a zero-byte "notice" carrying length << 32 | imm as CQ
// data. A notice is a tagged message (FI_TAGGED): the target device keeps
// notices_max zero-byte tagged receives of its own posted, and tagged and
// untagged messages never match each other's receives, so a notice never
// consumes a receive the caller posted. Its completion names the source
// (receives do), becomes the remote_write, and the receive is posted again.
// The initiator's write completion is reported when the write lands, before
// the notice is sent. (A second endpoint for notices would do the same, but
// ofi_rxm spends ~0.2 s in each fi_enable.)
//
// Zero-byte puts: no provider op. Over shm (libfabric 1.17) a zero-length
// fi_writemsg never completes, and one moves no data anyway: without
// immediate data the put completes through the device's own list of
// settled ops (where failed ops wait too), with no fault; with it, the put is the notice alone
// (every device keeps notice receives, native put-with-immediate or not),
// whose send completion is the caller's write completion.
//
// Multi-receive buffers (post_recv_multi; supports_multi_recv only where it
// was requested, the provider granted FI_MULTI_RECV (ofi_context.hpp) and
// LCI_OFI_MULTI_RECV=1: off by default, see docs/backends/ofi.md):
// multi_recv_min_free is the caller's value, or multi_recv_min_free_default,
// at most max_msg_size, set with FI_OPT_MIN_MULTI_RECV right after
// fi_enable (before it, shm of libfabric 1.17 crashes: it keeps the option
// in a receive context that fi_enable creates). One op of the receive pool
// stays posted for the buffer's whole life; each message's completion names
// its bytes (the CQ entry's buf; both providers pack at byte granularity)
// and is reported from that op without reposting anything. How the release
// is reported (observed with libfabric 1.17): ofi_rxm sets FI_MULTI_RECV on
// the completion of the message that filled the buffer; shm writes a
// completion of its own (flags FI_MULTI_RECV only, no buf), which becomes
// the contract's release-only recv (rank = this rank). Either frees the op
// and reports buffer_messages, which the op counts.
// A message longer than the free space (a sender exceeded
// multi_recv_min_free) is a CQ error that poll_comp throws; the op stays
// posted, since libfabric keeps the buffer. Not one to recover from: shm
// goes on writing the next messages past the buffer's end.
// More completions than ops may wait in the CQ now (one buffer, many
// messages); libfabric's util CQ, which both providers use, keeps the
// excess in an overflow list rather than failing.
//
// Thread safety: every method may be called from any thread. Posts and
//                poll_comp try-lock the endpoint lock (paper §4.2.2: one
//                try-lock per endpoint, which also covers its CQ); a busy
//                lock is retry_lock, or 0 completions. Registration runs
//                outside it: the domain is opened FI_THREAD_SAFE, and it
//                serialises registrations itself (as the paper notes, with a
//                mutex; registration is not on the critical path).
// Blocking:      posts and poll_comp never; register/deregister may wait on
//                the provider's registration lock.
// Ownership:     see backends/backend.hpp; a posted buffer belongs to
//                libfabric until its completion is polled (a multi-receive
//                buffer: the completion that releases it).
// Allocation:    at construction (op table, libfabric objects, the kept
//                payloads of injects: net_max_sends * inject_size_max bytes
//                where injects are not final); the data path allocates
//                nothing (providers may, internally).
// Limits:        net_max_sends send-side operations in flight (sends, puts,
//                gets, "s" variants until their silent completion, emulated
//                putImms until their notice completes);
//                net_max_recvs posted receives, a multi-receive buffer
//                counting as one; beyond either, retry_nomem.
//                A post the provider refuses with -FI_EAGAIN is retry_nomem
//                too (after one progress call on the CQ). max_msg_size <=
//                2^32 - 1 (the length field of a put-with-immediate).
// Faults:        CQ errors become completions with `fault` set: connection
//                errors are peer_crashed, other RMA errors protection. An
//                operation whose connection broke while the peer is alive
//                (an RMA, a send up to send_repost_size_max, a notice, a
//                receive cut off mid-message; an inject too, from the
//                payload the device kept) is posted again, up to 5 times
//                (20 ms, then twice as long each time), since tcp drops the
//                whole connection on one protection fault: only the refused
//                RMA fails, and the peer is not reported dead. Messages
//                tcp had already completed on the dropped connection may
//                be lost (docs/backends/ofi.md, "Faults"). A peer on this host
//                whose process has exited is found by pid (checked once
//                every peer_check_idle_turns polls that find nothing or
//                posts refused with -FI_EAGAIN, and every
//                peer_check_busy_interval while polls find completions): its
//                operations in flight
//                fail with peer_crashed, and later posts to it fail the same
//                way at once, so nothing waits forever. Each check also
//                probes one more rank in turn, so a peer nobody posts to is
//                found too. A peer found dead (by pid, or by a connection
//                error) is reported once as a peer_down completion
//                (backends/backend.hpp), by a poll that found the CQ empty,
//                so that what it sent before it exited comes first; on a CQ
//                that other peers keep from emptying, once
//                dead_report_cq_depths times its depth was read since the
//                death was found. shm does not check
//                remote keys (docs/backends/ofi.md): a bad key there stalls
//                the endpoint instead of failing.
//
// Life cycle:   constructed by ofi_context_t::alloc_device (which fills the
//               address vector), used, destroyed: the endpoint, CQ, AV and
//               domain are closed in that order; posted receives are
//               dropped, multi-receive buffers too (the caller's memory:
//               no completion releases them). Injects it accepted still
//               arrive, with no wait here (the contract's rule on
//               destruction; docs/backends/ofi.md says how each provider
//               meets it). Registrations must be
//               deregistered first (else the domain cannot close: reported
//               on stderr, and it is leaked).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/backend.hpp"
#include "backends/ofi/ofi_op_table.hpp"
#include "backends/ofi/ofi_peers.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/spinlock.hpp"

struct fi_info;
struct fid_fabric;
struct fid_domain;
struct fid_ep;
struct fid_cq;
struct fid_av;
struct fi_cq_data_entry;
struct fi_cq_err_entry;

namespace lci::backends::ofi {

// Defaults for fields of the requested attributes left 0.
inline constexpr std::size_t net_max_sends_default = 256;
inline constexpr std::size_t net_max_recvs_default = 256;
inline constexpr std::size_t net_max_cqes_default = 1024;
// multi_recv_min_free when the request leaves it 0: the runtime's default
// packet size (8 KiB).
inline constexpr std::size_t multi_recv_min_free_default = 8192;
// Empty polls (and refused posts) between two liveness checks of the peers
// with operations in flight.
inline constexpr std::size_t peer_check_idle_turns = 1024;
// While other peers keep the device busy (polls find completions), the
// peers are checked too, at most once per peer_check_busy_interval (a check
// makes a kill(2) per rank with operations in flight), the clock being read
// once every peer_check_busy_polls such polls.
inline constexpr std::size_t peer_check_busy_polls = 256;
inline constexpr std::chrono::milliseconds peer_check_busy_interval{50};
// A dead peer is reported after a read that found the CQ empty, or, while
// other peers keep it from emptying, once this many times the CQ's depth
// has been read since the death was found (see poll_comp).
inline constexpr std::size_t dead_report_cq_depths = 4;
// Tagged receives every device keeps posted for notices (more notices wait
// in the provider until the device polls).
inline constexpr std::size_t notices_max = 64;
// The largest AV table index a device accepts (a sanity bound: indices are
// small integers, never pointers, with FI_AV_TABLE).
inline constexpr fi_addr_t av_address_max = fi_addr_t{1} << 24;

class ofi_device_t final : public backend::net_device_t {
 public:
  // Opens domain, endpoint, CQ and AV and enables the endpoint; the AV
  // stays empty until insert_peers(). native_put_imm: the provider reports
  // the source of remote CQ data (see "Put-with-immediate" above);
  // otherwise it is emulated with notices.
  ofi_device_t(const fi_info* info, fid_fabric* fabric, const peer_table_t& peers,
               int rank_me, bool native_put_imm, const backend::net_device_attr_t& requested);
  ~ofi_device_t() override;
  ofi_device_t(const ofi_device_t&) = delete;
  ofi_device_t& operator=(const ofi_device_t&) = delete;

  // This endpoint's libfabric name (fi_getname), to publish to the peers.
  const std::vector<char>& name() const { return name_; }
  // Inserts every rank's endpoint name, in rank order, and maps rank to
  // address and back. Called once, before any post.
  void insert_peers(const std::vector<std::vector<char>>& names);

  const backend::net_device_attr_t& attr() const override { return attr_; }

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
  [[nodiscard]] error_t post_get(int rank, void* buffer, std::size_t size,
                                 backend::net_mr_t mr, std::uint64_t offset,
                                 backend::net_rmr_t rmr, void* user_context) override;
  std::size_t poll_comp(backend::net_status_t* statuses, std::size_t statuses_max) override;
  [[nodiscard]] error_t register_memory(void* address, std::size_t size,
                                        backend::net_mr_t* mr) override;
  void deregister_memory(backend::net_mr_t* mr) override;
  backend::net_rmr_t get_rmr(backend::net_mr_t mr) const override;

 private:
  struct rma_args_t;

  [[nodiscard]] error_t post_message(int rank, const void* buffer, std::size_t size,
                                     backend::net_mr_t mr, backend::net_imm_data_t imm_data,
                                     void* user_context, bool silent);
  fi_addr_t address_of(int rank) const {
    return address_of_rank_[static_cast<std::size_t>(rank)];
  }
  // The rank of a completion's source address; throws std::runtime_error
  // for an address no rank has.
  int rank_of(fi_addr_t source) const;
  [[nodiscard]] error_t post_rma(const rma_args_t& args);
  [[nodiscard]] error_t post_empty_write_locked(op_t* op, const rma_args_t& args);
  // Under lock_: what an inject (`op`, silent) sends from: a copy of
  // [buffer, buffer + size) in injects_kept_, or the caller's buffer where
  // the device keeps none.
  void* keep_payload_locked(const op_t* op, const void* buffer, std::size_t size);
  // Under lock_: hand a filled op (send, or RMA) to libfabric; its verdict.
  long issue_send_locked(op_t* op);
  long issue_rma_locked(op_t* op);
  // Under lock_: posts an op again (a notice, or an op whose connection
  // broke); refused for now, it waits on the deferred list.
  void repost_locked(op_t* op);
  // Under lock_: gives a receive's buffer (`op`, one message) back to
  // libfabric after its connection broke mid-message.
  void repost_recv_locked(op_t* op);
  // Whether error `code` of `op` means its connection broke under it.
  static bool lost_with_connection(const op_t& op, int code);
  bool may_repost(const op_t& op) const;
  // Under lock_: `op` (taken) waits on the deferred list to be posted again
  // after its connection broke, later each time (repost_delay_ns).
  void defer_repost_locked(op_t* op);
  // Under lock_: hands a filled op to libfabric's verdict `rc`.
  [[nodiscard]] error_t finish_post_locked(op_t* op, long rc, const char* call);
  // Under lock_: an op for a receive into `buffer` (one message, or many
  // when multi_recv), filled in; nullptr when the table has none free.
  op_t* alloc_recv_op_locked(void* buffer, std::size_t size, void* user_context, bool multi_recv);
  // Under lock_: a post to `rank` the provider refused with -FI_EAGAIN.
  [[nodiscard]] error_t refused_locked(int rank);
  void fail_locked(op_t* op, backend::net_fault_t fault);
  // Queues `op` (taken) for the next poll to report (op_table_t::push_settled).
  void settle_locked(op_t* op);
  std::size_t report_settled_locked(backend::net_status_t* statuses, std::size_t statuses_max);
  std::size_t read_cq_locked(backend::net_status_t* statuses, std::size_t statuses_max,
                             bool has_reported, bool* stop);
  bool translate_locked(const void* entry, std::uint64_t source, backend::net_status_t* status);
  // A completion of a multi-receive buffer `op`: a message, its release, or
  // both; frees `op` on the release.
  void translate_multi_recv_locked(const fi_cq_data_entry& entry, fi_addr_t source, op_t* op,
                                   backend::net_status_t* status);
  // A CQ error of a multi-receive buffer `op`: true with the release in
  // *status when it is a cancelled buffer libfabric gave back; throws for a
  // message that did not fit.
  bool translate_multi_recv_error_locked(const fi_cq_err_entry& error, op_t* op,
                                         backend::net_status_t* status);
  // The release-only recv of multi-receive buffer `op` (backends/backend.hpp).
  void release_multi_recv_locked(op_t* op, backend::net_status_t* status);
  void post_notice_locked(op_t* op);
  void post_notice_recv_locked(op_t* op);
  void retry_deferred_locked();
  bool translate_error_locked(backend::net_status_t* status);
  void note_idle_locked(int rank);
  void note_busy_poll_locked();
  void check_peers_locked();
  void mark_dead_locked(int rank);
  std::size_t report_dead_locked(backend::net_status_t* statuses, std::size_t statuses_max);
  // Whether enough of the CQ has been read since a peer was last found dead
  // that everything it held then has been handed over.
  bool dead_report_due_locked() const;
  std::uint64_t remote_address(backend::net_rmr_t rmr, std::uint64_t offset) const;
  // Sets FI_OPT_MIN_MULTI_RECV on the enabled endpoint, or turns
  // supports_multi_recv off where the provider lacks the option.
  void set_multi_recv_min_free();

  const peer_table_t& peers_;
  const int rank_me_;
  const int rank_n_;
  const bool native_put_imm_;
  backend::net_device_attr_t attr_;
  bool virt_addr_ = false;      // mr_mode FI_MR_VIRT_ADDR: RMA addresses are virtual
  bool provider_keys_ = false;  // mr_mode FI_MR_PROV_KEY
  bool bind_mr_ = false;        // mr_mode FI_MR_ENDPOINT: bind + enable each mr
  bool injects_final_ = false;  // shm: an accepted inject can no longer fail
  // The payload of each inject in flight, inject_size_max bytes per op of
  // the send pool (op_table_t::send_index_of), so that one whose connection
  // broke can be posted again: the caller's buffer is theirs again once the
  // post returns. Empty where injects are final (shm): nothing to repost.
  std::vector<char> injects_kept_;
  fid_domain* domain_ = nullptr;
  fid_ep* ep_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_av* av_ = nullptr;
  std::vector<char> name_;

  // The endpoint try-lock: every post and poll. Its own cache line: all
  // posting and polling threads of the device contend on it.
  alignas(util::cache_line_bytes) util::spinlock_t lock_;
  op_table_t ops_;                      // under lock_
  // under lock_: rank -> 0 alive, dead_found (not yet reported), dead_reported.
  std::vector<unsigned char> dead_;
  // The AV's address of each rank and the rank of each address (-1: none),
  // from insert_peers() (see there for why they are not the identity).
  std::vector<fi_addr_t> address_of_rank_;
  std::vector<int> rank_of_address_;
  std::size_t dead_unreported_count_ = 0;  // under lock_: ranks at dead_found
  int probe_next_rank_ = 0;                // under lock_: check_peers_locked's turn
  std::size_t idle_turns_ = 0;          // under lock_: empty polls + refused posts
  std::size_t busy_polls_ = 0;          // under lock_: polls that found completions
  std::chrono::steady_clock::time_point busy_check_last_{};  // under lock_
  // under lock_: CQ entries read since the device was created, and that
  // count when a peer was last found dead (dead_report_due_locked()).
  std::uint64_t cq_entries_read_ = 0;
  std::uint64_t cq_entries_read_at_death_ = 0;
  // LCI_OFI_QUIRK_REMOTE_RMA_CONTEXT (ofi_device.cpp); set at construction.
  bool quirk_remote_rma_context_ = false;
  std::vector<unsigned char> checked_;  // under lock_: scratch of check_peers_locked
  // Next key for registrations when the application picks keys (no
  // FI_MR_PROV_KEY); keys are never reused, so a stale key never names a
  // newer region, and 0 is never one. relaxed: uniqueness needs only
  // atomicity. Own cache line: written by registering threads, away from
  // the posting threads' lock.
  alignas(util::cache_line_bytes) util::atomic<std::uint64_t> next_key_{1};
  // Live registrations, checked at teardown. relaxed: a count.
  util::atomic<std::int64_t> registrations_count_{0};
};

}  // namespace lci::backends::ofi
