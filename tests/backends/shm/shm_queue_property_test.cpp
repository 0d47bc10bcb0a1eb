// Random operation sequences on queue_t (backends/shm/shm_queue.hpp) against
// a sequential model: the ring's positions in order, each holding a message
// or a slot claimed by a producer that will never publish it. Checked: FIFO
// order per producer and overall, nothing lost or duplicated, retry exactly
// when the model holds slots_count entries, empty exactly when the head is
// free or claimed by a live producer, and a dead producer's claims skipped.
// A producer "dies" either after its claim (reserve without publish) or
// before it moved the tail (its claim made, the tail then put back, as a
// process killed between the two would leave them).
#include <rapidcheck/state.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

#include "backends/shm/shm_queue.hpp"
#include "tests/backends/shm/shm_queue_test_util.hpp"
#include "tests/property/property.hpp"

namespace {

using lci::backend::shm::message_t;
using lci::backend::shm::queue_params_t;
using lci::backend::shm::queue_status_t;
using lci::backend::shm::queue_t;
using lci::backend::shm::reservation_t;
using lci::backend::shm::test::read_raw;
using lci::backend::shm::test::region_t;
using lci::backend::shm::test::tail_offset;
using lci::backend::shm::test::write_raw;

constexpr std::uint32_t producers_max = 4;

enum class life_t { alive, abandoning, dead };

struct entry_t {
  std::uint32_t producer = 0;
  std::uint64_t imm = 0;
  bool published = false;  // false: claimed, never to be published
};

struct model_t {
  std::deque<entry_t> entries;  // in position order, head first
  std::uint32_t slots_count = 0;
  std::uint64_t next_imm = 1;
  life_t life[producers_max] = {};
};

struct system_t {
  explicit system_t(const queue_params_t& chosen)
      : params(chosen), region(queue_t::region_bytes(chosen)) {}
  queue_params_t params;
  region_t region;
  queue_t queue;
};

using command_t = rc::state::Command<model_t, system_t>;

std::uint32_t any_producer() {
  return *rc::gen::inRange<std::uint32_t>(0, producers_max);
}

// Pushes from a live producer; retry exactly when the model is full.
struct push_t : command_t {
  std::uint32_t producer = any_producer();
  void checkPreconditions(const model_t& model) const override {
    RC_PRE(model.life[producer] == life_t::alive);
  }
  void apply(model_t& model) const override {
    const std::uint64_t imm = model.next_imm++;
    if (model.entries.size() < model.slots_count) {
      model.entries.push_back({producer, imm, true});
    }
  }
  void run(const model_t& model, system_t& sut) const override {
    const std::uint64_t imm = model.next_imm;
    const bool fits = model.entries.size() < model.slots_count;
    const queue_status_t status = sut.queue.push(producer, 5, imm, &imm, sizeof(imm));
    RC_ASSERT(status == (fits ? queue_status_t::ok : queue_status_t::retry));
  }
  void show(std::ostream& os) const override { os << "push from " << producer; }
};

// A live producer claims a slot and will never publish it.
struct abandon_t : command_t {
  std::uint32_t producer = any_producer();
  bool before_tail_moved = *rc::gen::arbitrary<bool>();
  void checkPreconditions(const model_t& model) const override {
    RC_PRE(model.life[producer] == life_t::alive);
    RC_PRE(model.entries.size() < model.slots_count);
  }
  void apply(model_t& model) const override {
    model.entries.push_back({producer, 0, false});
    model.life[producer] = life_t::abandoning;
  }
  void run(const model_t&, system_t& sut) const override {
    reservation_t reservation;
    RC_ASSERT(sut.queue.reserve(producer, reservation) == queue_status_t::ok);
    unsigned char* tail = sut.region.data() + tail_offset;
    RC_ASSERT(read_raw<std::uint64_t>(tail) == reservation.position + 1);
    // Undo the claimer's own move of the tail [P4], as if it died first.
    if (before_tail_moved) write_raw<std::uint64_t>(tail, reservation.position);
  }
  void show(std::ostream& os) const override {
    os << "producer " << producer << " claims and stops"
       << (before_tail_moved ? " before moving the tail" : "");
  }
};

// The consumer learns that a producer which stopped has died.
struct kill_t : command_t {
  std::uint32_t producer = any_producer();
  void checkPreconditions(const model_t& model) const override {
    RC_PRE(model.life[producer] == life_t::abandoning);
  }
  void apply(model_t& model) const override { model.life[producer] = life_t::dead; }
  void run(const model_t&, system_t&) const override {}
  void show(std::ostream& os) const override { os << "producer " << producer << " dies"; }
};

// What one pop answers in the model; drops the reclaimed and popped entries.
bool model_pop(model_t& model, entry_t& popped) {
  while (!model.entries.empty()) {
    const entry_t& head = model.entries.front();
    if (head.published) {
      popped = head;
      model.entries.pop_front();
      return true;
    }
    if (model.life[head.producer] != life_t::dead) return false;
    model.entries.pop_front();  // reclaimed
  }
  return false;
}

struct pop_burst_t : command_t {
  int count = *rc::gen::inRange(1, 6);
  void apply(model_t& model) const override {
    entry_t popped;
    for (int i = 0; i < count; ++i) model_pop(model, popped);
  }
  void run(const model_t& model, system_t& sut) const override {
    model_t expected = model;
    std::vector<unsigned char> payload(sut.queue.payload_bytes_max());
    for (int i = 0; i < count; ++i) {
      entry_t popped;
      const bool has = model_pop(expected, popped);
      message_t header;
      const queue_status_t status =
          sut.queue.pop(header, payload.data(), [&](std::uint32_t producer) {
            return model.life[producer] == life_t::dead;
          });
      RC_ASSERT(status == (has ? queue_status_t::ok : queue_status_t::empty));
      if (!has) continue;
      RC_ASSERT(header.source == popped.producer);
      RC_ASSERT(header.imm == popped.imm);
      RC_ASSERT(header.length_bytes == sizeof(popped.imm));
      std::uint64_t word = 0;
      std::memcpy(&word, payload.data(), sizeof(word));
      RC_ASSERT(word == popped.imm);
    }
  }
  void show(std::ostream& os) const override { os << "pop x" << count; }
};

LCI_PROPERTY(ShmQueueProperty, MatchesSequentialModel,
             "shm queue: pushes, abandoned claims, deaths and pops agree with "
             "the model",
             [] {
               const std::uint32_t slots_count = 2u << *rc::gen::inRange(0, 3);
               system_t sut(queue_params_t{64, slots_count, producers_max});
               RC_ASSERT(sut.queue.init(sut.region.data(), sut.region.bytes(),
                                        sut.params) == queue_status_t::ok);
               model_t model;
               model.slots_count = slots_count;
               rc::state::check(model, sut,
                                rc::state::gen::execOneOfWithArgs<
                                    push_t, push_t, push_t, abandon_t, kill_t,
                                    pop_burst_t, pop_burst_t>());
               RC_ASSERT(sut.region.guard_intact());
             })

}  // namespace
