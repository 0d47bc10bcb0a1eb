// Run by locality_launch_test.sh as N processes on one machine: exchanges
// the locality over the bootstrap the environment selects and checks it
// against what one machine must give: ranks r and p share a node exactly
// when r / k == p / k, where k is LCI_LOCALITY_RANKS_PER_NODE or, unset, the
// rank count. Prints "locality rank <r> of <n> node <i> token <hex> ok"
// (the script compares the tokens across ranks); any mismatch exits 1 with
// the reason on stderr.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "lci/bootstrap/detail/wire.hpp"
#include "lci/bootstrap/locality.hpp"

namespace {

namespace bs = lci::bootstrap;

int failures = 0;

void check(bool condition, const std::string& what) {
  if (condition) return;
  std::fprintf(stderr, "locality check failed: %s\n", what.c_str());
  ++failures;
}

}  // namespace

int main() {
  const auto bootstrap = bs::open_bootstrap();
  const bs::locality_t locality = bs::exchange_locality(*bootstrap);
  const int rank_me = bootstrap->rank_me();
  const int rank_n = bootstrap->rank_n();
  const int pretend = bs::read_ranks_per_node_pretend();
  const int k = pretend > 0 ? pretend : rank_n;
  const int node_me = rank_me / k;

  check(locality.rank_me == rank_me, "rank_me");
  check(static_cast<int>(locality.peers.size()) == rank_n, "one peer per rank");
  check(locality.node_n == (rank_n + k - 1) / k, "node count");
  check(locality.leader_rank == node_me * k, "leader");
  check(locality.local_rank_me == rank_me % k, "local rank");
  for (int rank = 0; rank < rank_n; ++rank) {
    const bs::locality_peer_t& peer = locality.peers[rank];
    const bool local = rank / k == node_me;
    check(peer.node_index == rank / k, "node of rank " + std::to_string(rank));
    check(peer.is_local == local, "is_local of rank " + std::to_string(rank));
    check(peer.cma_allowed == local, "cma_allowed of rank " + std::to_string(rank));
    if (local) check(peer.pid > 0, "pid of rank " + std::to_string(rank));
    if (local) check(rank == locality.local_ranks[rank % k], "local_ranks");
  }
  check(locality.peers[rank_me].pid == ::getpid(), "my pid");
  bootstrap->barrier();

  const std::string token =
      bs::detail::hex_encode(locality.job_token.data(), locality.job_token.size());
  if (failures != 0) return 1;
  std::printf("locality rank %d of %d node %d token %s ok\n", rank_me, rank_n, node_me,
              token.c_str());
  return 0;
}
