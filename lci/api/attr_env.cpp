#include "lci/api/attr_env.hpp"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lci/util/assert.hpp"

namespace lci::detail {

namespace {

// A value is refused rather than trimmed: a stray blank usually means the
// variable was written differently from what the user believes.
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

char to_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool equal_ignoring_case(const char* a, const char* b) {
  for (; *a != '\0' && *b != '\0'; ++a, ++b) {
    if (to_lower(*a) != to_lower(*b)) return false;
  }
  return *a == *b;
}

[[noreturn]] void refuse(const char* variable, const char* value, const std::string& why) {
  throw std::invalid_argument(std::string(variable) + "=\"" + value + "\": " + why);
}

std::mutex g_global_values_lock;
std::map<std::string, std::string> g_global_values;  // guarded by g_global_values_lock

// The variable's value — set_attr_global_values' if it holds one, else the
// environment's — or nullptr when it is unset. A global value is copied
// into thread-local storage, valid until this thread's next lookup: every
// reader parses the text before it looks up another.
const char* lookup(const char* variable) {
  LCI_ASSERT(variable != nullptr, "an attribute needs a variable name");
  LCI_ASSERT(variable[0] != '\0', "an attribute needs a variable name");
  thread_local std::string global_value;
  {
    std::lock_guard<std::mutex> guard(g_global_values_lock);
    auto found = g_global_values.find(variable);
    if (found != g_global_values.end()) {
      global_value = found->second;
      return global_value.c_str();
    }
  }
  return std::getenv(variable);
}

int digit_value(char c, unsigned base) {
  const char lower = to_lower(c);
  int digit = -1;
  if (lower >= '0' && lower <= '9') digit = lower - '0';
  if (base == 16 && lower >= 'a' && lower <= 'f') digit = lower - 'a' + 10;
  return digit;
}

// Decimal or 0x hex, then an optional binary k/m/g suffix. False on any
// other character or an empty number; *overflow set when it does not fit.
bool parse_unsigned(const char* text, std::uint64_t* out, bool* overflow) {
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  unsigned base = 10;
  if (text[0] == '0' && to_lower(text[1]) == 'x') {
    base = 16;
    text += 2;
  }
  std::uint64_t value = 0;
  const char* digits_begin = text;
  *overflow = false;
  for (; digit_value(*text, base) >= 0; ++text) {
    const auto digit = static_cast<std::uint64_t>(digit_value(*text, base));
    if (value > (max - digit) / base) *overflow = true;
    value = value * base + digit;
  }
  if (text == digits_begin) return false;
  unsigned shift = 0;
  switch (to_lower(*text)) {
    case 'k': shift = 10; break;
    case 'm': shift = 20; break;
    case 'g': shift = 30; break;
    default: break;
  }
  if (shift != 0) {
    ++text;
    if (value > (max >> shift)) *overflow = true;
    value <<= shift;
  }
  if (*text != '\0') return false;
  *out = value;
  return true;
}

template <typename T>
bool read_unsigned(const char* variable, T* out) {
  static_assert(std::numeric_limits<T>::is_integer && !std::numeric_limits<T>::is_signed &&
                    sizeof(T) <= sizeof(std::uint64_t),
                "read_unsigned reads unsigned integers of at most 64 bits");
  const char* text = lookup(variable);
  if (text == nullptr) return false;
  std::uint64_t value = 0;
  bool overflow = false;
  if (!parse_unsigned(text, &value, &overflow)) refuse(variable, text, "not an unsigned integer");
  if (overflow || value > std::numeric_limits<T>::max()) refuse(variable, text, "out of range");
  *out = static_cast<T>(value);
  return true;
}

}  // namespace

bool read_attr_env(const char* variable, unsigned long* out) {
  return read_unsigned(variable, out);
}

bool read_attr_env(const char* variable, unsigned long long* out) {
  return read_unsigned(variable, out);
}

bool read_attr_env(const char* variable, int* out) {
  const char* text = lookup(variable);
  if (text == nullptr) return false;
  // strtol skips leading blanks and accepts an empty number as 0: refuse both.
  if (text[0] == '\0' || is_blank(text[0])) refuse(variable, text, "not an integer");
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0') refuse(variable, text, "not an integer");
  if (errno == ERANGE || value < std::numeric_limits<int>::min() ||
      value > std::numeric_limits<int>::max()) {
    refuse(variable, text, "out of range");
  }
  *out = static_cast<int>(value);
  return true;
}

bool read_attr_env(const char* variable, double* out) {
  const char* text = lookup(variable);
  if (text == nullptr) return false;
  if (text[0] == '\0' || is_blank(text[0])) refuse(variable, text, "not a number");
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text, &end);
  if (*end != '\0') refuse(variable, text, "not a number");
  if (errno == ERANGE) refuse(variable, text, "out of range");
  if (!std::isfinite(value)) refuse(variable, text, "not a finite number");
  *out = value;
  return true;
}

