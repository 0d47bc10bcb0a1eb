"""real_network_tests: run a test binary or an LCI program as real processes.

For each (provider, N[, checks]) in `runs`, an sh_test
`<name>_ofi_<provider>_<N>_test` runs `program` as N ranks under
tools/lcirun over that libfabric provider (tools/program_test.sh):

    real_network_tests(
        name = "runtime_smoke_test",
        program = ":runtime_smoke_test",
        gtest = True,                      # every rank must pass >= 1 test
        runs = [("shm", 2), ("tcp", 2), ("shm", 4)],
    )

providers: "shm" (shm) and "tcp" (tcp;ofi_rxm). A gtest binary runs in the
harness's process mode (sim/sim_process.hpp): each test body once per
process; tests written for another rank count skip. `checks` are further
program_test.sh arguments (--expect ..., --status ...), `args` the program's
own arguments. The tests build only with --config=ofi (default builds skip
them as incompatible) and are tagged "real_network"; CI runs them with
`--test_tag_filters=real_network` (.ci/run). Their ranks keep off the
shm device (LCI_ATTR_SHM_ENABLE=0, unless `env` says otherwise), so that
the provider carries their traffic. local_job_test, below, runs a program
the same way with no provider and no config, over shared memory in a
default build. shm runs are also "exclusive":
two shm jobs at once on this machine made devices fail to open
(fi_enable: EBUSY, libfabric 1.17), one alone never did.
"""

load("//config:optional.bzl", "only_with")

PROVIDERS = {
    "shm": "shm",
    "tcp": "tcp;ofi_rxm",
}

def real_network_tests(
        name,
        program,
        runs,
        gtest = False,
        args = [],
        timeout_s = 120,
        grace_s = None,
        size = "medium",
        env = {},
        tags = []):
    """One sh_test per run; see the module docstring.

    Args:
      name: prefix of the test names.
      program: label of the binary (a cc_binary or cc_test).
      runs: list of (provider, ranks) or (provider, ranks, checks).
      gtest: expect "[  PASSED  ] <k> test(s)." with k >= 1 from every rank.
      args: arguments of the program (each run).
      timeout_s: lcirun --timeout (the job is ended after it).
      grace_s: lcirun --grace (seconds the ranks get after one failed).
      size: Bazel size of each sh_test.
      env: environment of each run (lcirun passes it to every rank);
        LCI_ATTR_SHM_ENABLE is "0" unless it names it, so that local ranks
        talk through the provider under test, not the shm device.
      tags: extra tags.
    """
    program_args = []
    for arg in args:
        program_args += ["--arg", "'%s'" % arg]
    for run in runs:
        provider, ranks = run[0], run[1]
        checks = list(run[2]) if len(run) > 2 else []
        if gtest:
            checks = [
                "--expect-lines",
                "'^\\[  PASSED  \\] [1-9][0-9]* tests?\\.$$'",
                str(ranks),
            ] + checks
        launch = [
            "--lcirun",
            "$(rootpath //tools:lcirun)",
            "-n",
            str(ranks),
            "--provider",
            "'%s'" % PROVIDERS[provider],
            "--timeout",
            str(timeout_s),
        ]
        if grace_s != None:
            launch += ["--grace", str(grace_s)]
        native.sh_test(
            name = "%s_ofi_%s_%d_test" % (name, provider, ranks),
            size = size,
            srcs = ["//tools:program_test.sh"],
            args = launch + ["$(rootpath %s)" % program] + program_args + checks,
            data = [
                program,
                "//tools:lcirun",
            ],
            target_compatible_with = only_with("//config:ofi_enabled"),
            env = dict({"LCI_ATTR_SHM_ENABLE": "0"}, **env),
            tags = ["real_network"] + tags + (["exclusive"] if provider == "shm" else []),
        )

def repeated_runs_tests(
        name,
        program,
        checks,
        ranks,
        repeats,
        repeats_manual = 0,
        providers = ["shm", "tcp"],
        **kwargs):
    """Per provider, one program run repeated as separate launches.

    `<name>_ofi_<provider>_<ranks>_test` runs `program` `repeats` times in a
    row (each a job of its own under lcirun, each held to `checks`, which
    include the program's own --arg ones), for CI;
    `<name>_<repeats_manual>_ofi_<provider>_<ranks>_test`, tagged manual
    and sized large, runs it `repeats_manual` times, for a sweep by hand
    (none when repeats_manual is 0). A CI test of 50 runs or more is sized
    large (about a second a launch).

    Args:
      name: prefix of the test names.
      program: label of the binary.
      checks: program_test.sh arguments of one run.
      ranks: ranks of each run.
      repeats: runs of the CI test.
      repeats_manual: runs of the manual test; 0: no manual test.
      providers: keys of PROVIDERS.
      **kwargs: further real_network_tests arguments (grace_s, timeout_s).
    """
    variants = [(name, repeats, "large" if repeats >= 50 else "medium", [])]
    if repeats_manual > 0:
        variants.append(("%s_%d" % (name, repeats_manual), repeats_manual, "large", ["manual"]))
    for provider in providers:
        for test_name, count, size, tags in variants:
            real_network_tests(
                name = test_name,
                program = program,
                runs = [(provider, ranks, checks + (["--then"] + checks) * (count - 1))],
                size = size,
                tags = tags,
                **kwargs
            )

def local_job_test(name, program, ranks, args = [], checks = [], timeout_s = 45, size = "small"):
    """An sh_test running `program` as `ranks` processes under tools/lcirun.

    The network is whatever the build and the environment give a process
    (tools/program_test.sh with no provider): in a default build, shared
    memory between the ranks of this node (docs/backends/shm.md). Runs in
    every configuration; not tagged real_network.

    Args:
      name: the test's name.
      program: label of the binary.
      ranks: processes of the job.
      args: arguments of the program.
      checks: program_test.sh arguments (--expect ..., --expect-lines ...).
      timeout_s: lcirun --timeout.
      size: Bazel size of the sh_test.
    """
    program_args = []
    for arg in args:
        program_args += ["--arg", arg]
    native.sh_test(
        name = name,
        size = size,
        srcs = ["//tools:program_test.sh"],
        args = [
            "--lcirun",
            "$(rootpath //tools:lcirun)",
            "-n",
            str(ranks),
            "--provider",
            "''",
            "--timeout",
            str(timeout_s),
            "$(rootpath %s)" % program,
        ] + program_args + checks,
        data = [
            program,
            "//tools:lcirun",
        ],
    )
