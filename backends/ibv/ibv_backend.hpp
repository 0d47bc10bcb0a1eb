// The libibverbs backend as the registry (backends/backend_registry.hpp)
// knows it, in a build with --config=ibv: name "ibv", ahead of ofi when
// both are compiled in (an InfiniBand or RoCE HCA is the faster path; on a
// machine without one the context fails to open before any collective call
// and the registry moves on). Its context is ibv_context_t over the real
// libibverbs (get_real_verbs()), device_name an HCA ("mlx5_0"; "" the
// first listed); provider_name is not used. The bootstrap's key-value
// exchange carries the QP addresses (ibv_bootstrap_t's allgather).
#pragma once

#include "backends/backend_registry.hpp"

namespace lci::backend::ibv {

const backend::backend_entry_t& backend_entry();

}  // namespace lci::backend::ibv
