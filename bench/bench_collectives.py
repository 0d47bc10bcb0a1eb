#!/usr/bin/env python3
"""Runs bench/collective_latency (built per system by bench/build_programs.sh)
on this LCI, Open MPI and MPICH (and upstream LCI where given), alternately,
at each rank count, and writes RESULTS_DIR/collectives.md: per rank count,
operation and size, each system's latency per call and the ratio of this
LCI's to each other system's, measured in the same rounds.

Called by bench/run_all.sh --collectives, which checks the prerequisites and
builds the programs; docs/bench_collectives.md describes the measurement.
Python 3 standard library only.

  bench_collectives.py --system NAME=DIR ... --out RESULTS_DIR [--ranks 2,4]
      [--rounds N] [--iterations N] [--lcirun FILE] [--upstream-source DIR]

NAME picks the launcher as in bench_systems.py (ours: lcirun; upstream: its
lcrun; openmpi: mpirun.openmpi; mpich: mpiexec.mpich). One round runs every
system once at each rank count. A latency cell is the median of the rounds
(the best round in parentheses); a ratio is the median over rounds of
ours / other within the round, with the ratio of the best rounds in
parentheses (lower is better for this LCI).
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import bench_systems as common

# In collective_latency's order; barrier has one row, size 0.
OPS = ("barrier", "broadcast", "reduce", "allreduce", "reduce_scatter", "allgather",
       "alltoall")
SIZE_TICKS = ", ".join('"%s" %d' % (label, size) for label, size in (
    ("8", 8), ("128", 128), ("2K", 2048), ("32K", 32768), ("512K", 524288)))


def parse_rows(lines):
    # impl,collective,op,ranks,size,iterations,latency_us
    values = {}
    for line in lines:
        fields = line.split(",")
        if len(fields) == 7 and fields[1] == "collective" and fields[3].isdigit():
            values[(fields[2], int(fields[3]), int(fields[4]))] = float(fields[6])
    if not values:
        raise common.RunError("no collective rows in:\n" + "\n".join(lines))
    return values


def case_key(op, ranks, size):
    return "%s_%d_%d" % (op, ranks, size)


def program_args(options):
    return ["--csv", "--iterations", str(options.iterations), "--iterations-large",
            str(max(1, options.iterations // 4)), "--warmup", str(options.warmup)]


def measure(options, home):
    """Runs every round; returns the systems (by rank count), the cases
    measured ({(op, ranks, size)}) and the samples."""
    specs = [spec.partition("=") for spec in options.system]
    systems = {ranks: [common.make_system(name, bin_dir, options, home, ranks)
                       for name, _, bin_dir in specs]
               for ranks in options.ranks}
    args = program_args(options)
    samples = common.Samples()
    cases = set()
    print("# %s, %d cores, load %s, provider %s, %d rounds alternating %s" % (
        common.utc_now(), os.cpu_count(), common.load(), options.provider, options.rounds,
        ", ".join(name for name, _, _ in specs)))
    for ranks in options.ranks:
        for system in systems[ranks]:
            print("#   %s: %s" % (system.name, " ".join(system.parallel("collective_latency",
                                                                         args))))
    for round_index in range(options.rounds):
        for ranks in options.ranks:
            for system in systems[ranks]:
                def one_run():
                    lines = common.run_command(system.parallel("collective_latency", args),
                                               system.env, options.timeout)
                    for (op, rows_ranks, size), value in parse_rows(lines).items():
                        cases.add((op, rows_ranks, size))
                        samples.add(case_key(op, rows_ranks, size), system.name, round_index,
                                    value)
                samples.run("%s at %d ranks" % (system.name, ranks), round_index, one_run)
        print("round %d of %d done (%s, load %s)" % (round_index + 1, options.rounds,
                                                      common.utc_now(), common.load()),
              file=sys.stderr)
    return [name for name, _, _ in specs], cases, samples


def latency_cell(samples, key, name):
    values = samples.get(key, name)
    if not values:
        return "—"
    return "%.2f (%.2f)" % (statistics.median(values), min(values))


def ratio_cell(samples, key, first, second):
    """The median paired ratio, and the ratio of the two best rounds in
    parentheses (interference only slows a run down: on a busy machine the
    steadier estimate; where the two disagree, the run was too noisy)."""
    ratios = samples.paired(key, first, second)
    if not ratios:
        return "—"
    best = min(samples.get(key, first)) / min(samples.get(key, second))
    return "%.2f (%.2f)" % (statistics.median(ratios), best)


def table_rows(names, cases, samples, ranks):
    """The markdown table of one rank count."""
    others = [n for n in names if n != "ours"]
    label = common.LABELS
    rows = ["| operation | size | %s | %s |" % (
        " | ".join("%s µs" % label.get(n, n) for n in names),
        " | ".join("LCI / %s" % label.get(n, n) for n in others)),
        "|---|---:|" + "---:|" * (len(names) + len(others))]
    for op in OPS:
        for size in sorted(s for o, r, s in cases if o == op and r == ranks):
            key = case_key(op, ranks, size)
            rows.append("| %s | %s | %s | %s |" % (
                op, "—" if op == "barrier" else common.size_name(size),
                " | ".join(latency_cell(samples, key, n) for n in names),
                " | ".join(ratio_cell(samples, key, "ours", n) for n in others)))
    return rows


def write_data(out, names, cases, samples, ranks):
    """collectives_<ranks>.dat: one gnuplot block per sized operation (in
    OPS order, barrier left out): size, then each system's best round."""
    path = os.path.join(out, "collectives_%d.dat" % ranks)
    with open(path, "w") as data:
        data.write("# size " + " ".join(names) + " (us, best round)\n")
        for op in OPS[1:]:
            data.write("# %s\n" % op)
            for size in sorted(s for o, r, s in cases if o == op and r == ranks):
                values = [samples.get(case_key(op, ranks, size), n) for n in names]
                data.write("%d %s\n" % (size, " ".join(
                    "%.3f" % min(v) if v else "NaN" for v in values)))
            data.write("\n\n")
    return path


