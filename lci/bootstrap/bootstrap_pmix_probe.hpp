// Whether a PMIx client library is compiled in, and which one. Compiled only
// with --config=pmix; the PMIx bootstrap backend builds on this target.
//
// Thread safety: safe from any thread. Blocking: never. Allocation: the
// returned string.
#pragma once

#include <string>

namespace lci::bootstrap {

// The PMIx library's own version string, e.g. "OpenPMIx 4.2.2, ...".
std::string pmix_library_version();

// True when this process was started by a PMIx server (a launcher such as
// mpirun set PMIX_NAMESPACE); the PMIx bootstrap is usable only then.
bool pmix_launched();

}  // namespace lci::bootstrap
