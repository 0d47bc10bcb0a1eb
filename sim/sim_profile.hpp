// provider_profile_t: the simulated network at its limits, as one of
// libfabric's providers behaves there (docs/design/sim_network.md,
// "Provider profiles", which says how each value was measured).
//
//   default  today's simulator: an RDMA NIC with small queues (nothing
//            below changes its behaviour)
//   shm      libfabric 1.17's shm provider, as ofi_device_t presents it
//   tcp      libfabric 1.17's tcp;ofi_rxm, as ofi_device_t presents it
//
// Chosen by world_options_t::profile (apply_provider_profile()) or
// LCI_SIM_PROFILE=default|shm|tcp (apply_world_env(); the world's option
// line names it, so a failing run's report reproduces it). A profile sets
// the device defaults the ofi backend would resolve (queue depths, inject
// and message sizes, a completion queue that covers the queues, no local
// registration, RMA that lands only while the target calls its device),
// and the sim device then does what the provider does at its limits:
//
//   connection   the first post of a device to each peer is refused
//                (retry_nomem, like -FI_EAGAIN) until the peer's device of
//                the same index made a call (poll_comp, post_recv) after
//                it, and so is every later one until then
//   target queue ops posted to one target device and not yet completed,
//                from all its senders together, at most target_queue_max;
//                a post beyond it is refused
//   small puts   a put of at most the inject size in flight to a peer
//                refuses every other post of the device to that peer until
//                it completes (shm's delivery-complete inject path)
//   large puts   at most puts_per_peer_max in flight to one peer
//   CQ overrun   completions past the completion queue's depth are kept
//                (libfabric's util CQ overflow list), up to cq_overflow_max
//                more (the sim's bound on what libfabric grows without one)
//   remote keys  checks_remote_keys false: a put with a key or bounds the
//                target would refuse never completes (it waits at the
//                target for good, memory untouched, and as a small put it
//                stalls every later post of its device to that peer); a get
//                completes without a fault, with the target's bytes where
//                they lie inside one of its live registrations, else with
//                poison_byte (shm reads whatever is there; reading
//                memory the program may have freed is not something the
//                sim can do safely)
//   get progress get_waits_for_target false: with rma_waits_for_target a
//                get still lands on arrival (shm reads with
//                process_vm_readv, without the target's help)
//   recv entries posted receives and unexpected messages share
//                recv_entries: a send that still finds no receive when the
//                target's device call pumps it becomes unexpected, leaving
//                the target queue for a free entry (shm's progress moves it
//                out of the command queue); a multi-receive post is refused
//                (retry_nomem, like shm's -FI_ENOMEM) while they fill them,
//                a plain one is not (it takes a waiting message)
//
// Thread safety: profiles are constants; port_profile_state_t is its port's
//                (counters under the port's lock, atomics as commented).
// Blocking:      never. Allocation: port state at open_port only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/backend.hpp"
#include "lci/util/atomic.hpp"

namespace lci::sim {

struct world_options_t;
class world_t;

enum class profile_kind_t : std::uint8_t { default_profile, shm, tcp };
inline constexpr std::size_t profile_kinds_count = 3;

// What a get with an unchecked bad key writes where the sim cannot read
// the target's bytes safely.
inline constexpr unsigned char poison_byte = 0xDB;

struct provider_profile_t {
  profile_kind_t kind = profile_kind_t::default_profile;
  // The provider's queue depths (fi_info tx_attr.size, rx_attr.size): caps
  // on net_max_sends / net_max_recvs. 0: the sim's own cap.
  std::size_t tx_size = 0;
  std::size_t rx_size = 0;
  // fi_info tx_attr.inject_size and ep_attr.max_msg_size (0: none).
  std::size_t inject_size = 0;
  std::size_t max_msg_size = 0;
  // net_max_cqes at least net_max_sends + net_max_recvs + this (the ofi
  // backend's sizing: its notices); false: the requested depth.
  bool cq_covers_queues = false;
  std::size_t cq_extra = 0;
  // Completions kept past the CQ's depth (util CQ overflow list).
  std::size_t cq_overflow_max = 0;
  bool connect_needs_target_call = false;
  std::size_t target_queue_max = 0;  // 0: none
  bool small_put_blocks_peer = false;
  std::size_t puts_per_peer_max = 0;  // puts over the inject size; 0: none
  bool checks_remote_keys = true;
  // A remote address is an offset from the registration's start (mr_mode
  // without FI_MR_VIRT_ADDR): rmr.base is ignored at the target, as the
  // ofi backend passes only the offset over such a provider. false: a
  // virtual address, rmr.base + offset.
  bool addresses_by_offset = false;
  bool get_waits_for_target = true;
  // Entries that posted receives and unexpected messages share (shm:
  // rx_attr.size). A multi-receive post needs a free one first; a plain
  // receive a waiting message takes needs none. 0: no such entries (a
  // waiting message stays in the target queue).
  std::size_t recv_entries = 0;
  // The sim's registration table under the profile; devices report
  // registrations_max 0 (no limit known), as the ofi backend does.
  std::size_t registrations_table = 0;  // 0: the world's registrations_max, reported

