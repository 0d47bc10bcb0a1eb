#include "sim/sim_fiber.hpp"

#include "sim/sim_fiber_inline.hpp"  // sanitizer hooks, resume/suspend

#include <sys/mman.h>
#include <unistd.h>

#include <exception>
#include <utility>

#include "lci/util/assert.hpp"

namespace lci::sim {
namespace {

std::size_t page_bytes() {
  static const std::size_t bytes = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return bytes;
}

}  // namespace

// The bottom frame of every fiber: never returns (the last act of a fiber is
// the final jump in exit_to_resumer()).
struct fiber_entry_t {
  static void entry(detail::fcontext_transfer_t transfer) noexcept {
    fiber_t* self = static_cast<fiber_t*>(transfer.data);
    LCI_ASSERT(self != nullptr, "fiber entered without its record");
    self->resumer_ = transfer.fctx;
#if defined(LCI_SIM_ASAN)
    // First arrival on this stack: no fake stack to restore yet.
    __sanitizer_finish_switch_fiber(nullptr, &self->resumer_stack_bottom_,
                                    &self->resumer_stack_bytes_);
#endif
    self->run_body();
    self->exit_to_resumer();
  }
};

fiber_t::fiber_t(fiber_id_t id, std::string name, std::function<void()> body,
                 std::size_t stack_bytes)
    : id_(id), name_(std::move(name)), body_(std::move(body)) {
  LCI_ASSERT(body_ != nullptr, "a fiber needs a body");
  LCI_ASSERT(stack_bytes >= stack_bytes_min, "fiber stack below stack_bytes_min");
  map_stack(stack_bytes);
  void* stack_top = static_cast<char*>(mapping_) + mapping_bytes_;
  context_ = detail::fcontext::make_fcontext(stack_top, stack_bytes_, &fiber_entry_t::entry);
  LCI_ASSERT(context_ != nullptr, "make_fcontext failed");
#if defined(LCI_SIM_TSAN)
  tsan_fiber_ = __tsan_create_fiber(0);
  __tsan_set_fiber_name(tsan_fiber_, name_.c_str());
#endif
}

fiber_t::~fiber_t() {
  // A suspended fiber still has live frames (objects, held locks) on its
  // stack; the scheduler cancels it (unwinds it) before destroying it.
  LCI_ASSERT(state_ == state_t::created || state_ == state_t::finished,
             "destroying a fiber that is suspended or running");
  unmap_stack();
}

void fiber_t::release_stack() {
  LCI_ASSERT(state_ == state_t::finished, "releasing the stack of a live fiber");
  unmap_stack();
}

void fiber_t::unmap_stack() {
  if (mapping_ == nullptr) return;
#if defined(LCI_SIM_TSAN)
  __tsan_destroy_fiber(tsan_fiber_);
  tsan_fiber_ = nullptr;
#endif
#if defined(LCI_SIM_ASAN)
  // Frames left poisoned redzones in the shadow of this stack; clear them so
  // a later mapping at the same address does not inherit them.
  __asan_unpoison_memory_region(mapping_, mapping_bytes_);
#endif
  const int rc = munmap(mapping_, mapping_bytes_);
  LCI_ASSERT(rc == 0, "munmap of a fiber stack failed");
  mapping_ = nullptr;
  context_ = nullptr;
}

void fiber_t::map_stack(std::size_t stack_bytes) {
  const std::size_t page = page_bytes();
  stack_bytes_ = (stack_bytes + page - 1) / page * page;
  mapping_bytes_ = stack_bytes_ + page;  // + one guard page at the bottom
  // MAP_NORESERVE: only the pages a fiber touches cost memory.
  mapping_ = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  LCI_ASSERT(mapping_ != MAP_FAILED, "mmap of a fiber stack failed");
  const int rc = mprotect(mapping_, page, PROT_NONE);
  LCI_ASSERT(rc == 0, "mprotect of a fiber guard page failed");
}

void fiber_t::run_body() {
  if (cancel_requested_) {  // torn down before it ever ran
    outcome_ = outcome_t::cancelled;
    body_ = nullptr;
    return;
  }
  try {
    body_();
    outcome_ = outcome_t::returned;
  } catch (const fiber_cancelled_t&) {
    outcome_ = outcome_t::cancelled;
  } catch (const std::exception& error) {
    outcome_ = outcome_t::threw;
    message_ = error.what();
  } catch (...) {
    outcome_ = outcome_t::threw;
    message_ = "an exception not derived from std::exception";
  }
  // Release the captures here, on the fiber's own stack, while the fiber is
  // still a fiber (a capture's destructor may legitimately yield).
  try {
    body_ = nullptr;
  } catch (...) {
    if (outcome_ == outcome_t::returned) {
      outcome_ = outcome_t::threw;
      message_ = "the body's destructor threw";
    }
  }
}

void fiber_t::exit_to_resumer() {
  state_ = state_t::finished;
#if defined(LCI_SIM_ASAN)
  // nullptr: this stack is done; ASan may free its fake frames.
  __sanitizer_start_switch_fiber(nullptr, resumer_stack_bottom_,
                                 resumer_stack_bytes_);
#endif
#if defined(LCI_SIM_TSAN)
  __tsan_switch_to_fiber(tsan_resumer_, 0);
#endif
  detail::fcontext::jump_fcontext(resumer_, nullptr);
  LCI_ASSERT(false, "a finished fiber was resumed");
  __builtin_unreachable();
}

}  // namespace lci::sim
