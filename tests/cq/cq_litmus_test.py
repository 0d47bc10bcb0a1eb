#!/usr/bin/env python3
"""The completion queues' counter protocols as litmus programs, checked
exhaustively under RC11 (tools/rc11/rc11.py) with the memory orders read from
the source lines they model.

Each scenario is a few operations of faa_array_t or crq_segment_t, cut down to
their accesses of head_ and tail_ (a successful ticket CAS is an RMW that
must succeed), and an outcome that the queue's invariant forbids. The orders
come from the code, so a weakened order there is a weakened order here: these
are the checks that kill a relaxed load that reads a counter "too new"
(message passing without an acquire), which neither Relacy (it runs threads
step by step, so a load never reads ahead) nor TSan (happens-before only) nor
x86 can show (docs/verification.md, "RC11 litmus checks").

Run as: python3 tests/cq/cq_litmus_test.py (from the repository root, or
with the root as the first argument).
"""

import os
import sys
import unittest

ROOT = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 and os.path.isdir(sys.argv[1]) \
    else os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "tools", "rc11"))
import rc11  # noqa: E402
from rc11 import cas, fetch_add, load, store  # noqa: E402

FAA_ARRAY = os.path.join(ROOT, "lci", "cq", "cq_faa_array.hpp")
CRQ = os.path.join(ROOT, "lci", "cq", "detail", "crq_segment.hpp")
LCRQ = os.path.join(ROOT, "lci", "cq", "cq_lcrq.hpp")
HAZARD_SLOTS = os.path.join(ROOT, "lci", "cq", "detail", "hazard_slots.hpp")


def faa_orders():
    at = lambda anchor, which=-1: rc11.order_at(FAA_ARRAY, anchor, which)
    return {
        "A1": at("// [A1] see above"),
        "A1_again": at("// [A1] again, see above"),
        "A2": at("// [A2]"),
        "A": at("tail_.value.compare_exchange_strong(tail, tail + 1", 0),
        "B1": at("// [B1]"),
        "B2": at("// [B2]"),
        "B": at("head_.value.compare_exchange_strong(head, head + 1", 0),
    }


def crq_orders():
    at = lambda anchor, which=-1: rc11.order_at(CRQ, anchor, which)
    return {
        "enqueue_ticket": at("tail_raw = tail_.value.fetch_add(1"),
        "dequeue_ticket": at("ticket = head_.value.fetch_add(1"),
        "P1": at("// [P1]"),
        "P2": at('util::mutated("crq_relaxed_empty_tail")'),
    }


def lcrq_orders():
    at = lambda anchor, **kw: rc11.order_at(LCRQ, anchor, **kw)
    # The destructor, push() and pop() load next() with the same statement;
    # push's help of tail_segment_, advance_head()'s and its head CAS end
    # alike: in file order.
    next_load = "segment_t* next = segment->next().load(util::mo_"
    tail_help = "expected, next, util::mo_"
    return {
        "push_next": at(next_load, occurrence=1, lines=3),
        "pop_next": at(next_load, occurrence=2, lines=3),
        "push_help": at(tail_help, which=0, occurrence=0, lines=3),
        "pop_help": at(tail_help, which=0, occurrence=1, lines=3),
        # `mutated(...) ? mo_relaxed` and, on the next line, `: mo_seq_cst`
        "link": at('util::mutated("lcrq_relaxed_next_link")', offset=1),
        "protect_reload": rc11.order_at(HAZARD_SLOTS, "// [H] re-load"),
        # acquire()'s publication in an owned slot, then protect()'s.
        "owned_publish": rc11.order_at(HAZARD_SLOTS, "// [H] publication",
                                       occurrence=0, lines=2),
        "protect_publish": rc11.order_at(HAZARD_SLOTS, "// [H] publication",
                                         occurrence=1, lines=2),
        "scan": rc11.order_at(HAZARD_SLOTS, "== p) return true;"),
        "append_tail": at("tail_expected, fresh, util::mo_", which=0),
        "pop_help_failure": at(tail_help, which=1, occurrence=1, lines=3),
        "head_advance": at(tail_help, which=0, occurrence=2, lines=3),
    }


