// distributed_array: a global array of 64-bit values split into equal
// slices, one per rank, accessed with one-sided put and get.
//
//   bazel run //examples:distributed_array_sim -- [--elements-per-rank K]
//   LCI_SIM_RANKS=6 bazel run //examples:distributed_array_sim
//
// Steps (each checked; any wrong value makes the program return 1):
//   1. every rank registers its slice (register_memory) and sends the
//      slice's remote key (get_rmr: an rmr_t is plain data) to every other
//      rank as an active message;
//   2. element g of the global array is written by rank g mod n: locally
//      when that rank owns it, otherwise with a put that carries a signal
//      (remote_comp): the owner's completion queue hears of each put once
//      its data is in place, so the owner knows when its slice is complete
//      without any further message;
//   3. after a barrier, every rank reads the whole slice of the next rank
//      with one get, and one element of every rank with single gets, into a
//      buffer it registered once (option mr), and checks what it read.
// Local completions of puts and gets are counted by a counter completion
// object: a post that returns posted will signal it once, a post that
// returns done never will.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "examples/example_main.hpp"
#include "lci.hpp"

namespace {

std::uint64_t value_of(std::size_t global_index) {
  return global_index * 0x9E3779B97F4A7C15ull + 17;
}

// Runs `post` until the runtime takes the operation (retry: nothing
// happened, progress and post again); counts it in *pending when the
// completion object will be signalled later.
template <typename post_t>
void post_until_taken(const post_t& post, std::int64_t* pending) {
  for (;;) {
    const lci::status_t status = post();
    if (status.is_posted()) ++*pending;
    if (!status.is_retry()) return;
    lci::progress();
  }
}

void wait_counter(lci::comp_t counter, std::int64_t pending) {
  while (lci::counter_get(counter) < pending) lci::progress();
}

lci::status_t pop_arrival(lci::comp_t queue) {
  lci::status_t status;
  do {
    lci::progress();
    status = lci::cq_pop(queue);
  } while (status.is_retry());
  return status;
}

struct array_t {
  int rank_me = 0;
  int rank_n = 0;
  std::size_t per_rank = 0;
  std::vector<std::uint64_t> slice;  // this rank's elements
  lci::mr_t slice_mr;
  std::vector<lci::rmr_t> rmrs;  // every rank's slice, by rank

