#include "sim/sim_scheduler.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <utility>

#include "lci/util/assert.hpp"
#include "lci/util/spinlock.hpp"
#include "sim/sim_fiber_inline.hpp"

namespace lci::sim {
namespace {

// The scheduler whose run() is active on this OS thread.
thread_local scheduler_t* tls_scheduler = nullptr;

constexpr std::uint64_t fnv_offset_basis = 0xCBF29CE484222325ull;

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
};

// A cancelled fiber that swallows fiber_cancelled_t gets this many more
// resumes to finish before the run aborts (bounding the teardown loop).
constexpr int cancel_resumes_max = 16;
// Live fibers listed one per line in a report; the rest are counted.
constexpr std::size_t report_fibers_max = 64;

}  // namespace

struct scheduler_t::fiber_slot_t {
  fiber_slot_t(fiber_id_t id, std::string name, std::function<void()> body,
               std::size_t stack_bytes)
      : fiber(id, std::move(name), std::move(body), stack_bytes) {}

  fiber_t fiber;
  std::size_t live_index = 0;         // position in live_ while live
  bool live = true;
  const char* waiting_for = nullptr;  // last wait()'s `what`; nullptr: yield
  std::uint64_t quiet_epoch = 0;      // epoch of waits_in_epoch
  std::uint32_t waits_in_epoch = 0;
  std::uint32_t spinlocks_held_saved = 0;  // parked while failed and suspended
  std::uint64_t runs_count = 0;
};

struct scheduler_t::timer_entry_t {
  std::uint64_t tick;
  std::uint64_t seq;  // ties: scheduling order
  std::function<void()> callback;
};

namespace {

// std::push_heap builds a max-heap; "later" on top inverted = earliest first.
struct timer_later_t {
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    return a.tick != b.tick ? a.tick > b.tick : a.seq > b.seq;
  }
};

// ---- abort note: an LCI_ASSERT (or ASan report) inside a fiber aborts the
// process; print which fiber and the replay command first. ----
struct sigaction previous_abort_action;

void write_str(const char* text, std::size_t length) {
  while (length > 0) {
    const ssize_t written = ::write(STDERR_FILENO, text, length);
    if (written <= 0) return;
    text += written;
    length -= static_cast<std::size_t>(written);
  }
}

void write_cstr(const char* text) { write_str(text, std::strlen(text)); }

void write_u64(std::uint64_t value) {
  char digits[24];
  std::size_t at = sizeof(digits);
  do {
    digits[--at] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  write_str(digits + at, sizeof(digits) - at);
}

}  // namespace

// Async-signal-safe: write(2) only, on data that is not being modified
// (the handler runs on the thread whose fiber aborted).
struct scheduler_abort_note_t {
  static void handler(int signal_number) {
    const scheduler_t* scheduler = tls_scheduler;
    if (scheduler != nullptr) {
      write_cstr("\nlci sim: abort inside the simulation, seed ");
      write_u64(scheduler->options_.seed);
      write_cstr(", step ");
      write_u64(scheduler->steps_count_);
      write_cstr(", tick ");
      write_u64(scheduler->now_ticks_);
      if (scheduler->running_ != nullptr) {
        const fiber_t& fiber = scheduler->running_->fiber;
        write_cstr(", in fiber ");
        write_u64(fiber.id());
        write_cstr(" \"");
        write_str(fiber.name().data(), fiber.name().size());
        write_cstr("\"");
      }
      write_cstr("\n  replay: ");
      write_str(scheduler->replay_.data(), scheduler->replay_.size());
      write_cstr("\n");
    }
    const auto previous = previous_abort_action.sa_handler;
    if (previous != SIG_DFL && previous != SIG_IGN) previous(signal_number);
    // Returning: abort() restores SIG_DFL and raises SIGABRT again.
  }

  static void install_once() {
    static std::once_flag once;
    std::call_once(once, [] {
      struct sigaction action {};
      action.sa_handler = &handler;
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_ONSTACK;
      sigaction(SIGABRT, &action, &previous_abort_action);
    });
  }
};

const char* get_kind_str(run_result_t::kind_t kind) {
  switch (kind) {
    case run_result_t::kind_t::finished: return "finished";
    case run_result_t::kind_t::deadlock: return "deadlock";
    case run_result_t::kind_t::ticks_exhausted: return "ticks_exhausted";
    case run_result_t::kind_t::steps_exhausted: return "steps_exhausted";
    case run_result_t::kind_t::fiber_failed: return "fiber_failed";
  }
  return "unknown";
}

