// Buffer lists (the local_buffers option; docs/design/protocol.md, "Buffer
// lists"): a send, receive, active message, put or get whose local side is
// a list of buffers moves the list's bytes in order as one message with one
// completion — whatever the two sides' segmentations, at inject, buffer-copy
// and rendezvous sizes — reports a status naming no single buffer, refuses
// malformed lists by name, and keeps a COMP_NULL list's bytes once the post
// returned, through the backlog too.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::expect_invalid_argument;
using lci::runtime_test::post_retrying;
using lci::runtime_test::require;
using lci::runtime_test::run_beside_progress_thread;

int peer_of(int rank) { return 1 - rank; }

// The byte at offset `at` of a list's concatenation, from rank `from`.
std::uint8_t pattern(int from, std::size_t at) {
  return static_cast<std::uint8_t>(at * 7 + 13 * from + 1);
}

// Buffers of the given sizes, and the list that names them.
struct pieces_t {
  std::vector<std::vector<std::uint8_t>> storage;
  lci::buffers_t list;

  explicit pieces_t(const std::vector<std::size_t>& sizes) {
    storage.reserve(sizes.size());
    for (const std::size_t size : sizes) {
      // A byte at least, so an empty entry still names real memory.
      storage.emplace_back(size > 0 ? size : 1, 0);
      list.push_back({storage.back().data(), size});
    }
  }
  std::size_t total() const {
    std::size_t sum = 0;
    for (const lci::buffer_t& buffer : list) sum += buffer.size;
    return sum;
  }
  void fill(int from) {
    std::size_t at = 0;
    for (const lci::buffer_t& buffer : list) {
      auto* bytes = static_cast<std::uint8_t*>(buffer.base);
      for (std::size_t i = 0; i < buffer.size; ++i) bytes[i] = pattern(from, at++);
    }
  }
  // The first `size` bytes of the concatenation are rank `from`'s pattern
  // and the rest of the list still holds zeros.
  void expect(int from, std::size_t size, const std::string& what) const {
    std::size_t at = 0;
    for (const lci::buffer_t& buffer : list) {
      const auto* bytes = static_cast<const std::uint8_t*>(buffer.base);
      for (std::size_t i = 0; i < buffer.size; ++i, ++at) {
        const std::uint8_t want = at < size ? pattern(from, at) : 0;
        require(bytes[i] == want, what + ": byte " + std::to_string(at) + " of the list is " +
                                      std::to_string(bytes[i]) + ", not " +
                                      std::to_string(want));
      }
    }
  }
};

std::string describe(const std::vector<std::size_t>& sizes) {
  std::string text = "{";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    text += (i > 0 ? ", " : "") + std::to_string(sizes[i]);
  }
  return text + "}";
}

void run_two_ranks(const std::function<void(lci::sim::rank_env_t&)>& body,
                   double send_queue_full_rate = 0) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 4;
  sweep.configure = [send_queue_full_rate](lci::sim::run_options_t& options) {
    options.world.faults.rate(lci::sim::fault_kind_t::send_queue_full) = send_queue_full_rate;
    options.log = false;
  };
  lci::sim::expect_runs_ok(2, sweep, [&body](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    body(env);
    lci::barrier();
    lci::g_runtime_fina();
  });
}

lci::status_t wait_for(lci::comp_t sync, lci::status_t status) {
  if (status.is_posted()) lci::sync_wait(sync, &status);
  return status;
}

void expect_list_status(const lci::status_t& status, int rank, lci::tag_t tag, std::size_t size,
                        void* user_context, const std::string& what) {
  require(status.is_done(), what + ": status " + status.error.get_str());
  require(status.rank == rank, what + ": status.rank " + std::to_string(status.rank));
  require(status.tag == tag, what + ": status.tag " + std::to_string(status.tag));
  require(status.size == size, what + ": status.size " + std::to_string(status.size));
  require(status.buffer == nullptr, what + ": status.buffer names a buffer");
  require(status.user_context == user_context, what + ": status.user_context is not its own");
}

