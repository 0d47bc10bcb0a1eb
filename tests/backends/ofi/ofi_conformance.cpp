// The backend conformance suite over libfabric, as real processes. Started
// by tools/lcirun -n N (tests/backends/ofi/BUILD), each process is one rank;
// a test body runs once here, as this process's rank, on devices of the
// process's ofi context (provider: LCI_ATTR_OFI_PROVIDER_NAME, else the
// backend's default). Tests written for a rank count other than N are
// skipped (the sh_tests run N = 2, 3 and 4), and so is RmaProtectionFaults
// over shm, which does not check remote keys (docs/backends/ofi.md).
//
// The rank is this process (tests/backends/conformance/process_rank_ctx.hpp).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backends/ofi/ofi_context.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "tests/backends/conformance/conformance.hpp"
#include "tests/backends/conformance/process_rank_ctx.hpp"
#include "tests/backends/ofi/ofi_test_env.hpp"

namespace lci::conformance {
namespace {

process_t g_process;  // set up by main()
backend::ofi::ofi_context_t* g_ofi = nullptr;  // g_process.context, while it lives

std::string skip_reason(const std::string& test_name) {
  if (test_name == "RmaProtectionFaults" && g_ofi->provider_name() == "shm") {
    return "libfabric 1.17's shm provider writes and reads peer memory with "
           "process_vm_writev/readv without checking the remote key, so a bad key "
           "corrupts the victim instead of failing (docs/backends/ofi.md)";
  }
  return "";
}

std::string case_name_for(const std::string& provider) {
  std::string name = "ofi_" + (provider.empty() ? std::string("default") : provider);
  for (char& c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) c = '_';
  }
  return name;
}

std::vector<backend_case_t> ofi_cases() {
  return {process_case(case_name_for(provider_from_env()), g_process, skip_reason)};
}

INSTANTIATE_TEST_SUITE_P(Ofi, BackendConformance, ::testing::ValuesIn(ofi_cases()), case_name);

}  // namespace
}  // namespace lci::conformance

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  lci::conformance::process_t& process = lci::conformance::g_process;
  process.bootstrap = lci::bootstrap::open_bootstrap();
  auto context = std::make_unique<lci::backend::ofi::ofi_context_t>(
      *process.bootstrap, lci::conformance::provider_from_env());
  lci::conformance::g_ofi = context.get();
  process.context = std::move(context);
  std::printf("rank %d of %d: libfabric provider %s\n", process.context->rank_me(),
              process.context->rank_n(), lci::conformance::g_ofi->provider_name().c_str());
  return lci::conformance::run_all_then_close(process);
}
