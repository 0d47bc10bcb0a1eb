// Includes the Relacy Race Detector for LCI_MODEL_CHECK builds, then removes
// the keyword-level macros it defines (new, delete, malloc, free, assert and
// the std memory_order_* names): they would rewrite `= delete` and ordinary
// code in every header that follows. Allocation is still tracked, because
// Relacy also replaces the global operator new/delete, which is what reports
// leaks and use-after-free in model-checked structures.
#pragma once

#if !defined(LCI_MODEL_CHECK)
#error "lci/util/detail/relacy.hpp is only for LCI_MODEL_CHECK builds"
#endif

#include <relacy/relacy.hpp>

#undef new
#undef delete
#undef malloc
#undef calloc
#undef realloc
#undef free
#undef assert
#undef memory_order_relaxed
#undef memory_order_consume
#undef memory_order_acquire
#undef memory_order_release
#undef memory_order_acq_rel
#undef memory_order_seq_cst
