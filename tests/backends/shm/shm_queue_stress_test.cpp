// Several producer threads against one consumer on a small queue_t
// (backends/shm/shm_queue.hpp), run in the default build and under
// --config=tsan: every message arrives exactly once, in its producer's
// order, with its kind, immediate data, length and payload bytes intact.
// The queue is small (8 slots) so that producers keep finding it full and
// the ring wraps thousands of times. No timing assertions.
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "backends/shm/shm_queue.hpp"
#include "tests/backends/shm/shm_queue_test_util.hpp"

namespace {

using lci::backend::shm::message_t;
using lci::backend::shm::queue_params_t;
using lci::backend::shm::queue_status_t;
using lci::backend::shm::queue_t;
using lci::backend::shm::test::region_t;

constexpr std::uint32_t producers_count = 4;
constexpr std::uint64_t messages_per_producer = 10000;

// The payload of message `sequence` of `producer`: a length and bytes that
// depend on both, so a mixed-up or torn message shows.
std::uint32_t length_of(std::uint64_t sequence, std::uint32_t payload_bytes_max) {
  return static_cast<std::uint32_t>(sequence % (payload_bytes_max + 1));
}
unsigned char byte_of(std::uint32_t producer, std::uint64_t sequence, std::uint32_t i) {
  return static_cast<unsigned char>(producer * 31 + sequence * 7 + i);
}

void produce(queue_t& queue, std::uint32_t producer) {
  std::vector<unsigned char> payload(queue.payload_bytes_max());
  for (std::uint64_t sequence = 0; sequence < messages_per_producer; ++sequence) {
    const std::uint32_t length = length_of(sequence, queue.payload_bytes_max());
    for (std::uint32_t i = 0; i < length; ++i) payload[i] = byte_of(producer, sequence, i);
    // A full queue answers retry: wait for the consumer.
    while (queue.push(producer, producer + 100, sequence, payload.data(), length) ==
           queue_status_t::retry) {
      sched_yield();
    }
  }
}

TEST(ShmQueueStress, EveryMessageOnceInProducerOrder) {
  const queue_params_t params{128, 8, producers_count};
  region_t region(queue_t::region_bytes(params));
  queue_t creator;
  ASSERT_EQ(creator.init(region.data(), region.bytes(), params), queue_status_t::ok);
  std::vector<std::thread> producers;
  for (std::uint32_t p = 0; p < producers_count; ++p) {
    producers.emplace_back([&region, p] {
      queue_t queue;  // each "process" attaches on its own
      ASSERT_EQ(queue.attach(region.data(), region.bytes()), queue_status_t::ok);
      produce(queue, p);
    });
  }
  std::vector<std::uint64_t> next_sequence(producers_count, 0);
  std::vector<unsigned char> payload(creator.payload_bytes_max());
  std::uint64_t received_count = 0;
  while (received_count < producers_count * messages_per_producer) {
    message_t header;
    const queue_status_t status = creator.pop(header, payload.data());
    ASSERT_NE(status, queue_status_t::corrupt);
    if (status == queue_status_t::empty) {
      sched_yield();
      continue;
    }
    ASSERT_LT(header.source, producers_count);
    const std::uint32_t p = header.source;
    ASSERT_EQ(header.kind, p + 100);
    ASSERT_EQ(header.imm, next_sequence[p]) << "producer " << p;
    ASSERT_EQ(header.length_bytes, length_of(header.imm, creator.payload_bytes_max()));
    for (std::uint32_t i = 0; i < header.length_bytes; ++i) {
      ASSERT_EQ(payload[i], byte_of(p, header.imm, i)) << "byte " << i;
    }
    ++next_sequence[p];
    ++received_count;
  }
  for (std::thread& producer : producers) producer.join();
  message_t header;
  EXPECT_EQ(creator.pop(header, payload.data()), queue_status_t::empty);
  for (std::uint32_t p = 0; p < producers_count; ++p) {
    EXPECT_EQ(next_sequence[p], messages_per_producer);
  }
  EXPECT_TRUE(region.guard_intact());
}

}  // namespace
