#!/usr/bin/env python3
"""The RC11 checker (tools/rc11/rc11.py) on the classic litmus shapes, whose
verdicts under RC11 are known (Lahav et al., PLDI 2017, and the C++ standard's
own examples): each shape once with orders that forbid the outcome and once
weakened so that the model allows it."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "..", "..",
                                "tools", "rc11"))
import rc11  # noqa: E402
from rc11 import cas, fetch_add, load, store  # noqa: E402


def allowed(init, threads, predicate):
    return rc11.exists(init, threads, predicate) is not None


def message_passing(write_order, read_order):
    return ({"x": 0, "y": 0},
            [[store("x", 1, "rlx"), store("y", 1, write_order)],
             [load("y", read_order, "r1"), load("x", "rlx", "r2")]],
            lambda r: r["r1"] == 1 and r["r2"] == 0)


def store_buffering(order):
    load_order = "acq" if order == "rel" else order
    return ({"x": 0, "y": 0},
            [[store("x", 1, order), load("y", load_order, "r1")],
             [store("y", 1, order), load("x", load_order, "r2")]],
            lambda r: r["r1"] == 0 and r["r2"] == 0)


class Rc11Test(unittest.TestCase):
    def test_message_passing_needs_release_and_acquire(self):
        self.assertFalse(allowed(*message_passing("rel", "acq")))
        self.assertFalse(allowed(*message_passing("sc", "sc")))
        self.assertTrue(allowed(*message_passing("rlx", "acq")))
        self.assertTrue(allowed(*message_passing("rel", "rlx")))

    def test_message_passing_through_a_release_sequence(self):
        # An RMW of another thread continues the release sequence of y's store.
        init = {"x": 0, "y": 0}
        threads = [[store("x", 1, "rlx"), store("y", 1, "rel")],
                   [fetch_add("y", 1, "rlx")],
                   [load("y", "acq", "r1"), load("x", "rlx", "r2")]]
        self.assertFalse(allowed(init, threads, lambda r: r["r1"] == 2 and r["r2"] == 0))
        # A plain store of another thread ends it.
        threads[1] = [store("y", 2, "rlx")]
        self.assertTrue(allowed(init, threads, lambda r: r["r1"] == 2 and r["r2"] == 0))

    def test_store_buffering_needs_seq_cst(self):
        self.assertFalse(allowed(*store_buffering("sc")))
        self.assertTrue(allowed(*store_buffering("rel")))
        self.assertTrue(allowed(*store_buffering("rlx")))

    def test_store_buffering_with_one_side_weakened(self):
        init, threads, outcome = store_buffering("sc")
        threads[0][1] = load("y", "acq", "r1")
        self.assertTrue(allowed(init, threads, outcome))

    def test_seq_cst_accesses_ordered_through_happens_before(self):
        # scb's sb|!=loc;hb;sb|!=loc: x's seq_cst store happens before z's
        # seq_cst load through a release/acquire pair on y, which orders the two
        # in S although no seq_cst access lies between them.
        init = {"x": 0, "y": 0, "z": 0}
        threads = [[store("x", 1, "sc"), store("y", 1, "rel")],
                   [load("y", "acq", "r1"), load("z", "sc", "r2")],
                   [store("z", 1, "sc"), load("x", "sc", "r3")]]
        outcome = lambda r: (r["r1"], r["r2"], r["r3"]) == (1, 0, 0)
        self.assertFalse(allowed(init, threads, outcome))
        threads[1][0] = load("y", "rlx", "r1")
        self.assertTrue(allowed(init, threads, outcome))

    def test_independent_reads_of_independent_writes(self):
        def iriw(read_order):
            return ({"x": 0, "y": 0},
                    [[store("x", 1, "sc")], [store("y", 1, "sc")],
                     [load("x", read_order, "a"), load("y", read_order, "b")],
                     [load("y", read_order, "c"), load("x", read_order, "d")]],
                    lambda r: (r["a"], r["b"], r["c"], r["d"]) == (1, 0, 1, 0))
        self.assertFalse(allowed(*iriw("sc")))
        self.assertTrue(allowed(*iriw("acq")))

    def test_load_buffering_has_no_thin_air(self):
        init = {"x": 0, "y": 0}
        threads = [[load("x", "rlx", "r1"), store("y", 1, "rlx")],
                   [load("y", "rlx", "r2"), store("x", 1, "rlx")]]
        self.assertFalse(allowed(init, threads, lambda r: r["r1"] == 1 and r["r2"] == 1))
        self.assertTrue(allowed(init, threads, lambda r: r["r1"] == 1 and r["r2"] == 0))

    def test_read_read_coherence(self):
        init = {"x": 0}
        threads = [[store("x", 1, "rlx")],
                   [load("x", "rlx", "r1"), load("x", "rlx", "r2")]]
        self.assertFalse(allowed(init, threads, lambda r: r["r1"] == 1 and r["r2"] == 0))
        self.assertTrue(allowed(init, threads, lambda r: r["r1"] == 0 and r["r2"] == 1))

    def test_read_modify_writes_are_atomic(self):
        init = {"x": 0}
        threads = [[fetch_add("x", 1, "rlx", "r1")], [fetch_add("x", 1, "rlx", "r2")]]
        self.assertFalse(allowed(init, threads, lambda r: r["r1"] == 0 and r["r2"] == 0))
        self.assertTrue(allowed(init, threads, lambda r: r["r1"] == 1 and r["r2"] == 0))

    def test_a_cas_that_must_succeed(self):
        init = {"x": 0}
        threads = [[cas("x", 0, 5, "rlx", "r1")], [store("x", 3, "rlx")],
                   [load("x", "rlx", "r2"), load("x", "rlx", "r3")]]
        # The CAS read 0, so the store of 3 is mo-after it or before it: 5 then 3,
        # or 3 then 5 would need the CAS to read 3.
        self.assertFalse(allowed(init, threads, lambda r: r["r2"] == 3 and r["r3"] == 5))
        self.assertTrue(allowed(init, threads, lambda r: r["r2"] == 5 and r["r3"] == 3))

    def test_seq_cst_orders_reads_of_a_message(self):
        # Message passing through sc accesses on both sides of the data is
        # forbidden; a relaxed load of the flag that reads the new value may
        # still be followed by a seq_cst load of the data that reads the old
        # one (the flag's store and load make no happens-before).
        init = {"x": 0, "y": 0}
        threads = [[fetch_add("x", 1, "sc"), fetch_add("y", 1, "sc")],
                   [load("y", "rlx", "r1"), load("x", "sc", "r2")]]
        self.assertTrue(allowed(init, threads, lambda r: r["r1"] == 1 and r["r2"] == 0))
        threads[1][0] = load("y", "acq", "r1")
        self.assertFalse(allowed(init, threads, lambda r: r["r1"] == 1 and r["r2"] == 0))

    def test_data_published_by_release_and_acquire_is_race_free(self):
        # Message passing with plain data: the flag's release and acquire
        # order the data's write before its read in every execution where
        # the read runs after the flag was seen (here unconditionally: a
        # reader that did not see the flag races, so the check covers the
        # reader that waits for it by its predicate below).
        def program(write_order, read_order):
            return ({"data": 0, "flag": 0},
                    [[store("data", 1, "na"), store("flag", 1, write_order)],
                     [load("flag", read_order, "f"), load("data", "na", "d")]])
        init, threads = program("rel", "acq")
        # Races exist where the flag was not seen; none where it was.
        for execution in rc11.executions(init, threads, lambda r: r["f"] == 1):
            self.assertIsNone(rc11.racing_pair(execution), execution.describe())
        for write_order, read_order in (("rlx", "acq"), ("rel", "rlx"), ("rlx", "rlx")):
            init, threads = program(write_order, read_order)
            racy = [e for e in rc11.executions(init, threads, lambda r: r["f"] == 1)
                    if rc11.racing_pair(e) is not None]
            self.assertTrue(racy, f"{write_order}/{read_order}: no race found")

    def test_a_read_before_a_release_races_with_a_reuse_only_without_it(self):
        # Load buffering with plain data: thread 0 reads a buffer, then
        # releases it (a counter); thread 1, seeing the release, writes the
        # buffer. RC11's no-thin-air axiom keeps even the relaxed variant
        # from reading the later write, but without release and acquire the
        # read and the write race.
        def program(release_order, acquire_order):
            return ({"buffer": 0, "count": 1},
                    [[load("buffer", "na", "seen"), fetch_add("count", -1, release_order)],
                     [load("count", acquire_order, "c"), store("buffer", 1, "na")]])
        init, threads = program("rel", "acq")
        for execution in rc11.executions(init, threads, lambda r: r["c"] == 0):
            self.assertIsNone(rc11.racing_pair(execution), execution.describe())
        init, threads = program("rlx", "rlx")
        self.assertFalse(allowed(init, threads, lambda r: r["c"] == 0 and r["seen"] == 1))
        racy = [e for e in rc11.executions(init, threads, lambda r: r["c"] == 0)
                if rc11.racing_pair(e) is not None]
        self.assertTrue(racy)

    def test_races_need_a_plain_access_a_write_and_two_threads(self):
        # Two relaxed writes do not race; a plain write and a relaxed read
        # do; two plain reads do not; one thread's plain accesses never do.
        self.assertIsNone(rc11.race({"x": 0}, [[store("x", 1, "rlx")], [store("x", 2, "rlx")]]))
        self.assertIsNotNone(rc11.race({"x": 0}, [[store("x", 1, "na")], [load("x", "rlx", "r")]]))
        self.assertIsNone(rc11.race({"x": 0}, [[load("x", "na", "a")], [load("x", "na", "b")]]))
        self.assertIsNone(rc11.race({"x": 0}, [[store("x", 1, "na"), load("x", "na", "r")]]))
        # An initial value is written before every thread starts.
        self.assertIsNone(rc11.race({"x": 0}, [[load("x", "na", "a")], [load("x", "rlx", "b")]]))

    def test_order_at_reads_a_source_line(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".hpp", delete=False) as f:
            f.write("x.load(util::mo_acquire);  // [Q]\n"
                    "y.load(mutated(\"v\") ? util::mo_relaxed : util::mo_seq_cst);  // [R]\n"
                    "z.compare_exchange_strong(e, d, util::mo_acq_rel, util::mo_acquire);  // [S]\n")
        try:
            self.assertEqual(rc11.order_at(f.name, "[Q]"), "acq")
            self.assertEqual(rc11.order_at(f.name, "[R]"), "sc")
            self.assertEqual(rc11.order_at(f.name, "[S]", 0), "acq_rel")
            with self.assertRaises(LookupError):
                rc11.order_at(f.name, "load")
        finally:
            os.unlink(f.name)


if __name__ == "__main__":
    unittest.main()
