// runtime_impl_t: one LCI runtime (paper §3.3): a network context, the
// default device, packet pool and matching engine, the remote-completion
// registry, and every resource allocated through it. Several runtimes may
// coexist in a process; each simulated rank has its own.
//
// Thread safety: every member may be used concurrently after construction;
//                the resource lists are guarded by resources_lock_.
//                Destruction (free_runtime / g_runtime_fina) must not
//                overlap any other use of the runtime.
// Ownership:     owns every resource allocated through it; frees what the
//                user has not freed when destroyed.
// Allocation:    at construction (defaults) and at each alloc_*.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "lci/api/lci_generated.hpp"
#include "lci/comp/comp_impl.hpp"
#include "lci/mpmc_array/mpmc_array.hpp"
#include "lci/runtime/host.hpp"
#include "lci/runtime/resources.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::detail {

class device_impl_t;
struct device_pools_t;
struct request_t;

class runtime_impl_t {
 public:
  runtime_impl_t(const attr_runtime_t& attr, host_t& host);
  ~runtime_impl_t();
  runtime_impl_t(const runtime_impl_t&) = delete;
  runtime_impl_t& operator=(const runtime_impl_t&) = delete;

  const attr_runtime_t& attr() const { return attr_; }
  host_t& host() const { return host_; }
  backend::net_context_t& net() const { return net_; }
  int rank_me() const { return rank_me_; }
  int rank_n() const { return rank_n_; }

  net_context_impl_t* default_net_context() const { return default_net_context_.get(); }
  device_impl_t* default_device() const { return default_device_; }
  packet_pool_impl_t* default_packet_pool() const { return default_packet_pool_; }
  matching_engine_impl_t* default_matching_engine() const { return default_matching_engine_; }
  // The engine collectives (barrier) match on, apart from user messages.
  matching_engine_impl_t& collective_matching_engine() const { return *collective_matching_engine_; }

  // Resource life cycle. alloc_* register the resource with this runtime;
  // free_* throw std::invalid_argument naming the resource when it is not a
  // live resource of this runtime (freed twice, or another runtime's).
  net_context_impl_t* alloc_net_context(const attr_net_context_t& attr);
  void free_net_context(net_context_impl_t* net_context);
  // net_context, pool: nullptr for the runtime's default. No pool and no
  // default pool: a raw device (device_impl.hpp).
  device_impl_t* alloc_device(const attr_device_t& attr, net_context_impl_t* net_context,
                              packet_pool_impl_t* pool);
  // The caller drains the device first (drain_before_close,
  // lci/progress/progress.hpp), once check_live_device() let it through.
  // The device's pools go with it when all their records are home (the
  // usual case after a drain); else they stay until the runtime goes.
  void free_device(device_impl_t* device);
  // Pools of devices kept (live devices' and freed ones' still lending a
  // record): what a test of repeated alloc_device/free_device reads.
  std::size_t device_pools_count();
  // Throws as free_device() does unless `device` is a live device of this
  // runtime.
  void check_live_device(device_impl_t* device);
  // The live devices, at the time of the call.
  std::vector<device_impl_t*> devices();
  packet_pool_impl_t* alloc_packet_pool(const attr_packet_pool_t& attr);
  void free_packet_pool(packet_pool_impl_t* pool);
  matching_engine_impl_t* alloc_matching_engine(const attr_matching_engine_t& attr);
  void free_matching_engine(matching_engine_impl_t* engine);
  comp_impl_t* adopt_comp(std::unique_ptr<comp_impl_t> comp);
  void free_comp(comp_impl_t* comp);
  // Memory registrations. withdraw_mr takes `mr` from the runtime's list
  // (std::invalid_argument when it is not there: deregistered before, or
  // taken along by its freed device); deregister_from_network then gives it
  // back to the network.
  // Registrations the program left on a device are deregistered when the
  // device is freed, and all of them at destruction (release_mrs_of): a
  // network may refuse to close a device with one standing (a verbs
  // protection domain is busy while an MR is on it).
  //
  // Two steps, so that a caller can wait between them for the peers'
  // checked accesses still pinning the registration (mr_impl_t::pins): no
  // new pin can be taken once it is out of the list.
  mr_impl_t* adopt_mr(std::unique_ptr<mr_impl_t> mr);
  std::unique_ptr<mr_impl_t> withdraw_mr(mr_impl_t* mr);
  // Gives `mr`'s registration back to the network and its device's share.
  static void deregister_from_network(mr_impl_t& mr);
  // The registration of `device` a peer's checked put or get names by the
  // rmr_t fields base (its start) and rkey, pinned, when [offset, offset +
  // size) lies inside it; nullptr (nothing pinned) when none does: a stale
  // or foreign key, or an access past its end. Linear in the program's
  // registrations on all devices (under the resources lock).
  mr_impl_t* pin_registration(device_impl_t& device, std::uint64_t base, std::uint64_t rkey,
                              std::uint64_t offset, std::uint64_t size);

