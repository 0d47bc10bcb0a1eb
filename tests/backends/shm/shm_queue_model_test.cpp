// Model checks of queue_t (production source of backends/shm/shm_queue.hpp
// under Relacy). The region is one block allocated inside the test; each
// thread attaches its own queue_t to it, as each process would.
//
// A message carries (producer, sequence) in its immediate data. The slot's
// fields are util::var, so a message handed over without a happens-before
// edge (a weakened publish [P5]) or a slot rewritten while the consumer
// still reads it (a weakened free [C3]) is a data race Relacy reports.
// after() drains the queue as the consumer and checks: every accepted
// message popped exactly once with its fields, refused ones never, each
// producer's messages in order, and a dead producer's claim skipped.
#include <cstddef>
#include <cstdint>

#include "backends/shm/shm_queue.hpp"
#include "tests/model_check/model_check.hpp"

namespace {

using lci::backend::shm::message_t;
using lci::backend::shm::queue_params_t;
using lci::backend::shm::queue_status_t;
using lci::backend::shm::queue_t;
using lci::backend::shm::reservation_t;
using lci::util::atomic;
using lci::util::mo_acquire;
using lci::util::mo_release;

constexpr std::uint32_t producers_max = 3;
constexpr std::uint32_t sequences_max = 3;
constexpr std::uint32_t kind = 9;

// Under Relacy the slot header is larger than in production: round it up.
constexpr std::uint32_t slot_bytes =
    (queue_t::payload_offset_bytes + sizeof(std::uint64_t) + 63) / 64 * 64;

std::uint64_t imm_of(std::uint32_t producer, std::uint32_t sequence) {
  return 100 * producer + sequence + 1;
}

struct world_t {
  unsigned char* block = nullptr;
  unsigned char* region = nullptr;
  std::size_t region_bytes = 0;
  queue_t consumer;
  bool accepted[producers_max][sequences_max];
  int popped_count[producers_max][sequences_max];
  int last_popped[producers_max];  // sequence, -1 = none
  atomic<int> dead{0};             // producer id + 1 of the dead producer

  void build(std::uint32_t slots_count) {
    const queue_params_t params{slot_bytes, slots_count, producers_max};
    region_bytes = queue_t::region_bytes(params);
    block = new unsigned char[region_bytes + 64];
    const auto address = reinterpret_cast<std::uintptr_t>(block);
    region = block + (64 - address % 64) % 64;  // init wants a cache line
    RL_ASSERT(consumer.init(region, region_bytes, params) == queue_status_t::ok);
    for (std::uint32_t p = 0; p < producers_max; ++p) {
      last_popped[p] = -1;
      for (std::uint32_t s = 0; s < sequences_max; ++s) {
        accepted[p][s] = false;
        popped_count[p][s] = 0;
      }
    }
  }

  // A producer's own attachment, as another process would make.
  queue_t attach() {
    queue_t queue;
    RL_ASSERT(queue.attach(region, region_bytes) == queue_status_t::ok);
    return queue;
  }

  bool push(queue_t& queue, std::uint32_t producer, std::uint32_t sequence) {
    const std::uint64_t imm = imm_of(producer, sequence);
    const queue_status_t status = queue.push(producer, kind, imm, &imm, sizeof(imm));
    RL_ASSERT(status == queue_status_t::ok || status == queue_status_t::retry);
    accepted[producer][sequence] = status == queue_status_t::ok;
    return accepted[producer][sequence];
  }

  // The producer claims a slot, never publishes it, and is then known dead.
  void claim_and_die(queue_t& queue, std::uint32_t producer) {
    reservation_t abandoned;
    if (queue.reserve(producer, abandoned) != queue_status_t::ok) return;
    // release: pairs with the acquire in is_dead(); the claim comes first.
    dead.store(static_cast<int>(producer) + 1, mo_release);
  }

