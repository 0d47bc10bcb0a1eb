// ofi_device_impl_t: the ofi_device_t of backends/ofi/ofi_device.hpp, its
// state and its private steps, one source file per concern:
//   ofi_device.cpp             life: attributes, libfabric objects, peers' addresses
//   ofi_device_post.cpp        posting: receives, sends, injects, puts, gets
//   ofi_device_completion.cpp  completion translation: CQ entries and errors
//   ofi_device_put_imm.cpp     the emulated put-with-immediate: notices, zero-byte puts
//   ofi_device_liveness.cpp    lost connections, the deferred list, dead peers
//   ofi_device_memory.cpp      registration, remote keys and addresses
// How and why: docs/backends/ofi.md. Every method whose name ends in
// _locked runs under lock_ (the endpoint try-lock).
#pragma once

#include <rdma/fabric.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/ofi/ofi_address_ranks.hpp"
#include "backends/ofi/ofi_device.hpp"
#include "backends/ofi/ofi_op_table.hpp"
#include "backends/ofi/ofi_peers.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/error.hpp"
#include "lci/util/spinlock.hpp"

struct fid_domain;
struct fid_ep;
struct fid_cq;
struct fid_av;
struct fi_cq_data_entry;
struct fi_cq_err_entry;

namespace lci::backend::ofi::detail {

// The contract's types, by their short names in the device's sources.
using backend::net_device_attr_t;
using backend::net_fault_t;
using backend::net_imm_data_t;
using backend::net_mr_t;
using backend::net_opcode_t;
using backend::net_rmr_t;
using backend::net_status_t;

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

// A put-with-immediate's CQ data (remote write, or notice): imm in bits
// 0-31, the length in bits 32-63.
inline std::uint64_t put_imm_data(std::size_t size, backend::net_imm_data_t imm_data) {
  return static_cast<std::uint64_t>(size) << 32 | imm_data;
}
inline std::size_t put_imm_length(std::uint64_t data) {
  return static_cast<std::size_t>(data >> 32);
}

inline std::uint64_t steady_now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

class ofi_device_impl_t final : public ofi_device_t {
 public:
  // Opens domain, endpoint, CQ and AV and enables the endpoint; the AV
  // stays empty until insert_peers(). native_put_imm: the provider reports
  // the source of remote CQ data; otherwise put-with-immediate is emulated
  // with notices.
  ofi_device_impl_t(const fi_info* info, fid_fabric* fabric, const peer_table_t& peers,
                    int rank_me, bool native_put_imm,
                    const backend::net_device_attr_t& requested);
  ~ofi_device_impl_t() override;
  ofi_device_impl_t(const ofi_device_impl_t&) = delete;
  ofi_device_impl_t& operator=(const ofi_device_impl_t&) = delete;

  const std::vector<char>& name() const override { return name_; }
  void insert_peers(const std::vector<std::vector<char>>& names) override;

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
  // What post_rma() posts; one struct for the seven RMA spellings.
  struct rma_args_t {
    backend::net_opcode_t opcode;  // write or read
    int rank;
    void* local;
    std::size_t size;
    backend::net_mr_t mr;
    std::uint64_t offset;
    backend::net_rmr_t rmr;
    bool with_imm;
    backend::net_imm_data_t imm_data;
    void* user_context;
    bool inject;
  };

  // ---- life (ofi_device.cpp) ----
  fi_addr_t address_of(int rank) const {
    return address_of_rank_[static_cast<std::size_t>(rank)];
  }
  // The rank of a completion's source address; throws std::runtime_error
  // for an address no rank has.
  int rank_of(fi_addr_t source) const;
  // Sets FI_OPT_MIN_MULTI_RECV on the enabled endpoint, or turns
  // supports_multi_recv off where the provider lacks the option.
  void set_multi_recv_min_free();

  // ---- posting (ofi_device_post.cpp) ----
  [[nodiscard]] error_t post_message(int rank, const void* buffer, std::size_t size,
                                     backend::net_mr_t mr, backend::net_imm_data_t imm_data,
                                     void* user_context, bool inject);
  [[nodiscard]] error_t post_rma(const rma_args_t& args);
  // Under lock_: what an inject (`op`) sends from: a copy of
  // [buffer, buffer + size) in injects_kept_, or the caller's buffer where
  // the device keeps none.
  void* keep_payload_locked(const op_t* op, const void* buffer, std::size_t size);
  // Under lock_: hand a filled op (send, or RMA) to libfabric; its verdict.
  long issue_send_locked(op_t* op);
  long issue_rma_locked(op_t* op);
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

  // ---- completion translation (ofi_device_completion.cpp) ----
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
  bool translate_error_locked(backend::net_status_t* status);

