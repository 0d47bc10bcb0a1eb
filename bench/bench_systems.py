#!/usr/bin/env python3
"""Runs the same benchmark programs on several communication systems,
alternately, and reports per target each system's median and range and the
ratios between systems measured in the same rounds.

Called by bench/compare_upstream.sh (this LCI against upstream LCI and raw
libfabric) and bench/run_all.sh (this LCI, upstream LCI, Open MPI, MPICH);
those check the prerequisites and build the programs (bench/build_programs.sh).
docs/bench_upstream.md describes both. Python 3 standard library only.

  bench_systems.py compare --ours DIR --upstream DIR [--raw-bin FILE]
      [--resources-bin FILE] [--upstream-build DIR] [--rounds N] ...
  bench_systems.py all --system NAME=DIR ... --out RESULTS_DIR [--rounds N] ...

A system directory holds msgrate and bandwidth (and, for LCI, api_resources)
from bench/build_programs.sh; its NAME picks the launcher (bench_collectives.py
uses the same systems for collective_latency): ours (the
lcirun next to the install prefix, or --lcirun), upstream (lcrun of its
source tree, with a private HOME), openmpi (mpirun.openmpi), mpich
(mpiexec.mpich).

One round runs every target once on every system, in that order, so slow
spells of the machine hit all systems alike. The paired ratio of a target
is the ratio of the two systems within each round; its median and min/max
are reported (docs/bench_ofi.md, "Running", on why medians alone mislead
here).
"""

import argparse
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

RANK_PREFIX = re.compile(r"^\[\d+\] ")
# Wraps each rank of a pinned run (System.parallel): cores of its own.
PIN_RANK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pin_rank.sh")


class RunError(Exception):
    pass


def run_command(command, env_extra, timeout_s):
    """Runs command; returns its stdout lines without lcirun's rank prefix.
    A HOME in env_extra is replaced by a fresh directory below it for this
    run: upstream's lcrun bootstraps through files in $HOME/.tmp, and a run
    killed by the timeout must not leave them to the next."""
    env = dict(os.environ)
    env.update(env_extra)
    if "HOME" in env_extra:
        env["HOME"] = tempfile.mkdtemp(dir=env_extra["HOME"])
    pin_file = None
    if PIN_RANK in command:
        # The ranks of this run count their slots in a file of their own.
        handle, pin_file = tempfile.mkstemp(prefix="lci_bench_pin_")
        os.close(handle)
        env["LCI_BENCH_PIN_FILE"] = pin_file
    try:
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              timeout=timeout_s + 30, text=True)
    except subprocess.TimeoutExpired as error:
        raise RunError("timed out after %d s: %s\n%s" % (
            timeout_s + 30, " ".join(command), error.stdout or ""))
    finally:
        if pin_file is not None:
            os.remove(pin_file)
    if done.returncode != 0:
        raise RunError("exit status %d: %s\n%s" % (
            done.returncode, " ".join(command), done.stdout))
    return [RANK_PREFIX.sub("", line) for line in done.stdout.splitlines()]


class System:
    """How to start a system's programs."""

    def __init__(self, name, bin_dir, launcher, env, single_env=None, pin=False):
        self.name = name
        self.bin_dir = bin_dir
        self.launcher = launcher      # prefix for 2-rank programs
        self.env = env                # environment of every run
        self.single_env = single_env if single_env is not None else env
        self.pin = pin                # each rank on cores of its own (pin_rank.sh)

    def parallel(self, program, args, threads=1):
        """The command of a multi-rank run whose ranks run `threads` threads."""
        path = program if os.path.isabs(program) else os.path.join(self.bin_dir, program)
        pin = [PIN_RANK, str(threads)] if self.pin else []
        return self.launcher + pin + [path] + args


