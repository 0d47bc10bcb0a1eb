// device_impl_t: one LCI device (paper §3.3, §4.2): a network device, the
// packet pool it receives into, and the parts it is made of, each a class
// of its own (docs/design/device.md):
//   device_receives_t    the receives it keeps pre-posted
//   device_backlog_t     the protocol steps that found the network busy
//   device_accounting_t  operations in flight, network posts not completed,
//                        standing registrations
//   watch_list_t         requests that wait on a peer (crashed peers)
//   rdv_table_t          rendezvous receives by id
// and the runtime's device_pools_t, which it takes records from. The device
// itself keeps what ties them together: its endpoints, its kind (raw or
// with packets), drained(), and the order of construction and teardown.
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
//                try-locks (busy -> retry); each part says how it does.
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
//                backlogged arrival for progress (docs/design/device.md,
//                "Pools"), but for the records of unexpected messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "lci/api/lci_generated.hpp"
#include "lci/runtime/device_accounting.hpp"
#include "lci/runtime/device_backlog.hpp"
#include "lci/runtime/device_pools.hpp"
#include "lci/runtime/device_receives.hpp"
#include "lci/runtime/post_args.hpp"
#include "lci/runtime/rdv_table.hpp"
#include "lci/runtime/request.hpp"
#include "lci/runtime/resources.hpp"
#include "lci/runtime/watch_list.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/error.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::detail {

class runtime_impl_t;

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

  // The device's parts (the header comment); callers use them directly.
  device_backlog_t& backlog() { return backlog_; }
  device_receives_t& receives() { return receives_; }
  device_accounting_t& accounting() { return accounting_; }
  const device_accounting_t& accounting() const { return accounting_; }

  // device_backlog_t::run_or_backlog, which every protocol step goes
  // through.
  template <typename Step>
  error_t run_or_backlog(const Step& step) {
    return backlog_.run_or_backlog(step);
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

  // No backlog step is unfinished and no operation is in flight: every
  // send, RMA and rendezvous (either side) of the device finished. Posted
  // receives still waiting for a message do not count.
  bool drained() const {
    // The backlog first: a step that finished armed its request's
    // in-flight mark before its count's release, which steps_left()'s
    // acquire pairs with, so the in-flight load below sees the mark (or
    // its disarm). Hence this order.
    if (backlog_.steps_left()) return false;
    return accounting_.in_flight_none();
  }

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
  // A copy of `attr` with the net_* fields the network device resolved,
  // and the device's uid (unique in the process).
  static attr_device_t resolved_attr(const attr_device_t& attr,
                                     const backend::net_device_attr_t& net_attr);
  // What this device's posted packets carry (pool_t::mark_receive): device
  // uids are unique in the process, and 0 is no mark.
  std::uint32_t receive_mark() const { return static_cast<std::uint32_t>(attr_.uid) + 1; }

  runtime_impl_t* const runtime_;
  std::unique_ptr<backend::net_device_t> net_;
  const attr_device_t attr_;  // net_* fields resolved from the network device
  packet_pool_impl_t* const packet_pool_;
  device_pools_t* const pools_;  // the runtime's (see device_pools_t)
  std::unique_ptr<endpoint_impl_t> default_endpoint_;
  util::spinlock_t endpoints_lock_;
  std::vector<std::unique_ptr<endpoint_impl_t>> endpoints_;  // under endpoints_lock_
  device_backlog_t backlog_;
  device_receives_t receives_;
  device_accounting_t accounting_;
  watch_list_t watch_list_;
  rdv_table_t rdv_table_;
  // Apart from the rendezvous table's lock (progressing threads): the
  // sequence is written by the threads that call collectives.
  alignas(util::cache_line_bytes) collective_state_t collective_;
};

}  // namespace lci::detail
