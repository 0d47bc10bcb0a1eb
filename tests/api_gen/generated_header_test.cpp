// The real generated header (from lci/api/lci_api.def): it compiles on its
// own (it is included first), its call_impl signatures are the contract the
// runtime implements, allocating functors have exactly the attribute
// setters the public API lists, and the generated defaults, enum names and
// handles behave. Nothing the runtime defines is linked: neither operator()
// nor an attribute getter (they need call_impl and detail::get_attr) runs.
#include "lci/api/lci_generated.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace {

using namespace lci;
// glibc's <errno.h> declares a global error_t too: name ours in full.

// ---- call_impl signatures: positional args, then the attribute struct in
// place of the attribute options, then other options in description order,
// then the runtime (absent for the [no_runtime] operations). Options of a
// type that owns memory (buffers_t) by const reference.
template <typename Actual, typename Expected>
constexpr bool same_v = std::is_same_v<Actual, Expected>;

static_assert(
    same_v<decltype(&post_comm_x::call_impl),
           status_t (post_comm_x::*)(direction_t, int, void*, size_t, comp_t, device_t, endpoint_t,
                                     packet_pool_t, matching_engine_t, comp_semantic_t, mr_t,
                                     const buffers_t&, uintptr_t, rmr_t, tag_t, rcomp_t, void*,
                                     matching_policy_t, bool, bool, bool, runtime_t) const>);
static_assert(same_v<decltype(&post_send_x::call_impl),
                     status_t (post_send_x::*)(
                         int, void*, size_t, tag_t, comp_t, device_t, endpoint_t, packet_pool_t,
                         matching_engine_t, comp_semantic_t, mr_t, const buffers_t&, void*,
                         matching_policy_t, bool, bool, bool, runtime_t) const>);
static_assert(same_v<decltype(&post_recv_x::call_impl),
                     status_t (post_recv_x::*)(
                         int, void*, size_t, tag_t, comp_t, device_t, endpoint_t, packet_pool_t,
                         matching_engine_t, comp_semantic_t, mr_t, const buffers_t&, void*,
                         matching_policy_t, bool, bool, bool, runtime_t) const>);
static_assert(
    same_v<decltype(&post_am_x::call_impl),
           status_t (post_am_x::*)(int, void*, size_t, comp_t, rcomp_t, device_t, endpoint_t,
                                   packet_pool_t, comp_semantic_t, mr_t, const buffers_t&, tag_t,
                                   void*, bool, bool, bool, runtime_t) const>);
static_assert(same_v<decltype(&post_put_x::call_impl),
                     status_t (post_put_x::*)(int, void*, size_t, comp_t, uintptr_t, rmr_t,
                                              device_t, endpoint_t, packet_pool_t, comp_semantic_t,
                                              mr_t, const buffers_t&, tag_t, rcomp_t, void*, bool,
                                              bool, bool, runtime_t) const>);
static_assert(same_v<decltype(&post_get_x::call_impl),
                     status_t (post_get_x::*)(int, void*, size_t, comp_t, uintptr_t, rmr_t,
                                              device_t, endpoint_t, packet_pool_t, comp_semantic_t,
                                              mr_t, const buffers_t&, tag_t, rcomp_t, void*, bool,
                                              bool, bool, runtime_t) const>);
static_assert(same_v<decltype(&alloc_device_x::call_impl),
                     device_t (alloc_device_x::*)(const attr_device_t&, net_context_t,
                                                  packet_pool_t, runtime_t) const>);
static_assert(same_v<decltype(&alloc_sync_x::call_impl),
                     comp_t (alloc_sync_x::*)(const attr_comp_t&, runtime_t) const>);
static_assert(same_v<decltype(&alloc_cq_x::call_impl),
                     comp_t (alloc_cq_x::*)(const attr_comp_t&, runtime_t) const>);
static_assert(same_v<decltype(&alloc_handler_x::call_impl),
                     comp_t (alloc_handler_x::*)(comp_handler_t, const attr_comp_t&,
                                                 runtime_t) const>);
static_assert(same_v<decltype(&alloc_graph_x::call_impl),
                     comp_t (alloc_graph_x::*)(const attr_comp_t&, comp_t, runtime_t) const>);
static_assert(same_v<decltype(&alloc_runtime_x::call_impl),
                     runtime_t (alloc_runtime_x::*)(const attr_runtime_t&) const>);
static_assert(same_v<decltype(&g_runtime_init_x::call_impl),
                     runtime_t (g_runtime_init_x::*)(const attr_runtime_t&) const>);
