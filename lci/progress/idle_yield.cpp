#include "lci/progress/idle_yield.hpp"

#include <limits>
#include <stdexcept>
#include <string>

#include "lci/api/attr_env.hpp"

namespace lci::detail {

std::uint32_t polls_before_yield() {
  constexpr const char* variable = "LCI_PROGRESS_POLLS_BEFORE_YIELD";
  unsigned long value = polls_before_yield_default;
  // Throws std::invalid_argument naming the variable for a value that is
  // not an unsigned integer.
  (void)read_attr_env(variable, &value);
  if (value > std::numeric_limits<std::uint32_t>::max()) {
    throw std::invalid_argument(std::string(variable) + "=" + std::to_string(value) +
                                ": out of range");
  }
  return static_cast<std::uint32_t>(value);
}

}  // namespace lci::detail
