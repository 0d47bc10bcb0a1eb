// lci/api/attr_env: every accepted spelling of each attribute type, and the
// refusals (with the variable and the value in the message).
#include "lci/api/attr_env.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

namespace {

using lci::detail::read_attr_env;

constexpr const char* variable = "LCI_ATTR_ATTR_ENV_TEST";

class AttrEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(unsetenv(variable), 0); }
  void TearDown() override { ASSERT_EQ(unsetenv(variable), 0); }
  static void set(const char* value) { ASSERT_EQ(setenv(variable, value, 1), 0); }
};

// Reads `value` into a T that starts as `initial`; the message of a refusal
// must be exactly `LCI_ATTR_ATTR_ENV_TEST="<value>": <reason>`, and the
// attribute must be left unchanged.
template <typename T>
void expect_refused(const char* value, T initial, const std::string& reason) {
  ASSERT_EQ(setenv(variable, value, 1), 0);
  T out = initial;
  try {
    read_attr_env(variable, &out);
    ADD_FAILURE() << "accepted \"" << value << "\"";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()),
              std::string(variable) + "=\"" + value + "\": " + reason);
  }
  EXPECT_EQ(out, initial) << "a refused value changed the attribute";
}

template <typename T>
T read(const char* value, T initial) {
  EXPECT_EQ(setenv(variable, value, 1), 0);
  T out = initial;
  EXPECT_TRUE(read_attr_env(variable, &out)) << value;
  return out;
}

TEST_F(AttrEnvTest, UnsetLeavesTheAttribute) {
  std::size_t size = 5;
  int number = -3;
  bool flag = true;
  std::string text = "kept";
  const char* pointer = "kept";
  EXPECT_FALSE(read_attr_env(variable, &size));
  EXPECT_FALSE(read_attr_env(variable, &number));
  EXPECT_FALSE(read_attr_env(variable, &flag));
  EXPECT_FALSE(read_attr_env(variable, &text));
  EXPECT_FALSE(read_attr_env(variable, &pointer));
  EXPECT_EQ(size, 5u);
  EXPECT_EQ(number, -3);
  EXPECT_TRUE(flag);
  EXPECT_EQ(text, "kept");
  EXPECT_STREQ(pointer, "kept");
}

