// watch_list_t: the requests of one device that wait on a peer while the
// network holds nothing of them (docs/design/lifecycle.md, "Crashed peers"),
// and those a peer's crash failed. One list per device, not per runtime, so
// that threads posting through their own devices (paper §3.3, resource
// replication) take no lock in common: a named receive or a rendezvous step
// touches only its own device's list.
//
// Thread safety: every member may be called concurrently; one spinlock per
//                list guards the links, `failed` and the failed requests.
// Blocking:      never (the lock is held for a few pointer writes, or for
//                one scan in fail()).
// Ownership:     the list owns nothing it links; failed requests are the
//                caller's again through take_failed().
// Allocation:    fail() appends to vectors (the crash path is rare).
#pragma once

#include <vector>

#include "lci/runtime/request.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::detail {

class watch_list_t {
 public:
  watch_list_t() = default;
  watch_list_t(const watch_list_t&) = delete;
  watch_list_t& operator=(const watch_list_t&) = delete;

  // Links `request` (status.rank names its peer) unless `peer_dead` is set,
  // which is read under the lock: fail() takes the lock after setting it,
  // so a request is either linked before fail() scans or sees the flag.
  // Returns false, linking nothing, when the peer is dead.
  [[nodiscard]] bool link(request_t* request, const util::atomic<bool>& peer_dead);
  // Unlinks a request before its normal completion; false when fail() has
  // taken it already. True for a request that was never linked.
  [[nodiscard]] bool unlink(request_t* request);
  // Whether fail() took `request`.
  bool is_failed(request_t* request);
  // Unlinks every request naming `rank`, marks it failed, keeps it (a
  // matching table, the rdv table or a backlogged step may still name it)
  // and appends it to `victims` for the caller to complete; each stays
  // counted in flight until the caller disarms it after the signal.
  void fail(int rank, std::vector<request_t*>* victims);
  // The failed requests kept so far, handed over (device close).
  std::vector<request_t*> take_failed();

 private:
  // Takes a linked request out of the list (lock_ held).
  void remove_locked(request_t* request);

  // Its own line: the device's other hot fields are written by progress.
  alignas(util::cache_line_bytes) util::spinlock_t lock_;
  request_t* head_ = nullptr;          // under lock_
  std::vector<request_t*> failed_;     // under lock_
};

}  // namespace lci::detail
