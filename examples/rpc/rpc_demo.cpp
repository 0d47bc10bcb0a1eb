// rpc_demo: remote procedure calls over iRPCLib's LCI backend (irpc.hpp,
// the paper's Listing 2). Every thread of every rank calls `add` and
// `echo` on the other ranks, several calls in flight at once; any thread
// of the target serves a call (RPC handlers, unlike active-message
// handlers, run outside progress and may communicate: they send the reply).
//
//   bazel run //examples:rpc_demo_sim -- [--threads T] [--calls C] [--window W]
//   LCI_SIM_RANKS=4 bazel run //examples:rpc_demo_sim
//   LCI_SIM_FAULT_SEND_QUEUE_FULL=0.3 bazel run //examples:rpc_demo_sim   # many retries
//
// Defaults: T = 2 threads per rank (at most 3: the simulated network allows
// 4 devices per rank, the runtime's default device included), C = 64 calls
// per thread, W = 8 calls in flight per thread. Echo texts come in three
// sizes, so messages take each of LCI's protocols (inject, buffer copy,
// rendezvous).
//
// The small upper layer below plays iRPCLib's part: handlers registered
// under indices (the message tag), arguments serialised after a header,
// calls waiting for their reply, found again through a token the reply
// echoes. A retry from send_msg is handled
// as the listing suggests: the caller does other useful work (progress,
// serving incoming calls) and tries again. Termination: once a rank has the
// replies to all its calls it enters a non-blocking barrier and keeps
// serving until the barrier completes, at which point every rank has all
// its replies, so no message is still on its way.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "examples/example_main.hpp"
#include "examples/rpc/irpc.hpp"
#include "lci.hpp"
#include "lci/util/atomic.hpp"

