"""property_test: RapidCheck properties against sequential reference models.

Builds a gtest binary from `srcs`. For each name in `mutations`, a second
binary `<name>_catches_<mutation>` is built with -DLCI_MUTATION=<name> (one
deliberately broken variant, see lci/util/mutation.hpp) and
LCI_PROPERTY_EXPECT_FAILURE; tests written with LCI_PROPERTY (see
property.hpp) then pass only if RapidCheck finds a counterexample.

As with relacy_test, dependencies must be header-only structure targets
(plus //lci/util), so the mutated inline code is the only copy linked.
"""

def property_test(name, srcs, deps = [], mutations = [], size = "small", tags = []):
    common_deps = deps + [
        "//tests/property:property",
        "//third_party:gtest_main",
        "//third_party:rapidcheck",
    ]
    native.cc_test(
        name = name,
        srcs = srcs,
        deps = common_deps,
        size = size,
        tags = tags + ["property"],
    )
    for mutation in mutations:
        native.cc_test(
            name = name + "_catches_" + mutation,
            srcs = srcs,
            copts = [
                "-DLCI_MUTATION=" + mutation,
                "-DLCI_TEST_MUTANT",
                "-DLCI_PROPERTY_EXPECT_FAILURE",
            ],
            deps = common_deps,
            size = size,
            tags = tags + ["property", "broken_variant"],
        )
