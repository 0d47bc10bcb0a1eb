// LCT_init/fina, the rank, the host name, thread ids and the clock.
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "lct/lct.h"
#include "lct/lct_internal.hpp"

static_assert(HOST_NAME_MAX == 64, "lct.h's fallback for strict C programs is this value");

int LCT_rank = -1;
char LCT_hostname[HOST_NAME_MAX + 1] = "";
LCT_log_ctx_t LCT_log_ctx_default = nullptr;

namespace {

// Guards the reference count and the default context's (de)allocation.
std::mutex init_mutex;
int init_count = 0;

// Guards hostname_set (LCT_init holds init_mutex while it makes a context,
// which sets the host name).
std::mutex hostname_mutex;
bool hostname_set = false;

std::atomic<int> threads_count{0};
thread_local int thread_id = -1;

}  // namespace

namespace lct {

void set_hostname_once() {
  std::lock_guard<std::mutex> guard(hostname_mutex);
  if (hostname_set) return;
  hostname_set = true;
  if (gethostname(LCT_hostname, sizeof(LCT_hostname)) != 0) LCT_hostname[0] = '\0';
  LCT_hostname[HOST_NAME_MAX] = '\0';  // gethostname may not terminate
}

}  // namespace lct

void LCT_init(void) {
  std::lock_guard<std::mutex> guard(init_mutex);
  if (init_count++ > 0) return;
  static const char* const level_names[] = {"error", "warn",  "diag",
                                            "info",  "debug", "trace"};
  static_assert(sizeof(level_names) / sizeof(level_names[0]) == LCT_LOG_MAX,
                "one name per default level");
  LCT_log_ctx_default = LCT_log_ctx_alloc(
      level_names, LCT_LOG_MAX, LCT_LOG_WARN, "lct", getenv("LCT_LOG_OUTFILE"),
      getenv("LCT_LOG_LEVEL"), getenv("LCT_LOG_WHITELIST"),
      getenv("LCT_LOG_BLACKLIST"));
}

void LCT_fina(void) {
  std::lock_guard<std::mutex> guard(init_mutex);
  if (init_count == 0) lct::fatal("LCT_fina", "called more often than LCT_init");
  if (--init_count > 0) return;
  LCT_log_ctx_free(&LCT_log_ctx_default);
}

void LCT_set_rank(int rank) { LCT_rank = rank; }
int LCT_get_rank(void) { return LCT_rank; }

int LCT_get_thread_id(void) {
  if (LCT_likely(thread_id >= 0)) return thread_id;
  // relaxed: the id only has to be unique; nothing is published with it.
  thread_id = threads_count.fetch_add(1, std::memory_order_relaxed);
  return thread_id;
}

int LCT_get_nthreads(void) {
  // relaxed: a count, read without ordering anything else.
  return threads_count.load(std::memory_order_relaxed);
}

LCT_time_t LCT_now(void) {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<LCT_time_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

double LCT_time_to_ns(LCT_time_t time) { return static_cast<double>(time); }
double LCT_time_to_us(LCT_time_t time) { return static_cast<double>(time) / 1e3; }
double LCT_time_to_ms(LCT_time_t time) { return static_cast<double>(time) / 1e6; }
double LCT_time_to_s(LCT_time_t time) { return static_cast<double>(time) / 1e9; }

namespace lct {

void fatal(const char* call, const char* format, ...) {
  std::fprintf(stderr, "LCT fatal error in %s: ", call);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::abort();
}

}  // namespace lct
