// LCI_PROPERTY(suite, name, property): a gtest that runs a RapidCheck
// property (usually rc::state::check of random operation sequences against a
// sequential model; RapidCheck shrinks a failure to a minimal sequence).
//
// In a normal build the test passes when the property holds. In a
// broken-variant build (LCI_PROPERTY_EXPECT_FAILURE, see rapidcheck.bzl) it
// passes only when RapidCheck reports a counterexample: the property is shown
// able to catch the defect named by LCI_MUTATION.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "lci/util/mutation.hpp"

namespace lci::property {

#if defined(LCI_PROPERTY_EXPECT_FAILURE)
inline constexpr bool expect_failure = true;
#else
inline constexpr bool expect_failure = false;
#endif

template <typename Property>
void expect_property(const char* description, Property&& property) {
  const bool holds = rc::check(description, std::forward<Property>(property));
  if (expect_failure) {
    EXPECT_FALSE(holds) << "broken variant '" << util::active_mutation
                        << "' was not caught by: " << description;
  } else {
    EXPECT_TRUE(holds) << description;
  }
}

}  // namespace lci::property

#define LCI_PROPERTY(suite, name, description, ...) \
  TEST(suite, name) { ::lci::property::expect_property(description, __VA_ARGS__); }
