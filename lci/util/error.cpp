#include "lci/util/error.hpp"

namespace lci {

const char* get_errorcode_str(errorcode_t code) {
  switch (code) {
    case errorcode_t::done: return "done";
    case errorcode_t::done_backlog: return "done_backlog";
    case errorcode_t::posted: return "posted";
    case errorcode_t::posted_backlog: return "posted_backlog";
    case errorcode_t::retry: return "retry";
    case errorcode_t::retry_init: return "retry_init";
    case errorcode_t::retry_lock: return "retry_lock";
    case errorcode_t::retry_nopacket: return "retry_nopacket";
    case errorcode_t::retry_nomem: return "retry_nomem";
    case errorcode_t::retry_backlog: return "retry_backlog";
    case errorcode_t::fatal: return "fatal";
    case errorcode_t::done_min: return "done_min";
    case errorcode_t::done_max: return "done_max";
    case errorcode_t::posted_min: return "posted_min";
    case errorcode_t::posted_max: return "posted_max";
    case errorcode_t::retry_min: return "retry_min";
    case errorcode_t::retry_max: return "retry_max";
  }
  return "unknown";
}

}  // namespace lci
