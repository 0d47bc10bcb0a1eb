// The runtime's log (docs/lct.md, "LCI's own log"): LCI_LOG(level, tag,
// format, ...) prints through LCT's logging, into one context made at load
// from LCI_LOG_LEVEL (default warn), LCI_LOG_OUTFILE (default stderr),
// LCI_LOG_WHITELIST and LCI_LOG_BLACKLIST (comma-separated tags).
//
// Levels, and what the runtime logs at each:
//   error, warn  faults the runtime reports anyway (a crashed peer)
//   diag         (unused by the runtime; LCT's level kept for its numbering)
//   info         lifecycle: runtimes and devices made and freed; a peer gone
//                while this rank leaves
//   debug        the data path: posts, and completions progress dispatches
//   trace        (unused)
// Tags name the subsystem: "runtime", "device", "peer", "post", "progress".
//
// Cost: a disabled message is one load of a plain int and one compare, a
// branch marked unlikely; nothing else is evaluated (the arguments neither).
// Thread safety: LCI_LOG may run from any thread at any time after static
//                initialization; lines never interleave.
// Blocking:      an enabled message takes the output stream's lock.
// Allocation:    the context, once, at load; an enabled message may.
#pragma once

namespace lci::util::log {

// LCT's default levels (lct.h), in their order.
enum class level_t : int { error, warn, diag, info, debug, trace };

namespace detail {
// The most verbose level printed. Written once, by the static initializer
// of log.cpp, before main; read-only afterwards.
extern int level_max;
}  // namespace detail

inline bool enabled(level_t level) { return static_cast<int>(level) <= detail::level_max; }

// The rank log lines carry in their prefix: a process's one rank on a real
// network (the simulator's ranks share a process and name themselves in
// their messages). Call before other threads log.
void set_process_rank(int rank);

// Prints one message (callers go through LCI_LOG, which checks enabled()).
[[gnu::cold]] void write(level_t level, const char* tag, const char* file, const char* func,
                         int line, const char* format, ...)
    __attribute__((format(printf, 6, 7)));

}  // namespace lci::util::log

#define LCI_LOG(level, tag, ...)                                                              \
  do {                                                                                        \
    if (__builtin_expect(::lci::util::log::enabled(::lci::util::log::level_t::level), 0))    \
      ::lci::util::log::write(::lci::util::log::level_t::level, tag, __FILE__, __func__,     \
                              __LINE__, __VA_ARGS__);                                         \
  } while (0)
