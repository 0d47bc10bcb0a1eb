// Performance counters (lct.h, "Performance counters").
//
// Each thread slot (LCT_get_thread_id() % thread_slots_max) has its own
// block of cells, allocated on the slot's first update, so the threads'
// updates touch different cache lines. A cell's fields are atomics: threads
// beyond thread_slots_max share slots, and record/dump read cells while
// their threads update them.
#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "lct/lct.h"
#include "lct/lct_internal.hpp"

namespace {

constexpr int counters_max = 256;
constexpr int thread_slots_max = 256;
constexpr std::size_t samples_max = 65536;

struct cell_t {
  std::atomic<std::int64_t> total{0};
  std::atomic<std::int64_t> count{0};  // timers: completed intervals
  std::atomic<std::int64_t> start{0};  // timers: the open interval's start
};

struct alignas(64) thread_block_t {
  cell_t cells[counters_max];
};

struct counter_t {
  std::string name;
  LCT_pcounter_type_t type;
};

struct sample_t {
  LCT_time_t time;  // since the context's allocation
  int idx;
  std::int64_t total;
};

struct pcounter_ctx_t {
  std::string name;
  LCT_time_t alloc_time;
  std::atomic<thread_block_t*> blocks[thread_slots_max] = {};
  std::mutex mutex;  // guards counters, samples, samples_dropped_count
  std::vector<counter_t> counters;
  std::vector<sample_t> samples;
  std::size_t samples_dropped_count = 0;
};

pcounter_ctx_t& ctx_of(LCT_pcounter_ctx_t ctx) {
  return *static_cast<pcounter_ctx_t*>(ctx);
}

cell_t& cell_of(pcounter_ctx_t& ctx, LCT_pcounter_handle_t handle) {
  if (handle.idx < 0 || handle.idx >= counters_max)
    lct::fatal("LCT_pcounter", "handle %d out of range", handle.idx);
  std::atomic<thread_block_t*>& slot = ctx.blocks[LCT_get_thread_id() % thread_slots_max];
  // acquire: pairs with the release CAS below, so the block's zeroed cells
  // are visible before this thread updates them.
  thread_block_t* block = slot.load(std::memory_order_acquire);
  if (LCT_unlikely(block == nullptr)) {
    auto* fresh = new thread_block_t;
    // acq_rel: release publishes fresh's cells; acquire (on failure) reads
    // the block another thread of this slot installed first.
    if (slot.compare_exchange_strong(block, fresh, std::memory_order_acq_rel)) {
      block = fresh;
    } else {
      delete fresh;
    }
  }
  return block->cells[handle.idx];
}

// A counter's field summed over all thread slots.
std::int64_t sum_field(pcounter_ctx_t& ctx, int idx, std::atomic<std::int64_t> cell_t::*field) {
  std::int64_t total = 0;
  for (auto& slot : ctx.blocks) {
    // acquire: as in cell_of.
    const thread_block_t* block = slot.load(std::memory_order_acquire);
    // relaxed: a snapshot of independent sums; nothing is ordered by it.
    if (block != nullptr) total += (block->cells[idx].*field).load(std::memory_order_relaxed);
  }
  return total;
}

void add_interval(cell_t& cell, std::int64_t duration) {
  // relaxed: sums read only by record/dump, which order nothing by them.
  cell.total.fetch_add(duration, std::memory_order_relaxed);
  cell.count.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

LCT_pcounter_ctx_t LCT_pcounter_ctx_alloc(const char* ctx_name) {
  auto* ctx = new pcounter_ctx_t;
  ctx->name = ctx_name != nullptr ? ctx_name : "";
  ctx->alloc_time = LCT_now();
  ctx->counters.reserve(counters_max);
  return ctx;
}

void LCT_pcounter_ctx_free(LCT_pcounter_ctx_t* pcounter_ctx) {
  auto* ctx = static_cast<pcounter_ctx_t*>(*pcounter_ctx);
  if (ctx == nullptr) return;
  // relaxed: free excludes concurrent use (precondition).
  for (auto& slot : ctx->blocks) delete slot.load(std::memory_order_relaxed);
  delete ctx;
  *pcounter_ctx = nullptr;
}

LCT_pcounter_handle_t LCT_pcounter_register(LCT_pcounter_ctx_t pcounter_ctx,
                                            const char* name,
                                            LCT_pcounter_type_t type) {
  pcounter_ctx_t& ctx = ctx_of(pcounter_ctx);
  std::lock_guard<std::mutex> guard(ctx.mutex);
  if (ctx.counters.size() >= static_cast<std::size_t>(counters_max))
    lct::fatal("LCT_pcounter_register", "%s: more than %d counters in %s", name,
               counters_max, ctx.name.c_str());
  ctx.counters.push_back({name, type});
  return {type, static_cast<int>(ctx.counters.size() - 1)};
}

void LCT_pcounter_add(LCT_pcounter_ctx_t pcounter_ctx, LCT_pcounter_handle_t handle,
                      int64_t val) {
  cell_t& cell = cell_of(ctx_of(pcounter_ctx), handle);
  if (handle.type == LCT_PCOUNTER_TIMER) {
    add_interval(cell, val);
    return;
  }
  // relaxed: as in add_interval.
  cell.total.fetch_add(val, std::memory_order_relaxed);
}

void LCT_pcounter_startt(LCT_pcounter_ctx_t pcounter_ctx,
                         LCT_pcounter_handle_t handle, LCT_time_t time) {
  // relaxed: start and end of one interval run on one thread (lct.h).
  cell_of(ctx_of(pcounter_ctx), handle).start.store(time, std::memory_order_relaxed);
}

void LCT_pcounter_endt(LCT_pcounter_ctx_t pcounter_ctx,
                       LCT_pcounter_handle_t handle, LCT_time_t time) {
  cell_t& cell = cell_of(ctx_of(pcounter_ctx), handle);
  // relaxed: as in startt.
  add_interval(cell, time - cell.start.load(std::memory_order_relaxed));
}

void LCT_pcounter_start(LCT_pcounter_ctx_t pcounter_ctx, LCT_pcounter_handle_t handle) {
  LCT_pcounter_startt(pcounter_ctx, handle, LCT_now());
}

void LCT_pcounter_end(LCT_pcounter_ctx_t pcounter_ctx, LCT_pcounter_handle_t handle) {
  LCT_pcounter_endt(pcounter_ctx, handle, LCT_now());
}

void LCT_pcounter_record(LCT_pcounter_ctx_t pcounter_ctx) {
  pcounter_ctx_t& ctx = ctx_of(pcounter_ctx);
  const LCT_time_t time = LCT_now() - ctx.alloc_time;
  std::lock_guard<std::mutex> guard(ctx.mutex);
  for (std::size_t idx = 0; idx < ctx.counters.size(); ++idx) {
    if (ctx.counters[idx].type != LCT_PCOUNTER_TREND) continue;
    if (ctx.samples.size() >= samples_max) {
      ++ctx.samples_dropped_count;
      continue;
    }
    const int i = static_cast<int>(idx);
    ctx.samples.push_back({time, i, sum_field(ctx, i, &cell_t::total)});
  }
}

void LCT_pcounter_dump(LCT_pcounter_ctx_t pcounter_ctx, FILE* out) {
  pcounter_ctx_t& ctx = ctx_of(pcounter_ctx);
  const char* name = ctx.name.c_str();
  std::lock_guard<std::mutex> guard(ctx.mutex);
  for (std::size_t idx = 0; idx < ctx.counters.size(); ++idx) {
    const counter_t& counter = ctx.counters[idx];
    const int i = static_cast<int>(idx);
    const std::int64_t total = sum_field(ctx, i, &cell_t::total);
    if (counter.type == LCT_PCOUNTER_TIMER) {
      std::fprintf(out, "%s %s timer %" PRId64 " %" PRId64 "\n", name, counter.name.c_str(),
                   sum_field(ctx, i, &cell_t::count), total);
    } else {
      std::fprintf(out, "%s %s %s %" PRId64 "\n", name, counter.name.c_str(),
                   counter.type == LCT_PCOUNTER_TREND ? "trend" : "counter", total);
    }
  }
  for (const sample_t& sample : ctx.samples)
    std::fprintf(out, "%s %s sample %" PRId64 " %" PRId64 "\n", name,
                 ctx.counters[sample.idx].name.c_str(), sample.time, sample.total);
  if (ctx.samples_dropped_count > 0)
    std::fprintf(out, "%s samples_dropped %zu\n", name, ctx.samples_dropped_count);
}
