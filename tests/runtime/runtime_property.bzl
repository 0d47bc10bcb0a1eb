"""runtime_property_test: a RapidCheck property over the whole LCI runtime.

The normal test is tests/property/rapidcheck.bzl's property_test. Its broken
variants cannot be built the way that macro builds them (compiling only the
test's sources with -DLCI_MUTATION): the mutation points of the runtime live
in compiled sources of //lci, which the simulator's harness links too. So
each `<name>_catches_<mutation>` target builds the same test with the
mutation defines added to every C++ compile of its dependency graph (a
configuration transition on --copt): one consistent broken runtime, the only
copy linked. It passes only if the property reports a counterexample
(LCI_PROPERTY_EXPECT_FAILURE, tests/property/property.hpp).
"""

load("//tests/property:rapidcheck.bzl", "property_test")

def _mutation_transition_impl(settings, attr):
    return {"//command_line_option:copt": settings["//command_line_option:copt"] + [
        "-DLCI_MUTATION=" + attr.mutation,
        "-DLCI_TEST_MUTANT",
        "-DLCI_PROPERTY_EXPECT_FAILURE",
    ]}

_mutation_transition = transition(
    implementation = _mutation_transition_impl,
    inputs = ["//command_line_option:copt"],
    outputs = ["//command_line_option:copt"],
)

def _mutant_test_impl(ctx):
    binary = ctx.attr.binary
    if type(binary) == "list":  # a Starlark transition's attribute is a list
        binary = binary[0]
    executable = binary[DefaultInfo].files_to_run.executable
    link = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.symlink(output = link, target_file = executable, is_executable = True)
    runfiles = ctx.runfiles(files = [executable]).merge(binary[DefaultInfo].default_runfiles)
    return [DefaultInfo(executable = link, runfiles = runfiles)]

_mutant_test = rule(
    implementation = _mutant_test_impl,
    test = True,
    attrs = {
        "binary": attr.label(cfg = _mutation_transition, executable = True, mandatory = True),
        "mutation": attr.string(mandatory = True),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
)

def runtime_property_test(name, srcs, deps = [], mutations = [], size = "medium", tags = []):
    property_test(name = name, srcs = srcs, deps = deps, size = size, tags = tags)
    if not mutations:
        return
    native.cc_binary(
        name = name + "_mutant_binary",
        testonly = True,
        srcs = srcs,
        deps = deps + [
            "//tests/property:property",
            "//third_party:gtest_main",
            "//third_party:rapidcheck",
        ],
        tags = ["manual"],
    )
    for mutation in mutations:
        _mutant_test(
            name = name + "_catches_" + mutation,
            binary = ":" + name + "_mutant_binary",
            mutation = mutation,
            size = size,
            tags = tags + ["property", "broken_variant"],
        )
