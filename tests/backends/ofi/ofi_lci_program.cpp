// A small LCI program that runs as real processes over libfabric: started
// by tools/lcirun -n N (tests/backends/ofi/BUILD), each process is one rank
// whose runtime finds its network through the process host
// (lci/runtime/process_host.hpp). Every rank, around a ring:
//   1. send/recv: sends a tagged message to the next rank and receives the
//      previous rank's;
//   2. active message: sends a greeting into the next rank's queue (rcomp);
//   3. put/get: writes its rank pattern into the next rank's registered
//      window with a put, and after a barrier reads the previous rank's
//      window back with a get;
// checking every value, then prints "rank r of n ok" (or what was wrong and
// exits 1).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lci.hpp"

namespace {

constexpr lci::tag_t ring_tag = 7;
constexpr std::size_t window_bytes = 4096;

int failures = 0;

void check(bool ok, int rank, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "rank %d: %s\n", rank, what.c_str());
  ++failures;
}

// Posts until the runtime takes it; waits on `sync` when it was posted.
template <typename post_t>
void post_and_wait(const post_t& post, lci::comp_t sync) {
  lci::status_t status;
  do {
    status = post();
    if (status.is_retry()) lci::progress();
  } while (status.is_retry());
  if (status.is_posted()) lci::sync_wait(sync, &status);
}

std::string text_of(int rank, const char* what) {
  return std::string(what) + " from rank " + std::to_string(rank);
}

void send_recv(int rank_me, int next, int previous) {
  std::string outgoing = text_of(rank_me, "message");
  std::vector<char> incoming(64, '\0');
  lci::comp_t received = lci::alloc_sync();
  lci::comp_t sent = lci::alloc_sync();
  lci::status_t recv_status;
  do {
    recv_status = lci::post_recv(previous, incoming.data(), incoming.size(), ring_tag, received);
    if (recv_status.is_retry()) lci::progress();
  } while (recv_status.is_retry());
  post_and_wait([&] { return lci::post_send(next, outgoing.data(), outgoing.size(), ring_tag, sent); },
                sent);
  if (recv_status.is_posted()) lci::sync_wait(received, &recv_status);
  check(recv_status.rank == previous, rank_me, "recv from the wrong rank");
  check(std::string(incoming.data(), recv_status.size) == text_of(previous, "message"), rank_me,
        "recv payload");
  lci::free_comp(&sent);
  lci::free_comp(&received);
}

void active_message(int rank_me, int next, int previous) {
  lci::comp_t inbox = lci::alloc_cq();
  const lci::rcomp_t inbox_rcomp = lci::register_rcomp(inbox);
  lci::barrier();  // every inbox registered before anyone sends
  std::string greeting = text_of(rank_me, "greeting");
  lci::comp_t sent = lci::alloc_sync();
  post_and_wait([&] { return lci::post_am(next, greeting.data(), greeting.size(), sent, inbox_rcomp); },
                sent);
  lci::status_t arrived;
  do {
    lci::progress();
    arrived = lci::cq_pop(inbox);
  } while (arrived.is_retry());
  const std::string text(static_cast<const char*>(arrived.buffer), arrived.size);
  std::free(arrived.buffer);
  check(arrived.rank == previous, rank_me, "active message from the wrong rank");
  check(text == text_of(previous, "greeting"), rank_me, "active message payload");
  lci::barrier();  // nobody deregisters while a peer may still send
  lci::deregister_rcomp(inbox_rcomp);
  lci::free_comp(&sent);
  lci::free_comp(&inbox);
}

void put_get(int rank_me, int rank_n, int next, int previous) {
  std::vector<std::uint8_t> window(window_bytes, 0);
  lci::mr_t window_mr = lci::register_memory(window.data(), window.size());
  const lci::rmr_t mine = lci::get_rmr(window_mr);
  // Share every rank's window key through active messages would be the
  // LCI way; a ring of sends is enough here: each rank needs next's key
  // (for the put) and previous's key (for the get).
  std::vector<lci::rmr_t> keys(rank_n);
  lci::comp_t done = lci::alloc_sync();
  for (int hop = 1; hop < rank_n; ++hop) {
    const int to = (rank_me + hop) % rank_n;
    const int from = (rank_me + rank_n - hop) % rank_n;
    lci::rmr_t key = mine;
    lci::status_t status;
    lci::comp_t got = lci::alloc_sync();
    do {
      status = lci::post_recv(from, &keys[from], sizeof(lci::rmr_t), 100 + hop, got);
      if (status.is_retry()) lci::progress();
    } while (status.is_retry());
    post_and_wait([&] { return lci::post_send(to, &key, sizeof(key), 100 + hop, done); }, done);
    if (status.is_posted()) lci::sync_wait(got, &status);
    lci::free_comp(&got);
  }
  std::vector<std::uint8_t> pattern(window_bytes);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    pattern[i] = static_cast<std::uint8_t>(rank_me * 31 + i);
  }
  post_and_wait([&] { return lci::post_put(next, pattern.data(), pattern.size(), done, 0, keys[next]); },
                done);
  lci::barrier();  // every put has landed
  for (std::size_t i = 0; i < window.size(); ++i) {
    if (window[i] != static_cast<std::uint8_t>(previous * 31 + i)) {
      check(false, rank_me, "put data at byte " + std::to_string(i));
      break;
    }
  }
  std::vector<std::uint8_t> readback(window_bytes, 0);
  post_and_wait([&] {
    return lci::post_get(previous, readback.data(), readback.size(), done, 0, keys[previous]);
  }, done);
  // previous's window holds what previous's previous put there.
  const int source = (previous + rank_n - 1) % rank_n;
  for (std::size_t i = 0; i < readback.size(); ++i) {
    if (readback[i] != static_cast<std::uint8_t>(source * 31 + i)) {
      check(false, rank_me, "get data at byte " + std::to_string(i));
      break;
    }
  }
  lci::barrier();  // nobody deregisters while a peer may still read
  lci::free_comp(&done);
  lci::deregister_memory(&window_mr);
}

}  // namespace

int main() {
  lci::g_runtime_init();
  const int rank_me = lci::get_rank_me();
  const int rank_n = lci::get_rank_n();
  const int next = (rank_me + 1) % rank_n;
  const int previous = (rank_me + rank_n - 1) % rank_n;
  send_recv(rank_me, next, previous);
  active_message(rank_me, next, previous);
  put_get(rank_me, rank_n, next, previous);
  lci::barrier();
  lci::g_runtime_fina();
  if (failures != 0) return 1;
  std::printf("rank %d of %d ok\n", rank_me, rank_n);
  return 0;
}
