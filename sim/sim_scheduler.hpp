// scheduler_t: the seeded fiber scheduler at the heart of the deterministic
// simulated network (docs/design.md, "The simulated network";
// docs/design/sim_scheduler.md).
//
// All ranks of a simulation (and any threads a test starts inside a rank)
// run as fibers on one OS thread. At every scheduling point (yield(), wait())
// the running fiber goes back to the scheduler, which picks who runs next
// from a PRNG seeded by one uint64_t. Time is virtual (ticks); timers let the
// network deliver events later. Same seed => same interleaving, same timer
// order, same trace_hash(). A run always ends: all fibers finished, a
// deadlock (every fiber waits and nothing changes), a fiber failure, or a
// bound (steps_max, ticks_max) reached; each ending is a run_result_t whose
// report names the seed and a one-line replay command.
//
//   lci::sim::scheduler_options_t options;
//   options.seed = lci::sim::seed_from_env(42);
//   lci::sim::scheduler_t scheduler(options);
//   scheduler.spawn("rank0", [&] { while (!done) scheduler_t::wait("done"); });
//   scheduler.spawn("rank1", [&] { done = true; scheduler.note_progress(); });
//   lci::sim::run_result_t result = scheduler.run();  // result.ok()
//
// Progress and deadlock. A fiber that waits for something calls wait(what)
// in its loop; a fiber that merely lets others run calls yield(). Progress
// is: note_progress() (the world changed state: a flag set, a packet
// delivered), yield(), a call_point() that changed something, spawn(), a
// fiber finishing, a timer firing. When every
// live fiber has called wait() quiet_waits_min times since the last progress
// and the in-flight count is 0, the scheduler first jumps virtual time to the
// next timer if there is one (no spinning through empty ticks); if there is
// none the run ends as a deadlock, the report listing every fiber and what
// it waits for.
//
// Spinlocks. Fibers share one OS thread, so a fiber that yields while it
// holds an lci::util::spinlock_t would make the next fiber that takes the
// lock spin forever. yield()/wait() check spinlocks_held_by_this_thread() and
// end the run as fiber_failed (naming the fiber and the seed), never a hang.
//
// Thread safety: a scheduler and its fibers live on the OS thread that calls
//                run(); every method except the constructor, spawn() before
//                run() and the read-only getters after run() must be called
//                on that thread while run() is active (from a fiber or a
//                timer callback). Separate schedulers on separate threads are
//                independent.
// Blocking:      run() returns only when the run ends (bounded by steps_max
//                and ticks_max). yield()/wait() suspend the calling fiber
//                until the scheduler picks it again; outside a simulation
//                (current() == nullptr) they return at once, so runtime code
//                may call them unconditionally.
// Ownership:     the scheduler owns its fibers, their stacks and bodies, and
//                the callbacks given to schedule_at(). A timer_event_t given
//                to schedule_event_at() stays its owner's; the owner keeps it
//                alive and leaves it alone until it fires (or the run ends).
//                Strings passed to wait()/call_point() are kept by pointer:
//                they must outlive the wait (use literals).
// Allocation:    spawn() maps a stack and allocates the fiber record;
//                schedule_at() reuses a pooled record for its std::function
//                (a new one only when more are pending than ever before);
//                schedule_event_at() allocates nothing (the event is
//                intrusive), except when a timer lies calendar_ticks_count
//                or more ticks ahead (its overflow heap may grow). The
//                scheduling step itself allocates nothing.
// Limits:        fibers_max spawns (beyond: LCI_ASSERT) and timers_max
//                pending timers (beyond: retry_nomem) per scheduler;
//                steps_max and ticks_max per run (reaching them ends the run
//                with steps_exhausted / ticks_exhausted); run_budget_max
//                calls per turn. stack_bytes per fiber, fixed (guard page
//                below: an overflow faults).
//
// Life cycle:
//
//   state   | spawn | run()     | yield/wait/      | schedule_*  | ~scheduler_t
//           |       |           | call_point       |             |
//   --------+-------+-----------+------------------+-------------+-------------
//   created | ok    | -> running| no-op (no sim)   | ok          | ok
//   running | ok    | invalid   | ok in a fiber;   | ok          | invalid
//           |       |           | invalid in timer |             |
//   ended   | invalid| invalid  | no-op (no sim)   | invalid     | ok
//
// Fiber rules: a fiber must not yield while holding a spinlock, must not
// catch fiber_cancelled_t without rethrowing (teardown unwinds suspended
// fibers with it), and must not call yield()/wait() from a noexcept function
// (teardown throws there). Timer callbacks run between fibers — on the
// scheduler's own stack, or at a call_point() that goes on, on the calling
// fiber's stack with current_fiber() == fiber_id_invalid: they must not
// yield or wait, and must not need much stack.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lci/util/error.hpp"
#include "sim/sim_fiber.hpp"
#include "sim/sim_prng.hpp"
#include "sim/sim_seed.hpp"

