#include "backends/backend.hpp"

#include <cstdio>
#include <stdexcept>
#include <string>

namespace lci::backend {

const char* get_net_opcode_str(net_opcode_t opcode) {
  switch (opcode) {
    case net_opcode_t::send: return "send";
    case net_opcode_t::recv: return "recv";
    case net_opcode_t::write: return "write";
    case net_opcode_t::remote_write: return "remote_write";
    case net_opcode_t::read: return "read";
    case net_opcode_t::peer_down: return "peer_down";
  }
  return "unknown";
}

std::string describe_fault(const net_status_t& status) {
  char line[256];
  switch (status.fault) {
    case net_fault_t::none:
      return "no fault";
    case net_fault_t::protection:
      std::snprintf(line, sizeof(line),
                    "RMA protection fault: %s of %zu bytes at rank %d, remote "
                    "address 0x%jx (unregistered, out of bounds or stale key)",
                    get_net_opcode_str(status.opcode), status.length, status.rank,
                    static_cast<std::uintmax_t>(status.fault_address));
      return line;
    case net_fault_t::peer_crashed:
      if (status.opcode == net_opcode_t::peer_down) {
        std::snprintf(line, sizeof(line), "peer rank %d crashed (reported by the network)",
                      status.rank);
        return line;
      }
      std::snprintf(line, sizeof(line),
                    "peer rank %d crashed: %s will never complete", status.rank,
                    get_net_opcode_str(status.opcode));
      return line;
  }
  return "unknown fault";
}

net_status_t peer_down_status(int rank) {
  net_status_t status;
  status.opcode = net_opcode_t::peer_down;
  status.fault = net_fault_t::peer_crashed;
  status.rank = rank;
  return status;
}

void throw_post_target(const char* op, int rank, int ranks_count, const void* buffer,
                       std::size_t size, std::size_t size_max) {
  if (rank < 0 || rank >= ranks_count) {
    throw std::invalid_argument(std::string(op) + ": rank " + std::to_string(rank) +
                                " is not in [0, " + std::to_string(ranks_count) + ")");
  }
  if (size > size_max) {
    throw std::invalid_argument(std::string(op) + ": size " + std::to_string(size) +
                                " exceeds the limit " + std::to_string(size_max));
  }
  if (buffer == nullptr && size > 0) {
    throw std::invalid_argument(std::string(op) + ": buffer is null for size " +
                                std::to_string(size));
  }
  throw std::logic_error(std::string(op) + ": throw_post_target called for a valid post");
}

}  // namespace lci::backend