// A send from a list to a receive into a list of another segmentation.
struct layout_t {
  std::vector<std::size_t> send;
  std::vector<std::size_t> recv;
};

std::vector<layout_t> layouts() {
  const std::size_t bcopy = lci::get_max_bcopy_size();
  return {
      {{3, 0, 5}, {8}},                                   // inject size
      {{8}, {2, 2, 0, 4}},                                // one entry to many
      {{100, 0, 28, bcopy - 128}, {bcopy / 2, bcopy - bcopy / 2}},  // buffer copy, full packet
      {{bcopy, 1}, {1, bcopy}},                           // one over: rendezvous
      {{40000, 30000}, {1, 69999}},                       // rendezvous
      {{10}, {4, 100}},                                   // the receive holds more than arrives
      {{}, {0, 0}},                                       // nothing at all
  };
}

TEST(BufferList, SendAndReceiveMoveTheBytesInOrder) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    const int peer = peer_of(env.rank());
    const std::vector<layout_t> all = layouts();
    lci::comp_t sync = lci::alloc_sync();
    for (std::size_t i = 0; i < all.size(); ++i) {
      const lci::tag_t tag = 40 + i;
      const bool sender = env.rank() == 0;
      const std::vector<std::size_t>& sizes = sender ? all[i].send : all[i].recv;
      pieces_t pieces(sizes);
      const std::size_t sent = pieces_t(all[i].send).total();
      const std::string what = std::string(sender ? "send from " : "receive into ") +
                               describe(sizes);
      void* context = &pieces;
      lci::status_t status;
      if (sender) {
        pieces.fill(0);
        status = post_retrying([&] {
          return lci::post_send_x(peer, nullptr, 0, tag, sync)
              .local_buffers(pieces.list)
              .user_context(context)();
        });
      } else {
        status = post_retrying([&] {
          return lci::post_recv_x(peer, nullptr, 0, tag, sync)
              .local_buffers(pieces.list)
              .user_context(context)();
        });
      }
      status = wait_for(sync, status);
      expect_list_status(status, peer, tag, sent, context, what);
      if (!sender) pieces.expect(1 - env.rank(), sent, what);
    }
    lci::free_comp(&sync);
  });
}

// One side a list, the other one plain buffer; the list posted with
// allow_done(false), so its completion comes through the object.
TEST(BufferList, MeetsAPlainBufferAndSignalsItsObject) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    const int peer = peer_of(env.rank());
    constexpr lci::tag_t tag = 9;
    const std::vector<std::size_t> sizes = {17, 0, 200};
    const std::size_t total = 217;
    lci::comp_t cq = lci::alloc_cq();
    lci::status_t status;
    if (env.rank() == 0) {
      pieces_t pieces(sizes);
      pieces.fill(0);
      status = post_retrying([&] {
        return lci::post_send_x(peer, nullptr, 0, tag, cq)
            .local_buffers(pieces.list)
            .allow_done(false)();
      });
      require(status.is_posted(), "allow_done(false) list send: not posted");
      do {
        (void)lci::progress();
        status = lci::cq_pop(cq);
      } while (status.is_retry());
      expect_list_status(status, peer, tag, total, nullptr, "list send's signalled status");
    } else {
      std::vector<std::uint8_t> plain(total);
      status = post_retrying([&] { return lci::post_recv(peer, plain.data(), total, tag, cq); });
      if (status.is_posted()) {
        do {
          (void)lci::progress();
          status = lci::cq_pop(cq);
        } while (status.is_retry());
      }
      require(status.is_done() && status.size == total && status.buffer == plain.data(),
              "plain receive of a list: wrong status");
      for (std::size_t at = 0; at < total; ++at) {
        require(plain[at] == pattern(0, at), "plain receive of a list: byte " +
                                                 std::to_string(at) + " is wrong");
      }
    }
    lci::free_comp(&cq);
  });
}

