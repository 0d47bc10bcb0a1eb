// LCT's queues (lct.h, "Queues"): the C API over LCI's completion queues.
// Every kind maps to lci::cq::lcrq_t (unbounded) or lci::cq::faa_array_t
// (fixed capacity): a kind upstream implements as a fixed array maps to the
// FAA array, so that `length` keeps its meaning of capacity; every other
// kind (linked lists, other ring-of-rings queues, std::deque) is unbounded
// and maps to the LCRQ. Both are MPMC, so the kinds documented upstream as
// single-threaded or mutex-protected are safe from any thread here.
#include <cstddef>

#include "lci/cq/cq_faa_array.hpp"
#include "lci/cq/cq_lcrq.hpp"
#include "lct/lct.h"
#include "lct/lct_internal.hpp"

struct LCT_queue_opaque_t {
  virtual ~LCT_queue_opaque_t() = default;
  virtual void push(void* value) = 0;
  virtual void* pop() = 0;
};

namespace {

class lcrq_queue_t final : public LCT_queue_opaque_t {
 public:
  void push(void* value) override { queue_.push(value); }
  void* pop() override { return queue_.pop(); }

 private:
  lci::cq::lcrq_t queue_;
};

class faa_array_queue_t final : public LCT_queue_opaque_t {
 public:
  explicit faa_array_queue_t(std::size_t capacity) : queue_(capacity) {}
  void push(void* value) override {
    if (!queue_.push(value))
      lct::fatal("LCT_queue_push", "the queue is full (%zu values)", queue_.capacity());
  }
  void* pop() override { return queue_.pop(); }

 private:
  lci::cq::faa_array_t queue_;
};

bool is_fixed_array(LCT_queue_type_t type) {
  switch (type) {
    case LCT_QUEUE_ARRAY_ATOMIC_FAA:
    case LCT_QUEUE_ARRAY_ATOMIC_CAS:
    case LCT_QUEUE_ARRAY_ATOMIC_BASIC:
    case LCT_QUEUE_ARRAY_ST:
    case LCT_QUEUE_ARRAY_MUTEX:
      return true;
    case LCT_QUEUE_STD:
    case LCT_QUEUE_STD_MUTEX:
    case LCT_QUEUE_MS:
    case LCT_QUEUE_LCRQ:
    case LCT_QUEUE_LPRQ:
    case LCT_QUEUE_FAAARRAY:
    case LCT_QUEUE_LAZY_INDEX:
      return false;
  }
  lct::fatal("LCT_queue_alloc", "unknown queue type %d", static_cast<int>(type));
}

}  // namespace

LCT_queue_t LCT_queue_alloc(LCT_queue_type_t type, size_t length) {
  if (!is_fixed_array(type)) return new lcrq_queue_t;
  if (length < 1 || length > lci::cq::faa_array_t::capacity_max)
    lct::fatal("LCT_queue_alloc", "length %zu is out of [1, %zu]", length,
               lci::cq::faa_array_t::capacity_max);
  return new faa_array_queue_t(length);
}

void LCT_queue_free(LCT_queue_t* queue_p) {
  delete *queue_p;
  *queue_p = nullptr;
}

void LCT_queue_push(LCT_queue_t queue, void* val) {
  if (val == nullptr) lct::fatal("LCT_queue_push", "NULL pushed (pop's NULL means empty)");
  queue->push(val);
}

void* LCT_queue_pop(LCT_queue_t queue) { return queue->pop(); }
