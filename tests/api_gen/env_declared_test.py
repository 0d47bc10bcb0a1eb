#!/usr/bin/env python3
"""Holds the library's sources to the environment variables the API description declares.

usage: env_declared_test.py ROOT

ROOT is the repository's root folder, or a file in it (under Bazel, the
runfile of README.md, whose link leads back to the source tree, as for
//tests/tools:docs_paths_test: the check must see every source file, those
of every configuration included). Reads lci/api/lci_api.def and every C/C++
file under lci/, backends/, sim/ and lct/, and fails when

  - a string literal naming an environment variable ("LCI_...", "LCT_...",
    "LCIRUN_...", "PMI_...", "PMIX_...", or any literal passed to getenv)
    is not declared: an `env` line, or LCI_ATTR_<NAME> of an attribute; a
    literal ending in "_" is a prefix and must begin a declared name;
  - a declared variable appears in no source (LCI_SIM_FAULT_<KIND>: its
    prefix "LCI_SIM_FAULT_"); one with a generated accessor
    (detail::env_<name>(), a C++ KIND) is read through it: the sources call
    the accessor and never name the variable in a literal;
  - a test_only variable appears in a source outside a testing/ folder
    (a production library would read it).

The simulator's and the bootstrap's variables are read below the layer
that may include the generated API (tools/layering/check_layers.py), so
their sources name them directly; this test keeps those names and the
description's list one list. Python 3 standard library only.
"""

import os
import re
import sys

SOURCE_ROOTS = ("lci", "backends", "sim", "lct")
SOURCE_SUFFIXES = (".hpp", ".cpp", ".h", ".c", ".cc")
ENV_PREFIXES = ("LCI_", "LCT_", "LCIRUN_", "PMI_", "PMIX_")
LITERAL = re.compile(r'"([A-Z][A-Z0-9_]*)"')
GETENV_LITERAL = re.compile(r'getenv\(\s*"([^"]*)"')
TESTING_FOLDER = "/testing/"


def declared_names(root):
    sys.path.insert(0, os.path.join(root, "tools", "api_gen"))
    import gen_api  # noqa: E402  (from the tree under test)
    path = os.path.join(root, "lci", "api", "lci_api.def")
    with open(path, encoding="utf-8") as f:
        api = gen_api.parse(f.read(), "lci/api/lci_api.def")
    attrs = {f"LCI_ATTR_{a.name.upper()}" for r in api.resources for a in r.attrs
             if not a.output and a.type not in gen_api.ENV_UNREADABLE_TYPES}
    return api.env, attrs


def family_prefix(name):
    """LCI_SIM_FAULT_<KIND> -> LCI_SIM_FAULT_; None for a single variable."""
    return name[:name.index("<")] if "<" in name else None


def source_literals(root):
    """(path, line, name) of every environment-like literal of the sources,
    and (path, line, text) of every line."""
    found = []
    lines = []
    for top in SOURCE_ROOTS:
        for directory, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(directory, name)
                relative = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, start=1):
                        lines.append((relative, number, line))
                        names_here = {m.group(1) for m in LITERAL.finditer(line)
                                      if m.group(1).startswith(ENV_PREFIXES)}
                        names_here |= {m.group(1) for m in GETENV_LITERAL.finditer(line)}
                        found += [(relative, number, n) for n in sorted(names_here)]
    return found, lines


def problems(env, attr_variables, literals, lines):
    singles = {v.name for v in env if family_prefix(v.name) is None}
    families = {family_prefix(v.name) for v in env if family_prefix(v.name)}
    every = singles | attr_variables
    out = []
    for path, line, name in literals:
        if name.endswith("_"):
            ok = any(d.startswith(name) for d in every) or name in families
        else:
            ok = name in every
        if not ok:
            out.append(f"{path}:{line}: \"{name}\" is not declared in lci/api/lci_api.def "
                       "(an env line, or an attribute's LCI_ATTR_<NAME>)")
    seen = {name for _, _, name in literals}
    for variable in env:
        wanted = family_prefix(variable.name) or variable.name
        if variable.accessor:
            call = f"{variable.accessor}("
            if not any(call in text for _, _, text in lines):
                out.append(f"lci/api/lci_api.def:{variable.line}: {variable.name} is declared "
                           f"but no source calls detail::{call})")
            out += [f"{path}:{line}: read {name} through detail::{call}), its generated "
                    "accessor" for path, line, name in literals if name == variable.name]
        elif wanted not in seen:
            out.append(f"lci/api/lci_api.def:{variable.line}: {variable.name} is declared but "
                       "no source reads it")
        if variable.test_only:
            for path, line, name in literals:
                if name == wanted and TESTING_FOLDER not in f"/{path}":
                    out.append(f"{path}:{line}: {name} is test_only, so only sources under a "
                               "testing/ folder (test-only libraries) may read it")
    return out


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    root = os.path.realpath(argv[1])
    if os.path.isfile(root):
        root = os.path.dirname(root)
    env, attr_variables = declared_names(root)
    literals, lines = source_literals(root)
    found = problems(env, attr_variables, literals, lines)
    for problem in found:
        print(problem)
    print(f"{len(env)} declared variables, {len(literals)} literals in the sources, "
          f"{len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
