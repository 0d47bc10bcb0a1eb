// Whether single-copy transfers through cross-memory attach (CMA,
// process_vm_readv/process_vm_writev) work between the local ranks of this
// node, decided once at start-up (docs/backends/shm.md, "Single copy (CMA)").
//
// The probe: each local rank publishes in its segment slot its pid and the
// address of a private word holding a value derived from the job token and
// its local rank; after a barrier it reads the next local rank's word
// (cyclically; a rank alone reads its own) with process_vm_readv and checks
// the value; after a second barrier every rank combines all slots' results,
// so the whole node agrees. CMA goes only towards pids the locality exchange
// named: a slot whose pid differs from it is refused, and so is a peer in
// another pid namespace. The node's leader logs the outcome in one line
// (tag "shm", level info).
//
// Thread safety: probe_cma() is a bootstrap collective (one thread per
//                process); cma_read() may run on any thread.
// Blocking:      probe_cma() blocks in two bootstrap barriers.
// Ownership:     nothing is kept; the probe word lives on probe_cma()'s
//                stack until the second barrier, after every read.
// Allocation:    none.
// Limits:        Linux only. A refusal is a result, never an exception.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "backends/shm/shm_segment.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "lci/bootstrap/locality.hpp"

namespace lci::backend::shm {

// Ordered from best to worst: the node's result is the worst of its ranks'.
enum class cma_status_t : std::int32_t {
  available = 1,              // every local rank read its peer's word
  refused = 2,                // a read failed or returned other bytes
  pid_namespace_differs = 3,  // a local peer's pid is not meaningful here
};

struct cma_probe_t {
  cma_status_t status = cma_status_t::refused;
  int error_number = 0;  // the failed read's errno when refused by the kernel
};

const char* get_cma_status_str(cma_status_t status);

// Copies size_bytes from address in process pid's memory to out; 0 on
// success, else the errno (a short read counts as EFAULT).
[[nodiscard]] int cma_read(pid_t pid, std::uint64_t address, void* out, std::size_t size_bytes);

// Collective over every rank of the bootstrap; segment is this node's
// (open_segment() with the same locality).
cma_probe_t probe_cma(shm::segment_t& segment, bootstrap::bootstrap_t& bootstrap,
                      const bootstrap::locality_t& locality);

}  // namespace lci::backend::shm