namespace {

// ---- the upper layer ----

// Handler indices: the tag of each message.
enum handler_index_t : lci::tag_t { handler_add = 0, handler_echo = 1, handler_reply = 2 };

// One call waiting for its reply. The reply may be consumed by any thread
// of the caller's rank; `done` publishes the result to the calling thread.
struct call_t {
  handler_index_t handler = handler_add;
  int target = -1;
  std::vector<std::uint8_t> arguments;
  std::vector<std::uint8_t> result;  // written before `done`
  lci::util::atomic<bool> done{false};
};

// Leads every message: which call it belongs to. The caller's address of
// the call_t, echoed back by the reply; only the caller dereferences it.
struct header_t {
  std::uint64_t call_token;
};

// Per thread of the demo: its backend context and what it counted.
struct worker_t {
  irpc::thread_context_t context;
  long served = 0;   // calls this thread executed for peers
  long retries = 0;  // send_msg calls that returned false
};

// Serialises header + payload into a malloc'd buffer (the backend frees it).
void* pack(std::uint64_t token, const void* payload, std::size_t size, std::size_t* packed_size) {
  *packed_size = sizeof(header_t) + size;
  auto* buffer = static_cast<std::uint8_t*>(std::malloc(*packed_size));
  const header_t header{token};
  std::memcpy(buffer, &header, sizeof(header));
  if (size > 0) std::memcpy(buffer + sizeof(header), payload, size);
  return buffer;
}

// Sends until the backend takes the message. Used for replies, from inside
// the dispatch of a message: only progress here, no serving of further
// calls, so dispatch never nests.
void send_reply(irpc::backend_t& backend, worker_t& self, int rank, std::uint64_t token,
                const void* payload, std::size_t size) {
  std::size_t packed_size = 0;
  void* buffer = pack(token, payload, size, &packed_size);
  while (!backend.send_msg(self.context, rank, buffer, packed_size, handler_reply)) {
    ++self.retries;
    backend.do_background_work(self.context);
  }
}

// The RPC handlers, by index.
void serve(irpc::backend_t& backend, worker_t& self, const irpc::msg_t& msg) {
  header_t header;
  std::memcpy(&header, msg.buf, sizeof(header));
  const auto* payload = static_cast<const std::uint8_t*>(msg.buf) + sizeof(header);
  const std::size_t payload_size = msg.size - sizeof(header);
  switch (msg.tag) {
    case handler_add: {
      std::int64_t operands[2];
      std::memcpy(operands, payload, sizeof(operands));
      const std::int64_t sum = operands[0] + operands[1];
      send_reply(backend, self, msg.rank, header.call_token, &sum, sizeof(sum));
      ++self.served;
      return;
    }
    case handler_echo:
      send_reply(backend, self, msg.rank, header.call_token, payload, payload_size);
      ++self.served;
      return;
    case handler_reply: {
      auto* call = reinterpret_cast<call_t*>(static_cast<std::uintptr_t>(header.call_token));
      call->result.assign(payload, payload + payload_size);
      // release: pairs with the acquire in the caller's wait: the result
      // written above is visible once `done` reads true.
      call->done.store(true, lci::util::mo_release);
      return;
    }
    default:
      std::fprintf(stderr, "rpc: message with unknown handler index %llu\n",
                   static_cast<unsigned long long>(msg.tag));
      std::abort();
  }
}

// Background work and at most one incoming message; true when anything
// happened.
bool make_progress(irpc::backend_t& backend, worker_t& self) {
  bool progressed = backend.do_background_work(self.context);
  irpc::msg_t msg;
  if (backend.poll_msg(&msg)) {
    if (msg.size < sizeof(header_t)) {
      std::fprintf(stderr, "rpc: a message of %zu bytes has no header\n", msg.size);
      std::abort();
    }
    serve(backend, self, msg);
    std::free(msg.buf);  // consumed: the buffer is ours to free
    progressed = true;
  }
  return progressed;
}

// ---- the demo ----

struct options_t {
  int threads = 2;
  int calls = 64;
  int window = 8;
};

// The rank that call `index` of thread `thread` of `rank` goes to: round
// robin over the other ranks, starting at a different one per thread.
int target_of(int rank, int rank_n, int thread, int index) {
  if (rank_n == 1) return 0;
  return (rank + 1 + (thread + index) % (rank_n - 1)) % rank_n;
}

// Most texts are short (the network copies them: done at once); some are
// longer than an inject (through a packet) and some longer than a packet
// (rendezvous: the send is posted and send_cb runs later, from progress).
std::string echo_text_of(int rank, int thread, int index) {
  std::string text = "echo " + std::to_string(rank) + "." + std::to_string(thread) + "." +
                     std::to_string(index);
  const std::size_t length = index % 32 == 3 ? 10000 : index % 8 == 1 ? 100 : 0;
  for (std::size_t i = text.size(); i < length; ++i) text += static_cast<char>('a' + i % 26);
  return text;
}

void prepare_call(call_t& call, int rank_me, int rank_n, int thread, int index) {
  call.target = target_of(rank_me, rank_n, thread, index);
  if (index % 2 == 0) {
    call.handler = handler_add;
    const std::int64_t operands[2] = {1000 * rank_me + index, -7 * thread - 1};
    call.arguments.resize(sizeof(operands));
    std::memcpy(call.arguments.data(), operands, sizeof(operands));
  } else {
    call.handler = handler_echo;
    const std::string text = echo_text_of(rank_me, thread, index);
    call.arguments.assign(text.begin(), text.end());
  }
}

bool check_call(const call_t& call, int rank_me, int thread, int index) {
  if (call.handler == handler_add) {
    std::int64_t operands[2];
    std::memcpy(operands, call.arguments.data(), sizeof(operands));
    std::int64_t sum = 0;
    if (call.result.size() != sizeof(sum)) return false;
    std::memcpy(&sum, call.result.data(), sizeof(sum));
    return sum == operands[0] + operands[1];
  }
  const std::string text = echo_text_of(rank_me, thread, index);
  return std::string(call.result.begin(), call.result.end()) == text;
}

// One thread: C calls, at most W in flight; returns the number of wrong
// results.
int run_calls(irpc::backend_t& backend, worker_t& self, int rank_me, int rank_n, int thread,
              const options_t& options) {
  std::vector<call_t> calls(static_cast<std::size_t>(options.calls));
  std::size_t issued = 0;
  std::size_t finished = 0;  // calls [0, finished) have their reply
  const std::size_t window = static_cast<std::size_t>(options.window);
  while (finished < calls.size()) {
    if (issued < calls.size() && issued - finished < window) {
      call_t& call = calls[issued];
      prepare_call(call, rank_me, rank_n, thread, static_cast<int>(issued));
      std::size_t packed_size = 0;
      void* buffer = pack(reinterpret_cast<std::uintptr_t>(&call), call.arguments.data(),
                          call.arguments.size(), &packed_size);
      if (backend.send_msg(self.context, call.target, buffer, packed_size, call.handler)) {
        ++issued;
      } else {
        std::free(buffer);  // still ours: try again after other work
        ++self.retries;
      }
    }
    make_progress(backend, self);
    // acquire: pairs with the release in serve() (handler_reply).
    while (finished < issued && calls[finished].done.load(lci::util::mo_acquire)) ++finished;
  }
  int errors = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (!check_call(calls[i], rank_me, thread, static_cast<int>(i))) ++errors;
  }
  return errors;
}

