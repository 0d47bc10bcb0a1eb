// Upstream LCI's process-wide setup calls and default attributes, for
// programs written against it:
//   global_initialize / global_finalize  a reference-counted bracket. Here
//       nothing needs it — a runtime learns its rank from its host (the
//       launcher's process or a simulated rank) — but while one is open,
//       get_rank_me() and get_rank_n() answer without a runtime, as
//       upstream's do.
//   get_g_default_attr / set_g_default_attr  the defaults every allocating
//       operation starts from, one field per attribute (upstream's names).
//       get: the description's defaults with LCI_ATTR_<NAME> overrides, as
//       the allocating functors see them now. set: from then on the given
//       values stand in for the environment for every allocation in the
//       process (lci/api/attr_env.hpp, set_attr_global_values); a setter of
//       a functor still wins. A field is named after its attribute, which
//       several resources may share (backend, device_name): one value sets
//       it for all of them, as one environment variable does.
//       Renamed here: sync_threshold is the comp attribute `threshold`
//       (LCI_ATTR_THRESHOLD), cq_default_length is `default_length`
//       (LCI_ATTR_DEFAULT_LENGTH).
//
// Thread safety: any thread. set_g_default_attr is seen by allocating
//                functors constructed after it returns; one constructed
//                meanwhile sees the old or the new values per attribute.
// Blocking:      never (short locks).
// Errors:        set_g_default_attr throws std::invalid_argument for a
//                net_send_reserved_pct that is not a finite number;
//                global_finalize without global_initialize throws
//                std::logic_error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lci/api/lci_generated.hpp"

namespace lci {

struct global_attr_t {
  // runtime
  std::size_t packet_return_threshold{};
  int imm_nbits_tag{};
  int imm_nbits_rcomp{};
  attr_rdv_protocol_t rdv_protocol{};
  bool alloc_default_device{};
  bool alloc_default_packet_pool{};
  bool alloc_default_matching_engine{};
  // packet pool
  std::size_t packet_size{};
  std::size_t npackets{};
  // matching engine
  attr_matching_engine_type_t matching_engine_type{};
  // completion objects
  int sync_threshold{};
  bool zero_copy_am{};
  attr_cq_type_t cq_type{};
  int cq_default_length{};
  // net context (backend and device_name: the runtime's too)
  attr_backend_t backend{};
  std::string ofi_provider_name;
  std::size_t max_msg_size{};
  std::size_t max_inject_size{};
  int ibv_gid_idx{};
  bool ibv_force_gid_auto_select{};
  std::string device_name;
  attr_ibv_odp_strategy_t ibv_odp_strategy{};
  attr_ibv_prefetch_strategy_t ibv_prefetch_strategy{};
  bool use_dmabuf{};
  // device
  std::size_t net_max_sends{};
  std::size_t net_max_recvs{};
  std::size_t net_max_cqes{};
  double net_send_reserved_pct{};
  std::uint64_t ofi_lock_mode{};
  bool alloc_default_endpoint{};
  bool alloc_progress_endpoint{};
  bool use_reg_cache{};
  bool shm_enable{};
  std::size_t shm_ring_size{};
  std::size_t shm_slot_size{};
  std::size_t shm_producer_cas_attempts{};
  std::size_t shm_consumer_cas_attempts{};
  std::size_t shm_max_polls{};
  attr_ibv_td_strategy_t ibv_td_strategy{};
};

void global_initialize();
void global_finalize();
global_attr_t get_g_default_attr();
void set_g_default_attr(const global_attr_t& attr);

}  // namespace lci
