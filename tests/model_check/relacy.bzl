"""relacy_test: model-check production source with the Relacy Race Detector.

The test's sources include a structure's header with LCI_MODEL_CHECK defined,
so lci/util/atomic.hpp maps every atomic onto Relacy and the checker explores
the production code itself. For each name in `mutations`, a second binary is
built with -DLCI_MUTATION=<name> (one deliberately broken variant, see
lci/util/mutation.hpp) and must report a bug: `<name>_catches_<mutation>`.

Dependencies must be header-only structure targets (plus //lci/util): a
library compiled in production mode would carry production copies of the
same inline functions, and the linker could pick those.

Relacy runs its threads as its own fibers, which ThreadSanitizer and
AddressSanitizer do not follow; the sanitizer configurations skip these
tests (model checking is its own kind of verification).
"""

_COPTS = [
    "-DLCI_MODEL_CHECK",
    # Relacy replaces only the unsized operator delete (see
    # lci/util/detail/relacy.hpp).
    "-fno-sized-deallocation",
    # Relacy switches fibers with longjmp, which _FORTIFY_SOURCE (on in
    # Bazel's opt toolchain) rejects as "uninitialized stack frame".
    "-U_FORTIFY_SOURCE",
    # Relacy marks a freed object by clearing a signature in its destructor;
    # GCC at -O2 deletes that store as dead (lifetime DSE), which silently
    # disables Relacy's use-after-free reports.
    "-fno-lifetime-dse",
    "-Wno-unused-parameter",
    "-Wno-unused-variable",
    "-Wno-unused-but-set-variable",
    "-Wno-deprecated-declarations",
    "-Wno-class-memaccess",
]

_SKIP_UNDER_SANITIZERS = select({
    "//config:sanitized": ["//config:not_compiled_in"],
    "//conditions:default": [],
})

def relacy_test(name, srcs, deps = [], mutations = [], size = "small", tags = []):
    harness = ["//tests/model_check:harness"]
    native.cc_test(
        name = name,
        srcs = srcs,
        copts = _COPTS,
        deps = deps + harness,
        size = size,
        tags = tags + ["model_check"],
        target_compatible_with = _SKIP_UNDER_SANITIZERS,
    )
    for mutation in mutations:
        native.cc_test(
            name = name + "_catches_" + mutation,
            srcs = srcs,
            copts = _COPTS + [
                "-DLCI_MUTATION=" + mutation,
                "-DLCI_TEST_MUTANT",
                "-DLCI_MODEL_EXPECT_BUG",
            ],
            deps = deps + harness,
            size = size,
            tags = tags + ["model_check", "broken_variant"],
            target_compatible_with = _SKIP_UNDER_SANITIZERS,
        )
