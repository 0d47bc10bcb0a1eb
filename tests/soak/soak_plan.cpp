#include "tests/soak/soak_plan.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace lci::soak {

std::uint64_t mix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::uint64_t prng_t::next() {
  state_ += 0x9E3779B97F4A7C15ull;
  return mix64(state_);
}

namespace {

// Streams of the plan's draws, one per purpose.
enum class stream_t : std::uint64_t { ops = 1, pairs, recvs, payload, get_area, canary };

std::uint64_t stream_seed(std::uint64_t seed, std::uint32_t epoch, stream_t stream,
                          std::uint64_t a, std::uint64_t b) {
  std::uint64_t z = mix64(seed);
  z = mix64(z ^ epoch);
  z = mix64(z ^ static_cast<std::uint64_t>(stream));
  z = mix64(z ^ a);
  return mix64(z ^ (b << 1));
}

template <typename T>
void shuffle(std::vector<T>& items, prng_t& prng) {
  for (std::size_t i = items.size(); i > 1; --i) {
    std::swap(items[i - 1], items[prng.below(i)]);
  }
}

// Picks an index by weight among those `allowed`; -1 when none is.
int pick_weighted(prng_t& prng, const unsigned* weights, int count, unsigned allowed_mask) {
  unsigned total = 0;
  for (int i = 0; i < count; ++i) {
    if ((allowed_mask >> static_cast<unsigned>(i)) & 1u) total += weights[i];
  }
  if (total == 0) return -1;
  unsigned draw = static_cast<unsigned>(prng.below(total));
  for (int i = 0; i < count; ++i) {
    if (((allowed_mask >> static_cast<unsigned>(i)) & 1u) == 0) continue;
    if (draw < weights[i]) return i;
    draw -= weights[i];
  }
  return -1;
}

// Sizes around every protocol threshold; a draw over size_max is redrawn
// uniformly below it.
std::size_t draw_size(prng_t& prng, std::size_t size_max, std::size_t bcopy_size_max) {
  static const unsigned weights[] = {5, 10, 10, 20, 10, 15, 5, 2};
  std::size_t size = 0;
  switch (pick_weighted(prng, weights, 8, 0xFF)) {
    case 0: size = 0; break;
    case 1: size = 1 + prng.below(8); break;
    case 2: size = inject_size_guess - 1 + prng.below(3); break;
    case 3: size = 9 + prng.below(1024 - 9 + 1); break;
    case 4: size = bcopy_size_max - 1 + prng.below(3); break;
    case 5: {
      const std::size_t first = bcopy_size_max + 2;
      const std::size_t last = std::max(first, std::size_t{64} << 10);
      size = first + prng.below(last - first + 1);
      break;
    }
    case 6: size = (std::size_t{64} << 10) + prng.below(size_max_max - (std::size_t{64} << 10)); break;
    default: size = size_max; break;
  }
  if (size > size_max) size = prng.below(size_max + 1);
  return size;
}

op_kind_t draw_kind(prng_t& prng, const soak_options_t& options) {
  static const unsigned weights[op_kinds_count] = {25, 25, 12, 13, 12, 13};
  return static_cast<op_kind_t>(pick_weighted(prng, weights, op_kinds_count,
                                              options.op_kinds_mask));
}

// A local completion kind for `op` (graph handled by the caller).
comp_kind_t draw_comp(prng_t& prng, const soak_options_t& options, const op_plan_t& op,
                      std::size_t bcopy_size_max, bool graph_allowed) {
  static const unsigned weights[comp_kinds_count] = {15, 20, 10, 20, 10, 15, 10};
  unsigned mask = options.comp_kinds_mask;
  if (!graph_allowed) mask &= ~(1u << static_cast<unsigned>(comp_kind_t::graph));
  const bool none_fits = (op.kind == op_kind_t::am || op.kind == op_kind_t::send) &&
                         op.size <= bcopy_size_max;
  if (!none_fits) mask &= ~(1u << static_cast<unsigned>(comp_kind_t::none));
  const int picked = pick_weighted(prng, weights, comp_kinds_count, mask);
  return picked < 0 ? comp_kind_t::cq : static_cast<comp_kind_t>(picked);
}

comp_kind_t draw_recv_comp(prng_t& prng, const soak_options_t& options) {
  static const unsigned weights[comp_kinds_count] = {15, 20, 10, 20, 10, 0, 0};
  const int picked = pick_weighted(prng, weights, comp_kinds_count, options.comp_kinds_mask);
  return picked < 0 ? comp_kind_t::cq : static_cast<comp_kind_t>(picked);
}

remote_kind_t draw_remote(prng_t& prng, op_kind_t kind) {
  if (kind == op_kind_t::am) return static_cast<remote_kind_t>(1 + prng.below(3));
  if (kind == op_kind_t::put_signal || kind == op_kind_t::get_signal) {
    return static_cast<remote_kind_t>(1 + prng.below(4));
  }
  return remote_kind_t::none;
}

// First pass: thread (rank, thread)'s ops, without the cross-rank numbering.
std::vector<op_plan_t> draw_thread_ops(const soak_options_t& options, const epoch_plan_t& plan,
                                       int rank, int thread, std::size_t bcopy_size_max) {
  prng_t prng(stream_seed(plan.seed, plan.epoch, stream_t::ops,
                          static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(thread)));
  std::vector<op_plan_t> ops(static_cast<std::size_t>(options.ops_per_thread));
  int graph_left = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    op_plan_t& op = ops[i];
    op.source = rank;
    op.thread = thread;
    op.seq = static_cast<std::uint32_t>(i);
    op.kind = draw_kind(prng, options);
    op.target = static_cast<int>(prng.below(static_cast<std::uint64_t>(plan.ranks_count)));
    if (!options.self && plan.ranks_count > 1 && op.target == rank) {
      op.target = (op.target + 1 + static_cast<int>(prng.below(
                                       static_cast<std::uint64_t>(plan.ranks_count - 1)))) %
                  plan.ranks_count;
    }
    op.size = draw_size(prng, options.size_max, bcopy_size_max);
    op.remote = draw_remote(prng, op.kind);
    if (graph_left > 0) {
      op.comp = comp_kind_t::graph;
      op.graph_chain = prng.percent(40);
      --graph_left;
    } else {
      op.comp = draw_comp(prng, options, op, bcopy_size_max, true);
      if (op.comp == comp_kind_t::graph) {
        const std::size_t length =
            std::min<std::size_t>(1 + prng.below(6), ops.size() - i);
        op.graph_group_size = static_cast<std::uint16_t>(length);
        graph_left = static_cast<int>(length) - 1;
      }
    }
    // (COMP_NULL_RETRY asks for completion inside the post: memory only.)
    op.network_semantic = op.kind == op_kind_t::put ||
                          (op.kind != op_kind_t::get && op.kind != op_kind_t::get_signal &&
                           op.comp != comp_kind_t::none && prng.percent(20));
    if (op.comp != comp_kind_t::none) {
      op.force_posted = prng.percent(10);
      op.backlog = prng.percent(10);
    }
    op.use_mr = op.size > 0 && prng.percent(30);
    if (op.kind == op_kind_t::get || op.kind == op_kind_t::get_signal) {
      op.remote_offset = prng.below(plan.get_area_bytes - op.size + 1);
    }
    if (op.kind == op_kind_t::send) {
      op.recv_comp = draw_recv_comp(prng, options);
      op.recv_early = prng.percent(50);
      op.recv_use_mr = op.size > 0 && prng.percent(30);
    }
    // Sometimes a tag over the immediate's width (bits 24..31 name the
    // thread; an AM's bits from 40 on the epoch: matching keys take 32-bit
    // tags, AM tags are 64 bits). The receiver compares the whole tag.
    if ((op.kind == op_kind_t::am || op.kind == op_kind_t::send) && prng.percent(30)) {
      op.tag = static_cast<tag_t>(thread + 1) << pair_index_bits;
      if (op.kind == op_kind_t::am) op.tag |= static_cast<tag_t>(plan.epoch + 1) << 40;
    }
  }
  return ops;
}

