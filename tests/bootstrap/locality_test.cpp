// compute_locality() on made-up records (which ranks share a node, which
// may use CMA, the pretended nodes), the record's text form, and the
// exchange over the local bootstrap. Real processes: locality_check.
#include "lci/bootstrap/locality.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <stdexcept>
#include <vector>

#include "gtest/gtest.h"

namespace {

namespace bs = lci::bootstrap;

bs::locality_record_t record(const char* hostname, const char* boot_id, std::uint64_t ipc,
                             std::uint64_t pid_ns, pid_t pid, int pretend = 0) {
  bs::locality_record_t result;
  result.host = {hostname, boot_id, ipc, pid_ns};
  result.pid = pid;
  result.ranks_per_node_pretend = pretend;
  return result;
}

bs::job_token_t token_of(unsigned char seed) {
  bs::job_token_t token;
  for (std::size_t i = 0; i < token.size(); ++i) token[i] = std::byte(seed + i);
  return token;
}

std::vector<int> nodes_of(const bs::locality_t& locality) {
  std::vector<int> nodes;
  for (const bs::locality_peer_t& peer : locality.peers) nodes.push_back(peer.node_index);
  return nodes;
}

TEST(Locality, OneHostIsOneNode) {
  const std::vector<bs::locality_record_t> records = {
      record("a", "b1", 7, 9, 100), record("a", "b1", 7, 9, 101), record("a", "b1", 7, 9, 102)};
  const bs::locality_t locality = bs::compute_locality(records, 2, token_of(3));
  EXPECT_EQ(locality.node_n, 1);
  EXPECT_EQ(nodes_of(locality), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(locality.local_ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(locality.local_rank_me, 2);
  EXPECT_EQ(locality.leader_rank, 0);
  EXPECT_EQ(locality.job_token, token_of(3));
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_TRUE(locality.peers[rank].is_local);
    EXPECT_TRUE(locality.peers[rank].cma_allowed);
    EXPECT_EQ(locality.peers[rank].pid, records[rank].pid);
  }
}

TEST(Locality, InterleavedHostsNumberNodesByLowestRank) {
  const std::vector<bs::locality_record_t> records = {
      record("b", "x", 1, 1, 10), record("a", "y", 1, 1, 10), record("b", "x", 1, 1, 11),
      record("a", "y", 1, 1, 11)};
  const bs::locality_t locality = bs::compute_locality(records, 3, token_of(0));
  EXPECT_EQ(locality.node_n, 2);
  EXPECT_EQ(nodes_of(locality), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(locality.local_ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(locality.local_rank_me, 1);
  EXPECT_EQ(locality.leader_rank, 1);
  EXPECT_FALSE(locality.peers[0].is_local);
  EXPECT_FALSE(locality.peers[0].cma_allowed);
  EXPECT_TRUE(locality.peers[1].cma_allowed);
}

// Same hostname, but another boot or another ipc namespace: no shared memory.
TEST(Locality, BootAndIpcNamespaceSeparateNodes) {
  const std::vector<bs::locality_record_t> records = {
      record("a", "b1", 7, 9, 100), record("a", "b2", 7, 9, 100), record("a", "b1", 8, 9, 101)};
  const bs::locality_t locality = bs::compute_locality(records, 0, token_of(0));
  EXPECT_EQ(locality.node_n, 3);
  EXPECT_EQ(locality.local_ranks, (std::vector<int>{0}));
  EXPECT_FALSE(locality.peers[1].is_local);
  EXPECT_FALSE(locality.peers[2].is_local);
}

// Another pid namespace shares memory but not pids: local, no CMA.
TEST(Locality, PidNamespaceRulesOutCmaOnly) {
  const std::vector<bs::locality_record_t> records = {record("a", "b", 7, 9, 100),
                                                      record("a", "b", 7, 5, 100)};
  const bs::locality_t locality = bs::compute_locality(records, 1, token_of(0));
  EXPECT_TRUE(locality.peers[0].is_local);
  EXPECT_FALSE(locality.peers[0].cma_allowed);
  EXPECT_TRUE(locality.peers[1].cma_allowed);
  EXPECT_EQ(locality.peers[0].pid_namespace, 9u);
  EXPECT_EQ(locality.leader_rank, 0);
}

TEST(Locality, PretendedNodesGroupConsecutiveRanks) {
  for (int pretend = 1; pretend <= 5; ++pretend) {
    std::vector<bs::locality_record_t> records;
    for (int rank = 0; rank < 5; ++rank) records.push_back(record("a", "b", 1, 1, 50 + rank, pretend));
    for (int rank_me = 0; rank_me < 5; ++rank_me) {
      SCOPED_TRACE(testing::Message() << "k " << pretend << " rank " << rank_me);
      const bs::locality_t locality = bs::compute_locality(records, rank_me, token_of(0));
      EXPECT_EQ(locality.node_n, (5 + pretend - 1) / pretend);
      EXPECT_EQ(locality.leader_rank, rank_me / pretend * pretend);
      EXPECT_EQ(locality.local_rank_me, rank_me % pretend);
      for (int rank = 0; rank < 5; ++rank) {
        EXPECT_EQ(locality.peers[rank].node_index, rank / pretend);
        EXPECT_EQ(locality.peers[rank].is_local, rank / pretend == rank_me / pretend);
      }
    }
  }
}

TEST(Locality, PretendedNodesMustAgree) {
  const std::vector<bs::locality_record_t> records = {record("a", "b", 1, 1, 10, 2),
                                                      record("a", "b", 1, 1, 11, 0)};
  EXPECT_THROW(bs::compute_locality(records, 0, token_of(0)), std::runtime_error);
}

TEST(Locality, RecordRoundTripsThroughText) {
  const bs::locality_record_t original = record("host with space", "1234-abcd", 4026531839u,
                                                4026531836u, 4242, 3);
  const bs::locality_record_t decoded =
      bs::decode_locality_record(bs::encode_locality_record(original));
  EXPECT_EQ(decoded.host.hostname, original.host.hostname);
  EXPECT_EQ(decoded.host.boot_id, original.host.boot_id);
  EXPECT_EQ(decoded.host.ipc_namespace, original.host.ipc_namespace);
  EXPECT_EQ(decoded.host.pid_namespace, original.host.pid_namespace);
  EXPECT_EQ(decoded.pid, original.pid);
  EXPECT_EQ(decoded.ranks_per_node_pretend, original.ranks_per_node_pretend);
}

TEST(Locality, MalformedRecordsAreRefused) {
  for (const char* text : {"", "1 2 3 4 boot", "x 2 3 4 boot host", "1 2 3 -1 boot host",
                           "0 2 3 4 boot host", "1 2 3 4  host", "1 2 3 4 boot "}) {
    SCOPED_TRACE(text);
    EXPECT_THROW(bs::decode_locality_record(text), std::runtime_error);
  }
}

TEST(Locality, PretendKnobParses) {
  ::unsetenv("LCI_LOCALITY_RANKS_PER_NODE");
  EXPECT_EQ(bs::read_ranks_per_node_pretend(), 0);
  ::setenv("LCI_LOCALITY_RANKS_PER_NODE", "3", 1);
  EXPECT_EQ(bs::read_ranks_per_node_pretend(), 3);
  for (const char* text : {"", "0", "-2", "2x", "x"}) {
    SCOPED_TRACE(text);
    ::setenv("LCI_LOCALITY_RANKS_PER_NODE", text, 1);
    EXPECT_THROW(bs::read_ranks_per_node_pretend(), std::runtime_error);
  }
  ::unsetenv("LCI_LOCALITY_RANKS_PER_NODE");
}

TEST(Locality, ThisProcessAloneOverTheLocalBootstrap) {
  const auto bootstrap = bs::open_bootstrap(bs::bootstrap_kind_t::local);
  const bs::locality_t locality = bs::exchange_locality(*bootstrap);
  EXPECT_EQ(locality.node_n, 1);
  EXPECT_EQ(locality.peers.size(), 1u);
  EXPECT_EQ(locality.peers[0].pid, ::getpid());
  EXPECT_TRUE(locality.peers[0].cma_allowed);
  EXPECT_EQ(locality.host_me.pid_namespace, locality.peers[0].pid_namespace);
  EXPECT_NE(locality.job_token, bs::job_token_t{});
  EXPECT_FALSE(locality.host_me.boot_id.empty());
}

}  // namespace
