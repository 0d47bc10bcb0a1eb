// The public value types of the LCI API that are not generated: scalar
// aliases and constants, status_t, rmr_t, callback signatures and the
// allocator hook. Resource handles, attribute structs, enums and the
// operation functors come from the API description (lci/api/lci_api.def)
// through tools/api_gen and live in the generated lci_generated.hpp.
//
// Thread safety: plain values; copy them freely across threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "lci/util/error.hpp"

namespace lci {

using tag_t = std::uint64_t;
// Remote completion handle: 0 means none; registered ids start at 1.
using rcomp_t = std::uint32_t;
using net_imm_data_t = std::uint32_t;
using matching_entry_key_t = std::uint64_t;
// The value a matching engine stores under a key (a receive descriptor, an
// unexpected-send packet); the engine never dereferences it. nullptr is
// never a valid value.
using matching_entry_val_t = void*;

// The name of a resource allocated without one (the `name` attribute's
// default), as upstream's. Defined in lci_types.cpp; a program may point it
// elsewhere before allocating (each allocation copies the pointer).
extern const char* DEFAULT_NAME;

namespace detail {
// The p_impl of lci.hpp's MR_DEVICE and MR_UNKNOWN. mr_t counts 1 .. 2 as
// empty (lci_api.def: `resource mr [sentinels=2]`), so get_impl() refuses
// them; the runtime tells them apart with resolve_mr (lci/runtime/resolve.hpp).
inline constexpr std::uintptr_t mr_device_sentinel = 0x1;
inline constexpr std::uintptr_t mr_unknown_sentinel = 0x2;
}  // namespace detail

inline constexpr int ANY_SOURCE = -1;
inline constexpr tag_t ANY_TAG = ~tag_t(0);
inline constexpr matching_entry_val_t MATCHING_ENTRY_VAL_NULL = nullptr;

enum class direction_t : std::uint8_t { OUT, IN };

// Upstream's libfabric locking flags, the values of the device attribute
// ofi_lock_mode (a plain uint64_t, as upstream's): an ofi device guards its
// endpoint with one lock; the calls whose TRYLOCK flag is set try it (a
// post finding it held returns retry_lock, a poll reports nothing), the
// others wait for it; LCI_NET_LOCK_MR makes registration take it (waiting)
// too. 0 is the default: sends, receives and polls try the lock, which is
// LCI_NET_TRYLOCK_SEND | LCI_NET_TRYLOCK_RECV | LCI_NET_TRYLOCK_POLL
// (upstream's 0 leaves the locking to libfabric; this device's lock also
// guards its own bookkeeping, so one is always taken). The simulator and
// the verbs backend lock otherwise and ignore it. Values from
// LCI_NET_TRYLOCK_MAX on are refused (std::invalid_argument at
// alloc_device).
enum attr_net_lock_mode_t {
  LCI_NET_TRYLOCK_SEND = 1,
  LCI_NET_TRYLOCK_RECV = 1 << 1,
  LCI_NET_TRYLOCK_POLL = 1 << 2,
  LCI_NET_LOCK_MR = 1 << 3,
  LCI_NET_LOCK_ALL =
      LCI_NET_TRYLOCK_SEND | LCI_NET_TRYLOCK_RECV | LCI_NET_TRYLOCK_POLL | LCI_NET_LOCK_MR,
  LCI_NET_TRYLOCK_MAX = 1 << 4,
};

// An optional value as upstream's API spells it (its own stand-in for
// std::optional): set or not, with the value kept either way. The operation
// functors here take their options through setters instead; this type is
// for programs that use upstream's name.
template <typename T>
struct option_t {
  T m_value;
  bool m_is_set;

  option_t() : m_value(), m_is_set(false) {}
  option_t(T value) : m_value(value), m_is_set(true) {}  // NOLINT: implicit, as upstream's
  // A default value that counts as set or not, as `is_set` says.
  option_t(T value, bool is_set) : m_value(value), m_is_set(is_set) {}

