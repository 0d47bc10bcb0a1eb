"""lci_package: one installable library made of a cc_library's closure.

Bazel 4 has no cc_static_library or cc_shared_library, so this rule builds
them from what the closure's CcInfo carries:

  lib<name>.a         every static archive of the closure, merged (ar -M)
  lib<name>.so        the PIC archives of the closure, whole, linked with
                      -z defs: a missing link dependency fails here, not in
                      a user's program
  <name>.headers      "<runfiles path> <install path>" per public header:
                      what the compiler reads when it preprocesses
                      `header` (gcc -MM), not every header of the closure
  <name>.linkopts     the closure's link flags (-pthread, -lfabric, ...),
                      one a line, for the .pc and CMake files

`deps` are lci_packages this one is installed beside: their closures'
archives and flags, and the headers they install, are left out, and
lib<name>.so is linked against their shared libraries instead of carrying a
second copy of their code and global state (liblci links liblct; liblci_sim
both). A program linking the static lib<name>.a links theirs too.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

LciPackageInfo = provider(
    doc = "An installed library, for the lci_packages installed beside it",
    fields = {
        "lib": "the cc_library target whose closure it is",
        "shared_library": "lib<name>.so",
        "headers_list": "<name>.headers: the headers it installs",
    },
)

def _linker_inputs(target):
    return target[CcInfo].linking_context.linker_inputs.to_list()

def _archive(library, pic):
    """The archive of one LibraryToLink (None for header-only libraries)."""
    if pic and library.pic_static_library:
        return library.pic_static_library
    return library.static_library or library.pic_static_library

def _lci_package_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    packages = [dep[LciPackageInfo] for dep in ctx.attr.deps]
    excluded_owners = {
        i.owner: True
        for package in packages
        for i in _linker_inputs(package.lib)
    }
    inputs = [i for i in _linker_inputs(ctx.attr.lib) if i.owner not in excluded_owners]
    archives = [_archive(l, False) for i in inputs for l in i.libraries]
    pic_archives = [_archive(l, True) for i in inputs for l in i.libraries]
    archives = [a for a in archives if a]
    pic_archives = [a for a in pic_archives if a]
    linkopts = []
    for i in inputs:
        for flag in i.user_link_flags:
            if flag not in linkopts:
                linkopts.append(flag)

    name = ctx.attr.package_name
    static_lib = ctx.actions.declare_file("lib%s.a" % name)
    shared_lib = ctx.actions.declare_file("lib%s.so" % name)
    headers_list = ctx.actions.declare_file(name + ".headers")
    linkopts_file = ctx.actions.declare_file(name + ".linkopts")
    toolchain_files = cc_toolchain.all_files

    # ar -M: an MRI script adds each archive's members to one new archive.
    mri = ["create " + static_lib.path]
    mri += ["addlib " + a.path for a in archives]
    mri += ["save", "end"]
    ctx.actions.run_shell(
        outputs = [static_lib],
        inputs = depset(archives, transitive = [toolchain_files]),
        command = "printf '%%s\\n' \"$@\" | %s -M" % cc_toolchain.ar_executable,
        arguments = mri,
        # A PATH (Bazel gives an action none otherwise): gcc looks ld up
        # there, the scripts tr, sed and realpath.
        use_default_shell_env = True,
        mnemonic = "LciPackageStatic",
        progress_message = "Merging the archives of lib%s.a" % name,
    )

    # -Bsymbolic-functions: the library's calls to its own functions bind
    # inside it at link time, not through the PLT at run time. Every API
    # call goes through several internal functions (resolving the runtime,
    # the resource, the structure), and a PLT hop on each is a measurable
    # share of a packet pool get or a queue pop (docs/bench_upstream.md). A
    # program cannot interpose LCI's internal functions then, which nothing
    # supports anyway; data symbols still resolve as before.
    link_args = ["-shared", "-o", shared_lib.path, "-Wl,-soname,lib%s.so" % name, "-Wl,-z,defs",
                 "-Wl,-Bsymbolic-functions"]
    link_args += ["-Wl,--whole-archive"] + [a.path for a in pic_archives]
    link_args.append("-Wl,--no-whole-archive")
    link_inputs = list(pic_archives)
    for package in packages:
        shared = package.shared_library
        link_inputs.append(shared)
        link_args += ["-L" + shared.dirname, "-l" + shared.basename[3:-3]]
    if packages:
        # Installed side by side: the loader finds them beside this one,
        # also for a program linked with --as-needed, which names only the
        # libraries it calls itself.
        link_args.append("-Wl,-rpath,$ORIGIN")
    link_args += linkopts + ["-lstdc++", "-lm"]
    ctx.actions.run(
        outputs = [shared_lib],
        inputs = depset(link_inputs, transitive = [toolchain_files]),
        executable = cc_toolchain.compiler_executable,
        arguments = link_args,
        use_default_shell_env = True,  # a PATH, as above
        mnemonic = "LciPackageShared",
        progress_message = "Linking lib%s.so" % name,
    )

    compilation = ctx.attr.lib[CcInfo].compilation_context
    header = ctx.file.header
    include_flags = ["-iquote" + d for d in compilation.quote_includes.to_list()]
    include_flags += ["-I" + d for d in compilation.includes.to_list()]
    include_flags += ["-isystem" + d for d in compilation.system_includes.to_list()]
    include_flags += ["-D" + d for d in compilation.defines.to_list()]

    # Each dependency gcc names (after the target and the header itself),
    # as a path relative to the execution root, then as the path it has in
    # the runfiles and in the include directory: a generated header's path
    # without the output directory; those the deps install are left out.
    # `header` itself installs as `header_install_path`, the name programs
    # include it by.
    script = """
