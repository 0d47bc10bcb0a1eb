"""Tests of tools/lcirun's key-value exchange (the Exchange class), driven
request by request without processes or sockets."""

import importlib.machinery
import importlib.util
import os
import sys
import unittest


def load_lcirun():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "tools",
                        "lcirun")
    loader = importlib.machinery.SourceFileLoader("lcirun", path)
    spec = importlib.util.spec_from_loader("lcirun", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


lcirun = load_lcirun()
JOB = "token"


class FakeClient:
    """Stands in for a connection: the exchange only reads and sets rank."""

    def __init__(self):
        self.rank = None


class ExchangeTest(unittest.TestCase):

    def setUp(self):
        self.exchange = lcirun.Exchange(3, JOB)
        self.clients = [FakeClient() for _ in range(3)]
        for rank, client in enumerate(self.clients):
            self.assertEqual(self.request(client, "init %d 3 %s" % (rank, JOB)),
                             [(client, "ok")])

    def request(self, client, line):
        return self.exchange.handle(client, line)

    def reply(self, client, line):
        """The single reply to a request answered at once."""
        replies = self.request(client, line)
        self.assertEqual(len(replies), 1, replies)
        self.assertIs(replies[0][0], client)
        return replies[0][1]

    def collective(self, kind):
        """Every rank enters kind; returns the replies of the last entry."""
        for client in self.clients[:-1]:
            self.assertEqual(self.request(client, kind), [])
        return self.request(self.clients[-1], kind)

    def test_put_is_visible_after_the_fence_only(self):
        a, b, _ = self.clients
        self.assertEqual(self.reply(a, "put addr 00ff10"), "ok")
        self.assertEqual(self.reply(b, "get 0 addr"), "missing")
        replies = self.collective("fence")
        self.assertEqual(sorted(id(c) for c, _ in replies),
                         sorted(id(c) for c in self.clients))
        self.assertTrue(all(reply == "ok" for _, reply in replies))
        self.assertEqual(self.reply(b, "get 0 addr"), "value 00ff10")

    def test_values_are_kept_per_rank(self):
        a, b, c = self.clients
        self.reply(a, "put addr aa")
        self.reply(b, "put addr bb")
        self.collective("fence")
        self.assertEqual(self.reply(c, "get 0 addr"), "value aa")
        self.assertEqual(self.reply(c, "get 1 addr"), "value bb")
        self.assertEqual(self.reply(c, "get 2 addr"), "missing")

    def test_empty_and_largest_values(self):
        a, b, _ = self.clients
        self.assertEqual(self.reply(a, "put empty "), "ok")
        self.assertEqual(self.reply(a, "put big " + "ab" * 1024), "ok")
        self.assertTrue(self.reply(a, "put huge " + "ab" * 1025)
                        .startswith("error "))
        self.collective("fence")
        self.assertEqual(self.reply(b, "get 0 empty"), "value ")
        self.assertEqual(self.reply(b, "get 0 big"), "value " + "ab" * 1024)

    def test_bad_requests_are_refused(self):
        a = self.clients[0]
        for line in ["put bad-key 00", "put k 0", "put k zz", "get 3 k",
                     "get x k", "get 0 " + "k" * 65, "fence now", "dance", ""]:
            self.assertTrue(self.reply(a, line).startswith("error "), line)

    def test_init_is_checked(self):
        fresh = FakeClient()
        self.assertEqual(self.reply(fresh, "get 0 k"), "error send init first")
        self.assertIn("wrong job token", self.reply(fresh, "init 0 3 other"))
        self.assertIn("this job has 3 ranks",
                      self.reply(fresh, "init 0 4 " + JOB))
        self.assertIn("outside", self.reply(fresh, "init 3 3 " + JOB))
        self.assertIn("already connected",
                      self.reply(fresh, "init 1 3 " + JOB))
        self.assertIsNone(fresh.rank)

    def test_a_rank_may_connect_again_after_closing(self):
        b = self.clients[1]
        self.exchange.client_closed(b)
        again = FakeClient()
        self.assertEqual(self.reply(again, "init 1 3 " + JOB), "ok")
        self.assertEqual(again.rank, 1)

    def test_barrier_completes_when_every_rank_entered(self):
        replies = self.collective("barrier")
        self.assertEqual(len(replies), 3)
        self.assertTrue(all(reply == "ok" for _, reply in replies))
        # and the next collective starts afresh
        self.assertEqual(len(self.collective("fence")), 3)

    def test_a_barrier_does_not_publish_puts(self):
        a, b, _ = self.clients
        self.reply(a, "put addr aa")
        self.collective("barrier")
        self.assertEqual(self.reply(b, "get 0 addr"), "missing")

    def test_mixed_collectives_fail_for_every_waiting_rank(self):
        a, b, _ = self.clients
        self.assertEqual(self.request(a, "fence"), [])
        replies = self.request(b, "barrier")
        self.assertEqual([client for client, _ in replies], [a, b])
        for _, reply in replies:
            self.assertEqual(
                reply, "error rank 1 entered barrier while ranks 0 wait in "
                "fence")

    def test_an_exited_rank_fails_the_collective_it_never_entered(self):
        a, b, _ = self.clients
        self.assertEqual(self.request(a, "fence"), [])
        self.assertEqual(self.request(b, "fence"), [])
        replies = self.exchange.rank_exited(2, "exited with code 0")
        self.assertEqual([client for client, _ in replies], [a, b])
        for _, reply in replies:
            self.assertEqual(
                reply, "error rank 2 exited with code 0 before entering fence")
        # a later collective fails at once
        self.assertEqual(
            self.request(a, "barrier"),
            [(a, "error rank 2 exited with code 0 before entering barrier")])

    def test_an_exit_after_entering_waits_for_the_others(self):
        a = self.clients[0]
        self.assertEqual(self.request(a, "fence"), [])
        self.assertEqual(self.exchange.rank_exited(0, "was killed by SIGKILL"),
                         [])


class ArgumentsTest(unittest.TestCase):

    def test_program_and_its_options_are_kept_apart(self):
        args = lcirun.parse_args(["-n", "2", "--timeout", "5", "prog", "-n",
                                  "7"])
        self.assertEqual((args.n, args.timeout, args.command),
                         (2, 5.0, ["prog", "-n", "7"]))
        args = lcirun.parse_args(["-n", "1", "--", "prog"])
        self.assertEqual(args.command, ["prog"])

    def test_exit_status_of_a_signal(self):
        self.assertEqual(lcirun.exit_status(-9), 137)
        self.assertEqual(lcirun.exit_status(5), 5)
        self.assertEqual(lcirun.describe_exit(-11), "was killed by SIGSEGV")


if __name__ == "__main__":
    sys.exit(unittest.main())