  bool is_set() const { return m_is_set; }
  T get_value() const { return m_value; }
  T get_value_or(T fallback) const { return m_is_set ? m_value : fallback; }
  // Writes the value to *out and returns true when set; false otherwise.
  bool get_set_value(T* out) const {
    if (!m_is_set) return false;
    *out = m_value;
    return true;
  }
  operator T() const { return m_value; }  // NOLINT: implicit, as upstream's
};

// What a matching key is made of (paper §3.3). `none` matches any send
// with any receive of the same matching engine.
// max: upstream's boundary marker; no operation accepts it.
enum class matching_policy_t : std::uint8_t { none, rank_only, tag_only, rank_tag, max };

enum class matching_entry_type_t : std::uint8_t { send, recv };

// When a local completion fires for an outgoing operation: `memory` once
// the buffer may be reused, `network` once the data reached the target.
enum class comp_semantic_t : std::uint8_t { memory, network };

// A contiguous buffer: what status_t::get_buffer() returns, and an entry of
// a buffer list.
struct buffer_t {
  void* base = nullptr;
  std::size_t size = 0;
  // Upstream's status_t::get_buffer() returns the bare pointer: code written
  // for it compiles here too, whether it keeps a void* (`void* p =
  // status.get_buffer();`, `if (status.get_buffer())`) or casts to the type
  // it expects (`(char*) status.get_buffer()`, as from a void*).
  operator void*() const { return base; }  // NOLINT: implicit by design
  template <typename T, typename = std::enable_if_t<std::is_object_v<T>>>
  explicit operator T*() const {
    return static_cast<T*>(base);
  }
};
// A buffer list: the local side of one operation made of several buffers,
// in order (the local_buffers option of the post operations; see
// docs/design/protocol.md, "Buffer lists").
using buffers_t = std::vector<buffer_t>;

// The result of an operation, given back by a post (done), by a completion
// object later (posted) or by cq_pop/sync_test.
struct status_t {
  error_t error = errorcode_t::retry;
  int rank = -1;              // the peer: target of an OUT op, source of an IN op
  // The local buffer. An incoming AM: runtime-allocated (the user frees
  // it), or, for a zero_copy_am completion object and size <=
  // get_max_bcopy_size(), inside a packet (the user returns it with
  // put_upacket).
  void* buffer = nullptr;
  std::size_t size = 0;       // bytes sent/received
  tag_t tag = 0;
  void* user_context = nullptr;

  status_t() = default;
  status_t(error_t error_) : error(error_) {}  // NOLINT: implicit by design
  // `return errorcode_t::done;` from a function returning status_t (a graph
  // node function, say) needs this one: C++ applies one user-defined
  // conversion, not errorcode_t -> error_t -> status_t.
  status_t(errorcode_t code) : error(code) {}  // NOLINT: implicit by design
  // A done status carrying only a context (upstream's, for handlers and
  // graph nodes that complete at once).
  explicit status_t(void* user_context_) : error(errorcode_t::done), user_context(user_context_) {}

