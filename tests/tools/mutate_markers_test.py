"""Tests of tools/mutate's "Equivalent mutants:" markers: which mutants a
marker covers (its statement's lines, its operators), that covered mutants
are not run and not counted in the kill rate, and that a marker naming no
mutant is left unused (what --list reports as stale). Also that a mutant in
an LCI_DEBUG_ASSERT runs in a configuration that compiles it."""

import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

MUTATE_PATH = sys.argv.pop(1)
loader = importlib.machinery.SourceFileLoader("mutate", MUTATE_PATH)
spec = importlib.util.spec_from_loader("mutate", loader)
mutate = importlib.util.module_from_spec(spec)
loader.exec_module(mutate)

SOURCE = """\
#include "lci/util/atomic.hpp"
inline int f(std::atomic<int>& a, int count, int count_max) {
  // Equivalent mutants: mo_weaken, bound:1 (the second mutant of the line).
  int v = a.load(util::mo_acquire) + (count < count_max);
  a.store(v, util::mo_release);
  // Equivalent mutant: mo_weaken: the statement below spans two lines, and
  // this block has two lines too.
  int w = a.exchange(1,
                     util::mo_acq_rel);
  // Equivalent mutants: cas_weak (no CAS below: a stale marker).
  return v + w;
}
inline void g(int count, int count_max) {
  LCI_DEBUG_ASSERT(
      count < count_max, "only with LCI_DEBUG");
  LCI_ASSERT(count < count_max, "always");
}
"""


class Markers(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        root = self.directory.name
        os.makedirs(os.path.join(root, "lci/x"))
        with open(os.path.join(root, "lci/x/a.hpp"), "w") as out:
            out.write(SOURCE)
        subprocess.run(["git", "init", "-q", root], check=True)
        subprocess.run(["git", "-C", root, "add", "-A"], check=True)
        self.markers = []
        self.mutants = mutate.generate(root, [], mutate.OPERATORS, self.markers)

    def tearDown(self):
        self.directory.cleanup()

    def status(self, line, operator):
        found = [m.status for m in self.mutants if m.line == line and m.operator == operator]
        self.assertTrue(found, f"no {operator} mutant on line {line}")
        return found

    def test_listed_operators_of_the_statement_are_equivalent(self):
        self.assertEqual(self.status(4, "mo_weaken"), ["equivalent"])
        self.assertEqual(self.status(5, "mo_weaken"), ["not_run"])  # the next statement

    def test_operator_index_names_one_mutant(self):
        bound = [m for m in self.mutants if m.line == 4 and m.operator == "bound"]
        self.assertEqual(len(bound), 1)
        index = int(bound[0].id.rsplit(":", 1)[1])
        self.assertEqual(index, 1, "the test's marker names bound:1")
        self.assertEqual(bound[0].status, "equivalent")
        self.assertIn("second mutant of the line", bound[0].note)

    def test_a_statement_over_two_lines_is_covered_whole(self):
        self.assertEqual(self.status(9, "mo_weaken"), ["equivalent", "equivalent"])
        self.assertEqual(self.status(9, "mo_to_relaxed"), ["not_run"])

    def test_an_unused_token_is_stale(self):
        unused = [(m.line, t) for _, m in self.markers for t in m.tokens if t not in m.used]
        self.assertEqual(unused, [(10, "cas_weak")])

    def test_a_debug_assertion_runs_where_it_is_compiled(self):
        # LCI_DEBUG_ASSERT expands to nothing without LCI_DEBUG: its mutants
        # run under --config=tsan, over all of its lines.
        configs = {m.line: m.config for m in self.mutants if m.operator == "bound"}
        self.assertEqual(configs[15], "tsan")
        self.assertEqual(configs[16], "default")

    def test_equivalent_mutants_are_out_of_the_kill_rate(self):
        for m in self.mutants:
            if m.status == "not_run":
                m.status = "killed"
        row = mutate.table(self.mutants).splitlines()[-1]
        equivalent = sum(1 for m in self.mutants if m.status == "equivalent")
        self.assertEqual(equivalent, 4)
        self.assertTrue(row.endswith("| 100% |"), row)
        self.assertIn(f"| {equivalent} |", row)


if __name__ == "__main__":
    unittest.main()