  // One pop by the consumer; returns whether a message came out.
  bool pop() {
    message_t header;
    std::uint64_t payload[slot_bytes / sizeof(std::uint64_t)];
    const queue_status_t status = consumer.pop(header, payload, [this](std::uint32_t x) {
      // acquire: pairs with the release in claim_and_die().
      return dead.load(mo_acquire) == static_cast<int>(x) + 1;
    });
    RL_ASSERT(status == queue_status_t::ok || status == queue_status_t::empty);
    if (status != queue_status_t::ok) return false;
    RL_ASSERT(header.source < producers_max);
    RL_ASSERT(header.kind == kind);
    RL_ASSERT(header.length_bytes == sizeof(std::uint64_t));
    RL_ASSERT(payload[0] == header.imm);
    const std::uint64_t sequence = header.imm - imm_of(header.source, 0);
    RL_ASSERT(sequence < sequences_max);
    RL_ASSERT(popped_count[header.source][sequence]++ == 0);
    RL_ASSERT(static_cast<int>(sequence) > last_popped[header.source]);
    last_popped[header.source] = static_cast<int>(sequence);
    return true;
  }

  // After the threads joined: drains, checks, frees the region.
  void drain_and_check() {
    std::uint32_t drained_count = 0;
    while (pop()) ++drained_count;
    RL_ASSERT(drained_count <= consumer.slots_count());
    for (std::uint32_t p = 0; p < producers_max; ++p) {
      for (std::uint32_t s = 0; s < sequences_max; ++s) {
        RL_ASSERT(popped_count[p][s] == (accepted[p][s] ? 1 : 0));
      }
    }
    consumer.destroy();
    delete[] block;
  }
};

// One push against one pop on an empty queue, explored exhaustively.
struct push_vs_pop_t : rl::test_suite<push_vs_pop_t, 2> {
  world_t world;
  void before() { world.build(2); }
  void thread(unsigned id) {
    if (id == 0) {
      queue_t queue = world.attach();
      RL_ASSERT(world.push(queue, 0, 0));
    } else {
      world.pop();
    }
  }
  void after() { world.drain_and_check(); }
};

// Two slots, two producers of two messages each, a consumer polling
// twice: claims race, the tail is helped, and slots are reused while the
// consumer frees them.
struct two_producers_wrap_t : rl::test_suite<two_producers_wrap_t, 3> {
  world_t world;
  void before() { world.build(2); }
  void thread(unsigned id) {
    if (id < 2) {
      queue_t queue = world.attach();
      world.push(queue, id, 0);
      world.push(queue, id, 1);
      return;
    }
    world.pop();
    world.pop();
  }
  void after() { world.drain_and_check(); }
};

// A producer claims a slot and dies while another pushes behind it and the
// consumer polls: the live producer's messages all come out, in order.
struct dead_producer_t : rl::test_suite<dead_producer_t, 3> {
  world_t world;
  void before() { world.build(2); }
  void thread(unsigned id) {
    queue_t queue = world.attach();
    if (id == 0) {
      world.claim_and_die(queue, 2);
    } else if (id == 1) {
      world.push(queue, 1, 0);
      world.push(queue, 1, 1);
    } else {
      world.pop();
      world.pop();
    }
  }
  void after() { world.drain_and_check(); }
};

}  // namespace

// shm_queue_model_deep_test (manual) raises each context bound by one.
#if defined(LCI_SHM_QUEUE_MODEL_DEEP)
constexpr unsigned deeper = 1;
#else
constexpr unsigned deeper = 0;
#endif

int main() {
  using lci::model_check::run;
  return lci::model_check::exit_status({
      run<push_vs_pop_t>("shm queue: push vs pop on empty", rl::sched_full),
      run<two_producers_wrap_t>("shm queue: 2 slots, 2 producers + pops",
                                rl::sched_bound, 2 + deeper),
      run<dead_producer_t>("shm queue: dead claim, producer + pops",
                           rl::sched_bound, 2 + deeper),
  });
}
