#include "backends/ofi/detail/ofi_check.hpp"

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <cerrno>
#include <cstdio>
#include <stdexcept>

namespace lci::backend::ofi::detail {

std::string describe_fi_error(const char* call, long rc) {
  const long code = rc < 0 ? -rc : rc;
  return std::string(call) + ": " + fi_strerror(static_cast<int>(code)) + " (error " +
         std::to_string(code) + ")";
}

void check_fi(const char* call, long rc) {
  if (rc != 0) throw std::runtime_error("lci ofi: " + describe_fi_error(call, rc));
}

bool is_connection_error(int code) {
  switch (code) {
    case FI_ECONNRESET:
    case FI_ECONNREFUSED:
    case FI_ECONNABORTED:
    case FI_ENOTCONN:
    case EPIPE:
    case FI_ESHUTDOWN:
    case FI_ETIMEDOUT:
    case FI_EHOSTUNREACH:
    case FI_ENETUNREACH:
    case FI_ENETDOWN:
      return true;
    default:
      return false;
  }
}

void close_quietly(fid* object, const char* what) {
  if (object == nullptr) return;
  const int rc = fi_close(object);
  if (rc != 0) {
    std::fprintf(stderr, "lci ofi: closing the %s: %s\n", what,
                 describe_fi_error("fi_close", rc).c_str());
  }
}

}  // namespace lci::backend::ofi::detail
