// LCT's internal functions, shared by its source files.
#pragma once

namespace lct {

// The end of a misuse that LCT's C API cannot return (a full bounded queue,
// an unknown option): one line on stderr naming the call and why, then
// abort(). Never returns.
[[noreturn]] void fatal(const char* call, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

// Sets LCT_hostname on the first call (LCT_init, or the first log context
// made without it); thread-safe. Log lines read it without a lock: it is
// set before any context that prints it exists.
void set_hostname_once();

}  // namespace lct
