// run_threads: body(0 .. threads_count-1) on std::threads, joined, with the
// first exception rethrown: how a real process runs a rank's threads (the
// process host's programs, the harness in process mode, the backends'
// real-process conformance suites).
//
// Thread safety: from any thread; body runs on threads_count threads at once.
// Blocking:      returns when every thread has returned.
// Errors:        after the join, rethrows the exception of the lowest thread
//                index that threw; the others are dropped.
// Limits:        threads_count >= 1 (asserted).
#pragma once

#include <functional>

namespace lci::util {

void run_threads(int threads_count, const std::function<void(int)>& body);

}  // namespace lci::util
