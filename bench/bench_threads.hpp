// Threads of the resource benchmarks (bench/resources.cpp and
// bench/api_resources.cpp): the parsing of a thread-count list, the cores a
// process may use, pinning a thread to one of them, and timing a body run by
// several threads released together. Standard C++ and pthreads only: api_resources
// is also built against upstream LCI (bench/build_programs.sh).
//
// Why pin: on a 2-core machine the scheduler at times keeps a 2-thread run's
// threads on one core, where they take turns and never contend, and the run
// shows the 1-thread rate (45 against 11 Mops for a contended queue);
// which placement a run fell into then decides a comparison. Upstream's
// resource benchmarks pin thread t to CPU t; --pin puts thread t on the t-th
// core this process may use (taskset's list, modulo its length), so that
// both sides of a comparison contend.
//
// Thread safety: every function is called by the benchmark's main thread.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace lci::bench {

// "1,2,4" as {1, 2, 4}; exits with status 2 and `usage` on stderr when an
// entry is not in [1, max].
inline std::vector<int> parse_threads_list(const std::string& list, int max,
                                           const char* usage) {
  std::vector<int> values;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    const int value = std::atoi(list.substr(start, end - start).c_str());
    if (value <= 0 || value > max) {
      std::fprintf(stderr, "--threads takes integers in [1, %d], e.g. 1,2\n%s", max, usage);
      std::exit(2);
    }
    values.push_back(value);
    start = end + 1;
  }
  return values;
}

// The cores this process may use (taskset's list), in order.
inline std::vector<int> allowed_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    std::perror("sched_getaffinity");
    std::exit(1);
  }
  std::vector<int> cores;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cores.push_back(cpu);
  }
  return cores;
}

// Puts `thread` on one core: the (t mod count)-th of `cores` (not empty).
inline void pin_thread(std::thread& thread, int t, const std::vector<int>& cores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cores[static_cast<std::size_t>(t) % cores.size()], &set);
  const int error = pthread_setaffinity_np(thread.native_handle(), sizeof(set), &set);
  if (error != 0) {
    std::fprintf(stderr, "pthread_setaffinity_np: %s\n", std::strerror(error));
    std::exit(1);
  }
}

// Runs body(t) on threads t = 0 .. threads_count - 1 released together, each
// on a core of its own when `cores` is not empty (--pin); returns the seconds
// from the release until the last one finished.
template <typename Body>
double time_threads(int threads_count, const Body& body, const std::vector<int>& cores) {
  // seq_cst: a start flag and a ready count, off the measured path.
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      body(t);
    });
    // Before the release below: every thread is on its core when it starts.
    if (!cores.empty()) pin_thread(threads.back(), t, cores);
  }
  while (ready.load() < threads_count) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  go.store(true);
  for (std::thread& thread : threads) thread.join();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count();
}

}  // namespace lci::bench
