/* lct.h: LCT, the LCI companion tools library (liblct, CMake LCI::LCT).
 *
 * A C API, usable from C and C++, of the small tools communication runtimes
 * built on LCI use around it: logging, lock-free queues, time, an argument
 * parser, thread barriers, performance counters and string tables. The
 * declarations follow upstream LCI 2.x's lct.h, so that a runtime written
 * for it compiles and links unchanged; docs/lct.md describes each function
 * and the environment variables, and lists what is not provided.
 *
 * Lifetime: LCT_init() before anything that logs through
 * LCT_log_ctx_default, LCT_fina() after; both may be called several times
 * (a runtime and the program above it each may): the last LCT_fina() frees
 * the default log context. The other objects (log contexts, queues,
 * parsers, barriers, counter contexts) are independent of LCT_init and
 * owned by their caller from *_alloc to *_free.
 *
 * Errors: a misuse that the C API cannot return (a full bounded queue, an
 * unknown command-line option, an out-of-range counter handle) is fatal: a
 * message on stderr naming the call, then abort(). */
#ifndef LCI_LCT_H
#define LCI_LCT_H

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LCT_API __attribute__((visibility("default")))

#define LCT_likely(x) __builtin_expect(!!(x), 1)
#define LCT_unlikely(x) __builtin_expect(!!(x), 0)

/* ---- Initialization -------------------------------------------------------
 * Reference counted: the first LCT_init() allocates
 * LCT_log_ctx_default from LCT_LOG_LEVEL / LCT_LOG_OUTFILE /
 * LCT_LOG_WHITELIST / LCT_LOG_BLACKLIST; the matching last LCT_fina() frees
 * it. Thread safety: may be called from any thread; a log through the
 * default context must not run concurrently with the last LCT_fina(). */
LCT_API void LCT_init(void);
LCT_API void LCT_fina(void);

/* The process's rank as the runtime knows it (-1 until set): log lines
 * carry it, and a "%" in a log file name is replaced by it. */
extern int LCT_rank;
LCT_API void LCT_set_rank(int rank);
LCT_API int LCT_get_rank(void);

/* Linux's value (<limits.h> defines it outside strict ISO C modes); the
 * library is built with it. */
#ifndef HOST_NAME_MAX
#define HOST_NAME_MAX 64
#endif
/* Set by the first LCT_init() or LCT_log_ctx_alloc(); empty before. */
extern char LCT_hostname[HOST_NAME_MAX + 1];

/* ---- Time -------------------------------------------------------------------
 * A monotonic clock in nanoseconds (CLOCK_MONOTONIC): differences of two
 * LCT_now() are durations; the origin is unspecified. */
typedef int64_t LCT_time_t;
LCT_API LCT_time_t LCT_now(void);
LCT_API double LCT_time_to_ns(LCT_time_t time);
LCT_API double LCT_time_to_us(LCT_time_t time);
LCT_API double LCT_time_to_ms(LCT_time_t time);
LCT_API double LCT_time_to_s(LCT_time_t time);

/* ---- String tables ----------------------------------------------------------
 * Looks `key` up among the `count` entries of `dict` (case-insensitive;
 * entries with a NULL key are skipped). Found: *val = its value, returns 1.
 * key NULL (nothing to look up, e.g. an unset environment variable):
 * *val = default_val, returns 1. Not found: *val = default_val, returns 0. */
typedef struct {
  const char* key;
  int val;
} LCT_dict_str_int_t;
LCT_API int LCT_str_int_search(LCT_dict_str_int_t dict[], int count,
                               const char* key, int default_val, int* val);

/* ---- Threads ------------------------------------------------------------------
 * A thread's id: 0, 1, 2, ... in the order threads first call it (ids are
 * never reused). LCT_get_nthreads(): how many ids were handed out. */
LCT_API int LCT_get_thread_id(void);
LCT_API int LCT_get_nthreads(void);