set -euo pipefail
out=$1 bin_dir=$2 header=$3 header_install_path=$4 excluded=$5
shift 5
"$@" | tr -d '\\\\' | tr ' ' '\\n' | sed -n '3,$p' | sed '/^$/d' |
  while read -r path; do
    path=$(realpath -s --relative-to=. "$path")
    path=${path#$bin_dir/}
    if grep -qxF "$path" "$excluded"; then continue; fi
    printf '%s %s\\n' "$path" "$path"
  done > "$out"
printf '%s %s\\n' "$header" "$header_install_path" >> "$out"
"""
    # The runfiles paths of the headers the deps install (their lists'
    # first column).
    excluded_file = ctx.actions.declare_file(name + ".excluded_headers")
    deps_lists = [package.headers_list for package in packages]
    ctx.actions.run_shell(
        outputs = [excluded_file],
        inputs = deps_lists,
        command = 'out=$1; shift; cat /dev/null "$@" | cut -d" " -f1 > "$out"',
        arguments = [excluded_file.path] + [f.path for f in deps_lists],
        mnemonic = "LciPackageExcludedHeaders",
        progress_message = "Listing the headers the packages beside lib%s install" % name,
    )
    ctx.actions.run_shell(
        outputs = [headers_list],
        inputs = depset([header, excluded_file], transitive = [compilation.headers, toolchain_files]),
        command = script,
        arguments = [
            headers_list.path,
            ctx.bin_dir.path,
            header.short_path,
            ctx.attr.header_install_path,
            excluded_file.path,
            cc_toolchain.compiler_executable,
            "-x",
            "c++",
            "-std=c++17",
            "-MM",
        ] + include_flags + [header.path],
        use_default_shell_env = True,  # a PATH, as above
        mnemonic = "LciPackageHeaders",
        progress_message = "Listing the headers %s includes" % header.short_path,
    )
    ctx.actions.write(linkopts_file, "".join([f + "\n" for f in linkopts]))

    header_files = [header] + compilation.headers.to_list()
    outputs = [static_lib, shared_lib, headers_list, linkopts_file]
    return [
        DefaultInfo(
            files = depset(outputs),
            runfiles = ctx.runfiles(files = outputs + header_files),
        ),
        LciPackageInfo(
            lib = ctx.attr.lib,
            shared_library = shared_lib,
            headers_list = headers_list,
        ),
    ]

lci_package = rule(
    implementation = _lci_package_impl,
    attrs = {
        "package_name": attr.string(mandatory = True, doc = "lib<package_name>.a/.so"),
        "lib": attr.label(mandatory = True, providers = [CcInfo]),
        "header": attr.label(mandatory = True, allow_single_file = [".hpp", ".h"]),
        "header_install_path": attr.string(mandatory = True),
        "deps": attr.label_list(
            providers = [LciPackageInfo],
            doc = "lci_packages installed beside this one, which it links",
        ),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
)
