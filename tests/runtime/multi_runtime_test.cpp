// Several runtimes in one process (one rank): every rank allocates two
// runtimes (alloc_runtime, collective, in the same order everywhere), and
// each runtime exchanges sends, active messages and puts with its peer
// runtimes only, from its own thread. Both runtimes use the same tags, the
// same rcomp numbers and the same matching engine indices, so a message that
// crossed into the other runtime would be taken there: the payloads name
// their runtime, and every receive checks it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::require;

constexpr int runtimes_count = 2;
constexpr lci::tag_t exchange_tag = 5;  // the same in every runtime
// An eager and a zero-copy size.
constexpr std::size_t sizes[] = {100, std::size_t{32} << 10};

char payload_byte(int runtime_index, int source, int target, std::size_t i) {
  return static_cast<char>(runtime_index * 89 + source * 31 + target * 7 + i * 3);
}

void fill(std::vector<char>& buffer, int runtime_index, int source, int target) {
  for (std::size_t i = 0; i < buffer.size(); ++i) {
    buffer[i] = payload_byte(runtime_index, source, target, i);
  }
}

void require_payload(const char* bytes, std::size_t size, int runtime_index, int source,
                     int target, const std::string& what) {
  for (std::size_t i = 0; i < size; ++i) {
    require(bytes[i] == payload_byte(runtime_index, source, target, i),
            what + ": byte " + std::to_string(i) + " is not runtime " +
                std::to_string(runtime_index) + "'s");
  }
}

// Everything one runtime of one rank does with its peer runtimes.
class runtime_user_t {
 public:
  runtime_user_t(lci::sim::rank_env_t& env, lci::runtime_t runtime, int index, std::size_t size)
      : env_(env), runtime_(runtime), index_(index), size_(size) {
    me_ = lci::get_rank_me_x().runtime(runtime)();
    ranks_ = lci::get_rank_n_x().runtime(runtime)();
    cq_ = lci::alloc_cq_x().runtime(runtime)();
    am_cq_ = lci::alloc_cq_x().runtime(runtime)();
    rcomp_ = lci::register_rcomp_x(am_cq_).runtime(runtime)();
    window_.assign(size * static_cast<std::size_t>(ranks_), 0);
    mr_ = lci::register_memory_x(window_.data(), window_.size()).runtime(runtime)();
  }

  lci::rcomp_t rcomp() const { return rcomp_; }
  lci::rmr_t rmr() const { return lci::get_rmr_x(mr_).runtime(runtime_)(); }

  // Receives, sends, active messages and puts to every peer, and waits.
  void exchange(const std::vector<lci::rmr_t>& peer_rmrs) {
    const std::size_t peers = static_cast<std::size_t>(ranks_ - 1);
    std::vector<std::vector<char>> in(static_cast<std::size_t>(ranks_), std::vector<char>(size_));
    std::vector<std::vector<char>> out(static_cast<std::size_t>(ranks_), std::vector<char>(size_));
    std::size_t pending = 0;
    for (int peer = 0; peer < ranks_; ++peer) {
      if (peer == me_) continue;
      fill(out[peer], index_, me_, peer);
      pending += post(lci::post_recv_x(peer, in[peer].data(), size_, exchange_tag, cq_));
      pending += post(lci::post_send_x(peer, out[peer].data(), size_, exchange_tag, cq_));
      pending += post(lci::post_am_x(peer, out[peer].data(), size_, cq_, rcomp_).tag(exchange_tag));
      pending += post(lci::post_put_x(peer, out[peer].data(), size_, cq_,
                                      size_ * static_cast<std::size_t>(me_), peer_rmrs[peer])
                          .comp_semantic(lci::comp_semantic_t::network));
    }
    std::size_t ams = 0;
    while (pending > 0 || ams < peers) {
      lci::status_t status = lci::cq_pop_x(cq_).runtime(runtime_)();
      if (!status.is_retry()) {
        --pending;
        continue;
      }
      status = lci::cq_pop_x(am_cq_).runtime(runtime_)();
      if (!status.is_retry()) {
        require(status.tag == exchange_tag && status.size == size_, "an active message's status");
        require_payload(static_cast<const char*>(status.buffer), status.size, index_, status.rank,
                        me_, "an active message");
        std::free(status.buffer);
        ++ams;
        continue;
      }
      step("this runtime's exchange");
    }
    for (int peer = 0; peer < ranks_; ++peer) {
      if (peer != me_) require_payload(in[peer].data(), size_, index_, peer, me_, "a receive");
    }
    // Every peer's puts are in place once all peer runtimes passed this.
    lci::barrier_x().runtime(runtime_)();
    for (int peer = 0; peer < ranks_; ++peer) {
      if (peer == me_) continue;
      require_payload(window_.data() + size_ * static_cast<std::size_t>(peer), size_, index_, peer,
                      me_, "a put");
    }
  }

