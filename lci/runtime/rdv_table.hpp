// rdv_table_t: rendezvous ids. Both sides of a rendezvous name their
// request to the peer by a small id, not by a pointer: the receive's id
// must fit the 28-bit immediate value of a FIN or a write-with-immediate,
// and the send's comes back in the RTR, where a peer's bytes must be looked
// up, never dereferenced. Ids are reused after take().
//
// Thread safety: add(), at() and take() may run concurrently (one spinlock;
//                each is a few loads and stores).
// Blocking:      spins only while another thread is inside one of them.
// Allocation:    add() may grow the slot vector (amortised; rare path).
// Limits:        2^28 ids in use at once; beyond it add() throws
//                std::length_error naming the limit.
#pragma once

#include <cstdint>
#include <vector>

#include "lci/util/spinlock.hpp"

namespace lci::detail {

struct request_t;

class rdv_table_t {
 public:
  std::uint32_t add(request_t* request);
  // Removes and returns the request of `id`; throws std::logic_error naming
  // the id when none is stored (a corrupted or duplicated FIN).
  request_t* take(std::uint32_t id);
  // The request of `id`, left in place (the chunks of a copied rendezvous
  // find their receive; the last one takes it). Throws as take().
  request_t* at(std::uint32_t id);

 private:
  request_t* slot_in_use(std::uint32_t id) const;  // under lock_; throws as take()

  util::spinlock_t lock_;
  std::vector<request_t*> slots_;      // under lock_
  std::vector<std::uint32_t> free_;    // under lock_
};

}  // namespace lci::detail
