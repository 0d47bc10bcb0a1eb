// What libibverbs offers on this machine: the RDMA devices it can open.
// Compiled only with --config=ibv. On a machine without RDMA (no kernel
// support) the list is empty and `error` says why; it never crashes.
//
// Thread safety: safe to call from any thread. Blocking: may block in
// device discovery. Allocation: returns owned std:: values.
#pragma once

#include <string>
#include <vector>

namespace lci::backends::ibv {

struct probe_result_t {
  std::vector<std::string> devices;
  std::string error;  // set when no device could be listed
};

probe_result_t probe();

}  // namespace lci::backends::ibv
