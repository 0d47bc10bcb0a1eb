// real_verbs_t: the verbs table (ibv_verbs.hpp) as libibverbs itself. Built
// only with --config=ibv (it links -libverbs).
//
// Thread safety, blocking, ownership: libibverbs'. Allocation: none of its own.
#pragma once

#include "backends/ibv/ibv_verbs.hpp"

namespace lci::backend::ibv {

// The process's table over libibverbs (stateless; one instance suffices).
verbs_t& get_real_verbs();

}  // namespace lci::backend::ibv
