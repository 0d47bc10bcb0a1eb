#include "sim/sim_process.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "backends/linked_backends.hpp"
#include "lci/runtime/process_host.hpp"
#include "lci/util/assert.hpp"
#include "sim/sim_world.hpp"

extern char** environ;

namespace lci::sim {

namespace {

bool env_set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

// The variables lci/bootstrap's open_bootstrap() detects a launcher by
// (docs/bootstrap.md).
bool started_by_launcher() {
  for (const char* name : {"LCI_BOOTSTRAP", "PMI_FD", "PMIX_RANK", "PMIX_NAMESPACE"}) {
    if (env_set(name)) return true;
  }
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "LCIRUN_", 7) == 0) return true;
  }
  return false;
}

bool simulator_forced() { return env_flag_on("LCI_SIM_FORCE"); }

bool real_network_compiled_in() { return !lci::backend::linked_backends().empty(); }

}  // namespace

bool process_mode() {
  static const bool mode =
      real_network_compiled_in() && !simulator_forced() && started_by_launcher();
  return mode;
}

process_job_t& process_job_t::get() {
  if (!process_mode()) {
    throw std::logic_error(
        "lci sim: process_job_t::get() outside process mode (no launcher, no real "
        "network backend compiled in, or LCI_SIM_FORCE set)");
  }
  // Created on first use (a throwing creation is tried again by the next
  // call); destroyed at exit, after main() returns.
  static process_job_t job;
  return job;
}

process_job_t::process_job_t()
    : bootstrap_(lci::detail::process_bootstrap()),  // opens the process host
      context_(lci::detail::process_host().net_context()) {
  LCI_ASSERT(context_.rank_me() == bootstrap_.rank_me(), "network and bootstrap ranks differ");
}

void process_job_t::allgather(const void* mine, std::size_t bytes, void* all) {
  if (bytes == 0) {
    bootstrap_.barrier();
    return;
  }
  LCI_ASSERT(mine != nullptr && all != nullptr, "allgather of bytes without buffers");
  const std::string key = "lci_sim_allgather" + std::to_string(allgathers_count_++);
  bootstrap_.put(key, mine, bytes);
  bootstrap_.fence();
  for (int r = 0; r < ranks_count(); ++r) {
    const std::vector<std::byte> value = bootstrap_.get(r, key);
    if (value.size() != bytes) {
      throw std::runtime_error("lci sim: allgather: rank " + std::to_string(r) + " gave " +
                               std::to_string(value.size()) + " bytes, not " +
                               std::to_string(bytes) + " (ranks made different calls)");
    }
    std::memcpy(static_cast<std::byte*>(all) + static_cast<std::size_t>(r) * bytes, value.data(),
                bytes);
  }
}

void process_job_t::fail(const std::string& name, const std::string& why) const {
  std::fflush(stdout);
  std::fprintf(stderr, "FAILED %s on rank %d: %s\n", name.c_str(), rank(), why.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace lci::sim
