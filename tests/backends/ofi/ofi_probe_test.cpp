#include "backends/ofi/ofi_probe.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

// The project needs libfabric >= 1.17 and runs its multi-process tests over
// the shm provider, which every supported machine has.
TEST(OfiProbe, FindsLibfabricAndShmProvider) {
  const auto result = lci::backend::ofi::probe();
  EXPECT_GE(result.version_major * 100 + result.version_minor, 117u);
  ASSERT_TRUE(result.error.empty()) << result.error;
  EXPECT_NE(std::find(result.providers.begin(), result.providers.end(), "shm"),
            result.providers.end());
}

}  // namespace
