// Random get / put / hand-off sequences against a sequential reference model
// of the packet pool.
//
// Each command runs on one of up to three persistent worker threads (the
// main thread hands it over and waits), so a run is sequential — the model
// can predict it — while the pool sees several thread indices and deques:
// steals, remote puts and the return policy all happen.
//
// The model is exact except for the one choice the pool makes at random, a
// steal's victim, which it reads back from the deque counts after the get:
//   - every deque's contents as a sequence of tokens: a payload pointer seen
//     before, or "fresh" (a packet never handed out, identity not yet known);
//   - which deques are registered (stealable): a deque joins on the first
//     get/put of a thread mapped to it, or when the pool is built on it;
//   - the held packets: holder worker, home deque (the deque of the get that
//     handed it out), and the tag byte its holder wrote over the payload.
// Checked after each command: get returns the model's tail token (a fresh
// token must be a never-seen, owned, aligned payload), never a held packet or
// a foreign pointer; nullptr only when the own deque was empty and the steal
// could fail (no other registered deque, or an empty one it may have picked);
// a steal takes ceil(n/2) from one registered victim; a remote put over the
// threshold moves the oldest packets beyond threshold/2 home; every deque's
// count matches; packets_free_count() == packets_count - held; payloads keep
// their holder's tag; at the end every packet returns.
#include <rapidcheck.h>

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "lci/packet_pool/packet_pool.hpp"
#include "lci/util/cache.hpp"
#include "tests/property/property.hpp"

namespace {

using lci::packet_pool::pool_t;

// ---- persistent workers: run one task at a time, synchronously ---------------

class worker_team_t {
 public:
  static constexpr std::size_t workers_count_max = 3;

  // One team for the whole binary, so each worker keeps its thread index
  // (and so its deque) across the properties' runs.
  static worker_team_t& instance() {
    static worker_team_t team;
    return team;
  }

  // Runs fn on the worker and returns its result; the worker's mutex orders
  // everything fn did before the caller continues.
  template <typename Fn>
  auto run_on(std::size_t worker_index, Fn fn) -> decltype(fn()) {
    decltype(fn()) result{};
    execute(worker_index, [&] { result = fn(); });
    return result;
  }

  ~worker_team_t() {
    for (auto& worker : workers_) {
      {
        std::lock_guard<std::mutex> guard(worker->mutex);
        worker->stopping = true;
      }
      worker->wake.notify_all();
      worker->thread.join();
    }
  }

 private:
  struct worker_t {
    std::mutex mutex;
    std::condition_variable wake;
    std::function<void()> task;
    bool stopping = false;
    std::thread thread;
  };

  worker_team_t() {
    for (std::size_t i = 0; i < workers_count_max; ++i) {
      workers_.push_back(std::make_unique<worker_t>());
      worker_t* worker = workers_.back().get();
      worker->thread = std::thread([worker] { serve(*worker); });
      // One at a time: each worker takes its thread index before the next
      // starts, so the workers' indices are consecutive.
      execute(i, [] { (void)lci::util::thread_index(); });
    }
  }

  static void serve(worker_t& worker) {
    std::unique_lock<std::mutex> lock(worker.mutex);
    for (;;) {
      worker.wake.wait(lock, [&] { return worker.stopping || worker.task != nullptr; });
      if (worker.stopping) return;
      worker.task();
      worker.task = nullptr;
      worker.wake.notify_all();
    }
  }

  void execute(std::size_t worker_index, std::function<void()> task) {
    worker_t& worker = *workers_.at(worker_index);
    std::unique_lock<std::mutex> lock(worker.mutex);
    worker.task = std::move(task);
    worker.wake.notify_all();
    worker.wake.wait(lock, [&] { return worker.task == nullptr; });
  }