scheduler_t::scheduler_t(const scheduler_options_t& options)
    : options_(options),
      root_prng_(options.seed),
      prng_(root_prng_.fork(0)),
      trace_hash_(fnv_offset_basis) {
  LCI_ASSERT(options_.quiet_waits_min >= 1, "quiet_waits_min must be >= 1");
  LCI_ASSERT(options_.fibers_max >= 1, "fibers_max must be >= 1");
  LCI_ASSERT(options_.stack_bytes >= stack_bytes_min, "stack_bytes below stack_bytes_min");
  fibers_.reserve(std::min<std::size_t>(options_.fibers_max, 1024));
  live_.reserve(std::min<std::size_t>(options_.fibers_max, 1024));
  timers_.reserve(std::min<std::size_t>(options_.timers_max, 1024));
  mix(tag_spawn, 0);  // the options are part of the run's identity
  mix(tag_step, options_.ticks_per_step);
  mix(tag_wait, static_cast<std::uint64_t>(options_.policy));
}

scheduler_t::~scheduler_t() {
  LCI_ASSERT(phase_ != phase_t::running, "scheduler destroyed during run()");
  // Fibers spawned but never run are in state created and can be dropped.
}

fiber_id_t scheduler_t::spawn(std::string name, std::function<void()> body) {
  LCI_ASSERT(phase_ != phase_t::ended, "spawn() after run() ended");
  LCI_ASSERT(fibers_.size() < options_.fibers_max, "fibers_max fibers spawned");
  const auto id = static_cast<fiber_id_t>(fibers_.size());
  fibers_.push_back(std::make_unique<fiber_slot_t>(id, std::move(name),
                                                   std::move(body),
                                                   options_.stack_bytes));
  fiber_slot_t& slot = *fibers_.back();
  slot.live_index = live_.size();
  live_.push_back(id);
  mix(tag_spawn, id);
  note_progress();
  return id;
}

scheduler_t* scheduler_t::current() { return tls_scheduler; }

fiber_id_t scheduler_t::current_fiber() {
  const scheduler_t* scheduler = tls_scheduler;
  if (scheduler == nullptr || scheduler->running_ == nullptr) return fiber_id_invalid;
  return scheduler->running_->fiber.id();
}

// The body of yield()/wait() in the running fiber.
inline void scheduler_t::suspend_running(const char* what) {
  LCI_ASSERT(running_ != nullptr, "yield()/wait() outside a fiber (timer callback?)");
  fiber_slot_t& slot = *running_;
  if (slot.fiber.cancel_requested()) {  // teardown of this fiber
    if (std::uncaught_exceptions() > 0) return;  // already unwinding: go on
    throw fiber_cancelled_t{};
  }
  const std::uint32_t held = util::spinlocks_held_by_this_thread();
  if (held != 0) {
    fail(slot.fiber.id(), "yielded while holding " + std::to_string(held) +
                              " spinlock(s)" +
                              (what != nullptr ? std::string(" in wait(\"") + what + "\")"
                                               : std::string(" in yield()")));
    slot.spinlocks_held_saved = held;  // not this thread's any more while parked
    util::detail::spinlocks_held_count = 0;
  }
  slot.waiting_for = what;
  if (what != nullptr) {
    mix(tag_wait, slot.fiber.id());
    if (slot.quiet_epoch != progress_epoch_) {
      slot.quiet_epoch = progress_epoch_;
      slot.waits_in_epoch = 0;
    }
    if (++slot.waits_in_epoch == options_.quiet_waits_min) ++quiet_count_;
  } else {
    mix(tag_yield, slot.fiber.id());
  }
  slot.fiber.suspend();
  if (slot.spinlocks_held_saved != 0) {  // back for teardown: restore the count
    util::detail::spinlocks_held_count += slot.spinlocks_held_saved;
    slot.spinlocks_held_saved = 0;
  }
  if (slot.fiber.cancel_requested() && std::uncaught_exceptions() == 0) {
    throw fiber_cancelled_t{};
  }
}

void scheduler_t::yield() {
  scheduler_t* scheduler = tls_scheduler;
  if (scheduler == nullptr) return;  // not simulated: nothing to interleave
  scheduler->note_progress();
  scheduler->suspend_running(nullptr);
}

void scheduler_t::wait(const char* what) {
  scheduler_t* scheduler = tls_scheduler;
  if (scheduler == nullptr) return;
  scheduler->suspend_running(what != nullptr ? what : "(unnamed)");
}

