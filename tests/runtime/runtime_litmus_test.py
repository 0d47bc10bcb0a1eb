#!/usr/bin/env python3
"""The runtime's counters that hand work from one thread to another, as
litmus programs checked exhaustively under RC11 (tools/rc11/rc11.py), with
the memory orders read from the source lines they model.

Each counter decides which thread goes on once the others are done with
something: a device drained of its operations, a registration no peer's
access still pins, a rendezvous receive whose last chunk was copied, a
receive region whose messages were all handled. The thread that goes on
reuses what the others touched (frees, overwrites, reposts). Each scenario
is that hand-off cut down to the counter's accesses and the touched memory as
a plain ("na") location, and checks that no execution where the counter
lets the thread go on has a data race on that memory, or reads a count too
old. A missing release or acquire shows as such a race; TSan would see it
only when its threads happen to meet the same way, and two threads
progressing one device meet through other locks too (tests/runtime:
shared_progress_test), so the check is made here (docs/verification.md,
"RC11 litmus checks").

Run as: python3 tests/runtime/runtime_litmus_test.py (from the repository
root, or with the root as the first argument).
"""

import os
import sys
import unittest

ROOT = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 and os.path.isdir(sys.argv[1]) \
    else os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "tools", "rc11"))
import rc11  # noqa: E402
from rc11 import fetch_add, load, rmw, store  # noqa: E402


def source(*parts):
    return os.path.join(ROOT, "lci", *parts)


def orders():
    at = rc11.order_at
    backlog_hpp = source("runtime", "device_backlog.hpp")
    return {
        # in_flight_mark_t (request.hpp): arm(), and end() (disarm() and
        # complete_request() end the count through it)
        "arm": at(source("runtime", "request.hpp"), "count_->fetch_add(1"),
        "disarm": at(source("runtime", "request.hpp"), "count->fetch_sub(1"),
        # device_backlog_t: finish_step() and steps_left(), which the
        # device's drained() asks before device_accounting_t's
        # in_flight_none()
        "finish_step": at(source("runtime", "device_backlog.cpp"), "before = steps_.fetch_sub(1"),
        "drained_steps": at(backlog_hpp, "return steps_.load(util::mo_"),
        "drained_in_flight": at(source("runtime", "device_accounting.hpp"),
                                "return in_flight_count_.load(util::mo_"),
        "steps_left": at(backlog_hpp, "return steps_.load(util::mo_"),
        # mr_impl_t::unpin() and wait_unpinned()
        "unpin": at(source("runtime", "resources.hpp"), "pins.fetch_sub(1"),
        "wait_unpinned": at(source("progress", "progress.cpp"), "mr.pins.load(util::mo_"),
        # handle_rdv_chunk()'s byte count
        "chunk_copied": at(source("protocol", "rendezvous.cpp"), "state_of(recv).copied.fetch_add(size"),
        # recv_regions_t: release_arrival(), release_posting(), finish(), post_ready()
        "arrival": at(source("runtime", "recv_regions.cpp"), "region.balance.fetch_sub(1"),
        "posting": at(source("runtime", "recv_regions.cpp"), "region.balance.fetch_add(messages"),
        # finish()'s store, two lines below its comment (post_ready() marks
        # a region ready again, relaxed, when a repost fails)
        "ready": at(source("runtime", "recv_regions.cpp"),
                    "pairs with the acquire exchange in post_ready()", offset=2),
        "take_ready": at(source("runtime", "recv_regions.cpp"), "region.ready.exchange(false"),
        # set_host_lookup() and current_host()
        "install_lookup": at(source("runtime", "host.cpp"), "g_host_lookup.store(lookup"),
        "read_lookup": at(source("runtime", "host.cpp"), "= g_host_lookup.load(util::mo_"),
        # process_network_t's constructor and resolve_runtime()
        "publish_slot": at(source("runtime", "process_host.cpp"),
                           "g_process_runtime_slot.store(&host"),
        "read_slot": at(source("runtime", "resolve.hpp"), "slot = g_process_runtime_slot.load("),
    }