  std::vector<std::unique_ptr<worker_t>> workers_;
};

// ---- commands ---------------------------------------------------------------------

enum class kind_t { get, put, hand_off };

// `worker` and `which` are reduced modulo the run's worker count / number of
// held packets, so every command stays meaningful when RapidCheck shrinks.
struct command_t {
  kind_t kind = kind_t::get;
  std::size_t worker = 0;  // get: who gets; hand_off: who receives
  std::size_t which = 0;   // put / hand_off: which held packet
};

void showValue(const command_t& command, std::ostream& os) {
  switch (command.kind) {
    case kind_t::get: os << "get(worker " << command.worker << ")"; break;
    case kind_t::put: os << "put(held #" << command.which << ")"; break;
    case kind_t::hand_off:
      os << "hand_off(held #" << command.which << " -> worker " << command.worker << ")";
      break;
  }
}

rc::Gen<command_t> command_gen() {
  return rc::gen::build<command_t>(
      rc::gen::set(&command_t::kind,
                   rc::gen::weightedElement<kind_t>(
                       {{5, kind_t::get}, {4, kind_t::put}, {2, kind_t::hand_off}})),
      rc::gen::set(&command_t::worker,
                   rc::gen::inRange<std::size_t>(0, worker_team_t::workers_count_max)),
      rc::gen::set(&command_t::which, rc::gen::inRange<std::size_t>(0, 16)));
}

// ---- the reference model ----------------------------------------------------------

void* const fresh_token = nullptr;

// RapidCheck prints the operands of a failed RC_ASSERT; it cannot show void*.
std::uintptr_t address_of(const void* payload) {
  return reinterpret_cast<std::uintptr_t>(payload);
}  // a packet never handed out yet

struct held_t {
  void* payload;
  std::size_t holder;      // worker
  std::size_t home;        // deque of the get that handed it out
  std::uint8_t tag;        // byte the holder wrote over the whole payload
};

struct model_t {
  std::size_t packets_count = 0;
  std::size_t threshold = 0;
  std::vector<std::size_t> deque_of_worker;
  std::vector<std::deque<void*>> deques;  // front = head (steal end)
  std::vector<bool> registered;
  std::vector<held_t> held;
  std::set<void*> seen;  // every payload ever handed out

  std::size_t registered_count() const {
    std::size_t count = 0;
    for (bool r : registered) count += r ? 1 : 0;
    return count;
  }
  // The `count` oldest tokens of `source` to the tail of `target`.
  void move(std::size_t source, std::size_t target, std::size_t count) {
    RC_ASSERT(count <= deques[source].size());
    for (std::size_t i = 0; i < count; ++i) {
      deques[target].push_back(deques[source].front());
      deques[source].pop_front();
    }
  }
};

// Pools whose run failed: never touched again (a broken variant may have
// lost a packet, and the destructor would abort on it). Reachable from a
// global, so LeakSanitizer does not report them.
std::vector<pool_t*>* graveyard = new std::vector<pool_t*>;

struct run_t {
  worker_team_t& team = worker_team_t::instance();
  pool_t* pool = nullptr;
  model_t model;
  std::uint8_t next_tag = 1;
  // What the run exercised (printed by RC_CLASSIFY as a distribution).
  std::size_t steals_count = 0;
  std::size_t steals_failed_count = 0;
  std::size_t returns_count = 0;

  ~run_t() {
    if (pool != nullptr) graveyard->push_back(pool);  // not released: a failed run
  }

  void write_tag(void* payload, std::uint8_t tag) {
    const std::size_t size = pool->packet_size_bytes();
    std::memset(payload, tag, size);
  }
  bool tag_intact(const void* payload, std::uint8_t tag) const {
    const auto* bytes = static_cast<const std::uint8_t*>(payload);
    for (std::size_t i = 0; i < pool->packet_size_bytes(); ++i) {
      if (bytes[i] != tag) return false;
    }
    return true;
  }
  std::uint8_t take_tag() {
    next_tag = static_cast<std::uint8_t>(next_tag == 255 ? 1 : next_tag + 1);
    return next_tag;
  }

