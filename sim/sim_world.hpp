// world_t: the simulated network (docs/design.md, "The simulated network";
// docs/design/sim_network.md). N ranks in one process; each rank reaches the
// world through a sim_context_t (sim_context.hpp) and its devices
// (sim_device.hpp), which implement the backend contract in
// backends/backend.hpp.
//
// The wire. Every post takes a packet from the initiating device's fixed pool
// and "launches" it; delivery does the target side (match a posted receive,
// check an RMA key, copy) and then completes the initiator.
//   deterministic mode  (a scheduler_t is attached): a launch schedules the
//     packet itself (an intrusive timer event) for delivery at now + latency
//     + size / bandwidth + jitter (+ fault delays), drawn from the seeded
//     PRNG, so delivery order is a function of the seed. All ranks run as
//     fibers of that scheduler.
//   concurrent mode (no scheduler): a launch appends the packet to the wire
//     of its device index; any poll_comp on a device of that index moves up
//     to deliveries_per_poll_max packets, picked at random (reordering).
// A message that finds no receive buffer (or a target whose completion
// queue has no room for a remote_write, or for a message into a
// multi-receive buffer that stays posted) waits at the target, like an RNR
// retry, and is delivered by the target's next post_recv/poll_comp.
//
// Multi-receive buffers (post_recv_multi): a posted receive that stays in
// the queue across messages. A message takes it when its free bytes suffice
// and lands at its first free byte; once less than multi_recv_min_free
// bytes are free it leaves the queue, and that message's completion carries
// buffer_released and buffer_messages. Like any posted receive it holds one completion-queue
// slot while posted (used by the releasing message); every other message
// into it needs a free slot.
//
// Crashes. crash_rank(r) marks r dead: its devices drop their receives, every
// operation waiting at r and every later one addressed to r completes at its
// initiator with fault peer_crashed naming r; r's own later backend calls
// throw rank_crashed_t; every other rank's devices report r (peer_down) at
// their next poll_comp. Nothing waits on a dead rank, so nothing hangs.
//
// Progress and stopping (concurrent mode; sim_harness.hpp, "watchdog").
// progress_count() counts what the harness's watchdog calls progress: an
// operation ending at its initiator (delivered, failed or dropped), a
// poll_comp that returned completions, and note_progress() (a device
// allocated, memory deregistered, a crash, a barrier released, a rank
// returned). abort_run() stops a run: every later backend call of every
// rank throws run_aborted_t, so threads spinning in calls unwind and can be
// joined, as deterministic mode cancels the fibers of a failed run.
//
// Thread safety: concurrent mode: every method may run concurrently (a
//                world-wide spinlock guards the port table and crash state;
//                each port has its own lock; at most one lock is held at a
//                time except port -> wire in a launch). Deterministic mode:
//                only on the scheduler's OS thread (its fibers and timers),
//                which lets port locks be checked flags and statistics
//                plain load/store pairs (port_lock_t, count_add()).
// Blocking:      never waits for another rank; internal spinlocks guard
//                short, bounded critical sections.
// Ownership:     the world owns every port (the network side of a device),
//                their packet pools and queues, until it is destroyed; a
//                sim_device_t is a handle. The world must outlive its
//                contexts, devices and the scheduler's run.
// Allocation:    ports, pools and queues at alloc_device; the data path does
//                not allocate (a packet on the wire is its own timer event;
//                only one delayed past the scheduler's calendar window, by a
//                delay_spike fault, may grow the scheduler's overflow heap).
// Limits:        ranks_count_max ranks, devices_per_rank_max devices per rank,
//                net_max_sends in-flight posts per device (retry_nomem
//                beyond), net_max_recvs receives, net_max_cqes completions,
//                registrations_max registrations per device; under a
//                provider profile (sim_profile.hpp) also that provider's
//                refusals, and up to cq_overflow_max completions past
//                net_max_cqes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/spinlock.hpp"
#include "sim/sim_faults.hpp"
#include "sim/sim_profile.hpp"
#include "sim/sim_prng.hpp"
#include "sim/sim_scheduler.hpp"

