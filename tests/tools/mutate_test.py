"""Tests of tools/mutate's "Equivalent mutants:" and "Unreachable mutants:"
markers: which mutants a marker covers (its statement's lines, its
operators), that covered mutants are not counted in the score, that a
marker naming no mutant is left unused (what --list reports as stale), and
when a marker is due for a check (the ledger). Also that a mutant in an
LCI_DEBUG_ASSERT runs in a configuration that compiles it, that the results
of recorded runs name the mutants of a later revision (--report,
--pending), and, against a fake `bazel` (fake_bazel below, no real
mutant), the test selection (reverse dependencies, fastest first, the
configurations) and the verdicts (a kill stops the mutant; a timeout is a
column of its own; a model checker out of time kills nothing)."""

import dataclasses
import importlib.machinery
import importlib.util
import argparse
import json
import os
import stat
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
        self.assertTrue(row.endswith("| 100.0% |"), row)
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


# A stand-in for bazel, on PATH in the tests below: it logs each call's
# arguments to $FAKE_BAZEL_LOG (one JSON line) and answers from the JSON
# spec in $FAKE_BAZEL_SPEC: "query" maps a text of the expression to the
# labels it prints; "incompatible" a configuration to the tests it cannot
# build; "test" a label to its summary status (PASSED when absent) and
# "times" to its duration.
FAKE_BAZEL = """#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_BAZEL_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
with open(os.environ["FAKE_BAZEL_SPEC"]) as f:
    spec = json.load(f)
labels = [a for a in args[1:] if a.startswith("//")]
configs = [a.split("=", 1)[1] for a in args if a.startswith("--config=")]
if args[0] == "query":
    for text, found in spec["query"].items():
        if text in args[-1]:
            print("\\n".join(found))
elif args[0] == "build":
    for config in configs:
        for label in spec.get("incompatible", {}).get(config, []):
            if label in labels:
                print(f"WARNING: Target @{label} is incompatible and cannot be built")
elif args[0] == "test":
    failed = False
    for label in labels:
        status = spec.get("test", {}).get(label, "PASSED")
        failed |= status != "PASSED"
        print(f"{label}    {status} in {spec.get('times', {}).get(label, 1.0)}s")
    sys.exit(3 if failed else 0)
"""

SELECTION_SOURCE = """\
#include <atomic>
inline bool put(std::atomic<int>& a, int& expected, int count, int count_max) {
  if (count < count_max) return false;
  return a.compare_exchange_strong(expected, 1, util::mo_acq_rel, util::mo_acquire);
}
"""


