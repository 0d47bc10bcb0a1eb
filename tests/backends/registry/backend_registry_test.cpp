// registry_t with fake backends: choice by name and by priority, the
// errors when none or an unknown one is asked for, and the list this
// build links in.
#include "backends/backend_registry.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "backends/backend.hpp"
#include "backends/linked_backends.hpp"
#include "lci/bootstrap/bootstrap.hpp"

namespace lci::backend {
namespace {

// A context that only says which backend made it.
class named_context_t final : public net_context_t {
 public:
  explicit named_context_t(int rank) : rank_(rank) {}
  int rank_me() const override { return rank_; }
  int rank_n() const override { return 100; }
  std::unique_ptr<net_device_t> alloc_device(const net_device_attr_t&) override {
    return nullptr;
  }
  bool supports_put_imm() const override { return false; }

 private:
  int rank_;
};

// Fakes tell themselves apart by the rank they report.
std::unique_ptr<net_context_t> open_first(const net_context_args_t&) {
  return std::make_unique<named_context_t>(1);
}
std::unique_ptr<net_context_t> open_second(const net_context_args_t&) {
  return std::make_unique<named_context_t>(2);
}
std::unique_ptr<net_context_t> open_failing(const net_context_args_t&) {
  throw std::runtime_error("no device here");
}

class BackendRegistry : public ::testing::Test {
 protected:
  std::unique_ptr<bootstrap::bootstrap_t> bootstrap_ =
      bootstrap::open_bootstrap(bootstrap::bootstrap_kind_t::local);
  net_context_args_t args() { return net_context_args_t{bootstrap_.get(), "", ""}; }
};

std::string error_of_open(const registry_t& registry, const std::string& name,
                          const net_context_args_t& args) {
  try {
    (void)registry.open(name, args);
  } catch (const std::runtime_error& error) {
    return error.what();
  }
  ADD_FAILURE() << "open(\"" << name << "\") did not throw";
  return "";
}

TEST_F(BackendRegistry, EmptySaysThereIsNoNetwork) {
  const registry_t registry;
  EXPECT_TRUE(registry.empty());
  EXPECT_EQ(registry.names(), "none");
  for (const char* name : {"", "ofi"}) {
    const std::string error = error_of_open(registry, name, args());
    EXPECT_EQ(error.rfind("lci: no network for this process: run the program under the simulator",
                          0),
              0u)
        << error;
    EXPECT_NE(error.find("--config=ofi"), std::string::npos) << error;
  }
}

TEST_F(BackendRegistry, UnnamedTakesTheHighestPriority) {
  registry_t registry;
  registry.add({"low", 1, &open_first});
  registry.add({"high", 5, &open_second});
  EXPECT_EQ(registry.names(), "high, low");
  EXPECT_EQ(registry.open("", args())->rank_me(), 2);
  EXPECT_EQ(registry.open("low", args())->rank_me(), 1);
}

TEST_F(BackendRegistry, EqualPrioritiesKeepTheirOrder) {
  registry_t registry;
  registry.add({"a", 3, &open_first});
  registry.add({"b", 3, &open_second});
  EXPECT_EQ(registry.names(), "a, b");
  EXPECT_EQ(registry.open("", args())->rank_me(), 1);
}

TEST_F(BackendRegistry, UnknownNameIsRefusedListingTheBackends) {
  registry_t registry;
  registry.add({"fake", 1, &open_first});
  const std::string error = error_of_open(registry, "ibv", args());
  EXPECT_EQ(error.rfind("lci: no network for this process: backend \"ibv\"", 0), 0u) << error;
  EXPECT_NE(error.find("(it has: fake)"), std::string::npos) << error;
}

TEST_F(BackendRegistry, UnnamedFallsBackToTheNextThatOpens) {
  registry_t registry;
  registry.add({"broken", 9, &open_failing});
  registry.add({"fake", 1, &open_first});
  EXPECT_EQ(registry.open("", args())->rank_me(), 1);
}

TEST_F(BackendRegistry, AloneItsOwnErrorComesThrough) {
  registry_t registry;
  registry.add({"broken", 9, &open_failing});
  EXPECT_EQ(error_of_open(registry, "", args()), "no device here");
  EXPECT_EQ(error_of_open(registry, "broken", args()), "no device here");
}

TEST_F(BackendRegistry, NoneOpensListsEveryFailure) {
  registry_t registry;
  registry.add({"one", 2, &open_failing});
  registry.add({"two", 1, &open_failing});
  const std::string error = error_of_open(registry, "", args());
  EXPECT_EQ(error.rfind("lci: no network for this process: no backend of this build opened", 0),
            0u)
      << error;
  EXPECT_NE(error.find("one: no device here; two: no device here"), std::string::npos) << error;
}

TEST_F(BackendRegistry, BadEntriesAreRefused) {
  registry_t registry;
  registry.add({"fake", 1, &open_first});
  EXPECT_THROW(registry.add({"fake", 2, &open_second}), std::logic_error);
  EXPECT_THROW(registry.add({"", 2, &open_second}), std::logic_error);
  EXPECT_THROW(registry.add({nullptr, 2, &open_second}), std::logic_error);
  EXPECT_THROW(registry.add({"other", 2, nullptr}), std::logic_error);
  EXPECT_EQ(registry.names(), "fake");
}

// The list follows the build: ofi with --config=ofi, ibv with --config=ibv
// (first: the higher priority), nothing by default.
TEST(LinkedBackends, HoldTheBackendsOfThisBuild) {
  const registry_t& linked = linked_backends();
  EXPECT_EQ(&linked, &linked_backends());
  std::string expected;
#if defined(LCI_TEST_EXPECT_IBV)
  expected = "ibv";
#endif
#if defined(LCI_TEST_EXPECT_OFI)
  expected += expected.empty() ? "ofi" : ", ofi";
#endif
  EXPECT_EQ(linked.names(), expected.empty() ? "none" : expected);
}

}  // namespace
}  // namespace lci::backend