namespace lci::sim {

inline constexpr int ranks_count_max = 4096;

struct world_options_t {
  int ranks_count = 2;
  std::uint64_t seed = 0;
  std::uint64_t latency_ticks = 100;   // every message
  std::uint64_t jitter_ticks = 64;     // + uniform [0, jitter_ticks]
  std::uint64_t bytes_per_tick = 64;   // bandwidth: + size / bytes_per_tick
  // Device defaults (a requested attribute of 0 takes these). Small, so that
  // hundreds of ranks fit in one process.
  std::size_t net_max_sends = 32;
  std::size_t net_max_recvs = 32;
  std::size_t net_max_cqes = 128;
  std::size_t inject_size_max = 64;
  std::size_t max_msg_size = 1 << 20;
  std::size_t registrations_max = 16;
  // The largest region a device registers (0: any size). A larger one is
  // refused for good (fatal), as a verbs HCA refuses one over its
  // max_mr_size or the process's RLIMIT_MEMLOCK: the protocol must then
  // move the data without a registration.
  std::size_t registration_size_max = 0;
  std::size_t devices_per_rank_max = 4;
  std::size_t deliveries_per_poll_max = 8;  // concurrent mode
  fault_options_t faults;
  bool trace_events = false;  // print every network event to stderr
  // Manual progress, as libfabric's shm and tcp providers have it: a put,
  // put with immediate or get takes effect only inside a call of the target
  // rank's device (its poll_comp or post_recv), so a program that waits for
  // an RMA while the target does not poll hangs here as it would there.
  // Off: RMA lands on arrival, as with an RDMA NIC. LCI_SIM_RMA_WAITS_FOR_TARGET=1.
  bool rma_waits_for_target = false;
  // What devices report as net_device_attr_t::requires_local_mr. true (as a
  // verbs network): the protocol registers the local buffers of rendezvous
  // sends, puts and gets, which keeps registrations_max in play. false (as
  // libfabric without FI_MR_LOCAL): it registers only what a peer addresses.
  // LCI_SIM_REQUIRES_LOCAL_MR=0.
  bool requires_local_mr = true;
  // Whether devices grant net_device_attr_t::supports_multi_recv to a caller
  // that requests it (post_recv_multi, as libfabric's FI_MULTI_RECV). false:
  // they never do, so the caller posts one buffer per message (post_recv).
  // LCI_SIM_MULTI_RECV=0|1.
  bool multi_recv = true;
  // How devices behave at their limits: today's simulator, or as libfabric's
  // shm or tcp;ofi_rxm (sim_profile.hpp). Set by apply_provider_profile(),
  // which also sets the device defaults above; LCI_SIM_PROFILE=shm|tcp.
  provider_profile_t profile;
};

// Whether environment variable `name` is set to something other than "" or
// "0" (how the LCI_SIM_* switches are turned on).
bool env_flag_on(const char* name);
// Applies LCI_SIM_PROFILE (first: sim_profile.hpp), LCI_SIM_FAULT_<NAME>
// (sim_faults.hpp), LCI_SIM_TRACE=1,
// LCI_SIM_RMA_WAITS_FOR_TARGET=1, LCI_SIM_REQUIRES_LOCAL_MR=0 and
// LCI_SIM_MULTI_RECV=0|1.
void apply_world_env(world_options_t* options);
// One line with every option, printed before a run (with the seed).
std::string describe_world_options(const world_options_t& options);

// Thrown by a crashed rank's own backend calls (and by rank_env_t::crash()):
// the rank's code unwinds; the harness counts the rank as crashed.
class rank_crashed_t : public std::runtime_error {
 public:
  explicit rank_crashed_t(int rank);
  int rank() const { return rank_; }

 private:
  int rank_;
};

// Thrown by every backend call (and rank_env_t wait) once the run was
// stopped (world_t::abort_run(): the watchdog fired, or a rank failed): the
// rank's code unwinds; the harness reports what stopped the run, not this.
class run_aborted_t : public std::runtime_error {
 public:
  run_aborted_t();
};

namespace detail {

enum class packet_kind_t : std::uint8_t { send, put, put_imm, get };

// One operation in flight. Lives in its initiating port's pool; at any time
// it is in exactly one place: that pool's free list, the wire (pending as a
// scheduler timer event, or in a wire vector), a target's waiting list, or in
// the hands of a delivery.
struct port_t;

struct packet_t : timer_event_t {
  packet_t* next = nullptr;  // waiting/early list link
  port_t* origin = nullptr;  // the initiating port (owns this packet)
  packet_kind_t kind = packet_kind_t::send;
  bool signaled = true;      // false: an "s" variant (no completion on success)
  std::uint32_t device_index = 0;
  int source_rank = -1;
  int target_rank = -1;
  std::size_t size = 0;
  const void* payload = nullptr;  // inline_data copy, or the caller's buffer
  void* destination = nullptr;    // get: the initiator's buffer
  std::uint64_t offset = 0;
  backend::net_rmr_t rmr;
  backend::net_imm_data_t imm_data = 0;
  void* user_context = nullptr;
  std::uint64_t serial = 0;       // world-wide post number (trace)
  std::byte* inline_data = nullptr;  // this packet's slot in the port arena
  std::uint8_t profile_flags = 0;    // sim_profile.hpp (packet_small_put, ...)
};

// A posted receive: a buffer of post_recv takes one message; a multi-receive
// buffer (post_recv_multi) takes messages one after another at used_bytes
// and stays posted until less than min_free_bytes of it are free.
struct recv_slot_t {
  void* buffer = nullptr;
  std::size_t size = 0;
  void* user_context = nullptr;
  bool multi = false;
  std::size_t used_bytes = 0;      // multi: where the next message lands
  std::size_t messages_count = 0;  // multi: messages landed so far
  std::size_t min_free_bytes = 0;  // multi: the device's multi_recv_min_free