  void release() {
    lci::deregister_memory_x(&mr_).runtime(runtime_)();
    lci::deregister_rcomp_x(rcomp_).runtime(runtime_)();
    lci::free_comp_x(&am_cq_).runtime(runtime_)();
    lci::free_comp_x(&cq_).runtime(runtime_)();
  }

 private:
  // Posts with retries; 1 when a completion will come through the cq.
  template <typename Functor>
  std::size_t post(Functor&& functor) {
    for (;;) {
      const lci::status_t status = functor.runtime(runtime_)();
      if (status.is_posted()) return 1;
      if (status.is_done()) return 0;
      step("a post's retry");
    }
  }
  void step(const char* what) {
    if (lci::progress_x().runtime(runtime_)().is_retry()) env_.wait(what);
  }

  lci::sim::rank_env_t& env_;
  const lci::runtime_t runtime_;
  const int index_;
  const std::size_t size_;
  int me_ = 0;
  int ranks_ = 0;
  lci::comp_t cq_;
  lci::comp_t am_cq_;
  lci::rcomp_t rcomp_ = 0;
  std::vector<char> window_;
  lci::mr_t mr_;
};

void body(lci::sim::rank_env_t& env, std::size_t size) {
  // Collective: every rank allocates its runtimes (and their default
  // devices) in this order.
  std::vector<lci::runtime_t> runtimes;
  for (int k = 0; k < runtimes_count; ++k) runtimes.push_back(lci::alloc_runtime());
  std::vector<std::unique_ptr<runtime_user_t>> users;
  for (int k = 0; k < runtimes_count; ++k) {
    users.push_back(std::make_unique<runtime_user_t>(env, runtimes[k], k, size));
    require(users.back()->rcomp() == users.front()->rcomp(),
            "both runtimes hand out the same rcomp numbers");
  }
  // Peers' windows, per runtime.
  std::vector<std::vector<lci::rmr_t>> rmrs(runtimes_count,
                                            std::vector<lci::rmr_t>(env.ranks_count()));
  for (int k = 0; k < runtimes_count; ++k) {
    const lci::rmr_t mine = users[k]->rmr();
    env.allgather(&mine, sizeof(mine), rmrs[k].data());
  }
  env.run_threads(runtimes_count, [&users, &rmrs](int k) { users[k]->exchange(rmrs[k]); });
  for (auto& user : users) user->release();
  for (lci::runtime_t& runtime : runtimes) lci::free_runtime(&runtime);
}

class MultiRuntime : public ::testing::TestWithParam<std::tuple<int, std::size_t>> {};

TEST_P(MultiRuntime, EachRuntimeTalksOnlyToItsPeers) {
  const int ranks_count = std::get<0>(GetParam());
  const std::size_t size = std::get<1>(GetParam());
  lci::sim::sweep_t sweep;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  lci::sim::expect_runs_ok(ranks_count, sweep,
                           [size](lci::sim::rank_env_t& env) { body(env, size); });
}

INSTANTIATE_TEST_SUITE_P(RanksAndSizes, MultiRuntime,
                         ::testing::Combine(::testing::Values(2, 3), ::testing::ValuesIn(sizes)),
                         [](const ::testing::TestParamInfo<std::tuple<int, std::size_t>>& info) {
                           return "r" + std::to_string(std::get<0>(info.param)) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "_bytes";
                         });

}  // namespace