// Second pass: pair and signal indices (a shuffled numbering per (source,
// target)), tags, put regions; and `me`'s inbound tables.
void number_ops(epoch_plan_t& plan) {
  const std::size_t ranks = static_cast<std::size_t>(plan.ranks_count);
  plan.put_area_bytes.assign(ranks, put_guard_bytes);
  plan.inbound_by_pair.assign(ranks, {});
  plan.inbound_by_signal.assign(ranks, {});
  for (int source = 0; source < plan.ranks_count; ++source) {
    std::vector<std::vector<op_plan_t*>> to(ranks);
    for (int thread = 0; thread < plan.threads_count; ++thread) {
      for (op_plan_t& op :
           plan.by_thread[static_cast<std::size_t>(source * plan.threads_count + thread)]) {
        to[static_cast<std::size_t>(op.target)].push_back(&op);
      }
    }
    for (int target = 0; target < plan.ranks_count; ++target) {
      std::vector<op_plan_t*>& ops = to[static_cast<std::size_t>(target)];
      std::vector<std::uint32_t> numbers(ops.size());
      for (std::size_t i = 0; i < numbers.size(); ++i) numbers[i] = static_cast<std::uint32_t>(i);
      prng_t prng(stream_seed(plan.seed, plan.epoch, stream_t::pairs,
                              static_cast<std::uint64_t>(source),
                              static_cast<std::uint64_t>(target)));
      shuffle(numbers, prng);
      std::uint32_t signals = 0;
      std::uint64_t& cursor = plan.put_area_bytes[static_cast<std::size_t>(target)];
      if (ops.size() > pair_index_mask + 1) {
        throw std::invalid_argument("soak plan: more than 2^24 ops from one rank to another in "
                                    "one epoch: use fewer --ops or more --epochs");
      }
      for (std::size_t i = 0; i < ops.size(); ++i) {
        op_plan_t& op = *ops[i];
        op.pair_index = numbers[i];
        if (op.kind == op_kind_t::put_signal || op.kind == op_kind_t::get_signal) {
          if (signals > signal_index_max) {
            throw std::invalid_argument(
                "soak plan: more than " + std::to_string(signal_index_max + 1) +
                " signalled RMAs from rank " + std::to_string(source) + " to rank " +
                std::to_string(target) + " in one epoch (a signal's tag has 13 bits): use "
                "fewer --ops or more --epochs");
          }
          op.signal_index = signals++;
          op.tag = op.signal_index;
        } else {
          op.tag |= op.pair_index;
        }
        if (op.kind == op_kind_t::put || op.kind == op_kind_t::put_signal) {
          op.remote_offset = (cursor + 63) / 64 * 64;
          cursor = op.remote_offset + op.size + put_guard_bytes;
        }
      }
      if (target != plan.me) continue;
      plan.inbound_by_pair[static_cast<std::size_t>(source)].assign(ops.size(), nullptr);
      plan.inbound_by_signal[static_cast<std::size_t>(source)].assign(signals, nullptr);
      for (op_plan_t* op : ops) {
        plan.inbound_by_pair[static_cast<std::size_t>(source)][op->pair_index] = op;
        if (op->kind == op_kind_t::put_signal || op->kind == op_kind_t::get_signal) {
          plan.inbound_by_signal[static_cast<std::size_t>(source)][op->signal_index] = op;
        }
      }
    }
  }
}