// An active message from a list arrives as one buffer of the list's total
// size (eager and rendezvous).
TEST(BufferList, ActiveMessageArrivesAsOneBuffer) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    const int peer = peer_of(env.rank());
    const std::size_t bcopy = lci::get_max_bcopy_size();
    const std::vector<std::vector<std::size_t>> messages = {{5, 0, 60}, {bcopy, 3000}};
    lci::comp_t cq = lci::alloc_cq();
    const lci::rcomp_t rcomp = lci::register_rcomp(cq);
    lci::barrier();
    if (env.rank() == 0) {
      lci::comp_t sync = lci::alloc_sync();
      for (const std::vector<std::size_t>& sizes : messages) {
        pieces_t pieces(sizes);
        pieces.fill(0);
        const lci::status_t status = wait_for(sync, post_retrying([&] {
                                                return lci::post_am_x(peer, nullptr, 0, sync,
                                                                      rcomp)
                                                    .local_buffers(pieces.list)();
                                              }));
        expect_list_status(status, peer, 0, pieces.total(), nullptr,
                           "AM from " + describe(sizes));
      }
      lci::free_comp(&sync);
    } else {
      for (const std::vector<std::size_t>& sizes : messages) {
        const std::size_t total = pieces_t(sizes).total();
        lci::status_t status;
        do {
          (void)lci::progress();
          status = lci::cq_pop(cq);
        } while (status.is_retry());
        require(status.is_done() && status.size == total,
                "AM from " + describe(sizes) + ": size " + std::to_string(status.size));
        const auto* bytes = static_cast<const std::uint8_t*>(status.buffer);
        for (std::size_t at = 0; at < total; ++at) {
          require(bytes[at] == pattern(0, at),
                  "AM from " + describe(sizes) + ": byte " + std::to_string(at) + " is wrong");
        }
        std::free(status.buffer);
      }
    }
    lci::barrier();
    lci::deregister_rcomp(rcomp);
    lci::free_comp(&cq);
  });
}

// A put gathers the list into the remote region at remote_disp; a get
// scatters the remote region over the list.
TEST(BufferList, PutGathersAndGetScatters) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    const int peer = peer_of(env.rank());
    const std::size_t bcopy = lci::get_max_bcopy_size();
    const std::vector<std::size_t> put_sizes = {7, 0, 9, bcopy};
    const std::vector<std::size_t> get_sizes = {1, bcopy + 14, 0, 1};
    const std::size_t total = 16 + bcopy;
    constexpr std::size_t disp = 24;
    std::vector<std::uint8_t> window(disp + total, 0);
    lci::mr_t mr = lci::register_memory(window.data(), window.size());
    const lci::rmr_t mine = lci::get_rmr(mr);
    std::vector<lci::rmr_t> rmrs(2);
    env.allgather(&mine, sizeof(mine), rmrs.data());
    lci::comp_t sync = lci::alloc_sync();
    if (env.rank() == 0) {
      pieces_t out(put_sizes);
      out.fill(0);
      lci::status_t status = wait_for(sync, post_retrying([&] {
                                        return lci::post_put_x(peer, nullptr, 0, sync, disp,
                                                               rmrs[peer])
                                            .local_buffers(out.list)();
                                      }));
      expect_list_status(status, peer, 0, total, nullptr, "put from " + describe(put_sizes));
      lci::barrier();  // rank 1 checks its window
      lci::barrier();  // rank 1 refilled it
      pieces_t in(get_sizes);
      status = wait_for(sync, post_retrying([&] {
                          return lci::post_get_x(peer, nullptr, 0, sync, disp, rmrs[peer])
                              .local_buffers(in.list)();
                        }));
      expect_list_status(status, peer, 0, total, nullptr, "get into " + describe(get_sizes));
      in.expect(1, total, "get into " + describe(get_sizes));
    } else {
      lci::barrier();
      for (std::size_t at = 0; at < total; ++at) {
        require(window[disp + at] == pattern(0, at),
                "put from a list: window byte " + std::to_string(at) + " is wrong");
      }
      for (std::size_t at = 0; at < total; ++at) window[disp + at] = pattern(1, at);
      lci::barrier();
    }
    lci::barrier();
    lci::free_comp(&sync);
    lci::deregister_memory(&mr);
  });
}