static_assert(same_v<decltype(&g_runtime_fina_x::call_impl), void (g_runtime_fina_x::*)() const>);
static_assert(same_v<decltype(&free_runtime_x::call_impl),
                     void (free_runtime_x::*)(runtime_t*) const>);
static_assert(same_v<decltype(&sync_wait_x::call_impl),
                     void (sync_wait_x::*)(comp_t, status_t*, bool, device_t, runtime_t) const>);
static_assert(same_v<decltype(&progress_x::call_impl),
                     lci::error_t (progress_x::*)(device_t, endpoint_t, runtime_t) const>);
static_assert(same_v<decltype(&barrier_x::call_impl),
                     void (barrier_x::*)(device_t, endpoint_t, matching_engine_t,
                                         comp_semantic_t, comp_t, runtime_t) const>);
static_assert(same_v<decltype(&register_memory_x::call_impl),
                     mr_t (register_memory_x::*)(void*, size_t, device_t, runtime_t) const>);
static_assert(same_v<decltype(&graph_add_node_x::call_impl),
                     graph_node_t (graph_add_node_x::*)(comp_t, graph_node_run_cb_t, void*,
                                                        graph_node_free_cb_t, runtime_t) const>);
static_assert(same_v<decltype(&matching_engine_insert_x::call_impl),
                     matching_entry_val_t (matching_engine_insert_x::*)(
                         matching_engine_t, matching_entry_key_t, matching_entry_val_t,
                         matching_entry_type_t, runtime_t) const>);
// The raw network layer: upstream's positional arguments, then its options
// (device; endpoint for the posts to a peer; imm_data where the network
// carries it; user_context), then the runtime.
static_assert(same_v<decltype(&net_poll_cq_x::call_impl),
                     size_t (net_poll_cq_x::*)(size_t, net_status_t*, device_t, runtime_t) const>);
static_assert(same_v<decltype(&net_post_recv_x::call_impl),
                     lci::error_t (net_post_recv_x::*)(void*, size_t, mr_t, device_t, void*,
                                                       runtime_t) const>);
static_assert(same_v<decltype(&net_post_sends_x::call_impl),
                     lci::error_t (net_post_sends_x::*)(int, void*, size_t, device_t, endpoint_t,
                                                        net_imm_data_t, void*, runtime_t) const>);
static_assert(same_v<decltype(&net_post_send_x::call_impl),
                     lci::error_t (net_post_send_x::*)(int, void*, size_t, mr_t, device_t,
                                                       endpoint_t, net_imm_data_t, void*,
                                                       runtime_t) const>);
static_assert(same_v<decltype(&net_post_puts_x::call_impl),
                     lci::error_t (net_post_puts_x::*)(int, void*, size_t, uint64_t, rmr_t,
                                                       device_t, endpoint_t, void*, runtime_t) const>);
static_assert(same_v<decltype(&net_post_put_x::call_impl),
                     lci::error_t (net_post_put_x::*)(int, void*, size_t, mr_t, uint64_t, rmr_t,
                                                      device_t, endpoint_t, void*, runtime_t) const>);
static_assert(same_v<decltype(&net_post_putImms_x::call_impl),
                     lci::error_t (net_post_putImms_x::*)(int, void*, size_t, uint64_t, rmr_t,
                                                          device_t, endpoint_t, net_imm_data_t,
                                                          void*, runtime_t) const>);
static_assert(same_v<decltype(&net_post_putImm_x::call_impl),
                     lci::error_t (net_post_putImm_x::*)(int, void*, size_t, mr_t, uint64_t, rmr_t,
                                                         device_t, endpoint_t, net_imm_data_t,
                                                         void*, runtime_t) const>);
static_assert(same_v<decltype(&net_post_get_x::call_impl),
                     lci::error_t (net_post_get_x::*)(int, void*, size_t, mr_t, uint64_t, rmr_t,
                                                      device_t, endpoint_t, void*, runtime_t) const>);

// ---- setters: detection of a setter by name, for a given functor.
#define LCI_TEST_HAS_SETTER(setter, argument)                                           \
  template <typename T, typename = void>                                                \
  struct has_##setter : std::false_type {};                                             \
  template <typename T>                                                                 \
  struct has_##setter<T, std::void_t<decltype(std::declval<T&>().setter(argument))>> \
      : std::true_type {}