void collect_receiver_side(epoch_plan_t& plan) {
  plan.recvs_by_thread.assign(static_cast<std::size_t>(plan.threads_count), {});
  plan.puts_in.clear();
  for (const auto& ops : plan.by_thread) {
    for (const op_plan_t& op : ops) {
      if (op.target != plan.me) continue;
      if (op.kind == op_kind_t::send) {
        plan.recvs_by_thread[static_cast<std::size_t>(op.thread)].push_back(&op);
      }
      if (op.kind == op_kind_t::put || op.kind == op_kind_t::put_signal) {
        plan.puts_in.push_back(&op);
      }
    }
  }
  for (int thread = 0; thread < plan.threads_count; ++thread) {
    prng_t prng(stream_seed(plan.seed, plan.epoch, stream_t::recvs,
                            static_cast<std::uint64_t>(plan.me),
                            static_cast<std::uint64_t>(thread)));
    shuffle(plan.recvs_by_thread[static_cast<std::size_t>(thread)], prng);
  }
}

std::uint64_t payload_base(const payload_key_t& key) {
  std::uint64_t z = stream_seed(key.seed, key.epoch, stream_t::payload,
                                static_cast<std::uint64_t>(key.source),
                                static_cast<std::uint64_t>(key.target));
  z = mix64(z ^ static_cast<std::uint64_t>(key.thread));
  return mix64(z ^ (static_cast<std::uint64_t>(key.seq) << 8));
}

void fill_words(void* buffer, std::size_t size, std::uint64_t base) {
  auto* bytes = static_cast<std::uint8_t*>(buffer);
  for (std::size_t offset = 0; offset < size; offset += 8) {
    const std::uint64_t word = mix64(base + offset / 8);
    std::memcpy(bytes + offset, &word, std::min<std::size_t>(8, size - offset));
  }
}

