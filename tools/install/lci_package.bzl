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

`exclude` is a closure already installed as another lci_package: its
archives, headers and flags are left out, and lib<name>.so is linked
against that package's shared library (`exclude_package`) instead of
carrying a second copy of its code and its global state.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

def _linker_inputs(target):
    return target[CcInfo].linking_context.linker_inputs.to_list()

def _archive(library, pic):
    """The archive of one LibraryToLink (None for header-only libraries)."""
    if pic and library.pic_static_library:
        return library.pic_static_library
    return library.static_library or library.pic_static_library

def _lci_package_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    excluded_owners = {}
    excluded_headers = {}
    if ctx.attr.exclude:
        excluded_owners = {i.owner: True for i in _linker_inputs(ctx.attr.exclude)}
        excluded_headers = {
            h.path: True
            for h in ctx.attr.exclude[CcInfo].compilation_context.headers.to_list()
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
    if ctx.attr.exclude_package:
        base_lib = ctx.attr.exclude_package[DefaultInfo].files.to_list()
        base_shared = [f for f in base_lib if f.extension == "so"][0]
        link_inputs.append(base_shared)
        link_args += ["-L" + base_shared.dirname, "-l" + base_shared.basename[3:-3]]
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
    # without the output directory. `header` itself installs as
    # `header_install_path`, the name programs include it by.
    script = """
set -euo pipefail
out=$1 bin_dir=$2 header=$3 header_install_path=$4 excluded=$5
shift 5
"$@" | tr -d '\\\\' | tr ' ' '\\n' | sed -n '3,$p' | sed '/^$/d' |
  while read -r path; do
    path=$(realpath -s --relative-to=. "$path")
    if grep -qxF "$path" "$excluded"; then continue; fi
    printf '%s %s\\n' "${path#$bin_dir/}" "${path#$bin_dir/}"
  done > "$out"
printf '%s %s\\n' "$header" "$header_install_path" >> "$out"
"""
    excluded_file = ctx.actions.declare_file(name + ".excluded_headers")
    ctx.actions.write(excluded_file, "".join([p + "\n" for p in sorted(excluded_headers)]))
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

    header_files = [header] + [
        h
        for h in compilation.headers.to_list()
        if h.path not in excluded_headers
    ]
    outputs = [static_lib, shared_lib, headers_list, linkopts_file]
    return [DefaultInfo(
        files = depset(outputs),
        runfiles = ctx.runfiles(files = outputs + header_files),
    )]

lci_package = rule(
    implementation = _lci_package_impl,
    attrs = {
        "package_name": attr.string(mandatory = True, doc = "lib<package_name>.a/.so"),
        "lib": attr.label(mandatory = True, providers = [CcInfo]),
        "header": attr.label(mandatory = True, allow_single_file = [".hpp", ".h"]),
        "header_install_path": attr.string(mandatory = True),
        "exclude": attr.label(providers = [CcInfo]),
        "exclude_package": attr.label(doc = "the lci_package of `exclude`"),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
)