  // The pool one of whose packets' payload holds `address` (nullptr if
  // none of this runtime's), and that payload's start in *payload.
  packet_pool_impl_t* packet_pool_containing(const void* address, void** payload);
  // The matching engine a message names by index; nullptr if none.
  matching_engine_impl_t* matching_engine_at(std::uint32_t index) const;
  // The live device of this ordinal (collective_state_t::ordinal); nullptr
  // once it was freed. Linear in the devices (under the resources lock).
  device_impl_t* device_at_ordinal(std::uint32_t ordinal);

  // Remote completions (paper §3.2.5): ids from 1; reserve_rcomps hands out
  // a block the user fills with register_rcomp(comp, rcomp=id).
  rcomp_t reserve_rcomps(rcomp_t n);
  rcomp_t register_rcomp(comp_impl_t* comp, rcomp_t rcomp);
  void deregister_rcomp(rcomp_t rcomp);
  // nullptr when `rcomp` is not registered.
  comp_impl_t* rcomp_target(rcomp_t rcomp) const;

  // "rank": the rank checked; throws std::invalid_argument naming it.
  // Inline: every post checks; only the throw is out of line.
  void check_rank(int rank, const char* argument) const {
    if (rank < 0 || rank >= rank_n_) throw_rank_out_of_range(rank, argument);
  }

  // ---- crashed peers (docs/design/lifecycle.md, "Crashed peers") ----
  // Throws std::runtime_error naming `rank` when it is known dead.
  void check_peer_alive(int rank) const {
    if (is_peer_dead(rank)) throw_peer_crashed(rank);
  }
  bool is_peer_dead(int rank) const {
    // relaxed: a hint for dropping arrivals; watch() decides under its
    // device's watch-list lock.
    return peers_dead_[static_cast<std::size_t>(rank)].load(util::mo_relaxed);
  }
  // A network fault or report says `rank` died: marks it dead and completes
  // every watched request naming it with errorcode_t::fatal. Returns true
  // the first time for a rank (the caller then throws the error once).
  bool fail_peer(int rank);
  // Links `request` (whose status.rank names its peer) into its device's
  // watch list; false, linking nothing, when that peer is already dead.
  [[nodiscard]] bool watch(request_t* request);
  // Unlinks a request before its normal completion; false when a crash has
  // failed it already (the caller must then leave it alone). True for a
  // request that was never watched.
  [[nodiscard]] bool unwatch(request_t* request);
  // Whether a crash failed `request` (a backlogged step checks before it
  // touches the network).
  bool is_failed(request_t* request);

  // ---- leaving (docs/design/lifecycle.md, "Leaving") ----
  // The runtime leaves (leave_runtime, lci/collective/barrier.hpp): from
  // this call on, a peer's death is no longer thrown by progress (it has
  // most likely left too).
  void mark_leaving() {
    leaving_.store(true, util::mo_relaxed);  // relaxed: see leaving()
  }
  bool leaving() const {
    // relaxed: set and read by the leaving thread, or read by progress
    // calls the user must not overlap with destruction.
    return leaving_.load(util::mo_relaxed);
  }