TEST(BufferList, MalformedListsAreRefusedByName) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    const int peer = peer_of(env.rank());
    char byte = 0;
    std::vector<char> bytes(16);
    lci::comp_t sync = lci::alloc_sync();
    const lci::buffers_t good = {{bytes.data(), 8}, {bytes.data() + 8, 8}};
    expect_invalid_argument("a list and a buffer", [&] {
      return lci::post_send_x(peer, &byte, 1, 1, sync).local_buffers(good)();
    }, {"local_buffers with local_buffer/size given too"});
    expect_invalid_argument("an entry with no base", [&] {
      return lci::post_send_x(peer, nullptr, 0, 1, sync)
          .local_buffers({{bytes.data(), 8}, {nullptr, 4}})();
    }, {"local_buffers[1]: base = nullptr with size = 4"});
    expect_invalid_argument("sizes that overflow", [&] {
      return lci::post_send_x(peer, nullptr, 0, 1, sync)
          .local_buffers({{bytes.data(), 8}, {bytes.data(), ~std::size_t{0} - 4}})();
    }, {"local_buffers: the sizes overflow at local_buffers[1]"});
    lci::mr_t mr = lci::register_memory(bytes.data(), bytes.size());
    expect_invalid_argument("a registration", [&] {
      return lci::post_send_x(peer, nullptr, 0, 1, sync).local_buffers(good).mr(mr)();
    }, {"mr with local_buffers"});
    lci::deregister_memory(&mr);
    require(!lci::sync_test(sync, nullptr), "a refused list post signalled its object");
    lci::free_comp(&sync);
    lci::runtime_test::round_trip(peer, 2);  // the runtime still works
  });
}

// A list receive smaller than the message: the same length_error as a
// plain buffer's (from the post or from progress, whichever meets the
// message), and the runtime keeps working.
TEST(BufferList, TruncatedListReceiveThrows) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    const int peer = peer_of(env.rank());
    constexpr lci::tag_t tag = 12;
    std::vector<std::uint8_t> message(32, 1);
    lci::comp_t sync = lci::alloc_sync();
    if (env.rank() == 0) {
      (void)wait_for(sync, post_retrying([&] {
                       return lci::post_send(peer, message.data(), message.size(), tag, sync);
                     }));
    } else {
      pieces_t pieces({4, 4});
      bool threw = false;
      try {
        const lci::status_t status = post_retrying([&] {
          return lci::post_recv_x(peer, nullptr, 0, tag, sync).local_buffers(pieces.list)();
        });
        if (status.is_posted()) lci::sync_wait(sync, nullptr);
      } catch (const std::length_error& error) {
        threw = std::string(error.what()).find("truncated to its receive's 8 bytes") !=
                std::string::npos;
      }
      require(threw, "a 32-byte message into an 8-byte list: no length_error naming 8 bytes");
    }
    lci::barrier();
    lci::free_comp(&sync);
    lci::runtime_test::round_trip(peer, 13);
  });
}