class FakeBazel(unittest.TestCase):
    """Selection, batches, configurations and verdicts against fake_bazel."""

    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        root = self.directory.name
        self.repo = os.path.join(root, "repo")
        os.makedirs(os.path.join(self.repo, "lci/x/detail"))
        with open(os.path.join(self.repo, "lci/x/BUILD"), "w") as out:
            out.write("# package\n")
        with open(os.path.join(self.repo, "lci/x/detail/c.hpp"), "w") as out:
            out.write(SELECTION_SOURCE)
        subprocess.run(["git", "init", "-q", self.repo], check=True)
        subprocess.run(["git", "-C", self.repo, "add", "-A"], check=True)
        subprocess.run(["git", "-C", self.repo, "-c", "user.name=t", "-c", "user.email=t@t",
                        "commit", "-q", "-m", "x"], check=True)
        rev = subprocess.run(["git", "-C", self.repo, "rev-parse", "HEAD"], check=True,
                             capture_output=True, text=True).stdout.strip()
        bin_dir = os.path.join(root, "bin")
        os.makedirs(bin_dir)
        fake = os.path.join(bin_dir, "bazel")
        with open(fake, "w") as out:
            out.write(FAKE_BAZEL)
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
        self.log = os.path.join(root, "log")
        self.spec_path = os.path.join(root, "spec.json")
        self.saved_env = dict(os.environ)
        os.environ.update(PATH=bin_dir + os.pathsep + os.environ["PATH"],
                          FAKE_BAZEL_LOG=self.log, FAKE_BAZEL_SPEC=self.spec_path)
        self.tests = ["//tests/x:slow_test", "//tests/x:fast_test", "//tests/soak:soak_test",
                      "//tests/x:x_model_test", "//tests/x:new_test"]
        self.spec = {"query": {"rdeps(//..., //lci/x:detail/c.hpp)": self.tests,
                               "model_check": ["//tests/x:x_model_test"]},
                     "incompatible": {"tsan": ["//tests/x:x_model_test"],
                                      "asan": ["//tests/x:x_model_test"]},
                     "test": {}}
        self.write_spec()
        self.timings = {"//tests/x:slow_test": 9.0, "//tests/x:fast_test": 0.1,
                        "//tests/soak:soak_test": 3.0, "//tests/x:x_model_test": 1.0}
        self.args = argparse.Namespace(tests="", mutant_timeout=60, test_timeout=5,
                                       bazel_arg=[], tsan=False)
        self.wt = mutate.Worktree(self.repo, os.path.join(root, "wt"), rev)
        self.wt.prepare()
        self.sel = mutate.Selection(self.wt, self.args, self.timings)
        self.mutants = mutate.generate(self.repo, [], mutate.OPERATORS)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved_env)
        self.directory.cleanup()

    def write_spec(self):
        with open(self.spec_path, "w") as out:
            json.dump(self.spec, out)
        if os.path.exists(self.log):
            os.remove(self.log)

    def calls(self, verb="test"):
        with open(self.log) as f:
            return [c for c in map(json.loads, f) if c[0] == verb]

    def mutant(self, operator):
        return next(m for m in self.mutants if m.operator == operator)

    def test_reverse_dependencies_fastest_first(self):
        self.assertEqual(mutate.file_label(self.repo, "lci/x/detail/c.hpp"),
                         "//lci/x:detail/c.hpp")
        query = self.calls_after(lambda: self.sel.ordered("lci/x/detail/c.hpp", "default"),
                                 "query")[0][-1]
        self.assertIn("rdeps(//..., //lci/x:detail/c.hpp)", query)
        self.assertIn("broken_variant|manual", query)
        self.assertEqual(self.sel.ordered("lci/x/detail/c.hpp", "default"),
                         ["//tests/x:fast_test", "//tests/x:x_model_test",
                          "//tests/soak:soak_test", "//tests/x:slow_test",
                          "//tests/x:new_test"])  # never timed: last
        self.assertNotIn("//tests/x:x_model_test", self.sel.ordered("lci/x/detail/c.hpp", "tsan"))

    def calls_after(self, action, verb):
        action()
        return self.calls(verb)

    def test_a_kill_stops_before_the_slower_batches(self):
        self.spec["test"]["//tests/soak:soak_test"] = "FAILED"
        self.write_spec()
        m = self.mutant("bound")
        mutate.run_mutant(self.wt, self.sel, m, self.args)
        self.assertEqual((m.status, m.killed_by), ("killed", ["//tests/soak:soak_test"]))
        batches = [[a for a in c if a.startswith("//")] for c in self.calls()]
        self.assertEqual(batches, [["//tests/x:fast_test", "//tests/x:x_model_test"],
                                   ["//tests/soak:soak_test", "//tests/x:slow_test",
                                    "//tests/x:new_test"]])
        self.assertEqual(m.config, "default")
        self.assert_restored()

    def assert_restored(self):
        with open(os.path.join(self.wt.path, "lci/x/detail/c.hpp")) as f:
            self.assertEqual(f.read(), SELECTION_SOURCE)

    def test_a_surviving_bound_runs_again_under_asan(self):
        m = self.mutant("bound")
        mutate.run_mutant(self.wt, self.sel, m, self.args)
        self.assertEqual((m.status, m.config), ("survived", "default+asan"))
        configs = [[a for a in c if a.startswith("--config")] for c in self.calls()]
        self.assertEqual(configs[-1], ["--config=asan"])
        self.assertNotIn("//tests/x:x_model_test", self.calls()[-1])
        self.assertEqual(self.timings["//tests/x:new_test"], 1.0, "timed by its run")

    def test_cas_weak_runs_with_spurious_failures(self):
        m = self.mutant("cas_weak")
        mutate.run_mutant(self.wt, self.sel, m, self.args)
        self.assertEqual(m.config, "spurious_cas")
        self.assertTrue(all("--config=spurious_cas" in c for c in self.calls()))

    def test_a_surviving_memory_order_runs_again_under_tsan(self):
        m = self.mutant("mo_weaken")
        mutate.run_mutant(self.wt, self.sel, m, self.args)
        self.assertEqual(m.config, "default+tsan")

    def test_a_model_checker_out_of_time_kills_nothing(self):
        self.spec["test"]["//tests/x:x_model_test"] = "TIMEOUT"
        self.write_spec()
        m = self.mutant("cas_weak")
        mutate.run_mutant(self.wt, self.sel, m, self.args)
        self.assertEqual(m.status, "survived")
        self.assertIn("model checker ran out of its time budget", m.note)
        self.assertEqual(len(self.calls()), 2, "the next batch still ran")

    def test_a_hung_test_is_a_kill_by_timeout(self):
        self.spec["test"]["//tests/x:fast_test"] = "TIMEOUT"
        self.write_spec()
        m = self.mutant("cas_weak")
        mutate.run_mutant(self.wt, self.sel, m, self.args)
        self.assertEqual((m.status, m.killed_by), ("timeout", ["//tests/x:fast_test"]))
        self.assertEqual(len(self.calls()), 1)

    def test_a_marker_is_due_until_checked_with_its_current_tests(self):
        ledger = mutate.MarkerLedger(os.path.join(self.directory.name, "markers.json"))
        m = self.mutant("bound")
        m.fingerprint = mutate.selection_fingerprint(self.wt, m, self.sel.tests_of(m.file))
        self.assertTrue(ledger.due(m))
        m.marked_equivalent, m.marker_kind, m.status = "c.hpp:2: why", "equivalent", "survived"
        ledger.record(m, self.wt.rev)
        ledger.save()
        again = mutate.MarkerLedger(ledger.path)
        self.assertFalse(again.due(m))
        # a test added to the files' reverse dependencies makes it due again
        self.spec["query"]["rdeps(//..., //lci/x:detail/c.hpp)"].append("//tests/y:y_test")
        self.write_spec()
        other = mutate.Selection(self.wt, self.args, self.timings)
        m.fingerprint = mutate.selection_fingerprint(self.wt, m, other.tests_of(m.file))
        self.assertTrue(again.due(m))


