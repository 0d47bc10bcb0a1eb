#!/usr/bin/env python3
"""Checks that every repository path the documentation names exists.

usage: docs_paths_test.py ROOT [DOC...]

ROOT is the repository's root folder, or a file in it: under Bazel, the
runfile of README.md, whose link leads back to the source tree (the check
must see every file of the repository, not only the test's inputs; the
test is tagged `external` so that Bazel never serves it from the cache).
Reads README.md, examples/README.md and docs/**/*.md under ROOT (or the DOC
files given, relative to ROOT) and finds in them:
  - paths under a top-level folder of the repository (`lci/comp/cq.hpp`,
    `bench/ofi_bench.{hpp,cpp}`, `lci/*/`, `tests/runtime/`), backticked or
    plain; a brace list is expanded and a pattern must match something;
  - Bazel labels (`//tests/cq:cq_litmus_test`, `//fuzz/...`,
    `tests/runtime:crash_test`): the package must have a BUILD file and the
    target must be a file of it or a name its BUILD file spells out (a name
    a macro derives, `imm_fuzz_corpus` from "imm_fuzz", counts);
  - Markdown links, and paths written relative to the document
    (`../bench/x.md`): they must exist and stay inside ROOT;
  - maps in fenced blocks: a line whose first word is a folder (`lci/`,
    indented `runtime/` under it) or a path, then the map's column, opens an
    entry; the folders (`ofi/`) and file names (`host.hpp`, `*_ops.cpp`) on
    it and on its deeper-indented continuation lines must be in that folder
    (or an enclosing one, or the root).
A path of another repository is written with its name in front
(`uiuc-hpc/lci/tests/unit/...`), which this check does not read as ours.
Text after `<` (a placeholder such as `fuzz/corpus/<name>/`) is not part of
a path. Each missing path is printed with the document and line naming it;
the exit status is 1 if there is one. Python 3 standard library only.
"""
import glob
import os
import re
import sys

TOP_DIRS = ("\\.ci", "backends", "bench", "config", "docs", "examples", "fuzz",
            "lci", "lct", "sim", "tests", "third_party", "tools")
PATH_CHARS = r"[A-Za-z0-9_.{},*+\-/]"
# A path starts a word: not inside another path (../bench, a/lci/x) or a
# name (xlci/), and is a top folder followed by a slash.
PATH_RE = re.compile(r"(?<![A-Za-z0-9_./\-])(//)?((?:%s)/%s*)(:[A-Za-z_][A-Za-z0-9_.\-+]*)?"
                     % ("|".join(TOP_DIRS), PATH_CHARS))
ROOT_LABEL_RE = re.compile(r"(?<![A-Za-z0-9_./\-])//:([A-Za-z_][A-Za-z0-9_.\-+]*)")
LINK_RE = re.compile(r"\]\(([^)\s]+)\)")
RELATIVE_RE = re.compile(r"(?<![A-Za-z0-9_./\-(])((?:\.\./)+[A-Za-z0-9_.\-/]+)")
BUILD_NAME_RE = re.compile(r"\"([A-Za-z0-9_.\-+]+)\"")
FILE_EXTENSIONS = (".bzl", ".c", ".cpp", ".def", ".h", ".hpp", ".json", ".md", ".py", ".sh")


def expand_braces(path):
    """bench/x.{hpp,cpp} -> [bench/x.hpp, bench/x.cpp] (one level, repeated)."""
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    out = []
    for alt in m.group(1).split(","):
        out.extend(expand_braces(path[:m.start()] + alt + path[m.end():]))
    return out


def path_exists(root, path):
    full = os.path.join(root, path)
    if any(c in path for c in "*?["):
        return bool(glob.glob(full))
    return os.path.exists(full)


def build_file(root, package):
    for name in ("BUILD", "BUILD.bazel"):
        full = os.path.join(root, package, name)
        if os.path.isfile(full):
            return full
    return None


def label_exists(root, package, target):
    """Whether //package:target plausibly names a target (see the docstring)."""
    build = build_file(root, package)
    if build is None:
        return False
    if target is None or target == "all":
        return True
    if os.path.exists(os.path.join(root, package, target)):
        return True
    with open(build, encoding="utf-8") as f:
        names = set(BUILD_NAME_RE.findall(f.read()))
    return any(target.startswith(name) for name in names)


def trim(path):
    """Drops what ends a sentence or an emphasis, not a path: `x.cpp).`"""
    if path.endswith("/..."):
        return path
    while True:
        before = path
        if path.endswith("**"):
            path = path[:-2]
        path = path.rstrip(",;)")
        if path.endswith(".") and not path.endswith("*."):
            path = path[:-1]
        if path == before:
            return path


