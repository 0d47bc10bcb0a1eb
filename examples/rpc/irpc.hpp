// irpc.hpp: the LCI backend of iRPCLib, the imaginary RPC library of the
// LCI paper (§3.2, Listing 2), as a small header-only library.
//
// iRPCLib has two layers. Its upper layer registers RPC handlers under
// indices and (de)serialises arguments into contiguous buffers; this header
// is the backend layer underneath it, which
//   - sends a handler index (the tag) and a serialised buffer to a rank
//     (send_msg), and frees the buffer once the send completed (send_cb);
//   - hands incoming messages to the upper layer (poll_msg), whose buffers
//     the upper layer frees with std::free once it consumed them;
//   - makes progress on the calling thread's device (do_background_work).
// Every thread may send and poll. The design follows the listing: one
// device per thread (threads on different devices do not interfere), a
// shared completion handler for source completion, a shared completion
// queue for incoming messages, registered as a remote completion handle
// (rcomp) that peers send their active messages to.
//
// Two departures from the listing, and why:
//   - The state lives in a backend_t object and the thread's device in a
//     thread_context_t the thread passes in, instead of globals and a
//     `__thread` variable: the simulated network runs every rank of a job
//     in one process (globals would be shared by the ranks), and in its
//     deterministic mode the threads of a rank are fibers of one OS thread
//     (a thread-local would be shared by the threads).
//   - global_init allocates every thread's device, rather than each thread
//     in thread_init: allocating a device is collective and pairs devices
//     across ranks by allocation order, so devices are allocated from one
//     thread, in the same order on every rank.
//
//   irpc::backend_t backend;                          // one per rank
//   backend.global_init(threads_count, &rank_me, &rank_n);   // main thread
//   irpc::thread_context_t self = backend.thread_init(thread_index);
//   while (!backend.send_msg(self, rank, buffer, size, tag)) { ...other work... }
//   irpc::msg_t msg;
//   if (backend.poll_msg(&msg)) { ...consume...; std::free(msg.buf); }
//   backend.do_background_work(self);
//   backend.thread_fina(&self);  backend.global_fina();
//
// Thread safety: global_init/global_fina from one thread, with no other
//                call running; thread_init/thread_fina once per thread
//                index; send_msg, poll_msg and do_background_work from any
//                threads concurrently (each with its own thread context).
// Blocking:      send_msg, poll_msg and do_background_work never block;
//                global_fina progresses until every accepted send completed.
// Ownership:     a buffer passed to send_msg becomes the backend's when it
//                returns true (freed with std::free after the send) and
//                stays the caller's when it returns false. A message from
//                poll_msg is the caller's (std::free).
// Allocation:    global_init: the runtime, devices, completion objects. The
//                runtime allocates each incoming message's buffer (malloc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "lci.hpp"
#include "lci/util/atomic.hpp"

namespace irpc {

// An incoming message, as the upper layer receives it.
struct msg_t {
  int rank = -1;        // the sender
  lci::tag_t tag = 0;   // the RPC handler index
  void* buf = nullptr;  // the serialised arguments; the caller frees it (std::free)
  std::size_t size = 0;
};

// What one thread of the backend uses: its device.
struct thread_context_t {
  lci::device_t device;
};

class backend_t {
 public:
  backend_t() = default;
  backend_t(const backend_t&) = delete;
  backend_t& operator=(const backend_t&) = delete;

  void global_init(int threads_count, int* rank_me, int* rank_n) {
    if (threads_count < 1) throw std::invalid_argument("irpc: threads_count must be >= 1");
    lci::g_runtime_init();
    *rank_me = lci::get_rank_me();
    *rank_n = lci::get_rank_n();
    shandler_ = lci::alloc_handler(&backend_t::send_cb);
    rcq_ = lci::alloc_cq();
    // Every rank registers its queue first, so the id is the same on every
    // rank and a sender names its peer's queue by its own id.
    rcomp_ = lci::register_rcomp(rcq_);
    devices_.resize(static_cast<std::size_t>(threads_count));
    for (lci::device_t& device : devices_) device = lci::alloc_device();
    // A peer's first message must not find our queue unregistered.
    lci::barrier();
  }

  // Progresses until every accepted send has completed (its buffer freed),
  // then frees everything. The upper layer must make sure no message is
  // still on its way to this rank (its own termination protocol).
  void global_fina() {
    // acquire: pairs with the release in send_cb(): the frees it did
    // happen before the runtime goes away.
    while (sends_pending_.load(lci::util::mo_acquire) != 0) {
      for (lci::device_t device : devices_) (void)lci::progress_x().device(device)();
    }
    lci::deregister_rcomp(rcomp_);
    for (lci::device_t& device : devices_) lci::free_device(&device);
    lci::free_comp(&shandler_);
    lci::free_comp(&rcq_);
    lci::g_runtime_fina();
  }

  thread_context_t thread_init(int thread_index) {
    if (thread_index < 0 || static_cast<std::size_t>(thread_index) >= devices_.size()) {
      throw std::invalid_argument("irpc: thread_index out of range");
    }
    return thread_context_t{devices_[static_cast<std::size_t>(thread_index)]};
  }

  // The device outlives the thread (global_fina frees it, once every send
  // made on it completed); the context is no longer usable.
  void thread_fina(thread_context_t* self) { self->device = lci::device_t{}; }

  // false: the send failed temporarily (nothing happened; the caller keeps
  // `buf` and tries again later, after doing something else useful).
  bool send_msg(const thread_context_t& self, int rank, void* buf, std::size_t size,
                lci::tag_t tag) {
    // Counted before the post: send_cb may run on another thread before
    // post_am returns. relaxed: only the final value matters (see
    // global_fina); nothing is published through this increment.
    sends_pending_.fetch_add(1, lci::util::mo_relaxed);
    const lci::status_t status = lci::post_am_x(rank, buf, size, shandler_, rcomp_)
                                     .tag(tag)
                                     .device(self.device)
                                     .user_context(this)();
    if (status.is_retry()) {
      sends_pending_.fetch_sub(1, lci::util::mo_relaxed);  // relaxed: as the increment
      return false;
    }
    // done: completed at once, and shandler will not be signalled.
    // posted: shandler runs send_cb when the send completes.
    if (status.is_done()) send_cb(status);
    return true;
  }

  // true and *msg: a message arrived; false: none yet.
  bool poll_msg(msg_t* msg) {
    const lci::status_t status = lci::cq_pop(rcq_);
    if (status.is_retry()) return false;
    msg->rank = status.rank;
    msg->tag = status.tag;
    msg->buf = status.buffer;
    msg->size = status.size;
    return true;
  }

  // true when something happened.
  bool do_background_work(const thread_context_t& self) {
    return lci::progress_x().device(self.device)().is_done();
  }

 private:
  // Source completion of every send: the message buffer is free again.
  static void send_cb(lci::status_t status) {
    std::free(status.buffer);
    // release: pairs with the acquire in global_fina().
    static_cast<backend_t*>(status.user_context)->sends_pending_.fetch_sub(1,
                                                                           lci::util::mo_release);
  }

  lci::comp_t shandler_;  // send completion handler
  lci::comp_t rcq_;       // receive completion queue
  lci::rcomp_t rcomp_ = 0;
  std::vector<lci::device_t> devices_;  // one per thread
  // Sends accepted and not yet through send_cb.
  lci::util::atomic<std::int64_t> sends_pending_{0};
};

}  // namespace irpc
