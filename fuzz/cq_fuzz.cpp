// libFuzzer target for the completion queues (lci/cq/): the input bytes are a
// stream of pushes and pops run on lcrq_t and/or faa_array_t and on a
// std::deque model of each (unbounded FIFO for the LCRQ; FIFO bounded by
// capacity for the FAA array, whose push must refuse exactly when the model
// is full). Any disagreement prints the queue, its shape and the step, and
// aborts. Single-threaded: the fuzzer explores sequences and shapes (ring
// closes, segment turnover and recycling, full/empty, ticket wrap-around);
// interleavings are the model checker's job (tests/cq/*_model_test).
//
// Input format:
//   byte 0   queues: % 3 -> both, lcrq_t only, faa_array_t only
//   byte 1   shape: lcrq ring_size = 2 << (b & 3) (2..16),
//            faa capacity = 1 + (b >> 2) (1..64)
//   byte i   bits 0-1: 0, 1 push one value; 2 pop once;
//            3 burst: bit 2 push (1) or pop (0), bits 3-7 count - 1 (1..32)
// At most ops_max bytes are read; the rest of the input is ignored.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>

#include "lci/cq/cq_faa_array.hpp"
#include "lci/cq/cq_lcrq.hpp"

namespace {

using lci::cq::faa_array_t;
using lci::cq::lcrq_t;

constexpr std::size_t ops_max = 4096;

void* as_value(std::uint64_t v) { return reinterpret_cast<void*>((v << 4) | 8); }

[[noreturn]] void fail(const char* queue, std::size_t shape, std::size_t step,
                       const char* what, void* got, void* expected) {
  std::fprintf(stderr,
               "cq_fuzz: %s (shape %zu) disagrees with its model at step %zu: "
               "%s (got %p, expected %p)\n",
               queue, shape, step, what, got, expected);
  std::abort();
}

// One queue and its model.
struct lcrq_run_t {
  explicit lcrq_run_t(std::size_t ring_size) : queue(ring_size), ring_size(ring_size) {}
  void push(std::uint64_t v) {
    queue.push(as_value(v));
    model.push_back(as_value(v));
  }
  void pop(std::size_t step) {
    void* expected = model.empty() ? nullptr : model.front();
    void* got = queue.pop();
    if (got != expected) fail("lcrq_t", ring_size, step, "pop", got, expected);
    if (!model.empty()) model.pop_front();
  }
  lcrq_t queue;
  std::deque<void*> model;
  std::size_t ring_size;
};

struct faa_run_t {
  explicit faa_run_t(std::size_t capacity) : queue(capacity), capacity(capacity) {}
  void push(std::uint64_t v, std::size_t step) {
    const bool fits = model.size() < capacity;
    if (queue.push(as_value(v)) != fits) {
      fail("faa_array_t", capacity, step, fits ? "push refused below capacity"
                                                : "push accepted at capacity",
           as_value(v), nullptr);
    }
    if (fits) model.push_back(as_value(v));
  }
  void pop(std::size_t step) {
    void* expected = model.empty() ? nullptr : model.front();
    void* got = queue.pop();
    if (got != expected) fail("faa_array_t", capacity, step, "pop", got, expected);
    if (!model.empty()) model.pop_front();
  }
  faa_array_t queue;
  std::deque<void*> model;
  std::size_t capacity;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const int which = data[0] % 3;
  const bool use_lcrq = which != 2;
  const bool use_faa = which != 1;
  const std::size_t ring_size = std::size_t{2} << (data[1] & 3);
  const std::size_t capacity = 1 + (data[1] >> 2);
  lcrq_run_t lcrq(ring_size);
  faa_run_t faa(capacity);
  std::uint64_t next_value = 1;
  const std::size_t end = size - 2 > ops_max ? 2 + ops_max : size;
  for (std::size_t i = 2; i < end; ++i) {
    const std::uint8_t byte = data[i];
    const int op = byte & 3;
    const bool push = op < 2 || (op == 3 && (byte & 4) != 0);
    const int count = op == 3 ? 1 + (byte >> 3) : 1;
    for (int k = 0; k < count; ++k) {
      if (push) {
        const std::uint64_t v = next_value++;
        if (use_lcrq) lcrq.push(v);
        if (use_faa) faa.push(v, i);
      } else {
        if (use_lcrq) lcrq.pop(i);
        if (use_faa) faa.pop(i);
      }
    }
  }
  // Drain: everything left comes out in order, then empty.
  while (!lcrq.model.empty()) lcrq.pop(end);
  while (!faa.model.empty()) faa.pop(end);
  lcrq.pop(end);
  faa.pop(end);
  return 0;
}