LCI_TEST_HAS_SETTER(threshold, 1);
LCI_TEST_HAS_SETTER(zero_copy_am, true);
LCI_TEST_HAS_SETTER(default_length, 1);
LCI_TEST_HAS_SETTER(cq_type, attr_cq_type_t::lcrq);
LCI_TEST_HAS_SETTER(name, "x");
LCI_TEST_HAS_SETTER(user_context, nullptr);
LCI_TEST_HAS_SETTER(runtime, runtime_t());
LCI_TEST_HAS_SETTER(backend, attr_backend_t::sim);
LCI_TEST_HAS_SETTER(comp, comp_t());

// Only the attributes the public API lists as options of each operation.
static_assert(has_threshold<alloc_sync_x>::value && has_zero_copy_am<alloc_sync_x>::value &&
              has_name<alloc_sync_x>::value && has_user_context<alloc_sync_x>::value);
static_assert(!has_default_length<alloc_sync_x>::value && !has_cq_type<alloc_sync_x>::value);
static_assert(has_default_length<alloc_cq_x>::value && has_cq_type<alloc_cq_x>::value &&
              has_zero_copy_am<alloc_cq_x>::value && !has_threshold<alloc_cq_x>::value);
static_assert(has_name<alloc_counter_x>::value && !has_threshold<alloc_counter_x>::value &&
              !has_zero_copy_am<alloc_counter_x>::value);
static_assert(has_zero_copy_am<alloc_handler_x>::value && !has_threshold<alloc_handler_x>::value);
static_assert(has_comp<alloc_graph_x>::value && has_name<alloc_graph_x>::value &&
              !has_zero_copy_am<alloc_graph_x>::value);
// The runtime's backend is an attribute but not an option of alloc_runtime;
// the net context's is both.
static_assert(!has_backend<alloc_runtime_x>::value && has_backend<alloc_net_context_x>::value);
// [no_runtime] operations take no runtime option; the others do.
static_assert(!has_runtime<alloc_runtime_x>::value && !has_runtime<g_runtime_init_x>::value &&
              !has_runtime<get_g_runtime_x>::value && !has_runtime<free_runtime_x>::value);
static_assert(has_runtime<alloc_sync_x>::value && has_runtime<barrier_x>::value);

// Setters chain by reference, in any order.
static_assert(same_v<decltype(std::declval<post_send_x&>().device(device_t())), post_send_x&>);

TEST(GeneratedHeaderTest, FunctorsChainSetters) {
  int buffer = 0;
  post_send_x send(1, &buffer, sizeof(buffer), 7, comp_t());
  post_send_x& chained = send.matching_policy(matching_policy_t::rank_only)
                             .device(device_t())
                             .allow_retry(false)
                             .user_context(&buffer);
  EXPECT_EQ(&chained, &send);
  alloc_device_x device;
  EXPECT_EQ(&device.net_max_sends(16).packet_pool(packet_pool_t()).name("d"), &device);
}

TEST(GeneratedHeaderTest, DefaultAttributesMatchTheDescription) {
  const attr_runtime_t runtime = detail::get_default_attr_runtime();
  EXPECT_EQ(runtime.packet_return_threshold, 0u);
  EXPECT_EQ(runtime.imm_nbits_tag, 16);
  EXPECT_EQ(runtime.imm_nbits_rcomp, 15);
  EXPECT_EQ(runtime.rdv_protocol, attr_rdv_protocol_t::auto_select);
  EXPECT_TRUE(runtime.alloc_default_device);
  EXPECT_TRUE(runtime.alloc_default_packet_pool);
  EXPECT_TRUE(runtime.alloc_default_matching_engine);
  EXPECT_STREQ(runtime.name, "unnamed");
  EXPECT_EQ(runtime.name, DEFAULT_NAME);
  EXPECT_EQ(runtime.device_name, "");
  EXPECT_EQ(runtime.backend, attr_backend_t::none);

  const attr_net_context_t net_context = detail::get_default_attr_net_context();
  EXPECT_EQ(net_context.backend, attr_backend_t::none);
  EXPECT_EQ(net_context.ibv_gid_idx, -1);
  EXPECT_EQ(net_context.ibv_odp_strategy, attr_ibv_odp_strategy_t::none);
  EXPECT_EQ(net_context.ibv_prefetch_strategy, attr_ibv_prefetch_strategy_t::none);
  EXPECT_FALSE(net_context.use_dmabuf);
  EXPECT_FALSE(net_context.support_putimm);  // output: the runtime sets it

  const attr_device_t device = detail::get_default_attr_device();
  EXPECT_EQ(device.net_max_sends, 0u);
  EXPECT_EQ(device.net_send_reserved_pct, 0.25);
  EXPECT_EQ(device.ofi_lock_mode, 0u);
  EXPECT_TRUE(device.alloc_default_endpoint);
  EXPECT_FALSE(device.alloc_progress_endpoint);
  EXPECT_EQ(device.ibv_td_strategy, attr_ibv_td_strategy_t::none);
  EXPECT_EQ(device.uid, -1);
  EXPECT_EQ(detail::get_default_attr_endpoint().uid, -1);

  EXPECT_EQ(detail::get_default_attr_matching_engine().matching_engine_type,
            attr_matching_engine_type_t::map);

  const attr_comp_t comp = detail::get_default_attr_comp();
  EXPECT_EQ(comp.threshold, 1);
  EXPECT_FALSE(comp.zero_copy_am);
  EXPECT_EQ(comp.default_length, 0);
  EXPECT_EQ(comp.cq_type, attr_cq_type_t::array_atomic);
  EXPECT_EQ(comp.comp_type, attr_comp_type_t::custom);
}

