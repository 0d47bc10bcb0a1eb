// Run by segment_launch_test.sh as N processes under tools/lcirun. Modes
// (the first argument):
//   normal        locality, open_segment() with each node's local ranks
//                 writing and reading one another's bytes of the payload,
//                 the name checked gone, then the CMA probe. Prints
//                 "segment <name> rank <r> ok" and "cma <status> <errno>".
//   leader_crash  the node leaders create their segments and die by SIGKILL
//                 before the unlink, printing "segment <name> left"; the
//                 other ranks wait in the barrier until lcirun ends them.
//   peer_crash    rank 1 attaches and dies by SIGKILL before the second
//                 barrier; its leader's open_segment() fails in that
//                 barrier, and the leader prints "segment <name> removed"
//                 once the name is gone.
// Any other outcome exits 1 with the reason on stderr.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "backends/shm/shm_cma.hpp"
#include "backends/shm/shm_segment.hpp"
#include "lci/bootstrap/locality.hpp"

namespace {

namespace bs = lci::bootstrap;
namespace shm = lci::backend::shm;

constexpr std::size_t payload_bytes = 4096;

bool name_exists(const std::string& name) {
  const int fd = ::shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

std::string node_segment_name(const bs::locality_t& locality) {
  const bs::locality_peer_t& leader = locality.peers[locality.leader_rank];
  return shm::segment_name(::geteuid(), leader.pid_namespace, leader.pid, locality.job_token);
}

int run_normal(bs::bootstrap_t& bootstrap, const bs::locality_t& locality) {
  shm::segment_t segment = shm::open_segment(bootstrap, locality, payload_bytes);
  const int local_rank_n = static_cast<int>(locality.local_ranks.size());
  segment.payload()[locality.local_rank_me] = static_cast<std::byte>(locality.rank_me + 1);
  bootstrap.barrier();
  for (int local_rank = 0; local_rank < local_rank_n; ++local_rank) {
    if (segment.payload()[local_rank] != static_cast<std::byte>(locality.local_ranks[local_rank] + 1)) {
      std::fprintf(stderr, "payload byte %d not written by its rank\n", local_rank);
      return 1;
    }
  }
  if (name_exists(segment.name()) || segment.name() != node_segment_name(locality)) {
    std::fprintf(stderr, "%s still linked after open_segment()\n", segment.name().c_str());
    return 1;
  }
  std::printf("segment %s rank %d ok\n", segment.name().c_str(), locality.rank_me);
  const shm::cma_probe_t probe = shm::probe_cma(segment, bootstrap, locality);
  std::printf("cma %s %d\n", shm::get_cma_status_str(probe.status), probe.error_number);
  return 0;
}

int run_leader_crash(bs::bootstrap_t& bootstrap, const bs::locality_t& locality) {
  if (locality.leader_rank == locality.rank_me) {
    const std::string name = node_segment_name(locality);
    shm::segment_t segment = shm::segment_t::create(
        name, static_cast<int>(locality.local_ranks.size()), payload_bytes, locality.job_token);
    std::printf("segment %s left\n", name.c_str());
    std::fflush(stdout);
    ::raise(SIGKILL);
  }
  bootstrap.barrier();
  std::fprintf(stderr, "the barrier passed although a leader died\n");
  return 1;
}

int run_peer_crash(bs::bootstrap_t& bootstrap, const bs::locality_t& locality) {
  const std::string name = node_segment_name(locality);
  if (locality.rank_me == 1) {
    bootstrap.barrier();
    shm::segment_t segment = shm::segment_t::attach(
        name, static_cast<int>(locality.local_ranks.size()), payload_bytes, locality.job_token);
    ::raise(SIGKILL);
  }
  try {
    shm::segment_t segment = shm::open_segment(bootstrap, locality, payload_bytes);
  } catch (const std::runtime_error& error) {
    if (name_exists(name)) {
      std::fprintf(stderr, "%s left after: %s\n", name.c_str(), error.what());
      return 1;
    }
    std::printf("segment %s removed\n", name.c_str());
    return 0;
  }
  std::fprintf(stderr, "open_segment() succeeded although rank 1 died\n");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const auto bootstrap = bs::open_bootstrap();
  const bs::locality_t locality = bs::exchange_locality(*bootstrap);
  if (mode == "normal") return run_normal(*bootstrap, locality);
  if (mode == "leader_crash") return run_leader_crash(*bootstrap, locality);
  if (mode == "peer_crash") return run_peer_crash(*bootstrap, locality);
  std::fprintf(stderr, "usage: segment_check normal|leader_crash|peer_crash\n");
  return 2;
}
