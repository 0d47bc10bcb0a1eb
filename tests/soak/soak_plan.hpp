// The soak's plan and payloads: what every thread of every rank does in one
// epoch, drawn from one seed, so that every rank can compute what every peer
// will send it (the receiver's expectations) and where every put lands,
// without asking; and the bytes of every message, derived from (seed,
// epoch, source, target, thread, sequence), so that a payload delivered to
// the wrong buffer, twice, or torn is caught.
//
// Per epoch, thread t of rank r draws `ops_per_thread` operations (kind,
// target, size, completion kinds, options) from prng(seed, epoch, r, t).
// Then, over all (r, t, sequence) in that order:
//   pair_index    numbers the ops from r to each target: an AM or send
//                 carries it in the low 24 bits of its tag (higher bits are
//                 sometimes set, to exercise tags over the immediate's
//                 width), so (source rank, tag) names one message;
//   signal_index  numbers the put_signal/get_signal ops from r to each
//                 target: their tag (it must fit the 13 bits a signal's
//                 immediate keeps for it; the plan refuses epochs whose
//                 pairs exceed signal_index_max);
//   remote_offset a put's region in the target's put area (64-byte aligned,
//                 a guard of at least 64 bytes around each, filled with a
//                 canary that must survive), or a get's offset in the target's
//                 get area (whose bytes are get_area_byte(target, offset)).
//
// Thread safety: a plan is immutable once made; share it freely.
// Allocation:    make_epoch_plan allocates the whole plan (all ranks' ops).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lci.hpp"
#include "tests/soak/soak_options.hpp"

namespace lci::soak {

// What signals a target when the operation lands (am, put_signal,
// get_signal): the rank's shared LCRQ or fixed-array completion queue, its
// handler, or (signals only: a counter drops an AM's buffer) its counter.
enum class remote_kind_t : std::uint8_t { none, cq, cq_array, handler, counter };

const char* get_remote_kind_str(remote_kind_t kind);

inline constexpr std::uint32_t signal_index_max = (1u << 13) - 1;
inline constexpr unsigned pair_index_bits = 24;
inline constexpr std::uint64_t pair_index_mask = (std::uint64_t{1} << pair_index_bits) - 1;
inline constexpr std::size_t put_guard_bytes = 64;
inline constexpr std::size_t inject_size_guess = 64;  // the sim device's; edges drawn around it

struct op_plan_t {
  op_kind_t kind = op_kind_t::am;
  comp_kind_t comp = comp_kind_t::sync;       // the initiator's local completion
  comp_kind_t recv_comp = comp_kind_t::sync;  // send: the target's receive's completion
  remote_kind_t remote = remote_kind_t::none;
  int source = 0;
  int target = 0;
  int thread = 0;  // the initiating thread; a send's receive is posted by the same index
  std::uint32_t seq = 0;
  std::uint32_t pair_index = 0;
  std::uint32_t signal_index = 0;
  std::size_t size = 0;
  tag_t tag = 0;
  std::uint64_t remote_offset = 0;
  std::uint16_t graph_group_size = 0;  // the first op of a graph group: its length
  bool graph_chain = false;            // graph: runs after the previous op of its group
  bool network_semantic = false;       // comp_semantic network
  bool force_posted = false;           // allow_done(false)
  bool backlog = false;                // allow_retry(false)
  bool use_mr = false;                 // buffer from the thread's registered arena (if free)
  bool recv_early = false;             // send: receive posted before the start barrier
  bool recv_use_mr = false;

  bool signals_target() const { return remote != remote_kind_t::none; }
  std::string describe() const;
};

struct epoch_plan_t {
  int ranks_count = 0;
  int threads_count = 0;
  int me = 0;
  std::uint32_t epoch = 0;
  std::uint64_t seed = 0;
  std::size_t get_area_bytes = 0;
  std::vector<std::uint64_t> put_area_bytes;       // by target rank
  std::vector<std::vector<op_plan_t>> by_thread;   // [rank * threads_count + thread]
  // What `me` receives.
  std::vector<std::vector<const op_plan_t*>> inbound_by_pair;    // [source][pair_index]
  std::vector<std::vector<const op_plan_t*>> inbound_by_signal;  // [source][signal_index]
  std::vector<std::vector<const op_plan_t*>> recvs_by_thread;    // [thread]: shuffled
  std::vector<const op_plan_t*> puts_in;                         // puts into my area

  const std::vector<op_plan_t>& ops_of(int rank, int thread) const {
    return by_thread[static_cast<std::size_t>(rank * threads_count + thread)];
  }
};

// Throws std::invalid_argument when the options make an impossible plan
// (a pair with more than signal_index_max signals).
epoch_plan_t make_epoch_plan(const soak_options_t& options, int ranks_count, int me,
                             std::uint32_t epoch, std::size_t bcopy_size_max);

// ---- payloads ----

// The identity of one message's bytes.
struct payload_key_t {
  std::uint64_t seed = 0;
  std::uint32_t epoch = 0;
  int source = 0;
  int target = 0;
  int thread = 0;
  std::uint32_t seq = 0;
};
payload_key_t key_of(const epoch_plan_t& plan, const op_plan_t& op);

void fill_payload(void* buffer, std::size_t size, const payload_key_t& key);
// The first wrong byte's offset, or size when all are right.
std::size_t check_payload(const void* buffer, std::size_t size, const payload_key_t& key);

// Byte `offset` of rank `owner`'s get area in this epoch.
void fill_get_area(void* area, std::size_t size, std::uint64_t seed, std::uint32_t epoch,
                   int owner);
std::size_t check_get_area(const void* bytes, std::size_t size, std::uint64_t seed,
                           std::uint32_t epoch, int owner, std::uint64_t offset);

// The canary of rank `owner`'s put area (bytes no put may touch).
void fill_canary(void* area, std::size_t size, std::uint64_t seed, std::uint32_t epoch,
                 int owner);

// A small PRNG (splitmix64): the plan's draws and the runtime's shuffles.
class prng_t {
 public:
  explicit prng_t(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  // Uniform in [0, bound) (bound > 0).
  std::uint64_t below(std::uint64_t bound) { return next() % bound; }
  bool percent(unsigned p) { return below(100) < p; }

 private:
  std::uint64_t state_;
};

std::uint64_t mix64(std::uint64_t value);

}  // namespace lci::soak
