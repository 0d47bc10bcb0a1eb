// The middle rung of the libfabric benchmarks: a transport_t (ofi_bench.hpp)
// over LCI's own ofi backend (backends/ofi: ofi_context_t and its
// net_device_t, the contract of backends/backend.hpp) with no runtime above
// it. Comparing it with the raw baseline (ofi_raw_transport.hpp) measures
// what the backend costs; comparing LCI (ofi_lci_transport.hpp) with it
// measures what the runtime costs (docs/bench_ofi.md, "Layers").
//
// It does what LCI's runtime does at the backend, and nothing above it:
//   - one net_device_t per LCI device: --devices dedicated, one per thread;
//     shared, one for all threads (the backend's own try-locks serialise);
//   - a message goes out with post_sends (inject, no completion) up to the
//     device's inject_size_max, else post_send with one completion; its
//     immediate data is the sending thread's index, which says which
//     channel of the receiving device it is for (LCI's immediate data
//     names the rcomp or the tag the same way);
//   - receives are pre-posted on the device's shared receive queue, one
//     buffer of the largest message per message of a window per thread
//     (all threads' messages land in any of them), each posted again as
//     soon as the poll that reads its completion has counted it;
//   - arrivals are read with poll_comp, 16 per poll (as LCI's progress).
// --op is accepted and ignored: the exchange is the same for both.
// The provider: LCI_ATTR_OFI_PROVIDER_NAME, else the backend's default.
//
// Thread safety, blocking, ownership: as transport_t.
#pragma once

#include <memory>

#include "bench/ofi_bench.hpp"

namespace lci::bench {

std::unique_ptr<transport_t> make_backend_transport(const options_t& options);

}  // namespace lci::bench