 private:
  [[noreturn]] void throw_rank_out_of_range(int rank, const char* argument) const;
  [[noreturn]] void throw_peer_crashed(int rank) const;
  template <typename T>
  std::unique_ptr<T> take_live(std::vector<std::unique_ptr<T>>& list, T* item, const char* what);
  // Deregisters the program's registrations on `device` (on every device:
  // nullptr); their handles are then refused as deregistered.
  void release_mrs_of(const device_impl_t* device);
  template <typename T>
  void erase_live(std::vector<std::unique_ptr<T>>& list, T* item, const char* what);

  const attr_runtime_t attr_;
  host_t& host_;
  const host_t::runtime_count_t counted_;
  backend::net_context_t& net_;
  const int rank_me_;
  const int rank_n_;

  std::unique_ptr<net_context_impl_t> default_net_context_;
  util::spinlock_t resources_lock_;
  // Every device's pools, kept until the runtime goes (device_pools_t says
  // why); declared first so that they go last.
  std::vector<std::unique_ptr<device_pools_t>> device_pools_;  // under resources_lock_
  std::vector<std::unique_ptr<net_context_impl_t>> net_contexts_;  // under resources_lock_
  std::vector<std::unique_ptr<device_impl_t>> devices_;            // under resources_lock_
  std::vector<std::unique_ptr<packet_pool_impl_t>> packet_pools_;  // under resources_lock_
  std::vector<std::unique_ptr<comp_impl_t>> comps_;                // under resources_lock_
  std::vector<std::unique_ptr<mr_impl_t>> mrs_;                    // under resources_lock_
  std::vector<std::unique_ptr<matching_engine_impl_t>> matching_engines_;  // under resources_lock_; index = position
  mpmc_array::mpmc_array_t<matching_engine_impl_t*> matching_engine_index_;
  mpmc_array::mpmc_array_t<comp_impl_t*> rcomps_;  // rcomp -> comp; slot 0 unused
  util::spinlock_t rcomps_lock_;                   // serialises reserve/register
  rcomp_t rcomps_next_ = 1;                        // under rcomps_lock_
  // Crashed peers: a flag per rank. The requests waiting on a peer, and
  // those a crash failed, are in their device's watch_list_t.
  std::unique_ptr<util::atomic<bool>[]> peers_dead_;

  device_impl_t* default_device_ = nullptr;
  packet_pool_impl_t* default_packet_pool_ = nullptr;
  matching_engine_impl_t* default_matching_engine_ = nullptr;
  matching_engine_impl_t* collective_matching_engine_ = nullptr;
  // Devices allocated so far (device_impl_t::collective_state_t::ordinal);
  // written only by the thread holding host_t::device_allocating().
  std::uint32_t devices_allocated_ = 0;
  util::atomic<bool> leaving_{false};
};

// free_comp of a completion object whose runtime was freed first (a
// runtime's destruction keeps the objects the program left, so that they
// can still be freed: free_comp needs no runtime). Deletes it and returns
// true; false when `comp` did not outlive its runtime. Any thread.
bool free_outlived_comp(comp_impl_t* comp);

// The runtime's defaults (lci/api/lci_api.def, `default`) for a runtime on
// `host`: the simulator's row for a simulated rank, the real row for a
// process or no host (nullptr). The one place that picks a row.
const runtime_defaults_t& runtime_defaults_of(const host_t* host);

// The values the attributes whose description default is 0 ("runtime
// default", "backend default") take on the calling thread's host, opening
// nothing: get_g_default_attr reports these, so that programs size their
// pools from real numbers (docs/api_compat.md).
struct zero_attr_defaults_t {
  std::size_t packet_return_threshold;
  std::size_t packet_size;
  std::size_t npackets;
  std::size_t cq_default_length;
  device_depths_t device_depths;
};
zero_attr_defaults_t zero_attr_defaults();

// What register_rcomp(COMP_NULL) registers: the remote completion of a
// target that wants none. A put or get with signal to it completes with
// nothing signalled (the checked RMA protocol skips it); an active message
// to it is dropped at the target, its buffer freed (nobody else owns it).
// One object per process, never freed. Any thread.
comp_impl_t* discard_comp();

}  // namespace lci::detail
