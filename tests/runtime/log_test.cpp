// The runtime's own log (lci/util/log.hpp, docs/lct.md): two ranks send a
// message, with LCI_LOG_LEVEL / LCI_LOG_WHITELIST as the BUILD target sets
// them; stderr (the log's default output) holds exactly the tags that level
// and whitelist let through: lifecycle tags from info, data-path tags from
// debug, none by default (warnings only, and nothing goes wrong here).
#include <gtest/gtest.h>
#include <strings.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"

namespace {

void send_one_message(lci::sim::rank_env_t&) {
  lci::g_runtime_init();
  const int peer = 1 - lci::get_rank_me();
  char out = 'x', in = 0;
  lci::comp_t sync = lci::alloc_sync();
  lci::status_t status;
  do {
    status = lci::post_recv(peer, &in, 1, 0, sync);
    lci::progress();
  } while (status.is_retry());
  if (!status.is_done()) {
    do {
      status = lci::post_send(peer, &out, 1, 0, lci::COMP_NULL_RETRY);
      lci::progress();
    } while (status.is_retry());
    lci::sync_wait(sync, &status);
  } else {
    do {
      status = lci::post_send(peer, &out, 1, 0, lci::COMP_NULL_RETRY);
      lci::progress();
    } while (status.is_retry());
  }
  EXPECT_EQ(in, 'x');
  lci::free_comp(&sync);
  lci::barrier();
  lci::g_runtime_fina();
}

// The level LCI_LOG_LEVEL names (log.hpp's order), warn when unset.
int configured_level() {
  const char* names[] = {"error", "warn", "diag", "info", "debug", "trace"};
  const char* level = std::getenv("LCI_LOG_LEVEL");
  if (level == nullptr) return 1;
  for (int i = 0; i < 6; ++i)
    if (strcasecmp(names[i], level) == 0) return i;
  ADD_FAILURE() << "LCI_LOG_LEVEL=" << level << " is not a level name";
  return 1;
}

bool whitelisted(const std::string& tag) {
  const char* list = std::getenv("LCI_LOG_WHITELIST");
  if (list == nullptr) return true;
  std::istringstream tags(list);
  for (std::string t; std::getline(tags, t, ',');)
    if (t == tag) return true;
  return false;
}

TEST(RuntimeLog, PrintsTheConfiguredLevelAndTags) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 1;
  sweep.concurrent = false;
  testing::internal::CaptureStderr();
  lci::sim::expect_runs_ok(2, sweep, send_one_message);
  const std::string log = testing::internal::GetCapturedStderr();
  const int level = configured_level();
  struct tag_level_t {
    const char* tag;
    int level;
  };
  for (const tag_level_t& expected : {tag_level_t{"runtime", 3}, tag_level_t{"device", 3},
                                      tag_level_t{"post", 4}, tag_level_t{"progress", 4}}) {
    const bool wanted = expected.level <= level && whitelisted(expected.tag);
    const bool printed = log.find(std::string("lci:") + expected.tag + ":") != std::string::npos;
    EXPECT_EQ(printed, wanted) << "tag " << expected.tag << " at level " << level << "; log:\n"
                               << log;
  }
  EXPECT_EQ(log.find("lci:peer:"), std::string::npos) << log;
}

}  // namespace