// Compares bytes[0..size) with the word stream `base` starting at stream
// byte `offset`.
std::size_t check_words(const void* buffer, std::size_t size, std::uint64_t base,
                        std::uint64_t offset) {
  const auto* bytes = static_cast<const std::uint8_t*>(buffer);
  std::size_t i = 0;
  while (i < size) {
    const std::uint64_t at = offset + i;
    const std::uint64_t word = mix64(base + at / 8);
    std::uint8_t expected[8];
    std::memcpy(expected, &word, 8);
    const std::size_t in_word = static_cast<std::size_t>(at % 8);
    const std::size_t length = std::min<std::size_t>(8 - in_word, size - i);
    if (std::memcmp(bytes + i, expected + in_word, length) != 0) {
      for (std::size_t k = 0; k < length; ++k) {
        if (bytes[i + k] != expected[in_word + k]) return i + k;
      }
    }
    i += length;
  }
  return size;
}

}  // namespace

const char* get_remote_kind_str(remote_kind_t kind) {
  switch (kind) {
    case remote_kind_t::none: return "none";
    case remote_kind_t::cq: return "cq";
    case remote_kind_t::cq_array: return "cq_array";
    case remote_kind_t::handler: return "handler";
    case remote_kind_t::counter: return "counter";
  }
  return "?";
}

std::string op_plan_t::describe() const {
  std::string text = std::string(get_op_kind_str(kind)) + " #" + std::to_string(seq) +
                     " of rank " + std::to_string(source) + " thread " + std::to_string(thread) +
                     " to rank " + std::to_string(target) + " (" + std::to_string(size) +
                     " bytes, tag " + std::to_string(tag) + ", comp " +
                     get_comp_kind_str(comp);
  if (remote != remote_kind_t::none) text += std::string(", remote ") + get_remote_kind_str(remote);
  if (kind == op_kind_t::send) text += std::string(", recv comp ") + get_comp_kind_str(recv_comp);
  return text + ")";
}

epoch_plan_t make_epoch_plan(const soak_options_t& options, int ranks_count, int me,
                             std::uint32_t epoch, std::size_t bcopy_size_max) {
  epoch_plan_t plan;
  plan.ranks_count = ranks_count;
  plan.threads_count = options.threads;
  plan.me = me;
  plan.epoch = epoch;
  plan.seed = options.seed;
  plan.get_area_bytes = std::max<std::size_t>(options.size_max, 64) + 4096;
  plan.by_thread.resize(static_cast<std::size_t>(ranks_count * options.threads));
  for (int rank = 0; rank < ranks_count; ++rank) {
    for (int thread = 0; thread < options.threads; ++thread) {
      plan.by_thread[static_cast<std::size_t>(rank * options.threads + thread)] =
          draw_thread_ops(options, plan, rank, thread, bcopy_size_max);
    }
  }
  number_ops(plan);
  collect_receiver_side(plan);
  return plan;
}

payload_key_t key_of(const epoch_plan_t& plan, const op_plan_t& op) {
  payload_key_t key;
  key.seed = plan.seed;
  key.epoch = plan.epoch;
  key.source = op.source;
  key.target = op.target;
  key.thread = op.thread;
  key.seq = op.seq;
  return key;
}

void fill_payload(void* buffer, std::size_t size, const payload_key_t& key) {
  fill_words(buffer, size, payload_base(key));
}

std::size_t check_payload(const void* buffer, std::size_t size, const payload_key_t& key) {
  return check_words(buffer, size, payload_base(key), 0);
}

void fill_get_area(void* area, std::size_t size, std::uint64_t seed, std::uint32_t epoch,
                   int owner) {
  fill_words(area, size,
             stream_seed(seed, epoch, stream_t::get_area, static_cast<std::uint64_t>(owner), 0));
}

std::size_t check_get_area(const void* bytes, std::size_t size, std::uint64_t seed,
                           std::uint32_t epoch, int owner, std::uint64_t offset) {
  return check_words(bytes, size,
                     stream_seed(seed, epoch, stream_t::get_area,
                                 static_cast<std::uint64_t>(owner), 0),
                     offset);
}

void fill_canary(void* area, std::size_t size, std::uint64_t seed, std::uint32_t epoch,
                 int owner) {
  fill_words(area, size,
             stream_seed(seed, epoch, stream_t::canary, static_cast<std::uint64_t>(owner), 0));
}

}  // namespace lci::soak
