// What the runtime needs to know of upstream's global_initialize bracket
// (lci/runtime/global_attr.hpp): whether one is open in the process.
//
// Thread safety: any thread.
#pragma once

namespace lci::detail {

// true while more global_initialize() than global_finalize() calls returned.
bool global_initialized();

}  // namespace lci::detail
