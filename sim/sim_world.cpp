#include "sim/sim_world.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "lci/util/assert.hpp"
#include "lci/util/try_lock.hpp"
#include "sim/sim_scheduler.hpp"

namespace lci::sim {

using backend::net_fault_t;
using backend::net_opcode_t;
using backend::net_status_t;
using detail::packet_kind_t;
using detail::packet_t;
using detail::port_t;

namespace {

// A concurrent-mode poll delivers at most this many packets at once.
constexpr std::size_t deliveries_per_poll_limit = 64;
// Ranks listed one per line in describe_ranks().
constexpr int report_ranks_max = 64;
// PRNG streams (prng_t::fork); the scheduler uses stream 0.
constexpr std::uint64_t stream_port_base = 1ull << 32;
constexpr std::uint64_t stream_wire_base = 2ull << 32;

net_opcode_t local_opcode(packet_kind_t kind) {
  switch (kind) {
    case packet_kind_t::send: return net_opcode_t::send;
    case packet_kind_t::put:
    case packet_kind_t::put_imm: return net_opcode_t::write;
    case packet_kind_t::get: return net_opcode_t::read;
  }
  return net_opcode_t::send;
}

const char* kind_name(packet_kind_t kind) {
  switch (kind) {
    case packet_kind_t::send: return "send";
    case packet_kind_t::put: return "put";
    case packet_kind_t::put_imm: return "putImm";
    case packet_kind_t::get: return "get";
  }
  return "?";
}

}  // namespace

rank_crashed_t::rank_crashed_t(int rank)
    : std::runtime_error("simulated rank " + std::to_string(rank) + " crashed"),
      rank_(rank) {}

run_aborted_t::run_aborted_t()
    : std::runtime_error("the simulated run was stopped (the watchdog fired, or a rank failed; "
                         "the run's report names the cause)") {}

bool env_flag_on(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
}

void apply_world_env(world_options_t* options) {
  LCI_ASSERT(options != nullptr, "apply_world_env needs options");
  apply_profile_env(options);  // first: the switches below override its defaults
  apply_fault_env(&options->faults);
  if (env_flag_on("LCI_SIM_TRACE")) options->trace_events = true;
  if (env_flag_on("LCI_SIM_RMA_WAITS_FOR_TARGET")) options->rma_waits_for_target = true;
  const char* local_mr = std::getenv("LCI_SIM_REQUIRES_LOCAL_MR");
  if (local_mr != nullptr && std::strcmp(local_mr, "0") == 0) options->requires_local_mr = false;
  // Both ways: the default is on, and a test may have turned it off.
  const char* multi_recv = std::getenv("LCI_SIM_MULTI_RECV");
  if (multi_recv != nullptr && *multi_recv != '\0') {
    options->multi_recv = std::strcmp(multi_recv, "0") != 0;
  }
}

std::string describe_world_options(const world_options_t& o) {
  char line[512];
  std::snprintf(line, sizeof(line),
                "lci sim world: seed=%llu ranks=%d latency_ticks=%llu jitter_ticks=%llu "
                "bytes_per_tick=%llu net_max_sends=%zu net_max_recvs=%zu net_max_cqes=%zu "
                "inject_size_max=%zu registrations_max=%zu registration_size_max=%zu "
                "rma_waits_for_target=%d requires_local_mr=%d multi_recv=%d profile=%s faults: ",
                static_cast<unsigned long long>(o.seed), o.ranks_count,
                static_cast<unsigned long long>(o.latency_ticks),
                static_cast<unsigned long long>(o.jitter_ticks),
                static_cast<unsigned long long>(o.bytes_per_tick), o.net_max_sends,
                o.net_max_recvs, o.net_max_cqes, o.inject_size_max, o.registrations_max,
                o.registration_size_max, o.rma_waits_for_target ? 1 : 0, o.requires_local_mr ? 1 : 0,
                o.multi_recv ? 1 : 0, get_profile_name(o.profile.kind));
  return line + describe_faults(o.faults);
}

// ---- port_t ----

namespace detail {

port_t::port_t(int rank_, std::uint32_t device_index_, const backend::net_device_attr_t& attr_,
               std::size_t registrations_max, prng_t prng_, bool single_thread,
               int ranks_count)
    : lock(single_thread),
      rank(rank_),
      device_index(device_index_),
      attr(attr_),
      recvs(attr_.net_max_recvs),
      prng(prng_) {
  LCI_ASSERT(attr.net_max_sends > 0, "a port needs a send queue");
  LCI_ASSERT(attr.net_max_cqes > 0, "a port needs a completion queue");
  // 0 would keep a full multi-receive buffer posted (free 0 is not below 0).
  if (attr.supports_multi_recv) LCI_ASSERT(attr.multi_recv_min_free > 0, "multi_recv_min_free 0");
  packets.resize(attr.net_max_sends);
  packets_free.reserve(attr.net_max_sends);
  inline_arena.resize(attr.net_max_sends * attr.inject_size_max);
  for (std::size_t i = 0; i < packets.size(); ++i) {
    packets[i].origin = this;
    packets[i].inline_data = inline_arena.data() + i * attr.inject_size_max;
    packets_free.push_back(&packets[attr.net_max_sends - 1 - i]);
  }
  cq.resize(attr.net_max_cqes);
  registrations.resize(registrations_max);
  peers_reported.assign(static_cast<std::size_t>(ranks_count), false);
}

void port_t::drop_recvs() {
  LCI_ASSERT(cq_reserved >= recvs.size(), "receive reservations lost");
  cq_reserved -= recvs.size();
  recvs.clear();
}

void port_t::waiting_push(packet_t* packet) {
  LCI_ASSERT(packet->next == nullptr, "a packet is in two lists");
  if (waiting_tail == nullptr) {
    waiting_head = packet;
  } else {
    waiting_tail->next = packet;
  }
  waiting_tail = packet;
  ++waiting_count;
  if ((packet->profile_flags & packet_unexpected) != 0) ++waiting_unexpected_count;
}

packet_t* port_t::waiting_detach() {
  packet_t* list = waiting_head;
  waiting_head = nullptr;
  waiting_tail = nullptr;
  waiting_count = 0;
  waiting_unexpected_count = 0;
  return list;
}

}  // namespace detail

// ---- world_t ----

struct world_t::port_slot_t {
  util::atomic<port_t*> port{nullptr};
  std::unique_ptr<port_t> owned;  // under lock_
  packet_t* early_head = nullptr;  // arrived before the device was allocated
  packet_t* early_tail = nullptr;
};

struct world_t::wire_t {
  util::spinlock_t lock;
  std::vector<packet_t*> packets;  // capacity grows at open_port only
  prng_t prng{0};
};

world_t::world_t(const world_options_t& options) : options_(options) {
  LCI_ASSERT(options_.ranks_count >= 1, "a world needs at least one rank");
  LCI_ASSERT(options_.ranks_count <= ranks_count_max, "ranks_count over ranks_count_max");
  LCI_ASSERT(options_.devices_per_rank_max >= 1, "devices_per_rank_max must be >= 1");
  LCI_ASSERT(options_.bytes_per_tick >= 1, "bytes_per_tick must be >= 1");
  const std::size_t ranks = static_cast<std::size_t>(options_.ranks_count);
  slots_.reset(new port_slot_t[ranks * options_.devices_per_rank_max]);
  wires_.reset(new wire_t[options_.devices_per_rank_max]);
  for (std::size_t k = 0; k < options_.devices_per_rank_max; ++k) {
    wires_[k].prng = prng_t(options_.seed).fork(stream_wire_base + k);
  }
  crashed_.reset(new util::atomic<bool>[ranks]);
  exited_.reset(new util::atomic<bool>[ranks]);
  waiting_for_.reset(new util::atomic<const char*>[ranks]);
  quiet_call_.reset(new util::atomic<const char*>[ranks]);
  for (std::size_t r = 0; r < ranks; ++r) {
    crashed_[r].store(false, util::mo_relaxed);  // relaxed: before sharing
    exited_[r].store(false, util::mo_relaxed);   // relaxed: before sharing
    waiting_for_[r].store(nullptr, util::mo_relaxed);  // relaxed: before sharing
    quiet_call_[r].store(nullptr, util::mo_relaxed);  // relaxed: before sharing
  }
}

world_t::~world_t() = default;

void world_t::attach_scheduler(scheduler_t* scheduler) {
  LCI_ASSERT(scheduler != nullptr, "attach_scheduler needs a scheduler");
  LCI_ASSERT(scheduler->seed() == options_.seed, "scheduler and world seeds differ");
  // A port's lock takes the mode at open_port(): none may be open yet.
  const std::size_t slots_count =
      static_cast<std::size_t>(options_.ranks_count) * options_.devices_per_rank_max;
  for (std::size_t i = 0; i < slots_count; ++i) {
    // relaxed: before the run, on the thread that built the world.
    LCI_ASSERT(slots_[i].port.load(util::mo_relaxed) == nullptr,
               "attach_scheduler after a device was allocated");
  }
  scheduler_ = scheduler;
}

world_t::port_slot_t& world_t::slot(int rank, std::uint32_t device_index) const {
  LCI_ASSERT(rank >= 0 && rank < options_.ranks_count, "rank out of range");
  LCI_ASSERT(device_index < options_.devices_per_rank_max, "device index out of range");
  return slots_[device_index * static_cast<std::size_t>(options_.ranks_count) +
                static_cast<std::size_t>(rank)];
}

port_t* world_t::find_port(int rank, std::uint32_t device_index) {
  // acquire: pairs with the release in open_port() [P]: the port is built.
  return slot(rank, device_index).port.load(util::mo_acquire);
}

port_t* world_t::open_port(int rank, std::uint32_t device_index,
                           const backend::net_device_attr_t& attr) {
  const prng_t prng = prng_t(options_.seed)
                          .fork(stream_port_base + device_index * ranks_count_max +
                                static_cast<std::uint64_t>(rank));
  auto port = std::make_unique<port_t>(rank, device_index, attr, options_.registrations_max,
                                       prng, mode() == world_mode_t::deterministic,
                                       options_.ranks_count);
  {
    util::spinlock_guard_t wire_guard(wires_[device_index].lock);
    auto& packets = wires_[device_index].packets;
    packets.reserve(packets.capacity() + attr.net_max_sends);
  }
  port_t* raw = port.get();
  detail::init_port_profile(options_, raw);
  for (packet_t& packet : raw->packets) {  // deterministic mode: the wire's timer events
    packet.fire = &world_t::fire_delivery;
    packet.fire_context = this;
  }
  util::spinlock_guard_t guard(lock_);
  port_slot_t& target = slot(rank, device_index);
  LCI_ASSERT(target.owned == nullptr, "a device index was opened twice");
  for (packet_t* early = target.early_head; early != nullptr;) {
    packet_t* next = early->next;
    early->next = nullptr;
    raw->waiting_push(early);  // not shared yet: no port lock needed
    early = next;
  }
  target.early_head = target.early_tail = nullptr;
  target.owned = std::move(port);
  target.port.store(raw, util::mo_release);  // release: pairs with [P] in find_port()
  return raw;
}

void world_t::close_port(port_t* port) {
  LCI_ASSERT(port != nullptr, "close_port needs a port");
  detail::port_guard_t guard(port->lock, detail::port_guard_t::mode_t::wait);
  LCI_ASSERT(port->open, "a device was closed twice");
  port->open = false;
  port->drop_recvs();
  for (detail::registration_t& registration : port->registrations) {
    if (registration.live) {
      ++registration.generation;
      ++port->registrations_left_at_close;
    }
    registration.live = false;
  }
}

packet_t* world_t::detach_early_locked(int rank) {
  packet_t* early = nullptr;
  for (std::uint32_t k = 0; k < options_.devices_per_rank_max; ++k) {
    port_slot_t& s = slot(rank, k);
    if (s.early_tail != nullptr) {
      s.early_tail->next = early;
      early = s.early_head;
      s.early_head = s.early_tail = nullptr;
    }
  }
  return early;
}

void world_t::crash_rank(int rank) {
  LCI_ASSERT(rank >= 0 && rank < options_.ranks_count, "crash_rank: rank out of range");
  packet_t* early = nullptr;
  {
    util::spinlock_guard_t guard(lock_);
    if (is_crashed(rank)) return;
    crashed_[rank].store(true, util::mo_release);  // release: pairs with is_crashed()
    crashed_count_.fetch_add(1, util::mo_relaxed);  // relaxed: a statistic
    early = detach_early_locked(rank);
  }
  if (options_.trace_events) std::fprintf(stderr, "lci sim: rank %d crashed\n", rank);
  if (scheduler_ != nullptr) scheduler_->trace(0xC0A5ull << 32 | static_cast<std::uint32_t>(rank));
  for (std::uint32_t k = 0; k < options_.devices_per_rank_max; ++k) {
    port_t* port = find_port(rank, k);
    if (port == nullptr) continue;
    packet_t* waiting;
    {
      detail::port_guard_t guard(port->lock, detail::port_guard_t::mode_t::wait);
      port->crashed = true;
      port->drop_recvs();
      port->cq_count = 0;  // its completions die with it
      waiting = port->waiting_detach();
    }
    fail_packets(waiting, rank);
  }
  fail_packets(early, rank);
  note_progress();
}

void world_t::rank_exited(int rank) {
  LCI_ASSERT(rank >= 0 && rank < options_.ranks_count, "rank_exited: rank out of range");
  packet_t* early = nullptr;
  {
    util::spinlock_guard_t guard(lock_);
    // release: pairs with has_exited(); set before the ports' waiting lists
    // are emptied below, so a delivery that takes a port's lock after that
    // finds the mark and fails instead of waiting.
    exited_[rank].store(true, util::mo_release);
    early = detach_early_locked(rank);  // devices it never allocated
  }
  for (std::uint32_t k = 0; k < options_.devices_per_rank_max; ++k) {
    port_t* port = find_port(rank, k);
    if (port == nullptr) continue;
    packet_t* waiting = nullptr;
    {
      detail::port_guard_t guard(port->lock, detail::port_guard_t::mode_t::wait);
      if (!port->open) waiting = port->waiting_detach();
    }
    fail_packets(waiting, rank);
  }
  fail_packets(early, rank);
  note_progress();
}

int world_t::crashed_count() const {
  return crashed_count_.load(util::mo_relaxed);  // relaxed: a statistic
}

void world_t::note_wait(int rank, const char* what) {
  // relaxed: a label for reports only; literals need no publication.
  waiting_for_[rank].store(what, util::mo_relaxed);
}

void world_t::note_quiet_call(int rank, const char* what) {
  if (scheduler_ != nullptr) return;
  LCI_ASSERT(rank >= 0 && rank < options_.ranks_count, "note_quiet_call: rank out of range");
  LCI_ASSERT(what != nullptr, "note_quiet_call needs a label");
  util::atomic<const char*>& label = quiet_call_[rank];
  // relaxed (both): a label for reports only; literals need no publication.
  // Stored only on a change: a rank spinning on one call writes nothing,
  // so the labels' shared lines stay shared.
  if (label.load(util::mo_relaxed) != what) label.store(what, util::mo_relaxed);
}

void world_t::note_progress() {
  if (scheduler_ == nullptr) {
    count_progress();
    return;
  }
  // Only while the scheduler runs on this thread: after its run (teardown
  // of what the ranks left) it may be gone.
  if (scheduler_t::current() == scheduler_) scheduler_->note_progress();
}

std::uint64_t world_t::progress_count() const {
  return progress_.load(util::mo_relaxed);  // relaxed: see count_progress()
}

void world_t::abort_run() {
  LCI_ASSERT(scheduler_ == nullptr, "abort_run() in deterministic mode (the scheduler stops it)");
  aborted_.store(true, util::mo_release);  // release: pairs with [S] in run_aborted()
  LCI_ASSERT(run_aborted(), "abort_run() did not stick");
}

void world_t::fail_packets(packet_t* list, int crashed_rank) {
  while (list != nullptr) {
    packet_t* packet = list;
    list = list->next;
    packet->next = nullptr;
    net_status_t local;
    local.opcode = local_opcode(packet->kind);
    local.fault = net_fault_t::peer_crashed;
    local.rank = crashed_rank;
    local.user_context = packet->user_context;
    local.length = packet->size;
    complete_local(packet, local);
  }
}

// Adds to a counter and returns its old value. Deterministic mode runs every
// fiber and timer on the scheduler's one OS thread, so there a relaxed load
// and store cannot lose an update and spare the locked read-modify-write
// (several per message: the sim's hottest cost after the port locks);
// concurrent mode needs the RMW. Relaxed either way: the counters order
// nothing (statistics, and serial numbers that only need to be unique).
std::uint64_t world_t::count_add(util::atomic<std::uint64_t>& counter, std::uint64_t delta) {
  if (scheduler_ == nullptr) return counter.fetch_add(delta, util::mo_relaxed);
  const std::uint64_t old = counter.load(util::mo_relaxed);
  counter.store(old + delta, util::mo_relaxed);
  return old;
}

std::uint64_t world_t::next_serial() {
  return count_add(serial_, 1);
}

void world_t::count_fault(fault_kind_t kind) {
  faults_[static_cast<std::size_t>(kind)].fetch_add(1, util::mo_relaxed);  // relaxed: a statistic
  if (scheduler_ != nullptr) scheduler_->trace(0xFA017ull << 32 | static_cast<std::uint64_t>(kind));
}

std::uint64_t world_t::faults_injected(fault_kind_t kind) const {
  return faults_[static_cast<std::size_t>(kind)].load(util::mo_relaxed);  // relaxed: a statistic
}

std::uint64_t world_t::deliveries_count() const {
  return deliveries_.load(util::mo_relaxed);  // relaxed: a statistic
}

std::size_t world_t::wire_count() const {
  return static_cast<std::size_t>(in_wire_.load(util::mo_relaxed));  // relaxed: a statistic
}

void world_t::trace_event(char what, const packet_t& packet, net_fault_t fault) {
  if (scheduler_ != nullptr) {
    const std::uint64_t word = static_cast<std::uint64_t>(what) << 56 ^
                               static_cast<std::uint64_t>(packet.source_rank) << 40 ^
                               static_cast<std::uint64_t>(packet.target_rank) << 24 ^
                               static_cast<std::uint64_t>(packet.kind) << 20 ^
                               static_cast<std::uint64_t>(fault) << 16 ^ packet.size;
    scheduler_->trace(word);
    scheduler_->trace(packet.serial ^ static_cast<std::uint64_t>(packet.imm_data) << 32);
  }
  if (!options_.trace_events) return;
  const unsigned long long tick =
      scheduler_ != nullptr ? static_cast<unsigned long long>(scheduler_->now_ticks()) : 0;
  std::fprintf(stderr, "lci sim: tick %llu %c #%llu %s %d->%d dev %u size %zu imm %u%s\n",
               tick, what, static_cast<unsigned long long>(packet.serial),
               kind_name(packet.kind), packet.source_rank, packet.target_rank,
               packet.device_index, packet.size, packet.imm_data,
               fault == net_fault_t::protection     ? " FAULT protection"
               : fault == net_fault_t::peer_crashed ? " FAULT peer_crashed"
                                                    : "");
}

// ---- the wire ----

error_t world_t::launch(packet_t* packet, std::uint64_t delay_ticks) {
  LCI_ASSERT(packet->next == nullptr, "launching a packet that is in a list");
  trace_event('P', *packet, net_fault_t::none);
  if (scheduler_ != nullptr) {
    const error_t error = scheduler_->schedule_event_after(delay_ticks, packet);
    if (error.is_retry()) return error;
  } else {
    wire_t& wire = wires_[packet->device_index];
    util::spinlock_guard_t guard(wire.lock);
    LCI_ASSERT(wire.packets.size() < wire.packets.capacity(), "wire capacity not reserved");
    wire.packets.push_back(packet);
  }
  count_add(in_wire_, 1);
  return errorcode_t::done;
}

// The packet's timer came due (deterministic mode).
void world_t::fire_delivery(timer_event_t* event, void* fire_context) {
  auto* world = static_cast<world_t*>(fire_context);
  world->count_add(world->in_wire_, ~std::uint64_t{0});  // - 1, modulo 2^64
  world->deliver(static_cast<packet_t*>(event));
}

std::size_t world_t::drive_wire(std::uint32_t device_index) {
  LCI_ASSERT(scheduler_ == nullptr, "drive_wire is for concurrent mode");
  wire_t& wire = wires_[device_index];
  packet_t* picked[deliveries_per_poll_limit];
  std::size_t picked_count = 0;
  {
    util::try_lock_guard_t guard(wire.lock);
    if (!guard.owns_lock()) return 0;  // another poller is moving this wire
    const std::size_t count_max =
        std::min(options_.deliveries_per_poll_max, deliveries_per_poll_limit);
    while (picked_count < count_max && !wire.packets.empty()) {
      // A random pick reorders messages, as the contract allows.
      const std::size_t index = wire.prng.uniform(wire.packets.size());
      picked[picked_count++] = wire.packets[index];
      wire.packets[index] = wire.packets.back();
      wire.packets.pop_back();
    }
  }
  for (std::size_t i = 0; i < picked_count; ++i) {
    count_add(in_wire_, ~std::uint64_t{0});  // - 1, modulo 2^64
    deliver(picked[i]);
  }
  return picked_count;
}

bool world_t::pump_waiting(port_t* port) {
  packet_t* list;
  {
    detail::port_guard_t guard(port->lock, detail::port_guard_t::mode_t::wait);
    list = port->waiting_detach();
  }
  // Each detached packet is tried once; one that waits again joins a new list.
  bool delivered = false;
  while (list != nullptr) {
    packet_t* packet = list;
    list = list->next;
    packet->next = nullptr;
    delivered |= deliver(packet, /*target_calls=*/true);
  }
  return delivered;
}

// ---- delivery ----

bool world_t::deliver(packet_t* packet, bool target_calls) {
  LCI_ASSERT(packet->next == nullptr, "delivering a packet that is in a list");
  if (is_crashed(packet->source_rank)) {
    release_dropped(packet);  // nobody is left to complete it to
    return true;
  }
  if (reads_closed_origin(*packet)) {
    // Its device was freed and the packet would read or write the sender's
    // memory: as a real network drops what a closed endpoint had not sent,
    // and never touches the sender's memory again (the payload may be a
    // packet of a pool freed since: reading it was a use-after-free). A
    // peer that needed the message waits for it, which the deadlock report
    // shows. An inject's copy is the network's own and still arrives.
    release_dropped(packet);
    return true;
  }
  net_status_t local;
  local.opcode = local_opcode(packet->kind);
  local.rank = packet->target_rank;
  local.user_context = packet->user_context;
  local.length = packet->size;
  if (is_crashed(packet->target_rank)) {
    local.fault = net_fault_t::peer_crashed;
    complete_local(packet, local);
    return true;
  }
  port_t* target = find_port(packet->target_rank, packet->device_index);
  if (target == nullptr) {
    util::spinlock_guard_t guard(lock_);
    target = find_port(packet->target_rank, packet->device_index);
    if (target == nullptr && has_exited(packet->target_rank)) {  // never will be
      local.fault = net_fault_t::peer_crashed;
      complete_local(packet, local);
      return true;
    }
    if (target == nullptr) {  // held until the device is allocated there
      port_slot_t& s = slot(packet->target_rank, packet->device_index);
      if (s.early_tail == nullptr) {
        s.early_head = packet;
      } else {
        s.early_tail->next = packet;
      }
      s.early_tail = packet;
      return false;
    }
  }
  if (!deliver_at_target(*target, *packet, &local, target_calls)) return false;  // waits there
  count_add(deliveries_, 1);
  complete_local(packet, local);
  return true;
}

// Returns false when the packet must wait at the target (queued there).
bool world_t::deliver_at_target(port_t& target, packet_t& packet, net_status_t* local,
                                bool target_calls) {
  detail::port_guard_t guard(target.lock, detail::port_guard_t::mode_t::wait);
  if (target.crashed || (!target.open && has_exited(target.rank))) {
    local->fault = net_fault_t::peer_crashed;
    return true;
  }
  bool delivered;
  if (packet.kind == packet_kind_t::send) {
    delivered = deliver_send(target, packet);
  } else {
    // Manual progress: the RMA waits for the target's next device call
    // (a waiting packet makes its poll_comp and post_recv pump).
    // (A get over a profile whose provider reads without the target's
    // help lands on arrival.)
    const bool lands_now = target_calls || !options_.rma_waits_for_target ||
                           (packet.kind == packet_kind_t::get &&
                            !options_.profile.get_waits_for_target);
    delivered = lands_now && deliver_rma(target, packet, local);
  }
  if (!delivered) {
    detail::profile_note_waiting_locked(*this, target, &packet, target_calls);
    target.waiting_push(&packet);
    trace_event('W', packet, net_fault_t::none);
  }
  return delivered;
}

bool world_t::deliver_send(port_t& target, packet_t& packet) {
  const double no_buffer_rate = options_.faults.rate(fault_kind_t::no_recv_buffer);
  if (no_buffer_rate > 0.0 && target.prng.chance(no_buffer_rate)) {
    count_fault(fault_kind_t::no_recv_buffer);
    return false;
  }
  detail::recv_slot_t recv;
  if (!target.recvs.take_first_fit(packet.size, &recv, target.cq_has_room())) {
    return false;  // no buffer fits: RNR
  }
  // A multi-receive buffer packs messages back to back, with no alignment.
  void* landing = static_cast<std::byte*>(recv.buffer) + recv.used_bytes;
  if (packet.size > 0) std::memcpy(landing, packet.payload, packet.size);
  net_status_t status;
  status.opcode = net_opcode_t::recv;
  status.rank = packet.source_rank;
  status.user_context = recv.user_context;
  status.buffer = landing;
  status.length = packet.size;
  status.imm_data = packet.imm_data;
  status.buffer_released = recv.released_by(packet.size);
  status.buffer_messages = status.buffer_released ? recv.messages_count + 1 : 0;  // + this one
  if (recv.leaves_with(packet.size)) {  // the receive's reservation is this completion's
    LCI_ASSERT(target.cq_reserved > 0, "a posted receive had no completion slot");
    --target.cq_reserved;
  } else {  // a multi-receive buffer stays posted, its reservation kept for its release
    LCI_ASSERT(target.cq_has_room(), "a multi-receive message without a free completion slot");
  }
  target.cq_push(status);
  trace_event('R', packet, net_fault_t::none);
  return true;
}

// Checks the key and bounds at the target, as a NIC does; a refused access
// completes the initiator with a protection fault and touches nothing.
bool world_t::deliver_rma(port_t& target, packet_t& packet, net_status_t* local) {
  const std::uint64_t index = (packet.rmr.rkey & 0xFFFFFFFFull) - 1;
  const auto generation = static_cast<std::uint32_t>(packet.rmr.rkey >> 32);
  std::uintptr_t address = packet.rmr.base + packet.offset;  // unsigned: may wrap, then refused
  bool allowed = index < target.registrations.size();
  if (allowed) {
    const detail::registration_t& registration = target.registrations[index];
    // By offset (the tcp profile), a base the initiator got wrong lands
    // elsewhere in the region, as over that provider.
    const std::uintptr_t base =
        options_.profile.addresses_by_offset ? registration.base : packet.rmr.base;
    address = base + packet.offset;
    allowed = packet.offset <= ~std::uintptr_t{0} - base && registration.live &&
              registration.generation == generation &&
              address >= registration.base &&
              packet.size <= registration.size &&
              address - registration.base <= registration.size - packet.size;
  }
  const bool stalled = (packet.profile_flags & detail::packet_stalled) != 0;
  if ((!allowed || stalled) && !options_.profile.checks_remote_keys) {
    return detail::profile_deliver_unchecked_locked(*this, target, packet);
  }
  if (!allowed) {
    local->fault = net_fault_t::protection;
    local->fault_address = address;
    trace_event('X', packet, net_fault_t::protection);
    return true;
  }
  if (packet.kind == packet_kind_t::put_imm && !target.cq_has_room()) return false;
  void* memory = reinterpret_cast<void*>(address);
  if (packet.size > 0) {
    if (packet.kind == packet_kind_t::get) {
      std::memcpy(packet.destination, memory, packet.size);
    } else {
      std::memcpy(memory, packet.payload, packet.size);
    }
  }
  if (packet.kind == packet_kind_t::put_imm) {
    net_status_t status;
    status.opcode = net_opcode_t::remote_write;
    status.rank = packet.source_rank;
    status.buffer = memory;
    status.length = packet.size;
    status.imm_data = packet.imm_data;
    target.cq_push(status);
  }
  trace_event('D', packet, net_fault_t::none);
  return true;
}

// The initiator's side: its reserved completion slot is used (signalled op
// or a fault) or released, and the packet goes home.
void world_t::complete_local(packet_t* packet, const net_status_t& local) {
  port_t& origin = *packet->origin;
  detail::port_guard_t guard(origin.lock, detail::port_guard_t::mode_t::wait);
  LCI_ASSERT(origin.cq_reserved > 0, "a post had no completion slot reserved");
  --origin.cq_reserved;
  detail::profile_note_home_locked(*this, origin, packet);
  const bool report = packet->signaled || local.fault != net_fault_t::none;
  // A freed device's completions have no one to poll them.
  if (report && !origin.crashed && origin.open) {
    origin.cq_push(local);  // an "s" variant's user_context is nullptr
  }
  if (local.fault != net_fault_t::none) trace_event('F', *packet, local.fault);
  LCI_ASSERT(origin.packets_free.size() < origin.packets.size(), "packet returned twice");
  origin.packets_free.push_back(packet);
  count_progress();
}

bool world_t::reads_closed_origin(packet_t& packet) {
  const bool own_copy = packet.kind != packet_kind_t::get &&
                        (packet.size == 0 || packet.payload == packet.inline_data);
  if (own_copy) return false;
  port_t& origin = *packet.origin;
  detail::port_guard_t guard(origin.lock, detail::port_guard_t::mode_t::wait);
  return !origin.open;
}

void world_t::release_dropped(packet_t* packet) {
  port_t& origin = *packet->origin;
  detail::port_guard_t guard(origin.lock, detail::port_guard_t::mode_t::wait);
  LCI_ASSERT(origin.cq_reserved > 0, "a post had no completion slot reserved");
  --origin.cq_reserved;
  detail::profile_note_home_locked(*this, origin, packet);
  trace_event('Z', *packet, net_fault_t::peer_crashed);
  LCI_ASSERT(origin.packets_free.size() < origin.packets.size(), "packet returned twice");
  origin.packets_free.push_back(packet);
  count_progress();
}

// ---- reports ----

std::uint64_t world_t::registrations_made(int rank) const {
  LCI_ASSERT(rank >= 0 && rank < options_.ranks_count, "registrations_made: no such rank");
  std::uint64_t made = 0;
  for (std::uint32_t k = 0; k < options_.devices_per_rank_max; ++k) {
    port_t* port = const_cast<world_t*>(this)->find_port(rank, k);
    if (port == nullptr) continue;
    detail::port_guard_t guard(port->lock, detail::port_guard_t::mode_t::wait);
    made += port->registrations_made;
  }
  return made;
}

std::string world_t::describe_ranks() const {
  std::string text;
  for (int rank = 0; rank < options_.ranks_count; ++rank) {
    if (rank == report_ranks_max) {
      text += "  ... (" + std::to_string(options_.ranks_count - rank) + " more ranks)\n";
      break;
    }
    // relaxed: a label for reports (see note_wait()).
    const char* what = waiting_for_[rank].load(util::mo_relaxed);
    const char* quiet_call = quiet_call_[rank].load(util::mo_relaxed);  // relaxed: as above
    text += "  rank " + std::to_string(rank) + (is_crashed(rank) ? " (crashed)" : "") +
            ": waits for \"" + (what != nullptr ? what : "-") + "\"";
    if (quiet_call != nullptr) text += ", last quiet call \"" + std::string(quiet_call) + "\"";
    for (std::uint32_t k = 0; k < options_.devices_per_rank_max; ++k) {
      port_t* port = const_cast<world_t*>(this)->find_port(rank, k);
      if (port == nullptr) continue;
      detail::port_guard_t guard(port->lock, detail::port_guard_t::mode_t::wait);
      text += "; device " + std::to_string(k) + (port->open ? "" : " (freed)") +
              ": recvs posted " + std::to_string(port->recvs.size()) + ", ops in flight " +
              std::to_string(port->packets_in_flight()) + ", messages waiting here " +
              std::to_string(port->waiting_count) + ", completions unpolled " +
              std::to_string(port->cq_count);
    }
    text += "\n";
  }
  return text;
}

// Leftovers leave out what only concerns a dead rank: an operation still on
// its way to one (it will fail at delivery) and a fault naming one that came
// after the program's last poll (the program learned of the crash already
// from the peer_down report, or never needed to).
std::size_t world_t::live_ops_in_flight(const port_t& port) const {
  std::size_t count = 0;
  for (const packet_t& packet : port.packets) {
    const bool free = std::find(port.packets_free.begin(), port.packets_free.end(), &packet) !=
                      port.packets_free.end();
    if (!free && !is_crashed(packet.target_rank)) ++count;
  }
  return count;
}

std::size_t world_t::live_completions(const port_t& port) const {
  std::size_t count = 0;
  for (std::size_t i = 0; i < port.cq_count; ++i) {
    std::size_t index = port.cq_head + i;
    if (index >= port.cq.size()) index -= port.cq.size();
    if (port.cq[index].fault != net_fault_t::peer_crashed) ++count;
  }
  return count;
}

std::string world_t::describe_leftovers() const {
  std::string text;
  for (int rank = 0; rank < options_.ranks_count; ++rank) {
    if (is_crashed(rank)) continue;
    for (std::uint32_t k = 0; k < options_.devices_per_rank_max; ++k) {
      port_t* port = const_cast<world_t*>(this)->find_port(rank, k);
      if (port == nullptr) continue;
      detail::port_guard_t guard(port->lock, detail::port_guard_t::mode_t::wait);
      const std::size_t ops = live_ops_in_flight(*port);
      const std::size_t completions = live_completions(*port);
      if (port->registrations_left_at_close != 0) {
        text += "rank " + std::to_string(rank) + " device " + std::to_string(k) +
                ": closed with " + std::to_string(port->registrations_left_at_close) +
                " registrations standing (a verbs PD or an ofi domain refuses that)\n";
      }
      if (ops == 0 && port->waiting_count == 0 && completions == 0) continue;
      text += "rank " + std::to_string(rank) + " device " + std::to_string(k) + ": " +
              std::to_string(ops) + " ops never completed, " +
              std::to_string(port->waiting_count) + " messages never received, " +
              std::to_string(completions) + " completions never polled\n";
    }
    for (std::uint32_t k = 0; k < options_.devices_per_rank_max; ++k) {
      port_slot_t& s = slot(rank, k);
      util::spinlock_guard_t guard(lock_);
      if (s.early_head != nullptr) {
        text += "rank " + std::to_string(rank) + " device " + std::to_string(k) +
                ": messages sent to a device never allocated\n";
      }
    }
  }
  return text;
}

}  // namespace lci::sim