void scheduler_t::sleep_ticks(std::uint64_t ticks) {
  scheduler_t* scheduler = tls_scheduler;
  if (scheduler == nullptr) return;
  const std::uint64_t deadline = scheduler->now_ticks_ + ticks;
  LCI_ASSERT(deadline >= scheduler->now_ticks_, "sleep_ticks overflows virtual time");
  // The timer both wakes the deadlock detector's time jump and is progress.
  const error_t error = scheduler->schedule_at(deadline, [] {});
  LCI_ASSERT(error.is_done(), "timers_max timers pending: cannot sleep");
  while (scheduler->now_ticks_ < deadline) wait("sleep_ticks");
}

void scheduler_t::advance_ticks(std::uint64_t ticks) {
  LCI_ASSERT(phase_ == phase_t::running, "advance_ticks() outside run()");
  LCI_ASSERT(now_ticks_ + ticks >= now_ticks_, "virtual time overflow");
  now_ticks_ += ticks;
}

error_t scheduler_t::schedule_at(std::uint64_t tick, std::function<void()> callback) {
  LCI_ASSERT(phase_ != phase_t::ended, "schedule_at() after run() ended");
  LCI_ASSERT(tick >= now_ticks_, "schedule_at() in the past");
  LCI_ASSERT(callback != nullptr, "schedule_at() without a callback");
  if (timers_.size() >= options_.timers_max) return errorcode_t::retry_nomem;
  timers_.push_back(timer_entry_t{tick, timers_seq_++, std::move(callback)});
  std::push_heap(timers_.begin(), timers_.end(), timer_later_t{});
  return errorcode_t::done;
}

error_t scheduler_t::schedule_after(std::uint64_t ticks, std::function<void()> callback) {
  LCI_ASSERT(now_ticks_ + ticks >= now_ticks_, "virtual time overflow");
  return schedule_at(now_ticks_ + ticks, std::move(callback));
}


void scheduler_t::set_in_flight_count_fn(std::function<std::size_t()> fn) {
  in_flight_count_fn_ = std::move(fn);
}

void scheduler_t::trace(std::uint64_t event) {
  mix(tag_world, 0);
  trace_hash_ = (trace_hash_ ^ event) * trace_fnv_prime;
}


void scheduler_t::fail(fiber_id_t fiber, std::string message) {
  if (failed_) return;  // keep the first cause
  failed_ = true;
  failed_fiber_ = fiber;
  failure_message_ = std::move(message);
}

inline scheduler_t::fiber_slot_t& scheduler_t::pick_next() {
  LCI_ASSERT(!live_.empty(), "pick_next() without live fibers");
  std::size_t index;
  if (options_.policy == policy_t::random) {
    index = static_cast<std::size_t>(prng_.uniform(live_.size()));
  } else {
    // Live fibers removed behind the cursor shift the rest down; wrapping
    // (instead of a modulo) keeps the turn order and avoids a division.
    if (round_robin_cursor_ >= live_.size()) round_robin_cursor_ = 0;
    index = round_robin_cursor_++;
  }
  fiber_slot_t& slot = *fibers_[live_[index]];
  LCI_DEBUG_ASSERT(slot.live && slot.live_index == index, "live_ index out of sync");
  return slot;
}

inline void scheduler_t::run_fiber(fiber_slot_t& slot) {
  mix(tag_step, slot.fiber.id());
  running_ = &slot;
  ++slot.runs_count;
  slot.fiber.resume();
  running_ = nullptr;
  ++steps_count_;
  now_ticks_ += options_.ticks_per_step;
  if (slot.fiber.state() == fiber_t::state_t::finished) retire_fiber(slot);
}

// ---- the run loop (on the scheduler's own stack) ----

