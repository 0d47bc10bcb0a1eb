// The public operations on completion objects (paper §3.2) and remote
// completion handles: allocation, sync/cq/counter/graph access, signalling.
#include <memory>
#include <stdexcept>
#include <string>

#include "lci/api/lci_generated.hpp"
#include "lci/comp/counter.hpp"
#include "lci/comp/cq.hpp"
#include "lci/comp/graph.hpp"
#include "lci/comp/handler.hpp"
#include "lci/comp/sync.hpp"
#include "lci/progress/progress.hpp"
#include "lci/runtime/resolve.hpp"
#include "lci/util/assert.hpp"

namespace lci {

namespace detail {

namespace {

// The comp_type output attribute of a completion object of `kind`.
attr_comp_type_t comp_type_of(comp_kind_t kind) {
  switch (kind) {
    case comp_kind_t::sync: return attr_comp_type_t::sync;
    case comp_kind_t::counter: return attr_comp_type_t::counter;
    case comp_kind_t::cq: return attr_comp_type_t::cq;
    case comp_kind_t::handler: return attr_comp_type_t::handler;
    case comp_kind_t::graph: return attr_comp_type_t::graph;
    case comp_kind_t::waiter: break;  // a post's own, never adopted as a user's
    case comp_kind_t::custom: break;  // a program's own, never allocated here
  }
  LCI_ASSERT(false, "a completion object of no known kind");
  return attr_comp_type_t::custom;
}

comp_t adopt(runtime_t runtime, std::unique_ptr<comp_impl_t> comp, const attr_comp_t& attr) {
  comp->attr = attr;
  comp->attr.comp_type = comp_type_of(comp->kind());
  return comp_t(resolve_runtime(runtime).adopt_comp(std::move(comp)));
}

}  // namespace

// The object's own attributes (upstream keeps them there too), so that a
// program's object has them as well.
const attr_comp_t& get_attr(const comp_impl_t* impl) { return impl->attr; }

}  // namespace detail

using detail::resolve_runtime;

comp_t alloc_sync_x::call_impl(const attr_comp_t& attr, runtime_t runtime) const {
  return detail::adopt(runtime, std::make_unique<detail::sync_impl_t>(attr.threshold), attr);
}

bool sync_test_x::call_impl(comp_t comp, status_t* p_out, runtime_t runtime) const {
  (void)runtime;
  return static_cast<detail::sync_impl_t&>(
             detail::expect_comp(comp, detail::comp_kind_t::sync, "sync_test"))
      .test(p_out);
}

void sync_wait_x::call_impl(comp_t comp, status_t* p_out, bool do_progress, device_t device,
                            runtime_t runtime) const {
  auto& sync = static_cast<detail::sync_impl_t&>(
      detail::expect_comp(comp, detail::comp_kind_t::sync, "sync_wait"));
  detail::runtime_impl_t& rt = resolve_runtime(runtime);
  detail::device_impl_t* d = do_progress ? &detail::resolve_device(rt, device) : nullptr;
  detail::wait_progressing(sync, p_out, d, rt.host(), "sync_wait");
}

comp_t alloc_counter_x::call_impl(const attr_comp_t& attr, runtime_t runtime) const {
  return detail::adopt(runtime, std::make_unique<detail::counter_impl_t>(), attr);
}

int64_t counter_get_x::call_impl(comp_t comp, runtime_t runtime) const {
  (void)runtime;
  return static_cast<detail::counter_impl_t&>(
             detail::expect_comp(comp, detail::comp_kind_t::counter, "counter_get"))
      .get();
}

void counter_set_x::call_impl(comp_t comp, int64_t value, runtime_t runtime) const {
  (void)runtime;
  static_cast<detail::counter_impl_t&>(
      detail::expect_comp(comp, detail::comp_kind_t::counter, "counter_set"))
      .set(value);
}

comp_t alloc_cq_x::call_impl(const attr_comp_t& attr_in, runtime_t runtime) const {
  attr_comp_t attr = attr_in;
  if (attr.default_length == 0) {
    attr.default_length = static_cast<int>(
        detail::runtime_defaults_of(&resolve_runtime(runtime).host()).cq_default_length);
  }
  const detail::cq_kind_t kind = attr.cq_type == attr_cq_type_t::lcrq
                                     ? detail::cq_kind_t::lcrq
                                     : detail::cq_kind_t::array_atomic;
  return detail::adopt(runtime, std::make_unique<detail::cq_impl_t>(kind, attr.default_length),
                       attr);
}

status_t cq_pop_x::call_impl(comp_t comp, runtime_t runtime) const {
  (void)runtime;
  return static_cast<detail::cq_impl_t&>(
             detail::expect_comp(comp, detail::comp_kind_t::cq, "cq_pop"))
      .pop();
}

comp_t alloc_handler_x::call_impl(comp_handler_t handler, const attr_comp_t& attr,
                                  runtime_t runtime) const {
  return detail::adopt(runtime, std::make_unique<detail::handler_impl_t>(handler), attr);
}

comp_t alloc_graph_x::call_impl(const attr_comp_t& attr, comp_t comp, runtime_t runtime) const {
  return detail::adopt(runtime, std::make_unique<detail::graph_impl_t>(detail::resolve_comp(comp)),
                       attr);
}

graph_node_t graph_add_node_x::call_impl(comp_t comp, graph_node_run_cb_t fn, void* value,
                                         graph_node_free_cb_t free_cb, runtime_t runtime) const {
  (void)runtime;
  return static_cast<detail::graph_impl_t&>(
             detail::expect_comp(comp, detail::comp_kind_t::graph, "graph_add_node"))
      .add_node(fn, value, free_cb);
}

void graph_add_edge_x::call_impl(comp_t comp, graph_node_t src, graph_node_t dst,
                                 graph_edge_run_cb_t fn, runtime_t runtime) const {
  (void)runtime;
  static_cast<detail::graph_impl_t&>(
      detail::expect_comp(comp, detail::comp_kind_t::graph, "graph_add_edge"))
      .add_edge(src, dst, fn);
}

void graph_node_mark_complete_x::call_impl(graph_node_t node, status_t status,
                                           runtime_t runtime) const {
  (void)runtime;
  detail::graph_impl_t::graph_of(node)->mark_complete(node, status);
}

void graph_start_x::call_impl(comp_t comp, runtime_t runtime) const {
  (void)runtime;
  static_cast<detail::graph_impl_t&>(
      detail::expect_comp(comp, detail::comp_kind_t::graph, "graph_start"))
      .start();
}

status_t graph_test_x::call_impl(comp_t comp, runtime_t runtime) const {
  (void)runtime;
  return static_cast<detail::graph_impl_t&>(
             detail::expect_comp(comp, detail::comp_kind_t::graph, "graph_test"))
      .test();
}

void comp_signal_x::call_impl(comp_t comp, status_t status, runtime_t runtime) const {
  (void)runtime;
  detail::comp_impl_t* impl = detail::resolve_comp(comp);
  if (impl == nullptr) throw std::invalid_argument("comp_signal: comp is empty (COMP_NULL)");
  impl->signal(status);
}

void free_comp_x::call_impl(comp_t* comp, runtime_t runtime) const {
  if (comp == nullptr || detail::resolve_comp(*comp) == nullptr) {
    throw std::invalid_argument("free_comp: comp is empty (freed twice?)");
  }
  detail::comp_impl_t* const impl = comp->p_impl;
  // Not impl->kind(): a stale copy of a freed handle points at freed memory.
  if (detail::custom_comps_t::contains(impl)) {
    delete impl;  // a program's own object (comp_impl.hpp, Ownership)
  } else if (!detail::free_outlived_comp(impl)) {
    resolve_runtime(runtime).free_comp(impl);
  }
  comp->p_impl = nullptr;
}

rcomp_t reserve_rcomps_x::call_impl(rcomp_t n, runtime_t runtime) const {
  return resolve_runtime(runtime).reserve_rcomps(n);
}

rcomp_t register_rcomp_x::call_impl(comp_t comp, rcomp_t rcomp, runtime_t runtime) const {
  detail::comp_impl_t* impl = detail::resolve_comp(comp);
  // COMP_NULL: a target that wants no completion (runtime_impl_t::discard_comp).
  if (impl == nullptr) impl = detail::discard_comp();
  return resolve_runtime(runtime).register_rcomp(impl, rcomp);
}

void deregister_rcomp_x::call_impl(rcomp_t rcomp, runtime_t runtime) const {
  resolve_runtime(runtime).deregister_rcomp(rcomp);
}

}  // namespace lci
