// Compile-time facts about this LCI build, under the macro names of
// upstream LCI's lci_config.hpp, for programs that read them (lci.hpp
// includes this header). Only the macros that mean something here are
// defined; docs/api_compat.md lists the others.
//
// Thread safety: constants only.
#pragma once

// The version of the upstream API lci.hpp follows; tools/install/BUILD
// (LCI_VERSION) installs the package under the same number.
#define LCI_VERSION_MAJOR 2
#define LCI_VERSION_MINOR 0
#define LCI_VERSION_PATCH 0
#define LCI_VERSION_SUFFIX ""
#define LCI_VERSION_HEX ((LCI_VERSION_MAJOR << 16) | (LCI_VERSION_MINOR << 8) | (LCI_VERSION_PATCH))
#define LCI_VERSION_STRING "2.0.0"
#define LCI_VERSION_FULL "2.0.0"

// Every other macro (the packet pool's defaults, LCI_BACKEND_MAX_POLLS,
// LCI_CACHE_LINE, the features this build lacks) comes from the API
// description, lci/api/lci_api.def, with the defaults the runtime uses.
#include "lci/api/lci_macros.hpp"
