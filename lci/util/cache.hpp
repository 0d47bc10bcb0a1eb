// Cache-line geometry. Atomics written by different threads are placed on
// separate lines of this size so that they do not false-share.
#pragma once

#include <cstddef>

namespace lci::util {

// x86-64 and most aarch64 server parts use 64-byte lines. A fixed constant
// (rather than std::hardware_destructive_interference_size) keeps the layout,
// and the static_asserts that check it, identical across gcc and clang.
inline constexpr std::size_t cache_line_bytes = 64;

}  // namespace lci::util