  std::size_t free_bytes() const { return size - used_bytes; }
  // Whether a message of `message_size` bytes (that fits) releases this
  // multi-receive buffer.
  bool released_by(std::size_t message_size) const {
    LCI_ASSERT(message_size <= free_bytes(), "a message over a receive's free bytes");
    return multi && free_bytes() - message_size < min_free_bytes;
  }
  // Whether the receive leaves the queue with that message (and with it its
  // completion-queue reservation, which the message's completion uses).
  bool leaves_with(std::size_t message_size) const {
    return !multi || released_by(message_size);
  }
};

// A port's posted receives, oldest first: a message takes the oldest buffer
// that fits. A fixed ring, so taking the oldest (the common case) moves
// nothing, and taking the i-th moves the i older ones up by one slot.
class recv_queue_t {
 public:
  explicit recv_queue_t(std::size_t capacity) : slots_(capacity) {}

  std::size_t size() const { return count_; }
  bool full() const { return count_ == slots_.size(); }
  void clear() { count_ = 0; }
  void push(const recv_slot_t& slot) {
    LCI_ASSERT(!full(), "posted receives over net_max_recvs");
    LCI_ASSERT(slot.used_bytes == 0, "a receive posted with bytes used");
    LCI_ASSERT(slot.messages_count == 0, "a receive posted with messages in it");
    if (slot.multi) LCI_ASSERT(slot.size >= slot.min_free_bytes, "a multi-receive under min_free");
    slots_[at(count_)] = slot;
    ++count_;
  }
  // Gives a message of `size` bytes the oldest receive with that many bytes
  // free: *taken is that receive as the message found it (its bytes go to
  // buffer + used_bytes). A receive that leaves_with(size) leaves the queue;
  // a multi-receive buffer that stays has its used_bytes advanced by size
  // and the message counted. cq_room: whether the completion queue has an
  // unreserved slot; the completion of a message into a buffer that stays
  // needs one (its reservation is for the release), so without it such a
  // buffer is passed over (the default, true, suits a queue seen alone).
  // False (nothing changes) if no receive takes the message.
  bool take_first_fit(std::size_t size, recv_slot_t* taken, bool cq_room = true) {
    std::size_t index = 0;
    while (index < count_ && !takes(slots_[at(index)], size, cq_room)) ++index;
    if (index == count_) return false;
    recv_slot_t& slot = slots_[at(index)];
    *taken = slot;
    if (!slot.leaves_with(size)) {
      slot.used_bytes += size;
      ++slot.messages_count;
      LCI_ASSERT(slot.free_bytes() >= slot.min_free_bytes, "a multi-receive stayed too full");
      return true;
    }
    for (; index > 0; --index) slots_[at(index)] = slots_[at(index - 1)];
    head_ = at(1);
    --count_;
    return true;
  }

 private:
  static bool takes(const recv_slot_t& slot, std::size_t size, bool cq_room) {
    return slot.free_bytes() >= size && (cq_room || slot.leaves_with(size));
  }
  // The slot of the index-th oldest receive; index <= count_ <= capacity,
  // so one subtraction wraps it.
  std::size_t at(std::size_t index) const {
    const std::size_t slot = head_ + index;
    return slot >= slots_.size() ? slot - slots_.size() : slot;
  }

