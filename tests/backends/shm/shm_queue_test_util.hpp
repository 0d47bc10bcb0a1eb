// A cache-line aligned region for a queue_t in the tests of
// backends/shm/shm_queue.hpp, and raw access to its documented layout (as a
// faulty or dying process would write it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "backends/shm/shm_queue.hpp"

namespace lci::backend::shm::test {

// `bytes` zeroed bytes (as a fresh shared mapping is), then a guard line of
// a known pattern: a queue that writes past its region spoils it.
class region_t {
 public:
  explicit region_t(std::size_t bytes)
      : bytes_(bytes),
        data_(static_cast<unsigned char*>(
            std::aligned_alloc(64, round_up(bytes) + guard_bytes))) {
    std::memset(data_, 0, round_up(bytes));
    std::memset(data_ + bytes_, guard_byte, round_up(bytes) + guard_bytes - bytes_);
  }
  ~region_t() { std::free(data_); }
  region_t(const region_t&) = delete;
  region_t& operator=(const region_t&) = delete;

  unsigned char* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  bool guard_intact() const {
    for (std::size_t i = bytes_; i < round_up(bytes_) + guard_bytes; ++i) {
      if (data_[i] != guard_byte) return false;
    }
    return true;
  }

 private:
  static constexpr std::size_t guard_bytes = 64;
  static constexpr unsigned char guard_byte = 0x5a;
  static std::size_t round_up(std::size_t bytes) { return (bytes + 63) / 64 * 64; }
  std::size_t bytes_;
  unsigned char* data_;
};

// Byte offsets in a slot (production layout, asserted in shm_queue.hpp).
inline constexpr std::size_t slot_state_offset = 0;
inline constexpr std::size_t slot_length_offset = 8;
inline constexpr std::size_t slot_source_offset = 12;
inline constexpr std::size_t tail_offset = 64;

inline unsigned char* slot_at(const region_t& region, const queue_params_t& params,
                              std::uint64_t position) {
  return region.data() + queue_t::slots_offset_bytes +
         (position % params.slots_count) * params.slot_bytes;
}

template <typename T>
void write_raw(unsigned char* at, T value) {
  std::memcpy(at, &value, sizeof(T));
}

template <typename T>
T read_raw(const unsigned char* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

}  // namespace lci::backend::shm::test
