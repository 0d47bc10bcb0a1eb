// The generated functors, handles, enums and default attributes, on the
// small description test_api.def (generated into namespace lci_api_test).
// call_impl and get_attr are defined here and record what they receive, so
// each test sees exactly the arguments the generated code passes on.
#include "tests/api_gen/test_api_generated.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace lci_api_test {

namespace detail {

class runtime_impl_t {
 public:
  attr_runtime_t attr;
};

class widget_impl_t {
 public:
  attr_widget_t attr;
};

const attr_runtime_t& get_attr(const runtime_impl_t* impl) { return impl->attr; }
const attr_widget_t& get_attr(const widget_impl_t* impl) { return impl->attr; }

}  // namespace detail

namespace {

struct alloc_widget_call_t {
  int seed = 0;
  attr_widget_t attr;
  widget_t peer;
  runtime_t runtime;
};

struct poke_call_t {
  int rank = 0;
  void* buffer = nullptr;
  tag_t tag = 0;
  bool flag = false;
  double scale = 0;
  widget_t target;
  comp_semantic_t semantic = comp_semantic_t::memory;
  runtime_t runtime;
};

// The last call of each operation; alloc_widget also allocates its widget
// here so the returned handle has attributes to read back.
alloc_widget_call_t last_alloc_widget;
poke_call_t last_poke;
detail::widget_impl_t allocated_widget;

// Distinct objects whose addresses serve as non-empty handles.
detail::widget_impl_t widget_a;
detail::runtime_impl_t runtime_a;

std::string text_of(const char* text) { return text == nullptr ? "(null)" : text; }

// The names of the fields in which two recorded calls differ.
std::vector<std::string> differing_fields(const attr_widget_t& a, const attr_widget_t& b) {
  std::vector<std::string> fields;
  if (a.count != b.count) fields.push_back("count");
  if (a.mask != b.mask) fields.push_back("mask");
  if (a.level != b.level) fields.push_back("level");
  if (a.ratio != b.ratio) fields.push_back("ratio");
  if (a.enabled != b.enabled) fields.push_back("enabled");
  if (a.label != b.label) fields.push_back("label");
  if (text_of(a.tag_name) != text_of(b.tag_name)) fields.push_back("tag_name");
  if (a.shade != b.shade) fields.push_back("shade");
  if (a.user_context != b.user_context) fields.push_back("user_context");
  return fields;
}

std::vector<std::string> differing_fields(const alloc_widget_call_t& a,
                                          const alloc_widget_call_t& b) {
  std::vector<std::string> fields = differing_fields(a.attr, b.attr);
  if (a.seed != b.seed) fields.push_back("seed");
  if (a.peer != b.peer) fields.push_back("peer");
  if (a.runtime != b.runtime) fields.push_back("runtime");
  return fields;
}

std::vector<std::string> differing_fields(const poke_call_t& a, const poke_call_t& b) {
  std::vector<std::string> fields;
  if (a.rank != b.rank) fields.push_back("rank");
  if (a.buffer != b.buffer) fields.push_back("buffer");
  if (a.tag != b.tag) fields.push_back("tag");
  if (a.flag != b.flag) fields.push_back("flag");
  if (a.scale != b.scale) fields.push_back("scale");
  if (a.target != b.target) fields.push_back("target");
  if (a.semantic != b.semantic) fields.push_back("semantic");
  if (a.runtime != b.runtime) fields.push_back("runtime");
  return fields;
}

}  // namespace

widget_t alloc_widget_x::call_impl(int seed, const attr_widget_t& attr, widget_t peer,
                                   runtime_t runtime) const {
  last_alloc_widget = alloc_widget_call_t{seed, attr, peer, runtime};
  allocated_widget.attr = attr;
  return widget_t(&allocated_widget);
}

status_t poke_x::call_impl(int rank, void* buffer, tag_t tag, bool flag, double scale,
                           widget_t target, comp_semantic_t semantic, runtime_t runtime) const {
  last_poke = poke_call_t{rank, buffer, tag, flag, scale, target, semantic, runtime};
  status_t status(errorcode_t::done);
  status.rank = rank;
  status.buffer = buffer;
  status.tag = tag;
  return status;
}