/* ---- Logging ------------------------------------------------------------------
 * A log context has named levels (level i is log_levels_[i]; lower is more
 * important), the level it prints up to, an output and tag filters:
 *   log_level_str  the level by name (case-insensitive) or number; NULL or
 *                  "" -> default_log_level; unknown -> a warning on stderr
 *                  and default_log_level.
 *   filename       NULL, "" or "stderr" -> stderr; "stdout" -> stdout;
 *                  else a file created (truncated) at alloc, each "%" in
 *                  the name replaced by LCT_rank.
 *   whitelist      comma-separated tags: if given, only these are printed.
 *   blacklist      comma-separated tags never printed.
 * A message is printed iff its level <= the context's level and its tag
 * passes the filters, as one line-buffered write:
 *   "<ctx_name>:<tag>:<rank>:<hostname>:<pid>:<thread id> <file>:<line> <func>] <message>"
 * The message is printed as formatted (clients end it with "\n").
 * Thread safety: LCT_Log and LCT_Logv may run concurrently on one context
 * (lines never interleave); alloc and free must not run concurrently with
 * any use of that context. A NULL context logs nothing.
 * Ownership: the context copies the level names, tags and file name. */
typedef void* LCT_log_ctx_t;
LCT_API LCT_log_ctx_t LCT_log_ctx_alloc(const char* const log_levels_[],
                                        int count, int default_log_level,
                                        const char* ctx_name, char* filename,
                                        char* log_level_str, char* whitelist,
                                        char* blacklist);
LCT_API void LCT_log_ctx_free(LCT_log_ctx_t* log_ctx_p); /* *log_ctx_p = NULL */
LCT_API int LCT_log_get_level(LCT_log_ctx_t log_ctx);

/* Always on (not only in debug builds): a false Expr prints the message and
 * where to the context's output (stderr for a NULL context) and aborts. */
#define LCT_Assert(log_ctx, Expr, ...)                                      \
  do {                                                                      \
    if (LCT_unlikely(!(Expr)))                                              \
      LCT_Report_false_assert(log_ctx, #Expr, __FILE__, __func__, __LINE__, \
                              __VA_ARGS__);                                 \
  } while (0)

#define LCT_Log(log_ctx, log_level, log_tag, ...)                     \
  LCT_Log_(log_ctx, log_level, log_tag, __FILE__, __func__, __LINE__, \
           __VA_ARGS__)
#define LCT_Warn(log_ctx, ...) \
  LCT_Log(log_ctx, LCT_LOG_WARN, "warn", __VA_ARGS__)
#define LCT_Logv(log_ctx, log_level, log_tag, format, vargs)                   \
  LCT_Logv_(log_ctx, log_level, log_tag, __FILE__, __func__, __LINE__, format, \
            vargs)
LCT_API void LCT_Report_false_assert(LCT_log_ctx_t log_ctx,
                                     const char* expr_str, const char* file,
                                     const char* func, int line,
                                     const char* format, ...)
    __attribute__((noreturn, format(printf, 6, 7)));
LCT_API void LCT_Log_(LCT_log_ctx_t log_ctx, int log_level, const char* log_tag,
                      const char* file, const char* func, int line,
                      const char* format, ...)
    __attribute__((format(printf, 7, 8)));
LCT_API void LCT_Logv_(LCT_log_ctx_t log_ctx, int log_level,
                       const char* log_tag, const char* file, const char* func,
                       int line, const char* format, va_list vargs);
LCT_API void LCT_Log_flush(LCT_log_ctx_t log_ctx);

/* Compiled in only when LCT_DEBUG is defined by the including program. */
#ifdef LCT_DEBUG
#define LCT_DBG_Assert(...) LCT_Assert(__VA_ARGS__)
#define LCT_DBG_Log(...) LCT_Log(__VA_ARGS__)
#define LCT_DBG_Warn(...) LCT_Warn(__VA_ARGS__)
#else
#define LCT_DBG_Assert(...)
#define LCT_DBG_Log(...)
#define LCT_DBG_Warn(...)
#endif

/* The default context (LCT_init): these levels, named "error", "warn",
 * "diag", "info", "debug", "trace"; default "warn"; context name "lct". */
extern LCT_log_ctx_t LCT_log_ctx_default;
enum LCT_log_level_default_t {
  LCT_LOG_ERROR,
  LCT_LOG_WARN,
  LCT_LOG_DIAG,
  LCT_LOG_INFO,
  LCT_LOG_DEBUG,
  LCT_LOG_TRACE,
  LCT_LOG_MAX
};

