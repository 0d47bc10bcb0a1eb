// post_mode_t: what one post may answer its caller, resolved once from the
// completion object it was given, the program's allow_done, allow_posted
// and allow_retry options, whether it is a receive, and whether the
// backlog is replaying it (post_mode_of). The posting functions
// (ops/post_ops.cpp), the protocols (post_comm and below), the backlog's
// replay and the collectives read the mode, never the options.
//
// Will this call block, retry or queue? (docs/guide/completion.md has the
// same table from the program's side.) "queued": the device's backlog
// runs the operation again until the network takes it; "waits": the
// posting function waits for the operation, progressing its device.
//
//   mode                finished at once   network refuses        otherwise
//   done_posted_retry   done               retry                  posted
//   posted_retry        signal, posted     retry                  posted
//   done_posted_queued  done               queued: posted_backlog posted
//   posted_queued       signal, posted     queued: posted_backlog posted
//   done_retry_now      done               retry                  retry, nothing posted
//   done_retry_waited   done               retry                  waits: done
//   done_waited         done               queued, waits:         waits: done
//                                          done_backlog
//
// Thread safety: constexpr functions of their arguments.
// Blocking:      never (the modes describe calls that may).
// Limits:        allow_posted(false) with allow_done(false) has no mode
//                (only retry would be left): post_mode_of answers nullopt.
#pragma once

#include <cstdint>
#include <optional>

namespace lci::detail {

enum class post_mode_t : std::uint8_t {
  // The defaults: done, posted or retry.
  done_posted_retry,
  // allow_done(false): an operation that finished at once signals its
  // completion object and returns posted. Also the backlog's replay of a
  // queued post: its caller has returned, so its outcome can only be
  // signalled, and a refusal goes back to the backlog.
  posted_retry,
  // allow_retry(false): a refused operation is queued on the device's
  // backlog (posted_backlog) and its completion object signalled later.
  done_posted_queued,
  posted_queued,  // allow_done(false) and allow_retry(false)
  // A receive with allow_posted(false) or COMP_NULL_RETRY: takes a
  // message that has arrived already (done), or returns retry and leaves
  // nothing posted, so a loop of post and progress never blocks in it.
  done_retry_now,
  // Any other operation with allow_posted(false) or COMP_NULL_RETRY: the
  // post waits for it with a completion object of its own; retry is
  // returned.
  done_retry_waited,
  // COMP_NULL, or allow_posted(false) with allow_retry(false): the post
  // waits for it, a refusal included (queued, then done_backlog).
  done_waited,
};

// The completion object a post was given.
enum class comp_given_t : std::uint8_t {
  object,      // a completion object (any kind, a program's own included)
  null,        // COMP_NULL
  null_retry,  // COMP_NULL_RETRY
};

// Who runs the post: the program (the public posting functions, with its
// options), or the device's backlog replaying a post it queued.
enum class post_origin_t : std::uint8_t { program, backlog };

// The inputs of post_mode_of. `receive`: an incoming operation without an
// rmr (a get is no receive).
struct post_inputs_t {
  post_origin_t origin = post_origin_t::program;
  comp_given_t comp = comp_given_t::object;
  bool allow_done = true;
  bool allow_posted = true;
  bool allow_retry = true;
  bool receive = false;
};

// The one table: the mode of a post, or nullopt for the refused pair
// allow_posted(false) + allow_done(false) (the caller throws). A backlog
// replay ignores every other input. COMP_NULL has nothing to signal nor to
// hand retry back through, so it ignores the options: it waits (and its
// allow_done(false), which would only signal the post's own waiter before
// the wait returns, changes nothing). COMP_NULL_RETRY is allow_posted(false).
constexpr std::optional<post_mode_t> post_mode_of(const post_inputs_t& in) {
  if (in.origin == post_origin_t::backlog) return post_mode_t::posted_retry;
  if (in.comp == comp_given_t::null) return post_mode_t::done_waited;
  const bool allow_posted = in.allow_posted && in.comp != comp_given_t::null_retry;
  if (allow_posted) {
    if (in.allow_retry) {
      return in.allow_done ? post_mode_t::done_posted_retry : post_mode_t::posted_retry;
    }
    return in.allow_done ? post_mode_t::done_posted_queued : post_mode_t::posted_queued;
  }
  if (!in.allow_done) return std::nullopt;
  if (!in.allow_retry) return post_mode_t::done_waited;
  return in.receive ? post_mode_t::done_retry_now : post_mode_t::done_retry_waited;
}

// What each layer asks of a mode.

// An operation that finished inside the post returns done (false: it
// signals its completion object and returns posted).
constexpr bool returns_done(post_mode_t mode) {
  return mode != post_mode_t::posted_retry && mode != post_mode_t::posted_queued;
}
// A refused operation goes to the device's backlog rather than back to
// the caller as retry.
constexpr bool queues_refusal(post_mode_t mode) {
  return mode == post_mode_t::done_posted_queued || mode == post_mode_t::posted_queued ||
         mode == post_mode_t::done_waited;
}
// The posting function waits for a posted operation before it returns
// (ops/post_ops.cpp, post_waiting): the caller never sees posted.
constexpr bool waits_in_post(post_mode_t mode) {
  return mode == post_mode_t::done_retry_waited || mode == post_mode_t::done_waited;
}
// A receive that only takes a message already arrived (eager.cpp,
// recv_at_once).
constexpr bool takes_arrived_only(post_mode_t mode) {
  return mode == post_mode_t::done_retry_now;
}

}  // namespace lci::detail
