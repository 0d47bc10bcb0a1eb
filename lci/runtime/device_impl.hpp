// device_impl_t: one LCI device (paper §3.3, §4.2): a network device, the
// packet pool it receives into, the receives it keeps pre-posted, and the
// backlog of protocol steps that found the network busy.
//
// A device allocated without a packet pool is a raw device (upstream LCI's
// use of the raw network layer): it pre-posts nothing, and its network's
// receive and completion queues belong to the program's net_* operations
// (lci/ops/net_ops.cpp). The protocol never touches it, so the two never
// take each other's completions:
//
//   operation                                   with a packet pool   raw
//   post_*, progress, test/wait_drained,
//     sync_wait with progress, collectives      yes                  invalid
//   net_post_*, net_poll_cq                     invalid              yes
//   register_memory, alloc/free_endpoint,
//     free_device                               yes                  yes
//
// An invalid cell throws std::invalid_argument naming the operation and
// the device (require_packet_pool, require_raw).
//
// Thread safety: everything may run concurrently: posts and progress from
//                any threads. The network device serialises internally with
//                try-locks (busy -> retry); the backlog queue has its own
//                lock; the pre-posted count is atomic.
// Blocking:      never, except a handler completion object's user code.
// Ownership:     owned by its runtime; free_device() or the runtime's
//                destruction deletes it (closing the network device drops
//                its pre-posted receives and returns their packets).
// Allocation:    at construction: the network device, the backlog ring, the
//                first pre-posted receives, and (from the runtime, which
//                keeps them) its pools of requests and unexpected-message
//                records. On the data path only past two bounds that
//                progress cannot answer with retry: a full backlog ring
//                doubles, and a record for an unexpected message past its
//                pool is allocated (device_pools_t).
// Limits:        device_pools_t's bounds; an empty pool is retry for a post and a
//                backlogged arrival for progress (docs/design/runtime.md,
//                "Pools"), but for the records of unexpected messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "lci/api/lci_generated.hpp"
#include "lci/backlog_queue/backlog_queue.hpp"
#include "lci/runtime/backlog_step.hpp"
#include "lci/runtime/post_args.hpp"
#include "lci/runtime/rdv_table.hpp"
#include "lci/runtime/recv_regions.hpp"
#include "lci/runtime/request.hpp"
#include "lci/runtime/resources.hpp"
#include "lci/runtime/watch_list.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/object_pool.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::detail {

class runtime_impl_t;

// The records a device's data path takes and gives back, each pool bounded
// at the device's allocation (runtime_impl_t::alloc_device). The runtime
// owns them, not the device: a record may outlive its device (an
// unexpected message in a matching engine the runtime shares, a receive
// dropped with its device), and is then given back to a pool still there.
//
// Records for unexpected messages are the one pool an arrival never finds
// empty: past `unexpected`'s bound, take_unexpected() allocates a record
// (docs/design/runtime.md, "Pools"). An arrival cannot be refused, and
// waiting for a record cost as much memory in the backlog while no receive
// could find it; what bounds those records is what bounds the arrivals
// (the packets holding eager messages, the senders' requests behind RTSs).
// Records allocated so are listed until given back, so that the pools'
// destruction frees those of messages nobody received.
struct device_pools_t {
  device_pools_t(std::size_t requests_max, std::size_t unexpected_max,
                 std::size_t deferred_posts_max, std::size_t backlog_steps_max)
      : requests(requests_max),
        unexpected(unexpected_max),
        deferred_posts(deferred_posts_max),
        backlog_steps_max(backlog_steps_max) {}
  ~device_pools_t();
  device_pools_t(const device_pools_t&) = delete;
  device_pools_t& operator=(const device_pools_t&) = delete;