run_result_t scheduler_t::run() {
  LCI_ASSERT(phase_ == phase_t::created, "run() is called once per scheduler");
  LCI_ASSERT(tls_scheduler == nullptr, "nested run() on one OS thread");
  LCI_ASSERT(util::spinlocks_held_by_this_thread() == 0, "run() under a spinlock");
  phase_ = phase_t::running;
  replay_ = replay_command(options_.seed, options_.replay_command);
  tls_scheduler = this;
  scheduler_abort_note_t::install_once();
  if (options_.log_header) {
    std::fprintf(stderr,
                 "lci sim: seed=%llu policy=%s fibers=%zu steps_max=%llu "
                 "ticks_max=%llu ticks_per_step=%llu stack_bytes=%zu "
                 "quiet_waits_min=%u\n",
                 static_cast<unsigned long long>(options_.seed),
                 options_.policy == policy_t::random ? "random" : "round_robin",
                 fibers_.size(), static_cast<unsigned long long>(options_.steps_max),
                 static_cast<unsigned long long>(options_.ticks_max),
                 static_cast<unsigned long long>(options_.ticks_per_step),
                 options_.stack_bytes, options_.quiet_waits_min);
  }
  run_result_t result;
  for (;;) {
    // Fast path: nothing due, no bound near, someone not quiet: run a fiber.
    const bool check = failed_ || live_.empty() || steps_count_ >= options_.steps_max ||
                       now_ticks_ > options_.ticks_max || quiet_count_ >= live_.size() ||
                       (!timers_.empty() && timers_.front().tick <= now_ticks_);
    if (__builtin_expect(check, 0)) {
      const loop_action_t action = run_checks(result);
      if (action == loop_action_t::stop) break;
      if (action == loop_action_t::again) continue;
    }
    run_fiber(pick_next());
  }
  finish_result(result);  // describes the fibers before teardown
  cancel_live_fibers();
  tls_scheduler = nullptr;
  phase_ = phase_t::ended;
  if (options_.log_failure && !result.ok()) {
    std::fprintf(stderr, "%s", result.report.c_str());
  }
  return result;
}

// The slow part of one loop turn: ends, bounds, timers, quiet fibers.
scheduler_t::loop_action_t scheduler_t::run_checks(run_result_t& result) {
  if (failed_) {
    result.kind = run_result_t::kind_t::fiber_failed;
    return loop_action_t::stop;
  }
  if (live_.empty()) {
    result.kind = run_result_t::kind_t::finished;
    return loop_action_t::stop;
  }
  if (step_bounds_reached(result)) return loop_action_t::stop;
  fire_due_timers();
  if (failed_) return loop_action_t::again;
  if (quiet_count_ < live_.size()) return loop_action_t::run_one;
  return handle_quiet(result) ? loop_action_t::stop : loop_action_t::again;
}

bool scheduler_t::step_bounds_reached(run_result_t& result) {
  if (steps_count_ >= options_.steps_max) {
    result.kind = run_result_t::kind_t::steps_exhausted;
    result.message = "steps_max (" + std::to_string(options_.steps_max) +
                     ") scheduling steps without finishing (livelock?)";
    return true;
  }
  if (now_ticks_ > options_.ticks_max) {
    result.kind = run_result_t::kind_t::ticks_exhausted;
    result.message = "virtual time passed ticks_max (" +
                     std::to_string(options_.ticks_max) + ")";
    return true;
  }
  return false;
}

// Every live fiber is quiet (waited quiet_waits_min times since the last
// progress). Returns true when the run ends here.
bool scheduler_t::handle_quiet(run_result_t& result) {
  LCI_ASSERT(quiet_count_ == live_.size(), "handle_quiet() while a fiber is busy");
  if (!timers_.empty()) {
    // Nothing can change before the next timer: jump to it, do not spin.
    const std::uint64_t tick = timers_.front().tick;
    LCI_ASSERT(tick > now_ticks_, "a due timer was not fired");
    if (tick > options_.ticks_max) {
      result.kind = run_result_t::kind_t::ticks_exhausted;
      result.message = "every fiber waits and the next timer (tick " +
                       std::to_string(tick) + ") is past ticks_max";
      return true;
    }
    now_ticks_ = tick;
    mix(tag_time_jump, tick);
    return false;
  }
  const std::size_t in_flight = in_flight_count_fn_ ? in_flight_count_fn_() : 0;
  if (in_flight > 0) {
    // The network may still deliver: give the fibers more rounds (bounded
    // by steps_max and ticks_max; the report then shows the in-flight count).
    mix(tag_in_flight, in_flight);
    note_progress();
    return false;
  }
  result.kind = run_result_t::kind_t::deadlock;
  result.message = "every live fiber waits and nothing changed for " +
                   std::to_string(options_.quiet_waits_min) +
                   " waits each (no progress, no timer, nothing in flight)";
  return true;
}

void scheduler_t::retire_fiber(fiber_slot_t& slot) {
  LCI_ASSERT(slot.live, "retiring a fiber twice");
  LCI_ASSERT(live_[slot.live_index] == slot.fiber.id(), "live_ index out of sync");
  const fiber_id_t moved = live_.back();
  live_[slot.live_index] = moved;
  fibers_[moved]->live_index = slot.live_index;
  live_.pop_back();
  slot.live = false;
  slot.waiting_for = nullptr;
  mix(tag_finish, slot.fiber.id());
  note_progress();
  const std::uint32_t held = util::spinlocks_held_by_this_thread();
  if (held != 0) {
    fail(slot.fiber.id(), "finished while holding " + std::to_string(held) +
                              " spinlock(s)");
    util::detail::spinlocks_held_count = 0;
  }
  if (slot.fiber.outcome() == fiber_t::outcome_t::threw) {
    fail(slot.fiber.id(), "threw: " + slot.fiber.message());
  }
  slot.fiber.release_stack();
}

