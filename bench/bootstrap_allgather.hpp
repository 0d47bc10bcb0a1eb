// The benchmarks' allgather through the bootstrap (lci/bootstrap), for the
// transports that run without LCI's runtime: the raw-libfabric baseline and
// LCI's bare ofi backend.
//
// Thread safety: the main thread only. Blocking: collective (a fence).
#pragma once

#include <string>
#include <vector>

#include "lci/bootstrap/bootstrap.hpp"

namespace lci::bench {

// Every rank's value, in rank order. `key` names this allgather: each call
// on a bootstrap needs a key of its own, the same on every rank.
std::vector<double> allgather_by_bootstrap(bootstrap::bootstrap_t& bootstrap,
                                           const std::string& key, double value);

}  // namespace lci::bench
