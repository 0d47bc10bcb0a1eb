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
from rc11 import cas, fetch_add, load  # noqa: E402

FAA_ARRAY = os.path.join(ROOT, "lci", "cq", "cq_faa_array.hpp")
CRQ = os.path.join(ROOT, "lci", "cq", "detail", "crq_segment.hpp")


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


class CqLitmusTest(unittest.TestCase):
    def assertForbidden(self, init, threads, outcome, what):
        execution = rc11.exists(init, threads, outcome)
        if execution is not None:
            self.fail(f"{what}: RC11 allows it:\n{execution.describe()}")

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


if __name__ == "__main__":
    unittest.main()