namespace lci::sim {

enum class policy_t : std::uint8_t {
  random,       // every scheduling point picks a live fiber uniformly at random
  round_robin,  // live fibers in turn (still deterministic; no randomness)
};

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LCI_SIM_SANITIZED_ 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LCI_SIM_SANITIZED_ 1
#endif
#endif

// Sanitizers' instrumented frames are several times larger.
#if defined(LCI_SIM_SANITIZED_)
inline constexpr std::size_t stack_bytes_default = 256 * 1024;
#else
inline constexpr std::size_t stack_bytes_default = 64 * 1024;
#endif

// An event a scheduler fires at a virtual tick (schedule_event_at()). It is
// intrusive — the network's packets are timer events — so a pending timer
// costs no allocation and firing it no std::function. The owner sets `fire`
// and `fire_context`; the scheduler owns the timer_* fields while the event
// is pending. Not copyable while pending (the calendar links it).
struct timer_event_t {
  using fire_fn_t = void (*)(timer_event_t* event, void* fire_context);
  fire_fn_t fire = nullptr;
  void* fire_context = nullptr;
  timer_event_t* timer_next = nullptr;  // next in its calendar bucket
  std::uint64_t timer_tick = 0;
  std::uint64_t timer_seq = 0;          // ties on a tick: scheduling order
};

struct scheduler_options_t {
  std::uint64_t seed = 0;
  policy_t policy = policy_t::random;
  std::uint64_t steps_max = 10'000'000;  // scheduling decisions per run
  std::uint64_t ticks_max = 1'000'000'000;
  // Virtual time each scheduling step costs, and each call_point() that goes
  // on without a switch (so time per call does not depend on switching).
  std::uint64_t ticks_per_step = 1;
  // A fiber's turn ends at its k-th call_point() that changed the world, k
  // drawn uniformly from [1, run_budget_max] per turn (1: every such call
  // switches; a quiet call always does).
  std::uint32_t run_budget_max = 16;
  std::size_t stack_bytes = stack_bytes_default;
  std::size_t fibers_max = 4096;
  std::size_t timers_max = 1 << 16;
  // Every live fiber waited this many times since the last progress: the
  // scheduler jumps to the next timer, or asks how much is in flight.
  std::uint32_t quiet_waits_min = 4;
  // Deadlock: moreover no timer is pending, nothing is in flight, and every
  // live fiber waited this many times since the last progress (0, or less
  // than quiet_waits_min: quiet_waits_min). Nothing outside the fibers can
  // change then, but a fiber may still be counting idle polls before it acts
  // on its own (waiting for messages to come in before it posts their
  // receives): this is how long such a wait may be.
  std::uint32_t deadlock_waits_min = 0;
  bool log_header = true;   // print seed and parameters to stderr at run()
  bool log_failure = true;  // print the report to stderr unless finished
  std::string replay_command;  // "" = derived (see sim_seed.hpp)
};

struct run_result_t {
  enum class kind_t : std::uint8_t {
    finished,         // every fiber returned
    deadlock,         // every fiber waits, nothing changes, nothing pending
    ticks_exhausted,  // virtual time passed ticks_max
    steps_exhausted,  // steps_max scheduling decisions (a livelock suspect)
    fiber_failed,     // a body threw, or a fiber yielded under a spinlock
  };
  kind_t kind = kind_t::finished;
  std::uint64_t seed = 0;
  std::uint64_t steps_count = 0;
  std::uint64_t ticks = 0;
  std::uint64_t trace_hash = 0;
  fiber_id_t failed_fiber = fiber_id_invalid;
  std::string message;  // the failure's one-line cause ("" if finished)
  std::string replay;   // `LCI_SIM_SEED=<seed> <command>`
  std::string report;   // multi-line: kind, seed, every fiber, replay line

