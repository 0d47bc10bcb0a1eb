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

// schedule_at()'s timer: the std::function rides in a pooled record.
struct scheduler_t::function_event_t : timer_event_t {
  std::function<void()> callback;
};

namespace {

// std::push_heap builds a max-heap; "later" on top inverted = earliest first.
struct timer_later_t {
  bool operator()(const timer_event_t* a, const timer_event_t* b) const {
    return a->timer_tick != b->timer_tick ? a->timer_tick > b->timer_tick
                                          : a->timer_seq > b->timer_seq;
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
      prng_(prng_t(options.seed).fork(0)),
      trace_hash_(fnv_offset_basis) {
  LCI_ASSERT(options_.quiet_waits_min >= 1, "quiet_waits_min must be >= 1");
  LCI_ASSERT(options_.fibers_max >= 1, "fibers_max must be >= 1");
  LCI_ASSERT(options_.stack_bytes >= stack_bytes_min, "stack_bytes below stack_bytes_min");
  LCI_ASSERT(options_.run_budget_max >= 1, "run_budget_max must be >= 1");
  fibers_.reserve(std::min<std::size_t>(options_.fibers_max, 1024));
  live_.reserve(std::min<std::size_t>(options_.fibers_max, 1024));
  calendar_.reset(new timer_bucket_t[calendar_ticks_count]);
  timers_overflow_.reserve(std::min<std::size_t>(options_.timers_max, 1024));
  mix(tag_spawn, 0);  // the options are part of the run's identity
  mix(tag_step, options_.ticks_per_step);
  mix(tag_wait, static_cast<std::uint64_t>(options_.policy));
  mix(tag_call, options_.run_budget_max);
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

namespace {

std::string describe_point(const char* what, bool is_wait) {
  if (what == nullptr) return " in yield()";
  return is_wait ? std::string(" in wait(\"") + what + "\")"
                 : std::string(" at call \"") + what + "\"";
}

}  // namespace

// The body of yield()/wait()/call_point() in the running fiber, when it
// switches.
inline void scheduler_t::suspend_running(point_kind_t kind, const char* what) {
  LCI_ASSERT(running_ != nullptr, "yield()/wait() outside a fiber (timer callback?)");
  fiber_slot_t& slot = *running_;
  if (slot.fiber.cancel_requested()) {  // teardown of this fiber
    if (std::uncaught_exceptions() > 0) return;  // already unwinding: go on
    throw fiber_cancelled_t{};
  }
  const std::uint32_t held = util::spinlocks_held_by_this_thread();
  if (held != 0) {
    fail(slot.fiber.id(), "yielded while holding " + std::to_string(held) +
                              " spinlock(s)" + describe_point(what, kind == point_kind_t::wait));
    slot.spinlocks_held_saved = held;  // not this thread's any more while parked
    util::detail::spinlocks_held_count = 0;
  }
  if (kind == point_kind_t::wait) {
    slot.waiting_for = what;
    mix(tag_wait, slot.fiber.id());
    if (slot.quiet_epoch != progress_epoch_) {
      slot.quiet_epoch = progress_epoch_;
      slot.waits_in_epoch = 0;
    }
    ++slot.waits_in_epoch;
    if (slot.waits_in_epoch == options_.quiet_waits_min) ++quiet_count_;
    if (slot.waits_in_epoch == deadlock_waits()) ++deadlock_quiet_count_;
  } else {
    slot.waiting_for = nullptr;
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
  scheduler->suspend_running(point_kind_t::yield, nullptr);
}

void scheduler_t::wait(const char* what) {
  scheduler_t* scheduler = tls_scheduler;
  if (scheduler == nullptr) return;
  scheduler->suspend_running(point_kind_t::wait, what != nullptr ? what : "(unnamed)");
}

void scheduler_t::call_point(const char* what, bool changed) {
  scheduler_t* scheduler = tls_scheduler;
  if (scheduler == nullptr) return;
  if (!changed) {
    scheduler->suspend_running(point_kind_t::wait, what != nullptr ? what : "(unnamed)");
    return;
  }
  scheduler->note_progress();
  scheduler->continue_or_switch(what);
}

// A changing call: the running fiber goes on while its turn's budget lasts.
// Going on is one particular interleaving (the scheduler "picked" the same
// fiber again), so everything a switch would do happens here too: time
// advances by a step, due timers fire (in (tick, seq) order, as the loop
// would fire them) — only the pick is skipped. Anything unusual (teardown,
// a spinlock held, a failure) takes the full suspend path.
inline void scheduler_t::continue_or_switch(const char* what) {
  LCI_ASSERT(running_ != nullptr, "call_point() outside a fiber (timer callback?)");
  fiber_slot_t& slot = *running_;
  if (run_budget_left_ == 0) {
    run_budget_left_ = 1 + static_cast<std::uint32_t>(prng_.uniform(options_.run_budget_max));
  }
  --run_budget_left_;
  const bool go_on = run_budget_left_ != 0 && !failed_ && !slot.fiber.cancel_requested() &&
                     util::spinlocks_held_by_this_thread() == 0;
  if (!go_on) {
    suspend_running(point_kind_t::call, what);
    return;
  }
  mix(tag_call, slot.fiber.id());
  now_ticks_ += options_.ticks_per_step;
  if (timer_next_tick_ <= now_ticks_) {
    running_ = nullptr;  // callbacks run as the scheduler's, not this fiber's
    fire_due_timers();
    running_ = &slot;
    if (failed_) suspend_running(point_kind_t::call, what);  // the loop stops
  }
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
  LCI_ASSERT(callback != nullptr, "schedule_at() without a callback");
  if (timers_count_ >= options_.timers_max) return errorcode_t::retry_nomem;
  if (function_events_free_.empty()) {
    function_events_.push_back(std::make_unique<function_event_t>());
    function_events_.back()->fire = &scheduler_t::fire_function_event;
    function_events_.back()->fire_context = this;
    if (function_events_free_.capacity() < function_events_.size()) {
      // Room for every record, so recycling one in fire_function_event()
      // never allocates; doubling keeps growth amortised.
      function_events_free_.reserve(2 * function_events_.size());
    }
    function_events_free_.push_back(function_events_.back().get());
  }
  function_event_t* event = function_events_free_.back();
  function_events_free_.pop_back();
  event->callback = std::move(callback);
  const error_t error = schedule_event_at(tick, event);
  LCI_ASSERT(error.is_done(), "room for a timer was checked above");
  return error;
}

error_t scheduler_t::schedule_after(std::uint64_t ticks, std::function<void()> callback) {
  LCI_ASSERT(now_ticks_ + ticks >= now_ticks_, "virtual time overflow");
  return schedule_at(now_ticks_ + ticks, std::move(callback));
}

error_t scheduler_t::schedule_event_at(std::uint64_t tick, timer_event_t* event) {
  LCI_ASSERT(phase_ != phase_t::ended, "schedule_at() after run() ended");
  LCI_ASSERT(tick >= now_ticks_, "schedule_at() in the past");
  LCI_ASSERT(event != nullptr && event->fire != nullptr, "a timer event needs fire()");
  if (timers_count_ >= options_.timers_max) return errorcode_t::retry_nomem;
  event->timer_tick = tick;
  event->timer_seq = timers_seq_++;
  event->timer_next = nullptr;
  ++timers_count_;
  if (tick - calendar_base_tick_ >= calendar_ticks_count) {
    // Beyond the calendar's reach. The base may lag far behind (no timer
    // fired for a while): move it up first, as far as it may go.
    calendar_rebase(std::min(now_ticks_, timer_next_tick_));
  }
  if (tick - calendar_base_tick_ < calendar_ticks_count) {
    calendar_insert(event);
  } else {
    timers_overflow_.push_back(event);
    std::push_heap(timers_overflow_.begin(), timers_overflow_.end(), timer_later_t{});
  }
  if (tick < timer_next_tick_) timer_next_tick_ = tick;
  return errorcode_t::done;
}

error_t scheduler_t::schedule_event_after(std::uint64_t ticks, timer_event_t* event) {
  LCI_ASSERT(now_ticks_ + ticks >= now_ticks_, "virtual time overflow");
  return schedule_event_at(now_ticks_ + ticks, event);
}

// ---- the calendar (docs/design/sim_scheduler.md, "Timers") ----

// Appends to its tick's bucket. Buckets stay in scheduling order without a
// search: every overflow timer lies at or beyond the window's end
// (calendar_rebase() moves all others in), so a timer entering the calendar —
// new, with the largest seq so far, or moved in by a rebase, in (tick, seq)
// order from the heap — never meets a later-scheduled one of its tick there.
void scheduler_t::calendar_insert(timer_event_t* event) {
  const std::uint64_t tick = event->timer_tick;
  LCI_DEBUG_ASSERT(tick - calendar_base_tick_ < calendar_ticks_count, "tick out of reach");
  const std::size_t index = tick & (calendar_ticks_count - 1);
  timer_bucket_t& bucket = calendar_[index];
  if (bucket.tail == nullptr) {
    bucket.head = event;
    calendar_bits_[index / 64] |= std::uint64_t{1} << (index % 64);
  } else {
    LCI_DEBUG_ASSERT(bucket.tail->timer_tick == tick, "two ticks share a bucket");
    LCI_ASSERT(bucket.tail->timer_seq < event->timer_seq, "a bucket out of scheduling order");
    bucket.tail->timer_next = event;
  }
  bucket.tail = event;
}

// Moves the base up to `base_tick` (<= every pending tick, <= now_ticks_) and
// the overflow timers now within reach into their buckets. Buckets are
// indexed by absolute tick, so the calendar's timers stay where they are.
void scheduler_t::calendar_rebase(std::uint64_t base_tick) {
  LCI_DEBUG_ASSERT(base_tick >= calendar_base_tick_, "the calendar base moves forward only");
  LCI_DEBUG_ASSERT(base_tick <= timer_next_tick_, "rebasing past a pending timer");
  calendar_base_tick_ = base_tick;
  while (!timers_overflow_.empty() &&
         timers_overflow_.front()->timer_tick - base_tick < calendar_ticks_count) {
    std::pop_heap(timers_overflow_.begin(), timers_overflow_.end(), timer_later_t{});
    timer_event_t* event = timers_overflow_.back();
    timers_overflow_.pop_back();
    calendar_insert(event);
  }
}

// The earliest tick with a timer in the calendar, or timer_none_tick: the
// first non-empty bucket at or after the base, scanning a bit per bucket.
std::uint64_t scheduler_t::calendar_first_tick() const {
  const std::size_t start = calendar_base_tick_ & (calendar_ticks_count - 1);
  std::size_t word = start / 64;
  std::uint64_t bits = calendar_bits_[word] & (~std::uint64_t{0} << (start % 64));
  // One lap over the words, plus the start word's bits below `start` (the
  // far end of the window) on the way back.
  for (std::size_t scanned = 0; scanned <= calendar_words_count; ++scanned) {
    if (bits != 0) {
      const std::size_t index = word * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
      return calendar_base_tick_ + ((index - start) & (calendar_ticks_count - 1));
    }
    word = (word + 1) % calendar_words_count;
    bits = calendar_bits_[word];
  }
  return timer_none_tick;
}

// Removes and returns the earliest timer (tick, then seq); one is due.
timer_event_t* scheduler_t::timer_pop() {
  const std::uint64_t tick = timer_next_tick_;
  LCI_ASSERT(timers_count_ > 0 && tick <= now_ticks_, "timer_pop() without a due timer");
  if (tick != calendar_base_tick_) calendar_rebase(tick);
  timer_bucket_t& bucket = calendar_[tick & (calendar_ticks_count - 1)];
  timer_event_t* event = bucket.head;
  LCI_ASSERT(event != nullptr && event->timer_tick == tick, "calendar out of sync");
  bucket.head = event->timer_next;
  event->timer_next = nullptr;
  --timers_count_;
  if (bucket.head == nullptr) {
    bucket.tail = nullptr;
    const std::size_t index = tick & (calendar_ticks_count - 1);
    calendar_bits_[index / 64] &= ~(std::uint64_t{1} << (index % 64));
    // Overflow timers all lie beyond the window, so after every calendar one.
    timer_next_tick_ = calendar_first_tick();
    if (timer_next_tick_ == timer_none_tick && !timers_overflow_.empty()) {
      timer_next_tick_ = timers_overflow_.front()->timer_tick;
    }
  }
  return event;
}

void scheduler_t::fire_function_event(timer_event_t* event, void* fire_context) {
  auto* scheduler = static_cast<scheduler_t*>(fire_context);
  auto* record = static_cast<function_event_t*>(event);
  // Recycle the record first: the callback may schedule timers itself.
  std::function<void()> callback = std::move(record->callback);
  record->callback = nullptr;
  scheduler->function_events_free_.push_back(record);
  callback();
}


void scheduler_t::set_in_flight_count_fn(std::function<std::size_t()> fn) {
  in_flight_count_fn_ = std::move(fn);
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
  run_budget_left_ = 0;  // a new turn draws a new budget
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
                 "quiet_waits_min=%u deadlock_waits_min=%u run_budget_max=%u\n",
                 static_cast<unsigned long long>(options_.seed),
                 options_.policy == policy_t::random ? "random" : "round_robin",
                 fibers_.size(), static_cast<unsigned long long>(options_.steps_max),
                 static_cast<unsigned long long>(options_.ticks_max),
                 static_cast<unsigned long long>(options_.ticks_per_step),
                 options_.stack_bytes, options_.quiet_waits_min, deadlock_waits(),
                 options_.run_budget_max);
  }
  run_result_t result;
  for (;;) {
    // Fast path: nothing due, no bound near, someone not quiet: run a fiber.
    const bool check = failed_ || live_.empty() || steps_count_ >= options_.steps_max ||
                       now_ticks_ > options_.ticks_max || quiet_count_ >= live_.size() ||
                       timer_next_tick_ <= now_ticks_;
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
  return handle_quiet(result);
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
// progress): a time jump, a fiber's turn while one has not waited
// deadlock_waits() times yet, more rounds while the network holds
// something, or the end of the run (deadlock).
scheduler_t::loop_action_t scheduler_t::handle_quiet(run_result_t& result) {
  LCI_ASSERT(quiet_count_ == live_.size(), "handle_quiet() while a fiber is busy");
  if (timers_count_ > 0) {
    // Nothing can change before the next timer: jump to it, do not spin.
    const std::uint64_t tick = timer_next_tick_;
    LCI_ASSERT(tick > now_ticks_, "a due timer was not fired");
    if (tick > options_.ticks_max) {
      result.kind = run_result_t::kind_t::ticks_exhausted;
      result.message = "every fiber waits and the next timer (tick " +
                       std::to_string(tick) + ") is past ticks_max";
      return loop_action_t::stop;
    }
    now_ticks_ = tick;
    mix(tag_time_jump, tick);
    return loop_action_t::again;
  }
  // No timer: a fiber still counting its idle polls (deadlock_waits_min)
  // gets its turn, before the network is asked (the probe may be costly:
  // the harness's photographs the world).
  if (deadlock_quiet_count_ < live_.size()) return loop_action_t::run_one;
  const std::size_t in_flight = in_flight_count_fn_ ? in_flight_count_fn_() : 0;
  if (in_flight > 0) {
    // The network may still deliver: give the fibers more rounds (bounded
    // by steps_max and ticks_max; the report then shows the in-flight count).
    mix(tag_in_flight, in_flight);
    note_progress();
    return loop_action_t::again;
  }
  result.kind = run_result_t::kind_t::deadlock;
  result.message = "every live fiber waits and nothing changed for " +
                   std::to_string(deadlock_waits()) +
                   " waits each (no progress, no timer, nothing in flight)";
  return loop_action_t::stop;
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
  while (timer_next_tick_ <= now_ticks_) {
    timer_event_t* event = timer_pop();
    mix(tag_timer, event->timer_seq);
    note_progress();
    try {
      event->fire(event, event->fire_context);
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
                     std::to_string(timers_count_) + ", in flight " +
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
