// A runtime's use of LCT beside LCI, as LCW and HPX's parcelport link them
// (LCI::LCI and LCI::LCT; liblci.pc and liblct.pc): the C API from lct.h
// with results checked, and an LCI call, without a network. Prints
// "tools: ok" and exits 0, or names the first check that failed and exits 1.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "lci.hpp"
#include "lct.h"

namespace {

int failures_count = 0;

void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "tools: FAILED: %s\n", what);
  ++failures_count;
}

// Two threads push their halves; the main thread pops them all (one each).
void check_queue() {
  constexpr int per_thread = 1000;
  LCT_queue_t queue = LCT_queue_alloc(LCT_QUEUE_LCRQ, 64);
  LCT_tbarrier_t barrier = LCT_tbarrier_alloc(3);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([=] {
      for (int i = 0; i < per_thread; ++i)
        LCT_queue_push(queue, reinterpret_cast<void*>(static_cast<std::uintptr_t>(
                                  1 + t * per_thread + i)));
      LCT_tbarrier_arrive_and_wait(barrier);
    });
  }
  LCT_tbarrier_arrive_and_wait(barrier);
  std::vector<int> seen(2 * per_thread, 0);
  for (void* value; (value = LCT_queue_pop(queue)) != nullptr;)
    ++seen[reinterpret_cast<std::uintptr_t>(value) - 1];
  for (auto& thread : threads) thread.join();
  bool each_once = true;
  for (int count : seen) each_once = each_once && count == 1;
  check(each_once, "every pushed value popped once");
  LCT_tbarrier_free(&barrier);
  LCT_queue_free(&queue);
}

void check_log_and_counters() {
  const char* levels[] = {"error", "warn", "info"};
  char output[] = "stdout";
  char level[] = "warn";
  LCT_log_ctx_t log = LCT_log_ctx_alloc(levels, 3, 0, "tools", output, level, nullptr, nullptr);
  check(LCT_log_get_level(log) == 1, "log level from its name");
  LCT_Log(log, 2, "info", "tools: filtered out\n");
  LCT_log_ctx_free(&log);

  LCT_pcounter_ctx_t counters = LCT_pcounter_ctx_alloc("tools");
  LCT_pcounter_handle_t sends = LCT_pcounter_register(counters, "sends", LCT_PCOUNTER_NONE);
  for (int i = 1; i <= 10; ++i) LCT_pcounter_add(counters, sends, i);
  char* dump = nullptr;
  std::size_t dump_size = 0;
  FILE* out = open_memstream(&dump, &dump_size);
  LCT_pcounter_dump(counters, out);
  std::fclose(out);
  check(std::strstr(dump, "tools sends counter 55\n") != nullptr, "counter sum in the dump");
  std::free(dump);
  LCT_pcounter_ctx_free(&counters);
}

void check_parser_and_tables(int argc, char** argv) {
  int iterations = 0, kind = -1;
  LCT_dict_str_int_t kinds[] = {{"lcrq", LCT_QUEUE_LCRQ}, {"faa", LCT_QUEUE_ARRAY_ATOMIC_FAA}};
  LCT_args_parser_t parser = LCT_args_parser_alloc();
  LCT_args_parser_add(parser, "iterations", 1, &iterations);
  LCT_args_parser_add_dict(parser, "kind", 1, &kind, kinds, 2);
  LCT_args_parser_parse(parser, argc, argv);
  LCT_args_parser_free(parser);
  check(iterations == 7, "--iterations 7 parsed");
  check(kind == LCT_QUEUE_ARRAY_ATOMIC_FAA, "--kind=faa parsed");
  int found = 0;
  check(LCT_str_int_search(kinds, 2, "LCRQ", -1, &found) == 1 && found == LCT_QUEUE_LCRQ,
        "string table lookup");
  const LCT_time_t start = LCT_now();
  check(LCT_time_to_s(LCT_now() - start) >= 0.0, "monotonic time");
}

}  // namespace

int main(int argc, char** argv) {
  LCT_init();
  LCT_set_rank(0);
  check(LCT_get_rank() == 0, "rank set");
  check_queue();
  check_log_and_counters();
  check_parser_and_tables(argc, argv);
  // LCI itself, linked through LCI::LCI (a function of liblci's).
  check(std::strcmp(lci::get_attr_cq_type_str(lci::attr_cq_type_t::lcrq), "lcrq") == 0,
        "LCI's attribute names");
  LCT_fina();
  if (failures_count > 0) return 1;
  std::printf("tools: ok\n");
  return 0;
}