  bool ok() const { return kind == kind_t::finished; }
};

const char* get_kind_str(run_result_t::kind_t kind);

class scheduler_t {
 public:
  explicit scheduler_t(const scheduler_options_t& options);
  ~scheduler_t();
  scheduler_t(const scheduler_t&) = delete;
  scheduler_t& operator=(const scheduler_t&) = delete;

  // Adds a runnable fiber; from outside before run(), or from a fiber or a
  // timer callback during it. The body runs on the fiber's own stack.
  fiber_id_t spawn(std::string name, std::function<void()> body);

  // Runs until the run ends (see the file comment). Once per scheduler.
  run_result_t run();

  // ---- from inside a fiber (no-ops outside a simulation) ----
  // A scheduling point: the scheduler picks who runs next. Counts as progress.
  static void yield();
  // A scheduling point while waiting for `what` (spinning on progress,
  // sync_wait): not progress; `what` appears in deadlock reports.
  static void wait(const char* what);
  // The end of a backend call (sim_device.hpp). changed == false: the call
  // changed nothing (a poll that found nothing, a post refused with retry):
  // exactly wait(what). changed == true: progress; the fiber goes on unless
  // its run budget for this turn is spent (then it switches, as a yield), and
  // timers that came due meanwhile fire here first. Either way the call costs
  // ticks_per_step of virtual time.
  static void call_point(const char* what, bool changed);
  // Waits until virtual time reaches now + ticks (a timer wakes the fiber).
  static void sleep_ticks(std::uint64_t ticks);
  // The scheduler running on this OS thread, or nullptr outside a simulation.
  static scheduler_t* current();
  // The running fiber, or fiber_id_invalid (timer callback, no simulation).
  static fiber_id_t current_fiber();

  // ---- the world (a fiber or a timer callback) ----
  std::uint64_t now_ticks() const { return now_ticks_; }
  // Moves virtual time forward (a fiber modelling compute time).
  void advance_ticks(std::uint64_t ticks);
  // Runs `callback` when virtual time reaches `tick` (>= now_ticks()); equal
  // ticks fire in scheduling order. Firing is progress. retry_nomem when
  // timers_max timers are pending.
  [[nodiscard]] error_t schedule_at(std::uint64_t tick, std::function<void()> callback);
  [[nodiscard]] error_t schedule_after(std::uint64_t ticks, std::function<void()> callback);
  // The same for an intrusive event (fire(event, fire_context) at `tick`),
  // sharing one order (tick, then scheduling order) and one timers_max with
  // schedule_at(). The event must not be pending already.
  [[nodiscard]] error_t schedule_event_at(std::uint64_t tick, timer_event_t* event);
  [[nodiscard]] error_t schedule_event_after(std::uint64_t ticks, timer_event_t* event);
  // The world changed state (a flag set, a packet queued or delivered).
  void note_progress() {
    ++progress_epoch_;
    quiet_count_ = 0;
    deadlock_quiet_count_ = 0;
  }
  // How much the network holds in flight; > 0 postpones a deadlock verdict.
  void set_in_flight_count_fn(std::function<std::size_t()> fn);
  // Mixes a world event (a packet's source, target, size) into trace_hash().
  void trace(std::uint64_t event) {
    mix(tag_world, 0);
    trace_hash_ = (trace_hash_ ^ event) * trace_fnv_prime;
  }

  // ---- getters ----
  std::uint64_t seed() const { return options_.seed; }
  // FNV-1a (64-bit words) of every scheduling decision and event so far.
  std::uint64_t trace_hash() const { return trace_hash_; }
  std::uint64_t steps_count() const { return steps_count_; }
  std::size_t fibers_count() const { return fibers_.size(); }
  std::size_t fibers_live_count() const { return live_.size(); }

 private:
  friend struct scheduler_abort_note_t;  // prints seed and fiber on SIGABRT
  struct fiber_slot_t;
  struct function_event_t;
  enum class phase_t : std::uint8_t { created, running, ended };
  // Why the running fiber suspends: yield() (progress), wait() (not
  // progress), or a call_point() that changed the world and spent the budget.
  enum class point_kind_t : std::uint8_t { yield, wait, call };
  // One tick's timers, in scheduling order (a singly linked list).
  struct timer_bucket_t {
    timer_event_t* head = nullptr;
    timer_event_t* tail = nullptr;
  };

