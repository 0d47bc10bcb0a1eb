// bootstrap_t: how the processes of one job find each other before any
// network exists: this process's rank, the rank count, an exchange of small
// key-value blobs (network addresses) with a fence, and a barrier.
//
// Backends (one object per process, chosen by open_bootstrap()):
//   local   no launcher: rank 0 of 1, the exchange is in-process.
//   pmix    a PMIx server (mpirun.openmpi, srun --mpi=pmix); needs libpmix,
//           compiled in only with --config=pmix.
//   pmi1    the PMI-1 wire protocol on the socket PMI_FD (mpiexec.hydra).
//   pmi2    the PMI-2 wire protocol on PMI_FD (srun --mpi=pmi2, or hydra
//           when asked for with LCI_BOOTSTRAP=pmi2).
//   lcirun  the project's launcher tools/lcirun (its own line protocol over
//           loopback TCP).
// Environment variables and wire formats: docs/bootstrap.md.
//
// Thread safety: none. One thread at a time calls the methods of one object
//                (bootstrap happens once, at initialization).
// Blocking:      fence(), barrier() wait for every rank; put() and get() wait
//                for the launcher's reply. A launcher that never answers
//                blocks the caller (launchers bring their own timeouts:
//                tools/lcirun --timeout, `timeout`, the batch system).
// Ownership:     put() copies the value; get() returns a copy.
// Allocation:    at open, and per put/get (strings, the returned vector).
// Limits:        keys: 1..key_length_max characters of [A-Za-z0-9_];
//                values: 0..value_size_bytes_max bytes of binary data.
//                Violations throw std::invalid_argument; launcher and
//                protocol failures throw std::runtime_error.
//
// Exchange contract: a value put before a fence (by every rank) can be read
// by any rank with get() after that fence. Whether it can be read before is
// backend-specific (local and lcirun: never), so portable code fences first.
// fence() and barrier() are collectives: every rank calls them in the same
// order. Unchecked precondition: a rank puts each key at most once (servers
// differ on what a second put of a key does).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace lci::bootstrap {

enum class bootstrap_kind_t { local, pmix, pmi1, pmi2, lcirun };

inline constexpr std::size_t key_length_max = 64;
inline constexpr std::size_t value_size_bytes_max = 1024;

class bootstrap_t {
 public:
  virtual ~bootstrap_t();  // finalizes the underlying client; never throws
  virtual bootstrap_kind_t kind() const = 0;
  virtual int rank_me() const = 0;
  virtual int rank_n() const = 0;
  // Publishes this rank's value under key; see Limits above.
  virtual void put(const std::string& key, const void* value,
                   std::size_t size) = 0;
  // Collective: every put before it is visible to every get after it.
  virtual void fence() = 0;
  // The value `rank` put under key before the last fence; throws
  // std::runtime_error naming key and rank if there is none.
  virtual std::vector<std::byte> get(int rank, const std::string& key) = 0;
  virtual void barrier() = 0;  // collective
};

// Auto-detects the backend from the environment (first match wins):
//   LCI_BOOTSTRAP=local|pmix|pmi1|pmi2|lcirun   that backend;
//   any LCIRUN_* variable                       lcirun;
//   PMIX_RANK or PMIX_NAMESPACE                 pmix;
//   PMI_FD                                      pmi2 if PMI_VERSION=2 or
//                                               PMI_JOBID is set and the
//                                               server accepts PMI-2 (else
//                                               pmi1), otherwise pmi1;
//   nothing                                     local.
// Throws std::runtime_error naming the variables when the environment is
// inconsistent: PMIX_* set without PMIx compiled in, PMI_RANK (PMI_SIZE,
// PMI_ID, PMI_PORT) without PMI_FD, LCI_BOOTSTRAP naming an unknown or
// unavailable backend, a partial lcirun environment, a variable that does
// not parse.
std::unique_ptr<bootstrap_t> open_bootstrap();
// Opens exactly `kind` (no PMI-2 -> PMI-1 fallback); throws like the above
// when the environment does not provide it.
std::unique_ptr<bootstrap_t> open_bootstrap(bootstrap_kind_t kind);

const char* get_bootstrap_kind_str(bootstrap_kind_t kind);

// Argument checks every backend applies before it talks to its launcher;
// each throws std::invalid_argument saying what is wrong.
void check_key(const std::string& key);
void check_value_size(std::size_t size_bytes);
void check_rank(int rank, int rank_n);

}  // namespace lci::bootstrap
