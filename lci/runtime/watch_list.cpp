#include "lci/runtime/watch_list.hpp"

#include <utility>

#include "lci/util/assert.hpp"

namespace lci::detail {

bool watch_list_t::link(request_t* request, const util::atomic<bool>& peer_dead) {
  LCI_ASSERT(!request->failed, "watching a failed request");
  LCI_ASSERT(request->watch_prev == nullptr && request->watch_next == nullptr,
             "a request watched twice");
  util::spinlock_guard_t guard(lock_);
  // relaxed: runtime_impl_t::fail_peer() sets the flag before it takes this
  // lock to scan, so holding the lock orders the load after the store or
  // this link before the scan.
  if (peer_dead.load(util::mo_relaxed)) return false;
  request->watched = true;
  request->watch_next = head_;
  if (head_ != nullptr) head_->watch_prev = request;
  head_ = request;
  return true;
}

bool watch_list_t::unlink(request_t* request) {
  // `watched` is written before the request is shared (link() runs before
  // the request is handed to a table or a peer), so reading it here is safe.
  if (!request->watched) return true;
  util::spinlock_guard_t guard(lock_);
  if (request->failed) return false;
  remove_locked(request);
  request->watched = false;
  return true;
}

void watch_list_t::remove_locked(request_t* request) {
  if (request->watch_prev != nullptr) {
    request->watch_prev->watch_next = request->watch_next;
  } else {
    LCI_ASSERT(head_ == request, "a watched request is not in its device's list");
    head_ = request->watch_next;
  }
  if (request->watch_next != nullptr) request->watch_next->watch_prev = request->watch_prev;
  request->watch_prev = request->watch_next = nullptr;
}

bool watch_list_t::is_failed(request_t* request) {
  if (!request->watched) return false;
  util::spinlock_guard_t guard(lock_);
  return request->failed;
}

void watch_list_t::fail(int rank, std::vector<request_t*>* victims) {
  util::spinlock_guard_t guard(lock_);
  for (request_t* request = head_; request != nullptr;) {
    request_t* next = request->watch_next;
    if (request->status.rank == rank) {
      remove_locked(request);
      request->failed = true;
      // Finished for the user once its comp is signalled; only the device
      // still holds it. Still counted in flight: the caller disarms it
      // after the signal (runtime_impl_t::fail_peer).
      victims->push_back(request);
      failed_.push_back(request);
    }
    request = next;
  }
}

std::vector<request_t*> watch_list_t::take_failed() {
  util::spinlock_guard_t guard(lock_);
  return std::exchange(failed_, {});
}

}  // namespace lci::detail
