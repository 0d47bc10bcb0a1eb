// errorcode_t / error_t: the result of every call that may not finish at once.
//
// Three families, as in the paper: done (finished, nothing more will happen),
// posted (accepted; a completion object is signalled later) and retry
// (nothing happened; the caller still owns everything it passed and may call
// again). Fatal errors are thrown as exceptions, and returned only where an
// interface says so (a COMP_NULL operation's own failure, a network that will
// never register a region: backends/backend.hpp).
//
// The enumerators and their order follow the public API; is_done(),
// is_posted() and is_retry() test the range between a family's boundary
// markers (<family>_min, <family>_max), which nothing returns.
#pragma once

#include <cstdint>

namespace lci {

enum class errorcode_t : std::uint8_t {
  done_min,        // boundary marker (upstream's): no call returns it
  done,
  done_backlog,    // done, after waiting in the backlog queue
  done_max,        // boundary marker
  posted_min,      // boundary marker
  posted,
  posted_backlog,  // posted into the backlog queue; completes later
  posted_max,      // boundary marker
  retry_min,       // boundary marker
  retry,
  retry_init,      // a resource is still being set up
  retry_lock,      // a try-lock found the resource busy
  retry_nopacket,  // the packet pool is empty (a steal failed too)
  retry_nomem,     // a bounded queue/table/network queue is full
  retry_backlog,   // earlier requests wait in the backlog queue
  retry_max,       // boundary marker
  fatal,           // see above
};

const char* get_errorcode_str(errorcode_t code);

struct error_t {
  errorcode_t errorcode = errorcode_t::retry;

  error_t() = default;
  constexpr error_t(errorcode_t code) : errorcode(code) {}  // NOLINT: implicit by design

  bool is_done() const {
    return errorcode > errorcode_t::done_min && errorcode < errorcode_t::done_max;
  }
  bool is_posted() const {
    return errorcode > errorcode_t::posted_min && errorcode < errorcode_t::posted_max;
  }
  bool is_retry() const {
    return errorcode > errorcode_t::retry_min && errorcode < errorcode_t::retry_max;
  }
  const char* get_str() const { return get_errorcode_str(errorcode); }
  void reset_retry() { errorcode = errorcode_t::retry; }  // upstream's name
  bool operator==(const error_t& other) const {
    return errorcode == other.errorcode;
  }
  bool operator!=(const error_t& other) const { return !(*this == other); }
};

}  // namespace lci
