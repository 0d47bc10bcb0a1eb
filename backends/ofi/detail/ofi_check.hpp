// Helpers that turn libfabric return codes into the backend's errors. Setup
// calls (fabric, domain, endpoint, address vector) throw on any failure; the
// data path keeps -FI_EAGAIN as a retry and names everything else; teardown
// reports and goes on.
//
// Thread safety: stateless; safe from any thread.
// Blocking:      never.
// Ownership:     returns owned std::string values.
// Allocation:    only the returned strings and thrown exceptions.
#pragma once

#include <string>

struct fid;

namespace lci::backend::ofi::detail {

// "<call>: <fi_strerror text> (error <code>)"; `rc` is a libfabric return
// code, negative or positive (providers report completion errors with
// either sign).
std::string describe_fi_error(const char* call, long rc);

// Throws std::runtime_error(describe_fi_error(call, rc)) unless rc == 0.
void check_fi(const char* call, long rc);

// Whether error `code` (positive) means the peer's process or the
// connection to it is gone.
bool is_connection_error(int code);

// fi_close for teardown: reports a failure on stderr naming `what`, never
// throws; a null `object` is nothing to close.
void close_quietly(fid* object, const char* what);

}  // namespace lci::backend::ofi::detail
