"""layer_libraries: the static libraries of this repository that a set of
targets is built from, each with the libraries it links against, for
tools/layering/check_links.py.

An aspect walks `deps` down the dependency graph. For every C++ target of
this repository (external repositories left out) it writes a manifest: the
target's label, its own archives, and the archives of everything it depends
on (its CcInfo's linker inputs). A library whose objects call a function
that only a library above it defines (a header of a lower layer declaring
what an upper layer defines) builds and links in every program, since
programs link every layer; the manifests let the check see that edge,
which no #include shows.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

_LibrariesInfo = provider(fields = ["manifests", "archives"])

def _archives(linker_input):
    found = []
    for library in linker_input.libraries:
        for archive in [library.static_library, library.pic_static_library]:
            if archive != None:
                found.append(archive)
    return found

def _libraries_aspect_impl(target, ctx):
    manifests = []
    archives = []
    if target.label.workspace_name == "" and CcInfo in target:
        own = []
        closure = []
        for linker_input in target[CcInfo].linking_context.linker_inputs.to_list():
            found = _archives(linker_input)
            closure += found
            if linker_input.owner == target.label:
                own += found
        if own:
            manifest = ctx.actions.declare_file(target.label.name + ".link_manifest")
            lines = ["library " + str(target.label)]
            lines += ["own " + f.short_path for f in own]
            lines += ["closure " + f.short_path for f in closure]
            ctx.actions.write(manifest, "\n".join(lines) + "\n")
            manifests.append(manifest)
            archives = closure
    deps = [dep[_LibrariesInfo] for dep in getattr(ctx.rule.attr, "deps", []) if _LibrariesInfo in dep]
    return [_LibrariesInfo(
        manifests = depset(manifests, transitive = [d.manifests for d in deps]),
        archives = depset(archives, transitive = [d.archives for d in deps]),
    )]

_libraries_aspect = aspect(
    implementation = _libraries_aspect_impl,
    attr_aspects = ["deps"],
)

def _layer_libraries_impl(ctx):
    manifests = depset(transitive = [dep[_LibrariesInfo].manifests for dep in ctx.attr.deps])
    archives = depset(transitive = [dep[_LibrariesInfo].archives for dep in ctx.attr.deps])

    # The toolchain's nm reads the archives the toolchain wrote.
    nm = ctx.actions.declare_file(ctx.label.name + ".nm_path")
    ctx.actions.write(nm, find_cpp_toolchain(ctx).nm_executable + "\n")
    files = depset([nm], transitive = [manifests])
    return [DefaultInfo(
        files = files,
        runfiles = ctx.runfiles(transitive_files = depset(transitive = [files, archives])),
    )]

layer_libraries = rule(
    implementation = _layer_libraries_impl,
    attrs = {
        "deps": attr.label_list(aspects = [_libraries_aspect]),
        "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
    },
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    fragments = ["cpp"],
)
