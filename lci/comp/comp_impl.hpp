// comp_impl_t: what every completion object (paper §3.2) is to the runtime:
// something a finished operation signals with its status_t. It is public
// (lci::comp_impl_t, as upstream's): a program may derive its own completion
// object from it, override signal(), and pass it wherever a comp_t goes
// (`lci::comp_t c(static_cast<void*>(obj))`, or `lci::comp_t c = obj`): as a
// post's local completion, to register_rcomp, to comp_signal, as a graph's
// or a collective's completion object.
//
// The contract of signal(), for the runtime's objects and a program's alike:
// Thread safety: signal() may run concurrently from any threads: inside
//                progress() of any device that carries one of the object's
//                operations (several threads progressing one device, or
//                several devices, call it at once), inside a post whose
//                operation completes at once while allow_done is false (the
//                post signals before it returns posted), and inside
//                comp_signal. The runtime takes no lock around it.
// Blocking:      signal() must not block, and must not call progress()
//                (called inside progress(), it gets std::logic_error); it
//                may post (a post that finds no resource returns retry).
// Status:        passed by value. error: done, or errorcode_t::fatal for an
//                operation the network failed (docs/api_compat.md); rank: the
//                peer; tag, user_context: the post's (a remote completion:
//                the sender's tag, user_context nullptr). buffer, size: the
//                local buffer and the bytes moved (send, put, get: the
//                post's buffer; recv: the receive buffer and the bytes that
//                arrived; a remote completion of an active message: a buffer
//                the program now owns and frees with get_allocator(), or,
//                with attr.zero_copy_am set and size <= get_max_bcopy_size(),
//                a packet it returns with put_upacket; a remote completion of
//                a put with signal: size the bytes written, buffer not
//                meaningful, as the program knows its own window).
// Ownership:     a program's object is the program's: the runtime never frees
//                it, not even when the runtime is freed. free_comp on it
//                deletes it (`delete`, as upstream's: only for an object made
//                with `new`). It must outlive every operation that signals it
//                and its register_rcomp registration. The runtime's own
//                objects (alloc_sync, alloc_cq, ...) belong to the runtime
//                until free_comp; one the program leaves outlives the
//                runtime until free_comp (which needs no runtime), or else
//                to the end of the process.
// attr:          the object's attributes (comp_t::get_attr_*). A program's
//                object starts with comp_type custom and the defaults; it may
//                set zero_copy_am before the object is first used (the runtime
//                reads it when an active message arrives for the object).
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_set>

#include "lci/api/lci_generated.hpp"
#include "lci/api/lci_types.hpp"

namespace lci::detail {

// waiter: a post's own, never a user's (waiter.hpp). custom: a program's
// own object; the typed operations (sync_test, cq_pop, counter_get, graph_*)
// refuse it.
enum class comp_kind_t : std::uint8_t { sync, cq, handler, counter, graph, waiter, custom };

// The program's objects alive now (constructed, not yet destroyed), so that
// free_comp tells one from a stale handle of a runtime's object without
// reading the object: a freed one cannot say what it was. Touched only when
// a program's object is made or destroyed, never on the data path.
class custom_comps_t {
 public:
  static void add(const void* comp) {
    std::lock_guard<std::mutex> guard(mutex());
    set().insert(comp);
  }
  static void remove(const void* comp) {
    std::lock_guard<std::mutex> guard(mutex());
    set().erase(comp);
  }
  static bool contains(const void* comp) {
    std::lock_guard<std::mutex> guard(mutex());
    return set().count(comp) != 0;
  }

 private:
  static std::mutex& mutex() {
    static std::mutex instance;
    return instance;
  }
  static std::unordered_set<const void*>& set() {
    static std::unordered_set<const void*> instance;
    return instance;
  }
};

class comp_impl_t {
 public:
  using attr_t = attr_comp_t;
  // A program's object: kind custom.
  comp_impl_t() : kind_(comp_kind_t::custom) {
    attr.comp_type = attr_comp_type_t::custom;
    custom_comps_t::add(this);
  }
  explicit comp_impl_t(const attr_t& attr_) : attr(attr_), kind_(comp_kind_t::custom) {
    attr.comp_type = attr_comp_type_t::custom;
    custom_comps_t::add(this);
  }
  // The runtime's objects.
  explicit comp_impl_t(comp_kind_t kind) : kind_(kind) {}
  virtual ~comp_impl_t() {
    if (kind_ == comp_kind_t::custom) custom_comps_t::remove(this);
  }
  comp_impl_t(const comp_impl_t&) = delete;
  comp_impl_t& operator=(const comp_impl_t&) = delete;

  virtual void signal(status_t status) = 0;
  comp_kind_t kind() const { return kind_; }
  // The zero_copy_am attribute: an eager active message is delivered in
  // its packet (docs/design/protocol.md, "Zero-copy active messages").
  bool zero_copy_am() const { return attr.zero_copy_am; }

  // Written by the allocation (or the program, for its own object) before
  // the object is shared; read-only afterwards.
  attr_t attr;

 private:
  const comp_kind_t kind_;
};

}  // namespace lci::detail