  enum class loop_action_t : std::uint8_t { run_one, again, stop };
  void suspend_running(point_kind_t kind, const char* what);
  void continue_or_switch(const char* what);
  loop_action_t run_checks(run_result_t& result);
  bool step_bounds_reached(run_result_t& result);
  loop_action_t handle_quiet(run_result_t& result);
  fiber_slot_t& pick_next();
  void run_fiber(fiber_slot_t& slot);
  void retire_fiber(fiber_slot_t& slot);
  void fire_due_timers();
  void calendar_insert(timer_event_t* event);
  void calendar_rebase(std::uint64_t base_tick);
  std::uint64_t calendar_first_tick() const;
  timer_event_t* timer_pop();
  static void fire_function_event(timer_event_t* event, void* fire_context);
  void fail(fiber_id_t fiber, std::string message);
  void cancel_live_fibers();
  void finish_result(run_result_t& result);
  std::string describe_fibers() const;
  // Tags of traced events (top byte of each hashed word).
  enum trace_tag_t : std::uint64_t {
    tag_spawn = 1,
    tag_step,
    tag_finish,
    tag_timer,
    tag_time_jump,
    tag_world,
    tag_in_flight,
    tag_wait,
    tag_yield,
    tag_call,
  };
  // FNV-1a over 64-bit words: (h ^ w) * p is a bijection in h and in w, so
  // two traces of equal length that differ in one event hash differently.
  void mix(std::uint64_t tag, std::uint64_t value) {
    trace_hash_ = (trace_hash_ ^ ((tag << 56) ^ value)) * trace_fnv_prime;
  }
  static constexpr std::uint64_t trace_fnv_prime = 0x100000001B3ull;

  const scheduler_options_t options_;
  prng_t prng_;  // stream 0 of the seed (prng_t::fork): scheduling choices
  phase_t phase_ = phase_t::created;
  std::uint64_t now_ticks_ = 0;
  std::uint64_t steps_count_ = 0;
  std::uint64_t trace_hash_;
  std::uint64_t progress_epoch_ = 1;
  std::size_t quiet_count_ = 0;  // live fibers quiet in this epoch
  // Live fibers that waited deadlock_waits() times in this epoch.
  std::size_t deadlock_quiet_count_ = 0;
  std::uint32_t deadlock_waits() const {
    return std::max(options_.quiet_waits_min, options_.deadlock_waits_min);
  }
  std::size_t round_robin_cursor_ = 0;
  // Changing calls the running fiber may still make in this turn; 0: not
  // drawn yet (run_fiber() clears it, the turn's first call draws it).
  std::uint32_t run_budget_left_ = 0;

  std::vector<std::unique_ptr<fiber_slot_t>> fibers_;  // by fiber_id_t
  std::vector<fiber_id_t> live_;                       // dense, unordered
  fiber_slot_t* running_ = nullptr;

  // ---- timers: a calendar queue (docs/design/sim_scheduler.md, "Timers").
  // Bucket tick % calendar_ticks_count holds the timers of that tick while it
  // lies in [calendar_base_tick_, + calendar_ticks_count); later ones wait in
  // timers_overflow_ until the base comes within reach of them.
  static constexpr std::size_t calendar_ticks_count = 2048;  // a power of two
  static_assert((calendar_ticks_count & (calendar_ticks_count - 1)) == 0,
                "a bucket is tick & (calendar_ticks_count - 1)");
  static constexpr std::size_t calendar_words_count = calendar_ticks_count / 64;
  std::unique_ptr<timer_bucket_t[]> calendar_;
  std::uint64_t calendar_bits_[calendar_words_count] = {};  // bucket non-empty
  std::uint64_t calendar_base_tick_ = 0;  // <= every pending tick, <= now_ticks_
  std::vector<timer_event_t*> timers_overflow_;  // min-heap on (tick, seq)
  static constexpr std::uint64_t timer_none_tick = ~std::uint64_t{0};
  std::uint64_t timer_next_tick_ = timer_none_tick;  // earliest pending tick
  std::size_t timers_count_ = 0;   // pending, both kinds
  std::uint64_t timers_seq_ = 0;
  // schedule_at()'s records: owned here, reused through the free list.
  std::vector<std::unique_ptr<function_event_t>> function_events_;
  std::vector<function_event_t*> function_events_free_;
  std::function<std::size_t()> in_flight_count_fn_;

  // The first failure of the run (later ones are ignored).
  bool failed_ = false;
  fiber_id_t failed_fiber_ = fiber_id_invalid;
  std::string failure_message_;
  std::string replay_;
};

}  // namespace lci::sim
