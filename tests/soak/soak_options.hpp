// soak_options_t: what one soak run does (tests/soak/soak_workload.hpp),
// parsed from the program's arguments (soak.cpp) or set by a test
// (soak_sim_test.cpp). Every rank of a run must get the same options.
//
//   --ranks N            simulator only: ranks of the run (sets LCI_SIM_RANKS;
//                        default 2); under a launcher the job's size
//   --threads N          threads per rank (1..16; default 2)
//   --devices MODE       shared (every thread posts on the default device)
//                        or per-thread (thread 0 the default device, thread
//                        t > 0 a device of its own); default shared
//   --ops N              operations each thread starts per epoch (default 400)
//   --epochs N           epochs to run (default 1); each ends with a barrier,
//                        the checks and the ranks' accounting exchange
//   --duration S         instead: start epochs until S seconds passed (rank
//                        0 decides at each epoch's end; the others follow)
//   --window N           operations in flight per thread at most (default 256)
//   --size-max BYTES     largest message (default 1 MiB; e.g. 4000 keeps every
//                        message eager); sizes are drawn from a mix that hits
//                        0, 1..8, the inject limit +-1, the buffer-copy limit
//                        (get_max_bcopy_size()) +-1, up to 64 KiB, up to 1 MiB
//   --ops-mix LIST       op kinds to draw from, comma-separated, of
//                        am,send,put,put_signal,get,get_signal (default: all)
//   --comps LIST         local completion kinds, of
//                        sync,cq,cq_array,handler,counter,graph,none (default: all)
//   --no-self            never target the own rank (default: self included)
//   --seed S             the plan's seed (default: LCI_SIM_SEED, else 1);
//                        on the simulator the program also runs that seed
//   --exhaust            every resource tiny: a packet pool of
//                        exhaust_npackets packets, completion queues of
//                        length exhaust_cq_length, devices with
//                        exhaust_net_max_* sends/recvs/CQ entries (the data
//                        devices are then allocated, so the default device
//                        only carries the control messages)
//   --hold-registrations N  register N more 4 KiB buffers per data device and
//                        keep them all run (as a program that keeps its own
//                        memory registered; default 0). Each data device
//                        always holds 2: the epoch's window and an arena
//                        its threads take buffers from (ops drawn use_mr)
//   --expect-in-flight N  fail the rank unless some thread had at least N
//                        operations in flight at once (that the run kept
//                        the network as busy as intended; default 0: no check)
//   --tolerate-crashes   a peer may crash (the sim's rank_crash fault): the
//                        survivors stop at the first crash they hear of,
//                        check what they received so far and leave
//                        (default: on when LCI_SIM_FAULT_RANK_CRASH is set)
//   --quiet              no per-epoch lines, only the summary
//
// Thread safety: plain data. Blocking: never. Allocation: parse only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lci::soak {

// Op kinds a thread starts. A send's matching receive is posted by the
// target's thread of the same index (it is not drawn itself).
enum class op_kind_t : std::uint8_t { am, send, put, put_signal, get, get_signal };
inline constexpr int op_kinds_count = 6;

// Local completion kinds: a synchronizer per operation, the thread's LCRQ
// or fixed-array completion queue, the rank's handler, a counter per batch
// of operations, a completion graph per group of operations, or none
// (COMP_NULL_RETRY: the post completes at once or returns retry).
enum class comp_kind_t : std::uint8_t { sync, cq, cq_array, handler, counter, graph, none };
inline constexpr int comp_kinds_count = 7;

enum class device_mode_t : std::uint8_t { shared, per_thread };

// Resource sizes of --exhaust.
inline constexpr std::size_t exhaust_npackets = 48;
inline constexpr int exhaust_cq_length = 2;
inline constexpr std::size_t exhaust_net_max_sends = 2;
inline constexpr std::size_t exhaust_net_max_recvs = 4;
inline constexpr std::size_t exhaust_net_max_cqes = 8;

inline constexpr int threads_max = 16;
inline constexpr std::size_t size_max_max = std::size_t{1} << 20;

struct soak_options_t {
  int ranks = 0;  // simulator only; 0: LCI_SIM_RANKS or the program's default
  int threads = 2;
  device_mode_t devices = device_mode_t::shared;
  int ops_per_thread = 400;
  int epochs = 1;
  double duration_s = 0;  // > 0: epochs until this many seconds passed
  int window = 256;
  std::size_t size_max = size_max_max;
  unsigned op_kinds_mask = (1u << op_kinds_count) - 1;      // bit per op_kind_t
  unsigned comp_kinds_mask = (1u << comp_kinds_count) - 1;  // bit per comp_kind_t
  bool self = true;
  std::uint64_t seed = 1;
  bool exhaust = false;
  int held_registrations = 0;
  int expect_in_flight = 0;  // 0: no expectation
  bool tolerate_crashes = false;
  bool quiet = false;

  bool has(op_kind_t kind) const { return (op_kinds_mask >> static_cast<unsigned>(kind)) & 1u; }
  bool has(comp_kind_t kind) const {
    return (comp_kinds_mask >> static_cast<unsigned>(kind)) & 1u;
  }
};

const char* get_op_kind_str(op_kind_t kind);
const char* get_comp_kind_str(comp_kind_t kind);

// Defaults: seed from LCI_SIM_SEED, tolerate_crashes from
// LCI_SIM_FAULT_RANK_CRASH (as the simulator reads them).
soak_options_t default_soak_options();

// Parses argv[1..argc); false with a message in *error (usage included) on a
// malformed or unknown argument. Options start from *options' values.
bool parse_soak_options(int argc, char** argv, soak_options_t* options, std::string* error);

std::string soak_usage();

// One line with every option: "threads=2 devices=shared ops=400 ...".
std::string describe(const soak_options_t& options);

// What a test's run starts from: `threads` threads on `devices`, each of
// `ops_per_thread` operations of at most `size_max` bytes, quiet.
soak_options_t test_soak_options(int threads, device_mode_t devices, int ops_per_thread,
                                 std::size_t size_max);

}  // namespace lci::soak
