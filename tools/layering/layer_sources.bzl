"""layer_sources: the source files of this repository that a set of targets
is built from, for tools/layering/check_layers.py.

An aspect walks `deps` down the dependency graph and collects the srcs and
hdrs of every target of this repository (generated files and external
repositories left out), so a package //lci starts to depend on is checked
without being listed anywhere. `srcs` adds files as they are (a filegroup
of a package no target here depends on in this configuration).
"""

_SourcesInfo = provider(fields = ["files"])

def _sources_aspect_impl(target, ctx):
    files = []
    if target.label.workspace_name == "":
        for attr in ["srcs", "hdrs", "textual_hdrs"]:
            for f in getattr(ctx.rule.files, attr, []):
                if f.is_source:
                    files.append(f)
    transitive = [
        dep[_SourcesInfo].files
        for dep in getattr(ctx.rule.attr, "deps", [])
        if _SourcesInfo in dep
    ]
    return [_SourcesInfo(files = depset(files, transitive = transitive))]

_sources_aspect = aspect(
    implementation = _sources_aspect_impl,
    attr_aspects = ["deps"],
)

def _layer_sources_impl(ctx):
    transitive = [dep[_SourcesInfo].files for dep in ctx.attr.deps]
    transitive += [src.files for src in ctx.attr.srcs]
    files = depset(transitive = transitive)
    return [DefaultInfo(files = files, runfiles = ctx.runfiles(transitive_files = files))]

layer_sources = rule(
    implementation = _layer_sources_impl,
    attrs = {
        "deps": attr.label_list(aspects = [_sources_aspect]),
        "srcs": attr.label_list(allow_files = True),
    },
)
