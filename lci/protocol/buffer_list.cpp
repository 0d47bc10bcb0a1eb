// Buffer lists (paper §3.3.1, "a list of source and target buffers in a
// single posting operation"): an operation whose local side is a list of
// buffers is one message, one handshake and one completion. The list is
// staged through one contiguous buffer the runtime owns: gathered into it
// before an outgoing operation, scattered out of it after an incoming one
// completes. The staged operation then takes the ordinary protocols
// (post_comm): inject, buffer copy or rendezvous by the list's total size.
// docs/design/protocol.md, "Buffer lists", states the contract.
#include <cstddef>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "lci/comp/comp_impl.hpp"
#include "lci/protocol/protocol.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"

namespace lci::detail {

namespace {

// The staging buffer of one list operation and the user's completion
// object: signalled at most once by the staged operation, it scatters
// (incoming) and reports the list's status to the user's object.
// Ownership: two references, the post's and the completion's; whichever
// lets go last deletes it. The post keeps its reference across post_comm
// because a post may signal before it returns (allow_done(false)) or
// signal and then throw (a truncated zero-copy receive).
// Thread safety: signal() runs once, on whichever thread completes the
// staged operation; after the post returned posted only that thread
// touches the object.
class buffer_list_op_t final : public comp_impl_t {
 public:
  buffer_list_op_t(direction_t direction, const buffers_t& buffers, std::size_t total,
                   comp_impl_t* user_comp)
      : comp_impl_t(comp_kind_t::handler),
        direction_(direction),
        buffers_(buffers),
        total_(total),
        // One byte at least: the staged operation names a real buffer.
        staging_(new std::byte[total > 0 ? total : 1]),
        user_comp_(user_comp) {
    if (direction_ == direction_t::OUT) gather();
  }

  void* staging() const { return staging_.get(); }

  // The staged operation completed (later, or inside the post).
  void signal(status_t status) override {
    // relaxed: read only by the posting thread after a throw, and a post
    // that throws signalled (if at all) on that same thread.
    signalled_.store(true, util::mo_relaxed);
    const status_t finished = finish(status);  // scatters even when nobody is told
    if (user_comp_ != nullptr) user_comp_->signal(finished);
    release(1);
  }
  bool signalled() const { return signalled_.load(util::mo_relaxed); }  // relaxed: see signal()

  // Drops `count` references; the last one deletes the object.
  void release(int count) {
    // acq_rel: whoever deletes sees everything the other holder did.
    if (refs_.fetch_sub(count, util::mo_acq_rel) == count) delete this;
  }

  // What the user sees of the staged operation's status: scattered (a done
  // incoming one) and naming no single buffer.
  status_t finish(status_t status) const {
    if (direction_ == direction_t::IN && status.is_done()) scatter(status.size);
    status.buffer = nullptr;
    return status;
  }

 private:
  void gather() {
    std::byte* at = staging_.get();
    for (const buffer_t& buffer : buffers_) {
      if (buffer.size > 0) std::memcpy(at, buffer.base, buffer.size);
      at += buffer.size;
    }
  }
  void scatter(std::size_t size) const {
    LCI_ASSERT(size <= total_, "a staged receive got more than the list holds");
    const std::byte* at = staging_.get();
    for (const buffer_t& buffer : buffers_) {
      if (size == 0) break;
      // Equivalent mutants: bound. At buffer.size == size both arms are the same value.
      const std::size_t piece = buffer.size < size ? buffer.size : size;
      if (piece > 0) std::memcpy(buffer.base, at, piece);
      at += piece;
      size -= piece;
    }
  }

  const direction_t direction_;
  const buffers_t buffers_;
  const std::size_t total_;
  const std::unique_ptr<std::byte[]> staging_;
  comp_impl_t* const user_comp_;
  util::atomic<int> refs_{2};
  util::atomic<bool> signalled_{false};
};

std::size_t total_size(const buffers_t& buffers) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const buffer_t& buffer = buffers[i];
    if (buffer.base == nullptr && buffer.size > 0) {
      throw std::invalid_argument("local_buffers[" + std::to_string(i) +
                                  "]: base = nullptr with size = " + std::to_string(buffer.size));
    }
    // Equivalent mutants: bound:0. At equality total + buffer.size is SIZE_MAX, which the
    // second test refuses anyway (as a signed size it is -1).
    if (buffer.size > std::numeric_limits<std::size_t>::max() - total ||
        static_cast<std::int64_t>(total + buffer.size) < 0) {
      throw std::invalid_argument("local_buffers: the sizes overflow at local_buffers[" +
                                  std::to_string(i) + "] (size = " +
                                  std::to_string(buffer.size) + ")");
    }
    total += buffer.size;
  }
  return total;
}

}  // namespace

status_t post_buffer_list(post_args_t args, const buffers_t& buffers) {
  if (args.buffer != nullptr || args.size != 0) {
    throw std::invalid_argument(
        "local_buffers with local_buffer/size given too (size = " + std::to_string(args.size) +
        "): pass local_buffer = nullptr and size = 0 with a buffer list");
  }
  if (args.has_mr()) {
    throw std::invalid_argument("mr with local_buffers: a buffer list is staged through the "
                                "runtime's own buffer, so no registration applies");
  }
  const std::size_t total = total_size(buffers);
  // The list operation is the staged operation's completion object: it
  // frees the staging buffer when that completes, and signals the caller's.
  auto* list_op = new buffer_list_op_t(args.direction, buffers, total, args.comp);
  args.comp = list_op;
  args.buffer = list_op->staging();
  args.size = total;
  status_t status;
  try {
    status = post_comm(args);
  } catch (...) {
    // Nothing will signal after a throw: drop the completion's reference
    // too unless it was used.
    list_op->release(list_op->signalled() ? 1 : 2);
    throw;
  }
  if (status.is_posted()) {
    list_op->release(1);  // the staged operation signals (or has)
    return status;
  }
  // Done or retry: the staged operation never signals.
  status = list_op->finish(status);
  list_op->release(2);
  return status;
}

}  // namespace lci::detail
