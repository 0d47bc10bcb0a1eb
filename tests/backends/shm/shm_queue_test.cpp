// Unit tests of queue_t (backends/shm/shm_queue.hpp) in one thread: full
// answers retry, positions wrap the ring, the header and every slot field
// are validated, a dead producer's claimed slot is skipped, and the queue
// works through two mappings of one memory file at different addresses and
// across a real process that dies between reserve and publish.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/shm/shm_queue.hpp"
#include "tests/backends/shm/shm_queue_test_util.hpp"

namespace {

using lci::backend::shm::message_t;
using lci::backend::shm::queue_params_t;
using lci::backend::shm::queue_status_t;
using lci::backend::shm::queue_t;
using lci::backend::shm::reservation_t;
namespace state = lci::backend::shm::state;
using lci::backend::shm::test::read_raw;
using lci::backend::shm::test::region_t;
using lci::backend::shm::test::slot_at;
using lci::backend::shm::test::write_raw;

constexpr queue_params_t small_params{128, 4, 3};

struct fixture_t {
  explicit fixture_t(const queue_params_t& chosen = small_params)
      : params(chosen), region(queue_t::region_bytes(chosen)) {
    EXPECT_EQ(queue.init(region.data(), region.bytes(), params), queue_status_t::ok);
  }
  ~fixture_t() { EXPECT_TRUE(region.guard_intact()) << "a write past the region"; }
  queue_status_t push_word(std::uint32_t producer, std::uint64_t word) {
    return queue.push(producer, 7, word, &word, sizeof(word));
  }
  // Pops one message whose payload must be its imm; returns the imm, or
  // the status in `status`.
  queue_status_t pop_word(std::uint64_t& word,
                          std::uint32_t dead_producer = queue_t::producers_limit) {
    message_t header;
    std::vector<unsigned char> payload(queue.payload_bytes_max());
    const queue_status_t status = queue.pop(
        header, payload.data(), [&](std::uint32_t x) { return x == dead_producer; });
    if (status != queue_status_t::ok) return status;
    EXPECT_EQ(header.length_bytes, sizeof(word));
    EXPECT_EQ(header.kind, 7u);
    std::memcpy(&word, payload.data(), sizeof(word));
    EXPECT_EQ(word, header.imm);
    return status;
  }
  queue_params_t params;
  region_t region;
  queue_t queue;
};

TEST(ShmQueue, FullAnswersRetryUntilPopped) {
  fixture_t world;
  for (std::uint64_t i = 0; i < world.params.slots_count; ++i) {
    ASSERT_EQ(world.push_word(0, i), queue_status_t::ok);
  }
  EXPECT_EQ(world.push_word(1, 99), queue_status_t::retry);
  std::uint64_t word = 0;
  ASSERT_EQ(world.pop_word(word), queue_status_t::ok);
  EXPECT_EQ(word, 0u);
  EXPECT_EQ(world.push_word(1, 100), queue_status_t::ok);
  EXPECT_EQ(world.push_word(1, 101), queue_status_t::retry);
}

TEST(ShmQueue, WrapsTheRingInFifoOrder) {
  fixture_t world;
  std::uint64_t next_pushed = 0;
  std::uint64_t next_popped = 0;
  // Ten laps, with the ring half full on every lap boundary.
  for (int round = 0; round < 10 * 4; ++round) {
    for (int i = 0; i < 3; ++i) {
      if (world.push_word(round % 3, next_pushed) == queue_status_t::ok) ++next_pushed;
    }
    for (int i = 0; i < 2; ++i) {
      std::uint64_t word = 0;
      if (world.pop_word(word) != queue_status_t::ok) continue;
      EXPECT_EQ(word, next_popped++);
    }
  }
  std::uint64_t word = 0;
  while (world.pop_word(word) == queue_status_t::ok) EXPECT_EQ(word, next_popped++);
  EXPECT_EQ(next_popped, next_pushed);
  EXPECT_GT(next_pushed, 10u * world.params.slots_count);
}

TEST(ShmQueue, InitRefusesBadParams) {
  region_t region(4096);
  queue_t queue;
  for (const queue_params_t& bad : {queue_params_t{100, 4, 1}, queue_params_t{32, 4, 1},
                                    queue_params_t{64, 3, 1}, queue_params_t{64, 1, 1},
                                    queue_params_t{64, 4, 0},
                                    queue_params_t{64, 4, queue_t::producers_limit + 1},
                                    queue_params_t{64, 128, 1}}) {
    EXPECT_EQ(queue.init(region.data(), region.bytes(), bad), queue_status_t::bad_params);
  }
  EXPECT_EQ(queue.init(region.data(), region.bytes(), queue_params_t{64, 4, 1}),
            queue_status_t::ok);
}

// The limits of the header, at their edges (region_bytes computes without
// allocating).
TEST(ShmQueue, ParamsAtTheirLimits) {
  const std::uint32_t slots_max = queue_t::slots_count_max;
  const std::uint32_t producers_max = queue_t::producers_limit;
  EXPECT_NE(queue_t::region_bytes(queue_params_t{64, slots_max, 1}), 0u);
  EXPECT_EQ(queue_t::region_bytes(queue_params_t{64, 2 * slots_max, 1}), 0u);
  EXPECT_NE(queue_t::region_bytes(queue_params_t{64, 2, producers_max}), 0u);
  EXPECT_EQ(queue_t::region_bytes(queue_params_t{64, 2, producers_max + 1}), 0u);
  EXPECT_EQ(queue_t::region_bytes(queue_params_t{64, 2, 1}),
            queue_t::slots_offset_bytes + 2 * 64);
}

TEST(ShmQueue, AttachChecksTheHeader) {
  fixture_t world;
  queue_t attached;
  ASSERT_EQ(attached.attach(world.region.data(), world.region.bytes()), queue_status_t::ok);
  EXPECT_EQ(attached.slots_count(), world.params.slots_count);
  EXPECT_EQ(attached.producers_max(), world.params.producers_max);
  EXPECT_EQ(attached.payload_bytes_max(), world.queue.payload_bytes_max());
  // A region shorter than the header describes.
  EXPECT_EQ(attached.attach(world.region.data(), world.region.bytes() - 1),
            queue_status_t::corrupt);
  // Wrong magic, wrong version, a slot size off the cache line, a slot count
  // not a power of two, twice the slots the region holds, no producers.
  struct rewrite_t {
    std::size_t offset;
    std::uint32_t value;
  };
  unsigned char* header = world.region.data();
  const std::uint32_t slots_count = world.params.slots_count;
  for (const rewrite_t& rewrite :
       {rewrite_t{0, 0}, rewrite_t{8, queue_t::magic_version + 1},
        rewrite_t{12, world.params.slot_bytes + 1}, rewrite_t{16, slots_count + 1},
        rewrite_t{16, 2 * slots_count}, rewrite_t{20, 0}}) {
    const auto saved = read_raw<std::uint32_t>(header + rewrite.offset);
    write_raw<std::uint32_t>(header + rewrite.offset, rewrite.value);
    EXPECT_EQ(attached.attach(world.region.data(), world.region.bytes()),
              queue_status_t::corrupt)
        << "header byte " << rewrite.offset << " = " << rewrite.value;
    write_raw<std::uint32_t>(header + rewrite.offset, saved);
  }
  EXPECT_EQ(attached.attach(world.region.data(), world.region.bytes()), queue_status_t::ok);
}

// A slot rewritten by a faulty process: pop answers corrupt and stays put.
TEST(ShmQueue, CorruptSlotsAreRefused) {
  struct corruption_t {
    const char* what;
    std::size_t offset;
    std::uint64_t value;
    std::size_t size;
  };
  const corruption_t corruptions[] = {
      {"length over the payload", 8, 128 - 32 + 1, 4},
      {"source not the claimer", 12, 2, 4},
      {"state: producer out of range", 0, state::make(state::published, 3, 0), 8},
      {"state: unknown phase", 0, state::make(state::published, 0, 0) | 3, 8},
      {"state: another position", 0, state::make(state::published, 0, 4), 8},
      {"state: free with a producer", 0, state::make(state::free, 1, 0), 8},
  };
  for (const corruption_t& corruption : corruptions) {
    fixture_t world;
    ASSERT_EQ(world.push_word(0, 42), queue_status_t::ok);
    unsigned char* at = slot_at(world.region, world.params, 0) + corruption.offset;
    if (corruption.size == 4) {
      write_raw<std::uint32_t>(at, static_cast<std::uint32_t>(corruption.value));
    } else {
      write_raw<std::uint64_t>(at, corruption.value);
    }
    std::uint64_t word = 0;
    EXPECT_EQ(world.pop_word(word), queue_status_t::corrupt) << corruption.what;
    EXPECT_EQ(world.pop_word(word), queue_status_t::corrupt) << corruption.what;
  }
}

TEST(ShmQueue, DeadProducersClaimedSlotIsReclaimed) {
  fixture_t world;
  ASSERT_EQ(world.push_word(0, 1), queue_status_t::ok);
  reservation_t abandoned;
  ASSERT_EQ(world.queue.reserve(2, abandoned), queue_status_t::ok);
  ASSERT_EQ(world.push_word(1, 2), queue_status_t::ok);
  std::uint64_t word = 0;
  ASSERT_EQ(world.pop_word(word), queue_status_t::ok);
  EXPECT_EQ(word, 1u);
  // Producer 2 is alive: its message holds the later one back.
  EXPECT_EQ(world.pop_word(word), queue_status_t::empty);
  EXPECT_EQ(world.queue.reclaimed_count(), 0u);
  // Producer 2 died: its slot is freed and the next message comes out.
  ASSERT_EQ(world.pop_word(word, 2), queue_status_t::ok);
  EXPECT_EQ(word, 2u);
  EXPECT_EQ(world.queue.reclaimed_count(), 1u);
  // The freed slot is usable on the next lap: the ring fills again.
  for (std::uint64_t i = 0; i < world.params.slots_count; ++i) {
    ASSERT_EQ(world.push_word(0, 10 + i), queue_status_t::ok);
  }
  EXPECT_EQ(world.push_word(0, 99), queue_status_t::retry);
  for (std::uint64_t i = 0; i < world.params.slots_count; ++i) {
    ASSERT_EQ(world.pop_word(word), queue_status_t::ok);
    EXPECT_EQ(word, 10 + i);
  }
}

// The claimer died after its claim but before it moved the tail: the next
// producer moves the tail past the claimed slot instead of waiting.
TEST(ShmQueue, ProducersMoveTheTailPastADeadClaim) {
  fixture_t world;
  ASSERT_EQ(world.push_word(0, 1), queue_status_t::ok);
  const auto tail = read_raw<std::uint64_t>(world.region.data() + 64);
  ASSERT_EQ(tail, 1u);
  write_raw<std::uint64_t>(slot_at(world.region, world.params, tail),
                           state::make(state::claimed, 2, tail));
  ASSERT_EQ(world.push_word(0, 2), queue_status_t::ok);
  std::uint64_t word = 0;
  ASSERT_EQ(world.pop_word(word), queue_status_t::ok);
  EXPECT_EQ(word, 1u);
  ASSERT_EQ(world.pop_word(word, 2), queue_status_t::ok);
  EXPECT_EQ(word, 2u);
}

// One memory file mapped twice: the creator's and the consumer's queue_t see
// the region at different addresses (the region holds no pointers).
TEST(ShmQueue, WorksAcrossTwoMappings) {
  const std::size_t bytes = queue_t::region_bytes(small_params);
  const int fd = memfd_create("shm_queue_test", 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
  void* first = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  void* second = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(first, MAP_FAILED);
  ASSERT_NE(second, MAP_FAILED);
  ASSERT_NE(first, second);
  queue_t creator;
  queue_t consumer;
  ASSERT_EQ(creator.init(first, bytes, small_params), queue_status_t::ok);
  ASSERT_EQ(consumer.attach(second, bytes), queue_status_t::ok);
  const char text[] = "between mappings";
  ASSERT_EQ(creator.push(1, 3, 77, text, sizeof(text)), queue_status_t::ok);
  message_t header;
  std::vector<char> payload(consumer.payload_bytes_max());
  ASSERT_EQ(consumer.pop(header, payload.data()), queue_status_t::ok);
  EXPECT_EQ(header.source, 1u);
  EXPECT_EQ(header.imm, 77u);
  EXPECT_STREQ(payload.data(), text);
  munmap(first, bytes);
  munmap(second, bytes);
  close(fd);
}

// A real process publishes one message, reserves a slot and exits without
// publishing it; once it is known dead, the consumer skips its slot.
TEST(ShmQueue, ProcessDyingBetweenReserveAndPublish) {
  const std::size_t bytes = queue_t::region_bytes(small_params);
  void* region = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                      -1, 0);
  ASSERT_NE(region, MAP_FAILED);
  queue_t consumer;
  ASSERT_EQ(consumer.init(region, bytes, small_params), queue_status_t::ok);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    queue_t producer;
    std::uint64_t word = 5;
    reservation_t abandoned;
    const bool done = producer.attach(region, bytes) == queue_status_t::ok &&
                      producer.push(1, 7, word, &word, sizeof(word)) == queue_status_t::ok &&
                      producer.reserve(1, abandoned) == queue_status_t::ok;
    _exit(done ? 0 : 1);
  }
  int wait_status = 0;
  ASSERT_EQ(waitpid(child, &wait_status, 0), child);
  ASSERT_TRUE(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0);
  std::uint64_t word = 6;
  ASSERT_EQ(consumer.push(0, 7, word, &word, sizeof(word)), queue_status_t::ok);
  message_t header;
  std::vector<unsigned char> payload(consumer.payload_bytes_max());
  ASSERT_EQ(consumer.pop(header, payload.data()), queue_status_t::ok);
  EXPECT_EQ(header.imm, 5u);
  EXPECT_EQ(consumer.pop(header, payload.data()), queue_status_t::empty);
  const auto child_is_dead = [](std::uint32_t producer) { return producer == 1; };
  ASSERT_EQ(consumer.pop(header, payload.data(), child_is_dead), queue_status_t::ok);
  EXPECT_EQ(header.imm, 6u);
  EXPECT_EQ(consumer.reclaimed_count(), 1u);
  munmap(region, bytes);
}

}  // namespace
