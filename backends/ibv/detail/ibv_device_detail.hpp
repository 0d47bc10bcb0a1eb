// What the sources of ibv_device_t (backends/ibv/ibv_device.hpp) share, one
// source file per concern:
//   ibv_device.cpp             life: construction (queues, thread domains,
//                              QP locks, op pool) and destruction
//   ibv_device_attr.cpp        the ibv attributes: GID index, on-demand paging
//   ibv_device_connect.cpp     the address exchange and QP state transitions
//   ibv_device_ops.cpp         op lists, inboxes and the op pools
//   ibv_device_post.cpp        posting: receives, sends, puts, gets
//   ibv_device_completion.cpp  completion translation: work completions,
//                              errors, receives posted again
//   ibv_device_liveness.cpp    QP repair, probes, dead peers, goodbyes
//   ibv_device_memory.cpp      registration, prefetch, remote keys
// How and why: docs/backends/ibv.md. Included only by those files.
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>

#include "backends/backend.hpp"
#include "backends/ibv/ibv_verbs.hpp"

namespace lci::backend::ibv::detail {

// The contract's types, by their short names in the device's sources.
using backend::net_fault_t;
using backend::net_imm_data_t;
using backend::net_mr_t;
using backend::net_opcode_t;
using backend::net_rmr_t;
using backend::net_status_t;

// Work completions read by one poll_cq (and statuses by one poll of drain()).
inline constexpr int poll_batch_max = 16;
// Every MR and QP of the device allows local writes and remote reads and writes.
inline constexpr int access_all =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

[[noreturn]] inline void throw_verbs(const verbs_t& verbs, const char* what, int error) {
  throw std::runtime_error(std::string("ibv backend (") + verbs.get_name() + "): " + what +
                           " failed: " + (error != 0 ? std::strerror(error) : "unknown error"));
}

}  // namespace lci::backend::ibv::detail
