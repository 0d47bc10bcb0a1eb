#include "tests/soak/rdv_burst.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "lci.hpp"

namespace lci::soak {
namespace {

// splitmix64: the same stream on every rank, so each can tell who sends it
// how many messages.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

int am_target(const rdv_burst_t& o, int source, int index, int ranks) {
  switch (o.target) {
    case burst_target_t::self:
      return source;
    case burst_target_t::next:
      return (source + 1) % ranks;
    case burst_target_t::random:
      break;
  }
  const std::uint64_t key = mix(o.seed ^ mix(static_cast<std::uint64_t>(source) << 32 |
                                             static_cast<std::uint32_t>(index)));
  return static_cast<int>(key % static_cast<std::uint64_t>(ranks));
}

// Byte j of message `index` from `source` to `target`.
unsigned char pattern(int source, int target, std::uint64_t index, std::size_t j) {
  return static_cast<unsigned char>(source * 131 + target * 17 + index * 7 + j);
}

void fill(unsigned char* bytes, std::size_t size, int source, int target, std::uint64_t index) {
  for (std::size_t j = 0; j < size; ++j) bytes[j] = pattern(source, target, index, j);
}

[[noreturn]] void fail(int rank, const std::string& what) {
  throw std::runtime_error("rdv_burst rank " + std::to_string(rank) + ": " + what);
}

void check(const unsigned char* bytes, std::size_t size, int source, int target,
           std::uint64_t index, std::size_t from) {
  for (std::size_t j = from; j < size; ++j) {
    if (bytes[j] != pattern(source, target, index, j)) {
      fail(target, "message " + std::to_string(index) + " from rank " + std::to_string(source) +
                       ": byte " + std::to_string(j) + " is wrong");
    }
  }
}

void free_sent(status_t status) { std::free(status.user_context); }

// Posts until the runtime takes it; done means the buffer is free again.
template <typename Post>
status_t post_until_taken(Post&& post) {
  for (;;) {
    const status_t status = post();
    if (!status.is_retry()) return status;
    progress();
  }
}

void run_am_phase(const rdv_burst_t& o, int me, int ranks) {
  comp_t inbox = alloc_cq();
  const rcomp_t rcomp = register_rcomp(inbox);
  comp_t freer = alloc_handler(free_sent);
  barrier();  // every rank's rcomp exists before the first message
  std::vector<std::vector<bool>> seen(static_cast<std::size_t>(ranks),
                                      std::vector<bool>(static_cast<std::size_t>(o.am_count)));
  int expected = 0;
  for (int source = 0; source < ranks; ++source) {
    for (int i = 0; i < o.am_count; ++i) expected += am_target(o, source, i, ranks) == me ? 1 : 0;
  }
  const std::size_t size = std::max(o.size, sizeof(std::uint64_t));
  int received = 0;
  auto drain = [&] {
    for (status_t s = cq_pop(inbox); !s.is_retry(); s = cq_pop(inbox)) {
      auto* bytes = static_cast<unsigned char*>(s.buffer);
      std::uint64_t index = 0;
      if (s.size != size) fail(me, "an active message of " + std::to_string(s.size) + " bytes");
      std::memcpy(&index, bytes, sizeof(index));
      if (s.rank < 0 || s.rank >= ranks || index >= static_cast<std::uint64_t>(o.am_count)) {
        fail(me, "an active message names rank " + std::to_string(s.rank) + ", index " +
                     std::to_string(index));
      }
      if (seen[s.rank][index]) fail(me, "message " + std::to_string(index) + " came twice");
      seen[s.rank][index] = true;
      check(bytes, size, s.rank, me, index, sizeof(index));
      std::free(s.buffer);
      ++received;
    }
  };
  for (int i = 0; i < o.am_count; ++i) {
    const int target = am_target(o, me, i, ranks);
    auto* buffer = static_cast<unsigned char*>(std::malloc(size));
    fill(buffer, size, me, target, static_cast<std::uint64_t>(i));
    const std::uint64_t index = static_cast<std::uint64_t>(i);
    std::memcpy(buffer, &index, sizeof(index));
    const status_t status = post_until_taken([&] {
      drain();
      return post_am_x(target, buffer, size, freer, rcomp).user_context(buffer)();
    });
    if (status.is_done()) std::free(buffer);
    progress();
    drain();
  }
  while (received < expected) {
    progress();
    drain();
  }
  barrier();  // nobody deregisters while a peer may still send
  drain();
  if (received != expected) fail(me, "more active messages than were sent");
  deregister_rcomp(rcomp);
  free_comp(&freer);
  free_comp(&inbox);
}

struct sendrecv_op_t {
  bool is_send;
  int peer;
  tag_t tag;
};

void run_sendrecv_phase(const rdv_burst_t& o, int me, int ranks) {
  const auto per_peer = static_cast<std::size_t>(o.sendrecv_count);
  std::vector<sendrecv_op_t> ops;
  for (int peer = 0; peer < ranks; ++peer) {
    for (std::size_t t = 0; t < per_peer; ++t) {
      ops.push_back({true, peer, t});
      ops.push_back({false, peer, t});
    }
  }
  // Fisher-Yates with the shared mixer: each rank its own order.
  std::uint64_t state = o.seed ^ mix(static_cast<std::uint64_t>(me) + 1);
  for (std::size_t i = ops.size(); i > 1; --i) {
    state = mix(state);
    std::swap(ops[i - 1], ops[state % i]);
  }
  std::vector<unsigned char> buffers(ops.size() * o.size);
  comp_t counter = alloc_counter();
  barrier();
  std::int64_t done_at_once = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const sendrecv_op_t& op = ops[i];
    unsigned char* buffer = buffers.data() + i * o.size;
    status_t status;
    if (op.is_send) {
      fill(buffer, o.size, me, op.peer, op.tag);
      status = post_until_taken([&] { return post_send(op.peer, buffer, o.size, op.tag, counter); });
    } else {
      status = post_until_taken([&] { return post_recv(op.peer, buffer, o.size, op.tag, counter); });
    }
    if (status.is_done()) ++done_at_once;
    progress();
  }
  const auto total = static_cast<std::int64_t>(ops.size());
  while (counter_get(counter) + done_at_once < total) progress();
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].is_send) check(buffers.data() + i * o.size, o.size, ops[i].peer, me, ops[i].tag, 0);
  }
  barrier();
  free_comp(&counter);
}

}  // namespace

void run_rdv_burst(const rdv_burst_t& options) {
  if (options.am_count < 0 || options.sendrecv_count < 0 || options.held_registrations < 0) {
    throw std::invalid_argument("rdv_burst: negative count");
  }
  g_runtime_init();
  const int me = get_rank_me();
  const int ranks = get_rank_n();
  std::vector<std::vector<char>> held_regions(static_cast<std::size_t>(options.held_registrations),
                                              std::vector<char>(4096));
  std::vector<mr_t> held;
  for (auto& region : held_regions) held.push_back(register_memory(region.data(), region.size()));
  if (options.am_count > 0) run_am_phase(options, me, ranks);
  if (options.sendrecv_count > 0) run_sendrecv_phase(options, me, ranks);
  for (mr_t& mr : held) deregister_memory(&mr);
  g_runtime_fina();
}

}  // namespace lci::soak
