#include "lci/bootstrap/bootstrap_pmix_probe.hpp"

#include <pmix.h>

#include <cstdlib>

namespace lci::bootstrap {

std::string pmix_library_version() { return PMIx_Get_version(); }

bool pmix_launched() { return std::getenv("PMIX_NAMESPACE") != nullptr; }

}  // namespace lci::bootstrap
