// backlog_step_t: a protocol step that must not be handed back to the user
// as retry (an RTR, a FIN, a store into a full matching table, an arrival
// that waits for a packet or a request): a function and its arguments,
// stored inline, so that queueing one allocates nothing. progress() runs it
// again until it stops returning retry.
//
// Thread safety: a value type; the backlog queue's lock guards the copies
//                it keeps.
// Blocking:      never (the step itself must not block either).
// Ownership:     the step owns copies of its arguments, never what they
//                point to (a request, a deferred post: the step's code
//                gives those back when it finishes).
// Allocation:    none: the arguments live in the step's inline storage.
// Limits:        arguments of at most storage_bytes_max bytes, trivially
//                copyable and destructible: checked at compile time where
//                a step is made, so a step that needs more (a whole post's
//                arguments) keeps them in a pooled record and captures its
//                address.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>

#include "lci/util/assert.hpp"
#include "lci/util/error.hpp"

namespace lci::detail {

class backlog_step_t {
 public:
  // The largest step made: a checked put's or get's RTS waiting for a
  // request (progress.cpp, dispatch_rma_rts: 112 bytes of message, the
  // device and the rank).
  static constexpr std::size_t storage_bytes_max = 128;

  backlog_step_t() = default;

  // `step`: a callable returning error_t, typically a lambda whose
  // captures are the step's arguments.
  template <typename Step,
            typename = std::enable_if_t<!std::is_same_v<std::decay_t<Step>, backlog_step_t>>>
  explicit backlog_step_t(const Step& step) {
    // Equivalent mutants: bound. A compile-time check: no step the runtime
    // builds is exactly storage_bytes_max bytes, so `<` accepts the same steps
    // (tools/mutate_records/2026-11-28-runs-35-59.md, runs 42-50).
    static_assert(sizeof(Step) <= storage_bytes_max,
                  "a backlog step's arguments over its inline storage: keep them in a pooled "
                  "record and capture its address");
    static_assert(alignof(Step) <= alignof(std::max_align_t), "a backlog step over-aligned");
    // Copied bytewise by the queue's ring and never destroyed.
    static_assert(std::is_trivially_copyable_v<Step> && std::is_trivially_destructible_v<Step>,
                  "a backlog step's arguments must be plain values (pointers, ids, PODs)");
    ::new (static_cast<void*>(storage_)) Step(step);
    run_ = [](const void* storage) -> error_t { return (*static_cast<const Step*>(storage))(); };
  }

  error_t operator()() const {
    LCI_ASSERT(run_ != nullptr, "running an empty backlog step");
    return run_(storage_);
  }

 private:
  error_t (*run_)(const void* storage) = nullptr;
  alignas(std::max_align_t) unsigned char storage_[storage_bytes_max];
};

}  // namespace lci::detail