class RuntimeLitmusTest(unittest.TestCase, rc11.LitmusAssertions):
    def assertPublished(self, publish_order, read_order, what):
        """An object built with plain writes, then its address published;
        a reader that finds the address reads the object."""
        self.assertRaceFree(
            {"address": 0, "object": 0},
            [[store("object", 1, "na"), store("address", 1, publish_order)],
             [load("address", read_order, "address"), load("object", "na", "field")]],
            lambda r: r["address"] == 1, what)

    def test_a_finished_backlog_step_is_seen_with_the_operation_it_put_in_flight(self):
        # A backlogged step runs on a progressing thread: it arms its
        # request's in-flight mark, then counts itself finished. A thread
        # asking drained() that sees the step finished must see the mark,
        # or it answers "drained" while the operation still reads the
        # caller's buffer.
        o = orders()
        self.assertForbidden(
            {"steps": 1, "in_flight": 0},
            [[fetch_add("in_flight", 1, o["arm"]), fetch_add("steps", -1, o["finish_step"])],
             [load("steps", o["drained_steps"], "steps"),
              load("in_flight", o["drained_in_flight"], "in_flight")]],
            lambda r: r["steps"] == 0 and r["in_flight"] == 0,
            "drained() sees the step finished but not the operation it started")

    def test_drained_orders_a_finished_operation_before_the_buffers_reuse(self):
        # An operation (a send reading the caller's buffer) finishes on a
        # progressing thread, which disarms its mark; the caller, told
        # drained, overwrites the buffer.
        o = orders()
        self.assertRaceFree(
            {"steps": 0, "in_flight": 1, "buffer": 0},
            [[load("buffer", "na", "sent"), fetch_add("in_flight", -1, o["disarm"])],
             [load("steps", o["drained_steps"], "steps"),
              load("in_flight", o["drained_in_flight"], "in_flight"),
              store("buffer", 1, "na")]],
            lambda r: r["steps"] == 0 and r["in_flight"] == 0,
            "an operation's read of the buffer and its reuse after drained()")

    def test_a_device_closes_after_its_last_backlog_step(self):
        # drain_before_close() progresses until backlog_steps_left() is
        # false; the last step read the caller's buffer (a control message's
        # bytes, an RTR's fields) before it counted itself finished. What
        # follows the drain frees that memory.
        o = orders()
        self.assertRaceFree(
            {"steps": 1, "buffer": 0},
            [[load("buffer", "na", "read"), fetch_add("steps", -1, o["finish_step"])],
             [load("steps", o["steps_left"], "steps"), store("buffer", 1, "na")]],
            lambda r: r["steps"] == 0,
            "a backlog step's read and the free after backlog_steps_left()")

    def test_no_byte_of_a_peers_access_moves_after_deregistration(self):
        # A peer's checked put lands in the registration, then unpins it;
        # deregister_memory waits until no pin is left, and the program then
        # reuses the memory.
        o = orders()
        self.assertRaceFree(
            {"pins": 1, "region": 0},
            [[store("region", 1, "na"), fetch_add("pins", -1, o["unpin"])],
             [load("pins", o["wait_unpinned"], "pins"), store("region", 2, "na")]],
            lambda r: r["pins"] == 0,
            "a put's bytes and the program's write after deregister_memory")

    def test_the_last_chunk_of_a_rendezvous_sees_every_other_chunk(self):
        # Two chunks of one receive, copied by two threads; the one whose
        # count completes the receive signals it, and the user then reads
        # the whole buffer: here the completing thread reads the other's
        # chunk, whichever thread that is.
        o = orders()
        copied = o["chunk_copied"]
        threads = [[store("chunk0", 1, "na"), fetch_add("copied", 1, copied, "before0"),
                    load("chunk1", "na", "seen1")],
                   [store("chunk1", 1, "na"), fetch_add("copied", 1, copied, "before1"),
                    load("chunk0", "na", "seen0")]]
        init = {"copied": 0, "chunk0": 0, "chunk1": 0}
        for completer in ("before0", "before1"):
            # The other thread's read is not made (it did not complete): a
            # program without it, whose executions are those of the
            # completer reading.
            reader = 0 if completer == "before0" else 1
            program = [list(ops) for ops in threads]
            del program[1 - reader][2]
            self.assertRaceFree(
                init, program, lambda r, c=completer: r[c] == 1,
                f"the chunk copied by the other thread, read after {completer}'s completion")

    def test_a_region_reposted_after_its_posting_is_released_last(self):
        # A message's handler reads it in the region and releases its
        # arrival; the network then releases the posting, whose count
        # finds every arrival released, so it marks the region ready; a
        # poster takes the mark and reposts the region, where the network
        # writes again.
        o = orders()
        self.assertRaceFree(
            {"balance": 0, "ready": 0, "message": 0},
            [[load("message", "na", "read"), fetch_add("balance", -1, o["arrival"], "arrival")],
             [fetch_add("balance", 1, o["posting"], "posting"), store("ready", 1, o["ready"])],
             [rmw("ready", lambda v: 0, o["take_ready"], "taken"), store("message", 2, "na")]],
            lambda r: r["posting"] == -1 and r["taken"] == 1,
            "a handler's read and the region's next use, the posting released last")

    def test_a_region_reposted_after_its_last_arrival_is_released_last(self):
        # The network wrote the region's last message, then released the
        # posting; a handler's release of the last arrival finds the posting
        # released, so it marks the region ready; a poster reposts it.
        o = orders()
        self.assertRaceFree(
            {"balance": 0, "ready": 0, "last_message": 0},
            [[store("last_message", 1, "na"), fetch_add("balance", 1, o["posting"], "posting")],
             [fetch_add("balance", -1, o["arrival"], "arrival"), store("ready", 1, o["ready"])],
             [rmw("ready", lambda v: 0, o["take_ready"], "taken"),
              store("last_message", 2, "na")]],
            lambda r: r["arrival"] == 1 and r["taken"] == 1,
            "the network's last write and the region's next use, the arrival released last")

    def test_a_host_lookup_is_called_with_what_its_installer_set_up(self):
        # A process-mode job (sim/sim_process.cpp) stores its host in a
        # plain global, then installs the lookup that returns it; a thread
        # whose operation finds the lookup installed calls it, reading the
        # global. No other edge need order that thread after the job's
        # construction: it may have started before, and its first LCI call
        # goes through current_host(), not through the job's creation guard.
        o = orders()
        self.assertPublished(o["install_lookup"], o["read_lookup"],
                             "the job's host and a call of the lookup that returns it")

    def test_a_process_hosts_slot_is_read_after_the_host_is_built(self):
        # process_host() builds the host (its global-runtime slot set to
        # null among its fields), then publishes the slot's address; an
        # operation that names no runtime reads the address, then the slot.
        # A thread that calls an operation before any runtime exists, while
        # another thread's first call builds the host, must get the "no
        # runtime" error, not a race with the host's construction.
        o = orders()
        self.assertPublished(o["publish_slot"], o["read_slot"],
                             "the host's construction and an operation's read of its slot")

if __name__ == "__main__":
    unittest.main()
