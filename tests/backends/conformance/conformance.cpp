// The backend conformance tests (see conformance.hpp). Each test states the
// contract rule it checks; all match messages by content, never by order.
#include "tests/backends/conformance/conformance.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tests/backends/conformance/conformance_endpoint.hpp"

namespace lci::conformance {
namespace {

using backend::net_device_attr_t;
using backend::net_fault_t;
using backend::net_mr_t;
using backend::net_opcode_t;
using backend::net_rmr_t;
using backend::net_status_t;

// The running test's name without its parameter suffix ("PutAndPutImm").
std::string current_test_name() {
  const std::string full = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return full.substr(0, full.find('/'));
}

void expect_ok(const backend_case_t& backend_case, int ranks_count, const rank_body_t& body) {
  if (backend_case.skip_reason) {
    const std::string reason = backend_case.skip_reason(current_test_name(), ranks_count);
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
  const std::string failure = backend_case.run(ranks_count, body);
  EXPECT_TRUE(failure.empty()) << failure;
}

// The size of message `seq`: in [size_min, size_max], each size once in
// any size_max + 1 - size_min consecutive seqs unless 37 divides that count.
std::size_t message_size(std::size_t seq, std::size_t size_max, std::size_t size_min = 1) {
  return size_min + (seq * 37) % (size_max + 1 - size_min);
}

// Checks the send completions of `count` post_send calls whose user_context
// was seq + 1 and length message_size(seq): each exactly once, fully filled.
void check_send_completions(const std::vector<net_status_t>& local, int target, std::size_t count,
                            std::size_t size_max, std::size_t size_min = 1) {
  std::set<std::uintptr_t> seen;
  for (const net_status_t& status : local) {
    LCI_CONFORM(status.opcode == net_opcode_t::send, "opcode " << get_net_opcode_str(status.opcode));
    LCI_CONFORM(status.fault == net_fault_t::none, describe_fault(status));
    LCI_CONFORM(status.rank == target, "send completion names rank " << status.rank);
    const auto context = reinterpret_cast<std::uintptr_t>(status.user_context);
    LCI_CONFORM(context >= 1 && context <= count, "user_context " << context);
    LCI_CONFORM(seen.insert(context).second, "send completion duplicated: " << context);
    LCI_CONFORM(status.length == message_size(context - 1, size_max, size_min),
                "length " << status.length);
  }
  LCI_CONFORM(seen.size() == count, "send completions " << seen.size() << " of " << count);
}

// Checks received messages from `source`: imm = source << 16 | seq, every
// seq in [0, count) exactly once, payload = pattern(source, seq, size).
void check_received(const std::vector<received_t>& received, int source, std::size_t count,
                    std::size_t size_max, std::size_t size_min = 1) {
  std::set<std::size_t> seen;
  for (const received_t& message : received) {
    const net_status_t& status = message.status;
    if (status.rank != source) continue;
    LCI_CONFORM(static_cast<int>(status.imm_data >> 16) == source, "imm " << status.imm_data);
    const std::size_t seq = status.imm_data & 0xFFFF;
    LCI_CONFORM(seq < count, "seq " << seq << " out of range");
    LCI_CONFORM(seen.insert(seq).second, "message (" << source << ", " << seq << ") twice");
    LCI_CONFORM(status.length == message_size(seq, size_max, size_min),
                "length " << status.length);
    LCI_CONFORM(message.data == pattern(source, seq, status.length), "payload of seq " << seq);
  }
  LCI_CONFORM(seen.size() == count, "received " << seen.size() << " of " << count
                                                << " messages from rank " << source);
}

// Each rank sends `count` messages to `target` by post_send, retrying.
void send_messages(endpoint_t& ep, int target, std::size_t count, std::size_t size_max,
                   std::vector<char>* arena, net_mr_t mr, std::size_t size_min = 1) {
  for (std::size_t seq = 0; seq < count; ++seq) {
    const std::size_t size = message_size(seq, size_max, size_min);
    char* buffer = arena->data() + seq * size_max;
    const std::string text = pattern(ep.rank, seq, size);
    std::memcpy(buffer, text.data(), size);
    const auto imm = static_cast<backend::net_imm_data_t>(ep.rank << 16 | seq);
    auto* context = reinterpret_cast<void*>(seq + 1);
    const error_t error = ep.post("post_send", [&] {
      return ep.device().post_send(target, buffer, size, mr, imm, context);
    });
    LCI_CONFORM(error.is_posted(), "post_send returned " << error.get_str());
  }
}

// send/recv with imm around a ring; every completion field is checked.
TEST_P(BackendConformance, SendRecvWithImmAroundARing) {
  constexpr std::size_t count = 40;
  constexpr std::size_t size_max = 200;
  expect_ok(GetParam(), 4, [](rank_ctx_t& ctx) {
    endpoint_t ep(ctx);
    ep.post_recv_buffers(8, size_max);
    const int next = (ep.rank + 1) % ep.ranks;
    const int prev = (ep.rank + ep.ranks - 1) % ep.ranks;
    std::vector<char> arena(count * size_max);
    const net_mr_t mr = ep.register_region(arena.data(), arena.size());
    send_messages(ep, next, count, size_max, &arena, mr);
    ep.wait_for([&] { return ep.received_count() == count && ep.local_count() == count; },
                "ring messages");
    check_received(ep.received(), prev, count, size_max);
    check_send_completions(ep.local(), next, count, size_max);
    ctx.barrier();
  });
}

// post_sends copies the payload before returning done and never completes locally.
TEST_P(BackendConformance, InjectCopiesAndCompletesSilently) {
  constexpr std::size_t count = 30;
  expect_ok(GetParam(), 3, [](rank_ctx_t& ctx) {
    endpoint_t ep(ctx);
    const std::size_t size_max = std::min<std::size_t>(ep.attr().inject_size_max, 48);
    if (size_max == 0) return;  // the backend has no inject
    ep.post_recv_buffers(8, size_max);
    const int next = (ep.rank + 1) % ep.ranks;
    const int prev = (ep.rank + ep.ranks - 1) % ep.ranks;
    std::vector<char> buffer(size_max);
    for (std::size_t seq = 0; seq < count; ++seq) {
      const std::size_t size = message_size(seq, size_max);
      const std::string text = pattern(ep.rank, seq, size);
      std::memcpy(buffer.data(), text.data(), size);
      const auto imm = static_cast<backend::net_imm_data_t>(ep.rank << 16 | seq);
      const error_t error = ep.post("post_sends", [&] {
        return ep.device().post_sends(next, buffer.data(), size, imm);
      });
      LCI_CONFORM(error.is_done(), "post_sends returned " << error.get_str());
      std::memset(buffer.data(), 0xEE, size_max);  // the copy must already be taken
    }
    ep.wait_for([&] { return ep.received_count() == count; }, "injected messages");
    check_received(ep.received(), prev, count, size_max);
    ctx.barrier();
    for (int i = 0; i < 8; ++i) ep.poll();
    LCI_CONFORM(ep.local_count() == 0, "post_sends produced a local completion");
  });
}

// Destroying a device does not lose what it accepted: post_sends that
// returned done arrive even when the device is destroyed right after the last
// of them, with no poll in between. More than a send queue's worth of them,
// so that a backend which queues accepted sends behind a busy connection
// still holds some at the close.
TEST_P(BackendConformance, SendsAcceptedBeforeCloseArrive) {
  constexpr std::size_t count = 3000;
  expect_ok(GetParam(), 2, [](rank_ctx_t& ctx) {
    const int rank = ctx.context().rank_me();
    std::size_t size = 0;
    if (rank == 0) {
      {
        endpoint_t ep(ctx);
        size = std::min<std::size_t>(ep.attr().inject_size_max, 4096);
        if (size == 0) return;  // the backend has no inject
        std::vector<char> buffer(size);
        ctx.barrier();  // rank 1's receives are posted
        for (std::size_t seq = 0; seq < count; ++seq) {
          const std::string text = pattern(ep.rank, seq, size);
          std::memcpy(buffer.data(), text.data(), size);
          const auto imm = static_cast<backend::net_imm_data_t>(ep.rank << 16 | seq);
          const error_t error = ep.post("post_sends", [&] {
            return ep.device().post_sends(1, buffer.data(), size, imm);
          });
          LCI_CONFORM(error.is_done(), "post_sends returned " << error.get_str());
        }
      }  // destroyed: the last post was not followed by a poll
      ctx.barrier();
      return;
    }
    endpoint_t ep(ctx);
    size = std::min<std::size_t>(ep.attr().inject_size_max, 4096);
    if (size == 0) return;
    ep.post_recv_buffers(16, size);
    ctx.barrier();
    ep.wait_for([&] { return ep.received_count() == count; }, "the sender's messages");
    check_received(ep.received(), 0, count, size, size);
    ctx.barrier();
  });
}

struct region_t {
  explicit region_t(std::size_t size) : bytes(size, '\0') {}
  std::vector<char> bytes;
};

// put and putImm: data lands at the offset; write completion locally;
// remote_write with imm at the target; nothing else is touched.
TEST_P(BackendConformance, PutAndPutImm) {
  constexpr std::size_t chunk = 96;
  expect_ok(GetParam(), 4, [](rank_ctx_t& ctx) {
    endpoint_t ep(ctx);
    const int n = ep.ranks;
    const int next = (ep.rank + 1) % n;
    const int prev = (ep.rank + n - 1) % n;
    region_t target(2 * n * chunk);
    const net_rmr_t mine = ep.device().get_rmr(ep.register_region(target.bytes.data(), target.bytes.size()));
    LCI_CONFORM(!mine.is_empty(), "get_rmr returned an empty key");
    std::vector<net_rmr_t> rmrs(n);
    ctx.allgather(&mine, sizeof(mine), rmrs.data());
    region_t source(2 * chunk);
    const std::string first = pattern(ep.rank, 1, chunk);
    const std::string second = pattern(ep.rank, 2, chunk);
    std::memcpy(source.bytes.data(), first.data(), chunk);
    std::memcpy(source.bytes.data() + chunk, second.data(), chunk);
    const net_mr_t mr = ep.register_region(source.bytes.data(), source.bytes.size());
    const backend::net_imm_data_t imm = 0xABC000 + ep.rank;
    ep.post("post_put", [&] {
      return ep.device().post_put(next, source.bytes.data(), chunk, mr, ep.rank * chunk,
                                  rmrs[next], reinterpret_cast<void*>(1));
    });
    if (ep.attr().supports_put_imm) {
      ep.post("post_putImm", [&] {
        return ep.device().post_putImm(next, source.bytes.data() + chunk, chunk, mr,
                                       (n + ep.rank) * chunk, rmrs[next], imm,
                                       reinterpret_cast<void*>(2));
      });
    }
    const std::size_t writes = ep.attr().supports_put_imm ? 2 : 1;
    ep.wait_for([&] {
      return ep.local_count() == writes && ep.remote_write_count() == writes - 1;
    }, "put completions");
    std::set<std::uintptr_t> contexts;
    for (const net_status_t& status : ep.local()) {
      LCI_CONFORM(status.opcode == net_opcode_t::write, get_net_opcode_str(status.opcode));
      LCI_CONFORM(status.fault == net_fault_t::none, describe_fault(status));
      LCI_CONFORM(status.rank == next && status.length == chunk, "rank/length of a write");
      contexts.insert(reinterpret_cast<std::uintptr_t>(status.user_context));
    }
    LCI_CONFORM(contexts.size() == writes && *contexts.begin() == 1, "write user_contexts");
    for (const net_status_t& status : ep.remote_writes()) {
      LCI_CONFORM(status.rank == prev, "remote_write names rank " << status.rank);
      LCI_CONFORM(status.length == chunk, "remote_write length " << status.length);
      LCI_CONFORM(status.imm_data == 0xABC000u + prev, "remote_write imm " << status.imm_data);
    }
    ctx.barrier();  // every put has landed (each initiator saw its completion)
    for (int r = 0; r < n; ++r) {
      const bool put_here = r == prev;
      const std::string expected1 = put_here ? pattern(prev, 1, chunk) : std::string(chunk, '\0');
      const bool imm_here = put_here && writes == 2;
      const std::string expected2 = imm_here ? pattern(prev, 2, chunk) : std::string(chunk, '\0');
      LCI_CONFORM(std::string(target.bytes.data() + r * chunk, chunk) == expected1, "put chunk " << r);
      LCI_CONFORM(std::string(target.bytes.data() + (n + r) * chunk, chunk) == expected2,
                  "putImm chunk " << r);
    }
    ctx.barrier();
  });
}

// post_puts / post_putImms copy the payload and complete silently; the data
// is observed by the target (putImms: remote_write; puts: by reading back
// with post_get until it appears, since puts report nothing).
TEST_P(BackendConformance, InjectPutsAndPutImms) {
  expect_ok(GetParam(), 2, [](rank_ctx_t& ctx) {
    endpoint_t ep(ctx);
    const std::size_t size = std::min<std::size_t>(ep.attr().inject_size_max, 32);
    if (size == 0) return;
    const int peer = 1 - ep.rank;
    region_t target(4 * size);
    const net_rmr_t mine = ep.device().get_rmr(ep.register_region(target.bytes.data(), target.bytes.size()));
    net_rmr_t rmrs[2];
    ctx.allgather(&mine, sizeof(mine), rmrs);
    const std::string put_text = pattern(ep.rank, 5, size);
    std::vector<char> source(put_text.begin(), put_text.end());
    ep.post("post_puts", [&] { return ep.device().post_puts(peer, source.data(), size, 0, rmrs[peer]); });
    std::memset(source.data(), 0x11, size);
    if (ep.attr().supports_put_imm) {
      const std::string text = pattern(ep.rank, 6, size);
      std::memcpy(source.data(), text.data(), size);
      ep.post("post_putImms", [&] {
        return ep.device().post_putImms(peer, source.data(), size, size, rmrs[peer], 77 + ep.rank);
      });
      std::memset(source.data(), 0x22, size);
      ep.wait_for([&] { return ep.remote_write_count() == 1; }, "putImms remote_write");
      const net_status_t status = ep.remote_writes().front();
      LCI_CONFORM(status.rank == peer && status.imm_data == 77u + peer && status.length == size,
                  "putImms remote_write fields");
      LCI_CONFORM(std::string(target.bytes.data() + size, size) == pattern(peer, 6, size),
                  "putImms data");
    }
    // Read our own put back from the peer until it has landed.
    region_t readback(size);
    const net_mr_t mr = ep.register_region(readback.bytes.data(), size);
    for (std::size_t attempt = 0;; ++attempt) {
      LCI_CONFORM(attempt < 10000, "post_puts data never arrived");
      const std::size_t before = ep.local_count();
      ep.post("post_get", [&] {
        return ep.device().post_get(peer, readback.bytes.data(), size, mr, 0, rmrs[peer], nullptr);
      });
      ep.wait_for([&] { return ep.local_count() == before + 1; }, "readback");
      if (std::string(readback.bytes.data(), size) == pattern(ep.rank, 5, size)) break;
    }
    for (const net_status_t& status : ep.local()) {
      LCI_CONFORM(status.opcode == net_opcode_t::read, "inject put produced a local completion");
    }
    ctx.barrier();
  });
}

// Zero-byte puts complete like any other: post_put and post_putImm with a
// write completion (length 0, their context, no fault), and each putImm and
// putImms with a remote_write of length 0 carrying its imm at the target.
TEST_P(BackendConformance, ZeroBytePuts) {
  expect_ok(GetParam(), 2, [](rank_ctx_t& ctx) {
    endpoint_t ep(ctx);
    const int peer = 1 - ep.rank;
    region_t target(64);
    const net_rmr_t mine =
        ep.device().get_rmr(ep.register_region(target.bytes.data(), target.bytes.size()));
    net_rmr_t rmrs[2];
    ctx.allgather(&mine, sizeof(mine), rmrs);
    region_t source(8);
    const net_mr_t mr = ep.register_region(source.bytes.data(), source.bytes.size());
    const bool imm = ep.attr().supports_put_imm;
    ep.post("post_put", [&] {
      return ep.device().post_put(peer, source.bytes.data(), 0, mr, 8, rmrs[peer],
                                  reinterpret_cast<void*>(1));
    });
    if (imm) {
      ep.post("post_putImm", [&] {
        return ep.device().post_putImm(peer, source.bytes.data(), 0, mr, 16, rmrs[peer],
                                       0x5A0 + ep.rank, reinterpret_cast<void*>(2));
      });
      ep.post("post_putImms", [&] {
        return ep.device().post_putImms(peer, source.bytes.data(), 0, 24, rmrs[peer],
                                        0x6B0 + ep.rank);
      });
    }
    const std::size_t writes = imm ? 2 : 1;
    const std::size_t remote_writes = imm ? 2 : 0;
    ep.wait_for([&] {
      return ep.local_count() == writes && ep.remote_write_count() == remote_writes;
    }, "zero-byte put completions");
    std::set<std::uintptr_t> contexts;
    for (const net_status_t& status : ep.local()) {
      LCI_CONFORM(status.opcode == net_opcode_t::write, get_net_opcode_str(status.opcode));
      LCI_CONFORM(status.fault == net_fault_t::none, describe_fault(status));
      LCI_CONFORM(status.rank == peer && status.length == 0, "rank/length of a zero-byte write");
      contexts.insert(reinterpret_cast<std::uintptr_t>(status.user_context));
    }
    LCI_CONFORM(contexts.size() == writes && *contexts.begin() == 1, "write user_contexts");
    std::set<backend::net_imm_data_t> imms;
    for (const net_status_t& status : ep.remote_writes()) {
      LCI_CONFORM(status.rank == peer && status.length == 0,
                  "zero-byte remote_write: rank " << status.rank << ", length " << status.length);
      imms.insert(status.imm_data);
    }
    if (imm) {
      LCI_CONFORM(imms == (std::set<backend::net_imm_data_t>{0x5A0u + peer, 0x6B0u + peer}),
                  "zero-byte remote_write imms");
    }
    LCI_CONFORM(std::string(target.bytes.data(), 64) == std::string(64, '\0'),
                "a zero-byte put wrote bytes");
    ctx.barrier();
  });
}

// get: the target's data arrives in the local buffer; read completion.
TEST_P(BackendConformance, Get) {
  constexpr std::size_t size = 300;
  expect_ok(GetParam(), 3, [](rank_ctx_t& ctx) {
    endpoint_t ep(ctx);
    const int next = (ep.rank + 1) % ep.ranks;
    region_t exposed(size + 64);
    const std::string text = pattern(ep.rank, 9, size);
    std::memcpy(exposed.bytes.data() + 64, text.data(), size);
    const net_rmr_t mine = ep.device().get_rmr(ep.register_region(exposed.bytes.data(), exposed.bytes.size()));
    std::vector<net_rmr_t> rmrs(ep.ranks);
    ctx.allgather(&mine, sizeof(mine), rmrs.data());
    region_t local(size);
    const net_mr_t mr = ep.register_region(local.bytes.data(), size);
    ep.post("post_get", [&] {
      return ep.device().post_get(next, local.bytes.data(), size, mr, 64, rmrs[next],
                                  reinterpret_cast<void*>(0x99));
    });
    ep.wait_for([&] { return ep.local_count() == 1; }, "get completion");
    const net_status_t status = ep.local().front();
    LCI_CONFORM(status.opcode == net_opcode_t::read, get_net_opcode_str(status.opcode));
    LCI_CONFORM(status.fault == net_fault_t::none, describe_fault(status));
    LCI_CONFORM(status.rank == next && status.length == size, "read rank/length");
    LCI_CONFORM(status.user_context == reinterpret_cast<void*>(0x99), "read user_context");
    LCI_CONFORM(std::string(local.bytes.data(), size) == pattern(next, 9, size), "get data");
    ctx.barrier();
  });
}

// Registration: keys describe the region, differ between regions, and a
// deregistered mr is empty; a freed slot can be registered again.
TEST_P(BackendConformance, RegistrationAndKeys) {
  expect_ok(GetParam(), 2, [](rank_ctx_t& ctx) {
    endpoint_t ep(ctx);
    std::vector<char> a(128), b(256);
    net_mr_t mr_a;
    net_mr_t mr_b;
    ep.post("register a", [&] { return ep.device().register_memory(a.data(), a.size(), &mr_a); });
    ep.post("register b", [&] { return ep.device().register_memory(b.data(), b.size(), &mr_b); });
    const net_rmr_t rmr_a = ep.device().get_rmr(mr_a);
    const net_rmr_t rmr_b = ep.device().get_rmr(mr_b);
    LCI_CONFORM(rmr_a.base == reinterpret_cast<std::uintptr_t>(a.data()), "rmr base");
    // The region's size: what the runtime checks every put and get against.
    LCI_CONFORM(rmr_a.size == a.size(), "rmr size " << rmr_a.size << ", not " << a.size());
    LCI_CONFORM(rmr_b.size == b.size(), "rmr size " << rmr_b.size << ", not " << b.size());
    LCI_CONFORM(!rmr_a.is_empty() && !rmr_b.is_empty(), "empty rmr");
    LCI_CONFORM(rmr_a.base != rmr_b.base || rmr_a.rkey != rmr_b.rkey, "two regions, one key");
    ep.device().deregister_memory(&mr_a);
    LCI_CONFORM(mr_a.is_empty(), "deregistered mr is not empty");
    ep.post("register a again", [&] { return ep.device().register_memory(a.data(), a.size(), &mr_a); });
    LCI_CONFORM(!mr_a.is_empty(), "re-registration failed");
    ep.device().deregister_memory(&mr_a);
    ep.device().deregister_memory(&mr_b);
    ctx.barrier();
  });
}

// A small send queue forces retries: a retried post changed nothing, so
// after reposting every message arrives exactly once and completes once.
TEST_P(BackendConformance, RetryNeverLosesOrDuplicates) {
  constexpr std::size_t count = 150;
  constexpr std::size_t size_max = 64;
  expect_ok(GetParam(), 3, [](rank_ctx_t& ctx) {
    net_device_attr_t small;
    small.net_max_sends = 4;
    small.net_max_recvs = 4;
    small.net_max_cqes = 16;
    endpoint_t ep(ctx, small);
    ep.post_recv_buffers(4, size_max);
    const int next = (ep.rank + 1) % ep.ranks;
    const int prev = (ep.rank + ep.ranks - 1) % ep.ranks;
    std::vector<char> arena(count * size_max);
    const net_mr_t mr = ep.register_region(arena.data(), arena.size());
    send_messages(ep, next, count, size_max, &arena, mr);  // polls only on retry
    ep.wait_for([&] { return ep.received_count() == count && ep.local_count() == count; },
                "flooded messages");
    check_received(ep.received(), prev, count, size_max);
    check_send_completions(ep.local(), next, count, size_max);
    ctx.barrier();
  });
}

// Many senders, one receiver: matched by (source, seq) content only.
TEST_P(BackendConformance, UnorderedDeliveryIsTolerated) {
  constexpr std::size_t count = 25;
  constexpr std::size_t size_max = 100;
  expect_ok(GetParam(), 4, [](rank_ctx_t& ctx) {
    endpoint_t ep(ctx);
    ep.post_recv_buffers(16, size_max);
    ctx.barrier();
    if (ep.rank != 0) {
      std::vector<char> arena(count * size_max);
      const net_mr_t mr = ep.register_region(arena.data(), arena.size());
      send_messages(ep, 0, count, size_max, &arena, mr);
      ep.wait_for([&] { return ep.local_count() == count; }, "send completions");
      check_send_completions(ep.local(), 0, count, size_max);
    } else {
      const std::size_t total = count * (ep.ranks - 1);
      ep.wait_for([&] { return ep.received_count() == total; }, "all messages at rank 0");
      const std::vector<received_t> received = ep.received();
      for (int source = 1; source < ep.ranks; ++source) {
        check_received(received, source, count, size_max);
      }
    }
    ctx.barrier();
  });
}

// Several threads of a rank share one device: post and poll concurrently.
TEST_P(BackendConformance, ThreadsShareADevice) {
  constexpr int threads_count = 4;
  constexpr std::size_t per_thread = 20;
  constexpr std::size_t size_max = 48;
  expect_ok(GetParam(), 2, [](rank_ctx_t& ctx) {
    endpoint_t ep(ctx);
    ep.post_recv_buffers(16, size_max);
    const int peer = 1 - ep.rank;
    constexpr std::size_t total = threads_count * per_thread;
    std::vector<char> arena(total * size_max);
    const net_mr_t mr = ep.register_region(arena.data(), arena.size());
    ctx.run_threads(threads_count, [&](int thread) {
      for (std::size_t i = 0; i < per_thread; ++i) {
        const std::size_t seq = thread * per_thread + i;
        const std::size_t size = message_size(seq, size_max);
        char* buffer = arena.data() + seq * size_max;
        const std::string text = pattern(ep.rank, seq, size);
        std::memcpy(buffer, text.data(), size);
        const auto imm = static_cast<backend::net_imm_data_t>(ep.rank << 16 | seq);
        ep.post("post_send", [&] {
          return ep.device().post_send(peer, buffer, size, mr, imm, reinterpret_cast<void*>(seq + 1));
        });
      }
      ep.wait_for([&] { return ep.received_count() == total && ep.local_count() == total; },
                  "threads' messages");
    });
    check_received(ep.received(), peer, total, size_max);
    check_send_completions(ep.local(), peer, total, size_max);
    ctx.barrier();
  });
}

// post_recv_multi on `ep`, whose device did not get supports_multi_recv,
// throws std::logic_error (backend.hpp).
void check_multi_recv_refused(endpoint_t& ep) {
  std::vector<char> buffer(64);
  bool refused = false;
  try {
    (void)ep.device().post_recv_multi(buffer.data(), buffer.size(), nullptr);
  } catch (const std::logic_error&) {
    refused = true;
  }
  LCI_CONFORM(refused, "post_recv_multi without supports_multi_recv did not throw logic_error");
}

// Multi-receive buffers (backend.hpp, post_recv_multi): rank 0 sends
// messages of 0 to 256 bytes, each size once, to rank 1, which posts two
// 4 * multi_recv_min_free byte buffers and nothing else. endpoint_t::poll()
// checks each message against its buffer (inside it, naming its
// user_context, overlapping no other since the buffer was posted, bytes
// still in place at the release, a release exactly once and only below
// multi_recv_min_free free; take_multi_locked) and reposts a released
// buffer; here, every message arrives once with its bytes, rank, imm and
// length, and reposted buffers were released again. A device that did not
// get supports_multi_recv refuses post_recv_multi.
TEST_P(BackendConformance, MultiRecvPacksAndReleases) {
  constexpr std::size_t size_max = 256;  // sizes 0..256, each once (see message_size)
  constexpr std::size_t count = 120;
  constexpr std::size_t buffers_count = 2;
  static_assert(count <= size_max + 1, "message sizes repeat");
  expect_ok(GetParam(), 2, [](rank_ctx_t& ctx) {
    net_device_attr_t requested;
    requested.supports_multi_recv = true;
    requested.multi_recv_min_free = size_max;
    // Small: the completion queue fills while buffers stay posted, so
    // messages also wait for room there, not only for buffer space.
    requested.net_max_cqes = 8;
    endpoint_t ep(ctx, requested);
    endpoint_t plain(ctx);  // on every rank: devices are allocated collectively
    for (endpoint_t* device : {&ep, &plain}) {
      if (!device->attr().supports_multi_recv) check_multi_recv_refused(*device);
    }
    // A backend without multi-receive buffers has nothing more to check (the
    // simulator grants them unless world_options_t::multi_recv is off).
    if (!ep.attr().supports_multi_recv) return;
    const std::size_t min_free = ep.attr().multi_recv_min_free;
    // Lower, and a buffer could keep too little room for the largest message.
    LCI_CONFORM(min_free >= size_max, "multi_recv_min_free " << min_free << " below the request");
    if (ep.rank == 1) ep.post_recv_multi_buffers(buffers_count, 4 * min_free);
    ctx.barrier();
    if (ep.rank == 0) {
      std::vector<char> arena(count * size_max);
      const net_mr_t mr = ep.register_region(arena.data(), arena.size());
      send_messages(ep, 1, count, size_max, &arena, mr, /*size_min=*/0);
      ep.wait_for([&] { return ep.local_count() == count; }, "send completions");
      check_send_completions(ep.local(), 1, count, size_max, /*size_min=*/0);
    } else {
      ep.wait_for([&] { return ep.received_count() == count; }, "messages in multi buffers");
      check_received(ep.received(), 0, count, size_max, /*size_min=*/0);
      // 15147 bytes; a buffer not released holds at most 3 * min_free, and
      // each release takes at most 4 * min_free: with min_free up to 1 KiB,
      // more releases than buffers, so reposted buffers filled up again.
      LCI_CONFORM(ep.multi_releases_count() > buffers_count,
                  "multi-receive buffers released " << ep.multi_releases_count() << " times");
    }
    ctx.barrier();
  });
}

struct victim_keys_t {
  net_rmr_t exposed;          // registered, 256 bytes
  std::uintptr_t unregistered;  // never registered
  net_rmr_t stale;            // registered, then deregistered
};

// RMA to an unregistered region, out of bounds or with a stale key: the
// initiator gets fault=protection naming the rank and address; the victim's
// memory is not touched and it sees no completion.
TEST_P(BackendConformance, RmaProtectionFaults) {
  constexpr std::size_t size = 256;
  expect_ok(GetParam(), 2, [](rank_ctx_t& ctx) {
    endpoint_t ep(ctx);
    region_t exposed(size), unregistered(size), stale(size);
    const std::string guard_text = pattern(7, 7, size);
    for (region_t* region : {&exposed, &unregistered, &stale}) {
      std::memcpy(region->bytes.data(), guard_text.data(), size);
    }
    victim_keys_t mine{};
    if (ep.rank == 1) {
      mine.exposed = ep.device().get_rmr(ep.register_region(exposed.bytes.data(), size));
      mine.unregistered = reinterpret_cast<std::uintptr_t>(unregistered.bytes.data());
      net_mr_t stale_mr;
      ep.post("register", [&] { return ep.device().register_memory(stale.bytes.data(), size, &stale_mr); });
      mine.stale = ep.device().get_rmr(stale_mr);
      ep.device().deregister_memory(&stale_mr);
    }
    victim_keys_t keys[2];
    ctx.allgather(&mine, sizeof(mine), keys);
    if (ep.rank == 0) {
      const victim_keys_t& victim = keys[1];
      region_t source(size);
      const net_mr_t mr = ep.register_region(source.bytes.data(), size);
      struct attempt_t { net_opcode_t opcode; std::uint64_t offset; net_rmr_t rmr; std::uintptr_t address; };
      const net_rmr_t unregistered_rmr{victim.unregistered, 0};
      const std::vector<attempt_t> attempts = {
          {net_opcode_t::write, 0, unregistered_rmr, victim.unregistered},
          {net_opcode_t::write, size - 16, victim.exposed, victim.exposed.base + size - 16},
          {net_opcode_t::write, 0, victim.stale, victim.stale.base},
          {net_opcode_t::read, size + 8, victim.exposed, victim.exposed.base + size + 8},
          {net_opcode_t::remote_write, size, victim.exposed, victim.exposed.base + size},
      };
      for (std::size_t i = 0; i < attempts.size(); ++i) {
        const attempt_t& a = attempts[i];
        auto* context = reinterpret_cast<void*>(i + 1);
        std::memset(source.bytes.data(), 0x5A, size);
        ep.post("protected op", [&] {
          switch (a.opcode) {
            case net_opcode_t::read:
              return ep.device().post_get(1, source.bytes.data(), 32, mr, a.offset, a.rmr, context);
            case net_opcode_t::remote_write:
              return ep.device().post_putImm(1, source.bytes.data(), 32, mr, a.offset, a.rmr, 5, context);
            default:
              return ep.device().post_put(1, source.bytes.data(), 32, mr, a.offset, a.rmr, context);
          }
        });
        ep.wait_for([&] { return ep.local_count() == i + 1; }, "fault completion");
        const net_status_t status = ep.local().back();
        LCI_CONFORM(status.fault == net_fault_t::protection, "attempt " << i << ": no protection fault");
        LCI_CONFORM(status.rank == 1, "fault names rank " << status.rank);
        LCI_CONFORM(status.fault_address == a.address, "attempt " << i << " fault_address");
        LCI_CONFORM(status.user_context == context, "fault user_context");
        const net_opcode_t local_opcode = a.opcode == net_opcode_t::read ? net_opcode_t::read : net_opcode_t::write;
        LCI_CONFORM(status.opcode == local_opcode, "fault opcode " << get_net_opcode_str(status.opcode));
        LCI_CONFORM(describe_fault(status).find("rank 1") != std::string::npos, describe_fault(status));
        LCI_CONFORM(std::string(source.bytes.data(), 32) == std::string(32, 0x5A),
                    "a refused get wrote the local buffer");
      }
    }
    ctx.barrier();
    if (ep.rank == 1) {
      for (int i = 0; i < 8; ++i) ep.poll();
      LCI_CONFORM(ep.remote_write_count() == 0, "the victim saw a remote_write");
      for (region_t* region : {&exposed, &unregistered, &stale}) {
        LCI_CONFORM(std::string(region->bytes.data(), size) == guard_text, "victim memory changed");
      }
    }
    ctx.barrier();
  });
}

// A dead peer is reported by the backend on its own (backend.hpp): each
// device of each survivor gets exactly one peer_down naming it, with no
// operation ever posted to it; operations to it still fail with
// peer_crashed; the survivors keep talking to each other.
TEST_P(BackendConformance, DeadPeerReportedOncePerDevice) {
  constexpr int victim = 2;
  constexpr std::size_t size_max = 64;
  if (!GetParam().can_crash) GTEST_SKIP() << "this harness cannot crash a rank";
  expect_ok(GetParam(), 3, [](rank_ctx_t& ctx) {
    endpoint_t first(ctx);
    endpoint_t second(ctx);
    first.post_recv_buffers(4, size_max);
    ctx.barrier();
    if (first.rank == victim) ctx.crash();
    for (endpoint_t* ep : {&first, &second}) {
      ep->wait_for([&] { return !ep->peer_reports().empty(); }, "the dead peer's report");
      // More polls: a second report for the same rank would show now.
      for (int i = 0; i < 16; ++i) ep->poll();
      const std::vector<net_status_t> reports = ep->peer_reports();
      LCI_CONFORM(reports.size() == 1, "peer_down reports: " << reports.size());
      const net_status_t& report = reports.front();
      LCI_CONFORM(report.fault == net_fault_t::peer_crashed, describe_fault(report));
      LCI_CONFORM(report.rank == victim, "the report names rank " << report.rank);
      LCI_CONFORM(report.user_context == nullptr, "a report carries no user_context");
      LCI_CONFORM(describe_fault(report).find("rank 2") != std::string::npos,
                  describe_fault(report));
    }
    // Operations to the dead rank still fail as before.
    std::vector<char> arena(size_max, 'd');
    const net_mr_t mr = first.register_region(arena.data(), arena.size());
    first.post("post_send to the dead rank", [&] {
      return first.device().post_send(victim, arena.data(), 8, mr, 0, arena.data());
    });
    first.wait_for([&] { return first.local_count() == 1; }, "the send's fault");
    const net_status_t fault = first.local().front();
    LCI_CONFORM(fault.fault == net_fault_t::peer_crashed && fault.rank == victim,
                describe_fault(fault));
    LCI_CONFORM(fault.user_context == arena.data(), "the fault's user_context");
    // The survivors still reach each other.
    const int peer = 1 - first.rank;
    first.post("post_send to the survivor", [&] {
      return first.device().post_send(peer, arena.data(), 8, mr, 7, nullptr);
    });
    first.wait_for([&] { return first.received_count() == 1 && first.local_count() == 2; },
                   "the survivor's message");
    LCI_CONFORM(first.received().front().status.rank == peer, "message from the survivor");
    LCI_CONFORM(first.peer_reports().size() == 1, "a second report");
    ctx.barrier();
  });
}

// poll_comp fills at most statuses_max entries (every poll of the endpoint
// checks the entry after them): polled with room for 16 and for 1 in turn,
// a device hands out two dead peers' reports and the faults of sends queued
// to them, none lost, none written past the room it was given.
TEST_P(BackendConformance, PollsWriteOnlyWhatFits) {
  constexpr int survivors_count = 2;
  constexpr int ranks_count = 4;
  constexpr std::size_t sends_per_victim = 4;
  constexpr std::size_t size_max = 64;
  if (!GetParam().can_crash) GTEST_SKIP() << "this harness cannot crash a rank";
  expect_ok(GetParam(), ranks_count, [](rank_ctx_t& ctx) {
    endpoint_t ep(ctx);
    ep.set_poll_batches(16, 1);
    ep.post_recv_buffers(4, size_max);
    ctx.barrier();
    if (ep.rank >= survivors_count) ctx.crash();
    ep.wait_for([&] { return ep.peer_reports().size() == ranks_count - survivors_count; },
                "both dead peers' reports");
    std::vector<char> arena(size_max, 'd');
    const net_mr_t mr = ep.register_region(arena.data(), arena.size());
    // Posted back to back: their faults wait together for the polls.
    for (int victim = survivors_count; victim < ranks_count; ++victim) {
      for (std::size_t i = 0; i < sends_per_victim; ++i) {
        ep.post("post_send to a dead rank", [&] {
          return ep.device().post_send(victim, arena.data(), 8, mr, 0, arena.data());
        });
      }
    }
    const std::size_t faults_count = (ranks_count - survivors_count) * sends_per_victim;
    ep.wait_for([&] { return ep.local_count() == faults_count; }, "the sends' faults");
    for (const net_status_t& status : ep.local()) {
      LCI_CONFORM(status.fault == net_fault_t::peer_crashed && status.rank >= survivors_count,
                  describe_fault(status));
    }
    LCI_CONFORM(ep.peer_reports().size() == ranks_count - survivors_count,
                "peer_down reports: " << ep.peer_reports().size());
    ctx.barrier();
  });
}

}  // namespace
}  // namespace lci::conformance
