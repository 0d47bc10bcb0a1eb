// watch_list_t (lci/runtime/watch_list.hpp): a watched request is finished
// by exactly one of its normal completion (unlink() returns true) and its
// peer's crash (fail() hands it over as a victim). A completion that comes
// after the crash took its request is told so (unlink() returns false) and
// leaves the list alone.
#include "lci/runtime/watch_list.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

#include "lci/runtime/request.hpp"
#include "lci/util/atomic.hpp"

namespace {

using lci::detail::request_t;
using lci::detail::watch_list_t;

request_t* watched_by(watch_list_t& list, request_t* request, int rank) {
  static const lci::util::atomic<bool> alive{false};
  request->status.rank = rank;
  EXPECT_TRUE(list.link(request, alive));
  return request;
}

TEST(WatchList, ACompletionAfterTheCrashIsToldTheCrashTookItsRequest) {
  watch_list_t list;
  request_t requests[3];
  request_t* const victim_a = watched_by(list, &requests[0], 1);
  request_t* const survivor = watched_by(list, &requests[1], 2);
  request_t* const victim_b = watched_by(list, &requests[2], 1);

  std::vector<request_t*> victims;
  list.fail(1, &victims);
  ASSERT_EQ(victims.size(), 2u);
  EXPECT_NE(std::find(victims.begin(), victims.end(), victim_a), victims.end());
  EXPECT_NE(std::find(victims.begin(), victims.end(), victim_b), victims.end());
  EXPECT_TRUE(list.is_failed(victim_a));
  EXPECT_FALSE(list.is_failed(survivor));

  // The late completions: each finds its request failed, and the list
  // (now the survivor alone) is untouched.
  EXPECT_FALSE(list.unlink(victim_a));
  EXPECT_FALSE(list.unlink(victim_b));
  EXPECT_TRUE(list.is_failed(victim_b));
  EXPECT_TRUE(list.unlink(survivor));
  EXPECT_FALSE(survivor->watched);

  const std::vector<request_t*> failed = list.take_failed();
  EXPECT_EQ(failed.size(), 2u);
  EXPECT_TRUE(list.take_failed().empty());
}

TEST(WatchList, ARequestForADeadPeerIsNotLinked) {
  watch_list_t list;
  const lci::util::atomic<bool> dead{true};
  request_t request;
  request.status.rank = 3;
  EXPECT_FALSE(list.link(&request, dead));
  EXPECT_FALSE(request.watched);
  EXPECT_TRUE(list.unlink(&request));  // never linked
}

// The crash and the completions race: every request is finished once, by
// one side. Run under --config=tsan as well.
TEST(WatchList, CrashAndCompletionsFinishEachRequestOnce) {
  constexpr std::size_t kRequests = 512;
  constexpr int kRounds = 50;
  for (int round = 0; round < kRounds; ++round) {
    watch_list_t list;
    std::vector<request_t> requests(kRequests);
    for (request_t& request : requests) watched_by(list, &request, 1);

    std::atomic<bool> go{false};
    std::vector<request_t*> completed;
    std::thread completions([&] {
      while (!go.load(std::memory_order_acquire)) {
      }
      // Newest first: the list's head, so the scan and the unlinks meet.
      for (std::size_t i = kRequests; i-- > 0;) {
        if (list.unlink(&requests[i])) completed.push_back(&requests[i]);
      }
    });
    std::vector<request_t*> victims;
    go.store(true, std::memory_order_release);
    list.fail(1, &victims);
    completions.join();

    ASSERT_EQ(completed.size() + victims.size(), kRequests) << "round " << round;
    std::vector<request_t*> all = completed;
    all.insert(all.end(), victims.begin(), victims.end());
    std::sort(all.begin(), all.end());
    EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end())
        << "a request finished twice in round " << round;
    EXPECT_EQ(list.take_failed().size(), victims.size());
  }
}

}  // namespace