  // A record from `unexpected`, or past its bound an allocated one; never
  // nullptr. Any thread.
  [[nodiscard]] unexpected_t* take_unexpected() {
    unexpected_t* message = unexpected.take();
    return message != nullptr ? message : allocate_unexpected();
  }
  // `message` (from take_unexpected) back where it came from. Any thread.
  void give_back(unexpected_t* message) {
    if (unexpected.owns(message)) {
      unexpected.give_back(message);
    } else {
      free_unexpected(message);
    }
  }
  // Diagnostics for tests: records ever allocated past the bound, and those
  // still out.
  std::uint64_t unexpected_allocated_total() const;
  std::size_t unexpected_allocated_count() const;
  // No record of any pool is out. Only once the device is gone (nothing
  // takes any more): a record given back meanwhile is pushed onto a free
  // list the walk started below, so the answer errs towards "out".
  bool all_home() const;

  util::object_pool_t<request_t> requests;
  util::object_pool_t<unexpected_t> unexpected;
  util::object_pool_t<deferred_post_t> deferred_posts;
  // Steps the device's backlog holds without allocating (it grows past
  // that: device_impl_t::run_or_backlog).
  const std::size_t backlog_steps_max;

 private:
  // A record past the bound, linked while out. `record` comes first, so a
  // record's address is its node's (both are standard layout).
  struct allocated_unexpected_t {
    unexpected_t record;
    allocated_unexpected_t* prev = nullptr;
    allocated_unexpected_t* next = nullptr;
  };
  unexpected_t* allocate_unexpected();
  void free_unexpected(unexpected_t* message);

  mutable util::spinlock_t allocated_lock_;
  allocated_unexpected_t* allocated_head_ = nullptr;  // guarded by allocated_lock_
  std::size_t allocated_count_ = 0;                   // guarded by allocated_lock_
  std::uint64_t allocated_total_ = 0;                 // guarded by allocated_lock_
};

class device_impl_t {
 public:
  // net_context_attr: the net context's, whose max_msg_size and
  // max_inject_size bound what the network device is asked for.
  // packet_pool: nullptr for a raw device.
  device_impl_t(runtime_impl_t* runtime, const attr_device_t& attr,
                const attr_net_context_t& net_context_attr, packet_pool_impl_t* packet_pool,
                device_pools_t* pools);
  ~device_impl_t();
  device_impl_t(const device_impl_t&) = delete;
  device_impl_t& operator=(const device_impl_t&) = delete;

  runtime_impl_t* runtime() const { return runtime_; }
  const attr_device_t& attr() const { return attr_; }
  backend::net_device_t& net() const { return *net_; }
  // nullptr for a raw device.
  packet_pool_impl_t* packet_pool() const { return packet_pool_; }
  bool raw() const { return packet_pool_ == nullptr; }
  // The invalid cells of the table above: each throws std::invalid_argument
  // naming `op` when the device is of the other kind. Inline: every post and
  // progress call checks; only the throw is out of line.
  void require_packet_pool(const char* op) const {
    if (raw()) throw_raw(op);
  }
  void require_raw(const char* op) const {
    if (!raw()) throw_not_raw(op);
  }
  endpoint_impl_t* default_endpoint() const { return default_endpoint_.get(); }
  endpoint_impl_t* alloc_endpoint(const attr_endpoint_t& attr);
  // Throws std::invalid_argument when `endpoint` is not a live endpoint of
  // this device.
  void free_endpoint(endpoint_impl_t* endpoint);

  // What collectives (lci/collective/collective.hpp) keep per device:
  // calls are numbered per device, not per runtime, so that collectives
  // running concurrently on two devices never disagree across ranks about
  // which call is which; the ordinal tells the devices' messages apart in
  // the collective matching engine they share.
  struct collective_state_t {
    // The device's place in its runtime's allocation order (devices pair
    // across ranks by it, so it is equal on every rank). Set by
    // runtime_impl_t::alloc_device before the device is shared.
    std::uint32_t ordinal = 0;
    // relaxed: a counter; the collectives it numbers are ordered by the
    // program (same order on every rank).
    util::atomic<std::uint64_t> sequence{0};
  };
  collective_state_t& collective() { return collective_; }
  std::uint32_t ordinal() const { return collective_.ordinal; }

  // Largest payload that goes out as an inject / through one packet.
  std::size_t inject_size_max() const { return net_->attr().inject_size_max; }
  std::size_t packet_payload_max() const;
  // get_max_bcopy_size() of the device's packet pool: the payload a packet
  // carries even behind an eager header.
  std::size_t bcopy_size_max() const;

