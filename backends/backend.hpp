// The network backend contract (paper §4.2): what the LCI runtime needs from
// a network, and nothing more. Protocol code above this line never names a
// specific backend; differences between networks are the capability fields
// of net_device_attr_t.
//
// Two levels, as in the paper:
//   net_context_t  one per runtime: global resources (fabric/domain, the
//                  rank's identity, the peers' addresses).
//   net_device_t   one per LCI device: the critical-path resources (send and
//                  completion queues, a shared receive queue, memory
//                  registrations). Threads that use different devices never
//                  contend inside the backend.
//
// Rules every backend follows (checked by tests/backends/conformance/):
// - Never blocks. A full send queue, an exhausted receive/completion queue, a
//   busy internal lock (try-lock wrapper, §4.2.2) or any other exhausted
//   resource returns a retry error_t (retry_nomem, retry_lock) and changes
//   nothing: the caller still owns its buffer and may post again.
// - Reliable delivery: every post that returned done/posted eventually
//   completes (or reports a fault). Ordering between messages is NOT
//   promised, not even between two sends to the same peer.
// - Destroying a device loses none of its accepted "s" posts: one that
//   returned done reaches its live target even when the device is destroyed
//   right after it, with no poll in between (the runtime's leaving barrier
//   ends with such a send). Posted receives are dropped.
// - A completion carries everything the runtime needs: opcode, peer rank,
//   length, immediate data and the user context given at post time.
// - Fatal misuse (bad rank, size over a limit, a post after free) is thrown
//   as std::invalid_argument / std::logic_error naming the argument and
//   value. Faults found by the network after the post (an RMA protection
//   fault at the target, a crashed peer) come back as a completion whose
//   `fault` is set; the victim's memory is never touched.
// - Dead peers are reported on the backend's own, not only through an
//   operation in flight: once per device and dead rank, poll_comp returns a
//   completion {opcode = peer_down, fault = peer_crashed, rank = the dead
//   rank, user_context = nullptr}, even when the device never posted to that
//   rank (a rank waiting for a message from it must hear of it too). A
//   backend reports it when it learns of the death (the simulator at once;
//   ofi when a peer's process is gone or its connection fails), and keeps
//   failing every operation to that rank with peer_crashed as before.
//
// Thread safety: every net_device_t method may be called concurrently from
//                any threads (backends serialise internally with try-locks).
// Ownership:     see each post_* comment: "s" variants (post_sends,
//                post_puts, post_putImms) copy the payload before returning
//                done and produce no local completion on success; a fault
//                found later (protection, crashed peer) still comes back as
//                a completion, with user_context == nullptr, since it is the
//                only place the caller can learn of it. The others keep the
//                caller's buffer until their completion is polled.
// Allocation:    at device creation; the data path does not allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "lci/util/error.hpp"

