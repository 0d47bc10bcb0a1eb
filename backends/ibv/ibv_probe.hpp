// What libibverbs offers on this machine: the RDMA devices it can open.
// Compiled only with --config=ibv. On a machine without RDMA (no kernel
// support) the list is empty and `error` says why; it never crashes. The
// listing goes through a verbs table (ibv_verbs.hpp): the real library, or
// the emulated device in tests.
//
// Thread safety: safe to call from any thread. Blocking: may block in
// device discovery. Allocation: returns owned std:: values.
#pragma once

#include <string>
#include <vector>

#include "backends/ibv/ibv_verbs.hpp"

namespace lci::backend::ibv {

struct probe_result_t {
  std::vector<std::string> devices;
  std::string error;  // set when no device could be listed
};

// The devices `verbs` lists.
probe_result_t probe(verbs_t& verbs);
// The devices libibverbs lists (get_real_verbs()).
probe_result_t probe();

}  // namespace lci::backend::ibv
