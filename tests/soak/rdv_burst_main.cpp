// The rdv_burst workload (rdv_burst.hpp) as a program: on the simulator when
// started directly, one rank per process under a launcher.
//
//   bazel run //tests/soak:rdv_burst -- --am 20 --target random
//   bazel build --config=ofi //tests/soak:rdv_burst &&
//     LCI_ATTR_OFI_PROVIDER_NAME=shm tools/lcirun -n 2 bazel-bin/tests/soak/rdv_burst --am 500
//
// Options: --am N (active messages per rank), --sendrecv N (sends and
// receives per peer), --size BYTES, --target self|next|random, --seed S.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "sim/sim_program.hpp"
#include "tests/soak/rdv_burst.hpp"

namespace {

lci::soak::rdv_burst_t g_options;

lci::soak::burst_target_t parse_target(const std::string& name) {
  if (name == "self") return lci::soak::burst_target_t::self;
  if (name == "next") return lci::soak::burst_target_t::next;
  if (name == "random") return lci::soak::burst_target_t::random;
  std::fprintf(stderr, "rdv_burst: --target %s: expected self, next or random\n", name.c_str());
  std::exit(2);
}

void parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "rdv_burst: %s needs a value\n", flag.c_str());
      std::exit(2);
    }
    const char* value = argv[++i];
    if (flag == "--am") {
      g_options.am_count = std::atoi(value);
    } else if (flag == "--sendrecv") {
      g_options.sendrecv_count = std::atoi(value);
    } else if (flag == "--size") {
      g_options.size = std::strtoull(value, nullptr, 10);
    } else if (flag == "--target") {
      g_options.target = parse_target(value);
    } else if (flag == "--seed") {
      g_options.seed = std::strtoull(value, nullptr, 10);
    } else {
      std::fprintf(stderr, "rdv_burst: unknown option %s\n", flag.c_str());
      std::exit(2);
    }
  }
}

int rank_main(int /*argc*/, char** /*argv*/) {
  lci::soak::run_rdv_burst(g_options);
  std::printf("rdv_burst: ok\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  parse(argc, argv);
  return lci::sim::run_program(argc, argv, 2, rank_main);
}