// LCI_ATTR_RDV_PROTOCOL takes upstream's three names, auto_select included.
TEST(GeneratedHeaderTest, RdvProtocolFromTheEnvironment) {
  for (const char* name : {"write", "auto_select", "writeimm"}) {
    ASSERT_EQ(setenv("LCI_ATTR_RDV_PROTOCOL", name, 1), 0);
    EXPECT_STREQ(get_attr_rdv_protocol_str(detail::get_default_attr_runtime().rdv_protocol), name);
  }
  ASSERT_EQ(unsetenv("LCI_ATTR_RDV_PROTOCOL"), 0);
}

// Output attributes: reported by the handle, never options of the
// allocating functors (the runtime sets them).
template <typename functor_t, typename = void>
struct has_uid_setter_t : std::false_type {};
template <typename functor_t>
struct has_uid_setter_t<functor_t, std::void_t<decltype(std::declval<functor_t&>().uid(0))>>
    : std::true_type {};
template <typename functor_t, typename = void>
struct has_comp_type_setter_t : std::false_type {};
template <typename functor_t>
struct has_comp_type_setter_t<
    functor_t, std::void_t<decltype(std::declval<functor_t&>().comp_type(attr_comp_type_t::cq))>>
    : std::true_type {};
static_assert(!has_uid_setter_t<alloc_device_x>::value);
static_assert(!has_uid_setter_t<alloc_endpoint_x>::value);
static_assert(!has_comp_type_setter_t<alloc_sync_x>::value);
static_assert(!has_comp_type_setter_t<alloc_cq_x>::value);
static_assert(std::is_same_v<decltype(device_t().get_attr_uid()), int>);
static_assert(std::is_same_v<decltype(endpoint_t().get_attr_uid()), int>);
static_assert(std::is_same_v<decltype(net_context_t().get_attr_support_putimm()), bool>);
static_assert(std::is_same_v<decltype(comp_t().get_attr_comp_type()), attr_comp_type_t>);

// Upstream's spellings of the attribute structs.
static_assert(std::is_same_v<runtime_attr_t, attr_runtime_t>);
static_assert(std::is_same_v<net_context_attr_t, attr_net_context_t>);
static_assert(std::is_same_v<device_attr_t, attr_device_t>);
static_assert(std::is_same_v<endpoint_attr_t, attr_endpoint_t>);
static_assert(std::is_same_v<packet_pool_attr_t, attr_packet_pool_t>);
static_assert(std::is_same_v<matching_engine_attr_t, attr_matching_engine_t>);
static_assert(std::is_same_v<comp_attr_t, attr_comp_t>);
static_assert(std::is_same_v<device_t::attr_t, attr_device_t>);
static_assert(std::is_same_v<comp_t::attr_t, attr_comp_t>);
static_assert(std::is_same_v<decltype(device_t().get_attr()), attr_device_t>);
static_assert(std::is_same_v<decltype(runtime_t().get_attr()), attr_runtime_t>);

template <typename E>
void expect_round_trip(const char* (*to_str)(E), bool (*parse)(const char*, E*),
                       std::initializer_list<std::pair<E, const char*>> values) {
  for (const auto& [value, name] : values) {
    EXPECT_STREQ(to_str(value), name);
    // Start from another value, so a parse that writes nothing is caught.
    E parsed = value == values.begin()->first ? (values.end() - 1)->first : values.begin()->first;
    ASSERT_TRUE(parse(name, &parsed)) << name;
    EXPECT_EQ(parsed, value) << name;
  }
}

