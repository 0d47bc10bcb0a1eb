// Log contexts (lct.h, "Logging").
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lct/lct.h"
#include "lct/lct_internal.hpp"

namespace {

struct log_ctx_t {
  std::string name;
  std::vector<std::string> level_names;
  int level = 0;
  FILE* out = stderr;
  bool out_owned = false;  // a file this context opened (and closes)
  std::vector<std::string> whitelist;
  std::vector<std::string> blacklist;
};

std::vector<std::string> split_tags(const char* list) {
  std::vector<std::string> tags;
  if (list == nullptr) return tags;
  std::string all(list);
  std::size_t begin = 0;
  while (begin <= all.size()) {  // bounded: begin grows each lap
    std::size_t end = all.find(',', begin);
    if (end == std::string::npos) end = all.size();
    if (end > begin) tags.push_back(all.substr(begin, end - begin));
    begin = end + 1;
  }
  return tags;
}

bool contains(const std::vector<std::string>& tags, const char* tag) {
  for (const std::string& t : tags)
    if (t == tag) return true;
  return false;
}

// The level log_level_str names (a name or a number), or -1.
int parse_level(const log_ctx_t& ctx, const char* log_level_str) {
  for (std::size_t i = 0; i < ctx.level_names.size(); ++i)
    if (strcasecmp(ctx.level_names[i].c_str(), log_level_str) == 0)
      return static_cast<int>(i);
  char* end = nullptr;
  errno = 0;
  const long number = std::strtol(log_level_str, &end, 10);
  if (errno != 0 || end == log_level_str || *end != '\0') return -1;
  if (number < 0 || number >= static_cast<long>(ctx.level_names.size())) return -1;
  return static_cast<int>(number);
}

void open_output(log_ctx_t& ctx, const char* filename) {
  if (filename == nullptr || filename[0] == '\0' ||
      std::strcmp(filename, "stderr") == 0)
    return;  // the default, stderr
  if (std::strcmp(filename, "stdout") == 0) {
    ctx.out = stdout;
    return;
  }
  std::string path;
  for (const char* c = filename; *c != '\0'; ++c) {
    if (*c == '%')
      path += std::to_string(LCT_rank);
    else
      path += *c;
  }
  FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    std::fprintf(stderr, "LCT warning: log context %s cannot open %s (%s); logging to stderr\n",
                 ctx.name.c_str(), path.c_str(), std::strerror(errno));
    return;
  }
  ctx.out = file;
  ctx.out_owned = true;
}

}  // namespace

LCT_log_ctx_t LCT_log_ctx_alloc(const char* const log_levels_[], int count,
                                int default_log_level, const char* ctx_name,
                                char* filename, char* log_level_str,
                                char* whitelist, char* blacklist) {
  lct::set_hostname_once();
  auto* ctx = new log_ctx_t;
  ctx->name = ctx_name != nullptr ? ctx_name : "";
  for (int i = 0; i < count; ++i)
    ctx->level_names.emplace_back(log_levels_[i] != nullptr ? log_levels_[i] : "");
  ctx->level = default_log_level;
  if (log_level_str != nullptr && log_level_str[0] != '\0') {
    const int level = parse_level(*ctx, log_level_str);
    if (level >= 0)
      ctx->level = level;
    else
      std::fprintf(stderr, "LCT warning: log context %s has no level \"%s\"; using %d\n",
                   ctx->name.c_str(), log_level_str, default_log_level);
  }
  ctx->whitelist = split_tags(whitelist);
  ctx->blacklist = split_tags(blacklist);
  open_output(*ctx, filename);
  return ctx;
}

void LCT_log_ctx_free(LCT_log_ctx_t* log_ctx_p) {
  auto* ctx = static_cast<log_ctx_t*>(*log_ctx_p);
  if (ctx == nullptr) return;
  if (ctx->out_owned)
    std::fclose(ctx->out);
  else
    std::fflush(ctx->out);
  delete ctx;
  *log_ctx_p = nullptr;
}

int LCT_log_get_level(LCT_log_ctx_t log_ctx) {
  if (log_ctx == nullptr) return -1;
  return static_cast<log_ctx_t*>(log_ctx)->level;
}

void LCT_Logv_(LCT_log_ctx_t log_ctx, int log_level, const char* log_tag,
               const char* file, const char* func, int line, const char* format,
               va_list vargs) {
  const auto* ctx = static_cast<const log_ctx_t*>(log_ctx);
  if (ctx == nullptr || log_level > ctx->level) return;
  if (log_tag == nullptr) log_tag = "";
  if (!ctx->whitelist.empty() && !contains(ctx->whitelist, log_tag)) return;
  if (contains(ctx->blacklist, log_tag)) return;
  // One fwrite per message: stdio locks the stream for each call, so
  // concurrent messages never interleave within a line.
  char prefix[512];
  const int prefix_length = std::snprintf(
      prefix, sizeof(prefix), "%s:%s:%d:%s:%d:%d %s:%d %s] ", ctx->name.c_str(),
      log_tag, LCT_rank, LCT_hostname, static_cast<int>(getpid()),
      LCT_get_thread_id(), file, line, func);
  va_list sizing;
  va_copy(sizing, vargs);
  const int body_length = std::vsnprintf(nullptr, 0, format, sizing);
  va_end(sizing);
  if (prefix_length < 0 || body_length < 0) return;  // an encoding error
  std::string message(prefix, std::min<std::size_t>(prefix_length, sizeof(prefix) - 1));
  const std::size_t body_at = message.size();
  message.resize(body_at + body_length + 1);
  std::vsnprintf(&message[body_at], body_length + 1, format, vargs);
  message.resize(body_at + body_length);
  std::fwrite(message.data(), 1, message.size(), ctx->out);
}

void LCT_Log_(LCT_log_ctx_t log_ctx, int log_level, const char* log_tag,
              const char* file, const char* func, int line, const char* format,
              ...) {
  va_list args;
  va_start(args, format);
  LCT_Logv_(log_ctx, log_level, log_tag, file, func, line, format, args);
  va_end(args);
}

void LCT_Log_flush(LCT_log_ctx_t log_ctx) {
  if (log_ctx != nullptr) std::fflush(static_cast<log_ctx_t*>(log_ctx)->out);
}

void LCT_Report_false_assert(LCT_log_ctx_t log_ctx, const char* expr_str,
                             const char* file, const char* func, int line,
                             const char* format, ...) {
  // To the context's output, and to stderr as well when that is a file:
  // the process is about to die, and its stderr is where a user looks.
  FILE* out = log_ctx != nullptr ? static_cast<log_ctx_t*>(log_ctx)->out : stderr;
  for (FILE* stream : {out, stderr}) {
    std::fprintf(stream, "%d:%s: assertion failed: %s (%s:%d %s): ", LCT_rank,
                 LCT_hostname, expr_str, file, line, func);
    va_list args;
    va_start(args, format);
    std::vfprintf(stream, format, args);
    va_end(args);
    std::fflush(stream);
    if (out == stderr) break;
  }
  std::abort();
}
