#include "backends/ibv/ibv_probe.hpp"

#include <gtest/gtest.h>

#include <string>

#include "backends/ibv_emu/ibv_emu_fabric.hpp"

namespace {

// Either devices are listed, or none are and the reason is stated: a machine
// without RDMA must produce a clear error, never a crash.
TEST(IbvProbe, ListsDevicesOrExplainsWhyNot) {
  const auto result = lci::backend::ibv::probe();
  if (result.devices.empty()) {
    EXPECT_FALSE(result.error.empty());
  } else {
    EXPECT_TRUE(result.error.empty()) << result.error;
    for (const auto& name : result.devices) EXPECT_FALSE(name.empty());
  }
}

// Over a verbs table with devices (the emulated fabric: one device per
// HCA table), each listed device is named, and nothing past the list.
TEST(IbvProbe, NamesEveryListedDevice) {
  lci::backend::ibv_emu::emu_options_t emu;
  emu.hcas_count = 2;
  lci::backend::ibv_emu::emu_fabric_t fabric(emu);
  for (int hca = 0; hca < emu.hcas_count; ++hca) {
    const auto result = lci::backend::ibv::probe(fabric.verbs(hca));
    EXPECT_TRUE(result.error.empty()) << result.error;
    ASSERT_EQ(result.devices.size(), 1u);
    EXPECT_EQ(result.devices[0], "emu" + std::to_string(hca));
  }
}

}  // namespace
