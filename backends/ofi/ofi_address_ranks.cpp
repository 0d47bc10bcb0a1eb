#include "backends/ofi/ofi_address_ranks.hpp"

#include <algorithm>

#include "lci/util/assert.hpp"

namespace lci::backend::ofi {

address_ranks_t::address_ranks_t(const std::vector<fi_addr_t>& address_of_rank) {
  fi_addr_t address_last = 0;
  for (const fi_addr_t address : address_of_rank) {
    LCI_ASSERT(is_av_table_index(address), "a rank's address is not an AV table index");
    address_last = std::max(address_last, address);
  }
  // Sized once, exactly: one past the largest address.
  rank_of_address_.assign(address_last + 1, -1);
  int rank = 0;
  for (const fi_addr_t address : address_of_rank) rank_of_address_[address] = rank++;
}

}  // namespace lci::backend::ofi
