// The CMA probe (shm_cma.hpp, docs/backends/shm.md "Single copy (CMA)").
#include "backends/shm/shm_cma.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lci/util/assert.hpp"
#include "lci/util/log.hpp"

namespace lci::backend::shm {

namespace {

// The value local rank publishes: distinct per rank and per job, so a read
// of the wrong word or of another job's process does not pass.
std::uint64_t probe_value(const bootstrap::job_token_t& job_token, int local_rank) {
  std::uint64_t value = 0;
  std::memcpy(&value, job_token.data(), sizeof(value));
  return value ^ (0x9e3779b97f4a7c15ull * static_cast<std::uint64_t>(local_rank + 1));
}

// This rank's verdict on reading its peer's word.
cma_probe_t read_peer(const shm::segment_t& segment, const bootstrap::locality_t& locality) {
  const int local_rank_n = static_cast<int>(locality.local_ranks.size());
  const int peer_local_rank = (locality.local_rank_me + 1) % local_rank_n;
  const bootstrap::locality_peer_t& peer = locality.peers[locality.local_ranks[peer_local_rank]];
  const segment_slot_t& slot = segment.slot(peer_local_rank);
  if (!peer.cma_allowed) return {cma_status_t::pid_namespace_differs, 0};
  // Only the pid the bootstrap named: the segment's word could be forged.
  if (slot.pid != peer.pid) return {cma_status_t::refused, EPERM};
  std::uint64_t value = 0;
  const int error_number = cma_read(peer.pid, slot.probe_word_address, &value, sizeof(value));
  if (error_number != 0) return {cma_status_t::refused, error_number};
  if (value != probe_value(locality.job_token, peer_local_rank)) return {cma_status_t::refused, 0};
  return {cma_status_t::available, 0};
}

}  // namespace

const char* get_cma_status_str(cma_status_t status) {
  switch (status) {
    case cma_status_t::available:
      return "available";
    case cma_status_t::refused:
      return "refused";
    case cma_status_t::pid_namespace_differs:
      return "pid_namespace_differs";
  }
  return "unknown";
}

int cma_read(pid_t pid, std::uint64_t address, void* out, std::size_t size_bytes) {
  iovec local{out, size_bytes};
  iovec remote{reinterpret_cast<void*>(address), size_bytes};
  const ssize_t got = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (got < 0) return errno;
  return static_cast<std::size_t>(got) == size_bytes ? 0 : EFAULT;
}

cma_probe_t probe_cma(shm::segment_t& segment, bootstrap::bootstrap_t& bootstrap,
                      const bootstrap::locality_t& locality) {
  const int local_rank_n = static_cast<int>(locality.local_ranks.size());
  LCI_ASSERT(segment.header().local_rank_n == local_rank_n, "the segment of this node");
  // volatile: peers read it behind the compiler's back, through the kernel.
  volatile std::uint64_t word = probe_value(locality.job_token, locality.local_rank_me);
  segment_slot_t& mine = segment.slot(locality.local_rank_me);
  mine.pid = ::getpid();
  mine.probe_word_address = reinterpret_cast<std::uintptr_t>(&word);
  bootstrap.barrier();  // every slot published

  const cma_probe_t verdict = read_peer(segment, locality);
  mine.cma_status = static_cast<std::int32_t>(verdict.status);
  mine.cma_error_number = verdict.error_number;
  bootstrap.barrier();  // every read done, every verdict published

  cma_probe_t node = verdict;
  for (int local_rank = 0; local_rank < local_rank_n; ++local_rank) {
    const segment_slot_t& slot = segment.slot(local_rank);
    LCI_ASSERT(slot.cma_status >= static_cast<std::int32_t>(cma_status_t::available), "verdict");
    LCI_ASSERT(slot.cma_status <= static_cast<std::int32_t>(cma_status_t::pid_namespace_differs),
               "verdict");
    const auto status = static_cast<cma_status_t>(slot.cma_status);
    if (status > node.status) node = {status, slot.cma_error_number};
  }
  if (locality.leader_rank == locality.rank_me) {
    LCI_LOG(info, "shm", "single copy (CMA) between the %d local ranks: %s%s%s", local_rank_n,
            get_cma_status_str(node.status), node.error_number != 0 ? ", " : "",
            node.error_number != 0 ? std::strerror(node.error_number) : "");
  }
  return node;
}

}  // namespace lci::backend::shm