// Calls every other rank makes to `rank` (what it must serve).
long calls_expected_at(int rank, int rank_n, const options_t& options) {
  long count = 0;
  for (int source = 0; source < rank_n; ++source) {
    for (int thread = 0; thread < options.threads; ++thread) {
      for (int index = 0; index < options.calls; ++index) {
        if (target_of(source, rank_n, thread, index) == rank) ++count;
      }
    }
  }
  return count;
}

// Serves peers until every rank has all its replies: the non-blocking
// barrier completes only once every rank entered it.
void serve_until_all_finished(irpc::backend_t& backend, std::vector<worker_t>& workers) {
  lci::comp_t all_finished = lci::alloc_sync();
  lci::barrier_x().comp(all_finished)();
  lci::status_t status;
  while (!lci::sync_test(all_finished, &status)) {
    (void)lci::progress();  // the barrier's messages use the default device
    for (worker_t& worker : workers) make_progress(backend, worker);
  }
  lci::free_comp(&all_finished);
}

bool parse_options(int argc, char** argv, options_t* options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: missing value\n", arg.c_str());
      return false;
    }
    if (arg == "--threads") {
      options->threads = std::atoi(argv[++i]);
    } else if (arg == "--calls") {
      options->calls = std::atoi(argv[++i]);
    } else if (arg == "--window") {
      options->window = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--threads T] [--calls C] [--window W]\n", argv[0]);
      return false;
    }
  }
  if (options->threads < 1 || options->calls < 1 || options->window < 1) {
    std::fprintf(stderr, "--threads, --calls and --window must be at least 1\n");
    return false;
  }
  return true;
}

}  // namespace

int example::rank_main(int argc, char** argv) {
  options_t options;
  if (!parse_options(argc, argv, &options)) return 2;
  irpc::backend_t backend;
  int rank_me = 0;
  int rank_n = 0;
  backend.global_init(options.threads, &rank_me, &rank_n);
  std::vector<worker_t> workers(static_cast<std::size_t>(options.threads));
  // One slot per thread, written by that thread only, read after the join.
  std::vector<int> errors(workers.size(), 0);
  // A message for this rank may arrive on any of its devices, so every
  // device keeps being progressed: a thread done with its calls goes on
  // serving until all threads of the rank are done, then the main thread
  // serves on every device.
  lci::util::atomic<int> threads_done{0};
  const auto start = std::chrono::steady_clock::now();
  example::run_threads(options.threads, [&](int thread) {
    worker_t& self = workers[static_cast<std::size_t>(thread)];
    self.context = backend.thread_init(thread);
    errors[static_cast<std::size_t>(thread)] =
        run_calls(backend, self, rank_me, rank_n, thread, options);
    // relaxed: a count only; nothing is published through it (the results
    // are read after run_threads joins the threads).
    threads_done.fetch_add(1, lci::util::mo_relaxed);
    while (threads_done.load(lci::util::mo_relaxed) < options.threads) {
      make_progress(backend, self);
    }
  });
  // Every call of this rank has its reply; peers may still be calling.
  serve_until_all_finished(backend, workers);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  int errors_total = 0;
  long served = 0;
  long retries = 0;
  for (std::size_t t = 0; t < workers.size(); ++t) {
    errors_total += errors[t];
    served += workers[t].served;
    retries += workers[t].retries;
    backend.thread_fina(&workers[t].context);
  }
  const long expected_served = calls_expected_at(rank_me, rank_n, options);
  const long calls = static_cast<long>(options.threads) * options.calls;
  std::printf("rank %d: %ld calls (add, echo) answered %s; served %ld calls; %ld sends retried; "
              "%.4f s\n",
              rank_me, calls, errors_total == 0 ? "correctly" : "WRONGLY", served, retries,
              wall_s);
  backend.global_fina();
  if (served != expected_served) {
    std::fprintf(stderr, "rank %d: served %ld calls, expected %ld\n", rank_me, served,
                 expected_served);
    return 1;
  }
  return errors_total == 0 ? 0 : 1;
}