  std::vector<recv_slot_t> slots_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

struct registration_t {
  std::uintptr_t base = 0;
  std::size_t size = 0;
  std::uint32_t generation = 1;  // bumped at deregistration: stale keys fail
  bool live = false;
};

// A port's lock. Concurrent mode: a spinlock (ranks are OS threads).
// Deterministic mode: every fiber and timer runs on the scheduler's one OS
// thread, and no port lock is held across a scheduling point (device calls
// release it before their call point, timers fire outside it), so it can
// never be found taken: a flag asserts exactly that and spares the locked
// exchange (one per lock, several per message). It still counts in
// spinlocks_held_by_this_thread(), so a switch under it fails the run as a
// switch under a spinlock does.
class port_lock_t {
 public:
  explicit port_lock_t(bool single_thread) : single_thread_(single_thread) {}
  port_lock_t(const port_lock_t&) = delete;
  port_lock_t& operator=(const port_lock_t&) = delete;

  [[nodiscard]] bool try_lock() {
    if (!single_thread_) return lock_.try_lock();
    LCI_ASSERT(!held_, "a port lock held across a scheduling point");
    held_ = true;
    ++util::detail::spinlocks_held_count;
    return true;
  }
  void lock() {
    if (!single_thread_) {
      lock_.lock();
      return;
    }
    const bool taken = try_lock();
    LCI_ASSERT(taken, "a single-thread port lock is never busy");
  }
  void unlock() {
    if (!single_thread_) {
      lock_.unlock();
      return;
    }
    LCI_ASSERT(held_, "unlock of a free port lock");
    held_ = false;
    --util::detail::spinlocks_held_count;
  }

 private:
  util::spinlock_t lock_;
  const bool single_thread_;
  bool held_ = false;  // single_thread_ only
};

// Holds a port_lock_t for a scope: lock() (blocking) or try_lock() (then
// owns_lock() says whether it got it).
class port_guard_t {
 public:
  enum class mode_t : std::uint8_t { wait, try_once };
  port_guard_t(port_lock_t& lock, mode_t mode)
      : lock_(lock), owns_(mode == mode_t::try_once ? lock.try_lock() : (lock.lock(), true)) {}
  ~port_guard_t() {
    if (owns_) lock_.unlock();
  }
  port_guard_t(const port_guard_t&) = delete;
  port_guard_t& operator=(const port_guard_t&) = delete;
  bool owns_lock() const { return owns_; }

 private:
  port_lock_t& lock_;
  const bool owns_;
};

// The network side of device `device_index` of rank `rank`. Everything below
// `lock` is guarded by it.
struct port_t {
  port_t(int rank, std::uint32_t device_index, const backend::net_device_attr_t& attr,
         std::size_t registrations_max, prng_t prng, bool single_thread, int ranks_count);

  port_lock_t lock;
  const int rank;
  const std::uint32_t device_index;
  const backend::net_device_attr_t attr;
  bool open = true;      // false after the device handle is destroyed
  bool crashed = false;  // the rank crashed
  std::vector<packet_t> packets;
  std::vector<packet_t*> packets_free;
  std::vector<std::byte> inline_arena;
  recv_queue_t recvs;  // capacity net_max_recvs; each holds one cq_reserved slot
  std::vector<backend::net_status_t> cq;  // ring, capacity net_max_cqes
  std::size_t cq_head = 0;
  std::size_t cq_count = 0;
  std::size_t cq_reserved = 0;  // slots promised to posted ops and receives
  packet_t* waiting_head = nullptr;  // others' packets waiting here (RNR)
  packet_t* waiting_tail = nullptr;
  std::size_t waiting_count = 0;
  // Of those, packets the profile moved into the provider's receive
  // entries (packet_unexpected: profile_note_waiting_locked).
  std::size_t waiting_unexpected_count = 0;
  std::vector<registration_t> registrations;  // fixed size
  std::uint64_t registrations_made = 0;       // successful register_memory calls
  // Registrations still standing when the device closed: a leftover (a
  // verbs PD, like an ofi domain, refuses to close with one on it).
  std::size_t registrations_left_at_close = 0;
  // Dead peers this device has reported (peer_down, once each): by rank,
  // and how many crashes of the world it has looked at.
  std::vector<bool> peers_reported;
  int crashes_reported_count = 0;
  prng_t prng;  // this port's draws (delays, faults), under `lock`
  port_profile_state_t profile;  // provider profile (sim_profile.hpp)