namespace {

// The generated call_impl signatures: positional arguments, then the
// attribute struct in place of the attribute options, then the other
// options in description order, then the runtime.
static_assert(std::is_same_v<decltype(&alloc_widget_x::call_impl),
                             widget_t (alloc_widget_x::*)(int, const attr_widget_t&, widget_t,
                                                          runtime_t) const>);
static_assert(std::is_same_v<decltype(&poke_x::call_impl),
                             status_t (poke_x::*)(int, void*, tag_t, bool, double, widget_t,
                                                  comp_semantic_t, runtime_t) const>);

// Only the attributes listed in `attrs` get a setter: user_context is an
// attribute of widget but not an option of alloc_widget.
template <typename T, typename = void>
struct has_user_context_setter : std::false_type {};
template <typename T>
struct has_user_context_setter<
    T, std::void_t<decltype(std::declval<T&>().user_context(nullptr))>> : std::true_type {};
template <typename T, typename = void>
struct has_count_setter : std::false_type {};
template <typename T>
struct has_count_setter<T, std::void_t<decltype(std::declval<T&>().count(1))>>
    : std::true_type {};
static_assert(!has_user_context_setter<alloc_widget_x>::value);
static_assert(has_count_setter<alloc_widget_x>::value);
static_assert(!has_count_setter<poke_x>::value);

// Every LCI_ATTR_* variable the widget reads, so each test starts clean.
const char* const widget_variables[] = {
    "LCI_ATTR_COUNT", "LCI_ATTR_MASK",     "LCI_ATTR_LEVEL",
    "LCI_ATTR_RATIO", "LCI_ATTR_ENABLED",  "LCI_ATTR_LABEL",
    "LCI_ATTR_TAG_NAME", "LCI_ATTR_SHADE", "LCI_ATTR_USER_CONTEXT",
};

class FunctorsTest : public ::testing::Test {
 protected:
  void SetUp() override { clear_environment(); }
  void TearDown() override { clear_environment(); }
  static void clear_environment() {
    for (const char* variable : widget_variables) ASSERT_EQ(unsetenv(variable), 0);
  }
};

alloc_widget_call_t record(const alloc_widget_x& functor) {
  last_alloc_widget = alloc_widget_call_t{};
  const widget_t widget = functor();
  EXPECT_FALSE(widget.is_empty());
  return last_alloc_widget;
}

poke_call_t record(const poke_x& functor) {
  last_poke = poke_call_t{};
  const status_t status = functor();
  EXPECT_TRUE(status.is_done());
  return last_poke;
}

TEST_F(FunctorsTest, DefaultsReachCallImpl) {
  const widget_t widget = alloc_widget(3);
  const alloc_widget_call_t& call = last_alloc_widget;
  EXPECT_EQ(call.seed, 3);
  EXPECT_EQ(call.attr.count, 8u);
  EXPECT_EQ(call.attr.mask, 0x10u);
  EXPECT_EQ(call.attr.level, -1);
  EXPECT_EQ(call.attr.ratio, 0.5);
  EXPECT_FALSE(call.attr.enabled);
  EXPECT_EQ(call.attr.label, "w");
  EXPECT_STREQ(call.attr.tag_name, "none");
  EXPECT_EQ(call.attr.shade, shade_t::dim);
  EXPECT_EQ(call.attr.user_context, nullptr);
  EXPECT_TRUE(call.peer.is_empty());
  EXPECT_TRUE(call.runtime.is_empty());
  EXPECT_EQ(widget.get_impl(), &allocated_widget);

  int buffer = 0;
  const status_t status = poke(5, &buffer);
  EXPECT_TRUE(status.is_done());
  EXPECT_EQ(status.rank, 5);
  EXPECT_EQ(last_poke.rank, 5);
  EXPECT_EQ(last_poke.buffer, &buffer);
  EXPECT_EQ(last_poke.tag, 7u);
  EXPECT_TRUE(last_poke.flag);
  EXPECT_EQ(last_poke.scale, 1.5);
  EXPECT_TRUE(last_poke.target.is_empty());
  EXPECT_EQ(last_poke.semantic, comp_semantic_t::network);
  EXPECT_TRUE(last_poke.runtime.is_empty());
}

// A setter, the field it must change, and a check of the new value.
template <typename Functor, typename Call>
struct setter_case_t {
  const char* field;
  std::function<void(Functor&)> apply;
  std::function<bool(const Call&)> holds;
};

using widget_case_t = setter_case_t<alloc_widget_x, alloc_widget_call_t>;
using poke_case_t = setter_case_t<poke_x, poke_call_t>;

std::vector<widget_case_t> widget_setters() {
  return {
      {"count", [](alloc_widget_x& f) { f.count(100); },
       [](const alloc_widget_call_t& c) { return c.attr.count == 100; }},
      {"mask", [](alloc_widget_x& f) { f.mask(0xabcdef0123ull); },
       [](const alloc_widget_call_t& c) { return c.attr.mask == 0xabcdef0123ull; }},
      {"level", [](alloc_widget_x& f) { f.level(42); },
       [](const alloc_widget_call_t& c) { return c.attr.level == 42; }},
      {"ratio", [](alloc_widget_x& f) { f.ratio(0.75); },
       [](const alloc_widget_call_t& c) { return c.attr.ratio == 0.75; }},
      {"enabled", [](alloc_widget_x& f) { f.enabled(true); },
       [](const alloc_widget_call_t& c) { return c.attr.enabled; }},
      {"label", [](alloc_widget_x& f) { f.label("fresh"); },
       [](const alloc_widget_call_t& c) { return c.attr.label == "fresh"; }},
      {"tag_name", [](alloc_widget_x& f) { f.tag_name("tagged"); },
       [](const alloc_widget_call_t& c) { return text_of(c.attr.tag_name) == "tagged"; }},
      {"shade", [](alloc_widget_x& f) { f.shade(shade_t::light); },
       [](const alloc_widget_call_t& c) { return c.attr.shade == shade_t::light; }},
      {"peer", [](alloc_widget_x& f) { f.peer(widget_t(&widget_a)); },
       [](const alloc_widget_call_t& c) { return c.peer.get_impl() == &widget_a; }},
      {"runtime", [](alloc_widget_x& f) { f.runtime(runtime_t(&runtime_a)); },
       [](const alloc_widget_call_t& c) { return c.runtime.get_impl() == &runtime_a; }},
  };
}

std::vector<poke_case_t> poke_setters() {
  return {
      {"tag", [](poke_x& f) { f.tag(99); }, [](const poke_call_t& c) { return c.tag == 99; }},
      {"flag", [](poke_x& f) { f.flag(false); }, [](const poke_call_t& c) { return !c.flag; }},
      {"scale", [](poke_x& f) { f.scale(-2.25); },
       [](const poke_call_t& c) { return c.scale == -2.25; }},
      {"target", [](poke_x& f) { f.target(widget_t(&widget_a)); },
       [](const poke_call_t& c) { return c.target.get_impl() == &widget_a; }},
      {"semantic", [](poke_x& f) { f.semantic(comp_semantic_t::memory); },
       [](const poke_call_t& c) { return c.semantic == comp_semantic_t::memory; }},
      {"runtime", [](poke_x& f) { f.runtime(runtime_t(&runtime_a)); },
       [](const poke_call_t& c) { return c.runtime.get_impl() == &runtime_a; }},
  };
}

TEST_F(FunctorsTest, EachSetterChangesExactlyItsArgument) {
  const alloc_widget_call_t widget_baseline = record(alloc_widget_x(3));
  for (const widget_case_t& setter : widget_setters()) {
    alloc_widget_x functor(3);
    setter.apply(functor);
    const alloc_widget_call_t call = record(functor);
    EXPECT_EQ(differing_fields(widget_baseline, call), std::vector<std::string>{setter.field})
        << "alloc_widget_x setter " << setter.field;
    EXPECT_TRUE(setter.holds(call)) << "alloc_widget_x setter " << setter.field;
  }
  int buffer = 0;
  const poke_call_t poke_baseline = record(poke_x(5, &buffer));
  for (const poke_case_t& setter : poke_setters()) {
    poke_x functor(5, &buffer);
    setter.apply(functor);
    const poke_call_t call = record(functor);
    EXPECT_EQ(differing_fields(poke_baseline, call), std::vector<std::string>{setter.field})
        << "poke_x setter " << setter.field;
    EXPECT_TRUE(setter.holds(call)) << "poke_x setter " << setter.field;
  }
}

// Applies every setter in every order; all orders must give the call that
// has every setter's value and nothing else changed.
template <typename Functor, typename Call, typename Make>
void expect_order_independent(const std::vector<setter_case_t<Functor, Call>>& setters,
                              Make make) {
  std::vector<std::size_t> order(setters.size());
  std::iota(order.begin(), order.end(), 0);
  const Call baseline = record(make());
  Call first;
  std::size_t orders_count = 0;
  do {
    Functor functor = make();
    for (std::size_t index : order) setters[index].apply(functor);
    const Call call = record(functor);
    if (orders_count == 0) {
      first = call;
      for (const auto& setter : setters) EXPECT_TRUE(setter.holds(call)) << setter.field;
      EXPECT_EQ(differing_fields(baseline, call).size(), setters.size());
    }
    EXPECT_TRUE(differing_fields(first, call).empty()) << "order #" << orders_count;
    ++orders_count;
  } while (std::next_permutation(order.begin(), order.end()));
  std::size_t factorial = 1;
  for (std::size_t n = 2; n <= setters.size(); ++n) factorial *= n;
  EXPECT_EQ(orders_count, factorial);
}

TEST_F(FunctorsTest, SetterOrderDoesNotMatter) {
  // Attribute setters mixed with a non-attribute option and the runtime.
  std::vector<widget_case_t> widget_cases;
  for (const widget_case_t& setter : widget_setters()) {
    const std::string field = setter.field;
    if (field == "count" || field == "label" || field == "shade" || field == "peer" ||
        field == "runtime") {
      widget_cases.push_back(setter);
    }
  }
  ASSERT_EQ(widget_cases.size(), 5u);
  expect_order_independent(widget_cases, [] { return alloc_widget_x(3); });

  int buffer = 0;
  const std::vector<poke_case_t> poke_cases = poke_setters();
  ASSERT_EQ(poke_cases.size(), 6u);
  expect_order_independent(poke_cases, [&buffer] { return poke_x(5, &buffer); });
}

TEST_F(FunctorsTest, LastSetterCallWins) {
  int buffer = 0;
  const poke_call_t call = record(poke_x(5, &buffer).tag(1).scale(3.0).tag(2));
  EXPECT_EQ(call.tag, 2u);
  EXPECT_EQ(call.scale, 3.0);
}

TEST_F(FunctorsTest, EnvironmentOverridesEveryAttributeType) {
  ASSERT_EQ(setenv("LCI_ATTR_COUNT", "3k", 1), 0);
  ASSERT_EQ(setenv("LCI_ATTR_MASK", "0xff", 1), 0);
  ASSERT_EQ(setenv("LCI_ATTR_LEVEL", "-5", 1), 0);
  ASSERT_EQ(setenv("LCI_ATTR_RATIO", "0.125", 1), 0);
  ASSERT_EQ(setenv("LCI_ATTR_ENABLED", "On", 1), 0);
  ASSERT_EQ(setenv("LCI_ATTR_LABEL", "from env", 1), 0);
  ASSERT_EQ(setenv("LCI_ATTR_TAG_NAME", "env-tag", 1), 0);
  ASSERT_EQ(setenv("LCI_ATTR_SHADE", "DARK", 1), 0);
  // A pointer cannot come from the environment: this one is ignored.
  ASSERT_EQ(setenv("LCI_ATTR_USER_CONTEXT", "0x1234", 1), 0);

  const alloc_widget_call_t call = record(alloc_widget_x(3));
  EXPECT_EQ(call.attr.count, 3u * 1024u);
  EXPECT_EQ(call.attr.mask, 0xffu);
  EXPECT_EQ(call.attr.level, -5);
  EXPECT_EQ(call.attr.ratio, 0.125);
  EXPECT_TRUE(call.attr.enabled);
  EXPECT_EQ(call.attr.label, "from env");
  EXPECT_STREQ(call.attr.tag_name, "env-tag");
  EXPECT_EQ(call.attr.tag_name, std::getenv("LCI_ATTR_TAG_NAME"));
  EXPECT_EQ(call.attr.shade, shade_t::dark);
  EXPECT_EQ(call.attr.user_context, nullptr);

  // The getter used by the runtime sees the same values.
  const attr_widget_t defaults = detail::get_default_attr_widget();
  EXPECT_TRUE(differing_fields(defaults, call.attr).empty());
}

TEST_F(FunctorsTest, SetterBeatsEnvironmentAndDefaultsAreReadAtConstruction) {
  ASSERT_EQ(setenv("LCI_ATTR_COUNT", "64", 1), 0);
  alloc_widget_x functor(3);
  ASSERT_EQ(setenv("LCI_ATTR_COUNT", "65", 1), 0);
  EXPECT_EQ(record(functor).attr.count, 64u);
  EXPECT_EQ(record(alloc_widget_x(3)).attr.count, 65u);
  EXPECT_EQ(record(alloc_widget_x(3).count(9)).attr.count, 9u);
}

struct bad_value_t {
  const char* variable;
  const char* value;
  const char* reason;
};

TEST_F(FunctorsTest, BadEnvironmentValueThrowsNamingVariableAndValue) {
  const bad_value_t bad_values[] = {
      {"LCI_ATTR_COUNT", "abc", "not an unsigned integer"},
      {"LCI_ATTR_COUNT", "-1", "not an unsigned integer"},
      {"LCI_ATTR_COUNT", "99999999999999999999", "out of range"},
      {"LCI_ATTR_MASK", "0x", "not an unsigned integer"},
      {"LCI_ATTR_LEVEL", "1.5", "not an integer"},
      {"LCI_ATTR_LEVEL", "3000000000", "out of range"},
      {"LCI_ATTR_RATIO", "fast", "not a number"},
      {"LCI_ATTR_ENABLED", "maybe", "not a boolean"},
      {"LCI_ATTR_SHADE", "purple", "not one of light, dark, dim"},
  };
  for (const bad_value_t& bad : bad_values) {
    ASSERT_EQ(setenv(bad.variable, bad.value, 1), 0);
    const std::string expected =
        std::string(bad.variable) + "=\"" + bad.value + "\": " + bad.reason;
    try {
      alloc_widget_x functor(3);
      ADD_FAILURE() << bad.variable << "=" << bad.value << " was accepted";
    } catch (const std::invalid_argument& error) {
      EXPECT_EQ(std::string(error.what()).rfind(expected, 0), 0u)
          << "message: " << error.what() << "\nexpected to start with: " << expected;
    }
    ASSERT_EQ(unsetenv(bad.variable), 0);
  }
}

TEST_F(FunctorsTest, HandlesRefuseEmptyAndReadAttributes) {
  widget_t empty;
  EXPECT_TRUE(empty.is_empty());
  EXPECT_EQ(empty.p_impl, nullptr);
  try {
    (void)empty.get_impl();
    ADD_FAILURE() << "an empty handle gave its impl";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "widget_t: empty handle");
  }
  EXPECT_THROW((void)empty.get_attr_count(), std::invalid_argument);

