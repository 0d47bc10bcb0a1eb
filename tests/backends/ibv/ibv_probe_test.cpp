#include "backends/ibv/ibv_probe.hpp"

#include <gtest/gtest.h>

namespace {

// Either devices are listed, or none are and the reason is stated: a machine
// without RDMA must produce a clear error, never a crash.
TEST(IbvProbe, ListsDevicesOrExplainsWhyNot) {
  const auto result = lci::backends::ibv::probe();
  if (result.devices.empty()) {
    EXPECT_FALSE(result.error.empty());
  } else {
    EXPECT_TRUE(result.error.empty()) << result.error;
    for (const auto& name : result.devices) EXPECT_FALSE(name.empty());
  }
}

}  // namespace