def plot(out, names, ranks):
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        print("bench_collectives: gnuplot is missing (tools/setup.sh installs gnuplot-nox); "
              "no plots", file=sys.stderr)
        return False
    lines = ", \\\n  ".join(
        "'collectives_%d.dat' index IDX using 1:%d with linespoints lw 2 pt 7 lc rgb '%s' "
        "title '%s'" % (ranks, column, common.COLORS.get(n, "black"), common.LABELS.get(n, n))
        for column, n in enumerate(names, start=2))
    panels = "\n".join("set title '%s'\nplot %s" % (op, lines.replace("IDX", str(index)))
                       for index, op in enumerate(OPS[1:]))
    script = """
set terminal %s size 1200,760 noenhanced
set output 'collectives_%d.png'
set grid
set key top left
set logscale xy 2
set xtics (%s)
set xlabel 'size (bytes)'
set ylabel 'µs per call'
set multiplot layout 2,3 title 'collective latency, %d processes over shared memory (best round)'
%s
unset multiplot
""" % (common.png_terminal(gnuplot), ranks, SIZE_TICKS, ranks, panels)
    subprocess.run([gnuplot], input=script, text=True, cwd=out, check=True)
    return True


def write_results(options, names, cases, samples):
    out = options.out
    os.makedirs(out, exist_ok=True)
    common.write_samples(os.path.join(out, "collectives_samples.csv"), samples,
                         "case,system,round,latency_us")
    sections = []
    for ranks in options.ranks:
        rows = table_rows(names, cases, samples, ranks)
        write_data(out, names, cases, samples, ranks)
        measured = any(r == ranks for _, r, _ in cases)
        picture = "\n![collective latency, %d ranks](collectives_%d.png)\n" % (ranks, ranks) \
            if measured and plot(out, names, ranks) else ""
        sections.append("## %d ranks\n\n%s\n%s" % (ranks, "\n".join(rows), picture))
        print("\n%d ranks\n%s" % (ranks, "\n".join(rows)))
    with open(os.path.join(out, "collectives.md"), "w") as md:
        md.write("# Collective latency, LCI and MPI over shared memory, %s\n\n" % common.utc_now())
        md.write(
            "Made by `%s` on %d cores (load %s at the start); %d rounds, each running "
            "`collective_latency` once on every system at every rank count, in turn. %s; "
            "MPI as Debian ships it. A latency is the mean time of one call "
            "(%d timed calls below 64 KiB, %d from 64 KiB, after %d untimed), the maximum "
            "over the ranks; a cell is the median of the rounds, the best round in "
            "parentheses. A ratio is the median over rounds of LCI's latency over the other "
            "system's in the same round, the ratio of the two best rounds in parentheses "
            "(other work only slows a run down: on a busy machine that is the steadier "
            "estimate): below 1, LCI is faster. Every result was checked "
            "(first call and last timed call of each size). More ranks than the %d cores "
            "measure the scheduler as much as the libraries.\n\n"
            % (options.command, os.cpu_count(), options.load, options.rounds,
               common.lci_transport(options.provider),
               options.iterations, max(1, options.iterations // 4), options.warmup,
               os.cpu_count()))
        md.write("\n".join(sections) + "\n")
        if samples.failures:
            md.write("Runs that failed and were skipped (their cells have fewer rounds):\n\n")
            md.write("".join("- %s\n" % line for line in samples.failures) + "\n")
        md.write("Every round's value: `collectives_samples.csv`; plotted (best rounds): "
                 "`collectives_<ranks>.dat`.\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--system", action="append", required=True,
                        help="NAME=DIR; NAME: ours, upstream, openmpi, mpich")
    parser.add_argument("--out", required=True)
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20,
                        help="timed calls per size below 64 KiB (a quarter from 64 KiB)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--provider", default="shm")
    parser.add_argument("--timeout", type=int, default=180)
    parser.add_argument("--lcirun", default="tools/lcirun")
    parser.add_argument("--upstream-source", default="", help="upstream's source tree (lcrun)")
    parser.add_argument("--command", default="", help="the command to print in results")
    options = parser.parse_args()
    options.load = common.load()
    options.ranks = [int(r) for r in options.ranks.split(",")]
    if options.rounds < 1 or options.iterations < 1 or min(options.ranks) < 1:
        parser.error("--rounds, --iterations and --ranks must be positive")
    if not any(spec.startswith("ours=") for spec in options.system):
        parser.error("--system ours=DIR is missing: the ratios are this LCI's")
    home = tempfile.mkdtemp(prefix="lci_bench_home_")
    try:
        names, cases, samples = measure(options, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    write_results(options, names, cases, samples)
    return common.report_failures(samples)


if __name__ == "__main__":
    sys.exit(main())
