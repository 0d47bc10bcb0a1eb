// unsupported_attrs: the check every allocation runs on the attributes it
// was given, so that nothing a user sets is silently ignored. The refused
// attributes (upstream LCI 2.x has them, so programs written for it
// compile, but this runtime does not act on them) and the reason for each
// are declared once, in the API description (lci/api/lci_api.def:
// `refusal` lines and attributes marked `refused`); the generated
// detail::find_refused finds them, and docs/reference/attributes.md lists
// them.
//
// A refused attribute is accepted at its description default (upstream
// programs pass defaults explicitly) and refused otherwise, however it was
// set: a functor's setter, LCI_ATTR_<NAME>, or set_g_default_attr (the last
// two reach the check through get_default_attr_<resource>()).
//
// The ibv_* attributes (ibv_gid_idx, ibv_force_gid_auto_select,
// ibv_odp_strategy, ibv_prefetch_strategy; ibv_td_strategy of a device) go
// to the network device (backend::net_device_attr_t::ibv) where the network
// reads them (backend::net_context_t::reads_ibv_attr(): the ibv backend),
// and are refused like the others where it does not (ofi, the simulator).
//
// The network a process (or simulated rank) runs on is opened once, before
// any runtime, from the process's LCI_ATTR_DEVICE_NAME,
// LCI_ATTR_OFI_PROVIDER_NAME and LCI_ATTR_SHM_ENABLE (or
// set_g_default_attr): a runtime, net context or device may repeat those
// values but not name others.
//
// Errors:        std::invalid_argument "<op>: <name> = <value>: <reason>"
//                for the first attribute refused, before anything is
//                allocated.
// Thread safety: any thread; reads constant tables and the environment
//                (lci/api/attr_env.hpp: getenv must not race with setenv).
// Blocking:      never.
// Allocation:    only the exception's message.
#pragma once

#include "lci/api/lci_generated.hpp"

namespace lci::detail {

void check_supported(const attr_runtime_t& attr, const char* op);
// network_reads_ibv: the network's reads_ibv_attr().
void check_supported(const attr_net_context_t& attr, bool network_reads_ibv, const char* op);
void check_supported(const attr_device_t& attr, bool network_reads_ibv, const char* op);
void check_supported(const attr_matching_engine_t& attr, const char* op);

}  // namespace lci::detail
