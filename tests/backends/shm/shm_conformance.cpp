// The backend conformance suite over the shm device, as real processes.
// Started by tools/lcirun -n N (tests/backends/shm/BUILD), each process is
// one rank (tests/backends/conformance/process_rank_ctx.hpp) of a
// shm_context_t (every rank on this node), or with the argument "route" of
// the network a process opens, open_process_network() with shm enabled:
// shared memory for the ranks of a node, this build's backend for the
// others (LCI_LOCALITY_RANKS_PER_NODE makes both carry traffic). Skipped:
// tests written for another rank count; the protection-fault test, since
// cross-memory attach writes wherever a key points (the device says
// bad_rkey_fails_alone = false); and, on a shm_context_t, the RMA tests
// where the node refuses CMA.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backends/linked_backends.hpp"
#include "backends/shm/shm_device.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "lci/bootstrap/locality.hpp"
#include "tests/backends/conformance/conformance.hpp"
#include "tests/backends/conformance/process_rank_ctx.hpp"

namespace lci::conformance {
namespace {

process_t g_process;  // set up by main()
// g_process.context while it lives, unless routed.
backend::shm::shm_context_t* g_shm = nullptr;

std::string skip_reason(const std::string& test_name) {
  if (test_name == "RmaProtectionFaults") {
    return "cross-memory attach cannot tell a stale key: the runtime checks RMA at the target "
           "(bad_rkey_fails_alone = false, docs/backends/shm.md)";
  }
  const bool rma = test_name == "PutAndPutImm" || test_name == "InjectPutsAndPutImms" ||
                   test_name == "ZeroBytePuts" || test_name == "Get";
  if (rma && g_shm != nullptr && !g_shm->cma_available()) {
    return "cross-memory attach is refused on this node";
  }
  return "";
}

std::vector<backend_case_t> shm_cases() { return {process_case("shm", g_process, skip_reason)}; }

INSTANTIATE_TEST_SUITE_P(Shm, BackendConformance, ::testing::ValuesIn(shm_cases()), case_name);

}  // namespace
}  // namespace lci::conformance

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  lci::conformance::process_t& process = lci::conformance::g_process;
  process.bootstrap = lci::bootstrap::open_bootstrap();
  if (argc > 1 && std::string(argv[1]) == "route") {
    lci::backend::net_context_args_t args;
    args.bootstrap = process.bootstrap.get();
    process.context = lci::backend::open_process_network("", args, /*shm_enable=*/true);
    std::printf("rank %d of %d: routed\n", process.context->rank_me(), process.context->rank_n());
  } else {
    const lci::bootstrap::locality_t locality =
        lci::bootstrap::exchange_locality(*process.bootstrap);
    auto context = std::make_unique<lci::backend::shm::shm_context_t>(*process.bootstrap, locality);
    lci::conformance::g_shm = context.get();
    process.context = std::move(context);
    std::printf("rank %d of %d: cma %s\n", process.context->rank_me(), process.context->rank_n(),
                lci::conformance::g_shm->cma_available() ? "available" : "refused");
  }
  return lci::conformance::run_all_then_close(process);
}