  bool is_default() const { return kind == profile_kind_t::default_profile; }
};

const provider_profile_t& get_provider_profile(profile_kind_t kind);
// "default", "shm", "tcp".
const char* get_profile_name(profile_kind_t kind);
// False if `name` is none of them.
[[nodiscard]] bool parse_profile_name(const char* name, profile_kind_t* kind);

// Sets options->profile and the world options it implies (above). Call on
// options that have not had another profile applied. default: only the
// profile field.
void apply_provider_profile(world_options_t* options, profile_kind_t kind);
// LCI_SIM_PROFILE (unset or empty: nothing); a name that is no profile
// aborts naming the variable, as a malformed fault rate does.
void apply_profile_env(world_options_t* options);

// alloc_device's last step under a profile: the provider's caps on the
// attributes already resolved from the request and the world's defaults.
void resolve_profile_attr(const provider_profile_t& profile, backend::net_device_attr_t* attr);

// Why a profile refused a post (retry_nomem), counted per device.
enum class refusal_t : std::uint8_t {
  none,
  connecting,           // the peer has not answered the connection yet
  small_put_in_flight,  // a small put to that peer is in flight
  puts_per_peer,        // puts_per_peer_max reached
  target_queue_full,    // target_queue_max reached at the target
  recv_entries_full,    // a multi-receive post while recv_entries are all in use
};
inline constexpr std::size_t refusals_count = 6;
// Posts the world's devices refused for `refusal` so far (takes each port's
// lock; for tests and reports).
std::uint64_t profile_refusals(world_t& world, refusal_t refusal);

namespace detail {

struct port_t;
struct packet_t;
enum class packet_kind_t : std::uint8_t;

// packet_t::profile_flags.
inline constexpr std::uint8_t packet_small_put = 1;    // counted in small_puts_to
inline constexpr std::uint8_t packet_large_put = 2;    // counted in puts_to
inline constexpr std::uint8_t packet_inbound = 4;      // counted in the target's inbound
inline constexpr std::uint8_t packet_stalled = 8;      // refused key, unchecked: never lands
inline constexpr std::uint8_t packet_unexpected = 16;  // in a receive entry (recv_entries)

// A port's profile state (sized at open_port, only under a profile).
struct port_profile_state_t {
  // Per peer rank, under the port's lock: connection (0: never posted to;
  // connected; else the peer's calls_count that means it answered),
  // small puts and other puts in flight.
  std::vector<std::uint64_t> connect;
  std::vector<std::uint32_t> small_puts_to;
  std::vector<std::uint32_t> puts_to;
  // This device's poll_comp / post_recv calls. Written by its callers
  // (fetch_add: several threads of a rank may poll one device), read by
  // peers' posts; relaxed both ways: a model of a connection handshake,
  // nothing is published through it.
  util::atomic<std::uint64_t> calls_count{0};
  // Ops of all senders posted to this device and not yet home (target
  // queue). Relaxed: a bound checked loosely, as a provider's queue is by
  // racing senders; nothing is published through it.
  util::atomic<std::uint64_t> inbound_count{0};
  std::uint64_t refusals[refusals_count] = {};  // by refusal_t, under the port's lock
};

inline constexpr std::uint64_t peer_connected = ~std::uint64_t{0};

// The world's and the device's hooks (each does nothing under the default
// profile). At open_port, before the port is shared: sizes its state, and
// its completion queue for the overflow.
void init_port_profile(const world_options_t& options, port_t* port);
// Under the origin's lock, before a post takes its packet: none, or why
// the provider would refuse it (the post then returns retry_nomem).
[[nodiscard]] refusal_t profile_admit_locked(world_t& world, port_t& origin, packet_kind_t kind,
                                             int target, std::size_t size);
// Under the origin's lock, once the post's packet is filled / once it is
// home again (completed, dropped or unposted): the in-flight counts.
void profile_note_posted_locked(world_t& world, port_t& origin, packet_t* packet);
void profile_note_home_locked(world_t& world, port_t& origin, packet_t* packet);
// A poll_comp or post_recv of the port's device (outside its lock).
void profile_note_call(world_t& world, port_t& port);
// Under the port's lock, before a multi-receive post takes a slot: whether
// the provider would refuse it (recv_entries; counted).
[[nodiscard]] bool profile_refuses_multi_recv_locked(world_t& world, port_t& port);
// Under the target's lock, before `packet` (a send no receive took) joins
// its waiting list: pumped by the target's own call (target_calls), it
// becomes unexpected while recv_entries has room, and leaves the target
// queue (packet_unexpected instead of packet_inbound).
void profile_note_waiting_locked(world_t& world, port_t& target, packet_t* packet,
                                 bool target_calls);
// Under the target's lock, for an RMA whose key or bounds the target would
// refuse, on a network that does not check them: returns whether it was
// delivered (a get: yes, no fault; a put: never, it stays waiting).
[[nodiscard]] bool profile_deliver_unchecked_locked(world_t& world, port_t& target,
                                                    packet_t& packet);

}  // namespace detail
}  // namespace lci::sim
