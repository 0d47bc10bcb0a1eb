#include "lci/bootstrap/bootstrap_pmix_probe.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace {

TEST(PmixProbe, ReportsLibraryVersion) {
  const std::string version = lci::bootstrap::pmix_library_version();
  EXPECT_NE(version.find("PMIx"), std::string::npos) << version;
}

TEST(PmixProbe, LaunchedFollowsTheEnvironment) {
  ::unsetenv("PMIX_NAMESPACE");
  EXPECT_FALSE(lci::bootstrap::pmix_launched());
  ::setenv("PMIX_NAMESPACE", "test-namespace", 1);
  EXPECT_TRUE(lci::bootstrap::pmix_launched());
  ::unsetenv("PMIX_NAMESPACE");
}

}  // namespace
