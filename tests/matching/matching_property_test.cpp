// Random insert sequences against the predicate-based reference model
// (matching_reference_model.hpp), through every policy (rank_tag, rank_only,
// tag_only, none, all four mixed in one table) and a user key function. Ranks
// and tags come from small ranges so keys repeat, and tables are tiny (1-4
// buckets, 0-8 overflow nodes) so the overflow queues, node reuse and
// retry_nomem are all exercised. RapidCheck shrinks a failure to a minimal
// operation sequence.
#include <rapidcheck.h>

#include <string>
#include <vector>

#include "tests/matching/matching_reference_model.hpp"
#include "tests/property/property.hpp"

namespace {

using lci::matching_entry_type_t;
using lci::matching_policy_t;
using lci::matching::testing::driver_t;
using lci::matching::testing::key_mode_name;
using lci::matching::testing::key_mode_t;
using lci::matching::testing::op_t;

rc::Gen<op_t> op_gen() {
  return rc::gen::build<op_t>(
      rc::gen::set(&op_t::type, rc::gen::element(matching_entry_type_t::send,
                                                 matching_entry_type_t::recv)),
      rc::gen::set(&op_t::policy,
                   rc::gen::element(matching_policy_t::rank_tag,
                                    matching_policy_t::rank_only,
                                    matching_policy_t::tag_only,
                                    matching_policy_t::none)),
      rc::gen::set(&op_t::rank, rc::gen::inRange(0, 3)),
      rc::gen::set(&op_t::tag, rc::gen::inRange<lci::tag_t>(0, 4)));
}

LCI_PROPERTY(MatchingProperty, TableAgreesWithPredicateModel,
             "matching table: every policy and a user key function agree with "
             "a FIFO-per-class reference model",
             [] {
               const auto mode = *rc::gen::element(
                   key_mode_t::rank_tag, key_mode_t::rank_only,
                   key_mode_t::tag_only, key_mode_t::none, key_mode_t::mixed,
                   key_mode_t::user);
               const auto buckets_count =
                   *rc::gen::element<std::size_t>(1, 2, 4);
               const auto nodes_max = *rc::gen::inRange<std::size_t>(0, 9);
               const auto ops = *rc::gen::container<std::vector<op_t>>(op_gen());
               RC_CLASSIFY(true, key_mode_name(mode));
               driver_t driver(mode, buckets_count, nodes_max);
               for (const op_t& op : ops) {
                 const std::string error = driver.step(op);
                 if (!error.empty()) RC_FAIL(error);
               }
               RC_TAG(driver.retries_count() > 0 ? "retry_nomem seen"
                                                 : "no retry_nomem");
             })

}  // namespace
