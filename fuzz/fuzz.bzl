"""lci_fuzz_target: a libFuzzer target whose corpus replays in every test run.

For `name`, with `srcs` defining LLVMFuzzerTestOneInput:
  :<name>         a binary. Under --config=fuzz it links libFuzzer's main
                  (`bazel run --config=fuzz //fuzz:<name> -- <dir>` fuzzes);
                  otherwise the replay main of replay_main.cpp.
  :<name>_corpus  a test running every file of `corpus` through the target
                  once (libFuzzer's main replays files given as arguments, as
                  does the replay main), so the corpus is an ordinary test in
                  `bazel test //...`.
"""

def lci_fuzz_target(name, srcs, deps = [], corpus = [], copts = []):
    main_deps = select({
        "//config:fuzz_enabled": [],
        "//conditions:default": ["//fuzz:replay_main"],
    })
    main_linkopts = select({
        "//config:fuzz_enabled": ["-fsanitize=fuzzer"],
        "//conditions:default": [],
    })
    native.cc_binary(
        name = name,
        srcs = srcs,
        copts = copts,
        deps = deps + main_deps,
        linkopts = main_linkopts,
        testonly = True,
    )
    native.cc_test(
        name = name + "_corpus",
        srcs = srcs,
        copts = copts,
        deps = deps + main_deps,
        linkopts = main_linkopts,
        data = corpus,
        args = ["$(location %s)" % f for f in corpus],
        size = "small",
    )
