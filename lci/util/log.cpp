// The runtime's log context (log.hpp), made once at load.
#include "lci/util/log.hpp"

#include <cstdarg>
#include <cstdlib>

#include "lct/lct.h"

namespace lci::util::log {

namespace {

static_assert(static_cast<int>(level_t::error) == LCT_LOG_ERROR &&
                  static_cast<int>(level_t::warn) == LCT_LOG_WARN &&
                  static_cast<int>(level_t::info) == LCT_LOG_INFO &&
                  static_cast<int>(level_t::debug) == LCT_LOG_DEBUG &&
                  static_cast<int>(level_t::trace) == LCT_LOG_TRACE,
              "level_t follows LCT's default levels");

LCT_log_ctx_t make_context() {
  static const char* const level_names[] = {"error", "warn", "diag", "info", "debug", "trace"};
  return LCT_log_ctx_alloc(level_names, sizeof(level_names) / sizeof(level_names[0]),
                           LCT_LOG_WARN, "lci", std::getenv("LCI_LOG_OUTFILE"),
                           std::getenv("LCI_LOG_LEVEL"), std::getenv("LCI_LOG_WHITELIST"),
                           std::getenv("LCI_LOG_BLACKLIST"));
}

// Never freed: a runtime may log until the process exits (an exit flushes
// the stream).
const LCT_log_ctx_t context = make_context();

}  // namespace

int detail::level_max = LCT_log_get_level(context);

void set_process_rank(int rank) { LCT_set_rank(rank); }

void write(level_t level, const char* tag, const char* file, const char* func, int line,
           const char* format, ...) {
  va_list args;
  va_start(args, format);
  LCT_Logv_(context, static_cast<int>(level), tag, file, func, line, format, args);
  va_end(args);
}

}  // namespace lci::util::log