  void check_counts() const {
    std::size_t free_count = 0;
    for (std::size_t d = 0; d < model.deques.size(); ++d) {
      RC_ASSERT(pool->deque_packets_count(d) == model.deques[d].size());
      free_count += model.deques[d].size();
    }
    RC_ASSERT(free_count + model.held.size() == model.packets_count);  // the model itself
    RC_ASSERT(pool->packets_free_count() == model.packets_count - model.held.size());
  }

  // A get whose own deque is empty: one steal attempt. Reads the victim back
  // from the deque counts and updates the model; returns the expected token
  // (or tells the caller nullptr was legitimate).
  void model_steal(std::size_t own, void* result) {
    std::vector<std::size_t> candidates;  // registered deques other than own
    bool empty_candidate = false;
    for (std::size_t d = 0; d < model.deques.size(); ++d) {
      if (d == own || !model.registered[d]) continue;
      candidates.push_back(d);
      empty_candidate |= model.deques[d].empty();
    }
    std::vector<std::size_t> changed;
    for (std::size_t d = 0; d < model.deques.size(); ++d) {
      if (d != own && pool->deque_packets_count(d) != model.deques[d].size()) {
        changed.push_back(d);
      }
    }
    if (result == nullptr) {
      RC_ASSERT(changed.empty());  // a failed steal moves nothing
      // It may fail only by picking an empty victim, or having none.
      RC_ASSERT(candidates.empty() || empty_candidate);
      steals_failed_count += candidates.empty() ? 0 : 1;
      return;
    }
    RC_ASSERT(changed.size() == 1u);  // one victim
    const std::size_t victim = changed[0];
    RC_ASSERT(model.registered[victim]);
    const std::size_t victim_count = model.deques[victim].size();
    RC_ASSERT(victim_count > 0u);
    const std::size_t steal_count = (victim_count + 1) / 2;  // half, rounded up
    RC_ASSERT(pool->deque_packets_count(victim) == victim_count - steal_count);
    model.move(victim, own, steal_count);
    ++steals_count;
  }

  void get(std::size_t worker) {
    const std::size_t own = model.deque_of_worker[worker];
    model.registered[own] = true;  // get() registers before it looks
    const bool own_empty = model.deques[own].empty();
    const bool single_deque = model.registered_count() == 1;
    const std::size_t held_before = model.held.size();
    const std::uint8_t tag = take_tag();
    void* payload = team.run_on(worker, [&] {
      void* p = pool->get();
      if (p != nullptr) write_tag(p, tag);  // the holder uses the whole payload
      return p;
    });
    // With one registered deque the pool promises: nullptr iff all are held.
    if (single_deque) RC_ASSERT((payload == nullptr) == (held_before == model.packets_count));
    if (own_empty) model_steal(own, payload);
    if (payload == nullptr) {
      RC_ASSERT(own_empty);  // nullptr => the own deque was empty
      return;
    }
    RC_ASSERT(!model.deques[own].empty());
    void* expected = model.deques[own].back();  // the owner's end: LIFO
    model.deques[own].pop_back();
    if (expected == fresh_token) {
      RC_ASSERT(model.seen.count(payload) == 0u);  // never handed out before
      RC_ASSERT(pool->owns(payload));
      RC_ASSERT(address_of(payload) % lci::util::cache_line_bytes == 0u);
      model.seen.insert(payload);
    } else {
      RC_ASSERT(address_of(payload) == address_of(expected));
    }
    for (const held_t& h : model.held) RC_ASSERT(address_of(h.payload) != address_of(payload));
    model.held.push_back({payload, worker, own, tag});
  }

