#include "bench/bootstrap_allgather.hpp"

#include <cstddef>
#include <cstring>

#include "bench/ofi_bench.hpp"

namespace lci::bench {

std::vector<double> allgather_by_bootstrap(bootstrap::bootstrap_t& bootstrap,
                                           const std::string& key, double value) {
  bootstrap.put(key, &value, sizeof(value));
  bootstrap.fence();
  std::vector<double> values(static_cast<std::size_t>(bootstrap.rank_n()));
  for (int rank = 0; rank < bootstrap.rank_n(); ++rank) {
    const std::vector<std::byte> bytes = bootstrap.get(rank, key);
    if (bytes.size() != sizeof(double)) fail("allgather", "a value of the wrong size");
    std::memcpy(&values[rank], bytes.data(), sizeof(double));
  }
  return values;
}

}  // namespace lci::bench
