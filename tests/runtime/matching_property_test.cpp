// Matching through the whole runtime: random programs of sends, receives
// and active messages on 2-4 simulated ranks, with random matching policies
// (rank_tag; tag_only with ANY_SOURCE; rank_only with ANY_TAG; none), tags
// that collide on purpose (and some that need the eager header) and sizes
// on both sides of every protocol threshold, each rank posting in its own
// random order, run in deterministic mode under a random seed. A small
// reference matcher then checks that every message was delivered exactly
// once, to a receive it may legally match (same target and policy, and the
// fields the policy compares equal), with its size, tag, source and bytes.
//
// The network does not keep order, so which of several legal receives a
// message meets is the runtime's choice: the matcher accepts any.
#include <rapidcheck.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness.hpp"
#include "tests/property/property.hpp"

namespace {

using lci::matching_policy_t;
using lci::status_t;
using lci::tag_t;

enum class kind_t : std::uint8_t { send, am };

struct message_t {
  kind_t kind = kind_t::send;
  int source = 0;
  int target = 1;
  std::size_t size = 0;
  tag_t tag = 0;
  matching_policy_t policy = matching_policy_t::rank_tag;  // sends only
};

// How RapidCheck prints a message of a counterexample.
void showValue(const message_t& message, std::ostream& os) {
  static const char* const policies[] = {"none", "rank_only", "tag_only", "rank_tag"};
  os << (message.kind == kind_t::am ? "am " : "send ") << message.source << "->"
     << message.target << " size " << message.size << " tag " << message.tag;
  if (message.kind == kind_t::send) os << " " << policies[static_cast<int>(message.policy)];
}

// One step of a rank's program.
struct action_t {
  enum class what_t : std::uint8_t { send, am, recv } what = what_t::send;
  std::size_t message = 0;  // the message it sends, or the one its receive is for
  int progress_calls = 0;   // progress() calls before it
};

struct program_t {
  int ranks_count = 2;
  std::uint64_t seed = 0;
  std::vector<message_t> messages;
  std::vector<std::vector<action_t>> actions;  // per rank, in posting order
};

// Sizes around every threshold; zero-copy ones are rare: each holds a
// memory registration until its receiver answers, and the sim device has
// 16 (a few of them keep the protocol busy without starving it).
constexpr std::size_t zero_copy_messages_max = 6;
constexpr std::size_t messages_max = 40;
constexpr std::size_t receive_capacity = 20000;  // every size fits: no truncation
constexpr tag_t header_tag = tag_t{1} << 20;     // beyond the immediate data

rc::Gen<message_t> message_gen(int ranks_count) {
  return rc::gen::exec([ranks_count] {
    message_t message;
    message.kind = *rc::gen::weightedElement<kind_t>({{3, kind_t::send}, {1, kind_t::am}});
    message.source = *rc::gen::inRange(0, ranks_count);
    message.target = (message.source + *rc::gen::inRange(1, ranks_count)) % ranks_count;
    message.size = *rc::gen::weightedElement<std::size_t>(
        {{2, 0}, {2, 8}, {2, 64}, {2, 65}, {2, 1000}, {1, 8169}, {1, receive_capacity}});
    message.tag = *rc::gen::weightedElement<tag_t>(
        {{3, 0}, {3, 1}, {3, 2}, {1, 3}, {1, header_tag}});
    message.policy = *rc::gen::element(matching_policy_t::rank_tag, matching_policy_t::tag_only,
                                       matching_policy_t::rank_only, matching_policy_t::none);
    return message;
  });
}

program_t program_gen() {
  program_t program;
  program.ranks_count = *rc::gen::inRange(2, 5);
  program.seed = *rc::gen::arbitrary<std::uint64_t>();
  program.messages = *rc::gen::container<std::vector<message_t>>(message_gen(program.ranks_count));
  if (program.messages.size() > messages_max) program.messages.resize(messages_max);
  std::size_t zero_copy = 0;
  for (message_t& message : program.messages) {
    if (message.size > 8168 && ++zero_copy > zero_copy_messages_max) message.size = 1000;
  }
  program.actions.resize(static_cast<std::size_t>(program.ranks_count));
  for (std::size_t i = 0; i < program.messages.size(); ++i) {
    const message_t& message = program.messages[i];
    const bool is_am = message.kind == kind_t::am;
    program.actions[static_cast<std::size_t>(message.source)].push_back(
        {is_am ? action_t::what_t::am : action_t::what_t::send, i, 0});
    if (!is_am) {
      program.actions[static_cast<std::size_t>(message.target)].push_back(
          {action_t::what_t::recv, i, 0});
    }
  }
  for (std::vector<action_t>& actions : program.actions) {
    for (std::size_t i = actions.size(); i > 1; --i) {
      std::swap(actions[i - 1], actions[*rc::gen::inRange<std::size_t>(0, i)]);
    }
    for (action_t& action : actions) action.progress_calls = *rc::gen::inRange(0, 3);
  }
  return program;
}

// The receive fields the program posts for a send: the policy's wildcards.
int receive_rank(const message_t& message) {
  const bool compares_rank = message.policy == matching_policy_t::rank_tag ||
                             message.policy == matching_policy_t::rank_only;
  return compares_rank ? message.source : lci::ANY_SOURCE;
}
tag_t receive_tag(const message_t& message) {
  const bool compares_tag = message.policy == matching_policy_t::rank_tag ||
                            message.policy == matching_policy_t::tag_only;
  return compares_tag ? message.tag : lci::ANY_TAG;
}

// Payload bytes name their message: word 0 is its index, the rest a pattern
// of it. (An empty message is named by its source and tag only.)
void fill_payload(std::vector<char>& buffer, std::size_t index) {
  for (std::size_t i = 0; i < buffer.size(); ++i) {
    buffer[i] = static_cast<char>((index * 131 + i * 7 + (i >> 8)) & 0xff);
  }
  if (buffer.size() >= sizeof(std::uint64_t)) {
    const std::uint64_t word = index;
    std::memcpy(buffer.data(), &word, sizeof(word));
  }
}

// What a rank saw arrive: a receive's or an active message's status and bytes.
struct arrival_t {
  int at_rank = 0;
  bool is_am = false;
  std::size_t receive_message = 0;  // receives: the message the receive was posted for
  int receive_completions = 0;      // receives: how often it completed
  bool buffer_returned = true;      // receives: status.buffer is the receive's buffer
  status_t status;
  std::vector<char> bytes;
};

struct outcome_t {
  std::vector<std::vector<arrival_t>> arrivals;  // per rank
};

// ---- one rank ----

struct op_state_t {
  action_t action;
  std::vector<char> buffer;
  int completions = 0;
  status_t status;
};

void complete(op_state_t& op, const status_t& status) {
  ++op.completions;
  op.status = status;
}

void run_rank(lci::sim::rank_env_t& env, const program_t& program, outcome_t& outcome) {
  lci::g_runtime_init();
  const int me = env.rank();
  lci::comp_t cq = lci::alloc_cq();
  lci::comp_t am_cq = lci::alloc_cq();
  const lci::rcomp_t am_rcomp = lci::register_rcomp(am_cq);  // the same number everywhere
  env.barrier();  // every rank's rcomp is registered before any active message
  const std::vector<action_t>& actions = program.actions[static_cast<std::size_t>(me)];
  std::vector<op_state_t> ops(actions.size());
  std::size_t ams_expected = 0;
  for (const message_t& message : program.messages) {
    if (message.kind == kind_t::am && message.target == me) ++ams_expected;
  }
  std::vector<arrival_t>& arrivals = outcome.arrivals[static_cast<std::size_t>(me)];
  std::size_t ams_arrived = 0;
  auto drain = [&] {
    for (status_t s = lci::cq_pop(cq); !s.is_retry(); s = lci::cq_pop(cq)) {
      complete(*static_cast<op_state_t*>(s.user_context), s);
    }
    for (status_t s = lci::cq_pop(am_cq); !s.is_retry(); s = lci::cq_pop(am_cq)) {
      arrival_t arrival;
      arrival.at_rank = me;
      arrival.is_am = true;
      arrival.status = s;
      arrival.bytes.assign(static_cast<char*>(s.buffer), static_cast<char*>(s.buffer) + s.size);
      std::free(s.buffer);
      arrivals.push_back(std::move(arrival));
      ++ams_arrived;
    }
  };
  auto step = [&](const char* what) {
    drain();
    if (lci::progress().is_retry()) env.wait(what);
  };
  for (std::size_t i = 0; i < actions.size(); ++i) {
    op_state_t& op = ops[i];
    op.action = actions[i];
    for (int k = 0; k < op.action.progress_calls; ++k) step("between posts");
    const message_t& message = program.messages[op.action.message];
    status_t status;
    if (op.action.what == action_t::what_t::recv) {
      op.buffer.assign(receive_capacity, 0);
      do {
        status = lci::post_recv_x(receive_rank(message), op.buffer.data(), op.buffer.size(),
                                  receive_tag(message), cq)
                     .matching_policy(message.policy)
                     .user_context(&op)();
        if (status.is_retry()) step("a receive's retry");
      } while (status.is_retry());
    } else {
      op.buffer.assign(message.size, 0);
      fill_payload(op.buffer, op.action.message);
      do {
        status = op.action.what == action_t::what_t::am
                     ? lci::post_am_x(message.target, op.buffer.data(), message.size, cq, am_rcomp)
                           .tag(message.tag)
                           .user_context(&op)()
                     : lci::post_send_x(message.target, op.buffer.data(), message.size,
                                        message.tag, cq)
                           .matching_policy(message.policy)
                           .user_context(&op)();
        if (status.is_retry()) step("a send's retry");
      } while (status.is_retry());
    }
    if (status.is_done()) complete(op, status);
  }
  auto finished = [&] {
    for (const op_state_t& op : ops) {
      if (op.completions == 0) return false;
    }
    return ams_arrived >= ams_expected;
  };
  while (!finished()) step("the program's completions");
  lci::barrier();
  drain();  // anything delivered twice shows up now
  for (const op_state_t& op : ops) {
    if (op.action.what != action_t::what_t::recv) continue;
    arrival_t arrival;
    arrival.at_rank = me;
    arrival.receive_message = op.action.message;
    arrival.receive_completions = op.completions;
    arrival.buffer_returned = op.status.buffer == op.buffer.data();
    arrival.status = op.status;
    arrival.bytes.assign(op.buffer.begin(), op.buffer.begin() + std::min(op.status.size, receive_capacity));
    arrivals.push_back(std::move(arrival));
  }
  for (const op_state_t& op : ops) {
    if (op.completions != 1) {
      throw std::runtime_error("an operation completed " + std::to_string(op.completions) +
                               " times");
    }
  }
  lci::deregister_rcomp(am_rcomp);
  lci::free_comp(&am_cq);
  lci::free_comp(&cq);
  lci::g_runtime_fina();
}

// ---- the reference matcher ----

bool policy_allows(const message_t& message, int recv_rank, tag_t recv_tag,
                   matching_policy_t recv_policy) {
  if (message.kind != kind_t::send || message.policy != recv_policy) return false;
  const bool rank_ok = recv_policy == matching_policy_t::tag_only ||
                       recv_policy == matching_policy_t::none || recv_rank == message.source;
  const bool tag_ok = recv_policy == matching_policy_t::rank_only ||
                      recv_policy == matching_policy_t::none || recv_tag == message.tag;
  return rank_ok && tag_ok;
}

// Whether `arrival` may carry message `m` by its address and kind; a
// receive must also be one the message's policy allows.
bool may_carry(const program_t& program, const arrival_t& arrival, const message_t& m) {
  if (m.target != arrival.at_rank || (m.kind == kind_t::am) != arrival.is_am) return false;
  if (arrival.is_am) return true;
  const message_t& posted_for = program.messages[arrival.receive_message];
  return policy_allows(m, receive_rank(posted_for), receive_tag(posted_for), posted_for.policy);
}

// The message an arrival carries: named by its first word, or (empty
// messages) any unclaimed one of the same source and tag it may carry, all
// of which are alike. Returns messages.size() when there is none.
std::size_t identify(const program_t& program, const arrival_t& arrival,
                     const std::vector<bool>& claimed) {
  const std::vector<message_t>& messages = program.messages;
  if (arrival.bytes.size() >= sizeof(std::uint64_t)) {
    std::uint64_t index = 0;
    std::memcpy(&index, arrival.bytes.data(), sizeof(index));
    return index < messages.size() ? static_cast<std::size_t>(index) : messages.size();
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const message_t& m = messages[i];
    if (!claimed[i] && m.size == arrival.bytes.size() && m.source == arrival.status.rank &&
        m.tag == arrival.status.tag && may_carry(program, arrival, m)) {
      return i;
    }
  }
  return messages.size();
}

// "" when the outcome is legal; else what is wrong.
std::string check_outcome(const program_t& program, const outcome_t& outcome) {
  const std::vector<message_t>& messages = program.messages;
  std::vector<bool> claimed(messages.size(), false);
  for (const std::vector<arrival_t>& arrivals : outcome.arrivals) {
    for (const arrival_t& arrival : arrivals) {
      const std::string where = "at rank " + std::to_string(arrival.at_rank) +
                                (arrival.is_am ? " (active message)" : " (receive)");
      if (!arrival.is_am && arrival.receive_completions != 1) {
        return "a receive " + where + " completed " +
               std::to_string(arrival.receive_completions) + " times";
      }
      if (!arrival.buffer_returned) return "a receive " + where + ": status.buffer is not its buffer";
      const std::size_t index = identify(program, arrival, claimed);
      if (index == messages.size()) return "an arrival " + where + " is no message sent there";
      const message_t& m = messages[index];
      const std::string which = "message " + std::to_string(index) + " " + where;
      if (claimed[index]) return which + " was delivered twice";
      claimed[index] = true;
      if (!may_carry(program, arrival, m)) {
        return which + " arrived where it may not (sent to rank " + std::to_string(m.target) +
               (arrival.is_am ? ")" : ", met the receive posted for message " +
                                          std::to_string(arrival.receive_message) + ")");
      }
      if (arrival.status.rank != m.source) return which + ": status.rank is wrong";
      if (arrival.status.tag != m.tag) return which + ": status.tag is wrong";
      if (arrival.status.size != m.size) return which + ": status.size is wrong";
      std::vector<char> expected(m.size);
      fill_payload(expected, index);
      if (arrival.bytes != expected) return which + ": the bytes are wrong";
    }
  }
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (!claimed[i]) return "message " + std::to_string(i) + " was never delivered";
  }
  return "";
}

LCI_PROPERTY(RuntimeMatchingProperty, EveryMessageOnceToALegalReceive,
             "runtime matching: random sends, receives and active messages on 2-4 ranks are "
             "each delivered exactly once to a receive their policy allows",
             [] {
               const program_t program = program_gen();
               outcome_t outcome;
               outcome.arrivals.resize(static_cast<std::size_t>(program.ranks_count));
               lci::sim::run_options_t options = lci::sim::default_run_options(program.seed);
               options.log = false;
               const lci::sim::run_report_t report = lci::sim::run_ranks(
                   program.ranks_count, options, [&program, &outcome](lci::sim::rank_env_t& env) {
                     run_rank(env, program, outcome);
                   });
               RC_CLASSIFY(program.messages.size() > 20, "more than 20 messages");
               if (!report.ok) RC_FAIL(report.report);
               const std::string error = check_outcome(program, outcome);
               if (!error.empty()) RC_FAIL(error + " (sim seed " + std::to_string(program.seed) + ")");
             })

}  // namespace
