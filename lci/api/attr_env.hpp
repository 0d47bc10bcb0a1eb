// attr_env: reads resource attributes from LCI_ATTR_<NAME> environment
// variables, one function per attribute type, for the default-attribute
// getters generated from the API description (lci_generated_attr.cpp); the
// text of a value for the generated refusals; and the name tables behind
// the generated enums' get_*_str / parse_*.
//
// Accepted values (anything else is refused; no surrounding blanks):
//   unsigned (size_t, uint64_t)  decimal or 0x-prefixed hex, then an optional
//                                k/m/g suffix (x 2^10, 2^20, 2^30), no sign
//   int                          decimal, optional sign
//   double                       a finite number as strtod reads it (in the
//                                C locale's notation unless the program
//                                changed LC_NUMERIC)
//   bool                         0/1, true/false, on/off (any case)
//   std::string                  the value as is (may be empty)
//   const char*                  the pointer getenv returns
//   enum                         a value's name (any case)
// An unset variable leaves the attribute unchanged (the call returns false).
// Values installed by set_attr_global_values (upstream's
// set_g_default_attr, lci/runtime/global_attr.hpp) stand in for the
// environment's, except for const char* attributes, which read the
// environment only.
// A malformed value throws std::invalid_argument whose message names the
// variable and the value, e.g.
//   LCI_ATTR_NET_MAX_SENDS="abc": not an unsigned integer
// and leaves the attribute unchanged.
//
// Thread safety: reentrant, but getenv must not race with setenv, putenv or
//                unsetenv anywhere in the process (POSIX): change the
//                environment before allocating resources.
// Blocking:      never (a short lock guards the global values).
// Ownership:     a const char* attribute points into the environment and is
//                valid until that variable is changed or removed.
// Allocation:    only the std::string attribute's copy and exception messages.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace lci::detail {

bool read_attr_env(const char* variable, unsigned long* out);
bool read_attr_env(const char* variable, unsigned long long* out);
bool read_attr_env(const char* variable, int* out);
bool read_attr_env(const char* variable, double* out);
bool read_attr_env(const char* variable, bool* out);
bool read_attr_env(const char* variable, std::string* out);
bool read_attr_env(const char* variable, const char** out);

// An attribute's value as messages show it: true/false, decimal integers,
// a double as %g prints it (0.5, not 0.500000). Allocation: the string.
std::string attr_value_text(bool value);
std::string attr_value_text(int value);
std::string attr_value_text(unsigned long value);
std::string attr_value_text(unsigned long long value);
std::string attr_value_text(double value);

// Replaces the process-wide values that stand in for the environment:
// (variable, value text) pairs, each variable once; an empty list leaves
// the environment alone again. Thread safety: any thread, any time; a
// reader sees the old or the new list, never a mix for one variable.
void set_attr_global_values(const std::vector<std::pair<std::string, std::string>>& values);

// The names of an enum's values, indexed by value (values count from 0).
struct enum_names_t {
  const char* const* names;
  std::size_t count;
};

template <std::size_t N>
constexpr enum_names_t make_enum_names(const char* const (&names)[N]) {
  return enum_names_t{names, N};
}

// The name of value, or "invalid" when value is outside the table.
const char* enum_name(enum_names_t table, int value);

// Case-insensitive lookup of text; false (and *out unchanged) if unknown.
bool enum_index(enum_names_t table, const char* text, int* out);

// As read_attr_env for an enum: the index of the variable's value by name.
bool read_attr_env_enum_index(const char* variable, enum_names_t table, int* out);

template <typename E>
bool parse_enum(enum_names_t table, const char* text, E* out) {
  static_assert(std::is_enum_v<E>, "parse_enum reads enums");
  int index = 0;
  if (!enum_index(table, text, &index)) return false;
  *out = static_cast<E>(index);
  return true;
}

template <typename E>
bool read_attr_env(const char* variable, enum_names_t table, E* out) {
  static_assert(std::is_enum_v<E>, "this read_attr_env reads enums");
  int index = 0;
  if (!read_attr_env_enum_index(variable, table, &index)) return false;
  *out = static_cast<E>(index);
  return true;
}

}  // namespace lci::detail
