// The raw-libfabric baseline of the libfabric benchmarks: a transport_t
// (ofi_bench.hpp) that does the benchmarks' exchange straight on the
// provider, as the ceiling LCI is compared against. It does what a careful
// hand-written program would, and nothing LCI must do for generality:
//   - fi_getinfo for FI_EP_RDM with FI_MSG | FI_TAGGED, manual progress,
//     FI_THREAD_DOMAIN (the program serialises each endpoint itself), no
//     FI_SOURCE (every endpoint talks to one peer endpoint only), no
//     FI_CONTEXT mode (an op context names only its channel and buffer);
//   - messages up to the provider's inject size go out with fi_inject (no
//     completion at all), larger ones with fi_send and one completion each;
//   - receives are pre-posted: one per message of a window (fi_recv, each
//     into its own buffer of the largest message), each posted again as
//     soon as a poll reads its completion, so posting receives is never on
//     the exchange's path (as LCI's own packet receives are not);
//     arrivals are counted from fi_cq_read, which is the only progress (16
//     entries per poll, as LCI polls);
//   - --devices dedicated: one domain, endpoint, CQ and AV per thread;
//     shared: one of each for all threads, under a spinlock, with the
//     thread's index as the tag (fi_tinject/fi_tsend/fi_trecv) so that
//     each thread receives its partner thread's messages.
// The provider: LCI_ATTR_OFI_PROVIDER_NAME (as LCI reads it), else shm.
// Endpoint names and the collectives go through lci/bootstrap (works
// under tools/lcirun). --op is accepted and ignored: the raw exchange is
// the same for both.
//
// Thread safety, blocking, ownership: as transport_t.
#pragma once

#include <memory>

#include "bench/ofi_bench.hpp"

namespace lci::bench {

std::unique_ptr<transport_t> make_raw_transport(const options_t& options);

}  // namespace lci::bench