def split_list(path):
    """lci/cq,lci/util -> [lci/cq, lci/util]; a brace list stays whole."""
    pieces, depth, start = [], 0, 0
    for i, c in enumerate(path):
        depth += {"{": 1, "}": -1}.get(c, 0)
        if c == "," and depth == 0:
            pieces.append(path[start:i])
            start = i + 1
    pieces.append(path[start:])
    return [p for p in pieces if p]


def names_target(root, path):
    """A path-shaped label, `tests/backends/ibv/ibv_lock_test`: its folder's BUILD names it."""
    package, target = os.path.split(path.rstrip("/"))
    return bool(package) and label_exists(root, package, target)


def check_token(root, label, path, target):
    """Returns None if the token names something that exists, else why not."""
    path = trim(path)
    if label or target:
        package = path.rstrip("/")
        if package.endswith("/..."):
            package = package[:-len("/...")]
            return None if os.path.isdir(os.path.join(root, package)) else "no such folder"
        if build_file(root, package) is None and not label:
            # `file.cpp:152`-style references: the part before the colon is a file.
            return None if path_exists(root, path) else "no such file"
        return None if label_exists(root, package, target) else "no such target"
    for piece in split_list(path):
        for p in expand_braces(piece):
            if not (path_exists(root, p) or names_target(root, p)):
                return "no such file or folder"
    return None


def check_link(root, doc, target):
    if re.match(r"^[a-z]+:", target) or target.startswith("#"):
        return None
    target = target.split("#", 1)[0]
    full = os.path.normpath(os.path.join(root, os.path.dirname(doc), target))
    if os.path.relpath(full, root).startswith(".."):
        return "link leaves the repository"
    return None if os.path.exists(full) else "link target missing"


def map_words(line):
    """The words of a map line, without the punctuation around names."""
    return [w.strip("`\"'(),;:") for w in line.split()]


def check_map_line(root, line, entries):
    """Checks one line of a fenced block as a line of a map of folders.

    A line opens an entry when its first word is a folder or a path followed
    by two spaces (the map's column); other lines continue the innermost
    entry indented less. entries: the open entries, (indent, folder) from
    the outermost; updated. Returns the names that exist nowhere: not in the
    entry's folder, nor in an enclosing one, nor at the root.
    """
    indent = len(line) - len(line.lstrip())
    stripped = line.strip()
    if not stripped:
        return []
    while entries and entries[-1][0] >= indent:
        entries.pop()
    first = stripped.split()[0]
    opens = re.match(r"\S+  ", stripped) and "<" not in first
    if opens and first.endswith("/"):
        folder = first if (not entries or PATH_RE.match(first)) else entries[-1][1] + first
        entries.append((indent, folder))
    elif opens and PATH_RE.match(first) and "/" in first:
        entries.append((indent, os.path.dirname(first) + "/"))
    if not entries:
        return []
    folders = [e[1] for e in reversed(entries)] + [""]
    missing = []
    for w in map_words(stripped)[1 if opens else 0:]:
        if "<" in w or ">" in w or w.startswith("-"):
            continue
        if not ((w.endswith("/") and "/" not in w[:-1])
                or ("/" not in w and w.endswith(FILE_EXTENSIONS))):
            continue
        if not any(path_exists(root, (f + w).rstrip("/")) or names_target(root, f + w)
                   for f in folders):
            missing.append(entries[-1][1] + w)
    return missing


def check_doc(root, doc):
    problems = []
    with open(os.path.join(root, doc), encoding="utf-8") as f:
        lines = f.read().split("\n")
    in_block, entries = False, []
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            in_block, entries = not in_block, []
            continue
        if in_block:
            for name in check_map_line(root, line, entries):
                problems.append("%s:%d: %s (in a map): no such file or folder" % (doc, number, name))
        for m in PATH_RE.finditer(line):
            label, path, target = m.group(1), m.group(2), m.group(3)
            why = check_token(root, label, path, target[1:] if target else None)
            if why:
                problems.append("%s:%d: %s: %s" % (doc, number, m.group(0), why))
        for m in ROOT_LABEL_RE.finditer(line):
            if not label_exists(root, "", m.group(1)):
                problems.append("%s:%d: %s: no such target" % (doc, number, m.group(0)))
        targets = [m.group(1) for m in LINK_RE.finditer(line)]
        targets += [trim(m.group(1)) for m in RELATIVE_RE.finditer(line)]
        for target in targets:
            why = check_link(root, doc, target)
            if why:
                problems.append("%s:%d: (%s): %s" % (doc, number, target, why))
    return problems


def default_docs(root):
    docs = ["README.md", "examples/README.md"]
    docs += sorted(os.path.relpath(p, root)
                   for p in glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True))
    return docs


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    root = os.path.realpath(argv[1])
    if os.path.isfile(root):
        root = os.path.dirname(root)
    docs = argv[2:] or default_docs(root)
    problems = []
    for doc in docs:
        problems.extend(check_doc(root, doc))
    for p in problems:
        print(p)
    print("%d documents, %d missing paths" % (len(docs), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
