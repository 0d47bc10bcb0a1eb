// The LCI side of the libfabric benchmarks: a transport_t (ofi_bench.hpp)
// whose messages go through the LCI runtime (lci.hpp) on the process host,
// i.e. over libfabric when built with --config=ofi and started by
// tools/lcirun. The provider is LCI's choice (LCI_ATTR_OFI_PROVIDER_NAME).
//
//   --op am        post_am of the message into the partner thread's
//                  completion queue (an rcomp); arrivals are cq_pop'ed and
//                  their runtime-allocated buffers freed.
//   --op sendrecv  post_send with the thread's index as the tag, matched by
//                  post_recv posted in expect(); receive completions go to
//                  a completion queue, send completions to a counter.
//   --devices dedicated: one device (alloc_device) per thread, each thread
//                  progressing its own; shared: all threads use the default
//                  device.
// Every arrival's size and source are checked.
//
// Thread safety, blocking, ownership: as transport_t. The runtime is
// initialised by make_lci_transport() and finalised when the transport is
// destroyed (on the main thread, after the bench threads ended).
#pragma once

#include <memory>

#include "bench/ofi_bench.hpp"

namespace lci::bench {

std::unique_ptr<transport_t> make_lci_transport(const options_t& options);

}  // namespace lci::bench