  void put(std::size_t which) {
    if (model.held.empty()) return;
    const std::size_t index = which % model.held.size();
    const held_t packet = model.held[index];
    model.held.erase(model.held.begin() + static_cast<std::ptrdiff_t>(index));
    const std::size_t own = model.deque_of_worker[packet.holder];
    const bool intact = team.run_on(packet.holder, [&] {
      const bool ok = tag_intact(packet.payload, packet.tag);
      pool->put(packet.payload);
      return ok;
    });
    RC_ASSERT(intact);
    model.registered[own] = true;
    model.deques[own].push_back(packet.payload);
    // The return policy: a remote put that leaves the own deque over the
    // threshold moves the oldest beyond threshold/2 to the packet's home.
    const std::size_t own_count = model.deques[own].size();
    if (packet.home != own && own_count > model.threshold) {
      model.move(own, packet.home, own_count - model.threshold / 2);
      ++returns_count;
    }
  }

  void hand_off(std::size_t which, std::size_t receiver) {
    if (model.held.empty()) return;
    held_t& packet = model.held[which % model.held.size()];
    const std::uint8_t tag = take_tag();
    const bool intact = team.run_on(receiver, [&] {
      const bool ok = tag_intact(packet.payload, packet.tag);
      write_tag(packet.payload, tag);
      return ok;
    });
    RC_ASSERT(intact);
    packet.holder = receiver;
    packet.tag = tag;
  }
};

LCI_PROPERTY(PacketPoolProperty, MatchesDequeModel,
             "packet_pool: get/put/hand-off on 1-3 workers agree with the deque model", [] {
               // Mostly several workers (steals, remote puts); one worker
               // checks the single-deque promise.
               const auto workers_count =
                   *rc::gen::weightedElement<std::size_t>({{1, 1}, {2, 2}, {2, 3}});
               const auto packets_count = *rc::gen::inRange<std::size_t>(1, 17);
               // 1..3 deques make workers share one; 64 gives each its own.
               const auto deques_count = *rc::gen::element<std::size_t>(1, 2, 3, 64);
               const auto threshold = *rc::gen::element<std::size_t>(0, 1, 2, 3, 5, 64);
               const auto packet_size = *rc::gen::element<std::size_t>(1, 63, 64, 65, 200);
               const auto builder = *rc::gen::inRange<std::size_t>(0, workers_count);
               const auto commands = *rc::gen::container<std::vector<command_t>>(command_gen());

               run_t run;
               model_t& model = run.model;
               run.pool = run.team.run_on(builder, [&] {
                 return new pool_t(packet_size, packets_count, deques_count, threshold);
               });
               model.packets_count = packets_count;
               model.threshold = threshold;
               model.deques.resize(deques_count);
               model.registered.assign(deques_count, false);
               for (std::size_t w = 0; w < workers_count; ++w) {
                 model.deque_of_worker.push_back(run.team.run_on(
                     w, [&] { return run.pool->deque_index_of_this_thread(); }));
               }
               // Every packet starts in the builder's deque, which is registered.
               const std::size_t initial = model.deque_of_worker[builder];
               model.deques[initial].assign(packets_count, fresh_token);
               model.registered[initial] = true;
               run.check_counts();

               for (const command_t& command : commands) {
                 const std::size_t worker = command.worker % workers_count;
                 switch (command.kind) {
                   case kind_t::get: run.get(worker); break;
                   case kind_t::put: run.put(command.which); break;
                   case kind_t::hand_off: run.hand_off(command.which, worker); break;
                 }
                 run.check_counts();
               }
               while (!model.held.empty()) {  // at the end every packet returns
                 run.put(0);
                 run.check_counts();
               }
               RC_ASSERT(run.pool->packets_free_count() == packets_count);
               RC_CLASSIFY(run.steals_count > 0, "steal");
               RC_CLASSIFY(run.steals_failed_count > 0, "failed steal (empty victim)");
               RC_CLASSIFY(run.returns_count > 0, "remote-put return");
               RC_CLASSIFY(workers_count > deques_count, "workers share a deque");
               delete run.pool;  // asserts all home, none twice
               run.pool = nullptr;
             })

}  // namespace