  // Runs `step` now; if it returns retry, queues it for progress(). Returns
  // done or posted_backlog. Never refuses the step: most callers are
  // progress itself, with nobody to hand a refusal to, so past
  // device_pools_t::backlog_steps_max waiting steps the backlog grows (the
  // Pools table in docs/design/runtime.md says what bounds it).
  template <typename Step>
  error_t run_or_backlog(const Step& step) {
    // A non-empty backlog goes first: steps keep their order behind it.
    if (backlog_.is_empty_hint()) {
      const error_t error = step();
      if (!error.is_retry()) return error;
    }
    // Only a step that must wait is copied into a backlog_step_t.
    return push_backlog(backlog_step_t(step));
  }
  // No protocol step is queued or running. A hint (relaxed): a step pushed
  // by another thread meanwhile is as if pushed a moment later.
  bool backlog_empty_hint() const { return backlog_steps_.load(util::mo_relaxed) == 0; }
  // progress() step 1: tries each queued step once, in order.
  bool drain_backlog() {
    // relaxed: a step pushed meanwhile is left to the next progress call,
    // as it would be had it come a moment later.
    if (backlog_steps_.load(util::mo_relaxed) == 0) return false;
    return drain_backlog_steps();
  }
  // A request of this device (device and home set), or nullptr when its
  // pool is empty: the caller answers retry, or waits in the backlog.
  [[nodiscard]] request_t* take_request() {
    request_t* request = pools_->requests.take();
    if (request == nullptr) return nullptr;
    request->device = this;
    request->home = pools_;
    return request;
  }
  // A record for an arrival of this device holding `fields` (a record on
  // the caller's stack, home null); never nullptr (device_pools_t).
  [[nodiscard]] unexpected_t* take_unexpected(const unexpected_t& fields) {
    LCI_DEBUG_ASSERT(fields.home == nullptr, "fields of a record already pooled");
    LCI_DEBUG_ASSERT(fields.device_ordinal == ordinal(), "a record of another device");
    unexpected_t* message = pools_->take_unexpected();
    *message = fields;
    message->home = pools_;
    return message;
  }
  // A record for a post the backlog takes over (post_comm). Throws
  // std::length_error naming the bound when all are in use: such a post
  // may not answer retry, and its poster is there to hear the error.
  [[nodiscard]] deferred_post_t* take_deferred_post();
  void give_back(deferred_post_t* post) { pools_->deferred_posts.give_back(post); }
  device_pools_t* pools() const { return pools_; }
  // Back to the pool each came from (any device may finish them).
  static void give_back(request_t* request) { request->home->requests.give_back(request); }
  static void give_back(unexpected_t* message) { message->home->give_back(message); }

  // Counts `request` among the operations in flight (in_flight_mark_t).
  void mark_in_flight(request_t* request) { request->in_flight.arm(&in_flight_count_); }
  // No backlog step is unfinished and no operation is in flight: every
  // send, RMA and rendezvous (either side) of the device finished. Posted
  // receives still waiting for a message do not count.
  bool drained() const {
    // acquire: pairs with the release in finish_backlog_step() — a step that
    // finished armed its request's in-flight mark before that release, so
    // the load below sees the mark (or its disarm). Hence this order.
    if (backlog_steps_.load(util::mo_acquire) != 0) return false;
    // acquire: pairs with the release in in_flight_mark_t::end().
    return in_flight_count_.load(util::mo_acquire) == 0;
  }
  // A protocol step waits in the backlog or runs (drain_before_close in
  // lci/progress/progress.hpp progresses until none does).
  bool backlog_steps_left() const {
    // acquire: as in drained().
    return backlog_steps_.load(util::mo_acquire) != 0;
  }

