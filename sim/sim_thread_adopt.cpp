// Threads a simulated rank starts itself (std::thread, pthread_create,
// OpenMP's workers) belong to that rank, in a program that links
// //sim:thread_adopt on purpose (liblci_sim and the harness do not): this
// file defines pthread_create, which the dynamic linker finds before libc's
// for every caller of the process (the executable, libstdc++, libgomp), and
// forwards to the real one. A thread started from a rank bound in
// concurrent mode starts bound to the same rank host (sim_rank_host.hpp),
// so LCI calls on it reach that rank's runtime and network, as they would
// in a real process of that rank. A thread started from a fiber
// (deterministic mode) is refused: every thread of a rank there must be a
// fiber of the one seeded scheduler. Threads started outside any rank (the
// harness, gtest, Boost) are not touched.
//
// Not built under a sanitizer (sim/BUILD): ThreadSanitizer and
// AddressSanitizer interpose pthread_create themselves, and theirs would
// find this one as the "real" function behind it, so thread starts would
// pass through both in an order neither expects. There, a rank's own
// threads stay unbound (their LCI calls fail with "no network for this
// thread"). Explicit binding, lci::sim::run_threads (rank_env_t::run_threads
// in the harness), works in every configuration and needs no interposition.
//
// Thread safety: pthread_create may be called from any thread at any time.
// Allocation:    one start record per adopted thread, freed by the thread.
#include <dlfcn.h>
#include <pthread.h>

#include <cerrno>
#include <cstdio>

#include "lci/util/assert.hpp"
#include "sim/sim_rank_host.hpp"
#include "sim/sim_scheduler.hpp"

namespace lci::sim {
namespace {

using pthread_create_t = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

pthread_create_t real_pthread_create() {
  // The next definition after this library's: libc's (or a preloaded
  // library's). Looked up once; dlsym itself never starts a thread.
  static const auto real = reinterpret_cast<pthread_create_t>(dlsym(RTLD_NEXT, "pthread_create"));
  LCI_ASSERT(real != nullptr, "dlsym(RTLD_NEXT, pthread_create) found no pthread_create");
  return real;
}

struct adopted_start_t {
  rank_host_t* host;
  void* (*start)(void*);
  void* arg;
};

void* run_adopted(void* record) {
  const adopted_start_t adopted = *static_cast<adopted_start_t*>(record);
  delete static_cast<adopted_start_t*>(record);
  rank_host_t::bind_current(adopted.host);
  return adopted.start(adopted.arg);
}

}  // namespace
}  // namespace lci::sim

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                              void* (*start)(void*), void* arg) {
  using namespace lci::sim;
  rank_host_t* host = rank_host_t::current();
  if (host == nullptr) return real_pthread_create()(thread, attr, start, arg);
  if (scheduler_t::current() != nullptr) {
    std::fprintf(stderr,
                 "lci sim: rank %d started an OS thread (std::thread, pthread_create, OpenMP) "
                 "in deterministic mode, where a rank's threads are fibers of one seeded "
                 "scheduler: start them with lci::sim::run_threads(n, body) (or "
                 "rank_env_t::run_threads), or run in concurrent mode (LCI_SIM_MODE=concurrent, "
                 "run_options_t::mode = world_mode_t::concurrent), where a rank's own threads "
                 "belong to it\n",
                 host->env().rank());
    return EPERM;
  }
  auto* record = new adopted_start_t{host, start, arg};
  const int error = real_pthread_create()(thread, attr, &run_adopted, record);
  if (error != 0) delete record;
  return error;
}