  const widget_t widget = alloc_widget_x(3).count(11).label("read back").shade(shade_t::light)();
  EXPECT_FALSE(widget.is_empty());
  EXPECT_EQ(widget.get_attr_count(), 11u);
  EXPECT_EQ(widget.get_attr_label(), "read back");
  EXPECT_EQ(widget.get_attr_shade(), shade_t::light);
  EXPECT_EQ(widget.get_attr_level(), -1);

  widget_t copy = widget;
  EXPECT_TRUE(copy == widget);
  EXPECT_FALSE(copy != widget);
  copy.set_impl(&widget_a);
  EXPECT_EQ(copy.get_impl(), &widget_a);
  EXPECT_TRUE(copy != widget);
  EXPECT_TRUE(empty != widget);
  EXPECT_TRUE(empty == widget_t());
}

TEST_F(FunctorsTest, EnumNamesRoundTrip) {
  const shade_t values[] = {shade_t::light, shade_t::dark, shade_t::dim};
  const char* const names[] = {"light", "dark", "dim"};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_STREQ(get_shade_str(values[i]), names[i]);
    shade_t parsed = shade_t::light;
    ASSERT_TRUE(detail::parse_shade(names[i], &parsed));
    EXPECT_EQ(parsed, values[i]);
  }
  shade_t parsed = shade_t::dark;
  EXPECT_TRUE(detail::parse_shade("DiM", &parsed));
  EXPECT_EQ(parsed, shade_t::dim);
  EXPECT_FALSE(detail::parse_shade("dimm", &parsed));
  EXPECT_FALSE(detail::parse_shade("", &parsed));
  EXPECT_EQ(parsed, shade_t::dim);  // unchanged by a failed parse
  EXPECT_STREQ(get_shade_str(static_cast<shade_t>(3)), "invalid");
  EXPECT_STREQ(get_shade_str(static_cast<shade_t>(-1)), "invalid");
}