def make_system(name, bin_dir, options, private_home, ranks=2):
    provider = {"LCI_ATTR_OFI_PROVIDER_NAME": options.provider}
    timeout = ["timeout", str(options.timeout)]
    n = str(ranks)
    pin = getattr(options, "pin", False)
    if name in ("ours", "raw"):
        lcirun = options.lcirun
        return System(name, bin_dir, [lcirun, "-n", n, "--timeout", str(options.timeout)],
                      provider, pin=pin)
    if name == "upstream":
        lcrun = os.path.join(options.upstream_source, "lcrun")
        env = dict(provider, HOME=private_home)
        return System(name, bin_dir, timeout + [lcrun, "-n", n], env, pin=pin)
    if name == "openmpi":
        # Open MPI binds each rank to a core itself; pin_rank.sh, started
        # by the rank, sets its affinity again, to the same rule as the others'.
        return System(name, bin_dir, timeout + ["mpirun.openmpi", "--allow-run-as-root",
                                                "--oversubscribe", "-np", n], {}, pin=pin)
    if name == "mpich":
        return System(name, bin_dir, timeout + ["mpiexec.mpich", "-n", n], {}, pin=pin)
    raise SystemExit("bench_systems: unknown system '%s'" % name)


# ---- parsers: lines -> {metric: value} ----

def parse_msgrate(lines):
    # impl,msgrate,op,devices,threads,size,window,rounds,rank,msgs_per_s
    for line in lines:
        fields = line.split(",")
        if len(fields) == 10 and fields[1] == "msgrate" and fields[8] == "total":
            return float(fields[9])
    raise RunError("no msgrate total in:\n" + "\n".join(lines))


def parse_bandwidth(lines):
    # impl,bandwidth,op,devices,threads,window,size,rounds,bytes_per_s,msgs_per_s
    values = {}
    for line in lines:
        fields = line.split(",")
        if len(fields) == 10 and fields[1] == "bandwidth":
            values[int(fields[6])] = float(fields[8])
    if not values:
        raise RunError("no bandwidth rows in:\n" + "\n".join(lines))
    return values


def parse_resources_csv(lines, names):
    # structure,threads,mops_median,... (bench/resources and api_resources)
    values = {}
    for line in lines:
        fields = line.split(",")
        if len(fields) >= 3 and fields[0] in names and fields[1].isdigit():
            values[(names[fields[0]], int(fields[1]))] = float(fields[2])
    return values


def parse_throughput(lines):
    # upstream's lci_bench_*: "Throughput: 12.34 Mops/s"
    for line in lines:
        match = re.search(r"Throughput:\s*([0-9.]+)\s*Mops", line)
        if match:
            return float(match.group(1))
    raise RunError("no 'Throughput: X Mops/s' in:\n" + "\n".join(lines))


# ---- targets ----

# The goals of the data-path work (docs/bench_upstream.md, "Targets"):
# ours/upstream for rates, at least; for the latency, at most.
GOAL_RATE = 1.1        # 8 B AM and send/recv rates
GOAL_LATENCY = 1.0     # AM round trip: no slower than upstream
GOAL_BANDWIDTH = 1.0   # 4 KiB .. 1 MiB
GOAL_RESOURCE = 1.5    # every resource benchmark
GOAL_RAW = 0.85        # 8 B AMs against raw libfabric


class Target:
    """One measured quantity: a label, its unit, whether higher is better,
    and its goal: the paired ratio it must reach (at least; at most where
    lower is better)."""

    def __init__(self, key, label, unit, goal, higher_better=True):
        self.key = key
        self.label = label
        self.unit = unit
        self.goal = goal
        self.higher_better = higher_better


class Samples:
    def __init__(self):
        self.values = {}   # (target key, system) -> [value per round]
        self.failures = []  # one line per failed run

    def run(self, system_name, round_index, action):
        """Runs action(); a failed run is reported, counted and skipped (its
        targets miss that round) instead of ending the whole measurement."""
        try:
            action()
        except (RunError, ValueError) as error:
            text = str(error)
            lines = text.splitlines()
            print("bench_systems: round %d, %s: a run failed (skipped): %s" % (
                round_index + 1, system_name, "\n  ".join(lines[:1] + lines[-8:])),
                file=sys.stderr)
            self.failures.append("round %d, %s: %s" % (round_index + 1, system_name,
                                                       lines[0] if lines else "?"))

    def add(self, key, system, round_index, value):
        series = self.values.setdefault((key, system), [])
        while len(series) < round_index:
            series.append(None)
        series.append(value)

    def get(self, key, system):
        return [v for v in self.values.get((key, system), []) if v is not None]

    def paired(self, key, first, second):
        a = self.values.get((key, first), [])
        b = self.values.get((key, second), [])
        return [x / y for x, y in zip(a, b) if x is not None and y]


