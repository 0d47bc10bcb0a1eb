#include "sim/sim_process.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backends/linked_backends.hpp"
#include "lci/runtime/process_host.hpp"
#include "lci/runtime/host.hpp"
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

// The host of every runtime a body creates in process mode (every thread
// of the process belongs to it); set before the lookup is installed.
lci::detail::host_t* g_job_host = nullptr;

lci::detail::host_t* job_host_lookup() { return g_job_host; }

}  // namespace

bool process_mode() {
  static const bool mode =
      real_network_compiled_in() && !simulator_forced() && started_by_launcher();
  return mode;
}

void run_os_threads(int threads_count, const std::function<void(int)>& body) {
  LCI_ASSERT(threads_count >= 1, "run_threads needs a thread");
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads_count));
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&body, &errors, t] {
      try {
        body(t);
      } catch (...) {
        errors[static_cast<std::size_t>(t)] = std::current_exception();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
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
    : bootstrap_(bootstrap::open_bootstrap()),
      context_(lci::detail::open_real_network(*bootstrap_)),
      host_(std::make_unique<lci::detail::real_process_host_t>(*context_)) {
  LCI_ASSERT(context_->rank_me() == bootstrap_->rank_me(), "network and bootstrap ranks differ");
  g_job_host = host_.get();
  lci::detail::set_host_lookup(&job_host_lookup);
}

process_job_t::~process_job_t() {
  lci::detail::set_host_lookup(nullptr);
  g_job_host = nullptr;
}

void process_job_t::allgather(const void* mine, std::size_t bytes, void* all) {
  if (bytes == 0) {
    bootstrap_->barrier();
    return;
  }
  LCI_ASSERT(mine != nullptr && all != nullptr, "allgather of bytes without buffers");
  const std::string key = "lci_sim_allgather" + std::to_string(allgathers_count_++);
  bootstrap_->put(key, mine, bytes);
  bootstrap_->fence();
  for (int r = 0; r < ranks_count(); ++r) {
    const std::vector<std::byte> value = bootstrap_->get(r, key);
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