TEST(GeneratedHeaderTest, EnumNamesRoundTrip) {
  expect_round_trip<attr_backend_t>(&get_attr_backend_str, &detail::parse_attr_backend,
                                    {{attr_backend_t::none, "none"},
                                     {attr_backend_t::sim, "sim"},
                                     {attr_backend_t::ofi, "ofi"},
                                     {attr_backend_t::ibv, "ibv"}});
  expect_round_trip<attr_rdv_protocol_t>(
      &get_attr_rdv_protocol_str, &detail::parse_attr_rdv_protocol,
      {{attr_rdv_protocol_t::auto_select, "auto_select"},
       {attr_rdv_protocol_t::write, "write"},
       {attr_rdv_protocol_t::writeimm, "writeimm"}});
  // Upstream's order: programs that store the value as an int agree.
  static_assert(static_cast<int>(attr_rdv_protocol_t::auto_select) == 0);
  static_assert(static_cast<int>(attr_rdv_protocol_t::writeimm) == 2);
  expect_round_trip<attr_comp_type_t>(&get_attr_comp_type_str, &detail::parse_attr_comp_type,
                                      {{attr_comp_type_t::sync, "sync"},
                                       {attr_comp_type_t::counter, "counter"},
                                       {attr_comp_type_t::cq, "cq"},
                                       {attr_comp_type_t::handler, "handler"},
                                       {attr_comp_type_t::graph, "graph"},
                                       {attr_comp_type_t::custom, "custom"}});
  expect_round_trip<attr_cq_type_t>(
      &get_attr_cq_type_str, &detail::parse_attr_cq_type,
      {{attr_cq_type_t::array_atomic, "array_atomic"}, {attr_cq_type_t::lcrq, "lcrq"}});
  expect_round_trip<attr_matching_engine_type_t>(
      &get_attr_matching_engine_type_str, &detail::parse_attr_matching_engine_type,
      {{attr_matching_engine_type_t::queue, "queue"}, {attr_matching_engine_type_t::map, "map"}});
  expect_round_trip<attr_ibv_odp_strategy_t>(
      &get_attr_ibv_odp_strategy_str, &detail::parse_attr_ibv_odp_strategy,
      {{attr_ibv_odp_strategy_t::none, "none"},
       {attr_ibv_odp_strategy_t::explicit_odp, "explicit_odp"},
       {attr_ibv_odp_strategy_t::implicit_odp, "implicit_odp"}});
  expect_round_trip<attr_ibv_prefetch_strategy_t>(
      &get_attr_ibv_prefetch_strategy_str, &detail::parse_attr_ibv_prefetch_strategy,
      {{attr_ibv_prefetch_strategy_t::none, "none"},
       {attr_ibv_prefetch_strategy_t::prefetch, "prefetch"},
       {attr_ibv_prefetch_strategy_t::prefetch_write, "prefetch_write"},
       {attr_ibv_prefetch_strategy_t::prefetch_no_fault, "prefetch_no_fault"}});
  expect_round_trip<attr_ibv_td_strategy_t>(
      &get_attr_ibv_td_strategy_str, &detail::parse_attr_ibv_td_strategy,
      {{attr_ibv_td_strategy_t::none, "none"},
       {attr_ibv_td_strategy_t::all_qp, "all_qp"},
       {attr_ibv_td_strategy_t::per_qp, "per_qp"}});
}

TEST(GeneratedHeaderTest, EmptyHandlesAreRefused) {
  const device_t device;
  EXPECT_TRUE(device.is_empty());
  try {
    (void)device.get_impl();
    ADD_FAILURE() << "an empty device_t gave its impl";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "device_t: empty handle");
  }
  EXPECT_THROW((void)comp_t().get_impl(), std::invalid_argument);
  EXPECT_THROW((void)mr_t().get_impl(), std::invalid_argument);
  // mr_t's sentinels (lci.hpp's MR_DEVICE, MR_UNKNOWN) are empty too, so
  // get_impl() never hands them out; 3 is the first real pointer value.
  for (std::uintptr_t sentinel : {detail::mr_device_sentinel, detail::mr_unknown_sentinel}) {
    const mr_t mr(reinterpret_cast<detail::mr_impl_t*>(sentinel));
    EXPECT_TRUE(mr.is_empty());
    EXPECT_THROW((void)mr.get_impl(), std::invalid_argument);
  }
  EXPECT_FALSE(mr_t(reinterpret_cast<detail::mr_impl_t*>(std::uintptr_t{3})).is_empty());
  EXPECT_FALSE(device_t(reinterpret_cast<detail::device_impl_t*>(std::uintptr_t{1})).is_empty());
  EXPECT_TRUE(runtime_t() == runtime_t());
}

