#!/usr/bin/env python3
"""bench/pin_rank.sh and bench_systems.py's pinned runs: the ranks of one
run get disjoint cores while the machine has them, each as many as it has
threads, and the run's slot file is made and removed around the run."""

import os
import subprocess
import sys
import tempfile
import unittest

BENCH = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "..", "..", "bench")
sys.path.insert(0, BENCH)
import bench_systems  # noqa: E402

PIN_RANK = os.path.join(BENCH, "pin_rank.sh")
# Prints the cores the process may run on, e.g. "0,1".
SHOW_CORES = [sys.executable, "-c",
              "import os; print(','.join(map(str, sorted(os.sched_getaffinity(0)))))"]


def machine_cores():
    return len(os.sched_getaffinity(0))


def run_ranks(ranks, cores_each, bound=False):
    """Starts `ranks` pinned processes of one run at once; their core sets.
    bound: each starts already bound to one core of its own (rank r to core
    r), as mpirun.openmpi starts its ranks."""
    handle, slots = tempfile.mkstemp()
    os.close(handle)
    try:
        env = dict(os.environ, LCI_BENCH_PIN_FILE=slots)
        n = machine_cores()
        procs = [subprocess.Popen((["taskset", "-c", str(r % n)] if bound else []) +
                                  [PIN_RANK, str(cores_each)] + SHOW_CORES, env=env,
                                  stdout=subprocess.PIPE, text=True) for r in range(ranks)]
        outputs = [p.communicate()[0].strip() for p in procs]
        for p in procs:
            assert p.returncode == 0, p.returncode
        return [set(map(int, o.split(","))) for o in outputs]
    finally:
        os.remove(slots)


class PinRank(unittest.TestCase):
    def setUp(self):
        # The slot arithmetic takes the online cores 0..n-1: a sandbox that hides
        # some of them would make taskset refuse.
        if machine_cores() != os.cpu_count():
            self.skipTest("the process may not run on every core")

    def test_one_thread_ranks_get_one_core_each_disjoint_while_cores_last(self):
        n = machine_cores()
        ranks = min(n, 4)
        sets = run_ranks(ranks, 1)
        self.assertTrue(all(len(s) == 1 for s in sets), sets)
        self.assertEqual(len(set().union(*sets)), ranks, sets)

    def test_ranks_a_launcher_bound_to_one_core_each_still_get_disjoint_cores(self):
        # The machine's cores, not the ones the rank may use when it starts:
        # counted with nproc, every bound rank got core 0.
        n = machine_cores()
        if n < 2:
            self.skipTest("one core")
        sets = run_ranks(2, 1, bound=True)
        self.assertEqual(len(set().union(*sets)), 2, sets)

    def test_more_ranks_than_cores_wrap_around(self):
        n = machine_cores()
        sets = run_ranks(n + 1, 1)
        self.assertEqual(set().union(*sets), set(range(n)), sets)

    def test_a_rank_gets_as_many_cores_as_threads(self):
        n = machine_cores()
        sets = run_ranks(1, 2)
        self.assertEqual(sets, [set(range(min(2, n)))])

    def test_bad_arguments_are_refused(self):
        for args, env in (([PIN_RANK, "0", "true"], {"LCI_BENCH_PIN_FILE": "/dev/null"}),
                          ([PIN_RANK, "x", "true"], {"LCI_BENCH_PIN_FILE": "/dev/null"}),
                          ([PIN_RANK, "1", "true"], {})):
            environment = dict(os.environ)
            environment.pop("LCI_BENCH_PIN_FILE", None)
            environment.update(env)
            done = subprocess.run(args, env=environment, stderr=subprocess.PIPE, text=True)
            self.assertEqual(done.returncode, 2, args)
            self.assertIn("pin_rank:", done.stderr)


class PinnedSystems(unittest.TestCase):
    def test_parallel_wraps_each_rank_with_its_thread_count(self):
        pinned = bench_systems.System("ours", "/bin", ["launcher", "-n", "2"], {}, pin=True)
        plain = bench_systems.System("ours", "/bin", ["launcher", "-n", "2"], {})
        self.assertEqual(pinned.parallel("msgrate", ["--threads", "4"], 4),
                         ["launcher", "-n", "2", bench_systems.PIN_RANK, "4",
                          "/bin/msgrate", "--threads", "4"])
        self.assertEqual(plain.parallel("msgrate", ["--threads", "4"], 4),
                         ["launcher", "-n", "2", "/bin/msgrate", "--threads", "4"])

    def test_a_pinned_run_gets_a_fresh_slot_file_removed_after(self):
        command = [bench_systems.PIN_RANK, "1", "sh", "-c", 'echo "$LCI_BENCH_PIN_FILE"']
        first = bench_systems.run_command(command, {}, 10)
        second = bench_systems.run_command(command, {}, 10)
        self.assertEqual(len(first), 1)
        self.assertNotEqual(first, second)
        self.assertFalse(os.path.exists(first[0]))
        self.assertFalse(os.path.exists(second[0]))


if __name__ == "__main__":
    unittest.main()
