// The backends' constructors, called by open_bootstrap() (bootstrap.cpp)
// once it has read and checked the environment. Each returns a ready
// bootstrap_t or throws std::runtime_error saying which step failed.
//
// Thread safety: call from one thread.
// Blocking:      the PMI, PMIx and lcirun constructors wait for their
//                launcher's handshake.
// Ownership:     the channel and the descriptor in pmi_env_t pass to the
//                returned object, which closes them.
// Allocation:    the returned object and its client state.
#pragma once

#include <memory>
#include <string>

#include "lci/bootstrap/bootstrap.hpp"
#include "lci/bootstrap/detail/wire.hpp"

namespace lci::bootstrap::detail {

// What a PMI launcher put in the environment; -1 / empty when unset.
struct pmi_env_t {
  int fd = -1;        // PMI_FD: the connected socket to the PMI server
  int rank = -1;      // PMI_RANK
  int size = -1;      // PMI_SIZE
  int id = -1;        // PMI_ID (some servers name a process by it)
  std::string jobid;  // PMI_JOBID (set by PMI-2 servers such as Slurm's)
};

// What tools/lcirun put in the environment (all four are required).
struct lcirun_env_t {
  std::string address;  // LCIRUN_ADDR: "<IPv4>:<port>" of the launcher
  int rank = -1;        // LCIRUN_RANK
  int size = -1;        // LCIRUN_SIZE
  std::string job;      // LCIRUN_JOB: token the launcher checks at init
};

std::unique_ptr<bootstrap_t> open_local();
std::unique_ptr<bootstrap_t> open_pmi1(const pmi_env_t& env);
// The PMI-1 client on a channel whose server may already have refused a
// PMI-2 init on it.
std::unique_ptr<bootstrap_t> open_pmi1_on(std::unique_ptr<fd_channel_t> channel,
                                          const pmi_env_t& env);
// If the server refuses PMI-2 and fallback_to_pmi1 is set, continues with
// PMI-1 on the same socket; otherwise that refusal is an error.
std::unique_ptr<bootstrap_t> open_pmi2(const pmi_env_t& env,
                                       bool fallback_to_pmi1);
std::unique_ptr<bootstrap_t> open_lcirun(const lcirun_env_t& env);
// Defined only with --config=pmix (bootstrap_pmix.cpp).
std::unique_ptr<bootstrap_t> open_pmix();

}  // namespace lci::bootstrap::detail
