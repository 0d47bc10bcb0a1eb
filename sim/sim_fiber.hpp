// fiber_t: one user-level execution context with its own small stack, the
// unit the simulator's scheduler (sim_scheduler.hpp) interleaves. Test code
// and the runtime never use it directly; they call scheduler_t.
//
// Switching uses Boost.Context's fcontext primitives (make_fcontext /
// jump_fcontext: a few saved registers, ~10 ns, no system call) rather than
// the boost::context::fiber wrapper around them, because the sanitizer
// annotations must bracket the raw jump with no instrumented code in between,
// and a finished fiber must leave through one annotated final jump instead of
// the wrapper's exit path (see docs/design/sim_scheduler.md, "Sanitizers").
// ucontext is ~35x slower (it saves the signal mask with a system call).
//
// Life cycle (the scheduler is the only caller; any other call is an error
// caught by an LCI_ASSERT):
//
//   state      | resume()        | suspend()         | ~fiber_t()
//   -----------+-----------------+-------------------+------------------
//   created    | runs the body   | invalid           | ok (never ran)
//   suspended  | continues it    | invalid           | invalid (stack
//   running    | invalid         | back to resumer   |   frames would leak)
//   finished   | invalid         | invalid           | ok
//
// A fiber ends only by returning from its body; an exception leaving the body
// is caught at the bottom of the fiber and recorded (outcome threw, message).
// To end a suspended fiber early, the scheduler sets cancel_requested() and
// resumes it; its yield point then throws fiber_cancelled_t so the stack
// unwinds and destructors run (no leak, no lock left held).
//
// Thread safety: a fiber is resumed by one OS thread at a time; the thread
//                that created it resumes it (fibers do not migrate).
// Blocking:      resume() runs the fiber until it suspends or finishes.
// Ownership:     the fiber owns its stack and its body; both are released
//                when it finishes (the body) and when it is destroyed (the
//                stack). A finished fiber keeps only its name and outcome.
// Allocation:    construction maps the stack (mmap, plus a PROT_NONE guard
//                page below it, so an overflow faults instead of corrupting
//                a neighbour); nothing is allocated by resume/suspend.
// Limits:        stack_bytes is fixed at construction (no growth); it is
//                rounded up to whole pages, at least stack_bytes_min.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace lci::sim {

using fiber_id_t = std::uint32_t;
inline constexpr fiber_id_t fiber_id_invalid = ~fiber_id_t{0};

inline constexpr std::size_t stack_bytes_min = 16 * 1024;

// Thrown at a yield point of a fiber the scheduler is tearing down. Fiber
// code must let it pass: a catch (...) has to rethrow.
struct fiber_cancelled_t {};

class fiber_t {
 public:
  enum class state_t : std::uint8_t { created, suspended, running, finished };
  enum class outcome_t : std::uint8_t {
    none,       // not finished
    returned,   // the body returned
    threw,      // the body threw; message() says what
    cancelled,  // torn down by the scheduler (never ran, or unwound)
  };

  fiber_t(fiber_id_t id, std::string name, std::function<void()> body,
          std::size_t stack_bytes);
  ~fiber_t();
  fiber_t(const fiber_t&) = delete;
  fiber_t& operator=(const fiber_t&) = delete;

  // From the resuming context (the scheduler): run until suspend() or the end.
  // Both are inline, defined in sim_fiber_inline.hpp (include it to call them).
  inline void resume();
  // From inside this fiber: back to the context that resumed it.
  inline void suspend();

  // Unmaps the stack of a finished fiber early (the record stays for
  // reports); the destructor does it otherwise.
  void release_stack();

  void request_cancel() { cancel_requested_ = true; }
  bool cancel_requested() const { return cancel_requested_; }

  fiber_id_t id() const { return id_; }
  const std::string& name() const { return name_; }
  state_t state() const { return state_; }
  outcome_t outcome() const { return outcome_; }
  const std::string& message() const { return message_; }
  std::size_t stack_bytes() const { return stack_bytes_; }

 private:
  friend struct fiber_entry_t;  // the fiber's bottom frame (sim_fiber.cpp)
  void run_body();
  [[noreturn]] void exit_to_resumer();
  void map_stack(std::size_t stack_bytes);
  void unmap_stack();

  const fiber_id_t id_;
  state_t state_ = state_t::created;
  outcome_t outcome_ = outcome_t::none;
  bool cancel_requested_ = false;
  const std::string name_;
  std::function<void()> body_;
  std::string message_;

  void* context_ = nullptr;   // this fiber's suspended fcontext
  void* resumer_ = nullptr;   // the resumer's fcontext while this one runs
  void* mapping_ = nullptr;   // stack mapping, guard page first
  std::size_t mapping_bytes_ = 0;
  std::size_t stack_bytes_ = 0;  // usable stack above the guard page

  // This fiber's C++ exception state while it is not running (sim_fiber.cpp).
  void* eh_caught_ = nullptr;
  unsigned int eh_uncaught_ = 0;

  // Sanitizer bookkeeping (unused in plain builds).
  [[maybe_unused]] void* asan_fake_stack_ = nullptr;
  [[maybe_unused]] const void* resumer_stack_bottom_ = nullptr;
  [[maybe_unused]] std::size_t resumer_stack_bytes_ = 0;
  [[maybe_unused]] void* tsan_fiber_ = nullptr;
  [[maybe_unused]] void* tsan_resumer_ = nullptr;
};

}  // namespace lci::sim
