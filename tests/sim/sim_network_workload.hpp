// A small multi-rank workload for the sim network tests: every rank sends
// `messages_count` messages around a ring (post_send with imm, retried),
// reposts its receive buffers, and records the order messages arrived in.
// Written against backends/backend.hpp plus rank_env_t only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "sim/sim_harness.hpp"

namespace lci::sim::testing {

struct ring_result_t {
  std::vector<std::vector<std::uint32_t>> arrivals;  // per rank: imm in arrival order
  std::vector<std::uint64_t> arrival_ticks;          // per rank: tick of the last arrival
};

inline void require(bool condition, const std::string& message) {
  if (!condition) throw std::runtime_error(message);
}

// Retries `op` (polling `device` into `on_status`) until it is accepted.
template <typename Op, typename On_status>
void post_retrying(rank_env_t& env, backend::net_device_t& device, Op&& op, On_status&& on_status,
                   const char* what) {
  for (;;) {
    const error_t error = op();
    if (!error.is_retry()) {
      require(error.is_done() || error.is_posted(), std::string(what) + " failed");
      return;
    }
    backend::net_status_t statuses[8];
    const std::size_t count = device.poll_comp(statuses, 8);
    for (std::size_t i = 0; i < count; ++i) on_status(statuses[i]);
    env.wait(what);
  }
}

// The ring exchange; `result` may be null. Messages are 8..64 bytes.
inline void ring_exchange(rank_env_t& env, std::size_t messages_count, ring_result_t* result) {
  constexpr std::size_t recv_size = 64;
  constexpr std::size_t recvs_count = 4;
  auto device = env.context().alloc_device({});
  const int rank = env.rank();
  const int next = (rank + 1) % env.ranks_count();
  std::vector<char> recv_arena(recvs_count * recv_size);
  std::vector<char> send_arena(messages_count * recv_size);
  std::size_t received = 0;
  std::size_t sent = 0;
  std::vector<std::size_t> repost;
  auto on_status = [&](const backend::net_status_t& status) {
    if (status.opcode == backend::net_opcode_t::send) {
      require(status.fault == backend::net_fault_t::none, backend::describe_fault(status));
      ++sent;
      return;
    }
    require(status.opcode == backend::net_opcode_t::recv, "unexpected completion");
    ++received;
    if (result != nullptr) {
      result->arrivals[rank].push_back(status.imm_data);
      scheduler_t* scheduler = scheduler_t::current();
      if (scheduler != nullptr) result->arrival_ticks[rank] = scheduler->now_ticks();
    }
    repost.push_back(reinterpret_cast<std::uintptr_t>(status.user_context));
  };
  auto post_recv = [&](std::size_t index) {
    post_retrying(env, *device, [&] {
      return device->post_recv(recv_arena.data() + index * recv_size, recv_size, {},
                               reinterpret_cast<void*>(index));
    }, on_status, "post_recv");
  };
  for (std::size_t i = 0; i < recvs_count; ++i) post_recv(i);
  for (std::size_t seq = 0; seq < messages_count; ++seq) {
    char* buffer = send_arena.data() + seq * recv_size;
    const std::size_t size = 8 + (seq * 13 + rank) % (recv_size - 8);
    std::memset(buffer, static_cast<int>(seq), size);
    const auto imm = static_cast<backend::net_imm_data_t>(rank << 16 | seq);
    post_retrying(env, *device, [&] {
      return device->post_send(next, buffer, size, {}, imm, nullptr);
    }, on_status, "post_send");
    while (!repost.empty()) {
      const std::size_t index = repost.back();
      repost.pop_back();
      post_recv(index);
    }
  }
  while (received < messages_count || sent < messages_count) {
    backend::net_status_t statuses[8];
    const std::size_t count = device->poll_comp(statuses, 8);
    for (std::size_t i = 0; i < count; ++i) on_status(statuses[i]);
    while (!repost.empty()) {
      const std::size_t index = repost.back();
      repost.pop_back();
      post_recv(index);
    }
    env.wait("ring messages");
  }
  env.barrier();
}

}  // namespace lci::sim::testing