TEST_F(AttrEnvTest, UnsignedSpellings) {
  EXPECT_EQ(read<std::size_t>("0", 9), 0u);
  EXPECT_EQ(read<std::size_t>("1024", 0), 1024u);
  EXPECT_EQ(read<std::size_t>("4k", 0), 4096u);
  EXPECT_EQ(read<std::size_t>("4K", 0), 4096u);
  EXPECT_EQ(read<std::size_t>("3m", 0), 3u << 20);
  EXPECT_EQ(read<std::size_t>("2G", 0), std::size_t{2} << 30);
  EXPECT_EQ(read<std::uint64_t>("0x1F", 0), 31u);
  EXPECT_EQ(read<std::uint64_t>("0X10k", 0), 16u * 1024u);
  EXPECT_EQ(read<std::uint64_t>("18446744073709551615", 0),
            std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(read<unsigned long long>("7", 0), 7u);
}

TEST_F(AttrEnvTest, UnsignedRefusals) {
  expect_refused<std::size_t>("", 5, "not an unsigned integer");
  expect_refused<std::size_t>("abc", 5, "not an unsigned integer");
  expect_refused<std::size_t>("-1", 5, "not an unsigned integer");
  expect_refused<std::size_t>("+1", 5, "not an unsigned integer");
  expect_refused<std::size_t>(" 1", 5, "not an unsigned integer");
  expect_refused<std::size_t>("1 ", 5, "not an unsigned integer");
  expect_refused<std::size_t>("1kb", 5, "not an unsigned integer");
  expect_refused<std::size_t>("0x", 5, "not an unsigned integer");
  expect_refused<std::size_t>("0xg", 5, "not an unsigned integer");
  expect_refused<std::size_t>("12a", 5, "not an unsigned integer");
  expect_refused<std::uint64_t>("18446744073709551616", 5, "out of range");
  expect_refused<std::uint64_t>("17179869184g", 5, "out of range");
}

TEST_F(AttrEnvTest, IntSpellingsAndRefusals) {
  EXPECT_EQ(read<int>("42", 0), 42);
  EXPECT_EQ(read<int>("-1", 0), -1);
  EXPECT_EQ(read<int>("+7", 0), 7);
  EXPECT_EQ(read<int>("2147483647", 0), std::numeric_limits<int>::max());
  EXPECT_EQ(read<int>("-2147483648", 0), std::numeric_limits<int>::min());
  expect_refused<int>("", 3, "not an integer");
  expect_refused<int>(" 1", 3, "not an integer");
  expect_refused<int>("1.5", 3, "not an integer");
  expect_refused<int>("ten", 3, "not an integer");
  expect_refused<int>("2147483648", 3, "out of range");
  expect_refused<int>("-2147483649", 3, "out of range");
  expect_refused<int>("99999999999999999999999", 3, "out of range");
}

TEST_F(AttrEnvTest, DoubleSpellingsAndRefusals) {
  EXPECT_EQ(read<double>("0.25", 0), 0.25);
  EXPECT_EQ(read<double>("1e3", 0), 1000.0);
  EXPECT_EQ(read<double>("-2", 0), -2.0);
  expect_refused<double>("", 1.0, "not a number");
  expect_refused<double>("fast", 1.0, "not a number");
  expect_refused<double>("0.5x", 1.0, "not a number");
  expect_refused<double>(" 0.5", 1.0, "not a number");
  expect_refused<double>("inf", 1.0, "not a finite number");
  expect_refused<double>("nan", 1.0, "not a finite number");
  expect_refused<double>("1e999", 1.0, "out of range");
}

TEST_F(AttrEnvTest, BoolSpellingsAndRefusals) {
  for (const char* yes : {"1", "true", "TRUE", "True", "on", "ON"}) {
    EXPECT_TRUE(read<bool>(yes, false)) << yes;
  }
  for (const char* no : {"0", "false", "FALSE", "off", "Off"}) {
    EXPECT_FALSE(read<bool>(no, true)) << no;
  }
  const std::string reason = "not a boolean (0/1, true/false, on/off)";
  expect_refused<bool>("", true, reason);
  expect_refused<bool>("yes", true, reason);
  expect_refused<bool>("2", true, reason);
  expect_refused<bool>("truee", true, reason);
}

TEST_F(AttrEnvTest, StringsAreTakenAsIs) {
  EXPECT_EQ(read<std::string>("  spaced out  ", "x"), "  spaced out  ");
  EXPECT_EQ(read<std::string>("", "x"), "");
  const char* pointer = read<const char*>("verbs;ofi_rxm", nullptr);
  EXPECT_STREQ(pointer, "verbs;ofi_rxm");
  EXPECT_EQ(pointer, std::getenv(variable));
}

enum class color_t : int { red, green, blue };
constexpr const char* color_value_names[] = {"red", "green", "blue"};
constexpr lci::detail::enum_names_t color_names =
    lci::detail::make_enum_names(color_value_names);

TEST_F(AttrEnvTest, EnumsByName) {
  EXPECT_EQ(color_names.count, 3u);
  EXPECT_STREQ(lci::detail::enum_name(color_names, 1), "green");
  EXPECT_STREQ(lci::detail::enum_name(color_names, 3), "invalid");
  EXPECT_STREQ(lci::detail::enum_name(color_names, -1), "invalid");

  set("BLUE");
  color_t color = color_t::red;
  EXPECT_TRUE(read_attr_env(variable, color_names, &color));
  EXPECT_EQ(color, color_t::blue);

  set("purple");
  try {
    read_attr_env(variable, color_names, &color);
    ADD_FAILURE() << "accepted purple";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "LCI_ATTR_ATTR_ENV_TEST=\"purple\": not one of red, green, blue");
  }
  EXPECT_EQ(color, color_t::blue);

  ASSERT_EQ(unsetenv(variable), 0);
  EXPECT_FALSE(read_attr_env(variable, color_names, &color));
  EXPECT_EQ(color, color_t::blue);
}

// A table ends at its count, whatever lies past it: here the first two
// names of three, so a lookup that went one past would find "blue".
TEST_F(AttrEnvTest, AnEnumTableEndsAtItsCount) {
  const lci::detail::enum_names_t two{color_value_names, 2};
  EXPECT_STREQ(lci::detail::enum_name(two, 1), "green");
  EXPECT_STREQ(lci::detail::enum_name(two, 2), "invalid");
  int index = -1;
  EXPECT_FALSE(lci::detail::enum_index(two, "blue", &index));
  EXPECT_EQ(index, -1);
  set("blue");
  try {
    lci::detail::read_attr_env_enum_index(variable, two, &index);
    ADD_FAILURE() << "accepted blue";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "LCI_ATTR_ATTR_ENV_TEST=\"blue\": not one of red, green");
  }
}

}  // namespace
