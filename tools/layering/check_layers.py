#!/usr/bin/env python3
"""check_layers.py: fails on an #include that goes against the layer order.

The layers are the table LAYERS below (the diagram is in
docs/design/layers.md): each names the files it holds (path
prefixes, the longest match wins) and the lower layers its files may
include; a file may always include its own layer. A layer may only name
layers above it in the table, so the table is an order and has no cycle.
An include is checked when it resolves to a file of this repository: a
path from the repository root ("lci/util/assert.hpp"), or one relative to
the including file or to lci/ (the //lci include root, "lci.hpp").
Everything else (<vector>, "rdma/fabric.h", "gtest/gtest.h") is not ours.

Checked are the files under CHECKED_ROOTS; tests, benchmarks, examples and
tools may include any layer. A checked file in no layer is an error too:
a new directory takes its place in the table.

usage: check_layers.py [--root DIR] [FILE...]
  FILE: paths relative to DIR (default: the current directory); none: every
  .hpp/.cpp/.h/.cc file under CHECKED_ROOTS in DIR.
Prints one line per violation and exits 1 when there is any, else 0.
"""

import argparse
import os
import re
import sys
from typing import Dict, List, NamedTuple, Optional, Sequence

# Directories whose files must keep to the layers.
CHECKED_ROOTS = ("lct/", "lci/", "backends/", "sim/")
# Top-level directories of the repository: an include starting with one of
# them is a file of ours.
REPO_ROOTS = ("lct/", "lci/", "backends/", "sim/", "tests/", "bench/", "fuzz/", "tools/",
              "examples/", "third_party/", "config/")
SOURCE_SUFFIXES = (".hpp", ".cpp", ".h", ".cc")


class Layer(NamedTuple):
    name: str
    paths: Sequence[str]        # path prefixes of its files
    may_include: Sequence[str]  # lower layers its files may include


# Lowest first. The simulator is two layers: its network (a backend beside
# ofi and ibv), file by file, and its harness (which runs LCI runtimes on
# it): every other file of sim/.
SIM_NETWORK = ["sim/sim_context", "sim/sim_device", "sim/sim_faults", "sim/sim_fiber",
               "sim/sim_prng", "sim/sim_profile", "sim/sim_scheduler", "sim/sim_seed",
               "sim/sim_world"]
SIM_HARNESS = ["sim/"]

