"""Tests of tools/mutate's "Equivalent mutants:" markers: which mutants a
marker covers (its statement's lines, its operators), that covered mutants
are not run and not counted in the kill rate, and that a marker naming no
mutant is left unused (what --list reports as stale). Also that a mutant in
an LCI_DEBUG_ASSERT runs in a configuration that compiles it. And that the
results of recorded runs name the mutants of a later revision (--report,
--pending)."""

import dataclasses
import importlib.machinery
import importlib.util
import json
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


RUN_SOURCE = """\
inline int h(int count, int count_max) {
  if (count < count_max) return 1;
  if (count < count_max) return 1;
  return count > count_max;
}
"""


class Baseline(unittest.TestCase):
    PASS = "//tests/cq:a_test        PASSED in 0.4s\n//tests/cq:b_test  (cached) PASSED in 0.1s\n"

    def test_passing_tests_are_a_baseline(self):
        self.assertIsNone(mutate.baseline_problem(self.PASS, 0))

    def test_a_failing_test_stops_the_run(self):
        output = self.PASS + "//tests/cq:c_test        FAILED in 0.6s\n"
        self.assertIn("//tests/cq:c_test", mutate.baseline_problem(output, 3))

    def test_an_unbuilt_test_or_a_bazel_error_stops_the_run(self):
        output = self.PASS + "//tests/cq:d_test        FAILED TO BUILD\n"
        self.assertIn("//tests/cq:d_test", mutate.baseline_problem(output, 1))
        self.assertIn("ERROR: no such package",
                      mutate.baseline_problem("ERROR: no such package 'x'\n", 1))
        self.assertIsNotNone(mutate.baseline_problem(self.PASS, None))


class RecordedRuns(unittest.TestCase):
    """--report and --pending: results recorded at one revision name the
    mutants of a later one by file, operator and text, not by line."""

    def generate(self, source):
        root = tempfile.mkdtemp(dir=self.directory.name)
        os.makedirs(os.path.join(root, "lci/x"))
        with open(os.path.join(root, "lci/x/b.cpp"), "w") as out:
            out.write(source)
        subprocess.run(["git", "init", "-q", root], check=True)
        subprocess.run(["git", "-C", root, "add", "-A"], check=True)
        return mutate.generate(root, [], ["bound"])

    def record(self, name, date, mutants):
        path = os.path.join(self.directory.name, name)
        with open(path, "w") as out:
            json.dump({"date": date, "rev": "0" * 40, "command": "mutate", "seconds": 0,
                       "mutants": [dataclasses.asdict(m) for m in mutants]}, out)
        return path

    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.old = self.generate(RUN_SOURCE)
        self.assertEqual([(m.line, m.occurrence) for m in self.old], [(2, 0), (3, 1), (4, 0)])

    def tearDown(self):
        self.directory.cleanup()

    def test_results_follow_their_statement_to_its_new_line(self):
        self.old[0].status, self.old[1].status, self.old[2].status = "killed", "survived", "killed"
        run = self.record("run1.json", "2026-01-01T00:00:00", self.old)
        new = self.generate("// two lines\n// above\n" + RUN_SOURCE)
        unmatched = mutate.match_results(new, mutate.load_results([run]))
        self.assertEqual(unmatched, [])
        self.assertEqual([(m.line, m.status) for m in new],
                         [(4, "killed"), (5, "survived"), (6, "killed")])
        self.assertIn("run1.json", new[1].measured_in)

    def test_a_newer_run_overrides_and_a_changed_statement_is_unmatched(self):
        for m in self.old:
            m.status = "survived"
        older = self.record("a.json", "2026-01-02T00:00:00", self.old)
        newer_mutants = self.generate(RUN_SOURCE)
        newer_mutants[1].status = "killed"  # a test added since kills it
        newer = self.record("b.json", "2026-01-03T00:00:00", newer_mutants[1:2])
        changed = self.generate(RUN_SOURCE.replace("return count > count_max", "return count >= count_max"))
        # the file names b.json after a.json, but the order is by the runs' dates
        unmatched = mutate.match_results(changed, mutate.load_results([newer, older]))
        self.assertEqual([m.status for m in changed], ["survived", "killed", "not_run"])
        self.assertEqual([r["line"] for r in unmatched], [4])

    def test_of_two_overlapping_runs_the_later_result_wins(self):
        first = self.generate(RUN_SOURCE)
        second = self.generate(RUN_SOURCE)
        first[0].status, first[0].finished = "survived", "2026-01-01T09:00:00"
        second[0].status, second[0].finished = "killed", "2026-01-01T10:00:00"
        # the long run ended last, but measured line 2 an hour before the
        # short one did (which ran a test added since)
        long_run = self.record("long.json", "2026-01-01T12:00:00", first[:1])
        short_run = self.record("short.json", "2026-01-01T11:00:00", second[:1])
        new = self.generate(RUN_SOURCE)
        mutate.match_results(new, mutate.load_results([long_run, short_run]))
        self.assertEqual(new[0].status, "killed")

    def test_pending_leaves_the_unmeasured(self):
        self.old[2].status = "killed"
        self.old[1].status = "not_run"  # listed in the run, but never run
        run = self.record("run.json", "2026-01-01T00:00:00", self.old[1:])
        new = self.generate(RUN_SOURCE)
        mutate.match_results(new, mutate.load_results([run]))
        pending = [m.line for m in new if m.status not in mutate.MEASURED]
        self.assertEqual(pending, [2, 3])

    def test_a_recorded_kill_refutes_an_equivalence_marker(self):
        for m in self.old:
            m.status = "killed"
        run = self.record("run.json", "2026-01-01T00:00:00", self.old)
        marked = RUN_SOURCE.replace("  return count >", "  // Equivalent mutants: bound: a claim.\n  return count >")
        new = self.generate(marked)
        mutate.match_results(new, mutate.load_results([run]))
        self.assertEqual(new[2].status, "equivalent")
        self.assertIn("the argument is wrong", new[2].note)

    def test_a_kill_that_a_newer_run_does_not_repeat_refutes_nothing(self):
        # A run that "killed" a marked mutant through a test that failed by
        # chance, and a later run of it that survived: the newer result is
        # the one that counts, as for unmarked mutants.
        for m in self.old:
            m.status = "killed"
        older = self.record("a.json", "2026-01-01T00:00:00", self.old)
        again = self.generate(RUN_SOURCE)
        again[2].status = "survived"
        newer = self.record("b.json", "2026-01-02T00:00:00", again[2:])
        marked = RUN_SOURCE.replace("  return count >", "  // Equivalent mutants: bound: a claim.\n  return count >")
        new = self.generate(marked)
        mutate.match_results(new, mutate.load_results([older, newer]))
        self.assertEqual(new[2].status, "equivalent")
        self.assertNotIn("the argument is wrong", new[2].note)
        # A kill recorded after the survival refutes it again.
        latest_kill = self.record("c.json", "2026-01-03T00:00:00", self.old)
        again_marked = self.generate(marked)
        mutate.match_results(again_marked, mutate.load_results([older, newer, latest_kill]))
        self.assertIn("the argument is wrong", again_marked[2].note)


if __name__ == "__main__":
    unittest.main()
