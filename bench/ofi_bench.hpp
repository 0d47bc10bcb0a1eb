// The shared part of the libfabric benchmarks (ofi_msgrate, ofi_bandwidth
// and their raw-libfabric baselines ofi_raw_msgrate, ofi_raw_bandwidth): the
// command line, the windowed exchange between paired threads, the timing
// and the report. A transport (LCI in ofi_lci_transport.cpp, libfabric
// directly in ofi_raw_transport.cpp) supplies only how one message is sent,
// how arrivals are counted and how processes meet out of band, so both
// sides of a comparison run the same loop.
//
// The exchange: ranks pair up, r with r + n/2 (n even); thread t of r talks
// to thread t of its partner. One round: the initiator (the lower rank)
// sends out_count messages of out_size bytes, the responder waits for them
// all and answers with back_count messages of back_size bytes, and the
// initiator waits for those. A round's arrivals are announced (expect())
// before the peer can send them: the initiator before its sends, the
// responder for round i + 1 before it answers round i. LCI's send/recv
// posts its receives there; active messages and the raw baseline keep
// receives pre-posted and only note the size to check.
//   msgrate:   out = back = window messages of --size bytes (a ping-pong of
//              windows); rate = messages sent per second.
//   bandwidth: out = window messages of each size, back = one 8-byte ack;
//              rate = bytes the initiators sent per second.
//
// Thread safety: a transport's open_channel(), barrier() and allgather()
//                run on the main thread only; each channel is used by one
//                thread at a time (its bench thread).
// Blocking:      barrier(), allgather() wait for every process; the
//                channel calls never block (retry is the caller's loop).
// Ownership:     the transport owns its channels and buffers; the driver
//                owns the transport.
// Allocation:    buffers at open_channel(); per message only what the
//                transport itself does (that is what is measured).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace lci::bench {

enum class bench_kind_t { msgrate, bandwidth };
// --op: LCI's active messages or send/recv. The raw baseline has one
// exchange (fi_send/fi_recv) and accepts either name for it.
enum class op_kind_t { am, sendrecv };
enum class devices_kind_t { shared, dedicated };
// --am-buffer: where LCI hands an arrived active message to the bench: a
// malloc'd copy the bench frees (the default completion object), or the
// packet it landed in, returned with put_upacket (alloc_cq's zero_copy_am,
// for a runtime that handles the payload in place). The raw baseline always
// reads the payload where it landed.
enum class am_buffer_kind_t { copy, packet };

struct options_t {
  bench_kind_t bench = bench_kind_t::msgrate;
  op_kind_t op = op_kind_t::am;
  devices_kind_t devices = devices_kind_t::shared;
  am_buffer_kind_t am_buffer = am_buffer_kind_t::copy;
  int threads = 1;
  std::size_t window = 64;
  std::size_t size_bytes = 8;                 // msgrate
  std::size_t size_min_bytes = 16;            // bandwidth
  std::size_t size_max_bytes = 1 << 20;       // bandwidth
  std::size_t size_step = 4;                  // bandwidth: factor between sizes
  std::uint64_t iterations = 0;               // rounds measured (0: from --duration)
  std::uint64_t warmup_iterations = 0;        // 0: the bench's default
  double duration_s = 0;                      // 0: the bench's default
  bool csv = false;
  // Added work (--work-send/-arrival/-poll): iterations of a dependent loop
  // (about 6 instructions each) before each send, per arrived message, and
  // before each poll; to measure how sensitive an exchange is to work in
  // each place (docs/bench_ofi.md, "Sensitivity").
  std::size_t work_send = 0;
  std::size_t work_arrival = 0;
  std::size_t work_poll = 0;

  // The largest message a channel sends or receives.
  std::size_t message_size_max_bytes() const;
  // The sizes a run measures, in order.
  std::vector<std::size_t> sizes_bytes() const;
};

// The receive buffers of one channel: one slot per message of a window, so
// that no two receives in flight share memory (with a shared device, any
// thread's progress may complete them, concurrently). Slots go round-robin:
// a slot is handed out again only after `window` more receives, and the
// exchange never has more than one window of receives posted.
// Thread safety: the channel's thread only. Allocation: at construction
// (window x the largest message).
class receive_slots_t {
 public:
  explicit receive_slots_t(const options_t& options)
      : slot_bytes_(options.message_size_max_bytes()),
        slots_(options.window),
        buffer_(slot_bytes_ * slots_, 0) {}
  void* next() {
    char* slot = buffer_.data() + next_index_ * slot_bytes_;
    next_index_ = (next_index_ + 1) % slots_;
    return slot;
  }

 private:
  const std::size_t slot_bytes_;
  const std::size_t slots_;
  std::vector<char> buffer_;
  std::size_t next_index_ = 0;
};

// One thread's end of a pair of threads. Calls come from that thread only.
class channel_t {
 public:
  virtual ~channel_t() = default;
  // Announces `count` arrivals of `size_bytes`: posts receives for them
  // where the operation needs the user's (progressing while the transport
  // refuses); every transport checks arrivals against the size.
  virtual void expect(std::size_t count, std::size_t size_bytes) = 0;
  // Starts one message of size_bytes to the partner thread; false: no room
  // now (the caller polls and tries again).
  [[nodiscard]] virtual bool try_send(std::size_t size_bytes) = 0;
  // Progresses; returns the messages that arrived since the previous call.
  virtual std::size_t poll() = 0;
  // Sends started but not yet completed locally.
  virtual std::size_t sends_pending() const = 0;
};

class transport_t {
 public:
  virtual ~transport_t() = default;
  virtual int rank_me() const = 0;
  virtual int rank_n() const = 0;
  // What the report calls it: "lci" or "raw".
  virtual const char* name() const = 0;
  // The channel of thread `thread_index`; called on the main thread for
  // 0, 1, ..., threads - 1, on every rank in the same order. Owned by the
  // transport.
  virtual channel_t& open_channel(int thread_index) = 0;
  virtual void barrier() = 0;
  // Every rank's value, in rank order (collective).
  virtual std::vector<double> allgather(double value) = 0;
};

using transport_factory_t = std::function<std::unique_ptr<transport_t>(const options_t&)>;

// The whole program: parses argv for `bench`, makes the transport, runs,
// reports on rank 0. Returns the exit status (2: bad command line, 1: a
// failed run, with the reason on stderr).
int run_main(bench_kind_t bench, int argc, char** argv, const transport_factory_t& factory);

// Throws std::runtime_error("<what>: <detail>") for a transport's setup
// failures; the driver prints it and exits 1.
[[noreturn]] void fail(const std::string& what, const std::string& detail);

}  // namespace lci::bench
