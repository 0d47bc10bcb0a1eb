// ibv_device_t: the ibv attributes — checking the requested values and
// resolving them against the port (GID index) and the device (on-demand
// paging) before anything is created (docs/backends/ibv.md, "The ibv
// attributes").
#include "backends/ibv/ibv_device.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace lci::backend::ibv {

void ibv_device_t::resolve_ibv_attr(const backend::net_ibv_attr_t& requested) {
  using backend::net_ibv_odp_t;
  using backend::net_ibv_prefetch_t;
  using backend::net_ibv_td_t;
  if (requested.odp > net_ibv_odp_t::implicit_odp) {
    throw std::invalid_argument("ibv_odp_strategy = " +
                                std::to_string(static_cast<int>(requested.odp)) +
                                ": not an on-demand paging strategy");
  }
  if (requested.prefetch > net_ibv_prefetch_t::prefetch_no_fault) {
    throw std::invalid_argument("ibv_prefetch_strategy = " +
                                std::to_string(static_cast<int>(requested.prefetch)) +
                                ": no advise_mr advice of the verbs table matches it");
  }
  if (requested.td > net_ibv_td_t::per_qp) {
    throw std::invalid_argument("ibv_td_strategy = " +
                                std::to_string(static_cast<int>(requested.td)) +
                                ": not a thread-domain strategy");
  }
  if (requested.prefetch != net_ibv_prefetch_t::none && requested.odp == net_ibv_odp_t::none) {
    throw std::invalid_argument(
        "ibv_prefetch_strategy: prefetches on-demand registrations; it needs "
        "ibv_odp_strategy = explicit_odp or implicit_odp (the default none pins every "
        "registration)");
  }
  attr_.ibv.gid_index = requested.gid_index;
  attr_.ibv.force_gid_auto_select = requested.force_gid_auto_select;
  attr_.ibv.td = requested.td;
  gid_index_ = select_gid_index(requested);
  if (gid_index_ >= 0) {
    ibv_gid_entry entry{};
    const int error = verbs_.query_gid_ex(context_.context(), context_.port_num(),
                                          static_cast<std::uint32_t>(gid_index_), &entry, 0);
    if (error != 0) {
      throw std::invalid_argument("ibv_gid_idx = " + std::to_string(gid_index_) +
                                  ": the port's GID entry cannot be read (" +
                                  std::strerror(error) + ")");
    }
    gid_ = entry.gid;
  }
  resolve_odp(requested);
}

// The GID index of the QPs' address vectors (-1: none, LID routing).
int ibv_device_t::select_gid_index(const backend::net_ibv_attr_t& requested) const {
  const ibv_port_attr& port = context_.port_attr();
  if (requested.gid_index < -1 || requested.gid_index >= port.gid_tbl_len) {
    throw std::invalid_argument("ibv_gid_idx = " + std::to_string(requested.gid_index) +
                                ": the port's GID table has " +
                                std::to_string(port.gid_tbl_len) + " entries (-1: automatic)");
  }
  if (requested.gid_index >= 0) return requested.gid_index;
  const bool ethernet = port.link_layer == IBV_LINK_LAYER_ETHERNET;
  if (!ethernet && !requested.force_gid_auto_select) return -1;
  // The first RoCE v2 GID, IPv4-mapped (::ffff:a.b.c.d) ones first: v2 is
  // routed (UDP/IP), v1 stays in its layer-2 segment. Else index 0.
  int v2_index = -1;
  for (int index = 0; index < port.gid_tbl_len; ++index) {
    ibv_gid_entry entry{};
    if (verbs_.query_gid_ex(context_.context(), context_.port_num(),
                            static_cast<std::uint32_t>(index), &entry, 0) != 0) {
      continue;  // an empty entry
    }
    if (entry.gid_type != IBV_GID_TYPE_ROCE_V2) continue;
    const std::uint8_t* raw = entry.gid.raw;
    const bool ipv4_mapped = std::all_of(raw, raw + 10, [](std::uint8_t b) { return b == 0; }) &&
                             raw[10] == 0xff && raw[11] == 0xff;
    if (ipv4_mapped) return index;
    if (v2_index < 0) v2_index = index;
  }
  return v2_index >= 0 ? v2_index : 0;
}

// On-demand paging where the device reports it (query_device_ex).
void ibv_device_t::resolve_odp(const backend::net_ibv_attr_t& requested) {
  attr_.ibv.odp = backend::net_ibv_odp_t::none;
  attr_.ibv.prefetch = backend::net_ibv_prefetch_t::none;
  if (requested.odp == backend::net_ibv_odp_t::none) return;
  ibv_device_attr_ex device{};
  if (verbs_.query_device_ex(context_.context(), nullptr, &device) != 0) return;  // no ODP
  constexpr std::uint32_t rc_needed = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
                                      IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
                                      IBV_ODP_SUPPORT_SRQ_RECV;
  const ibv_odp_caps& caps = device.odp_caps;
  if ((caps.general_caps & IBV_ODP_SUPPORT) == 0 ||
      (caps.per_transport_caps.rc_odp_caps & rc_needed) != rc_needed) {
    return;  // pinned registrations, as with none
  }
  const bool implicit = requested.odp == backend::net_ibv_odp_t::implicit_odp &&
                        (caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT) != 0;
  attr_.ibv.odp = implicit ? backend::net_ibv_odp_t::implicit_odp
                           : backend::net_ibv_odp_t::explicit_odp;
  attr_.ibv.prefetch = requested.prefetch;
  odp_access_ = IBV_ACCESS_ON_DEMAND;
}

}  // namespace lci::backend::ibv
