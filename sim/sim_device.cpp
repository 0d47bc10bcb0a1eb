#include "sim/sim_device.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "lci/util/assert.hpp"
#include "lci/util/try_lock.hpp"
#include "sim/sim_scheduler.hpp"

namespace lci::sim {

namespace {
// The preempt fault drawn in this thread's current call (under the port
// lock), served twice outside it: when the call is done (the window after
// it) and when this thread's next call begins, before it takes the lock
// (the window before it: a peer thread's next lock then orders nothing
// that this thread did since its last call). Per thread: the threads of a
// rank share its device.
thread_local bool t_preempt_after_call = false;
thread_local bool t_preempt_before_next_call = false;

void preempt_now(const fault_options_t& faults) {
  std::this_thread::sleep_for(std::chrono::microseconds(faults.preempt_micros));
}
}  // namespace

using backend::net_imm_data_t;
using backend::net_mr_t;
using backend::net_rmr_t;
using backend::net_status_t;
using detail::packet_kind_t;
using detail::packet_t;

struct sim_device_t::post_args_t {
  packet_kind_t kind;
  bool signaled;
  int rank;
  const void* payload;
  void* destination;
  std::size_t size;
  std::uint64_t offset;
  net_rmr_t rmr;
  net_imm_data_t imm_data;
  void* user_context;
};

sim_device_t::sim_device_t(world_t& world, detail::port_t* port)
    : world_(world), port_(port), faults_on_(world.options().faults.any()) {
  LCI_ASSERT(port_ != nullptr, "a device needs a port");
  LCI_ASSERT(port_->open, "a device needs an open port");
}

sim_device_t::~sim_device_t() { world_.close_port(port_); }

// ---- helpers ----

inline void sim_device_t::begin_call() {
  if (t_preempt_before_next_call) {
    t_preempt_before_next_call = false;
    preempt_now(world_.options().faults);
  }
  if (world_.is_crashed(port_->rank)) throw rank_crashed_t(port_->rank);
  if (world_.run_aborted()) throw run_aborted_t();
}

// The end of a call, after it and outside any lock: deterministic mode's
// scheduling point (a call that changed nothing is a wait, anything else
// progress); concurrent mode: a call that changed nothing is the rank's
// last quiet call (reports).
inline void sim_device_t::call_done(const char* what, bool changed) {
  if (!changed) world_.note_quiet_call(port_->rank, what);
  scheduler_t::call_point(what, changed);
  if (t_preempt_after_call) {
    t_preempt_after_call = false;
    preempt_now(world_.options().faults);
  }
}

// A post, post_recv or registration: a retry changed nothing.
error_t sim_device_t::end_call(const char* what, error_t error) {
  call_done(what, !error.is_retry());
  return error;
}

void sim_device_t::note_progress() { world_.note_progress(); }

// Under the port lock.
inline bool sim_device_t::draw(fault_kind_t kind) {
  if (!faults_on_) return false;  // the common case: no draw at all
  const double rate = world_.options().faults.rate(kind);
  if (rate <= 0.0 || !port_->prng.chance(rate)) return false;
  world_.count_fault(kind);
  return true;
}

// Under the port lock: the faults any call may meet.
sim_device_t::call_verdict_t sim_device_t::draw_call_faults() {
  if (draw(fault_kind_t::rank_crash)) return call_verdict_t::crash;
  if (draw(fault_kind_t::lock_busy)) return call_verdict_t::busy;
  // Concurrent mode only (sim_faults.hpp).
  if (world_.mode() == world_mode_t::concurrent && draw(fault_kind_t::preempt)) {
    t_preempt_after_call = true;
    t_preempt_before_next_call = true;
  }
  return call_verdict_t::go;
}

void sim_device_t::crash_self() {
  world_.crash_rank(port_->rank);
  throw rank_crashed_t(port_->rank);
}

// Virtual time on the wire: latency + size / bandwidth + jitter + faults.
std::uint64_t sim_device_t::draw_delay_locked(std::size_t size) {
  const world_options_t& options = world_.options();
  std::uint64_t delay = options.latency_ticks + size / options.bytes_per_tick;
  if (options.jitter_ticks > 0) delay += port_->prng.uniform(options.jitter_ticks + 1);
  if (draw(fault_kind_t::reorder)) {
    delay += port_->prng.uniform(options.faults.reorder_ticks_max + 1);
  }
  if (draw(fault_kind_t::delay_spike)) delay += options.faults.delay_spike_ticks;
  return delay;
}

// Under the port lock: reserve a packet and a completion slot, fill them.
error_t sim_device_t::fill_packet_locked(const post_args_t& args, packet_t** packet_out,
                                         std::uint64_t* delay_ticks) {
  if (draw(fault_kind_t::send_queue_full)) return errorcode_t::retry_nomem;
  if (port_->packets_free.empty()) return errorcode_t::retry_nomem;
  if (!port_->cq_has_room()) return errorcode_t::retry_nomem;
  if (detail::profile_admit_locked(world_, *port_, args.kind, args.rank, args.size) !=
      refusal_t::none) {
    return errorcode_t::retry_nomem;  // the provider's -FI_EAGAIN (sim_profile.hpp)
  }
  packet_t* packet = port_->packets_free.back();
  port_->packets_free.pop_back();
  ++port_->cq_reserved;
  packet->next = nullptr;
  packet->kind = args.kind;
  packet->signaled = args.signaled;
  packet->device_index = port_->device_index;
  packet->source_rank = port_->rank;
  packet->target_rank = args.rank;
  packet->size = args.size;
  packet->payload = args.payload;
  if (!args.signaled && args.size > 0) {  // "s" variant: the copy is the payload
    LCI_ASSERT(args.size <= port_->attr.inject_size_max, "inject over inject_size_max");
    std::memcpy(packet->inline_data, args.payload, args.size);
    packet->payload = packet->inline_data;
  }
  packet->destination = args.destination;
  packet->offset = args.offset;
  packet->rmr = args.rmr;
  packet->imm_data = args.imm_data;
  packet->user_context = args.user_context;
  packet->serial = world_.next_serial();
  detail::profile_note_posted_locked(world_, *port_, packet);
  *delay_ticks = world_.mode() == world_mode_t::deterministic ? draw_delay_locked(args.size) : 0;
  *packet_out = packet;
  return errorcode_t::done;
}

void sim_device_t::unpost(packet_t* packet) {
  detail::port_guard_t guard(port_->lock, detail::port_guard_t::mode_t::wait);
  --port_->cq_reserved;
  detail::profile_note_home_locked(world_, *port_, packet);
  port_->packets_free.push_back(packet);
}

error_t sim_device_t::post_packet(const char* what, const post_args_t& args) {
  begin_call();
  return end_call(what, launch_packet(args));
}

error_t sim_device_t::launch_packet(const post_args_t& args) {
  packet_t* packet = nullptr;
  std::uint64_t delay_ticks = 0;
  {
    detail::port_guard_t guard(port_->lock, detail::port_guard_t::mode_t::try_once);
    if (!guard.owns_lock()) return errorcode_t::retry_lock;
    const call_verdict_t verdict = draw_call_faults();
    if (verdict == call_verdict_t::busy) return errorcode_t::retry_lock;
    if (verdict == call_verdict_t::go) {
      const error_t error = fill_packet_locked(args, &packet, &delay_ticks);
      if (error.is_retry()) return error;
    }
  }
  if (packet == nullptr) crash_self();
  const error_t error = world_.launch(packet, delay_ticks);
  if (error.is_retry()) {
    unpost(packet);
    return error;
  }
  return args.signaled ? errorcode_t::posted : errorcode_t::done;
}

// ---- posts ----

// Under the try-lock; *crash: the rank_crash fault hit; *pump: messages wait
// here for the new buffer.
error_t sim_device_t::post_recv_locked(const detail::recv_slot_t& slot, bool* crash,
                                       bool* pump) {
  detail::port_guard_t guard(port_->lock, detail::port_guard_t::mode_t::try_once);
  if (!guard.owns_lock()) return errorcode_t::retry_lock;
  const call_verdict_t verdict = draw_call_faults();
  if (verdict == call_verdict_t::busy) return errorcode_t::retry_lock;
  *crash = verdict == call_verdict_t::crash;
  if (*crash) return errorcode_t::done;  // not returned: the caller throws
  if (port_->recvs.full()) return errorcode_t::retry_nomem;
  if (!port_->cq_has_room()) return errorcode_t::retry_nomem;
  if (slot.multi && detail::profile_refuses_multi_recv_locked(world_, *port_)) {
    return errorcode_t::retry_nomem;
  }
  port_->recvs.push(slot);
  ++port_->cq_reserved;
  *pump = port_->waiting_head != nullptr;
  return errorcode_t::done;
}

error_t sim_device_t::post_recv_slot(const char* what, const detail::recv_slot_t& slot) {
  begin_call();
  detail::profile_note_call(world_, *port_);
  bool crash = false;
  bool pump = false;
  const error_t error = post_recv_locked(slot, &crash, &pump);
  if (crash) crash_self();
  if (pump) world_.pump_waiting(port_);
  return end_call(what, error);
}

error_t sim_device_t::post_recv(void* buffer, std::size_t size, net_mr_t, void* user_context) {
  if (buffer == nullptr && size > 0) throw std::invalid_argument("post_recv: buffer is null");
  return post_recv_slot("net post_recv", detail::recv_slot_t{buffer, size, user_context});
}

error_t sim_device_t::post_recv_multi(void* buffer, std::size_t size, void* user_context) {
  const std::size_t min_free = port_->attr.multi_recv_min_free;
  if (!port_->attr.supports_multi_recv) {
    throw std::logic_error("post_recv_multi: the device has no multi-receive buffers "
                           "(attr().supports_multi_recv is false)");
  }
  if (buffer == nullptr) throw std::invalid_argument("post_recv_multi: buffer is null");
  if (size < min_free) {
    throw std::invalid_argument("post_recv_multi: size " + std::to_string(size) +
                                " below multi_recv_min_free " + std::to_string(min_free));
  }
  detail::recv_slot_t slot{buffer, size, user_context};
  slot.multi = true;
  slot.min_free_bytes = min_free;
  return post_recv_slot("net post_recv_multi", slot);
}

error_t sim_device_t::post_sends(int rank, const void* buffer, std::size_t size,
                                 net_imm_data_t imm_data) {
  backend::check_post_target("post_sends", rank, world_.ranks_count(), buffer, size,
                             port_->attr.inject_size_max);
  return post_packet(
      "net post_sends",
      {packet_kind_t::send, false, rank, buffer, nullptr, size, 0, {}, imm_data, nullptr});
}

error_t sim_device_t::post_send(int rank, const void* buffer, std::size_t size, net_mr_t,
                                net_imm_data_t imm_data, void* user_context) {
  backend::check_post_target("post_send", rank, world_.ranks_count(), buffer, size,
                             port_->attr.max_msg_size);
  return post_packet(
      "net post_send",
      {packet_kind_t::send, true, rank, buffer, nullptr, size, 0, {}, imm_data, user_context});
}

error_t sim_device_t::post_puts(int rank, const void* buffer, std::size_t size,
                                std::uint64_t offset, net_rmr_t rmr) {
  backend::check_post_target("post_puts", rank, world_.ranks_count(), buffer, size,
                             port_->attr.inject_size_max);
  return post_packet("net post_puts", {packet_kind_t::put, false, rank, buffer, nullptr, size,
                                       offset, rmr, 0, nullptr});
}

error_t sim_device_t::post_put(int rank, const void* buffer, std::size_t size, net_mr_t,
                               std::uint64_t offset, net_rmr_t rmr, void* user_context) {
  backend::check_post_target("post_put", rank, world_.ranks_count(), buffer, size,
                             port_->attr.max_msg_size);
  return post_packet("net post_put", {packet_kind_t::put, true, rank, buffer, nullptr, size, offset,
                                      rmr, 0, user_context});
}

error_t sim_device_t::post_putImms(int rank, const void* buffer, std::size_t size,
                                   std::uint64_t offset, net_rmr_t rmr, net_imm_data_t imm_data) {
  backend::check_post_target("post_putImms", rank, world_.ranks_count(), buffer, size,
                             port_->attr.inject_size_max);
  return post_packet("net post_putImms", {packet_kind_t::put_imm, false, rank, buffer, nullptr,
                                          size, offset, rmr, imm_data, nullptr});
}

error_t sim_device_t::post_putImm(int rank, const void* buffer, std::size_t size, net_mr_t,
                                  std::uint64_t offset, net_rmr_t rmr, net_imm_data_t imm_data,
                                  void* user_context) {
  backend::check_post_target("post_putImm", rank, world_.ranks_count(), buffer, size,
                             port_->attr.max_msg_size);
  return post_packet("net post_putImm", {packet_kind_t::put_imm, true, rank, buffer, nullptr, size,
                                         offset, rmr, imm_data, user_context});
}

error_t sim_device_t::post_get(int rank, void* buffer, std::size_t size, net_mr_t,
                               std::uint64_t offset, net_rmr_t rmr, void* user_context) {
  backend::check_post_target("post_get", rank, world_.ranks_count(), buffer, size,
                             port_->attr.max_msg_size);
  return post_packet("net post_get", {packet_kind_t::get, true, rank, nullptr, buffer, size, offset,
                                      rmr, 0, user_context});
}

// ---- completions ----

// Under the try-lock: pops up to statuses_max completions; *crash: the
// rank_crash fault hit; *pump: messages wait here (for cq room, or a buffer).
std::size_t sim_device_t::poll_locked(net_status_t* statuses, std::size_t statuses_max,
                                      bool* crash, bool* pump) {
  detail::port_guard_t guard(port_->lock, detail::port_guard_t::mode_t::try_once);
  if (!guard.owns_lock()) return 0;
  const call_verdict_t verdict = draw_call_faults();
  *crash = verdict == call_verdict_t::crash;
  if (verdict != call_verdict_t::go) return 0;
  const std::size_t reported = report_dead_peers_locked(statuses, statuses_max);
  std::size_t limit = std::min(statuses_max - reported, port_->cq_count);
  if (limit > 0 && draw(fault_kind_t::cq_pressure)) limit = port_->prng.uniform(limit);
  for (std::size_t i = 0; i < limit; ++i) statuses[reported + i] = port_->cq_pop();
  *pump = port_->waiting_head != nullptr;
  return reported + limit;
}

// Under the port lock: a peer_down report for each rank that crashed since
// the last look (backend.hpp), ahead of the queued completions. Reports take
// no completion-queue slot: one per rank at most, kept as a bit per rank.
std::size_t sim_device_t::report_dead_peers_locked(net_status_t* statuses,
                                                   std::size_t statuses_max) {
  // A stale count only delays a report to a later poll; is_crashed() (an
  // acquire load) is what decides.
  if (world_.crashed_count() == port_->crashes_reported_count) return 0;
  std::size_t count = 0;
  for (int rank = 0; rank < world_.ranks_count() && count < statuses_max; ++rank) {
    const auto index = static_cast<std::size_t>(rank);
    if (rank == port_->rank || port_->peers_reported[index] || !world_.is_crashed(rank)) continue;
    port_->peers_reported[index] = true;
    ++port_->crashes_reported_count;
    statuses[count++] = backend::peer_down_status(rank);
  }
  LCI_ASSERT(port_->crashes_reported_count <= world_.ranks_count(), "a crash reported twice");
  return count;
}

std::size_t sim_device_t::poll_comp(net_status_t* statuses, std::size_t statuses_max) {
  LCI_ASSERT(statuses != nullptr || statuses_max == 0, "poll_comp needs an array");
  begin_call();
  detail::profile_note_call(world_, *port_);
  if (world_.mode() == world_mode_t::concurrent) world_.drive_wire(port_->device_index);
  bool crash = false;
  bool pump = false;
  const std::size_t count = poll_locked(statuses, statuses_max, &crash, &pump);
  if (crash) crash_self();
  const bool delivered = pump && world_.pump_waiting(port_);
  // A delivery counted itself (at its initiator); completions handed to
  // the caller are progress of their own.
  if (count > 0) world_.count_progress();
  call_done("net poll_comp", count > 0 || delivered);
  return count;
}

// ---- memory registration ----

error_t sim_device_t::register_memory(void* address, std::size_t size, net_mr_t* mr) {
  if (mr == nullptr) throw std::invalid_argument("register_memory: mr is null");
  if (address == nullptr || size == 0) {
    throw std::invalid_argument("register_memory: empty region (address " +
                                std::to_string(reinterpret_cast<std::uintptr_t>(address)) +
                                ", size " + std::to_string(size) + ")");
  }
  *mr = net_mr_t{};
  begin_call();
  return end_call("net register_memory", register_locked(address, size, mr));
}

error_t sim_device_t::register_locked(void* address, std::size_t size, net_mr_t* mr) {
  detail::port_guard_t guard(port_->lock, detail::port_guard_t::mode_t::try_once);
  if (!guard.owns_lock()) return errorcode_t::retry_lock;
  if (draw(fault_kind_t::registration_failure)) return errorcode_t::retry_nomem;
  const std::size_t size_max = world_.options().registration_size_max;
  if (size_max != 0 && size > size_max) return errorcode_t::fatal;  // never, not just now
  auto& table = port_->registrations;
  auto free_slot = std::find_if(table.begin(), table.end(),
                                [](const detail::registration_t& r) { return !r.live; });
  if (free_slot == table.end()) return errorcode_t::retry_nomem;  // registrations_max
  free_slot->live = true;
  free_slot->base = reinterpret_cast<std::uintptr_t>(address);
  free_slot->size = size;
  mr->base = address;
  mr->size = size;
  mr->opaque = &*free_slot;
  ++port_->registrations_made;
  return errorcode_t::done;
}

void sim_device_t::deregister_memory(net_mr_t* mr) {
  if (mr == nullptr || mr->is_empty()) {
    throw std::invalid_argument("deregister_memory: not a registration");
  }
  auto* registration = static_cast<detail::registration_t*>(mr->opaque);
  {
    detail::port_guard_t guard(port_->lock, detail::port_guard_t::mode_t::wait);
    const auto& table = port_->registrations;
    const bool ours = registration >= table.data() && registration < table.data() + table.size();
    if (!ours || !registration->live) {
      throw std::invalid_argument("deregister_memory: mr is not a live registration of "
                                  "this device");
    }
    registration->live = false;
    ++registration->generation;  // keys handed out so far are stale now
  }
  *mr = net_mr_t{};
  note_progress();
}

// rkey = generation << 32 | (index + 1): 0 is never a valid key.
net_rmr_t sim_device_t::get_rmr(net_mr_t mr) const {
  if (mr.is_empty()) throw std::invalid_argument("get_rmr: empty mr");
  auto* registration = static_cast<detail::registration_t*>(mr.opaque);
  const auto& table = port_->registrations;
  const auto index = static_cast<std::uint64_t>(registration - table.data());
  LCI_ASSERT(index < table.size(), "get_rmr: mr of another device");
  net_rmr_t rmr;
  rmr.base = reinterpret_cast<std::uintptr_t>(mr.base);
  rmr.rkey = static_cast<std::uint64_t>(registration->generation) << 32 | (index + 1);
  rmr.size = mr.size;
  LCI_ASSERT(rmr.size > 0, "get_rmr: a registration of no bytes");
  return rmr;
}

}  // namespace lci::sim