// The refusals of test_api.def: found only away from the description's
// default, with the value as text and the refusal's reason; those refused
// everywhere before those refused unless the network reads ibv attributes.
TEST(Refusals, DefaultsAndOtherAttributesAreAccepted) {
  attr_widget_t attr;
  attr.count = 9;
  attr.label = "changed";
  detail::refused_attr_t refused;
  EXPECT_FALSE(detail::find_refused(attr, /*network_reads_ibv=*/false, &refused));
  EXPECT_FALSE(detail::find_refused(attr_runtime_t{}, false, &refused));
}

TEST(Refusals, EachRefusedAttributeIsFound) {
  detail::refused_attr_t refused;
  attr_widget_t attr;
  attr.legacy = 0.5;
  ASSERT_TRUE(detail::find_refused(attr, false, &refused));
  EXPECT_STREQ(refused.name, "legacy");
  EXPECT_EQ(refused.value, "0.5");
  EXPECT_STREQ(refused.reason, "the runtime never reads it");

  attr = attr_widget_t{};
  attr.legacy_mode = shade_t::dark;
  ASSERT_TRUE(detail::find_refused(attr, true, &refused));
  EXPECT_STREQ(refused.name, "legacy_mode");
  EXPECT_EQ(refused.value, "dark");
}

TEST(Refusals, IbvOnlyRefusalsDependOnTheNetwork) {
  detail::refused_attr_t refused;
  attr_widget_t attr;
  attr.ibv_only = 3;
  EXPECT_FALSE(detail::find_refused(attr, /*network_reads_ibv=*/true, &refused));
  ASSERT_TRUE(detail::find_refused(attr, /*network_reads_ibv=*/false, &refused));
  EXPECT_STREQ(refused.name, "ibv_only");
  EXPECT_EQ(refused.value, "3");
  EXPECT_STREQ(refused.reason, "only an ibv network reads it");
  attr.legacy = 1.0;  // declared before ibv_only, and refused everywhere: first
  ASSERT_TRUE(detail::find_refused(attr, false, &refused));
  EXPECT_STREQ(refused.name, "legacy");
}

