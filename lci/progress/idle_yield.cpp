#include "lci/progress/idle_yield.hpp"

#include <limits>
#include <stdexcept>
#include <string>

#include "lci/api/lci_generated.hpp"

namespace lci::detail {

std::uint32_t polls_before_yield() {
  // Throws std::invalid_argument naming the variable for a value that is
  // not an unsigned integer.
  const std::size_t value = env_progress_polls_before_yield();
  if (value > std::numeric_limits<std::uint32_t>::max()) {
    throw std::invalid_argument("LCI_PROGRESS_POLLS_BEFORE_YIELD=" + std::to_string(value) +
                                ": out of range");
  }
  return static_cast<std::uint32_t>(value);
}

}  // namespace lci::detail
