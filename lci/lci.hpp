// LCI: the Lightweight Communication Interface. The one header a program
// includes (`#include "lci.hpp"`); link //lci. The API follows upstream LCI
// 2.x, so programs written for it compile unchanged: every operation
// `op(args...)` also exists as `op_x(args...)` with one chainable setter per
// option, run by `()` (lci/api/lci_api.def lists them all).
#pragma once

// What upstream's lci.hpp includes: programs written for it use these
// without including them (memset, std::function, ...).
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "lci/api/lci_config.hpp"
#include "lci/api/lci_generated.hpp"
#include "lci/api/lci_types.hpp"
#include "lci/comp/comp_impl.hpp"
#include "lci/runtime/global_attr.hpp"

namespace lci {

namespace detail {
comp_impl_t* comp_null_retry_sentinel();
}  // namespace detail

// No completion object: the operation must complete at once (done) or is
// queued on the backlog instead of returning retry.
inline const comp_t COMP_NULL{};
// No completion object, but retry is returned to the caller.
inline const comp_t COMP_NULL_RETRY{detail::comp_null_retry_sentinel()};
// Upstream's older names of the two.
inline const comp_t COMP_NULL_EXPECT_DONE = COMP_NULL;
inline const comp_t COMP_NULL_EXPECT_DONE_OR_RETRY = COMP_NULL_RETRY;
// Host memory, for the mr option: the empty handle (the runtime registers
// what it needs), as upstream's MR_HOST is.
inline const mr_t MR_HOST{};
// Device (GPU) memory: there is no device memory support here, so every
// operation given it throws std::invalid_argument. A sentinel, never a
// registration: is_empty() is true, as for MR_UNKNOWN.
inline const mr_t MR_DEVICE{reinterpret_cast<detail::mr_impl_t*>(detail::mr_device_sentinel)};
// Memory of unknown kind, for the runtime to detect: all memory is host
// memory here, so it means MR_HOST.
inline const mr_t MR_UNKNOWN{reinterpret_cast<detail::mr_impl_t*>(detail::mr_unknown_sentinel)};

namespace detail {
// Whether op_t has a user_context(void*) setter (the post_*_x functors do).
template <typename op_t, typename = void>
struct has_user_context_t : std::false_type {};
template <typename op_t>
struct has_user_context_t<op_t, std::void_t<decltype(std::declval<op_t&>().user_context(
                                    static_cast<void*>(nullptr)))>> : std::true_type {};
}  // namespace detail

// Makes a functor a graph node run when the node runs. A post_*_x functor
// (returning status_t) is given the node as its user_context: a posted
// operation completes the node when it signals the graph (give the graph as
// the functor's local completion object). A functor returning errorcode_t
// completes the node with that code; one returning anything else (void,
// say) completes it when it returns. The graph owns the copy of `op`.
template <typename op_t>
graph_node_t graph_add_node_op(comp_t graph, const op_t& op) {
  using result_t = std::invoke_result_t<op_t&>;
  auto* copy = new op_t(op);
  graph_node_t node = graph_add_node_x(graph, [](void* value) -> status_t {
                        op_t& run = *static_cast<op_t*>(value);
                        if constexpr (std::is_same_v<result_t, status_t> ||
                                      std::is_same_v<result_t, errorcode_t>) {
                          return run();
                        } else {
                          run();
                          return errorcode_t::done;
                        }
                      })
                          .value(copy)
                          .free_cb([](void* value) { delete static_cast<op_t*>(value); })();
  if constexpr (detail::has_user_context_t<op_t>::value) copy->user_context(node);
  return node;
}

}  // namespace lci