// A full send queue: list sends with allow_retry(false) complete from the
// backlog through their object; COMP_NULL list sends are the caller's
// again at once (scribbled over here) and still arrive intact.
TEST(BufferList, BackloggedAndCompNullListsArriveIntact) {
  run_two_ranks(
      [](lci::sim::rank_env_t& env) {
        const int peer = peer_of(env.rank());
        constexpr int messages_count = 16;
        const std::vector<std::size_t> sizes = {3, 0, 61};
        const std::size_t total = 64;
        if (env.rank() == 0) {
          lci::comp_t sync = lci::alloc_sync();
          int backlogged = 0;
          for (int i = 0; i < messages_count; ++i) {
            pieces_t pieces(sizes);
            pieces.fill(0);
            const bool comp_null = i % 2 == 1;
            lci::status_t status =
                lci::post_send_x(peer, nullptr, 0, static_cast<lci::tag_t>(i),
                                 comp_null ? lci::COMP_NULL : sync)
                    .local_buffers(pieces.list)
                    .allow_retry(false)();
            require(!status.is_retry(), "allow_retry(false) list send returned retry");
            if (status.error.errorcode == lci::errorcode_t::posted_backlog) ++backlogged;
            if (comp_null) {
              for (std::vector<std::uint8_t>& piece : pieces.storage) {
                std::memset(piece.data(), 0xA5, piece.size());
              }
            } else {
              status = wait_for(sync, status);
              require(status.is_done() && status.size == total, "backlogged list send failed");
            }
          }
          lci::wait_drained();
          require(backlogged > 0, "the full send queue refused no list send");
          lci::free_comp(&sync);
        } else {
          lci::comp_t sync = lci::alloc_sync();
          for (int i = 0; i < messages_count; ++i) {
            pieces_t pieces({total});
            const lci::status_t status = wait_for(sync, post_retrying([&] {
                                                    return lci::post_recv_x(
                                                               peer, nullptr, 0,
                                                               static_cast<lci::tag_t>(i), sync)
                                                        .local_buffers(pieces.list)();
                                                  }));
            require(status.is_done() && status.size == total,
                    "message " + std::to_string(i) + ": wrong status");
            pieces.expect(0, total, "message " + std::to_string(i));
          }
          lci::free_comp(&sync);
        }
      },
      /*send_queue_full_rate=*/0.5);
}

// A second thread of each rank progresses all along, so a list's staged
// operation completes (and drops its reference) on either thread while the
// posting thread drops its own: whichever is last frees the staging, and
// under TSan that checks the reference count's acq_rel
// (lci/protocol/buffer_list.cpp, release()). The sim refuses posts and
// preempts threads to move completions to the thread that did not post.
TEST(BufferList, TheLastReferenceDropsOnEitherThread) {
  LCI_SIM_ONLY("injected faults");
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 0;  // OS threads only: fibers take turns, so nothing races
  sweep.configure = [](lci::sim::run_options_t& options) {
    options.world.faults.rate(lci::sim::fault_kind_t::send_queue_full) = 0.3;
    // Long enough for the other thread to poll the completion meanwhile.
    options.world.faults.rate(lci::sim::fault_kind_t::preempt) = 0.1;
    options.world.faults.preempt_micros = 300;
    options.log = false;
  };
  lci::sim::expect_runs_ok(2, sweep, [](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    const int peer = peer_of(env.rank());
    const std::vector<layout_t> all = layouts();
    run_beside_progress_thread(env, [&] {
      lci::comp_t sync = lci::alloc_sync();
      for (int round = 0; round < 120; ++round) {
        for (std::size_t i = 0; i < all.size(); ++i) {
          const lci::tag_t tag = static_cast<lci::tag_t>(1000 + round * all.size() + i);
          const bool sender = env.rank() == 0;
          pieces_t pieces(sender ? all[i].send : all[i].recv);
          const std::size_t sent = pieces_t(all[i].send).total();
          lci::status_t status;
          if (sender) {
            pieces.fill(0);
            status = post_retrying([&] {
              return lci::post_send_x(peer, nullptr, 0, tag, sync).local_buffers(pieces.list)();
            });
          } else {
            status = post_retrying([&] {
              return lci::post_recv_x(peer, nullptr, 0, tag, sync).local_buffers(pieces.list)();
            });
          }
          status = wait_for(sync, status);
          require(status.is_done(), std::string("a list's status ") + status.error.get_str());
          if (!sender) pieces.expect(peer, sent, "receive into " + describe(all[i].recv));
        }
      }
      lci::free_comp(&sync);
    });
    lci::barrier();
    lci::g_runtime_fina();
  });
}

}  // namespace
