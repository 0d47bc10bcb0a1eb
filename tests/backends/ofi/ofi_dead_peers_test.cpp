// Dead peers found and reported by an ofi device in one process: a job of
// three ranks seen from rank 0, where ranks 1 and 2 are processes that
// published their identity and exited (so the peer table finds them dead)
// and whose device names are rank 0's own (valid addresses: what is sent to
// them arrives here, where nobody receives it). Messages too large for any
// eager protocol stay posted to both until the device's liveness check finds
// them dead together; a poll with room for one completion then writes one
// and nothing past it, for the failed sends and for the peer_down reports.
// The multi-process tests (ofi_dead_peer*.cpp) kill real peers; this one
// controls when both deaths are found.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/ofi/ofi_context.hpp"
#include "backends/ofi/ofi_peers.hpp"
#include "lci/bootstrap/bootstrap.hpp"

namespace lci::backend::ofi {
namespace {

using backend::net_device_t;
using backend::net_fault_t;
using backend::net_mr_t;
using backend::net_opcode_t;
using backend::net_status_t;

constexpr std::size_t turns_max = 2'000'000;

// Rank 0 of 1: keeps the one value a peer_table_t publishes.
class identity_recorder_t final : public bootstrap::bootstrap_t {
 public:
  bootstrap::bootstrap_kind_t kind() const override { return bootstrap::bootstrap_kind_t::local; }
  int rank_me() const override { return 0; }
  int rank_n() const override { return 1; }
  void put(const std::string&, const void* value, std::size_t size) override {
    const auto* bytes = static_cast<const std::byte*>(value);
    value_.assign(bytes, bytes + size);
  }
  void fence() override {}
  std::vector<std::byte> get(int, const std::string& key) override {
    throw std::logic_error("identity_recorder_t: get(" + key + ") of rank 0 of 1");
  }
  void barrier() override {}
  const std::vector<std::byte>& value() const { return value_; }

 private:
  std::vector<std::byte> value_;
};

// The identity a peer table publishes for a process that has exited since
// (forked, recorded, reaped).
std::vector<std::byte> exited_identity() {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    identity_recorder_t recorder;
    const peer_table_t table(recorder, "identity");
    const std::vector<std::byte>& value = recorder.value();
    const bool written =
        write(fds[1], value.data(), value.size()) == static_cast<ssize_t>(value.size());
    _exit(written ? 0 : 1);
  }
  close(fds[1]);
  std::vector<std::byte> value;
  std::byte chunk[256];
  for (ssize_t got; (got = read(fds[0], chunk, sizeof(chunk))) > 0;) {
    value.insert(value.end(), chunk, chunk + got);
  }
  close(fds[0]);
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("the recording child failed");
  }
  return value;
}

// Rank 0 of rank_n, the only live one: ranks 1.. publish exited processes'
// identities under the peer table's key (ofi_context_t's
// "lci_ofi_c<i>_peers") and rank 0's own value under every other key.
class dead_peers_bootstrap_t final : public bootstrap::bootstrap_t {
 public:
  explicit dead_peers_bootstrap_t(int rank_n) : rank_n_(rank_n) {
    for (int rank = 1; rank < rank_n; ++rank) identities_[rank] = exited_identity();
  }
  bootstrap::bootstrap_kind_t kind() const override { return bootstrap::bootstrap_kind_t::local; }
  int rank_me() const override { return 0; }
  int rank_n() const override { return rank_n_; }
  void put(const std::string& key, const void* value, std::size_t size) override {
    const auto* bytes = static_cast<const std::byte*>(value);
    values_[key].assign(bytes, bytes + size);
  }
  void fence() override {}
  std::vector<std::byte> get(int rank, const std::string& key) override {
    const std::string peers_suffix = "_peers";
    const bool peers_key = key.size() > peers_suffix.size() &&
                           key.compare(key.size() - peers_suffix.size(), std::string::npos,
                                       peers_suffix) == 0;
    if (rank != 0 && peers_key) return identities_.at(rank);
    return values_.at(key);
  }
  void barrier() override {}

 private:
  const int rank_n_;
  std::map<int, std::vector<std::byte>> identities_;
  std::map<std::string, std::vector<std::byte>> values_;
};

class OfiDeadPeers : public ::testing::TestWithParam<const char*> {};

TEST_P(OfiDeadPeers, APollWritesOneStatusOfEachFaultAndReport) {
  dead_peers_bootstrap_t bootstrap(3);
  ofi_context_t context(bootstrap, GetParam());
  const std::unique_ptr<net_device_t> device = context.alloc_device({});
  // Past ofi_rxm's eager and segmented sizes (16 KiB, 128 KiB) and shm's
  // inject size: the sends wait for a receive that is never posted.
  const std::vector<char> payload(std::size_t{1} << 20, 'p');
  ASSERT_LE(payload.size(), device->attr().max_msg_size);
  for (int rank : {1, 2}) {
    error_t posted = errorcode_t::retry;
    for (std::size_t turn = 0; turn < turns_max && posted.is_retry(); ++turn) {
      posted = device->post_send(rank, payload.data(), payload.size(), net_mr_t{}, 0,
                                 reinterpret_cast<void*>(static_cast<std::uintptr_t>(rank)));
    }
    ASSERT_TRUE(posted.is_posted()) << "the send to rank " << rank;
  }
  // Room for one status, and one past it that a poll must leave as written.
  net_status_t statuses[2];
  int canary = 0;
  statuses[1].user_context = &canary;
  int send_faults[3] = {0, 0, 0};
  int peer_downs[3] = {0, 0, 0};
  int reported = 0;
  for (std::size_t turn = 0; turn < turns_max && reported < 4; ++turn) {
    const std::size_t count = device->poll_comp(statuses, 1);
    ASSERT_LE(count, 1u);
    ASSERT_EQ(statuses[1].user_context, &canary) << "a poll wrote past statuses_max";
    if (count == 0) continue;
    const net_status_t& status = statuses[0];
    ASSERT_EQ(status.fault, net_fault_t::peer_crashed) << backend::describe_fault(status);
    ASSERT_TRUE(status.rank == 1 || status.rank == 2) << backend::describe_fault(status);
    if (status.opcode == net_opcode_t::peer_down) {
      ++peer_downs[status.rank];
    } else {
      ASSERT_EQ(status.opcode, net_opcode_t::send) << backend::describe_fault(status);
      EXPECT_EQ(status.user_context, reinterpret_cast<void*>(
                                         static_cast<std::uintptr_t>(status.rank)));
      ++send_faults[status.rank];
    }
    ++reported;
  }
  for (int rank : {1, 2}) {
    EXPECT_EQ(send_faults[rank], 1) << "rank " << rank;
    EXPECT_EQ(peer_downs[rank], 1) << "rank " << rank;
  }
}

INSTANTIATE_TEST_SUITE_P(Providers, OfiDeadPeers, ::testing::Values("shm", "tcp;ofi_rxm"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param) == "shm" ? "shm" : "tcp_ofi_rxm";
                         });

}  // namespace
}  // namespace lci::backend::ofi
