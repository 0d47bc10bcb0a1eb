// libFuzzer target for what the shared-memory queue's consumer reads
// (backends/shm/shm_queue.hpp): a region laid out by init, then overwritten
// by the input as a faulty process could write it, attached by a second
// queue_t and popped (and pushed, so pops also meet well-formed slots).
// The region and the pop buffer are heap blocks of exactly their size, so a
// read or write outside them is an ASan report under --config=fuzz.
// Checked: attach accepts only a header that describes a queue fitting the
// region; a message that pop delivers has a length within the payload and a
// source below producers_max; a corrupt answer repeats (pop leaves the slot
// as it is); every loop ends.
//
// Input format:
//   byte 0   slots_count = 2 << (b % 4)
//   byte 1   slot_bytes = 64 * (1 + b % 3)
//   byte 2   producers_max = 1 + b % 8
//   byte 3   bit 0: the input overwrites the region from its first byte
//            (header included); otherwise from the tail's line on
//   byte 4   producer x is dead when bit (x % 8) is set
//   then     bytes copied over the region, at most its size
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "backends/shm/shm_queue.hpp"

namespace {

using lci::backend::shm::message_t;
using lci::backend::shm::queue_params_t;
using lci::backend::shm::queue_status_t;
using lci::backend::shm::queue_t;

constexpr std::size_t prefix_bytes = 5;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "shm_queue_fuzz: %s\n", what);
  std::abort();
}

struct free_t {
  void operator()(void* block) const { std::free(block); }
};

void exercise(queue_t& queue, std::uint8_t dead_mask) {
  // Exactly payload_bytes_max() bytes: a longer copy is an ASan report.
  std::unique_ptr<unsigned char, free_t> payload(
      static_cast<unsigned char*>(std::malloc(queue.payload_bytes_max())));
  const auto is_dead = [dead_mask](std::uint32_t x) {
    return ((dead_mask >> (x % 8)) & 1) != 0;
  };
  const std::uint32_t rounds_max = 3 * queue.slots_count();
  for (std::uint32_t round = 0; round < rounds_max; ++round) {
    message_t header;
    const queue_status_t status = queue.pop(header, payload.get(), is_dead);
    if (status == queue_status_t::corrupt) {
      if (queue.pop(header, payload.get(), is_dead) != queue_status_t::corrupt) {
        fail("a corrupt slot was not refused twice");
      }
      return;
    }
    if (status == queue_status_t::ok) {
      if (header.length_bytes > queue.payload_bytes_max()) fail("length over the payload");
      if (header.source >= queue.producers_max()) fail("source out of range");
    } else if (status != queue_status_t::empty) {
      fail("pop answered neither ok, empty nor corrupt");
    }
    const std::uint64_t word = round;
    const queue_status_t pushed =
        queue.push(round % queue.producers_max(), 1, word, &word, sizeof(word));
    if (pushed != queue_status_t::ok && pushed != queue_status_t::retry) {
      fail("push answered neither ok nor retry");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < prefix_bytes) return 0;
  const queue_params_t params{64u * (1u + data[1] % 3u), 2u << (data[0] % 4u),
                              1u + data[2] % 8u};
  const bool overwrite_header = (data[3] & 1) != 0;
  const std::uint8_t dead_mask = data[4];
  const std::size_t region_bytes = queue_t::region_bytes(params);
  if (region_bytes == 0) fail("the target's parameters are out of range");
  std::unique_ptr<unsigned char, free_t> region(
      static_cast<unsigned char*>(std::aligned_alloc(64, region_bytes)));
  queue_t creator;
  if (creator.init(region.get(), region_bytes, params) != queue_status_t::ok) {
    fail("init refused valid parameters");
  }
  const std::size_t start = overwrite_header ? 0 : sizeof(queue_t::region_header_t);
  const std::size_t copy_bytes = std::min(size - prefix_bytes, region_bytes - start);
  std::memcpy(region.get() + start, data + prefix_bytes, copy_bytes);

  queue_t consumer;
  const queue_status_t attached = consumer.attach(region.get(), region_bytes);
  if (attached != queue_status_t::ok) {
    if (!overwrite_header) fail("attach refused a header init wrote");
    return 0;
  }
  if (queue_t::region_bytes(queue_params_t{consumer.payload_bytes_max() +
                                               static_cast<std::uint32_t>(
                                                   queue_t::payload_offset_bytes),
                                           consumer.slots_count(),
                                           consumer.producers_max()}) > region_bytes) {
    fail("attach accepted a queue larger than its region");
  }
  exercise(consumer, dead_mask);
  return 0;
}