/* ---- Performance counters -----------------------------------------------------
 * A context holds up to 256 named counters, each summed over the threads
 * that update it (per-thread cells: updates do not contend):
 *   NONE, COUNTER  LCT_pcounter_add sums values.
 *   TREND          as COUNTER; LCT_pcounter_record also samples its sum.
 *   TIMER          start/end (or startt/endt with a given time) add the
 *                  elapsed time to the total and 1 to the count; add adds
 *                  a duration (ns) and 1 to the count.
 * LCT_pcounter_dump prints one line per counter (docs/lct.md):
 *   "<ctx> <name> counter <sum>", "<ctx> <name> trend <sum>",
 *   "<ctx> <name> timer <count> <total ns>", and per TREND sample
 *   "<ctx> <name> sample <time since alloc, ns> <sum>".
 * Thread safety: add/start/end/startt/endt may run concurrently from any
 * threads; register, record and dump may too (they lock the context);
 * free must not run concurrently with anything on the context. A timer's
 * start and end must come from one thread. Limits: 256 counters (a further
 * register is fatal); threads beyond the first 256 ids share cells (sums
 * stay exact; two threads timing one counter in one shared cell do not);
 * 65,536 samples (further records are counted, not kept). */
typedef enum {
  LCT_PCOUNTER_NONE,
  LCT_PCOUNTER_COUNTER,
  LCT_PCOUNTER_TREND,
  LCT_PCOUNTER_TIMER,
} LCT_pcounter_type_t;
typedef void* LCT_pcounter_ctx_t;
typedef struct {
  LCT_pcounter_type_t type;
  int idx;
} LCT_pcounter_handle_t;
LCT_API LCT_pcounter_ctx_t LCT_pcounter_ctx_alloc(const char* ctx_name);
LCT_API LCT_pcounter_handle_t
LCT_pcounter_register(LCT_pcounter_ctx_t pcounter_ctx, const char* name,
                      LCT_pcounter_type_t type);
LCT_API void LCT_pcounter_ctx_free(LCT_pcounter_ctx_t* pcounter_ctx);
LCT_API void LCT_pcounter_add(LCT_pcounter_ctx_t pcounter_ctx,
                              LCT_pcounter_handle_t handle, int64_t val);
LCT_API void LCT_pcounter_start(LCT_pcounter_ctx_t pcounter_ctx,
                                LCT_pcounter_handle_t handle);
LCT_API void LCT_pcounter_end(LCT_pcounter_ctx_t pcounter_ctx,
                              LCT_pcounter_handle_t handle);
LCT_API void LCT_pcounter_startt(LCT_pcounter_ctx_t pcounter_ctx,
                                 LCT_pcounter_handle_t handle, LCT_time_t time);
LCT_API void LCT_pcounter_endt(LCT_pcounter_ctx_t pcounter_ctx,
                               LCT_pcounter_handle_t handle, LCT_time_t time);
LCT_API void LCT_pcounter_record(LCT_pcounter_ctx_t pcounter_ctx);
LCT_API void LCT_pcounter_dump(LCT_pcounter_ctx_t pcounter_ctx, FILE* out);

/* ---- Queues -------------------------------------------------------------------
 * MPMC FIFO queues of non-NULL pointers, built on LCI's lock-free
 * completion queues (lci/cq). Each kind maps to one of two:
 *   LCRQ (unbounded, lock-free; `length` unused):
 *     LCT_QUEUE_LCRQ, LCT_QUEUE_LPRQ, LCT_QUEUE_MS, LCT_QUEUE_FAAARRAY,
 *     LCT_QUEUE_LAZY_INDEX, LCT_QUEUE_STD, LCT_QUEUE_STD_MUTEX
 *   FAA array (fixed capacity `length` >= 1, set at alloc):
 *     LCT_QUEUE_ARRAY_ATOMIC_FAA, LCT_QUEUE_ARRAY_ATOMIC_CAS,
 *     LCT_QUEUE_ARRAY_ATOMIC_BASIC, LCT_QUEUE_ARRAY_ST,
 *     LCT_QUEUE_ARRAY_MUTEX
 * Thread safety: push and pop may run concurrently from any threads (also
 * for the kinds that are single-threaded or locked elsewhere); free must
 * not run concurrently with anything on the queue.
 * Blocking: never (LCRQ); a bounded spin on a slot a concurrent operation
 * is finishing (FAA array).
 * Ownership: the queue stores the pointer, never the pointee; values left
 * at free are dropped.
 * Limits: push(NULL) is fatal (pop's NULL means empty); a push into a full
 * FAA array queue is fatal: size `length` for the most values it holds. */