void scheduler_t::fire_due_timers() {
  while (!timers_.empty() && timers_.front().tick <= now_ticks_) {
    std::pop_heap(timers_.begin(), timers_.end(), timer_later_t{});
    timer_entry_t timer = std::move(timers_.back());
    timers_.pop_back();
    mix(tag_timer, timer.seq);
    note_progress();
    try {
      timer.callback();
    } catch (const std::exception& error) {
      fail(fiber_id_invalid, std::string("a timer callback threw: ") + error.what());
    } catch (...) {
      fail(fiber_id_invalid, "a timer callback threw a non-std exception");
    }
    if (util::spinlocks_held_by_this_thread() != 0) {
      fail(fiber_id_invalid, "a timer callback returned holding a spinlock");
      util::detail::spinlocks_held_count = 0;
    }
    if (failed_) return;
  }
}

// Unwinds every live fiber (fiber_cancelled_t at its yield point) so its
// destructors run and its locks are released; in id order (deterministic).
void scheduler_t::cancel_live_fibers() {
  for (const auto& owned : fibers_) {
    fiber_slot_t& slot = *owned;
    if (!slot.live) continue;
    slot.fiber.request_cancel();
    for (int resumes = 0; slot.fiber.state() != fiber_t::state_t::finished; ++resumes) {
      LCI_ASSERT(resumes < cancel_resumes_max,
                 "a fiber keeps running after cancellation (catch (...) without rethrow?)");
      running_ = &slot;
      slot.fiber.resume();
      running_ = nullptr;
    }
    retire_fiber(slot);
  }
  LCI_ASSERT(live_.empty(), "live fibers left after teardown");
}

void scheduler_t::finish_result(run_result_t& result) {
  result.seed = options_.seed;
  result.steps_count = steps_count_;
  result.ticks = now_ticks_;
  result.trace_hash = trace_hash_;
  result.replay = replay_;
  if (result.kind == run_result_t::kind_t::fiber_failed) {
    result.failed_fiber = failed_fiber_;
    result.message = failure_message_;
    if (failed_fiber_ != fiber_id_invalid) {
      result.message = "fiber " + std::to_string(failed_fiber_) + " \"" +
                       fibers_[failed_fiber_]->fiber.name() + "\" " + result.message;
    }
  }
  std::string report = "lci sim: " + std::string(get_kind_str(result.kind)) +
                       " (seed " + std::to_string(options_.seed) + ", step " +
                       std::to_string(steps_count_) + ", tick " +
                       std::to_string(now_ticks_) + ")\n";
  if (!result.message.empty()) report += "  " + result.message + "\n";
  if (!result.ok()) report += describe_fibers();
  report += "  replay: " + replay_ + "\n";
  result.report = std::move(report);
}

std::string scheduler_t::describe_fibers() const {
  const std::size_t in_flight = in_flight_count_fn_ ? in_flight_count_fn_() : 0;
  std::string text = "  live fibers " + std::to_string(live_.size()) + " of " +
                     std::to_string(fibers_.size()) + ", timers pending " +
                     std::to_string(timers_.size()) + ", in flight " +
                     std::to_string(in_flight) + "\n";
  std::size_t listed = 0;
  for (const auto& owned : fibers_) {
    const fiber_slot_t& slot = *owned;
    const bool is_failed = slot.fiber.id() == failed_fiber_;
    if (!slot.live && !is_failed) continue;
    if (listed++ == report_fibers_max) {
      text += "  ... (more live fibers not listed)\n";
      break;
    }
    text += "  fiber " + std::to_string(slot.fiber.id()) + " \"" +
            slot.fiber.name() + "\": ";
    if (!slot.live) {
      text += "finished (" + slot.fiber.message() + ")";
    } else if (slot.fiber.state() == fiber_t::state_t::created) {
      text += "never ran";
    } else if (slot.waiting_for != nullptr) {
      text += "waits for \"" + std::string(slot.waiting_for) + "\"";
    } else {
      text += "yielded";
    }
    text += " (ran " + std::to_string(slot.runs_count) + " times)";
    if (is_failed) text += " <- failed";
    text += "\n";
  }
  return text;
}

}  // namespace lci::sim
