// Crashed peers (docs/design/runtime.md, "Crashed peers"): the runtime's
// record of dead ranks and of the requests that wait on a peer while the
// network holds nothing of them, so that a peer's death fails them instead
// of leaving them waiting forever. Requests the network holds (eager sends,
// RMAs, rendezvous writes) need no watching: the backend completes each with
// a peer_crashed fault (backends/backend.hpp).
#include <stdexcept>
#include <string>
#include <vector>

#include "lci/comp/comp_impl.hpp"
#include "lci/protocol/request.hpp"
#include "lci/runtime/device_impl.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/assert.hpp"

namespace lci::detail {

void runtime_impl_t::check_peer_alive(int rank) const {
  if (!is_peer_dead(rank)) return;
  throw std::runtime_error("lci: rank " + std::to_string(rank) +
                           " crashed (reported by the network): no operation to or from it "
                           "can complete, so posting one is refused");
}

bool runtime_impl_t::watch(request_t* request) {
  LCI_ASSERT(!request->failed, "watching a failed request");
  LCI_ASSERT(request->watch_prev == nullptr && request->watch_next == nullptr,
             "a request watched twice");
  const int rank = request->status.rank;
  LCI_ASSERT(rank >= 0 && rank < rank_n_, "a watched request names no peer");
  util::spinlock_guard_t guard(watch_lock_);
  // relaxed: fail_peer() sets the flag under watch_lock_, which orders it.
  if (peers_dead_[static_cast<std::size_t>(rank)].load(util::mo_relaxed)) return false;
  request->watched = true;
  request->watch_next = watched_head_;
  if (watched_head_ != nullptr) watched_head_->watch_prev = request;
  watched_head_ = request;
  return true;
}

bool runtime_impl_t::unwatch(request_t* request) {
  // `watched` is written before the request is shared (watch() runs before
  // the request is handed to a table or a peer), so reading it here is safe.
  if (!request->watched) return true;
  util::spinlock_guard_t guard(watch_lock_);
  if (request->failed) return false;
  if (request->watch_prev != nullptr) {
    request->watch_prev->watch_next = request->watch_next;
  } else {
    LCI_ASSERT(watched_head_ == request, "a watched request is not in the list");
    watched_head_ = request->watch_next;
  }
  if (request->watch_next != nullptr) request->watch_next->watch_prev = request->watch_prev;
  request->watch_prev = request->watch_next = nullptr;
  request->watched = false;
  return true;
}

bool runtime_impl_t::is_failed(request_t* request) {
  if (!request->watched) return false;
  util::spinlock_guard_t guard(watch_lock_);
  return request->failed;
}

bool runtime_impl_t::fail_peer(int rank) {
  check_rank(rank, "the crashed peer's rank");
  std::vector<request_t*> victims;  // the crash path may allocate: it is rare
  {
    util::spinlock_guard_t guard(watch_lock_);
    auto& dead = peers_dead_[static_cast<std::size_t>(rank)];
    // relaxed: written and re-read under watch_lock_ (see is_peer_dead()).
    if (dead.load(util::mo_relaxed)) return false;
    dead.store(true, util::mo_relaxed);
    for (request_t* request = watched_head_; request != nullptr;) {
      request_t* next = request->watch_next;
      if (request->status.rank == rank) {
        if (request->watch_prev != nullptr) {
          request->watch_prev->watch_next = next;
        } else {
          watched_head_ = next;
        }
        if (next != nullptr) next->watch_prev = request->watch_prev;
        request->watch_prev = request->watch_next = nullptr;
        request->failed = true;
        // Finished for the user; only the graveyard still holds it.
        request->in_flight.disarm();
        victims.push_back(request);
        failed_requests_.push_back(request);
      }
      request = next;
    }
  }
  // Outside the lock: a handler completion object runs user code. A failed
  // request is the graveyard's: only its status and comp are read here, and
  // nobody else writes them once it is shared.
  for (request_t* request : victims) {
    status_t status = request->status;
    status.error = errorcode_t::fatal;
    LCI_ASSERT(status.rank == rank, "a failed request names another rank");
    if (request->comp != nullptr) request->comp->signal(status);
  }
  return true;
}

void runtime_impl_t::release_failed(device_impl_t* device) {
  std::vector<request_t*> released;
  {
    util::spinlock_guard_t guard(watch_lock_);
    auto kept = failed_requests_.begin();
    for (request_t* request : failed_requests_) {
      if (request->device == device) {
        released.push_back(request);
      } else {
        *kept++ = request;
      }
    }
    failed_requests_.erase(kept, failed_requests_.end());
  }
  for (request_t* request : released) {
    LCI_ASSERT(request->failed, "releasing a request no crash failed");
    if (!request->owned_mr.is_empty()) device->net().deregister_memory(&request->owned_mr);
    if (request->packet != nullptr) device->packet_pool()->pool.put(request->packet);
    delete request;
  }
}

}  // namespace lci::detail
