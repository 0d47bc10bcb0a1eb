#include "lci/util/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace lci::util {

void assert_fail(const char* condition, const char* file, int line,
                 const char* message) noexcept {
  std::fprintf(stderr, "LCI assertion failed: %s (%s:%d): %s\n", condition, file,
               line, message);
  std::fflush(stderr);
  std::abort();
}

}  // namespace lci::util