  // Operations this device posted to the network with a request as their
  // user_context (sends from packets, puts, gets) whose completion
  // progress has not dispatched yet. drained() does not see them all: a
  // memory-semantic send is complete for its poster before the network
  // hands its packet back. drain_before_close waits for none to be left,
  // so that a freed device leaves no completion in the network and no
  // packet out of its pool.
  // note_network_post: after a post that the network accepted (the
  // completion may have been dispatched already by another thread: the
  // count may dip below zero meanwhile, never once posting has stopped).
  void note_network_post() {
    // relaxed: a count; drain_before_close runs after every post returned
    // (free_device's precondition), ordered after it by the caller.
    network_posts_.fetch_add(1, util::mo_relaxed);
  }
  // progress_device: `count` completions of such posts were dispatched.
  void note_network_completions(std::size_t count) {
    if (count == 0) return;
    // release: pairs with the acquire in network_posts_left(), so that a
    // closer told "none left" sees what their dispatch did.
    network_posts_.fetch_sub(static_cast<std::int64_t>(count), util::mo_release);
  }
  bool network_posts_left() const {
    // acquire: pairs with the release in note_network_completions().
    return network_posts_.load(util::mo_acquire) > 0;
  }

  // Pre-posted receives: when the network offers multi-receive buffers
  // (net_device_attr_t::supports_multi_recv), a few receive regions take
  // every arrival (recv_regions.hpp); otherwise one packet per message.
  //
  // Posts what is missing: the regions ready again, or packets up to
  // net_max_recvs once at least recvs_refill_batch_ of them are missing.
  // false when nothing could be posted (too few missing, no packet, or the
  // network refused).
  bool replenish_receives() {
    if (regions_ != nullptr) return replenish_regions();
    // relaxed: see recvs_posted_.
    if (recvs_posted_.load(util::mo_relaxed) + recvs_refill_batch_ > recvs_target_) return false;
    return post_receives(recvs_target_);
  }
  // A pre-posted packet's arrival (progress_device, before dispatch): the
  // packet is the runtime's now, no longer the device's to take back when it
  // closes (pool_t::reclaim_marked).
  void note_receive_taken(void* packet) { packet_pool_->pool.unmark_receive(packet); }
  // `count` pre-posted packets took messages (they are the runtime's now):
  // progress notes a poll's worth at once, so that the counters every
  // thread of a shared device touches move once per poll, not per message.
  void note_receives_consumed(std::size_t count) {
    if (count == 0) return;
    recvs_posted_.fetch_sub(count, util::mo_relaxed);  // relaxed: see recvs_posted_
    packet_pool_->return_receive_share(count);
  }
  // The bytes of an arrival (a recv completion of a pre-posted receive) are
  // no longer read: its packet goes back to the pool, or its region's hold
  // is let go (arrival_t calls this).
  void release_arrival(const backend::net_status_t& status) {
    if (recv_regions_t::is_region_arrival(status)) {
      regions_->release_arrival(status);
    } else {
      packet_pool_->pool.put(status.buffer);
    }
  }
  // A completion with buffer_released: the network is done with a region.
  void release_region_posting(const backend::net_status_t& status) {
    LCI_ASSERT(regions_ != nullptr, "a region released on a device without regions");
    regions_->release_posting(status);
  }

  // Registrations (docs/design/runtime.md, "Registrations"). Standing
  // registrations are held with no end this rank's progress can bring
  // about: a rendezvous receive's, from its RTR until the sender's write
  // lands, and the program's own (register_memory), until it deregisters.
  // A send, put or get holds one only until the network completes it. So
  // standing registrations are at most standing_registrations_max() at
  // once, and the rest of the network's registrations_max stays for the
  // others: a peer's receive that waits for this rank's write never waits
  // for a registration that only it could free. false: the standing share
  // is used up (retry later); true: one share is the caller's until
  // return_standing_registration() (release_owned_mr() of a receive's
  // request, deregister_memory of the program's).
  [[nodiscard]] bool take_standing_registration();
  void return_standing_registration();
  std::size_t standing_registrations_max() const { return standing_registrations_max_; }
  // Deregisters what `request` registered for itself (if anything), and
  // gives back a rendezvous receive's share.
  void release_owned_mr(request_t* request);
  // Drops the pin `request` holds on a registration (request_t::pinned), if
  // any: the last one lets a waiting deregister_memory go on.
  static void release_pin(request_t* request);