  std::size_t packets_in_flight() const { return packets.size() - packets_free.size(); }
  bool cq_has_room() const { return cq_count + cq_reserved < cq.size(); }
  // Needs a free or reserved slot.
  void cq_push(const backend::net_status_t& status) {
    LCI_ASSERT(cq_count < cq.size(), "completion queue overflow (slot not reserved)");
    std::size_t index = cq_head + cq_count;  // < 2 * size: one subtraction wraps it
    if (index >= cq.size()) index -= cq.size();
    cq[index] = status;
    ++cq_count;
  }
  backend::net_status_t cq_pop() {
    LCI_ASSERT(cq_count > 0, "popping an empty completion queue");
    const backend::net_status_t status = cq[cq_head];
    cq_head = cq_head + 1 == cq.size() ? 0 : cq_head + 1;
    --cq_count;
    return status;
  }
  // Drops every posted receive (device closed, rank crashed) with its
  // completion-queue reservation: one each, a multi-receive buffer's too.
  void drop_recvs();
  void waiting_push(packet_t* packet);
  packet_t* waiting_detach();
};

}  // namespace detail

enum class world_mode_t : std::uint8_t { deterministic, concurrent };

class world_t {
 public:
  explicit world_t(const world_options_t& options);
  ~world_t();
  world_t(const world_t&) = delete;
  world_t& operator=(const world_t&) = delete;

  const world_options_t& options() const { return options_; }
  int ranks_count() const { return options_.ranks_count; }

  // Deterministic mode: deliveries become timers of `scheduler` (which must
  // run every rank as a fiber). Call before any device is allocated.
  void attach_scheduler(scheduler_t* scheduler);
  world_mode_t mode() const {
    return scheduler_ != nullptr ? world_mode_t::deterministic : world_mode_t::concurrent;
  }
  scheduler_t* scheduler() const { return scheduler_; }

  // ---- ranks ----
  void crash_rank(int rank);
  bool is_crashed(int rank) const {
    // acquire: pairs with the release in crash_rank().
    return crashed_[rank].load(util::mo_acquire);
  }
  int crashed_count() const;
  // `rank`'s body returned: as a process that exits, its closed devices are
  // gone for good. What waits at one, and whatever reaches one later (or a
  // device it never allocated), completes at its initiator with
  // peer_crashed, as a real network fails operations to an exited process
  // (the ofi backend finds it by pid). A device the body left open keeps
  // taking messages. A correct program sends nothing there: its peers
  // finished the leaving barrier (docs/design/lifecycle.md, "Leaving").
  void rank_exited(int rank);
  bool has_exited(int rank) const {
    // acquire: pairs with the release in rank_exited().
    return exited_[rank].load(util::mo_acquire);
  }
  // What the rank waits for (deadlock reports); `what` must be a literal.
  void note_wait(int rank, const char* what);
  // Concurrent mode: a backend call of `rank` changed nothing (a poll that
  // found nothing, a retry); reports name the last such call, what a rank
  // spinning in calls spins on. `what` must be a literal. Deterministic
  // mode: nothing (the scheduler's fiber report names it).
  void note_quiet_call(int rank, const char* what);

  // ---- progress and stopping (see the file comment) ----
  // The world changed state outside a call's own accounting: deterministic
  // mode tells the running scheduler (nothing once its run is over);
  // concurrent mode counts a progress event.
  void note_progress();
  // Concurrent mode: one progress event. Deterministic mode: nothing (call
  // points and timer firings are the scheduler's progress).
  void count_progress() {
    // relaxed: the watchdog only compares successive values; nothing is
    // published through the count.
    if (scheduler_ == nullptr) progress_.fetch_add(1, util::mo_relaxed);
  }
  // Progress events so far (concurrent mode; 0 in deterministic mode).
  std::uint64_t progress_count() const;
  // Concurrent mode: stops the run (idempotent). Deterministic mode
  // cancels fibers instead: invalid there.
  void abort_run();
  bool run_aborted() const {
    // acquire: pairs with the release in abort_run() [S]: what the stopper
    // recorded before (the failure, the world's photograph) is settled.
    return aborted_.load(util::mo_acquire);
  }