bool read_attr_env(const char* variable, bool* out) {
  const char* text = lookup(variable);
  if (text == nullptr) return false;
  static constexpr const char* true_names[] = {"1", "true", "on"};
  static constexpr const char* false_names[] = {"0", "false", "off"};
  for (const char* name : true_names) {
    if (equal_ignoring_case(text, name)) {
      *out = true;
      return true;
    }
  }
  for (const char* name : false_names) {
    if (equal_ignoring_case(text, name)) {
      *out = false;
      return true;
    }
  }
  refuse(variable, text, "not a boolean (0/1, true/false, on/off)");
}

bool read_attr_env(const char* variable, std::string* out) {
  const char* text = lookup(variable);
  if (text == nullptr) return false;
  *out = text;
  return true;
}

bool read_attr_env(const char* variable, const char** out) {
  // The environment only: the attribute keeps the pointer, which a global
  // value's thread-local copy would not keep valid.
  LCI_ASSERT(variable != nullptr, "an attribute needs a variable name");
  const char* text = std::getenv(variable);
  if (text == nullptr) return false;
  *out = text;
  return true;
}

std::string attr_value_text(bool value) { return value ? "true" : "false"; }
std::string attr_value_text(int value) { return std::to_string(value); }
std::string attr_value_text(unsigned long value) { return std::to_string(value); }
std::string attr_value_text(unsigned long long value) { return std::to_string(value); }

std::string attr_value_text(double value) {
  char text[32];
  const int length = std::snprintf(text, sizeof(text), "%g", value);
  LCI_ASSERT(length > 0, "a double prints");
  LCI_ASSERT(static_cast<std::size_t>(length) < sizeof(text), "a double's %g text fits");
  return text;
}

const char* enum_name(enum_names_t table, int value) {
  LCI_ASSERT(table.names != nullptr, "an enum has a name table");
  LCI_ASSERT(table.count > 0, "an enum has at least one value");
  if (value < 0 || static_cast<std::size_t>(value) >= table.count) return "invalid";
  return table.names[value];
}

bool enum_index(enum_names_t table, const char* text, int* out) {
  LCI_ASSERT(table.names != nullptr, "an enum has a name table");
  LCI_ASSERT(text != nullptr, "a name to look up");
  for (std::size_t i = 0; i < table.count; ++i) {
    if (equal_ignoring_case(text, table.names[i])) {
      *out = static_cast<int>(i);
      return true;
    }
  }
  return false;
}

bool read_attr_env_enum_index(const char* variable, enum_names_t table, int* out) {
  const char* text = lookup(variable);
  if (text == nullptr) return false;
  if (enum_index(table, text, out)) return true;
  std::string expected = "not one of ";
  for (std::size_t i = 0; i < table.count; ++i) {
    expected += (i == 0 ? "" : ", ");
    expected += table.names[i];
  }
  refuse(variable, text, expected);
}

void set_attr_global_values(const std::vector<std::pair<std::string, std::string>>& values) {
  std::map<std::string, std::string> table(values.begin(), values.end());
  LCI_ASSERT(table.size() == values.size(), "a variable named twice");
  std::lock_guard<std::mutex> guard(g_global_values_lock);
  g_global_values.swap(table);
}

}  // namespace lci::detail