TEST(RuntimeDefaults, OneRowPerNetworkKind) {
  EXPECT_EQ(detail::runtime_defaults(/*simulated=*/false).slots, 64u);
  EXPECT_EQ(detail::runtime_defaults(/*simulated=*/true).slots, 4u);
  EXPECT_EQ(detail::runtime_defaults(false).depth, -1);
  EXPECT_EQ(detail::runtime_defaults(true).depth, 2);
  EXPECT_EQ(&detail::runtime_defaults(true), &detail::runtime_defaults_sim);
  EXPECT_EQ(&detail::runtime_defaults(false), &detail::runtime_defaults_real);
  static_assert(std::is_same_v<decltype(detail::runtime_defaults_t::slots), std::size_t>,
                "a default has its description type");
}

// An `env` line with a C++ type: its accessor returns the default while the
// variable is unset, its value once set, and refuses a malformed one.
TEST(EnvAccessor, ReadsTheVariableOrItsDefault) {
  static_assert(std::is_same_v<decltype(detail::env_test_depth()), std::size_t>,
                "the accessor returns the description's type");
  ASSERT_EQ(unsetenv("LCI_TEST_DEPTH"), 0);
  EXPECT_EQ(detail::env_test_depth(), detail::env_test_depth_default);
  ASSERT_EQ(setenv("LCI_TEST_DEPTH", "0x20", 1), 0);
  EXPECT_EQ(detail::env_test_depth(), 32u);
  ASSERT_EQ(setenv("LCI_TEST_DEPTH", "-1", 1), 0);
  EXPECT_THROW((void)detail::env_test_depth(), std::invalid_argument);
  ASSERT_EQ(unsetenv("LCI_TEST_DEPTH"), 0);
}

}  // namespace

}  // namespace lci_api_test