  // ---- used by sim_context_t / sim_device_t ----
  // The port of device `device_index` of `rank`, or nullptr before it is
  // allocated (provider profiles read a peer's state through it).
  detail::port_t* port_of(int rank, std::uint32_t device_index) {
    return find_port(rank, device_index);
  }
  detail::port_t* open_port(int rank, std::uint32_t device_index,
                            const backend::net_device_attr_t& attr);
  void close_port(detail::port_t* port);
  // Sends the packet on its way (timer or wire). retry_nomem: no timer left.
  [[nodiscard]] error_t launch(detail::packet_t* packet, std::uint64_t delay_ticks);
  // Delivers the packets waiting at `port` again (after a post_recv/poll).
  // Returns whether any of them got delivered (did not wait again).
  bool pump_waiting(detail::port_t* port);
  // Concurrent mode: delivers up to deliveries_per_poll_max packets of this
  // device index. Returns how many.
  std::size_t drive_wire(std::uint32_t device_index);
  void count_fault(fault_kind_t kind);
  std::uint64_t next_serial();
  void trace_event(char what, const detail::packet_t& packet, backend::net_fault_t fault);

  // ---- reports and checks ----
  std::uint64_t faults_injected(fault_kind_t kind) const;
  std::uint64_t deliveries_count() const;
  std::size_t wire_count() const;  // launched and not yet delivered
  // Registrations the rank's devices have made so far (freed devices too).
  std::uint64_t registrations_made(int rank) const;
  // Per rank: what it waits for, posted receives, ops in flight, waiting
  // messages, completions not polled. For deadlock reports.
  std::string describe_ranks() const;
  // "" if nothing is in flight, waiting or unpolled on live ranks; else what.
  std::string describe_leftovers() const;

 private:
  struct port_slot_t;
  struct wire_t;

  static void fire_delivery(timer_event_t* event, void* fire_context);
  // Returns false when the packet waits (at the target, or early).
  // target_calls: inside a call of the target device (pump_waiting), which
  // is when an RMA may land under rma_waits_for_target.
  bool deliver(detail::packet_t* packet, bool target_calls = false);
  bool deliver_at_target(detail::port_t& target, detail::packet_t& packet,
                         backend::net_status_t* local, bool target_calls);
  bool deliver_send(detail::port_t& target, detail::packet_t& packet);
  bool deliver_rma(detail::port_t& target, detail::packet_t& packet,
                   backend::net_status_t* local);
  void complete_local(detail::packet_t* packet, const backend::net_status_t& local);
  void release_dropped(detail::packet_t* packet);
  // Whether the packet's sending device was freed and the packet still
  // reads (payload) or writes (get) that side's memory (takes its port's
  // lock).
  bool reads_closed_origin(detail::packet_t& packet);
  void fail_packets(detail::packet_t* list, int crashed_rank);
  // Under the port's lock: what describe_leftovers() counts.
  std::size_t live_ops_in_flight(const detail::port_t& port) const;
  std::size_t live_completions(const detail::port_t& port) const;
  detail::port_t* find_port(int rank, std::uint32_t device_index);
  std::uint64_t count_add(util::atomic<std::uint64_t>& counter, std::uint64_t delta);
  port_slot_t& slot(int rank, std::uint32_t device_index) const;
  // Under lock_: takes the packets held for `rank`'s devices not yet
  // allocated, as one list (crash_rank, rank_exited fail them).
  detail::packet_t* detach_early_locked(int rank);

  const world_options_t options_;
  scheduler_t* scheduler_ = nullptr;
  mutable util::spinlock_t lock_;  // port table, early lists, crash marks
  std::unique_ptr<port_slot_t[]> slots_;  // [device_index * ranks + rank]
  std::unique_ptr<wire_t[]> wires_;       // [device_index], concurrent mode
  std::unique_ptr<util::atomic<bool>[]> crashed_;
  std::unique_ptr<util::atomic<bool>[]> exited_;
  std::unique_ptr<util::atomic<const char*>[]> waiting_for_;
  std::unique_ptr<util::atomic<const char*>[]> quiet_call_;  // concurrent mode
  util::atomic<int> crashed_count_{0};
  util::atomic<std::uint64_t> serial_{0};
  util::atomic<std::uint64_t> deliveries_{0};
  util::atomic<std::uint64_t> in_wire_{0};
  util::atomic<std::uint64_t> faults_[fault_kinds_count];
  // Lines of their own: progress_ is written by every rank thread at every
  // completion; aborted_ is read by every backend call of every rank thread
  // and written once. aborted_ is the last member and the world's size a
  // multiple of its alignment, so nothing else shares its line.
  alignas(util::cache_line_bytes) util::atomic<std::uint64_t> progress_{0};
  alignas(util::cache_line_bytes) util::atomic<bool> aborted_{false};
};
static_assert(alignof(world_t) >= util::cache_line_bytes,
              "progress_ and aborted_ must sit on lines of their own");

}  // namespace lci::sim