typedef enum {
  LCT_QUEUE_ARRAY_ATOMIC_FAA,
  LCT_QUEUE_ARRAY_ATOMIC_CAS,
  LCT_QUEUE_ARRAY_ATOMIC_BASIC,
  LCT_QUEUE_ARRAY_ST,
  LCT_QUEUE_ARRAY_MUTEX,
  LCT_QUEUE_STD,
  LCT_QUEUE_STD_MUTEX,
  LCT_QUEUE_MS,
  LCT_QUEUE_LCRQ,
  LCT_QUEUE_LPRQ,
  LCT_QUEUE_FAAARRAY,
  LCT_QUEUE_LAZY_INDEX,
} LCT_queue_type_t;
struct LCT_queue_opaque_t;
typedef struct LCT_queue_opaque_t* LCT_queue_t;
LCT_API LCT_queue_t LCT_queue_alloc(LCT_queue_type_t type, size_t length);
LCT_API void LCT_queue_free(LCT_queue_t* queue_p); /* *queue_p = NULL */
LCT_API void LCT_queue_push(LCT_queue_t queue, void* val);
LCT_API void* LCT_queue_pop(LCT_queue_t queue); /* NULL when empty */

/* ---- Argument parser ------------------------------------------------------------
 * Long options only: "--name value", "--name=value", and for has_arg ==
 * no_argument (0) "--name", which stores 1. A value is stored in *ptr as
 * a decimal integer, or, for an option added with a dict, as the value of
 * the entry whose key matches it (LCT_str_int_search). Arguments that do
 * not start with "--" are left alone; an unknown option, a missing or
 * malformed value is fatal. has_arg: getopt's no_argument (0),
 * required_argument (1), optional_argument (2: the value only in
 * "--name=value" form; "--name" alone stores 1).
 * LCT_args_parser_print: one "name = value" line per option on stdout
 * (verbose: also the dict's choices). Thread safety: none (one thread).
 * Ownership: the parser copies names and dicts; *ptr stays the caller's
 * and must outlive parse and print. */
typedef void* LCT_args_parser_t;
LCT_API LCT_args_parser_t LCT_args_parser_alloc(void);
LCT_API void LCT_args_parser_free(LCT_args_parser_t parser);
LCT_API void LCT_args_parser_add(LCT_args_parser_t parser, const char* name,
                                 int has_arg, int* ptr);
LCT_API void LCT_args_parser_add_dict(LCT_args_parser_t parser,
                                      const char* name, int has_arg, int* ptr,
                                      LCT_dict_str_int_t dict[], int count);
LCT_API void LCT_args_parser_parse(LCT_args_parser_t parser, int argc,
                                   char* argv[]);
LCT_API void LCT_args_parser_print(LCT_args_parser_t parser, bool verbose);

/* ---- Thread barrier ---------------------------------------------------------------
 * A reusable barrier for `nthreads` threads (>= 1). arrive() returns a
 * ticket; test(ticket) is true once all nthreads threads have arrived in
 * that ticket's round; wait(ticket) spins (yielding) until then.
 * arrive_and_wait() is both. Writes before an arrive are visible after a
 * test that returned true, or a wait, of that round.
 * Thread safety: arrive/test/wait from any threads; a round takes exactly
 * nthreads arrivals; free must not run concurrently with anything.
 * Blocking: arrive and test never; wait until the round completes. */
typedef void* LCT_tbarrier_t;
LCT_API LCT_tbarrier_t LCT_tbarrier_alloc(int nthreads);
LCT_API void LCT_tbarrier_free(LCT_tbarrier_t* tbarrier_p); /* *p = NULL */
LCT_API int64_t LCT_tbarrier_arrive(LCT_tbarrier_t tbarrier);
LCT_API bool LCT_tbarrier_test(LCT_tbarrier_t tbarrier, int64_t ticket);
LCT_API void LCT_tbarrier_wait(LCT_tbarrier_t tbarrier, int64_t ticket);
LCT_API void LCT_tbarrier_arrive_and_wait(LCT_tbarrier_t tbarrier);

#ifdef __cplusplus
}
#endif

#endif /* LCI_LCT_H */
