#!/usr/bin/env python3
"""check_links.py: fails on a library that needs a library above it to link.

check_layers.py reads #includes, so it cannot see a function that a
lower layer's header declares and an upper layer's source defines: every
program links all layers, so such an edge builds and runs, and the lower
layer no longer stands on its own. This check reads the linked objects
instead. For every library of this repository (the manifests that
tools/layering/layer_libraries.bzl writes: a library's own archives and
those of everything it depends on), every symbol of this repository's
namespaces (lci::, lct::) that the library's objects leave undefined must
be defined in its own archives or in one of its dependencies'. The Bazel
dependencies follow the layer order (check_layers.py and //lci's BUILD
file), so a symbol found only above is a link-level edge against it.

usage: check_links.py FILE...
  FILE: a *.link_manifest, or the *.nm_path file holding the path of the
  toolchain's nm (layer_libraries.bzl writes both).
Prints one line per violation and exits 1 when there is any, else 0.
"""

import os
import re
import subprocess
import sys
from typing import Dict, Iterable, List, NamedTuple, Sequence, Set

# A mangled name of an entity in namespace lci or lct: the nested name
# (N, with cv- and ref-qualifiers) begins with the namespace, after the
# prefixes of special names (vtables, typeinfo, guard variables, thunks,
# TLS wrappers) and of local entities (Z).
OURS = re.compile(r"^_Z(?:T[VISTWH]|GV|GR|Thn?\d+_|Tvn?\d+_n?\d+_|Z)*N[rVKRO]*3(?:lci|lct)")
# nm's symbol types of an undefined symbol (U) and of a global definition.
UNDEFINED = "U"
DEFINED = set("ABCDGIRSTVWiu")


class Library(NamedTuple):
    label: str
    own: Sequence[str]      # archive paths
    closure: Sequence[str]  # the archives it links against, its own included


class Symbols(NamedTuple):
    undefined: Set[str]
    defined: Set[str]


def read_manifest(path: str) -> Library:
    label, own, closure = None, [], []
    with open(path, encoding="utf-8") as manifest:
        for line in manifest:
            key, _, value = line.strip().partition(" ")
            if key == "library":
                label = value
            elif key == "own":
                own.append(value)
            elif key == "closure":
                closure.append(value)
    if label is None or not own:
        raise ValueError(f"{path}: a manifest without a library or its archives")
    return Library(label, own, closure)


def parse_nm(text: str) -> Symbols:
    """Symbols of `nm -P -g` output (member headers and blank lines skipped)."""
    symbols = Symbols(set(), set())
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 2 or line.endswith(":"):
            continue
        name, kind = fields[0], fields[1]
        if kind == UNDEFINED:
            symbols.undefined.add(name)
        elif kind in DEFINED:
            symbols.defined.add(name)
    return symbols


def violations(libraries: Sequence[Library], symbols_of) -> List[str]:
    """One line per undefined symbol of ours that a library's closure lacks.

    symbols_of(archive) -> Symbols."""
    defined_by: Dict[str, List[str]] = {}
    for library in libraries:
        for archive in library.own:
            for name in symbols_of(archive).defined:
                defined_by.setdefault(name, []).append(library.label)
    errors = []
    for library in sorted(libraries, key=lambda l: l.label):
        available: Set[str] = set()
        for archive in set(library.closure) | set(library.own):
            available |= symbols_of(archive).defined
        needed: Set[str] = set()
        for archive in library.own:
            needed |= {name for name in symbols_of(archive).undefined if OURS.match(name)}
        for name in sorted(needed - available):
            where = ", ".join(sorted(set(defined_by.get(name, [])))) or "no library checked"
            errors.append(f"{library.label}: needs {name}, which none of its dependencies "
                          f"defines (defined in: {where})")
    return errors


def demangle(lines: Iterable[str], nm: str) -> List[str]:
    """The lines with mangled names demangled, by the c++filt beside nm."""
    lines = list(lines)
    cxxfilt = os.path.join(os.path.dirname(nm), "c++filt")
    if not lines or not os.path.exists(cxxfilt):
        return lines
    result = subprocess.run([cxxfilt], input="\n".join(lines), capture_output=True, text=True,
                            check=False)
    return result.stdout.splitlines() if result.returncode == 0 else lines


def main(argv: Sequence[str]) -> int:
    nm_paths = [path for path in argv if path.endswith(".nm_path")]
    manifests = [path for path in argv if path.endswith(".link_manifest")]
    if len(nm_paths) != 1 or not manifests or len(nm_paths) + len(manifests) != len(argv):
        print(__doc__, file=sys.stderr)
        return 2
    with open(nm_paths[0], encoding="utf-8") as nm_path:
        nm = nm_path.read().strip()
    libraries = [read_manifest(path) for path in manifests]
    cache: Dict[str, Symbols] = {}

    def symbols_of(archive: str) -> Symbols:
        if archive not in cache:
            out = subprocess.run([nm, "-P", "-g", archive], capture_output=True, text=True,
                                 check=True).stdout
            cache[archive] = parse_nm(out)
        return cache[archive]

    errors = violations(libraries, symbols_of)
    for error in demangle(errors, nm):
        print(error)
    if errors:
        print(f"check_links: {len(errors)} symbol(s) found only above the library that needs "
              "them (docs/design/layers.md)", file=sys.stderr)
        return 1
    print(f"check_links: {len(libraries)} libraries link against their dependencies alone")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