namespace lci::backend {

using net_imm_data_t = std::uint32_t;

// What a completion reports.
enum class net_opcode_t : std::uint8_t {
  send,          // local: a post_send finished; the buffer is the caller's again
  recv,          // local: a message arrived in a buffer given to post_recv
  write,         // local: a post_put / post_putImm finished
  remote_write,  // target side of a put-with-immediate: data is in place
  read,          // local: a post_get finished; the data is in the buffer
  peer_down,     // the backend's own report that `rank` died (fault = peer_crashed,
                 // user_context = nullptr): once per device and dead rank
};

const char* get_net_opcode_str(net_opcode_t opcode);

// A fault detected by the network after the post was accepted.
enum class net_fault_t : std::uint8_t {
  none,
  protection,    // RMA to an unregistered region, out of bounds or a stale key
  peer_crashed,  // the peer rank died; the operation will never complete
};

struct net_status_t {
  net_opcode_t opcode = net_opcode_t::send;
  net_fault_t fault = net_fault_t::none;
  int rank = -1;              // the peer: source of a recv/remote_write, target otherwise
  void* user_context = nullptr;  // from the post (recv: from post_recv)
  void* buffer = nullptr;     // recv: the posted buffer the message landed in
  std::size_t length = 0;     // bytes delivered/transferred
  net_imm_data_t imm_data = 0;  // recv of a send with imm, and remote_write
  std::uintptr_t fault_address = 0;  // protection: the remote address refused
  // recv into a buffer of post_recv_multi: the network writes no more into
  // that buffer after this completion (see post_recv_multi), and
  // buffer_messages says how many messages it took since it was posted (the
  // one this completion carries included; 0 on every other completion). The
  // caller cannot count them itself: other threads may still hold earlier
  // completions of the same buffer.
  bool buffer_released = false;
  std::size_t buffer_messages = 0;
};

// One line naming the fault, the peer rank and the address, e.g.
// "RMA protection fault: put of 64 bytes to rank 3 at 0x7f.. (unregistered)".
std::string describe_fault(const net_status_t& status);

// The unsolicited completion by which a device reports `rank` dead
// (net_opcode_t::peer_down, fault peer_crashed, no user_context).
net_status_t peer_down_status(int rank);

// What every post_* of a device checks first. Throws std::invalid_argument
// naming `op`: `rank` outside [0, ranks_count), `size` over `size_max`, or a
// null buffer with a size.
// Inline: every post checks; only the throw is out of line.
[[noreturn]] void throw_post_target(const char* op, int rank, int ranks_count,
                                    const void* buffer, std::size_t size, std::size_t size_max);
inline void check_post_target(const char* op, int rank, int ranks_count, const void* buffer,
                              std::size_t size, std::size_t size_max) {
  if (rank < 0 || rank >= ranks_count || size > size_max || (buffer == nullptr && size > 0)) {
    throw_post_target(op, rank, ranks_count, buffer, size, size_max);
  }
}

// A local memory registration.
struct net_mr_t {
  void* base = nullptr;
  std::size_t size = 0;
  void* opaque = nullptr;  // the backend's handle
  bool is_empty() const { return opaque == nullptr; }
};

// What a peer needs to address registered memory remotely; plain data a
// program may copy into a message. `size`: bytes registered from `base`
// (get_rmr: the whole region), 0 when unknown (a backend's own messages may
// leave it out). Backends do not check an access against it: the runtime
// does, on the initiator, before it posts (lci/protocol/rma.cpp), since not
// every network checks bounds at the target (docs/backends/ofi.md); what a
// network still refuses (a stale key) is a protection fault as above, or
// worse where bad_rkey_fails_alone is false (the runtime then checks at the
// target first).
struct net_rmr_t {
  std::uintptr_t base = 0;
  std::uint64_t rkey = 0;
  std::size_t size = 0;
  bool is_empty() const { return base == 0 && rkey == 0; }
};

// Settings only a verbs backend acts on (the runtime's ibv_* attributes,
// docs/backends/ibv.md): requested with a device. A backend whose context
// says reads_ibv_attr() == false ignores them, so the runtime refuses any
// value but the default before it asks (lci/runtime/unsupported_attrs.cpp).
enum class net_ibv_odp_t : std::uint8_t { none, explicit_odp, implicit_odp };
enum class net_ibv_prefetch_t : std::uint8_t { none, prefetch, prefetch_write, prefetch_no_fault };
enum class net_ibv_td_t : std::uint8_t { none, all_qp, per_qp };
struct net_ibv_attr_t {
  int gid_index = -1;  // the port's GID table index; -1: chosen by the backend
  bool force_gid_auto_select = false;  // choose even on InfiniBand (gid_index -1)
  net_ibv_odp_t odp = net_ibv_odp_t::none;  // on-demand paging of registrations
  net_ibv_prefetch_t prefetch = net_ibv_prefetch_t::none;  // of on-demand registrations
  net_ibv_td_t td = net_ibv_td_t::none;  // thread domains of the device's QPs
};

// Capabilities and limits; the protocol layer reads these instead of naming
// a transport.
// Bits of net_device_attr_t::lock_mode: the values of the API's
// attr_net_lock_mode_t (upstream's ofi_lock_mode flags; the runtime
// static_asserts that they agree).
inline constexpr std::uint64_t net_lock_try_send = 1;  // posts of sends, puts, gets
inline constexpr std::uint64_t net_lock_try_recv = 2;  // posts of receives
inline constexpr std::uint64_t net_lock_try_poll = 4;  // poll_comp
inline constexpr std::uint64_t net_lock_mr = 8;        // registration takes the lock too
inline constexpr std::uint64_t net_lock_mode_max = 15;

struct net_device_attr_t {
  std::size_t max_msg_size = 0;      // largest send/put/get payload
  std::size_t inject_size_max = 0;   // largest post_sends/post_puts payload
  bool supports_put_imm = false;
  // true: the local buffer of a send, put or get must be registered (a
  // net_mr_t passed with it). false: the network reads and writes local
  // memory unregistered (an empty net_mr_t), so the protocol registers only
  // what a peer addresses remotely. Packets are posted unregistered either
  // way (backends/<name> docs say how each meets that).
  bool requires_local_mr = true;
  // true: a put or get with a key the target does not honour (deregistered,
  // never registered, out of bounds) fails alone: a protection fault of that
  // operation, the connection intact. false: it breaks more than itself
  // (stalls the endpoint, or drops the connection with what it held), so
  // the runtime never posts a put or get to a key unchecked: the target
  // checks each against its registrations first (checked RMA,
  // docs/design/protocol.md).
  bool bad_rkey_fails_alone = true;
  std::size_t net_max_sends = 0;     // send queue depth (retry beyond it)
  std::size_t net_max_recvs = 0;     // posted receive buffers
  std::size_t net_max_cqes = 0;      // completion queue depth
  // Memory registrations a device holds at once (register_memory is
  // retry_nomem beyond it); 0: no limit the backend knows of. Resolved only:
  // the protocol reserves part of it for what finishes without a peer
  // (docs/design/protocol.md, "Registrations").
  std::size_t registrations_max = 0;
  // post_recv_multi works (libfabric's FI_MULTI_RECV). Requested: the caller
  // wants it; resolved: whether the device offers it (false: only post_recv).
  bool supports_multi_recv = false;
  // With supports_multi_recv: a multi-receive buffer is released once less
  // than this many bytes of it are free, so it is also the largest message
  // one is sure to take. Requested: the caller's largest message (0: the
  // device's default); resolved: the value in force.
  std::size_t multi_recv_min_free = 0;
  // Requested only: which calls try the device's lock (busy: retry_lock, or
  // a poll of nothing) and which wait for it (net_lock_* bits; 0: the
  // backend's default). Read by the ofi backend; the others have no such
  // lock and ignore it.
  std::uint64_t lock_mode = 0;
  // Requested only (see net_ibv_attr_t); the resolved attr repeats what the
  // device applied (an ibv device without on-demand paging resolves odp and
  // prefetch to none).
  net_ibv_attr_t ibv;
};

class net_device_t {
 public:
  virtual ~net_device_t() = default;
  virtual const net_device_attr_t& attr() const = 0;