  // Requests of this device that wait on a peer, and those a crash failed
  // (runtime_impl_t::watch, fail_peer); the failed ones are released when
  // the device closes.
  watch_list_t& watch_list() { return watch_list_; }
  // Rendezvous receives between their RTR and their data, by the id the
  // data's immediate (or the FIN) carries. Per device: the RTR leaves from
  // this device and the data lands on it (devices pair by index).
  rdv_table_t& rdv_table() { return rdv_table_; }

 private:
  [[noreturn]] static void throw_raw(const char* op);
  [[noreturn]] static void throw_not_raw(const char* op);
  bool drain_backlog_steps();  // drain_backlog() with steps waiting
  // Pre-posted packets up to `target`, a batch at a time.
  bool post_receives(std::size_t target);
  // One packet of the pool posted as a receive; false when the pool is
  // empty or the network refused (the packet back in the pool). With
  // `may_use_reserve` (the device has no receive posted), a reserved packet
  // when the pool has no other (packet_pool_impl_t).
  bool post_packet_receive(bool may_use_reserve);
  // What this device's posted packets carry (pool_t::mark_receive): device
  // uids are unique in the process, and 0 is no mark.
  std::uint32_t receive_mark() const { return static_cast<std::uint32_t>(attr_.uid) + 1; }
  // replenish_receives() of a device with receive regions.
  bool replenish_regions();
  // Queues a step the network refused; returns posted_backlog.
  error_t push_backlog(backlog_step_t step);
  // A step popped from the backlog finished (or threw): no longer counted.
  void finish_backlog_step();

  runtime_impl_t* const runtime_;
  attr_device_t attr_;  // net_* fields resolved from the network device
  std::unique_ptr<backend::net_device_t> net_;
  packet_pool_impl_t* const packet_pool_;
  device_pools_t* const pools_;  // the runtime's (see device_pools_t)
  std::unique_ptr<endpoint_impl_t> default_endpoint_;
  util::spinlock_t endpoints_lock_;
  std::vector<std::unique_ptr<endpoint_impl_t>> endpoints_;  // under endpoints_lock_
  backlog_queue::backlog_queue_t<backlog_step_t> backlog_;
  // Steps pushed to the backlog and not yet finished, counting one that a
  // progress call popped and is running (the queue no longer holds it, yet
  // it may still read the caller's buffer or go back in): what drained()
  // and backlog_steps_left() ask rather than the queue's emptiness.
  util::atomic<std::int64_t> backlog_steps_{0};
  // relaxed: a target for topping up, not a guard; the network bounds the
  // real number of posted receives (a refused post_recv is a retry).
  // Counts reservations too: post_receives() adds a chunk before posting
  // it and takes back what it could not post.
  util::atomic<std::size_t> recvs_posted_{0};
  std::size_t recvs_target_ = 0;
  // Receives are topped up once this many are missing, and reserved and
  // posted this many at a time: the device-wide counters, the pool's share
  // and the network's lock then move once per chunk (for the network, its
  // lock stays in one core's cache through the chunk), which matters when
  // many threads progress one device. A quarter of the target, at most
  // recvs_refill_batch_max (device_impl.cpp): 8 of the simulator's default 32.
  std::size_t recvs_refill_batch_ = 1;
  // Set when the network offers multi-receive buffers (then packets are
  // pre-posted only while it refuses a region: replenish_regions()).
  std::unique_ptr<recv_regions_t> regions_;
  // Requests in flight (in_flight_mark_t); read by drained().
  util::atomic<std::int64_t> in_flight_count_{0};
  // See note_network_post().
  util::atomic<std::int64_t> network_posts_{0};
  watch_list_t watch_list_;
  rdv_table_t rdv_table_;
  collective_state_t collective_;
  // Standing registrations held (take_standing_registration), and their
  // bound, set at construction.
  util::atomic<std::size_t> standing_registrations_{0};
  std::size_t standing_registrations_max_ = 0;
};

}  // namespace lci::detail