class CqLitmusTest(unittest.TestCase, rc11.LitmusAssertions):
    def test_faa_array_push_sees_a_head_no_older_than_its_tail(self):
        # Capacity 1, holding one value. A thread pops it and pushes another;
        # a pusher whose [A1] reads the new tail and whose [A2] reads the head
        # from before the pop counts 2 values: the assertion
        # `tail - head <= values_max()` fires (or, with room left, it answers
        # full although the queue never held capacity values).
        o = faa_orders()
        self.assertForbidden(
            {"tail": 1, "head": 0},
            [[cas("head", 0, 1, o["B"]), cas("tail", 1, 2, o["A"])],
             [load("tail", o["A1"], "tail"), load("head", o["A2"], "head")]],
            lambda r: r["tail"] - r["head"] > 1,
            "a push ([A1], [A2]) counts more values than the capacity")

    def test_faa_array_push_rereads_a_tail_no_newer_than_the_head(self):
        # [A1] again: a push that found head > tail reads tail again. Capacity
        # 1. Thread 0 pushes and pops; thread 1 pushes, pops and pushes. The
        # pusher's first [A1] reads the initial tail, its [A2] thread 0's pop
        # (so it reads tail again); the second [A1] reads thread 1's last push
        # and the second [A2] the head from before thread 1's pop: 3 - 1 > 1.
        o = faa_orders()
        self.assertForbidden(
            {"tail": 0, "head": 0},
            [[cas("tail", 0, 1, o["A"]), cas("head", 0, 1, o["B"])],
             [cas("tail", 1, 2, o["A"]), cas("head", 1, 2, o["B"]), cas("tail", 2, 3, o["A"])],
             [load("tail", o["A1"], "tail0"), load("head", o["A2"], "head0"),
              load("tail", o["A1_again"], "tail"), load("head", o["A2"], "head")]],
            lambda r: r["head0"] > r["tail0"] and r["tail"] - r["head"] > 1,
            "a push's second [A1] counts more values than the capacity")

    def test_faa_array_pop_sees_a_tail_no_older_than_its_head(self):
        # A thread pushes and pops; a popper whose [B1] reads the new head and
        # whose [B2] reads the tail from before the push finds head > tail:
        # the assertion `head <= tail` fires.
        o = faa_orders()
        self.assertForbidden(
            {"tail": 0, "head": 0},
            [[cas("tail", 0, 1, o["A"]), cas("head", 0, 1, o["B"])],
             [load("head", o["B1"], "head"), load("tail", o["B2"], "tail")]],
            lambda r: r["head"] > r["tail"],
            "a pop ([B1], [B2]) sees more pops than pushes")

    def test_crq_empty_answer_only_when_empty(self):
        # The ring holds a; a thread enqueues b, then dequeues a, so the ring
        # is never empty. A dequeuer whose [P1] reads that dequeue's head (1)
        # and whose [P2] reads the tail from before the enqueue (1) answers
        # empty without a ticket.
        o = crq_orders()
        self.assertForbidden(
            {"tail": 1, "head": 0},
            [[fetch_add("tail", 1, o["enqueue_ticket"]), fetch_add("head", 1, o["dequeue_ticket"])],
             [load("head", o["P1"], "head"), load("tail", o["P2"], "tail")]],
            lambda r: r["tail"] <= r["head"],
            "a dequeue ([P1], [P2]) answers empty while the ring holds a value")

    def test_crq_enqueuer_sees_the_head_of_a_dequeuer_that_gave_up(self):
        # The case the enqueue's head check exists for: dequeuer D takes
        # ticket 1 and finds an older lap's value in the cell, marks it unsafe
        # and moves on; the older lap's dequeuer then takes its value, which
        # leaves the cell empty, unsafe, with index 1. Enqueuer E, ticket 1,
        # reads that cell state. Had it read head <= 1 it would store a value
        # that D, its dequeuer, has already passed: lost. Every cell write after
        # reset is a CAS2 (a full barrier, util::atomic_u64_pair), so E's
        # acquire load of the cell reads from the release sequence of D's mark
        # and D's ticket happens before E's head load: the check holds with
        # any order of that load or of D's ticket (tools/mutate_records/2026-11-28-runs-29-36.md,
        # the equivalence of crq_segment.hpp's enqueue head load).
        # Cell states: 0 = older lap's value, safe; 1 = the same, unsafe;
        # 2 = empty, unsafe, index 1.
        for head_order in ("rlx", "acq", "sc"):
            for ticket_order in ("rlx", "acq_rel", "sc"):
                self.assertForbidden(
                    {"head": 1, "tail": 1, "cell": 0},
                    [[fetch_add("head", 1, ticket_order), cas("cell", 0, 1, "sc")],
                     [cas("cell", 1, 2, "sc")],
                     [fetch_add("tail", 1, "sc"), load("cell", "acq", "cell"),
                      load("head", head_order, "head")]],
                    lambda r: r["cell"] == 2 and r["head"] <= 1,
                    f"an enqueuer ({head_order} head load, {ticket_order} dequeue ticket) "
                    "stores into a cell its dequeuer passed")

    def assert_fresh_segment_published(self, helper, what):
        # A closed segment (1) gets a successor, a recycled segment (2) that
        # the appender resets (its next() from the last incarnation, 9, back
        # to null) and links. A later pusher reaches segment 2 through
        # tail_segment_ (the hazard [H] re-load) and reads its next(): it must
        # see the reset, not the old link, or it follows a pointer into a
        # segment that may since have been retired.
        o = lcrq_orders()
        appender = [store("fresh_next", 0, "rlx"), cas("closed_next", 0, 2, o["link"])]
        if helper is None:  # append() moves tail_segment_ itself
            appender.append(cas("tail_segment", 1, 2, o["append_tail"]))
            threads = [appender]
        else:  # a pusher or popper helps it forward
            next_order, help_order = helper
            threads = [appender, [load("closed_next", next_order, "next"),
                                  cas("tail_segment", 1, 2, help_order)]]
        threads.append([load("tail_segment", o["protect_reload"], "segment"),
                        load("fresh_next", o["push_next"], "fresh_next")])
        self.assertForbidden(
            {"closed_next": 0, "fresh_next": 9, "tail_segment": 1},
            threads,
            lambda r: r["segment"] == 2 and r["fresh_next"] == 9 and r.get("next", 2) == 2,
            what)

    def test_lcrq_append_publishes_the_fresh_segment(self):
        self.assert_fresh_segment_published(None, "append()'s tail_segment_ CAS")

    def test_lcrq_push_help_publishes_the_fresh_segment(self):
        o = lcrq_orders()
        self.assert_fresh_segment_published((o["push_next"], o["push_help"]),
                                            "push()'s help of tail_segment_")

    def test_lcrq_pop_help_publishes_the_fresh_segment(self):
        o = lcrq_orders()
        self.assert_fresh_segment_published((o["pop_next"], o["pop_help"]),
                                            "advance_head()'s help of tail_segment_")

    def assert_old_tail_protected(self, mover, publication="protect_publish"):
        # The hazard protocol [H] over tail_segment_. Segment 1 is closed and
        # drained, segment 2 follows it. A mover takes tail_segment_ from 1 to
        # 2: append() itself, a pusher's help, or advance_head() of the
        # reclaimer R. R then unlinks 1 from head_segment_ and scans the
        # hazard slots before it recycles 1. Pusher P publishes 1 in its slot
        # and re-loads tail_segment_. If P's re-load still reads 1 and R's
        # scan misses P's slot, R recycles the segment P goes on to use.
        # Store-buffering between P and {mover, R}: the move of tail_segment_
        # must be in S, and R's read of it (its CAS, or the CAS's failure
        # when another thread moved it) too.
        o = lcrq_orders()
        pusher = [store("slot", 1, o[publication]),
                  load("tail_segment", o["protect_reload"], "seen")]
        reclaimer = []
        threads = [pusher]
        if mover is None:
            reclaimer.append(cas("tail_segment", 1, 2, o["pop_help"]))
        else:
            reclaimer.append(load("tail_segment", o["pop_help_failure"], "tail"))
            threads.append([cas("tail_segment", 1, 2, mover)])
        reclaimer += [cas("head_segment", 1, 2, o["head_advance"]),
                      load("slot", o["scan"], "hazard")]
        threads.append(reclaimer)
        self.assertForbidden(
            {"slot": 0, "tail_segment": 1, "head_segment": 1},
            threads,
            lambda r: r["seen"] == 1 and r["hazard"] == 0 and r.get("tail", 2) == 2,
            "a reclaimer recycles the old tail segment under a pusher's hazard")

    def test_lcrq_old_tail_protected_when_advance_head_moves_it(self):
        self.assert_old_tail_protected(None)

    def test_lcrq_old_tail_protected_by_an_owned_slot(self):
        # acquire() of a thread's owned slot that held another segment.
        self.assert_old_tail_protected(None, "owned_publish")

    def test_lcrq_old_tail_protected_when_append_moves_it(self):
        self.assert_old_tail_protected(lcrq_orders()["append_tail"])

    def test_lcrq_old_tail_protected_when_a_pusher_moves_it(self):
        self.assert_old_tail_protected(lcrq_orders()["push_help"])

    def test_lcrq_pop_empty_and_push_successor_in_store_buffering_shape(self):
        # Two queues, store-buffering shape: T1 pushes to queue A, then pops
        # from LCRQ B; T2 pushes to B, then pops from A. Both pops empty is
        # not linearizable (each push would follow the other thread's pop).
        # B's head segment 1 is closed and drained; a pusher L gets a ticket
        # from its tail (CLOSED), links segment 2 and stores there. T1's pop
        # sees that ticket in the tail ([P2], so it takes a ticket, finds the
        # cell empty, and its dequeue answers empty) and then no successor
        # (pop's next() load); T2's push reads the successor (push's next()
        # load) and pushes there. Queue A is cut down to a seq_cst counter:
        # its push a seq_cst RMW, its empty answer a seq_cst load (both
        # queues' are). Both next() loads must be in S: either one made
        # acquire leaves the link's place in S unconstrained, and both pops
        # answer empty.
        c, o = crq_orders(), lcrq_orders()
        self.assertForbidden(
            {"a": 0, "tail": 1, "next": 0},
            [[fetch_add("a", 1, "sc"), load("tail", c["P2"], "tail"),
              load("next", o["pop_next"], "pop_next")],
             [fetch_add("tail", 1, c["enqueue_ticket"]), cas("next", 0, 2, o["link"])],
             [load("next", o["push_next"], "push_next"), load("a", "sc", "a")]],
            lambda r: (r["tail"] == 2 and r["pop_next"] == 0 and r["push_next"] == 2 and
                       r["a"] == 0),
            "a pop of B and a pop of A both answer empty after each thread's push")


if __name__ == "__main__":
    unittest.main()
