// Small helpers the runtime tests share: failing a rank with a message,
// posting until the runtime accepts, a second thread progressing beside
// the test's, and a send/recv round trip that proves a runtime still works
// (after a misuse, after a peer crashed).
//
// Thread safety: as the LCI calls they make (any thread of a rank).
// Blocking:      post_retrying and round_trip progress until done; in a
//                simulated rank every progress call is a scheduling point.
// Ownership:     round_trip allocates and frees its own synchronizers.
// Allocation:    round_trip: two synchronizers and its buffers.
#pragma once

#include <atomic>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lci.hpp"

namespace lci::runtime_test {

// Fails the calling rank (the harness reports the message with the seed).
inline void require(bool condition, const std::string& message) {
  if (!condition) throw std::runtime_error(message);
}

// Runs `post` (a posting call) until it returns done or posted,
// progressing `device` between tries: the one the post uses, since a
// refusal may wait for this device's own completions, or (libfabric shm's
// first post to a peer) for the peer's device to hear from this one.
template <typename Post>
status_t post_retrying(Post&& post, device_t device = device_t()) {
  status_t status;
  do {
    status = post();
    if (status.is_retry()) (void)progress_x().device(device)();
  } while (status.is_retry());
  return status;
}

// Runs `work` on one thread of the rank while a second thread calls
// progress() until `work` returns: two threads progressing one device.
// Env: a simulated rank (sim::rank_env_t), whose run_threads starts them.
// A `work` that throws leaves the second thread to the harness, which
// stops the run (its progress calls then throw).
template <typename Env, typename Work>
void run_beside_progress_thread(Env& env, Work&& work) {
  std::atomic<bool> over{false};
  env.run_threads(2, [&](int thread) {
    if (thread == 1) {
      // acquire: pairs with the release below; nothing else is read after.
      while (!over.load(std::memory_order_acquire)) (void)progress();
      return;
    }
    work();
    // release: pairs with the progress thread's acquire.
    over.store(true, std::memory_order_release);
  });
}

// `call` must throw an `Expected` whose message has every one of
// `fragments`; fails the rank (naming `what`) otherwise, including when it
// throws another kind of error.
template <typename Expected, typename Call>
void expect_throws(const std::string& what, Call&& call,
                   std::initializer_list<std::string> fragments) {
  try {
    (void)call();
  } catch (const Expected& error) {
    const std::string message = error.what();
    for (const std::string& fragment : fragments) {
      require(message.find(fragment) != std::string::npos,
              what + ": the message \"" + message + "\" lacks \"" + fragment + "\"");
    }
    return;
  } catch (const std::exception& error) {
    throw std::runtime_error(what + ": threw the wrong kind of error: " + error.what());
  }
  throw std::runtime_error(what + ": did not throw");
}

template <typename Call>
void expect_invalid_argument(const std::string& what, Call&& call,
                             std::initializer_list<std::string> fragments) {
  expect_throws<std::invalid_argument>(what, std::forward<Call>(call), fragments);
}

// This rank and `peer` (which calls it too) send each other `size_bytes`
// bytes with `tag` on the global runtime, on `device` (empty: the default
// device); checks the status and the bytes received.
inline void round_trip(int peer, tag_t tag, device_t device = device_t(),
                       std::size_t size_bytes = 64) {
  const int me = get_rank_me();
  std::vector<char> out(size_bytes, static_cast<char>('a' + me));
  std::vector<char> in(size_bytes, 0);
  comp_t recv_sync = alloc_sync();
  comp_t send_sync = alloc_sync();
  status_t recv_status = post_retrying(
      [&] { return post_recv_x(peer, in.data(), in.size(), tag, recv_sync).device(device)(); }, device);
  status_t send_status = post_retrying(
      [&] { return post_send_x(peer, out.data(), out.size(), tag, send_sync).device(device)(); },
      device);
  if (send_status.is_posted()) sync_wait_x(send_sync, &send_status).device(device)();
  if (recv_status.is_posted()) sync_wait_x(recv_sync, &recv_status).device(device)();
  require(recv_status.is_done() && recv_status.rank == peer && recv_status.tag == tag &&
              recv_status.size == in.size(),
          "round trip with rank " + std::to_string(peer) + ": wrong status");
  for (char c : in) {
    require(c == 'a' + peer, "round trip with rank " + std::to_string(peer) + ": wrong data");
  }
  free_comp(&recv_sync);
  free_comp(&send_sync);
}

}  // namespace lci::runtime_test
