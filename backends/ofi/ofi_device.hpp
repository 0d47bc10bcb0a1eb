// ofi_device_t: one LCI network device over libfabric (paper §4.2.4): the
// net_device_t of backends/backend.hpp on its own domain, FI_EP_RDM
// endpoint, completion queue and FI_AV_TABLE address vector. How each call
// maps onto libfabric, the emulated put-with-immediate, multi-receive
// buffers, liveness checks and faults: docs/backends/ofi.md.
//
// Thread safety: every method from any thread. Posts and poll_comp take
//                the endpoint lock as the requested lock_mode says: tried
//                (busy: retry_lock, or 0 completions; the default for all
//                of them) or waited for; registration runs outside it, on
//                the provider's lock, unless lock_mode has net_lock_mr.
// Blocking:      posts and poll_comp never, except those lock_mode makes
//                wait for the lock (bounded by its holder's critical
//                section); register/deregister may wait on the provider's
//                registration lock (and the endpoint lock with net_lock_mr).
// Ownership:     as backends/backend.hpp: a posted buffer is libfabric's
//                until its completion is polled (a multi-receive buffer:
//                until the completion that releases it).
// Allocation:    at construction; the data path allocates nothing.
// Limits:        net_max_sends send-side operations in flight, net_max_recvs
//                posted receives (a multi-receive buffer counts one); beyond
//                either, or when the provider says -FI_EAGAIN, retry_nomem.
//                max_msg_size <= 2^32 - 1.
// Faults:        completions with `fault` set (connection errors:
//                peer_crashed; other RMA errors: protection); a dead peer is
//                reported once as peer_down. shm does not check remote keys.
// Life cycle:    made by ofi_context_t::alloc_device (make_device, then
//                insert_peers), used, destroyed: posted receives are
//                dropped, accepted injects still arrive. Registrations must
//                be deregistered first (else the domain leaks, on stderr).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.hpp"
#include "backends/ofi/ofi_peers.hpp"

struct fi_info;
struct fid_fabric;

namespace lci::backend::ofi {

// Defaults for fields of the requested attributes left 0.
inline constexpr std::size_t net_max_sends_default = 256;
inline constexpr std::size_t net_max_recvs_default = 256;
inline constexpr std::size_t net_max_cqes_default = 1024;
// lock_mode when the request leaves it 0: sends, receives and polls try the
// endpoint lock, so that contention is a retry (paper §4.2.2).
inline constexpr std::uint64_t lock_mode_default =
    backend::net_lock_try_send | backend::net_lock_try_recv | backend::net_lock_try_poll;
// multi_recv_min_free when the request leaves it 0: the runtime's default
// packet size (8 KiB).
inline constexpr std::size_t multi_recv_min_free_default = 8192;

class ofi_device_t : public backend::net_device_t {
 public:
  // This endpoint's libfabric name (fi_getname), to publish to the peers.
  virtual const std::vector<char>& name() const = 0;
  // Inserts every rank's endpoint name, in rank order, and maps rank to
  // address and back. Called once, before any post.
  virtual void insert_peers(const std::vector<std::vector<char>>& names) = 0;
};

// Opens a device's domain, endpoint, CQ and AV over `info` and `fabric` and
// enables the endpoint; its AV stays empty until insert_peers().
// native_put_imm: the provider names the source of remote CQ data (else
// put-with-immediate is emulated). Throws std::runtime_error naming the
// libfabric call that failed.
std::unique_ptr<ofi_device_t> make_device(const fi_info* info, fid_fabric* fabric,
                                          const peer_table_t& peers, int rank_me,
                                          bool native_put_imm,
                                          const backend::net_device_attr_t& requested);

}  // namespace lci::backend::ofi
