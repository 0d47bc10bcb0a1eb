// Process mode of the multi-rank harness (sim_harness.hpp) and of
// run_program() (sim_program.hpp): the same test bodies and programs, run
// as real processes over a real network instead of on the simulated world.
//
// When: process_mode() is true when this process was started by a launcher
// (any LCIRUN_* variable, PMI_FD, PMIX_RANK or PMIX_NAMESPACE, or a
// non-empty LCI_BOOTSTRAP: the variables lci/bootstrap reads) AND the build
// has a real network backend (--config=ofi) AND LCI_SIM_FORCE is unset, empty
// or "0" (LCI_SIM_FORCE=1 keeps the simulator under a launcher).
//
// What then: run_ranks(n, ...) runs the body once, as this process's rank of
// the job, with a rank_env_t whose context() is this job's libfabric context
// (provider: LCI_ATTR_OFI_PROVIDER_NAME), barrier()/allgather() go through
// the bootstrap, wait() yields the CPU, run_threads() starts std::threads,
// deterministic() and simulated() are false; world() and crash() throw
// std::logic_error (sim-only: such tests skip themselves). A run whose n is
// not the job's size is skipped (run_report_t::skipped), so one binary
// serves `lcirun -n 2` and `lcirun -n 4`. Every rank must make the same
// run_ranks() calls in the same order (same binary, arguments and gtest
// filter); consecutive runs are separated by a bootstrap barrier. A body
// that throws prints "FAILED <run_options_t::name> on rank <r>: <what>" and
// ends the process at once (exit 1): its peers would otherwise wait for it
// in the next collective; the launcher then ends the job.
//
// Network: lci's process host (lci/runtime/process_host.hpp), the one a
// program with its own main() uses: the bodies' LCI runtimes find it
// through current_host() (in process mode the harness installs no host
// lookup), rank_env_t::context() is its network context, and the harness's
// collectives go through its bootstrap, the one connection a launcher
// gives a rank.
//
// Thread safety: process_mode() from any thread. process_job_t::get() from
//                any thread (the first call opens the process host).
//                barrier() and allgather() from one thread at a time, and not while
//                another thread of the rank allocates a device: both use the
//                bootstrap, which is not thread-safe.
// Blocking:      get() waits for every rank (network setup is collective);
//                barrier()/allgather() wait for every rank without
//                progressing this rank's runtimes: call them when no peer
//                operation needs this rank's progress (a get from it, a
//                delivery-complete put to it). A peer that never arrives is
//                ended by the launcher's timeout.
// Ownership:     the job lives until the process exits and owns nothing but
//                its count of allgathers; the process host owns the network
//                (process_host.hpp says what happens to it at exit).
// Allocation:    one bootstrap key per allgather.
#pragma once

#include <cstddef>
#include <string>

#include "backends/backend.hpp"
#include "lci/bootstrap/bootstrap.hpp"

namespace lci::sim {

// True when run_ranks()/run_program() run as this process's rank (above).
bool process_mode();

class process_job_t {
 public:
  // This process's job, created on first use; throws std::logic_error when
  // !process_mode(), std::runtime_error when the bootstrap or the network
  // cannot be opened (the message names what is missing).
  static process_job_t& get();
  process_job_t(const process_job_t&) = delete;
  process_job_t& operator=(const process_job_t&) = delete;

  int rank() const { return bootstrap_.rank_me(); }
  int ranks_count() const { return bootstrap_.rank_n(); }
  backend::net_context_t& context() { return context_; }
  // Out of band, through the bootstrap: all[r * bytes ...] gets rank r's
  // `mine`; bytes == 0 is a barrier.
  void allgather(const void* mine, std::size_t bytes, void* all);
  void barrier() { allgather(nullptr, 0, nullptr); }
  // Prints "FAILED <name> on rank <r>: <why>" and ends the process (exit 1).
  [[noreturn]] void fail(const std::string& name, const std::string& why) const;

 private:
  process_job_t();

  bootstrap::bootstrap_t& bootstrap_;  // the process host's
  backend::net_context_t& context_;    // the process host's network
  std::size_t allgathers_count_ = 0;   // names each allgather's bootstrap key
};

}  // namespace lci::sim