  // Gives the network a buffer for one incoming message (shared receive
  // queue: any peer's message may land in it). Owned by the network until
  // its recv completion.
  [[nodiscard]] virtual error_t post_recv(void* buffer, std::size_t size,
                                          net_mr_t mr, void* user_context) = 0;
  // Gives the network one buffer for many incoming messages (shared receive
  // queue, like post_recv; requires attr().supports_multi_recv, else throws
  // std::logic_error). Messages land one after another, at whatever byte
  // offset the last left free (no alignment), and each completes as a recv
  // with `buffer` pointing at its bytes and this call's user_context. Once
  // less than attr().multi_recv_min_free bytes are free the network releases
  // the buffer: the completion of the message that filled it has
  // buffer_released set, or a completion of its own does (opcode recv,
  // buffer_released, buffer nullptr, length 0: no message). Owned by the
  // network until that completion; the bytes of each message stay as they
  // landed until the buffer is posted again.
  [[nodiscard]] virtual error_t post_recv_multi(void* buffer, std::size_t size,
                                                void* user_context) = 0;

  // Inject: copies size <= inject_size_max bytes; no completion.
  [[nodiscard]] virtual error_t post_sends(int rank, const void* buffer,
                                           std::size_t size,
                                           net_imm_data_t imm_data) = 0;
  [[nodiscard]] virtual error_t post_send(int rank, const void* buffer,
                                          std::size_t size, net_mr_t mr,
                                          net_imm_data_t imm_data,
                                          void* user_context) = 0;

