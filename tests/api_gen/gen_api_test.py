"""Tests of the API description parser in tools/api_gen/gen_api.py."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from tools.api_gen import gen_api
from tools.api_gen import gen_reference

# A valid description the error cases below each break in one place.
VALID = textwrap.dedent("""\
    # comment
    enum shade_t { light, dark }                 // doc
    resource runtime                             // doc
      attr name : const char* = nullptr          // doc
    resource widget                              // doc
      attr count : size_t = 8                    // doc
      attr shade : shade_t = dark                // doc
    op alloc_widget -> widget_t                  // doc
      arg seed : int
      attrs widget : *
      opt peer : widget_t = {}                   // doc
    op stop -> void [no_runtime]
    """)


def parse(text):
    return gen_api.parse(text, "test.def")


class DescriptionTestCase(unittest.TestCase):
    def assert_error(self, text, line, fragment):
        with self.assertRaises(gen_api.DslError) as caught:
            parse(text)
        self.assertEqual(caught.exception.line, line, str(caught.exception))
        self.assertIn(fragment, caught.exception.message)
        self.assertTrue(str(caught.exception).startswith(f"test.def:{line}: "),
                        str(caught.exception))


class ParserTest(DescriptionTestCase):
    def test_valid_description(self):
        api = parse(VALID)
        self.assertEqual([e.name for e in api.enums], ["shade_t"])
        self.assertEqual([r.name for r in api.resources], ["runtime", "widget"])
        alloc = api.operations[0]
        self.assertEqual([p.name for p in alloc.args], ["seed"])
        # attrs expand in place, then the other options, then the runtime.
        self.assertEqual([p.name for p in alloc.options],
                         ["count", "shade", "peer", "runtime"])
        self.assertEqual([p.attr_of for p in alloc.options],
                         ["widget", "widget", None, None])
        # A bare enum value is qualified.
        self.assertEqual(api.resources[1].attrs[1].default, "shade_t::dark")
        self.assertEqual(api.operations[1].options, [])

    def test_malformed_line_names_its_line(self):
        lines = VALID.splitlines()
        lines[5] = "  attr count size_t = 8  // missing colon"
        self.assert_error("\n".join(lines), 6, "expected 'attr NAME : TYPE = DEFAULT'")
        self.assert_error(VALID + "operation broken\n", 13, "expected 'enum NAME")
        self.assert_error(VALID + "  attr misplaced : int = 0  // doc\n", 13,
                          "expected 'arg NAME")
        self.assert_error(VALID + "resource gadget  // doc\n  opt misplaced : int = 0\n", 14,
                          "expected 'attr NAME")
        self.assert_error("  attr orphan : int = 0  // doc\n", 1, "outside a resource or op")

    def test_duplicate_option_is_refused(self):
        text = VALID + "op poke -> void\n  opt tag : int = 0\n  opt tag : int = 1\n"
        self.assert_error(text, 15, "duplicate argument or option of op poke 'tag'")

    def test_option_clashing_with_argument_or_attribute_is_refused(self):
        self.assert_error(VALID + "op poke -> void\n  arg tag : int\n  opt tag : int = 0\n",
                          15, "duplicate")
        self.assert_error(VALID.replace("opt peer : widget_t", "opt count : widget_t"),
                          11, "duplicate argument or option of op alloc_widget 'count'")

    def test_implicit_runtime_option_is_reserved(self):
        self.assert_error(VALID + "op poke -> void\n  opt runtime : int = 0\n", 14,
                          "option 'runtime' is implicit")

    def test_cross_reference_errors(self):
        self.assert_error(VALID.replace("attrs widget : *", "attrs gadget : *"), 10,
                          "unknown resource 'gadget'")
        self.assert_error(VALID.replace("attrs widget : *", "attrs widget : count size"), 10,
                          "has no attribute 'size'")
        self.assert_error(VALID.replace("= dark", "= dusk"), 7, "'dusk' is not a value")
        self.assert_error(VALID.replace("size_t = 8", "float = 8"), 6, "no environment reader")
        self.assert_error(VALID.replace("[no_runtime]", "[no_runtime, fast]"), 12,
                          "unknown modifier 'fast'")
        self.assert_error(VALID.replace("count : size_t = 8                    // doc",
                                        "count : size_t = 8"), 6, "needs a one-line doc")
        self.assert_error(VALID + "op late -> void\n  opt a : int = 0\n  arg b : int\n", 15,
                          "after an option")
        self.assert_error(VALID + "enum shade_t { x }\n", 13, "duplicate enum 'shade_t'")
        self.assert_error(VALID + "op poke -> void\n  arg new_value : int\n", 14, "reserved")

    def test_output_attributes(self):
        text = VALID.replace("  attr shade : shade_t = dark                // doc\n",
                             "  attr shade : shade_t = dark                // doc\n"
                             "  out serial : int = -1                      // doc\n")
        api = parse(text)
        serial = api.resources[1].attr("serial")
        self.assertTrue(serial.output)
        self.assertFalse(api.resources[1].attr("count").output)
        # '*' leaves an output attribute out; naming it is refused.
        self.assertEqual([p.name for p in api.operations[0].options],
                         ["count", "shade", "peer", "runtime"])
        self.assert_error(text.replace("attrs widget : *", "attrs widget : count serial"), 11,
                          "'serial' is an output attribute of widget")
        header, source = gen_api.generate(api, "x", "test.def", "x.hpp")
        self.assertIn("int serial = -1;  // output, set by the runtime: doc", header)
        self.assertIn("int get_attr_serial() const", header)
        self.assertNotIn("LCI_ATTR_SERIAL", source)
        self.assertIn('read_attr_env("LCI_ATTR_COUNT"', source)

    def test_resource_sentinels(self):
        api = parse(VALID.replace("resource widget  ", "resource widget [sentinels=2]"))
        self.assertEqual(api.resources[1].sentinels, 2)
        self.assertEqual(api.resources[0].sentinels, 0)
        header, _ = gen_api.generate(api, "x", "test.def", "x.hpp")
        self.assertIn("return reinterpret_cast<std::uintptr_t>(p_impl) <= 2;", header)
        self.assert_error(VALID.replace("resource widget  ", "resource widget [sentinels=0]"), 5,
                          "unknown resource modifier 'sentinels=0'")
        self.assert_error(VALID.replace("resource widget  ", "resource widget [shiny]"), 5,
                          "unknown resource modifier 'shiny'")

    def test_upstream_attribute_struct_names(self):
        header, _ = gen_api.generate(parse(VALID), "x", "test.def", "x.hpp")
        self.assertIn("using widget_attr_t = attr_widget_t;", header)
        self.assertIn("  using attr_t = attr_widget_t;", header)
        self.assertIn("  attr_t get_attr() const { return detail::get_attr(get_impl()); }", header)

    def test_handles_are_upstream_shaped(self):
        # Implementation classes by upstream's names in the API namespace;
        # handles made implicitly from a void*, and one pointer wide.
        header, _ = gen_api.generate(parse(VALID), "x", "test.def", "x.hpp")
        self.assertIn("using detail::widget_impl_t;", header)
        self.assertIn("  widget_t(void* p) : p_impl(static_cast<widget_impl_t*>(p)) {}", header)
        self.assertNotIn("explicit widget_t(", header)
        self.assertIn('static_assert(sizeof(widget_t) == sizeof(void*), "widget_t is one pointer");',
                      header)

    def test_runtime_resource_required_unless_no_runtime(self):
        text = "op poke -> void\n"
        self.assert_error(text, 1, "no 'resource runtime'")
        self.assertEqual(parse("op poke -> void [no_runtime]\n").operations[0].options, [])


# VALID with a refusal, a runtime default and an environment variable.
SETTINGS = VALID + textwrap.dedent("""\
    refusal unused                               // never read
    default slots : size_t real=64 sim=4         // doc
    env LCI_KNOB : flag = 0 [test_only]          // doc
    env LCI_FAMILY_<KIND> : probability = 0      // doc
    resource gadget                              // doc
      attr old : int = 0 [refused=unused]        // doc
      attr ibv : bool = false [refused_unless_ibv=unused]  // doc
      attr slots : size_t = 0 [runtime_default=slots]      // doc
    """)


class SettingsTest(DescriptionTestCase):
    def test_settings_are_parsed(self):
        api = parse(SETTINGS)
        self.assertEqual([(r.name, r.reason) for r in api.refusals], [("unused", "never read")])
        self.assertEqual([(d.name, d.type, d.real, d.sim) for d in api.defaults],
                         [("slots", "size_t", "64", "4")])
        self.assertEqual([(v.name, v.test_only) for v in api.env],
                         [("LCI_KNOB", True), ("LCI_FAMILY_<KIND>", False)])
        old, ibv, slots = api.resources[2].attrs
        self.assertEqual((old.refused, old.refused_unless_ibv), ("unused", False))
        self.assertEqual((ibv.refused, ibv.refused_unless_ibv), ("unused", True))
        self.assertEqual((slots.refused, slots.runtime_default), (None, "slots"))

    def test_setting_errors(self):
        self.assert_error(SETTINGS.replace("[refused=unused]", "[refused=other]"), 18,
                          "unknown refusal 'other'")
        self.assert_error(SETTINGS.replace("[refused=unused]", "[ignored=unused]"), 18,
                          "unknown attribute modifier 'ignored=unused'")
        self.assert_error(SETTINGS.replace("[refused=unused]", "[refused=unused refused=unused]"),
                          18, "refused twice")
        self.assert_error(SETTINGS.replace("runtime_default=slots", "runtime_default=depth"), 20,
                          "unknown default 'depth'")
        self.assert_error(SETTINGS.replace("size_t = 0 [runtime_default", "size_t = 1 [runtime_default"),
                          20, "needs the default 0")
        self.assert_error(SETTINGS.replace("old : int = 0 [refused", "old : std::string = \"\" [refused"),
                          18, "a refused attribute's type")
        self.assert_error(SETTINGS + "refusal lonely  // doc\n", 21, "refuses no attribute")
        self.assert_error(SETTINGS + "refusal unused  // again\n", 21, "duplicate refusal")
        self.assert_error(SETTINGS + "env LCI_KNOB : flag = 1  // again\n", 21,
                          "duplicate environment variable")
        self.assert_error(SETTINGS + "env LCI_ATTR_OLD : int = 0  // doc\n", 21,
                          "come from the attributes")
        self.assert_error(SETTINGS + "env LCI_X : flag = 0 [prod]  // doc\n", 21,
                          "unknown env modifier 'prod'")
        self.assert_error(SETTINGS + "env LCI_X : flag = 0\n", 21, "needs a one-line doc")
        self.assert_error(SETTINGS + "default bad : size_t real=1  // doc\n", 21, "expected")
        self.assert_error(SETTINGS + "env LCI_F_<K> : int = 0  // doc\n", 21, "no accessor")
        self.assert_error(SETTINGS + "env LCI_T : bool = 0 [test_only]  // doc\n", 21,
                          "no accessor")

    def test_macros(self):
        api = parse(SETTINGS.replace("real=64 sim=4 ", "real=64 sim=4 [macro=LCI_SLOTS_DEFAULT] ")
                    + "macro LCI_WITH_X = 0  // a feature\n")
        self.assertEqual([(m.name, m.value) for m in api.macros],
                         [("LCI_SLOTS_DEFAULT", "64"), ("LCI_WITH_X", "0")])
        header = gen_api.macros_header(api, "t.def")
        self.assertIn("// a feature\n#define LCI_WITH_X 0\n", header)
        self.assertIn("#define LCI_SLOTS_DEFAULT 64\n", header)
        self.assert_error(SETTINGS + "macro LCI_X = 1  // doc\nmacro LCI_X = 2  // doc\n", 22,
                          "duplicate macro")
        self.assert_error(SETTINGS + "macro X_Y = 1  // doc\n", 21, "expected")
        self.assert_error(SETTINGS + "macro LCI_X = 1\n", 21, "needs a one-line doc")
        self.assert_error(SETTINGS.replace("real=64 sim=4 ", "real=64 sim=4 [macro=slots] "), 14,
                          "expected")

    def test_generated_code_holds_them(self):
        header, source = gen_api.generate(parse(SETTINGS), "x", "t.def", "x.hpp")
        self.assertIn("inline constexpr runtime_defaults_t runtime_defaults_sim = {\n    4,", header)
        self.assertIn("bool find_refused(const attr_gadget_t& attr", header)
        self.assertIn("if (attr.old != defaults.old)", source)
        self.assertIn("if (!network_reads_ibv && attr.ibv != defaults.ibv)", source)
        self.assertNotIn("LCI_KNOB", header + source)
        header, source = gen_api.generate(
            parse(SETTINGS + "env LCI_DEPTH : size_t = 12  // doc\n"), "x", "t.def", "x.hpp")
        self.assertIn("inline constexpr size_t env_depth_default = 12;", header)
        self.assertIn("size_t env_depth();", header)
        self.assertIn('read_attr_env("LCI_DEPTH", &value);', source)

    def test_reference_pages_list_everything(self):
        api = parse(SETTINGS)
        attributes = gen_reference.attributes_page(api, "t.def")
        for text in ("`LCI_ATTR_COUNT`", "`LCI_ATTR_OLD`", "[`unused`](#refused-attributes)",
                     "unless the network is ibv", "real 64, simulated 4",
                     "| `slots` | 64 | 4 | doc |"):
            self.assertIn(text, attributes)
        environment = gen_reference.environment_page(api, "t.def")
        self.assertIn("| `LCI_KNOB` | flag | `0` | test only: doc |", environment)
        self.assertIn("`LCI_FAMILY_<KIND>`", environment)
        macros = gen_reference.attributes_page(parse(SETTINGS + "macro LCI_WITH_X = 0  // a feature\n"),
                                               "t.def")
        self.assertIn("| `LCI_WITH_X` | `0` | a feature |", macros)
        reference = gen_reference.api_page(api, "t.def")
        self.assertIn("### alloc_widget", reference)
        self.assertIn("`widget_t alloc_widget(int seed)`", reference)
        self.assertIn("| `peer` | `widget_t` | `{}` | doc |", reference)


class CommandLineTest(unittest.TestCase):
    def run_generator(self, text):
        with tempfile.TemporaryDirectory() as directory:
            source = os.path.join(directory, "bad.def")
            with open(source, "w", encoding="utf-8") as f:
                f.write(text)
            return subprocess.run(
                [sys.executable, gen_api.__file__, source, "--namespace", "x",
                 "--include", "x.hpp", "--header", os.path.join(directory, "x.hpp"),
                 "--source", os.path.join(directory, "x.cpp")],
                capture_output=True, text=True, check=False), source

    def test_bad_input_fails_with_file_and_line(self):
        result, source = self.run_generator(VALID + "bogus\n")
        self.assertEqual(result.returncode, 1)
        self.assertIn(f"{source}:13: expected", result.stderr)

    def test_good_input_writes_both_files(self):
        result, _ = self.run_generator(VALID)
        self.assertEqual(result.returncode, 0, result.stderr)


if __name__ == "__main__":
    unittest.main()
