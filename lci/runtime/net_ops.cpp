// The raw network layer's names (lci/api/lci_types.hpp, net_status_t).
#include "lci/api/lci_types.hpp"

namespace lci {

const char* get_net_opcode_str(net_opcode_t opcode) {
  switch (opcode) {
    case net_opcode_t::SEND: return "SEND";
    case net_opcode_t::RECV: return "RECV";
    case net_opcode_t::WRITE: return "WRITE";
    case net_opcode_t::REMOTE_WRITE: return "REMOTE_WRITE";
    case net_opcode_t::READ: return "READ";
    case net_opcode_t::ERROR: return "ERROR";
  }
  return "invalid";
}

}  // namespace lci
