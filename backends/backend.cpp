#include "backends/backend.hpp"

#include <cstdio>

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

}  // namespace lci::backend
