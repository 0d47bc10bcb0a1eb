// The backend conformance suite: written once against backends/backend.hpp
// (net_context_t / net_device_t) and nothing else, run by each backend's test
// binary with a backend_case_t that knows how to start N ranks.
//
//   INSTANTIATE_TEST_SUITE_P(Sim, BackendConformance,
//                            ::testing::ValuesIn(my_cases()),
//                            lci::conformance::case_name);
//
// A body runs once per rank. Checks inside a body throw
// conformance_failure_t (a std::runtime_error naming file, line and values);
// the backend_case_t's run() turns any throw into its failure report, which
// the test prints (with the seed and replay line where the backend has one).
//
// Thread safety: a rank_ctx_t is its rank's: wait() from any of its threads,
//                barrier()/allgather() from one thread at a time.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/backend.hpp"

namespace lci::conformance {

class conformance_failure_t : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One rank of a multi-rank run, as the suite sees it.
class rank_ctx_t {
 public:
  virtual ~rank_ctx_t() = default;
  virtual backend::net_context_t& context() = 0;
  // Called in every spin loop (a scheduling point for simulated backends).
  virtual void wait(const char* what) = 0;
  virtual void barrier() = 0;
  // Out of band: all[r * bytes ...] receives rank r's `mine` (bytes <= 64).
  virtual void allgather(const void* mine, std::size_t bytes, void* all) = 0;
  // Runs body(0..threads_count-1) concurrently inside this rank; joins them.
  virtual void run_threads(int threads_count, const std::function<void(int)>& body) = 0;
  // Progress hooks: an endpoint_t registers its poll() while it lives. A
  // harness whose barrier()/allgather() block (a real process waiting on
  // its launcher) calls them while it waits, since with manual progress a
  // peer's get or put to this rank completes only while this rank polls.
  // Harnesses whose collectives poll anyway (the simulator) ignore them.
  virtual void add_poller(const void* owner, std::function<void()> poll) {
    (void)owner;
    (void)poll;
  }
  virtual void remove_poller(const void* owner) { (void)owner; }
  // Ends this rank as a crash would (nothing closed, no goodbye); does not
  // return. Only called when the backend_case_t says can_crash.
  [[noreturn]] virtual void crash() {
    throw conformance_failure_t("this harness cannot crash a rank");
  }
};

using rank_body_t = std::function<void(rank_ctx_t&)>;

struct backend_case_t {
  std::string name;  // a gtest parameter name: [A-Za-z0-9_]
  // Runs body on ranks_count ranks; returns "" if every rank finished, else
  // the failure report.
  std::function<std::string(int ranks_count, const rank_body_t& body)> run;
  // Optional: why this backend skips a test ("" or unset: it runs it), asked
  // with the test's name (e.g. "PutAndPutImm") and rank count before run().
  // A real-process backend runs only the tests written for as many ranks as
  // its launcher started; a provider may lack what one test checks.
  std::function<std::string(const std::string& test_name, int ranks_count)> skip_reason;
  // Whether rank_ctx_t::crash() works (tests of dead peers are skipped
  // otherwise).
  bool can_crash = false;
};

inline std::string case_name(const ::testing::TestParamInfo<backend_case_t>& info) {
  return info.param.name;
}

class BackendConformance : public ::testing::TestWithParam<backend_case_t> {};

}  // namespace lci::conformance

// Throws conformance_failure_t unless `condition`; streams `message` parts.
#define LCI_CONFORM(condition, message)                                        \
  do {                                                                         \
    if (!(condition)) {                                                        \
      std::ostringstream lci_conform_text;                                     \
      lci_conform_text << __FILE__ << ":" << __LINE__ << ": " #condition ": "  \
                       << message;                                             \
      throw ::lci::conformance::conformance_failure_t(lci_conform_text.str()); \
    }                                                                          \
  } while (0)
