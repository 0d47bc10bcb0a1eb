// sim_device_t: one simulated network device (backends/backend.hpp's
// net_device_t) of one rank of a world_t (sim_world.hpp).
//
// Every post, post_recv, poll_comp and register_memory ends at a scheduling
// point in deterministic mode: scheduler_t::call_point(), after the call and
// outside any lock, telling whether the call changed the world. A call that
// changed nothing (a poll that finds nothing, a post refused with retry) is a
// wait(), not progress, so ranks spinning on poll_comp still end as a
// reported deadlock; a call that changed something is progress and lets the
// rank go on for a seeded run budget of such calls before the scheduler may
// run another rank (or thread) — see sim_scheduler.hpp.
//
// Thread safety: every method may run concurrently (concurrent mode; in
//                deterministic mode all run on the scheduler's thread); the
//                port's lock is only try-locked on the posting/polling path
//                (busy -> retry_lock, or 0 completions), as the contract
//                says.
// Blocking:      never (deregister_memory and the destructor take the port
//                lock for a bounded critical section).
// Ownership:     see backends/backend.hpp. "s" variants copy the payload (up
//                to inject_size_max) and complete silently on success; a
//                fault (protection, peer_crashed) on one is still reported as
//                a completion with user_context == nullptr, since it is the
//                only place the caller can learn of it.
// Allocation:    none after construction (the port is built by the world).
// Limits:        attr(): net_max_sends posts in flight (each also reserves a
//                completion slot), net_max_recvs receives (a multi-receive
//                buffer is one), net_max_cqes completions (posts and
//                receives reserve; retry_nomem when full), max_msg_size,
//                inject_size_max; post_recv_multi only with
//                supports_multi_recv (else std::logic_error), of buffers of
//                at least multi_recv_min_free bytes (else
//                std::invalid_argument). Under a provider profile
//                (sim_profile.hpp), also retry_nomem for every post the
//                provider would refuse with -FI_EAGAIN.
//
// Life cycle: alloc_device() -> open; destroying the handle closes the port:
// posted receives are dropped, registrations revoked; messages that arrive
// later wait there (reported as leftovers by world_t::describe_leftovers()).
// A crashed rank's calls throw rank_crashed_t; every other rank's devices
// report it once (a peer_down completion, ahead of the queued ones, taking
// no completion-queue slot) at their next poll_comp. Once the run was
// stopped (world_t::abort_run(), concurrent mode) every call that begins an
// operation, polls or registers throws run_aborted_t.
//
// Concurrent mode has no scheduling points; instead a call that changed
// nothing names itself as the rank's last quiet call (reports), and a
// poll_comp that returned completions is a progress event for the
// harness's watchdog (world_t::progress_count()).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/backend.hpp"
#include "sim/sim_world.hpp"

namespace lci::sim {

class sim_device_t final : public backend::net_device_t {
 public:
  sim_device_t(world_t& world, detail::port_t* port);
  ~sim_device_t() override;
  sim_device_t(const sim_device_t&) = delete;
  sim_device_t& operator=(const sim_device_t&) = delete;

  const backend::net_device_attr_t& attr() const override { return port_->attr; }
  int rank() const { return port_->rank; }
  std::uint32_t device_index() const { return port_->device_index; }

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
  struct post_args_t;
  enum class call_verdict_t : std::uint8_t { go, busy, crash };

  void begin_call();
  [[nodiscard]] error_t end_call(const char* what, error_t error);
  void call_done(const char* what, bool changed);
  [[nodiscard]] error_t post_recv_slot(const char* what, const detail::recv_slot_t& slot);
  error_t post_recv_locked(const detail::recv_slot_t& slot, bool* crash, bool* pump);
  error_t register_locked(void* address, std::size_t size, backend::net_mr_t* mr);
  std::size_t poll_locked(backend::net_status_t* statuses, std::size_t statuses_max, bool* crash,
                          bool* pump);
  std::size_t report_dead_peers_locked(backend::net_status_t* statuses, std::size_t statuses_max);
  call_verdict_t draw_call_faults();
  bool draw(fault_kind_t kind);
  [[nodiscard]] error_t post_packet(const char* what, const post_args_t& args);
  [[nodiscard]] error_t launch_packet(const post_args_t& args);
  error_t fill_packet_locked(const post_args_t& args, detail::packet_t** packet,
                             std::uint64_t* delay_ticks);
  std::uint64_t draw_delay_locked(std::size_t size);
  void unpost(detail::packet_t* packet);
  [[noreturn]] void crash_self();
  void note_progress();

  world_t& world_;
  detail::port_t* const port_;
  const bool faults_on_;  // any fault rate > 0 (else draw() is skipped)
};

}  // namespace lci::sim