LAYERS = [
    # LCT (lct.h) beneath everything: the runtime's log is LCT's. Its queues
    # are LCI's completion queues, a layer of their own above them.
    Layer("lct", ["lct/"], []),
    Layer("util", ["lci/util/"], ["lct"]),
    Layer("bootstrap", ["lci/bootstrap/"], ["util"]),
    Layer("api_types", ["lci/api/"], ["util"]),
    Layer("structures",
          ["lci/backlog_queue/", "lci/cq/", "lci/mpmc_array/", "lci/packet_pool/",
           "lci/matching/", "lci/comp/"],
          ["util", "api_types"]),
    Layer("lct_queue", ["lct/lct_queue.cpp"], ["lct", "util", "structures"]),
    Layer("backend_contract", ["backends/backend.", "backends/backend_registry."],
          ["util", "bootstrap"]),
    Layer("ofi", ["backends/ofi/"], ["util", "bootstrap", "backend_contract"]),
    Layer("ibv", ["backends/ibv/"], ["util", "bootstrap", "backend_contract"]),
    # Native shared memory between the processes of one node: its segment,
    # queues and single-copy transfers.
    Layer("shm", ["backends/shm/"], ["util", "bootstrap", "backend_contract"]),
    Layer("sim_network", SIM_NETWORK, ["util", "backend_contract"]),
    # The emulated verbs device, a test double: the ibv backend's verbs
    # table over the simulator's scheduler and PRNG. No layer lists it, so
    # no library file (the ibv backend's included) includes it; tests do.
    Layer("ibv_emu", ["backends/ibv_emu/"], ["util", "ibv", "sim_network"]),
    # The one list of the real backends a build links (the runtime opens
    # them through it, never directly), and the shm routing it puts in
    # front of them.
    Layer("backend_list", ["backends/linked_backends."],
          ["util", "bootstrap", "backend_contract", "ofi", "ibv", "shm"]),
    # The runtime, one layer (and one //lci target) per concept, each seeing
    # only those below it. wire: the messages' formats (immediate data,
    # control messages); runtime: runtimes, devices, resources and request
    # records; then the protocols, the progress engine that dispatches to
    # them, the collectives built on both, and at the top the public API:
    # lci.hpp and the implementations of its functions (lci/ops/).
    Layer("wire", ["lci/wire/"], ["util", "api_types"]),
    Layer("runtime", ["lci/runtime/"],
          ["util", "bootstrap", "api_types", "structures", "backend_contract",
           "backend_list", "wire"]),
    Layer("protocol", ["lci/protocol/"],
          ["util", "api_types", "structures", "backend_contract", "wire", "runtime"]),
    Layer("progress", ["lci/progress/"],
          ["util", "api_types", "structures", "backend_contract", "wire", "runtime",
           "protocol"]),
    Layer("collective", ["lci/collective/"],
          ["util", "api_types", "structures", "backend_contract", "wire", "runtime",
           "protocol", "progress"]),
    Layer("public_api", ["lci/lci.hpp", "lci/ops/"],
          ["util", "bootstrap", "api_types", "structures", "backend_contract", "wire",
           "runtime", "protocol", "progress", "collective"]),
    Layer("sim_harness", SIM_HARNESS,
          ["util", "bootstrap", "api_types", "backend_contract", "sim_network",
           "backend_list", "runtime", "public_api"]),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


class Violation(NamedTuple):
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def check_table(layers: Sequence[Layer]) -> List[str]:
    """Errors of the table itself: unknown, later or repeated names."""
    errors = []
    seen: Dict[str, int] = {}
    for index, layer in enumerate(layers):
        if layer.name in seen:
            errors.append(f"layer {layer.name} is declared twice")
        for lower in layer.may_include:
            if lower not in seen:
                where = "later in the table" if any(l.name == lower for l in layers) else "unknown"
                errors.append(f"layer {layer.name} may include {lower}, which is {where}")
        seen[layer.name] = index
    return errors


def layer_of(path: str, layers: Sequence[Layer]) -> Optional[Layer]:
    """The layer whose longest prefix matches `path`; None for none."""
    best, best_length = None, -1
    for layer in layers:
        for prefix in layer.paths:
            if path.startswith(prefix) and len(prefix) > best_length:
                best, best_length = layer, len(prefix)
    return best


def resolve(including: str, target: str, known: set) -> Optional[str]:
    """The repository path an include names, or None when it is not ours."""
    if target.startswith(REPO_ROOTS):
        return os.path.normpath(target)
    beside = os.path.normpath(os.path.join(os.path.dirname(including), target))
    if beside in known:
        return beside
    under_lci = os.path.normpath(os.path.join("lci", target))
    if under_lci in known:
        return under_lci
    return None


def check_file(path: str, text: str, known: set,
               layers: Sequence[Layer] = LAYERS) -> List[Violation]:
    layer = layer_of(path, layers)
    if layer is None:
        return [Violation(path, 1, "is in no layer (tools/layering/check_layers.py, LAYERS)")]
    allowed = set(layer.may_include) | {layer.name}
    violations = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = INCLUDE.match(line)
        if not match:
            continue
        target = resolve(path, match.group(2), known)
        if target is None:
            continue
        target_layer = layer_of(target, layers)
        if target_layer is None:
            violations.append(Violation(path, number, f"includes {target}, which is in no layer"))
        elif target_layer.name not in allowed:
            violations.append(Violation(
                path, number,
                f"includes {target}: layer {layer.name} may not include layer "
                f"{target_layer.name} (it may include: {', '.join(sorted(allowed))})"))
    return violations


def find_sources(root: str) -> List[str]:
    found = []
    for top in CHECKED_ROOTS:
        for directory, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if name.endswith(SOURCE_SUFFIXES):
                    found.append(os.path.relpath(os.path.join(directory, name), root))
    return sorted(found)


def check(root: str, paths: Sequence[str], layers: Sequence[Layer] = LAYERS) -> List[str]:
    """Every error, as printable lines."""
    errors = check_table(layers)
    paths = [os.path.normpath(p) for p in paths]
    known = set(paths)
    for path in paths:
        if not path.startswith(CHECKED_ROOTS):
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as source:
            errors += [str(v) for v in check_file(path, source.read(), known, layers)]
    return errors


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=".")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args(argv)
    paths = args.files or find_sources(args.root)
    checked = [p for p in paths if os.path.normpath(p).startswith(CHECKED_ROOTS)]
    if not checked:
        print("check_layers: no file to check", file=sys.stderr)
        return 1
    errors = check(args.root, paths)
    for error in errors:
        print(error)
    if errors:
        print(f"check_layers: {len(errors)} include(s) against the layer order "
              "(docs/design/layers.md)", file=sys.stderr)
        return 1
    print(f"check_layers: {len(checked)} files keep to {len(LAYERS)} layers")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
