#include "backends/ofi/detail/ofi_check.hpp"

#include <rdma/fi_errno.h>

#include <stdexcept>

namespace lci::backends::ofi::detail {

std::string describe_fi_error(const char* call, long rc) {
  const long code = rc < 0 ? -rc : rc;
  return std::string(call) + ": " + fi_strerror(static_cast<int>(code)) + " (error " +
         std::to_string(code) + ")";
}

void check_fi(const char* call, long rc) {
  if (rc != 0) throw std::runtime_error("lci ofi: " + describe_fi_error(call, rc));
}

}  // namespace lci::backends::ofi::detail
