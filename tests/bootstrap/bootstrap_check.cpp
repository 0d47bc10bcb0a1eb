// Run by the launcher tests (launch_test.sh) as N processes: opens the
// bootstrap the environment selects, exchanges values through two fences,
// checks every rank's values byte for byte, runs three barriers and prints
// "bootstrap <kind> rank <r> of <n> ok". Any mismatch exits 1 with the
// reason on stderr.
//
// The values cover what the text protocols must get right: binary bytes
// including zeros, a length that differs per rank, the largest value under
// the longest key (several PMI chunks, hashed PMI key names) and an empty
// value.
#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "lci/bootstrap/bootstrap.hpp"

namespace {

namespace bs = lci::bootstrap;

const std::string longest_key(bs::key_length_max, 'k');

std::vector<std::byte> make_value(int rank, int round, std::size_t size) {
  std::vector<std::byte> value(size);
  for (std::size_t i = 0; i < size; ++i) {
    const unsigned pattern = (i % 13 == 0)
                                 ? 0u  // zero bytes must survive the wire
                                 : (rank * 131u + i * 7u + round * 17u) % 256u;
    value[i] = static_cast<std::byte>(pattern);
  }
  return value;
}

struct entry_t {
  std::string key;
  std::size_t size;
};

// The values every rank puts in one round.
std::vector<entry_t> round_entries(int rank, int round) {
  const std::string suffix = "_" + std::to_string(round);
  return {{"address" + suffix, 200 + static_cast<std::size_t>(rank)},
          {longest_key.substr(0, bs::key_length_max - suffix.size()) + suffix,
           bs::value_size_bytes_max},
          {"empty" + suffix, 0}};
}

void expect(bool condition, const std::string& what) {
  if (!condition) throw std::runtime_error(what);
}

void exchange(bs::bootstrap_t& bootstrap, int round) {
  const int me = bootstrap.rank_me();
  for (const entry_t& entry : round_entries(me, round)) {
    const std::vector<std::byte> value = make_value(me, round, entry.size);
    bootstrap.put(entry.key, value.data(), value.size());
  }
  bootstrap.fence();
  for (int rank = 0; rank < bootstrap.rank_n(); ++rank) {
    for (const entry_t& entry : round_entries(rank, round)) {
      const std::vector<std::byte> got = bootstrap.get(rank, entry.key);
      expect(got == make_value(rank, round, entry.size),
             "round " + std::to_string(round) + ": value of rank " +
                 std::to_string(rank) + " under '" + entry.key + "' differs (" +
                 std::to_string(got.size()) + " bytes, " +
                 std::to_string(entry.size) + " expected)");
    }
  }
}

void expect_absent_key_error(bs::bootstrap_t& bootstrap) {
  const int rank = bootstrap.rank_n() - 1;
  try {
    bootstrap.get(rank, "never_put");
  } catch (const std::runtime_error& error) {
    const std::string text = error.what();
    expect(text.find("never_put") != std::string::npos &&
               text.find("rank " + std::to_string(rank)) != std::string::npos,
           "absent-key error names neither key nor rank: " + text);
    return;
  }
  throw std::runtime_error("get of a key never put did not throw");
}

}  // namespace

int main() {
  try {
    const auto bootstrap = bs::open_bootstrap();
    const int me = bootstrap->rank_me();
    const int n = bootstrap->rank_n();
    expect(n >= 1 && me >= 0 && me < n, "rank outside the job");
    exchange(*bootstrap, 0);
    exchange(*bootstrap, 1);
    expect_absent_key_error(*bootstrap);
    for (int i = 0; i < 3; ++i) bootstrap->barrier();
    std::printf("bootstrap %s rank %d of %d ok\n",
                bs::get_bootstrap_kind_str(bootstrap->kind()), me, n);
    std::fflush(stdout);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bootstrap_check: %s\n", error.what());
    return 1;
  }
  return 0;
}
