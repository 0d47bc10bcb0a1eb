// lct::fatal: the end of a misuse that LCT's C API cannot return (a full
// bounded queue, an unknown option): one line on stderr naming the call and
// why, then abort(). Never returns.
#pragma once

namespace lct {

[[noreturn]] void fatal(const char* call, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

}  // namespace lct