  int owner_of(std::size_t g) const { return static_cast<int>(g / per_rank); }
  std::uintptr_t displacement_of(std::size_t g) const {
    return (g % per_rank) * sizeof(std::uint64_t);
  }
  std::size_t first_of(int rank) const { return static_cast<std::size_t>(rank) * per_rank; }
};

// Step 1: returns the number of wrong messages.
int exchange_rmrs(array_t& array, lci::comp_t arrivals, lci::rcomp_t arrivals_rcomp,
                  lci::comp_t local_done) {
  lci::rmr_t mine = lci::get_rmr(array.slice_mr);
  array.rmrs[static_cast<std::size_t>(array.rank_me)] = mine;
  std::int64_t pending = 0;
  for (int rank = 0; rank < array.rank_n; ++rank) {
    if (rank == array.rank_me) continue;
    post_until_taken(
        [&] { return lci::post_am(rank, &mine, sizeof(mine), local_done, arrivals_rcomp); },
        &pending);
  }
  int errors = 0;
  for (int received = 0; received < array.rank_n - 1; ++received) {
    const lci::status_t status = pop_arrival(arrivals);
    lci::rmr_t& slot = array.rmrs[static_cast<std::size_t>(status.rank)];
    if (status.size != sizeof(lci::rmr_t) || !slot.is_empty()) {
      ++errors;
    } else {
      std::memcpy(&slot, status.buffer, sizeof(slot));
    }
    std::free(status.buffer);
  }
  wait_counter(local_done, pending);  // `mine` may be reused from here on
  return errors;
}

// Step 2: returns the number of wrong values or signals.
int write_elements(array_t& array, lci::comp_t arrivals, lci::rcomp_t arrivals_rcomp,
                   lci::comp_t local_done) {
  const std::size_t total = array.per_rank * static_cast<std::size_t>(array.rank_n);
  // Sources of puts stay untouched until their local completion.
  std::vector<std::uint64_t> sources(total);
  std::int64_t pending = 0;
  const std::int64_t done_before = lci::counter_get(local_done);
  for (std::size_t g = static_cast<std::size_t>(array.rank_me); g < total;
       g += static_cast<std::size_t>(array.rank_n)) {
    const int owner = array.owner_of(g);
    sources[g] = value_of(g);
    if (owner == array.rank_me) {
      array.slice[g - array.first_of(owner)] = sources[g];
      continue;
    }
    post_until_taken(
        [&] {
          return lci::post_put_x(owner, &sources[g], sizeof(std::uint64_t), local_done,
                                 array.displacement_of(g),
                                 array.rmrs[static_cast<std::size_t>(owner)])
              .remote_comp(arrivals_rcomp)
              .tag(static_cast<lci::tag_t>(array.rank_me))();  // the writer names itself
        },
        &pending);
  }
  // The puts into this slice: one signal each, once its data is in place.
  int errors = 0;
  std::size_t expected = 0;
  for (std::size_t g = array.first_of(array.rank_me); g < array.first_of(array.rank_me + 1);
       ++g) {
    if (g % static_cast<std::size_t>(array.rank_n) != static_cast<std::size_t>(array.rank_me)) {
      ++expected;
    }
  }
  for (std::size_t received = 0; received < expected; ++received) {
    const lci::status_t status = pop_arrival(arrivals);
    if (status.tag != static_cast<lci::tag_t>(status.rank) ||
        status.size != sizeof(std::uint64_t) || status.buffer != nullptr) {
      ++errors;
    }
  }
  for (std::size_t i = 0; i < array.per_rank; ++i) {
    if (array.slice[i] != value_of(array.first_of(array.rank_me) + i)) ++errors;
  }
  wait_counter(local_done, done_before + pending);
  std::printf("rank %d: slice of %zu elements complete (%zu written by peers' puts)\n",
              array.rank_me, array.per_rank, expected);
  return errors;
}

// Step 3: returns the number of wrong values read.
int read_elements(const array_t& array, lci::comp_t local_done) {
  const int next = (array.rank_me + 1) % array.rank_n;
  // The next rank's slice, then element (rank_me mod per_rank) of every rank.
  const std::size_t reads_count = array.per_rank + static_cast<std::size_t>(array.rank_n);
  std::vector<std::uint64_t> buffer(reads_count, 0);
  lci::mr_t buffer_mr = lci::register_memory(buffer.data(), buffer.size() * sizeof(std::uint64_t));
  std::int64_t pending = 0;
  const std::int64_t done_before = lci::counter_get(local_done);
  post_until_taken(
      [&] {
        return lci::post_get_x(next, buffer.data(), array.per_rank * sizeof(std::uint64_t),
                               local_done, 0, array.rmrs[static_cast<std::size_t>(next)])
            .mr(buffer_mr)();
      },
      &pending);
  const std::size_t column = static_cast<std::size_t>(array.rank_me) % array.per_rank;
  for (int rank = 0; rank < array.rank_n; ++rank) {
    const std::size_t g = array.first_of(rank) + column;
    post_until_taken(
        [&] {
          return lci::post_get_x(rank, &buffer[array.per_rank + static_cast<std::size_t>(rank)],
                                 sizeof(std::uint64_t), local_done, array.displacement_of(g),
                                 array.rmrs[static_cast<std::size_t>(rank)])
              .mr(buffer_mr)();
        },
        &pending);
  }
  wait_counter(local_done, done_before + pending);  // a get completes when its data is here
  lci::deregister_memory(&buffer_mr);
  int errors = 0;
  for (std::size_t i = 0; i < array.per_rank; ++i) {
    if (buffer[i] != value_of(array.first_of(next) + i)) ++errors;
  }
  for (int rank = 0; rank < array.rank_n; ++rank) {
    const std::size_t g = array.first_of(rank) + column;
    if (buffer[array.per_rank + static_cast<std::size_t>(rank)] != value_of(g)) ++errors;
  }
  std::printf("rank %d: read %zu elements of rank %d and %d single elements: %s\n",
              array.rank_me, array.per_rank, next, array.rank_n, errors == 0 ? "ok" : "WRONG");
  return errors;
}

bool parse_options(int argc, char** argv, std::size_t* per_rank) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--elements-per-rank" && i + 1 < argc) {
      *per_rank = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: %s [--elements-per-rank K]\n", argv[0]);
      return false;
    }
  }
  if (*per_rank < 1) {
    std::fprintf(stderr, "--elements-per-rank must be at least 1\n");
    return false;
  }
  return true;
}

}  // namespace

int example::rank_main(int argc, char** argv) {
  array_t array;
  array.per_rank = 64;
  if (!parse_options(argc, argv, &array.per_rank)) return 2;
  lci::g_runtime_init();
  array.rank_me = lci::get_rank_me();
  array.rank_n = lci::get_rank_n();
  array.slice.assign(array.per_rank, 0);
  array.rmrs.assign(static_cast<std::size_t>(array.rank_n), lci::rmr_t{});
  array.slice_mr =
      lci::register_memory(array.slice.data(), array.slice.size() * sizeof(std::uint64_t));
  // Remote keys (step 1) and put signals (step 2) arrive in one queue; the
  // barrier between the steps keeps them apart.
  lci::comp_t arrivals = lci::alloc_cq();
  const lci::rcomp_t arrivals_rcomp = lci::register_rcomp(arrivals);
  lci::comp_t local_done = lci::alloc_counter();
  lci::barrier();  // every rank registered its queue

  int errors = exchange_rmrs(array, arrivals, arrivals_rcomp, local_done);
  lci::barrier();
  errors += write_elements(array, arrivals, arrivals_rcomp, local_done);
  lci::barrier();  // every slice is complete
  errors += read_elements(array, local_done);
  lci::barrier();  // nobody reads this slice any more

  lci::deregister_memory(&array.slice_mr);
  lci::deregister_rcomp(arrivals_rcomp);
  lci::free_comp(&local_done);
  lci::free_comp(&arrivals);
  lci::g_runtime_fina();
  if (errors != 0) std::fprintf(stderr, "rank %d: %d wrong values\n", array.rank_me, errors);
  return errors == 0 ? 0 : 1;
}
