// hello_am: active messages. Every rank sends a greeting to the next rank
// (rank n-1 to rank 0) as an active message; it lands in a completion queue
// the receiver registered as a remote completion handle (rcomp), and the
// receiver prints it.
//
//   bazel run //examples:hello_am_sim
//   LCI_SIM_RANKS=5 bazel run //examples:hello_am_sim
//
// What it shows:
//   - register_rcomp: makes a completion object the target of peers' active
//     messages; ranks register in the same order, so the id is the same on
//     every rank and a sender can name its peer's queue by its own id;
//   - post_am's three outcomes: done (the message left already), posted
//     (the local completion object is signalled later), retry (nothing
//     happened: progress and post again);
//   - cq_pop with progress: nothing arrives unless someone calls progress;
//   - the received buffer was allocated by the runtime (malloc) and is the
//     receiver's: it frees it with std::free.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "examples/example_main.hpp"
#include "lci.hpp"

namespace {

std::string greeting_of(int rank) { return "hello from rank " + std::to_string(rank); }

// Posts until the runtime takes the message. Retry means nothing happened
// (no packet, a full send queue): progress frees what was missing.
lci::status_t post_am_until_taken(int rank, std::string& message, lci::comp_t local_comp,
                                  lci::rcomp_t remote_comp) {
  for (;;) {
    const lci::status_t status =
        lci::post_am(rank, message.data(), message.size(), local_comp, remote_comp);
    if (!status.is_retry()) return status;
    lci::progress();
  }
}

}  // namespace

int example::rank_main(int /*argc*/, char** /*argv*/) {
  lci::g_runtime_init();
  const int rank_me = lci::get_rank_me();
  const int rank_n = lci::get_rank_n();

  lci::comp_t inbox = lci::alloc_cq();
  const lci::rcomp_t inbox_rcomp = lci::register_rcomp(inbox);
  // An active message naming an rcomp its target has not registered yet is
  // an error at the target: start sending once every rank registered.
  lci::barrier();

  const int next = (rank_me + 1) % rank_n;
  std::string greeting = greeting_of(rank_me);
  lci::comp_t sent = lci::alloc_sync();
  lci::status_t status = post_am_until_taken(next, greeting, sent, inbox_rcomp);
  // posted: `greeting` must stay untouched until `sent` is signalled.
  if (status.is_posted()) lci::sync_wait(sent, &status);

  lci::status_t received;
  do {
    lci::progress();
    received = lci::cq_pop(inbox);
  } while (received.is_retry());
  const std::string text(static_cast<const char*>(received.buffer), received.size);
  std::free(received.buffer);
  std::printf("rank %d received \"%s\" from rank %d\n", rank_me, text.c_str(), received.rank);

  const int previous = (rank_me + rank_n - 1) % rank_n;
  const bool ok = received.rank == previous && text == greeting_of(previous) &&
                  received.tag == 0;
  if (!ok) {
    std::fprintf(stderr, "rank %d: expected \"%s\" from rank %d\n", rank_me,
                 greeting_of(previous).c_str(), previous);
  }
  // Nobody deregisters its queue while a peer may still send to it.
  lci::barrier();
  lci::deregister_rcomp(inbox_rcomp);
  lci::free_comp(&sent);
  lci::free_comp(&inbox);
  lci::g_runtime_fina();
  return ok ? 0 : 1;
}