  // ---- put-with-immediate, emulated (ofi_device_put_imm.cpp) ----
  // A zero-byte put: no provider op.
  [[nodiscard]] error_t post_empty_write_locked(op_t* op, const rma_args_t& args);
  // Under lock_: the notice `op` carries, sent (or deferred).
  void post_notice_locked(op_t* op);
  // Under lock_: notice receive `op` posted (again, or deferred).
  void post_notice_recv_locked(op_t* op);
  // Under lock_: notice receive `op` completed: *status is the target's
  // remote_write; the receive is posted again.
  void receive_notice_locked(const fi_cq_data_entry& entry, fi_addr_t source, op_t* op,
                             backend::net_status_t* status);
  // Under lock_: the write of `op` landed; `op` becomes its notice.
  void send_notice_locked(op_t* op);

  // ---- liveness (ofi_device_liveness.cpp) ----
  // Under lock_: posts an op again (a notice, or an op whose connection
  // broke); refused for now, it waits on the deferred list.
  void repost_locked(op_t* op);
  // Under lock_: libfabric's verdict `rc` on `op` posted from poll (posted
  // again, or a notice): posted; deferred on -FI_EAGAIN; deferred to be
  // posted later when its connection broke under a live peer; else failed
  // with peer_crashed.
  void finish_repost_locked(op_t* op, long rc);
  // Under lock_: gives a receive's buffer (`op`, one message) back to
  // libfabric after its connection broke mid-message.
  void repost_recv_locked(op_t* op);
  // Whether error `code` of `op` means its connection broke under it.
  static bool lost_with_connection(const op_t& op, int code);
  bool may_repost(const op_t& op) const;
  // Under lock_: `op` (taken) waits on the deferred list to be posted again
  // after its connection broke, later each time (repost_delay_ns).
  void defer_repost_locked(op_t* op);
  void retry_deferred_locked();
  void note_idle_locked(int rank);
  void note_busy_poll_locked();
  void check_peers_locked();
  // Under lock_: a receive (`op`, one message) failed with `code`, neither
  // cancelled nor truncated: shm fails a receive whose sender died while
  // the message was copied (EIO), and the entry does not name the sender.
  // The buffer is posted again and every peer is checked; the failure is a
  // crash when one is found dead now or within recv_failure_verdict_ns
  // (checked on each poll meanwhile: check_recv_failure_locked), and is
  // thrown as an error of the receive only if none is.
  void note_recv_failure_locked(op_t* op, int code);
  void check_recv_failure_locked();
  // Under lock_: checks every peer now; true when one is dead (found now
  // or before).
  bool any_peer_dead_locked();
  void mark_dead_locked(int rank);
  std::size_t report_dead_locked(backend::net_status_t* statuses, std::size_t statuses_max);
  // Whether enough of the CQ has been read since a peer was last found dead
  // that everything it held then has been handed over.
  bool dead_report_due_locked() const;

  // ---- memory (ofi_device_memory.cpp) ----
  std::uint64_t remote_address(backend::net_rmr_t rmr, std::uint64_t offset) const;

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

  // The endpoint lock: every post and poll (and, with net_lock_mr, every
  // registration). Its own cache line: all posting and polling threads of
  // the device contend on it.
  alignas(util::cache_line_bytes) util::spinlock_t lock_;
  // The requested lock_mode (backend.hpp, net_lock_*), 0 resolved to the
  // default: sends, receives and polls try lock_; the calls whose bit is
  // clear wait for it.
  const std::uint64_t lock_mode_;
  bool waits_for_lock(std::uint64_t bit) const { return (lock_mode_ & bit) == 0; }
  bool locks_registration() const { return (lock_mode_ & backend::net_lock_mr) != 0; }
  op_table_t ops_;                      // under lock_
  // under lock_: rank -> 0 alive, dead_found (not yet reported), dead_reported.
  std::vector<unsigned char> dead_;
  // The AV's address of each rank and the rank of each address (-1: none),
  // from insert_peers() (ofi_address_ranks.hpp: why they are not the
  // identity).
  std::vector<fi_addr_t> address_of_rank_;
  address_ranks_t rank_of_address_;
  std::size_t dead_unreported_count_ = 0;  // under lock_: ranks at dead_found
  int probe_next_rank_ = 0;                // under lock_: check_peers_locked's turn
  std::size_t idle_turns_ = 0;          // under lock_: empty polls + refused posts
  std::size_t busy_polls_ = 0;          // under lock_: polls that found completions
  std::chrono::steady_clock::time_point busy_check_last_{};  // under lock_
  // under lock_: CQ entries read since the device was created, and that
  // count when a peer was last found dead (dead_report_due_locked()).
  std::uint64_t cq_entries_read_ = 0;
  std::uint64_t cq_entries_read_at_death_ = 0;
  // under lock_: when an unexplained receive failure was seen (0: none
  // pending) and what it was (note_recv_failure_locked).
  std::uint64_t recv_failure_at_ns_ = 0;
  std::string recv_failure_what_;
  // test_hooks::remote_rma_context_forced() (ofi_test_hooks.hpp) at construction.
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

}  // namespace lci::backend::ofi::detail
