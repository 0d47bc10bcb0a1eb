// prng_t: the simulator's one source of randomness (TigerBeetle's VOPR rule:
// one uint64_t seed drives everything; no rand(), no std::random_device, no
// wall clock).
//
// Generator: xoshiro256** (Blackman & Vigna), its 256-bit state filled from
// the seed by splitmix64, as its authors recommend (a raw seed of 0 or a
// seed with few set bits still gives a well-mixed state).
//
// Sub-streams: fork(stream_id) returns a new generator that depends only on
// (root seed, stream_id), never on how many numbers this one has drawn. The
// scheduler, the network and each fault draw from their own fork, so adding
// one draw to the network does not change the scheduler's interleavings for
// the same seed.
//
// Decision bytes (fuzzing): while a decision_bytes_t is installed on a
// thread (decision_bytes_scope_t), every uniform() and chance() of every
// prng_t on that thread takes its answer from the next of its bytes instead
// of the generator, so a fuzzer's input picks the scheduler's interleaving,
// the wire's delivery order and delays, and which faults fire
// (fuzz/sim_schedule_fuzz.cpp). Once the bytes run out, draws come from the
// generators again, as seeded: a fixed choice that is still fair (a
// constant answer, e.g. "fiber 0 again", could starve a fiber and fail a
// correct run).
//
// Thread safety: none; one owner (the scheduler runs on one OS thread).
// Decision bytes are per thread: a deterministic run (all fibers on the
// thread that calls run_ranks) sees them, other threads never do.
// Blocking: never. Allocation: none. Header-only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lci/util/assert.hpp"

namespace lci::sim {

// One splitmix64 step: advances `state` and returns a well-mixed word.
inline std::uint64_t splitmix64_next(std::uint64_t& state) {
  state += 0x9E3779B97F4A7C15ull;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A fuzzer's input as the draws of every prng_t on one thread (see the file
// comment). Does not own the bytes.
class decision_bytes_t {
 public:
  decision_bytes_t(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  // The installed bytes of this thread, or nullptr.
  static decision_bytes_t*& installed() {
    static thread_local decision_bytes_t* current = nullptr;
    return current;
  }

  // uniform(bound): the next bytes, as many as bound - 1 needs (none for
  // bound 1: there is no choice), little-endian, modulo bound (the bias
  // does not matter to a fuzzer). false, consuming nothing, once too few
  // bytes are left.
  bool uniform(std::uint64_t bound, std::uint64_t* value) {
    std::size_t count = 0;
    for (std::uint64_t rest = bound - 1; rest != 0; rest >>= 8) ++count;
    if (size_ - position_ < count) return false;
    std::uint64_t word = 0;
    for (std::size_t i = 0; i < count; ++i) {
      word |= static_cast<std::uint64_t>(data_[position_ + i]) << (8 * i);
    }
    position_ += count;
    *value = word % bound;
    return true;
  }

  // chance(probability): the next byte b as the point (b + 1/2) / 256, so
  // probability 0 is never true and 1 always is, as with the generator.
  bool chance(double probability, bool* value) {
    if (position_ == size_) return false;
    const double unit = (data_[position_++] + 0.5) / 256.0;
    *value = unit < probability;
    return true;
  }

  std::size_t used_count() const { return position_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t position_ = 0;  // <= size_
};

// Installs `bytes` on this thread for its lifetime; one at a time.
class decision_bytes_scope_t {
 public:
  explicit decision_bytes_scope_t(decision_bytes_t* bytes) {
    LCI_ASSERT(decision_bytes_t::installed() == nullptr, "decision bytes installed twice");
    decision_bytes_t::installed() = bytes;
  }
  ~decision_bytes_scope_t() { decision_bytes_t::installed() = nullptr; }
  decision_bytes_scope_t(const decision_bytes_scope_t&) = delete;
  decision_bytes_scope_t& operator=(const decision_bytes_scope_t&) = delete;
};

class prng_t {
 public:
  explicit prng_t(std::uint64_t seed) : seed_(seed) {
    std::uint64_t mix = seed;
    for (std::uint64_t& word : state_) word = splitmix64_next(mix);
    // splitmix64 is a bijection on distinct counters, so four consecutive
    // outputs are never all zero (xoshiro's one forbidden state).
    LCI_ASSERT((state_[0] | state_[1] | state_[2] | state_[3]) != 0,
               "xoshiro256** state must not be all zero");
  }

  std::uint64_t seed() const { return seed_; }

  // The next 64 uniformly distributed bits (xoshiro256**).
  std::uint64_t next_u64() {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, bound), without modulo bias (Lemire's multiply-shift with
  // rejection; the rejection loop runs again with probability < bound/2^64).
  std::uint64_t uniform(std::uint64_t bound) {
    LCI_ASSERT(bound > 0, "uniform() needs a non-empty range");
    std::uint64_t decided = 0;
    decision_bytes_t* bytes = decision_bytes_t::installed();
    if (bytes != nullptr && bytes->uniform(bound, &decided)) return decided;
    unsigned __int128 product =
        static_cast<unsigned __int128>(next_u64()) * bound;
    std::uint64_t low = static_cast<std::uint64_t>(product);
    if (low < bound) {
      const std::uint64_t threshold = (0 - bound) % bound;
      // Terminates with probability 1; each retry succeeds with p > 1/2.
      while (low < threshold) {
        product = static_cast<unsigned __int128>(next_u64()) * bound;
        low = static_cast<std::uint64_t>(product);
      }
    }
    return static_cast<std::uint64_t>(product >> 64);
  }

  // Uniform in [min, max] (both inclusive); min <= max.
  std::uint64_t range(std::uint64_t min, std::uint64_t max) {
    LCI_ASSERT(min <= max, "range() needs min <= max");
    if (max - min == ~std::uint64_t{0}) return next_u64();
    return min + uniform(max - min + 1);
  }

  // True with `probability` in [0, 1]. chance(0) is never true and
  // chance(1) always is, so a fault rate of 0 really turns a fault off.
  bool chance(double probability) {
    LCI_ASSERT(probability >= 0.0, "probability below 0");
    LCI_ASSERT(probability <= 1.0, "probability above 1");
    bool decided = false;
    decision_bytes_t* bytes = decision_bytes_t::installed();
    if (bytes != nullptr && bytes->chance(probability, &decided)) return decided;
    // 53 random bits -> a double in [0, 1) with every value equally likely.
    const double unit = static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
    return unit < probability;
  }

  // An independent generator for sub-stream `stream_id` (see the file
  // comment); fork(a) and fork(b) differ for a != b.
  prng_t fork(std::uint64_t stream_id) const {
    std::uint64_t mix = seed_ ^ 0x6A09E667F3BCC909ull;  // keep fork(0) != *this
    const std::uint64_t base = splitmix64_next(mix);
    std::uint64_t stream = stream_id;
    return prng_t(base ^ splitmix64_next(stream));
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
  }

  std::uint64_t seed_;
  std::uint64_t state_[4];
};

}  // namespace lci::sim