  bool is_done() const { return error.is_done(); }
  bool is_posted() const { return error.is_posted(); }
  bool is_retry() const { return error.is_retry(); }
  void set_done() { error = errorcode_t::done; }
  void set_posted() { error = errorcode_t::posted; }
  void set_retry() { error = errorcode_t::retry; }
  error_t get_error() const { return error; }
  int get_rank() const { return rank; }
  // The payload as one buffer (an incoming AM: see `buffer`); converts to
  // void* as upstream's does.
  buffer_t get_buffer() const { return {buffer, size}; }
  std::size_t get_size() const { return size; }
  tag_t get_tag() const { return tag; }
  void* get_user_context() const { return user_context; }
};

// A peer's registered memory, as plain data a program may copy into a
// message (get_rmr at the owner, then any transport): upstream's three
// fields, in its order, 24 bytes, so that programs shipping it raw between
// processes (in a fixed-size field, say) work unchanged. A put or get of
// `size` bytes at `remote_disp` addresses [base + remote_disp,
// base + remote_disp + size) at the peer.
//   base         where remote_disp counts from: get_rmr gives the
//                registration's start; a program may move it inside.
//   mr_base      the registration's start (0: unknown; the access is then
//                addressed from base).
//   opaque_rkey  the network's key.
// Limits: the region's size is not in it, so bounds are checked where the
// access lands: by the target's network (a NIC's protection; the
// simulator's; the emulated verbs device's), or, over networks where a bad
// access would break more than itself (libfabric's shm and tcp), by the
// target's runtime before any byte moves (checked RMA,
// docs/design/protocol.md). The initiator refuses, with
// std::invalid_argument, only what is malformed in itself: a base below
// mr_base, or an access whose end passes 2^64. The raw network layer
// (net_post_put, net_post_get, ...) posts to the network directly: an
// access outside the region there is the network's to refuse (docs/api_compat.md).
// Faults: an access the target refuses (outside the registration, or a
// stale key: the region was deregistered there) fails that one operation:
// its completion object gets errorcode_t::fatal; progress() throws it only
// when nothing else can report it (no completion object, or an injected put
// that was already done). The connection and the peer go on working.
struct rmr_t {
  std::uintptr_t base = 0;
  std::uintptr_t mr_base = 0;
  std::uint64_t opaque_rkey = 0;
  bool is_empty() const { return base == 0 && opaque_rkey == 0; }
};
static_assert(sizeof(rmr_t) == 24 && offsetof(rmr_t, base) == 0 &&
                  offsetof(rmr_t, mr_base) == 8 && offsetof(rmr_t, opaque_rkey) == 16,
              "rmr_t is upstream's layout: programs ship it raw between processes");

// The empty remote region (upstream's name).
inline const rmr_t RMR_NULL{};

// A completion of the raw network layer (net_post_*, returned by
// net_poll_cq; docs/api_compat.md, "Raw network layer"). SEND, WRITE and
// READ are local completions of the posts with a memory region (the "s"
// variants report none); RECV is a message that landed in a net_post_recv
// buffer; REMOTE_WRITE is the target's side of a put with immediate data;
// ERROR an operation the network failed (rank: the peer; user_context: the
// failed post's, nullptr for an "s" post) or the network's report that
// `rank` died (user_context nullptr), once per device and dead rank.
enum class net_opcode_t : std::uint8_t { SEND, RECV, WRITE, REMOTE_WRITE, READ, ERROR };

const char* get_net_opcode_str(net_opcode_t opcode);

struct net_status_t {
  net_opcode_t opcode = net_opcode_t::SEND;
  int rank = -1;                 // the peer: source of RECV/REMOTE_WRITE, target otherwise
  void* user_context = nullptr;  // the post's (RECV: net_post_recv's; REMOTE_WRITE: nullptr)
  std::size_t length = 0;        // bytes delivered (RECV, REMOTE_WRITE) or moved
  net_imm_data_t imm_data = 0;   // RECV of a send with imm_data, and REMOTE_WRITE
};

// Called with every status a handler completion object receives. Runs on
// the thread that completed the operation (inside progress or a post); it
// must not call progress() (the runtime detects this and throws).
using comp_handler_t = void (*)(status_t status);

// Completion graphs (paper §3.2).
using graph_node_t = void*;
inline const graph_node_t GRAPH_START = reinterpret_cast<graph_node_t>(0x1);
inline const graph_node_t GRAPH_END = reinterpret_cast<graph_node_t>(0x2);
// Runs a node: a done status completes the node at once, posted means the
// node completes when its operation signals the graph.
using graph_node_run_cb_t = status_t (*)(void* value);
using graph_edge_run_cb_t = void (*)(status_t status, void* src_value, void* dst_value);
using graph_node_free_cb_t = void (*)(void* value);
// A node that does nothing but join its edges (upstream's name): graph_add_node
// accepts a null function and completes such a node as soon as it runs.
inline constexpr graph_node_run_cb_t GRAPH_NODE_DUMMY_CB = nullptr;

using reduce_op_t = void (*)(const void* left, const void* right, void* dst, std::size_t n);

// Upstream's exception for a failure tied to a peer, with the peer's rank.
// Declared so that programs catching it compile; this runtime still reports
// a crashed peer as its base class std::runtime_error (docs/api_compat.md).
class peer_failure_error : public std::runtime_error {
 public:
  peer_failure_error(int failed_rank, const std::string& message)
      : std::runtime_error(message), failed_rank_(failed_rank) {}
  int failed_rank() const noexcept { return failed_rank_; }

 private:
  int failed_rank_;
};

// Where the runtime gets memory for incoming active messages and other
// buffers it hands to the user (who frees them with the same allocator).
class allocator_base_t {
 public:
  virtual ~allocator_base_t() = default;
  virtual void* allocate(std::size_t size) = 0;
  virtual void deallocate(void* ptr) = 0;
};

// The allocator in force until set_allocator installs another (and again
// after set_allocator(nullptr)): malloc and free. A zero-byte request gets
// a one-byte block, so an empty active message still has a buffer to free.
struct allocator_default_t : public allocator_base_t {
  void* allocate(std::size_t size) override { return std::malloc(size == 0 ? 1 : size); }
  void deallocate(void* ptr) override { std::free(ptr); }
};
// The process's default allocator (what get_allocator() returns first).
extern allocator_default_t g_allocator_default;

}  // namespace lci