  // RDMA write of [buffer, buffer+size) to rmr.base + offset at `rank`.
  [[nodiscard]] virtual error_t post_puts(int rank, const void* buffer,
                                          std::size_t size, std::uint64_t offset,
                                          net_rmr_t rmr) = 0;
  [[nodiscard]] virtual error_t post_put(int rank, const void* buffer,
                                         std::size_t size, net_mr_t mr,
                                         std::uint64_t offset, net_rmr_t rmr,
                                         void* user_context) = 0;
  // Write with immediate: the target also gets a remote_write completion
  // carrying imm_data (requires supports_put_imm).
  [[nodiscard]] virtual error_t post_putImms(int rank, const void* buffer,
                                             std::size_t size,
                                             std::uint64_t offset, net_rmr_t rmr,
                                             net_imm_data_t imm_data) = 0;
  [[nodiscard]] virtual error_t post_putImm(int rank, const void* buffer,
                                            std::size_t size, net_mr_t mr,
                                            std::uint64_t offset, net_rmr_t rmr,
                                            net_imm_data_t imm_data,
                                            void* user_context) = 0;
  // RDMA read of size bytes from rmr.base + offset at `rank` into buffer.
  [[nodiscard]] virtual error_t post_get(int rank, void* buffer, std::size_t size,
                                         net_mr_t mr, std::uint64_t offset,
                                         net_rmr_t rmr, void* user_context) = 0;

  // Moves up to statuses_max completions into `statuses`; returns how many.
  // Writes every field of each status it returns and nothing past them, so
  // the caller may pass uninitialised storage. May return 0 when a try-lock
  // is busy.
  virtual std::size_t poll_comp(net_status_t* statuses,
                                std::size_t statuses_max) = 0;

  // Registration may fail for lack of resources: returns retry_nomem and
  // leaves *mr empty. fatal (*mr empty): the network will never register
  // this region (over its largest registration, locked-memory limit, memory
  // it cannot pin); the protocol then moves the data without one.
  [[nodiscard]] virtual error_t register_memory(void* address, std::size_t size,
                                                net_mr_t* mr) = 0;
  // Every registration is deregistered before its device is destroyed (a
  // verbs PD, like an ofi domain, refuses to close with one standing; the
  // simulator reports such a device as a leftover).
  virtual void deregister_memory(net_mr_t* mr) = 0;
  // What a peer needs to address `mr`: base = mr.base, size = mr.size
  // (never 0), and the key. Throws std::invalid_argument for an empty mr.
  virtual net_rmr_t get_rmr(net_mr_t mr) const = 0;
};

class net_context_t {
 public:
  virtual ~net_context_t() = default;
  virtual int rank_me() const = 0;
  virtual int rank_n() const = 0;
  // Collective: every rank allocates its devices in the same order; the
  // n-th device of one rank talks to the n-th device of every other.
  // Precondition: one thread of a rank allocates at a time (two concurrent
  // calls get indices in lock order, which peers cannot know); the runtime
  // refuses overlapping device allocations with a clear error.
  virtual std::unique_ptr<net_device_t> alloc_device(
      const net_device_attr_t& requested) = 0;
  // Whether its devices act on net_device_attr_t::ibv (a verbs backend).
  virtual bool reads_ibv_attr() const { return false; }
  // What a device asks for when a request leaves net_max_sends,
  // net_max_recvs and net_max_cqes 0 (the rest of the result is 0): the
  // runtime reports them as the defaults (get_g_default_attr). 0s: the
  // backend does not say.
  virtual net_device_attr_t device_defaults() const { return {}; }
  // Whether this network's devices have put-with-immediate (every device's
  // net_device_attr_t::supports_put_imm equals it); read before any device
  // exists, to resolve the runtime's rdv_protocol.
  virtual bool supports_put_imm() const = 0;
};

}  // namespace lci::backend