// Handles as upstream's programs make and compare them: from the
// implementation pointer by upstream's class name, from a void*, from
// nullptr; each one pointer wide, so programs store and ship them raw.
static_assert(std::is_convertible_v<void*, comp_t> && std::is_convertible_v<std::nullptr_t, comp_t>);
static_assert(std::is_convertible_v<lci::mr_impl_t*, mr_t>);
static_assert(std::is_same_v<decltype(mr_t().p_impl), lci::mr_impl_t*>);
static_assert(sizeof(mr_t) == sizeof(void*) && sizeof(comp_t) == sizeof(void*));

TEST(GeneratedHeaderTest, HandlesFromPointersAndNullptr) {
  const comp_t none = nullptr;
  EXPECT_TRUE(none == nullptr);
  EXPECT_TRUE(none.is_empty());
  int object = 0;
  const comp_t some(static_cast<void*>(&object));
  EXPECT_FALSE(some == nullptr);
  EXPECT_EQ(static_cast<void*>(some.p_impl), static_cast<void*>(&object));
  // Reconverse keeps one lci::mr_impl_t* per device and rebuilds the mr_t.
  lci::mr_impl_t* const kept[] = {reinterpret_cast<lci::mr_impl_t*>(&object)};
  const mr_t rebuilt = lci::mr_t(kept[0]);
  EXPECT_EQ(rebuilt.p_impl, kept[0]);
  EXPECT_FALSE(rebuilt.is_empty());
}

// The description's refusals reach the generated finder: one attribute of
// each refusal, refused away from its default, with the value as text;
// the ibv ones only where the network does not read ibv attributes.
TEST(GeneratedHeaderTest, RefusedAttributesAreFound) {
  detail::refused_attr_t refused;
  attr_device_t device;
  EXPECT_FALSE(detail::find_refused(device, /*network_reads_ibv=*/false, &refused));
  device.shm_ring_size = 64;
  ASSERT_TRUE(detail::find_refused(device, false, &refused));
  EXPECT_STREQ(refused.name, "shm_ring_size");
  EXPECT_EQ(refused.value, "64");
  EXPECT_NE(std::strstr(refused.reason, "shared-memory"), nullptr);

  device = attr_device_t{};
  device.ibv_td_strategy = attr_ibv_td_strategy_t::per_qp;
  EXPECT_FALSE(detail::find_refused(device, /*network_reads_ibv=*/true, &refused));
  ASSERT_TRUE(detail::find_refused(device, /*network_reads_ibv=*/false, &refused));
  EXPECT_EQ(refused.value, "per_qp");

  attr_net_context_t net_context;
  net_context.use_dmabuf = true;
  ASSERT_TRUE(detail::find_refused(net_context, true, &refused));
  EXPECT_STREQ(refused.name, "use_dmabuf");

  attr_matching_engine_t engine;
  engine.matching_engine_type = attr_matching_engine_type_t::queue;
  ASSERT_TRUE(detail::find_refused(engine, true, &refused));
  EXPECT_EQ(refused.value, "queue");

  // Attributes the runtime acts on are never refused.
  device = attr_device_t{};
  device.net_max_sends = 64;
  device.ofi_lock_mode = 1;
  EXPECT_FALSE(detail::find_refused(device, false, &refused));
}

// The runtime's defaults: a row per network kind (runtime_impl.cpp holds
// the real row to lci_config.hpp's LCI_PACKET_*_DEFAULT at compile time).
TEST(GeneratedHeaderTest, RuntimeDefaultsHaveTwoRows) {
  EXPECT_EQ(&detail::runtime_defaults(/*simulated=*/true), &detail::runtime_defaults_sim);
  EXPECT_EQ(&detail::runtime_defaults(/*simulated=*/false), &detail::runtime_defaults_real);
  // A simulated rank shares its process with hundreds: it never takes more.
  EXPECT_LE(detail::runtime_defaults_sim.npackets, detail::runtime_defaults_real.npackets);
  EXPECT_LE(detail::runtime_defaults_sim.cq_default_length,
            detail::runtime_defaults_real.cq_default_length);
}

}  // namespace