class Verdicts(unittest.TestCase):
    def test_judge(self):
        checks = {"//t:m_model_test"}
        passed = "//t:a_test   PASSED in 0.1s\n"
        self.assertEqual(mutate.judge(passed, 0, checks), (None, [], ""))
        self.assertEqual(mutate.judge(passed + "//t:b_test   FAILED in 1s\n", 3, checks)[:2],
                         ("killed", ["//t:b_test"]))
        self.assertEqual(mutate.judge("//t:b_test   TIMEOUT in 5s\n", 3, checks)[:2],
                         ("timeout", ["//t:b_test"]))
        status, _, note = mutate.judge("//t:m_model_test   TIMEOUT in 5s\n", 3, checks)
        self.assertIsNone(status)
        self.assertIn("//t:m_model_test", note)
        self.assertEqual(mutate.judge("//t:a_test   FAILED TO BUILD\n", 1, checks)[0],
                         "uncompilable")
        self.assertEqual(mutate.judge("", None, checks)[0], "timeout")

    def test_old_records_in_todays_terms(self):
        old = {"status": "killed", "killed_by": ["//tests/cq:lcrq_model_test"],
               "note": "timeout: //tests/cq:lcrq_model_test"}
        self.assertEqual(mutate.normalize(old)["status"], "survived")
        old = dict(old, killed_by=["//tests/cq:lcrq_test"], note="timeout: //tests/cq:lcrq_test")
        self.assertEqual(mutate.normalize(old)["status"], "timeout")
        old = dict(old, killed_by=["//tests/cq:lcrq_test", "//tests/cq:a_test"])
        self.assertEqual(mutate.normalize(old)["status"], "killed")

    def test_columns_and_score(self):
        def m(status, **kw):
            x = mutate.Mutant("id", "lci/x/a.hpp", 1, "bound", "a", "b", "lci/x", "default")
            x.status = status
            for k, v in kw.items():
                setattr(x, k, v)
            return x
        mutants = [m("killed"), m("killed"), m("timeout"), m("survived"), m("unreachable"),
                   m("equivalent"), m("uncompilable"),
                   # a marker's check that survived stays in its column ...
                   m("survived", marked_equivalent="a: why", marker_kind="equivalent"),
                   # ... and one that killed it is a kill (a wrong marker)
                   m("killed", marked_equivalent="a: why", marker_kind="unreachable")]
        row = mutate.table(mutants).splitlines()[-1]
        self.assertEqual(row, "| **all** | 9 | 3 | 1 | 1 | 2 | 1 | 1 | 0 | 60.0% |")

    def test_unreachable_marker(self):
        markers = mutate.equivalence_markers(
            "// Unreachable mutants: bound. Needs a 64 GiB buffer.\nif (a < size_max) f();\n")
        self.assertEqual([(x.kind, x.tokens) for x in markers], [("unreachable", ["bound"])])
        self.assertIn("64 GiB", markers[0].reason)


if __name__ == "__main__":
    unittest.main()
