"""Tests of tools/layering/check_links.py: it fails on a library whose
objects need a symbol of ours that only a library above it defines, and
passes what links against its own dependencies."""

import unittest

from tools.layering import check_links
from tools.layering.check_links import Library, parse_nm

# nm -P -g of three archives: the runtime declares and calls
# resolve_device; the public API (above it) defines it, or the runtime
# does itself (a resolve.cpp of its own).
RESOLVE = "_ZN3lci6detail14resolve_deviceERNS0_14runtime_impl_tENS_8device_tE"
NM = {
    "runtime_needs.a": f"""liblci_runtime.a[device_impl.o]:
_ZN3lci6detail13device_impl_tC2Ev T 0 10
{RESOLVE} U
memcpy U
_ZNSt6vectorIiSaIiEE9push_backERKi U
""",
    "runtime_defines.a": f"""liblci_runtime.a[resolve.o]:
{RESOLVE} T 40 20
liblci_runtime.a[device_impl.o]:
_ZN3lci6detail13device_impl_tC2Ev T 0 10
{RESOLVE} U
""",
    "api.a": f"""liblci.a[runtime_ops.o]:
{RESOLVE} T 40 20
_ZN3lci6detail13device_impl_tC2Ev U
""",
}


def symbols_of(archive):
    return parse_nm(NM[archive])


class CheckLinksTest(unittest.TestCase):
    def test_a_symbol_defined_only_above_fails(self):
        libraries = [Library("//lci:runtime", ["runtime_needs.a"], ["runtime_needs.a"]),
                     Library("//lci:lci", ["api.a"], ["api.a", "runtime_needs.a"])]
        errors = check_links.violations(libraries, symbols_of)
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("//lci:runtime", errors[0])
        self.assertIn(RESOLVE, errors[0])
        self.assertIn("defined in: //lci:lci", errors[0])

    def test_a_symbol_defined_in_the_library_or_below_passes(self):
        libraries = [Library("//lci:runtime", ["runtime_defines.a"], ["runtime_defines.a"]),
                     Library("//lci:lci", ["api.a"], ["api.a", "runtime_defines.a"])]
        self.assertEqual(check_links.violations(libraries, symbols_of), [])

    def test_only_our_namespaces_count(self):
        ours = ["_ZN3lci6detail3fooEv", "_ZNK3lci4util3barEv", "_ZTVN3lci6detail5cq_tE",
                "_ZGVZN3lci6detail3fooEvE1x", "_ZThn8_N3lci6detail3bazEv", "_ZN3lct5queueEv"]
        theirs = ["memcpy", "_ZNSt6vectorIN3lci6detail3fooEE9push_backEv", "_ZN4lcix3fooEv",
                  "LCT_init", "_ZN2fi3fooEv"]
        for name in ours:
            self.assertTrue(check_links.OURS.match(name), name)
        for name in theirs:
            self.assertFalse(check_links.OURS.match(name), name)

    def test_nm_output_is_parsed_by_kind(self):
        symbols = parse_nm(NM["runtime_defines.a"])
        self.assertIn(RESOLVE, symbols.defined)
        self.assertIn(RESOLVE, symbols.undefined)
        self.assertNotIn("liblci_runtime.a[resolve.o]:", symbols.defined)


if __name__ == "__main__":
    unittest.main()
