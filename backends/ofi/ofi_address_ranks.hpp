// address_ranks_t: the rank of each address in a device's address vector,
// built from the address of each rank that insert_peers() got. FI_AV_TABLE
// should number the ranks' addresses 0, 1, ..., but shm (libfabric 1.17)
// continues from where an earlier device's AV in this process stopped, so
// the map is kept both ways (the device holds the other way).
//
// Thread safety: const methods from any thread after construction.
// Blocking:      never.
// Allocation:    at construction only: one int per address up to the
//                largest.
// Limits:        addresses are AV table indices (is_av_table_index); an
//                address no rank has maps to -1. Ranks that share an
//                address (one endpoint's name published for several ranks)
//                map it to the highest of them.
#pragma once

#include <rdma/fabric.h>

#include <vector>

namespace lci::backend::ofi {

// The largest AV table index a device accepts (a sanity bound: indices are
// small integers, never pointers, with FI_AV_TABLE).
inline constexpr fi_addr_t av_address_max = fi_addr_t{1} << 24;

// Whether `address`, from fi_av_insert, is an AV table index a device
// accepts: not FI_ADDR_NOTAVAIL, and below av_address_max.
inline bool is_av_table_index(fi_addr_t address) {
  return address != FI_ADDR_NOTAVAIL && address < av_address_max;
}

class address_ranks_t {
 public:
  address_ranks_t() = default;  // no ranks: every address maps to -1
  // address_of_rank[rank]: that rank's address; each an AV table index.
  explicit address_ranks_t(const std::vector<fi_addr_t>& address_of_rank);

  // The rank whose address is `address`; -1 when none has it.
  int rank_of(fi_addr_t address) const {
    return address < rank_of_address_.size() ? rank_of_address_[address] : -1;
  }

 private:
  std::vector<int> rank_of_address_;  // one past the largest address long
};

}  // namespace lci::backend::ofi