def parse_threads(text):
    """--threads "1,2,4" -> [1, 2, 4]; each count positive."""
    try:
        counts = [int(t) for t in text.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise SystemExit("bench_systems: --threads %r is not a list of positive counts" % text)
    return counts


def msgrate_args(op, threads, devices, options, window=None):
    args = ["--op", op, "--threads", str(threads), "--devices", devices,
            "--duration", str(options.duration), "--csv"]
    if window is not None:
        args += ["--window", str(window)]
    return args


def bandwidth_args(options, sizes):
    return ["--sizes", sizes, "--step", "4", "--duration", str(options.bandwidth_duration),
            "--csv"]


def latency_us(total_msgs_per_s):
    # --window 1, one pair of threads: a round is one message each way, and
    # the total counts both, so a round trip takes 2 / total seconds.
    return 2e6 / total_msgs_per_s


# ---- the compare subcommand ----

def compare(options):
    home = tempfile.mkdtemp(prefix="lci_bench_home_")
    try:
        return compare_in(options, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def compare_in(options, home):
    ours = make_system("ours", options.ours, options, home)
    upstream = make_system("upstream", options.upstream, options, home)
    raw = make_system("raw", "", options, home) if options.raw_bin else None
    systems = [ours, upstream]
    targets = []
    jobs = []   # (systems, command builder, parser -> {key: value})
    header_commands = []   # (system name, command) of the jobs without a builder

    def add_msgrate(op, threads, devices):
        key = "msgrate_%s_%dt_%s" % (op, threads, devices)
        targets.append(Target(key, "8 B %s rate, %d thread%s, %s" % (
            "AM" if op == "am" else "send/recv", threads, "s" if threads > 1 else "",
            devices), "msgs/s", GOAL_RATE))
        args = msgrate_args(op, threads, devices, options)
        with_raw = raw is not None and op == "am" and threads == 1 and devices == "shared"
        runs = systems + ([raw] if with_raw else [])

        def command(system):
            program = options.raw_bin if system is raw else "msgrate"
            return system.parallel(program, args, threads)
        jobs.append((runs, command, lambda lines: {key: parse_msgrate(lines)}, True))

    for op in ("am", "sendrecv"):
        for threads in parse_threads(options.threads):
            for devices in ("shared", "dedicated"):
                add_msgrate(op, threads, devices)

    targets.append(Target("latency_am", "AM round trip, 8 B, window 1", "us", GOAL_LATENCY,
                          higher_better=False))
    jobs.append((systems,
                 lambda s: s.parallel("msgrate", msgrate_args("am", 1, "shared", options, 1)),
                 lambda lines: {"latency_am": latency_us(parse_msgrate(lines))}, True))

    sizes = [4096 * 4 ** i for i in range(5)]
    for size in sizes:
        targets.append(Target("bandwidth_%d" % size, "bandwidth %s" % size_name(size),
                              "bytes/s", GOAL_BANDWIDTH))
    jobs.append((systems,
                 lambda s: s.parallel("bandwidth", bandwidth_args(options, "4096:1048576")),
                 lambda lines: {"bandwidth_%d" % k: v
                                for k, v in parse_bandwidth(lines).items()}, True))

    # Resources through the public API: the same program on both.
    api_names = {"cq_signal_pop": "api_cq", "matching_insert_pair": "api_matching",
                 "packet_pool_get_put": "api_packet_pool"}
    for name, label in (("api_cq", "cq signal+pop"), ("api_matching", "matching send+recv"),
                        ("api_packet_pool", "packet pool get+put")):
        for threads in (1, 2):
            targets.append(Target("%s_%dt" % (name, threads),
                                  "API %s, %d thread%s" % (label, threads,
                                                           "s" if threads > 1 else ""),
                                  "Mops", GOAL_RESOURCE))
    # --pin: each thread on a core of its own, so that a 2-thread run always
    # contends (unpinned, both threads at times share a core and show the
    # 1-thread rate; bench/api_resources.cpp).
    resources_args = ["--threads", "1,2", "--ops", str(options.resource_ops),
                      "--repetitions", "3", "--csv"] + (["--pin"] if options.pin else [])
    jobs.append((systems,
                 lambda s: [os.path.join(s.bin_dir, "api_resources")] + resources_args,
                 lambda lines: {"%s_%dt" % key: v for key, v in
                                parse_resources_csv(lines, api_names).items()}, False))

    # The structures themselves: bench/resources against upstream's
    # lci_bench_cq, _matching_engine, _packet_pool (different programs).
    if options.resources_bin and options.upstream_build:
        ours_names = {"cq_lcrq_push_pop": "own_cq", "matching_insert_send_recv": "own_matching",
                      "packet_pool_get_put": "own_packet_pool"}
        upstream_bins = {"own_cq": "lci_bench_cq", "own_matching": "lci_bench_matching_engine",
                         "own_packet_pool": "lci_bench_packet_pool"}
        for name, label in (("own_cq", "cq (LCRQ) push+pop"),
                            ("own_matching", "matching send+recv"),
                            ("own_packet_pool", "packet pool get+put")):
            for threads in (1, 2):
                targets.append(Target("%s_%dt" % (name, threads),
                                      "own bench: %s, %d thread%s" % (
                                          label, threads, "s" if threads > 1 else ""),
                                      "Mops", GOAL_RESOURCE))

        # Each system's commands: (the target name or None for a CSV of
        # every row, command line).
        def own_commands(system):
            if system is ours:
                # --pin: upstream's programs pin thread t to CPU t.
                return [(None, [options.resources_bin, "--threads", "1,2", "--ops",
                                str(options.resource_ops), "--repetitions", "3", "--csv"] + (
                                    ["--pin"] if options.pin else []))]
            return [("%s_%dt" % (name, threads),
                     [os.path.join(options.upstream_build, "bin", program),
                      "--nthreads", str(threads), "--niters", str(options.resource_ops)])
                    for name, program in upstream_bins.items() for threads in (1, 2)]

        def own_run(system, round_index, samples):
            for target, command in own_commands(system):
                lines = run_command(command, system.single_env, options.timeout)
                if target is None:
                    for key, value in parse_resources_csv(lines, ours_names).items():
                        samples.add("%s_%dt" % key, system.name, round_index, value)
                else:
                    samples.add(target, system.name, round_index, parse_throughput(lines))
        jobs.append((systems, None, own_run, False))
        header_commands += [(system.name, command) for system in systems
                            for _, command in own_commands(system)]

    samples = Samples()
    print_header(options, [ours, upstream] + ([raw] if raw else []), jobs, header_commands)
    for round_index in range(options.rounds):
        for runs, command, parse, parallel in jobs:
            for system in runs:
                if command is None:
                    samples.run(system.name, round_index,
                                lambda: parse(system, round_index, samples))
                    continue
                env = system.env if parallel else system.single_env

                def one_run():
                    lines = run_command(command(system), env, options.timeout)
                    for key, value in parse(lines).items():
                        samples.add(key, system.name, round_index, value)
                samples.run(system.name, round_index, one_run)
        print("round %d of %d done (%s, load %s)" % (round_index + 1, options.rounds,
                                                      utc_now(), load()), file=sys.stderr)

    print_table(targets, samples, "ours", "upstream", options.target)
    if raw:
        print()
        print("8 B AMs over %s (1 thread, shared device) against raw libfabric "
              "(bench/ofi_raw_msgrate), same rounds:" % options.provider)
        raw_target = [t for t in targets if t.key == "msgrate_am_1t_shared"]
        for library in ("ours", "upstream"):
            print_table([Target(raw_target[0].key, "%s / raw" % library, "msgs/s", GOAL_RAW)],
                        samples,
                        library, "raw", options.target, header=library == "ours",
                        first_title="lib")
    return report_failures(samples)


def report_failures(samples):
    """Lists the failed runs; exit status 1 when there were any."""
    if not samples.failures:
        return 0
    print("\n%d run(s) failed and were skipped:" % len(samples.failures))
    for line in samples.failures:
        print("  " + line)
    return 1


def size_name(size):
    if size >= 1 << 20:
        return "%d MiB" % (size >> 20)
    if size >= 1 << 10:
        return "%d KiB" % (size >> 10)
    return "%d B" % size


def load():
    """The 1-minute load average and the runnable count (/proc/loadavg)."""
    fields = open("/proc/loadavg").read().split()
    return "%s, running %s" % (fields[0], fields[3].split("/")[0])


def lci_transport(provider):
    """How this LCI's ranks talk in these runs, all on one node: its native
    shared memory by default, libfabric's provider with LCI_ATTR_SHM_ENABLE=0."""
    if os.environ.get("LCI_ATTR_SHM_ENABLE", "1").lower() in ("0", "false", "no", "off"):
        return "LCI over libfabric `%s` (LCI_ATTR_SHM_ENABLE=0)" % provider
    return "LCI over its native shared memory (docs/backends/shm.md)"


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def print_header(options, systems, jobs, extra_commands=()):
    print("# %s, %d cores, load %s, provider %s, %d rounds alternating %s" % (
        utc_now(), os.cpu_count(), load(),
        options.provider, options.rounds, ", ".join(s.name for s in systems)))
    for runs, command, _, _ in jobs:
        if command is None:
            continue
        for system in runs:
            print("#   %s: %s" % (system.name, " ".join(command(system))))
    for name, command in extra_commands:
        print("#   %s: %s" % (name, " ".join(command)))


def format_value(value, unit):
    if unit == "bytes/s":
        return "%.2f GB/s" % (value / 1e9)
    if unit == "msgs/s":
        return "%.3f M/s" % (value / 1e6)
    if unit == "us":
        return "%.2f us" % value
    return "%.2f %s" % (value, unit)


def print_table(targets, samples, first, second, threshold=None, header=True,
                first_title=None):
    """Prints, per target, each system's median [min-max], the paired ratio
    first/second (min, median, max), the ratio of the best runs and the
    goal; "met" when the median paired ratio reaches the target's goal (at
    least, or at most where lower is better), or `threshold` for every
    target when one is given (at most 1/threshold where lower is better)."""
    if header:
        print("%-42s %-27s %-27s %-22s %-9s %-7s %s" % (
            "target", "%s median [min-max]" % (first_title or first),
            "%s median [min-max]" % second,
            "%s/%s min med max" % (first_title or first, second), "best/best", "goal",
            "verdict"))
    for target in targets:
        a = samples.get(target.key, first)
        b = samples.get(target.key, second)
        ratios = samples.paired(target.key, first, second)
        if not a or not b or not ratios:
            print("%-42s (no samples)" % target.label)
            continue
        median = statistics.median(ratios)
        if threshold is None:
            goal = target.goal
        else:
            goal = threshold if target.higher_better else 1 / threshold
        met = median >= goal if target.higher_better else median <= goal
        verdict = ("met" if met else "NOT met") + (
            "" if target.higher_better else " (lower is better)")
        # Interference only slows a run down: the ratio of the two best runs
        # is the steadier estimate on a busy machine.
        best = max(a) / max(b) if target.higher_better else min(a) / min(b)
        print("%-42s %-27s %-27s %6.3f %6.3f %6.3f  %7.3f   %s%-5.2f %s" % (
            target.label, summary(a, target.unit), summary(b, target.unit), min(ratios),
            median, max(ratios), best, ">=" if target.higher_better else "<=", goal,
            verdict))


def summary(values, unit):
    return "%s [%s]" % (format_value(statistics.median(values), unit),
                        short_range(min(values), max(values), unit))


def short_range(low, high, unit):
    scale = {"bytes/s": 1e9, "msgs/s": 1e6}.get(unit, 1)
    digits = 3 if unit == "msgs/s" else 2
    return "%.*f-%.*f" % (digits, low / scale, digits, high / scale)


# ---- the all subcommand (bench/run_all.sh) ----

def run_all(options):
    home = tempfile.mkdtemp(prefix="lci_bench_home_")
    try:
        return run_all_in(options, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def run_all_in(options, home):
    systems = []
    for spec in options.system:
        name, _, bin_dir = spec.partition("=")
        systems.append(make_system(name, bin_dir, options, home))
    threads_list = parse_threads(options.threads)
    sizes = "16:1048576"
    jobs = []   # (key prefix, systems, command builder, parser)
    for threads in threads_list:
        for op in ("sendrecv", "am"):
            runs = [s for s in systems if op == "sendrecv" or s.name in ("ours", "upstream")]
            args = msgrate_args(op, threads, "shared", options)
            jobs.append((runs, (lambda a, t: lambda s: s.parallel("msgrate", a, t))(args, threads),
                         (lambda k: lambda lines: {k: parse_msgrate(lines)})(
                             "msgrate_%s_%d" % (op, threads))))
    jobs.append((systems,
                 lambda s: s.parallel("msgrate", msgrate_args("sendrecv", 1, "shared",
                                                              options, 1)),
                 lambda lines: {"latency_sendrecv": latency_us(parse_msgrate(lines))}))
    jobs.append((systems, lambda s: s.parallel("bandwidth", bandwidth_args(options, sizes)),
                 lambda lines: {"bandwidth_%d" % k: v
                                for k, v in parse_bandwidth(lines).items()}))
    samples = Samples()
    print_header(options, systems, [(r, c, p, True) for r, c, p in jobs])
    for round_index in range(options.rounds):
        for runs, command, parse in jobs:
            for system in runs:
                def one_run():
                    lines = run_command(command(system), system.env, options.timeout)
                    for key, value in parse(lines).items():
                        samples.add(key, system.name, round_index, value)
                samples.run(system.name, round_index, one_run)
        print("round %d of %d done (%s, load %s)" % (round_index + 1, options.rounds,
                                                      utc_now(), load()), file=sys.stderr)
    write_results(options, systems, threads_list, samples)
    return report_failures(samples)


def write_samples(path, samples, header):
    """Every round's value of every target and system, as CSV."""
    with open(path, "w") as data:
        data.write(header + "\n")
        for (key, system), values in sorted(samples.values.items()):
            for index, value in enumerate(values):
                if value is not None:
                    data.write("%s,%s,%d,%.6g\n" % (key, system, index, value))


def best_or_none(values):
    # Interference from other work only slows a run down: the fastest round
    # is the steadiest estimate of what a system can do on a busy machine.
    return max(values) if values else None


def write_results(options, systems, threads_list, samples):
    out = options.out
    os.makedirs(out, exist_ok=True)
    names = [s.name for s in systems]
    labels = LABELS
    # Data files for gnuplot: one column per system (the best round).
    series = [("sendrecv", name) for name in names] + [
        ("am", name) for name in names if name in ("ours", "upstream")]
    with open(os.path.join(out, "msgrate.dat"), "w") as data:
        data.write("# threads " + " ".join("%s_%s" % (n, op) for op, n in series) + "\n")
        for threads in threads_list:
            row = [best_or_none(samples.get("msgrate_%s_%d" % (op, threads), n))
                   for op, n in series]
            data.write("%d %s\n" % (threads, " ".join(
                "%.0f" % v if v is not None else "NaN" for v in row)))
    sizes = sorted({int(k.split("_")[1]) for k, _ in samples.values if k.startswith("bandwidth_")})
    with open(os.path.join(out, "bandwidth.dat"), "w") as data:
        data.write("# size " + " ".join(names) + "\n")
        for size in sizes:
            row = [best_or_none(samples.get("bandwidth_%d" % size, n)) for n in names]
            data.write("%d %s\n" % (size, " ".join(
                "%.0f" % v if v is not None else "NaN" for v in row)))
    write_samples(os.path.join(out, "samples.csv"), samples, "target,system,round,value")
    plot(out, series, labels, max(threads_list))
    write_markdown(options, out, names, labels, threads_list, sizes, samples)


# What tables and plots call each system.
LABELS = {"ours": "LCI (this)", "upstream": "LCI (upstream)", "openmpi": "Open MPI",
          "mpich": "MPICH"}
# One colour per system in every plot; active messages dashed.
COLORS = {"ours": "#7b1fa2", "upstream": "#2e7d32", "openmpi": "#1565c0", "mpich": "#ef6c00"}
SIZE_TICKS = ", ".join('"%s" %d' % (label, size) for label, size in (
    ("16", 16), ("64", 64), ("256", 256), ("1K", 1024), ("4K", 4096), ("16K", 16384),
    ("64K", 65536), ("256K", 262144), ("1M", 1048576)))


def png_terminal(gnuplot):
    """pngcairo where this gnuplot has it, else png."""
    terminals = subprocess.run([gnuplot, "-e", "set terminal"], capture_output=True,
                               text=True)
    return "pngcairo" if "pngcairo" in terminals.stdout + terminals.stderr else "png"


def plot(out, series, labels, threads_max):
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        print("bench_systems: gnuplot is missing (tools/setup.sh installs gnuplot-nox); "
              "no plots", file=sys.stderr)
        return
    lines = []
    for column, (op, name) in enumerate(series, start=2):
        title = "%s %s" % (labels.get(name, name), "AM" if op == "am" else "send/recv")
        style = "lw 2 lc rgb '%s'%s" % (COLORS.get(name, "black"),
                                        " dt 2 pt 6" if op == "am" else " pt 7")
        lines.append("'msgrate.dat' using 1:($%d/1e6) with linespoints %s title '%s'"
                     % (column, style, title))
    names = [n for op, n in series if op == "sendrecv"]
    bandwidth_lines = [
        "'bandwidth.dat' using 1:($%d/1e9) with linespoints lw 2 pt 7 lc rgb '%s' title '%s'"
        % (column, COLORS.get(n, "black"), labels.get(n, n))
        for column, n in enumerate(names, start=2)]
    terminal = png_terminal(gnuplot)
    script = """
set terminal %s size 800,560 noenhanced
set grid
set key below
set output 'msgrate.png'
set title '8-byte message rate over shared memory, 2 processes (window 64; best round)'
set xlabel 'threads per process'
set ylabel 'million messages / s (both directions)'
set xtics 1
set yrange [0:*]
set xrange [0.8:%f]
plot %s
set output 'bandwidth.png'
set title 'bandwidth over shared memory, 2 processes (window 64, one way; best round)'
set xlabel 'message size (bytes)'
set ylabel 'GB / s'
set logscale x 2
set xtics (%s)
set xrange [*:*]
plot %s
""" % (terminal, threads_max + 0.2 if threads_max > 1 else 1.2, ", \\\n  ".join(lines),
       SIZE_TICKS, ", \\\n  ".join(bandwidth_lines))
    subprocess.run([gnuplot], input=script, text=True, cwd=out, check=True)


def write_markdown(options, out, names, labels, threads_list, sizes, samples):
    def cell(key, name, unit):
        values = samples.get(key, name)
        if not values:
            return "—"
        best = min(values) if unit == "us" else max(values)
        return "%s (%s)" % (format_value(statistics.median(values), unit),
                            format_value(best, unit).split()[0])

    rows = []
    rows.append("| | " + " | ".join(labels.get(n, n) for n in names) + " |")
    rows.append("|---|" + "---:|" * len(names))
    for threads in threads_list:
        for op in ("sendrecv", "am"):
            label = "8 B %s rate, %d thread%s" % ("send/recv" if op == "sendrecv" else "AM",
                                                  threads, "s" if threads > 1 else "")
            rows.append("| %s | %s |" % (label, " | ".join(
                cell("msgrate_%s_%d" % (op, threads), n, "msgs/s") for n in names)))
    rows.append("| 8 B send/recv round trip (window 1) | %s |" % " | ".join(
        cell("latency_sendrecv", n, "us") for n in names))
    for size in sizes:
        if size >= 4096:
            rows.append("| bandwidth %s | %s |" % (size_name(size), " | ".join(
                cell("bandwidth_%d" % size, n, "bytes/s") for n in names)))
    with open(os.path.join(out, "results.md"), "w") as md:
        md.write("# LCI and MPI over shared memory, %s\n\n" % utc_now())
        md.write("Made by `%s` on %d cores (load %s at the start); %d rounds, each "
                 "running every program on every system in turn. A cell is the median of the rounds "
                 "(the best round in parentheses; the plots show the best round: other work on "
                 "the machine only ever slows a run down). "
                 "%s; MPI as Debian ships it.\n"
                 "Rates count messages both ways; MPI has no active messages (AM rows: "
                 "LCI only). Where 2 processes' threads outnumber the cores, a rate "
                 "shows how each library waits (spins, or yields its core) as much as "
                 "its data path.\n\n"
                 % (options.command, os.cpu_count(), options.load, options.rounds,
                    lci_transport(options.provider)))
        md.write("\n".join(rows) + "\n\n")
        md.write("![message rate](msgrate.png)\n\n![bandwidth](bandwidth.png)\n\n")
        if samples.failures:
            md.write("Runs that failed and were skipped (their cells have fewer rounds):\n\n")
            md.write("".join("- %s\n" % line for line in samples.failures) + "\n")
        md.write("Every round's value: `samples.csv`; plotted (best rounds): `msgrate.dat`, "
                 "`bandwidth.dat`.\n")
    print("\n".join(rows))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command_name", required=True)
    for name in ("compare", "all"):
        p = sub.add_parser(name)
        p.add_argument("--rounds", type=int, default=5)
        p.add_argument("--provider", default="shm")
        p.add_argument("--timeout", type=int, default=120)
        p.add_argument("--duration", type=float, default=0.3,
                       help="seconds per msgrate measurement")
        p.add_argument("--bandwidth-duration", type=float, default=0.1,
                       help="seconds per bandwidth size")
        p.add_argument("--lcirun", default="tools/lcirun")
        p.add_argument("--upstream-source", default="",
                       help="upstream's source tree (its lcrun)")
        p.add_argument("--command", default="", help="the command to print in results")
        p.add_argument("--threads", default="1,2",
                       help="thread counts of the message-rate runs, e.g. 1,2,4,8")
        p.add_argument("--pin", action="store_true",
                       help="run each rank of a multi-rank program on as many cores of its "
                            "own as it has threads (bench/pin_rank.sh), wrapping around "
                            "when the machine has fewer, and (compare) each thread of "
                            "api_resources on a core of its own")
    compare_parser = sub.choices["compare"]
    compare_parser.add_argument("--ours", required=True)
    compare_parser.add_argument("--upstream", required=True)
    compare_parser.add_argument("--upstream-build", default="")
    compare_parser.add_argument("--raw-bin", default="")
    compare_parser.add_argument("--resources-bin", default="")
    compare_parser.add_argument("--resource-ops", type=int, default=1000000)
    compare_parser.add_argument("--target", type=float, default=None)
    all_parser = sub.choices["all"]
    all_parser.add_argument("--system", action="append", required=True,
                            help="NAME=DIR; NAME: ours, upstream, openmpi, mpich")
    all_parser.add_argument("--out", required=True)
    options = parser.parse_args()
    options.load = load()
    if options.rounds < 1:
        parser.error("--rounds must be positive")
    try:
        return compare(options) if options.command_name == "compare" else run_all(options)
    except RunError as error:
        print("bench_systems: a run failed: %s" % error, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
