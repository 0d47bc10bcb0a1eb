#include "sim/sim_profile.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lci/util/assert.hpp"
#include "sim/sim_world.hpp"

namespace lci::sim {

namespace {

// What ofi_device_t does with a provider's values (backends/ofi/ofi_device.cpp,
// resolve_attr): its default depths, its caps, its notice receives.
constexpr std::size_t ofi_net_max_sends_default = 256;
constexpr std::size_t ofi_net_max_recvs_default = 256;
constexpr std::size_t ofi_net_max_cqes_default = 1024;
constexpr std::size_t ofi_inject_size_cap = 4096;
constexpr std::size_t ofi_msg_size_cap = 0xFFFFFFFFu;  // a putImm's length is 32 bits
constexpr std::size_t ofi_notices_max = 64;
// The sim's stand-ins for what libfabric grows without a bound.
constexpr std::size_t cq_overflow_max = 1024;
constexpr std::size_t registrations_table = 1024;

const char* const profile_env_name = "LCI_SIM_PROFILE";

// docs/design/sim_network.md, "Provider profiles": every value below and
// the command or experiment that gave it (libfabric 1.17, this machine).
provider_profile_t make_shm() {
  provider_profile_t p;
  p.kind = profile_kind_t::shm;
  p.tx_size = 1024;                    // fi_info -p shm -v: tx_attr.size
  p.rx_size = 1024;                    // rx_attr.size; the 1025th fi_recv: -FI_ENOMEM
  p.inject_size = 4096;                // tx_attr.inject_size
  p.max_msg_size = ~std::size_t{0};    // ep_attr.max_msg_size (2^64 - 1)
  p.cq_covers_queues = true;
  p.cq_extra = ofi_notices_max;
  p.cq_overflow_max = cq_overflow_max;  // 200 completions kept in a CQ of 8
  p.connect_needs_target_call = true;   // first fi_send: -FI_EAGAIN until the peer polls
  p.target_queue_max = 1024;            // sends/reads to an idle peer, all senders together
  p.small_put_blocks_peer = true;       // 1 delivery-complete put <= 4096 B per idle peer
  p.puts_per_peer_max = 512;            // delivery-complete puts of 8 KiB per idle peer
  p.checks_remote_keys = false;         // bad key / out of bounds: no completion, peer stalls
  p.get_waits_for_target = false;       // fi_read completes while the peer is idle
  // Posted receives and unexpected messages take one of rx_attr.size
  // entries each; fi_recvmsg(FI_MULTI_RECV) takes its entry before it
  // matches unexpected messages: -FI_ENOMEM once they hold every entry
  // (30,000 eager messages of 1000 B from two ranks to a rank with
  // LCI_OFI_MULTI_RECV=1, docs/design/sim_network.md).
  p.recv_entries = 1024;
  p.registrations_table = registrations_table;
  return p;
}

provider_profile_t make_tcp() {
  provider_profile_t p;
  p.kind = profile_kind_t::tcp;
  p.tx_size = 2048;                    // fi_info -p 'tcp;ofi_rxm' -v: tx_attr.size
  p.rx_size = 2048;                    // rx_attr.size
  p.inject_size = 64;                  // tx_attr.inject_size
  p.max_msg_size = ~std::size_t{0};    // ep_attr.max_msg_size (2^64 - 1)
  p.cq_covers_queues = true;
  p.cq_extra = ofi_notices_max;
  p.cq_overflow_max = cq_overflow_max;  // 200 completions kept in a CQ of 8
  p.connect_needs_target_call = true;   // first fi_send: -FI_EAGAIN until the peer polls
  // Ops in flight per endpoint, all peers together: 2048 = tx_size, which
  // net_max_sends never exceeds; no per-peer or per-target bound measured.
  p.checks_remote_keys = true;          // bad key / out of bounds: FI_ECANCELED
  p.addresses_by_offset = true;         // fi_info domain_attr.mr_mode: no FI_MR_VIRT_ADDR
  p.get_waits_for_target = true;        // fi_read completes only once the peer polls
  p.registrations_table = registrations_table;
  return p;
}

const provider_profile_t profiles[profile_kinds_count] = {provider_profile_t{}, make_shm(),
                                                          make_tcp()};

std::size_t cap(std::size_t value, std::size_t limit) {
  return limit == 0 ? value : std::min(value, limit);
}

}  // namespace

const provider_profile_t& get_provider_profile(profile_kind_t kind) {
  const auto index = static_cast<std::size_t>(kind);
  LCI_ASSERT(index < profile_kinds_count, "no such provider profile");
  LCI_ASSERT(profiles[index].kind == kind, "profile table out of order");
  return profiles[index];
}

const char* get_profile_name(profile_kind_t kind) {
  switch (kind) {
    case profile_kind_t::default_profile: return "default";
    case profile_kind_t::shm: return "shm";
    case profile_kind_t::tcp: return "tcp";
  }
  return "unknown";
}

bool parse_profile_name(const char* name, profile_kind_t* kind) {
  LCI_ASSERT(name != nullptr && kind != nullptr, "parse_profile_name needs a name and a result");
  for (std::size_t k = 0; k < profile_kinds_count; ++k) {
    const auto candidate = static_cast<profile_kind_t>(k);
    if (std::strcmp(name, get_profile_name(candidate)) == 0) {
      *kind = candidate;
      return true;
    }
  }
  return false;
}

void apply_provider_profile(world_options_t* options, profile_kind_t kind) {
  LCI_ASSERT(options != nullptr, "apply_provider_profile needs options");
  LCI_ASSERT(options->profile.is_default(), "a second profile applied to the same options");
  const provider_profile_t& profile = get_provider_profile(kind);
  options->profile = profile;
  if (profile.is_default()) return;
  // The device defaults ofi_device_t resolves over this provider.
  options->net_max_sends = cap(ofi_net_max_sends_default, profile.tx_size);
  options->net_max_recvs = cap(ofi_net_max_recvs_default, profile.rx_size);
  options->net_max_cqes = ofi_net_max_cqes_default;
  options->inject_size_max = cap(ofi_inject_size_cap, profile.inject_size);
  options->max_msg_size = cap(ofi_msg_size_cap, profile.max_msg_size);
  options->registrations_max = profile.registrations_table;
  options->requires_local_mr = false;   // neither provider asks FI_MR_LOCAL
  options->rma_waits_for_target = true;  // both: FI_PROGRESS_MANUAL data progress
  // ofi_device_t grants multi-receive buffers only with LCI_OFI_MULTI_RECV=1
  // (docs/backends/ofi.md): one packet per message, as over the real
  // providers by default. LCI_SIM_MULTI_RECV=1 still turns them on.
  options->multi_recv = false;
}

void apply_profile_env(world_options_t* options) {
  const char* text = std::getenv(profile_env_name);
  if (text == nullptr || *text == '\0') return;
  profile_kind_t kind = profile_kind_t::default_profile;
  const bool valid = parse_profile_name(text, &kind);
  if (!valid) std::fprintf(stderr, "%s=\"%s\" is not default, shm or tcp\n", profile_env_name, text);
  LCI_ASSERT(valid, "malformed LCI_SIM_PROFILE value");
  apply_provider_profile(options, kind);
}

void resolve_profile_attr(const provider_profile_t& profile, backend::net_device_attr_t* attr) {
  LCI_ASSERT(attr != nullptr, "resolve_profile_attr needs attributes");
  if (profile.is_default()) return;
  attr->net_max_sends = cap(attr->net_max_sends, profile.tx_size);
  attr->net_max_recvs = cap(attr->net_max_recvs, profile.rx_size);
  attr->inject_size_max =
      cap(std::min(attr->inject_size_max, ofi_inject_size_cap), profile.inject_size);
  attr->max_msg_size = cap(std::min(attr->max_msg_size, ofi_msg_size_cap), profile.max_msg_size);
  if (profile.cq_covers_queues) {
    attr->net_max_cqes =
        std::max(attr->net_max_cqes, attr->net_max_sends + attr->net_max_recvs + profile.cq_extra);
  }
  if (profile.registrations_table != 0) attr->registrations_max = 0;  // no limit known
  // What the ofi backend says over every provider: a bad key stalls shm's
  // endpoint and drops tcp's connection, which the sim's tcp profile does
  // not model (it fails the access alone).
  attr->bad_rkey_fails_alone = false;
  LCI_ASSERT(attr->net_max_sends > 0 && attr->net_max_recvs > 0, "a profile emptied a queue");
  if (attr->supports_multi_recv) {
    attr->multi_recv_min_free = std::min(attr->multi_recv_min_free, attr->max_msg_size);
  }
}

namespace detail {

void init_port_profile(const world_options_t& options, port_t* port) {
  const provider_profile_t& profile = options.profile;
  if (profile.is_default()) return;
  const auto ranks = static_cast<std::size_t>(options.ranks_count);
  port->profile.connect.assign(ranks, profile.connect_needs_target_call ? 0 : peer_connected);
  port->profile.small_puts_to.assign(ranks, 0);
  port->profile.puts_to.assign(ranks, 0);
  // Not shared yet: nothing is in the ring.
  LCI_ASSERT(port->cq_count == 0 && port->cq_reserved == 0, "a port profiled after use");
  port->cq.resize(port->attr.net_max_cqes + profile.cq_overflow_max);
}

namespace {

bool is_put(packet_kind_t kind) {
  return kind == packet_kind_t::put || kind == packet_kind_t::put_imm;
}

// Under the origin's lock: whether the connection to `target` is up; a
// first post asks for it (the peer answers at its next device call).
bool connected_locked(world_t& world, port_t& origin, int target) {
  std::uint64_t& state = origin.profile.connect[static_cast<std::size_t>(target)];
  if (state == peer_connected) return true;
  const port_t* peer = world.port_of(target, origin.device_index);
  // relaxed: see port_profile_state_t::calls_count.
  const std::uint64_t calls = peer != nullptr ? peer->profile.calls_count.load(util::mo_relaxed) : 0;
  if (state == 0) {
    state = calls + 1;  // answered once the peer has made one more call
    LCI_ASSERT(state != peer_connected, "connection request overflow");
    return false;
  }
  if (calls < state) return false;
  state = peer_connected;
  return true;
}

}  // namespace

refusal_t profile_admit_locked(world_t& world, port_t& origin, packet_kind_t kind, int target,
                               std::size_t size) {
  const provider_profile_t& profile = world.options().profile;
  if (profile.is_default()) return refusal_t::none;
  const auto peer_index = static_cast<std::size_t>(target);
  LCI_ASSERT(peer_index < origin.profile.connect.size(), "profile state not sized");
  // A dead peer is no provider's business: the backend fails posts to it
  // (ofi_device_t finds it by pid; the sim at delivery).
  if (world.is_crashed(target)) return refusal_t::none;
  refusal_t refusal = refusal_t::none;
  if (!connected_locked(world, origin, target)) {
    refusal = refusal_t::connecting;
  } else if (profile.small_put_blocks_peer && origin.profile.small_puts_to[peer_index] > 0) {
    refusal = refusal_t::small_put_in_flight;
  } else if (is_put(kind) && size > origin.attr.inject_size_max &&
             profile.puts_per_peer_max != 0 &&
             origin.profile.puts_to[peer_index] >= profile.puts_per_peer_max) {
    refusal = refusal_t::puts_per_peer;
  } else if (profile.target_queue_max != 0) {
    const port_t* peer = world.port_of(target, origin.device_index);
    // relaxed: see port_profile_state_t::inbound_count.
    if (peer != nullptr && peer->profile.inbound_count.load(util::mo_relaxed) >=
                               profile.target_queue_max) {
      refusal = refusal_t::target_queue_full;
    }
  }
  if (refusal != refusal_t::none) ++origin.profile.refusals[static_cast<std::size_t>(refusal)];
  return refusal;
}

bool profile_refuses_multi_recv_locked(world_t& world, port_t& port) {
  const provider_profile_t& profile = world.options().profile;
  if (profile.recv_entries == 0 ||
      port.recvs.size() + port.waiting_unexpected_count < profile.recv_entries) {
    return false;
  }
  ++port.profile.refusals[static_cast<std::size_t>(refusal_t::recv_entries_full)];
  return true;
}

void profile_note_waiting_locked(world_t& world, port_t& target, packet_t* packet,
                                 bool target_calls) {
  const provider_profile_t& profile = world.options().profile;
  if (profile.recv_entries == 0 || !target_calls || packet->kind != packet_kind_t::send) return;
  if ((packet->profile_flags & packet_unexpected) != 0) return;  // it has its entry
  if (target.recvs.size() + target.waiting_unexpected_count >= profile.recv_entries) return;
  if ((packet->profile_flags & packet_inbound) != 0) {
    // relaxed: see port_profile_state_t::inbound_count.
    const std::uint64_t before = target.profile.inbound_count.fetch_sub(1, util::mo_relaxed);
    LCI_ASSERT(before > 0, "inbound count below 0");
    packet->profile_flags &= static_cast<std::uint8_t>(~packet_inbound);
  }
  packet->profile_flags |= packet_unexpected;
}

void profile_note_posted_locked(world_t& world, port_t& origin, packet_t* packet) {
  const provider_profile_t& profile = world.options().profile;
  LCI_ASSERT(packet->profile_flags == 0, "a packet posted with profile flags");
  if (profile.is_default()) return;
  const auto peer_index = static_cast<std::size_t>(packet->target_rank);
  if (is_put(packet->kind)) {
    if (packet->size <= origin.attr.inject_size_max) {
      if (profile.small_put_blocks_peer) {
        LCI_ASSERT(origin.profile.small_puts_to[peer_index] == 0, "two small puts to one peer");
        ++origin.profile.small_puts_to[peer_index];
        packet->profile_flags |= packet_small_put;
      }
    } else {
      ++origin.profile.puts_to[peer_index];
      packet->profile_flags |= packet_large_put;
    }
  }
  if (profile.target_queue_max != 0) {
    port_t* peer = world.port_of(packet->target_rank, origin.device_index);
    if (peer != nullptr) {
      // relaxed: see port_profile_state_t::inbound_count.
      peer->profile.inbound_count.fetch_add(1, util::mo_relaxed);
      packet->profile_flags |= packet_inbound;
    }
  }
}

void profile_note_home_locked(world_t& world, port_t& origin, packet_t* packet) {
  const std::uint8_t flags = packet->profile_flags;
  if (flags == 0) return;
  const auto peer_index = static_cast<std::size_t>(packet->target_rank);
  if ((flags & packet_small_put) != 0) {
    LCI_ASSERT(origin.profile.small_puts_to[peer_index] == 1, "small put count lost");
    --origin.profile.small_puts_to[peer_index];
  }
  if ((flags & packet_large_put) != 0) {
    LCI_ASSERT(origin.profile.puts_to[peer_index] > 0, "put count lost");
    --origin.profile.puts_to[peer_index];
  }
  if ((flags & packet_inbound) != 0) {
    port_t* peer = world.port_of(packet->target_rank, origin.device_index);
    LCI_ASSERT(peer != nullptr, "an inbound count on a port that is gone");
    // relaxed: see port_profile_state_t::inbound_count.
    const std::uint64_t before = peer->profile.inbound_count.fetch_sub(1, util::mo_relaxed);
    LCI_ASSERT(before > 0, "inbound count below 0");
  }
  packet->profile_flags = 0;
}

void profile_note_call(world_t& world, port_t& port) {
  if (world.options().profile.is_default()) return;
  // relaxed: see port_profile_state_t::calls_count.
  port.profile.calls_count.fetch_add(1, util::mo_relaxed);
}

namespace {

// Under the target's lock: whether [address, address + size) lies inside
// one of the target's live registrations (memory the sim may read).
bool inside_live_registration(const port_t& target, std::uintptr_t address, std::size_t size) {
  for (const registration_t& registration : target.registrations) {
    if (!registration.live || address < registration.base) continue;
    const std::uintptr_t offset = address - registration.base;
    if (offset <= registration.size && size <= registration.size - offset) return true;
  }
  return false;
}

}  // namespace

bool profile_deliver_unchecked_locked(world_t& world, port_t& target, packet_t& packet) {
  LCI_ASSERT(!world.options().profile.checks_remote_keys, "unchecked delivery on a checking network");
  if (packet.kind != packet_kind_t::get) {
    // Never lands, never completes: it waits at the target for good (and,
    // as a small put, keeps its peer's posts refused).
    if ((packet.profile_flags & packet_stalled) == 0) {
      packet.profile_flags |= packet_stalled;
      world.trace_event('K', packet, backend::net_fault_t::none);
    }
    return false;
  }
  LCI_ASSERT((packet.profile_flags & packet_stalled) == 0, "a stalled get");
  const std::uintptr_t address = packet.rmr.base + packet.offset;
  if (packet.size > 0) {
    if (inside_live_registration(target, address, packet.size)) {
      std::memcpy(packet.destination, reinterpret_cast<const void*>(address), packet.size);
    } else {
      std::memset(packet.destination, poison_byte, packet.size);
    }
  }
  world.trace_event('K', packet, backend::net_fault_t::none);
  return true;
}

}  // namespace detail

std::uint64_t profile_refusals(world_t& world, refusal_t refusal) {
  const auto index = static_cast<std::size_t>(refusal);
  LCI_ASSERT(index < refusals_count, "no such refusal");
  std::uint64_t total = 0;
  for (int rank = 0; rank < world.ranks_count(); ++rank) {
    for (std::uint32_t k = 0; k < world.options().devices_per_rank_max; ++k) {
      detail::port_t* port = world.port_of(rank, k);
      if (port == nullptr) continue;
      detail::port_guard_t guard(port->lock, detail::port_guard_t::mode_t::wait);
      total += port->profile.refusals[index];
    }
  }
  return total;
}

}  // namespace lci::sim
