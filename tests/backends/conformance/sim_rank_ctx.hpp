// sim_rank_ctx_t: a conformance rank (conformance.hpp, rank_ctx_t) that is
// a rank of a simulated run (sim/sim_harness.hpp), for every backend whose
// suite runs on the simulator: the simulated network itself
// (sim_conformance_test.cpp) and backends over an emulated device
// (tests/backends/ibv/ibv_conformance_test.cpp). A subclass supplies context().
//
// The barrier keeps polling the rank's endpoints while it waits: with
// manual progress (an RMA lands, a connection is accepted, a QP in error is
// re-established, only while the target calls its device) a peer may wait
// for this rank's progress, as in the ofi harness
// (tests/backends/ofi/ofi_conformance.cpp).
//
// Thread safety: the ranks of one run share one meeting_t; its mutex, like
//                the pollers' lock, is never held across a backend call or
//                a wait (a fiber may switch there).
// Blocking:      barrier() and allgather() until every live rank arrived.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "sim/sim_harness.hpp"
#include "sim/sim_world.hpp"
#include "tests/backends/conformance/conformance.hpp"

namespace lci::conformance {

// The ranks' meeting point of one run.
struct meeting_t {
  std::mutex lock;
  std::uint64_t generation = 0;
  int arrived = 0;
};

class sim_rank_ctx_t : public rank_ctx_t {
 public:
  sim_rank_ctx_t(sim::rank_env_t& env, meeting_t& meeting) : env_(env), meeting_(meeting) {}

  void wait(const char* what) override { env_.wait(what); }
  // All live ranks meet; this one polls its endpoints while it waits.
  void barrier() override {
    std::uint64_t generation;
    {
      std::lock_guard<std::mutex> guard(meeting_.lock);
      generation = meeting_.generation;
      ++meeting_.arrived;
    }
    for (;;) {
      {
        std::lock_guard<std::mutex> guard(meeting_.lock);
        if (meeting_.generation != generation) return;
        if (meeting_.arrived >= live_ranks()) {  // the last one (or a rank crashed)
          meeting_.arrived = 0;
          ++meeting_.generation;
          return;
        }
      }
      poll_endpoints();
      env_.wait("barrier");
    }
  }
  // The exchange itself blocks; the polling barrier first means no peer
  // still waits for this rank's progress then.
  void allgather(const void* mine, std::size_t bytes, void* all) override {
    barrier();
    env_.allgather(mine, bytes, all);
  }
  void run_threads(int threads_count, const std::function<void(int)>& body) override {
    env_.run_threads(threads_count, body);
  }
  // As a process dies: the rank unwinds (an emulated device's QPs are
  // destroyed with it, as the kernel does for a dead process).
  [[noreturn]] void crash() override { env_.crash(); }
  void add_poller(const void* owner, std::function<void()> poll) override {
    std::lock_guard<std::mutex> guard(pollers_lock_);
    pollers_.emplace_back(owner, std::move(poll));
  }
  void remove_poller(const void* owner) override {
    std::lock_guard<std::mutex> guard(pollers_lock_);
    pollers_.erase(std::remove_if(pollers_.begin(), pollers_.end(),
                                  [owner](const auto& entry) { return entry.first == owner; }),
                   pollers_.end());
  }

 protected:
  sim::rank_env_t& env() { return env_; }

 private:
  int live_ranks() {
    int live = 0;
    for (int rank = 0; rank < env_.ranks_count(); ++rank) {
      live += env_.world().is_crashed(rank) ? 0 : 1;
    }
    return live;
  }
  void poll_endpoints() {
    std::vector<std::function<void()>> polls;
    {
      std::lock_guard<std::mutex> guard(pollers_lock_);
      for (const auto& entry : pollers_) polls.push_back(entry.second);
    }
    for (const auto& poll : polls) poll();
  }

  sim::rank_env_t& env_;
  meeting_t& meeting_;
  std::mutex pollers_lock_;
  std::vector<std::pair<const void*, std::function<void()>>> pollers_;
};

}  // namespace lci::conformance
