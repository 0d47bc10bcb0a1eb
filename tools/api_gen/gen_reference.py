#!/usr/bin/env python3
"""Writes the reference pages of docs/reference/ from the API description.

usage: gen_reference.py DESCRIPTION --attributes FILE --environment FILE --api FILE

Reads lci/api/lci_api.def (the DSL of docs/api_gen.md, parsed by
gen_api.py) and writes three Markdown pages:

  * attributes: every resource attribute with its LCI_ATTR_<NAME> variable,
    type, default (with the real and simulated values where 0 stands for
    the runtime's default), refusal and meaning; the refusals; the
    runtime's defaults for a real process and a simulated rank; the
    compile-time macros of lci_config.hpp;
  * environment: every other environment variable the library reads;
  * api: every enum, resource and operation with its arguments and options.

The pages are committed; //tests/api_gen:reference_test fails when they
differ from what this script writes. A description error exits with
status 1 and "<file>:<line>: <message>", as gen_api.py does. Python 3
standard library only.
"""

import argparse
import os
import sys
from typing import List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_api  # noqa: E402  (beside this script)

REGENERATE = ("bazel build //lci/api:reference && "
              "cp -f bazel-bin/lci/api/reference/*.md docs/reference/")


def cell(text: str) -> str:
    """Text for one table cell: '|' would end it."""
    return text.replace("|", "\\|")


def code(text: str) -> str:
    return f"`{text}`" if text else ""


def banner(source: str, title: str, what: List[str]) -> List[str]:
    return [f"<!-- Generated from {source} by tools/api_gen/gen_reference.py; do not edit. -->",
            f"<!-- Regenerate: {REGENERATE} -->",
            "",
            f"# {title}",
            ""] + what + [""]


def bare_default(attr: gen_api.Attr) -> str:
    """An enum default as the description writes it (attr_backend_t::none -> none)."""
    return attr.default.split("::")[-1]


def attribute_default(api: gen_api.Api, attr: gen_api.Attr) -> str:
    text = code(bare_default(attr))
    if attr.runtime_default:
        default = api.default(attr.runtime_default)
        text += (f": the runtime's [`{default.name}`](#runtime-defaults), "
                 f"real {default.real}, simulated {default.sim}")
    return text


def attribute_refusal(attr: gen_api.Attr) -> str:
    if not attr.refused:
        return ""
    where = "unless the network is ibv" if attr.refused_unless_ibv else "yes"
    return f"{where} ([`{attr.refused}`](#refused-attributes))"


def attributes_page(api: gen_api.Api, source: str) -> str:
    out = banner(source, "Attributes", [
        "Every attribute of every resource, as the API description declares it.",
        "A program sets one with the allocating operation's setter",
        "(`lci::alloc_device_x().net_max_sends(64)()`), with `set_g_default_attr`,",
        "or with the environment variable `LCI_ATTR_<NAME>` (the attribute's name",
        "in upper case; one variable sets the attribute of every resource that has",
        "it). The accepted spellings are in [docs/api_gen.md](../api_gen.md)",
        "(\"Environment\"). Output attributes are set by the runtime and read with",
        "`get_attr_<name>()`. Every other environment variable is in",
        "[environment.md](environment.md).",
    ])
    for resource in api.resources:
        if not resource.attrs:
            continue
        out += [f"## {resource.name}", "", f"{resource.doc[:1].upper()}{resource.doc[1:]}.", "",
                "| variable | type | default | refused | meaning |",
                "|---|---|---|---|---|"]
        for attr in resource.attrs:
            if attr.output:
                variable = f"output `{attr.name}`"
            elif attr.type in gen_api.ENV_UNREADABLE_TYPES:
                variable = f"`{attr.name}` (no variable)"
            else:
                variable = f"`LCI_ATTR_{attr.name.upper()}`"
            out.append(f"| {variable} | {code(attr.type)} | "
                       f"{cell(attribute_default(api, attr))} | {attribute_refusal(attr)} | "
                       f"{cell(attr.doc)} |")
        out.append("")
    out += ["## Refused attributes", "",
            "Upstream LCI has these attributes, so programs written for it compile,",
            "but this runtime does not act on them: any value but the default throws",
            "`std::invalid_argument` at the allocation that would use it, naming the",
            "attribute, the value and the reason.", "",
            "| refusal | attributes | reason |", "|---|---|---|"]
    for refusal in api.refusals:
        names = [f"`{r.name}.{a.name}`" for r in api.resources for a in r.attrs
                 if a.refused == refusal.name]
        out.append(f"| `{refusal.name}` | {', '.join(names)} | {cell(refusal.reason)} |")
    out += ["", "## Runtime defaults", "",
            "Values the runtime picks itself, one for a real process and one for a",
            "simulated rank (hundreds of them share a process).", "",
            "| name | real | simulated | meaning |", "|---|---|---|---|"]
    for default in api.defaults:
        out.append(f"| `{default.name}` | {default.real} | {default.sim} | {cell(default.doc)} |")
    out += ["", "## Compile-time macros", "",
            "Defined by `lci/api/lci_config.hpp` (included by `lci.hpp`) under upstream",
            "LCI's names, besides its `LCI_VERSION_*`.", "",
            "| macro | value | meaning |", "|---|---|---|"]
    for macro in api.macros:
        out.append(f"| `{macro.name}` | {code(macro.value)} | {cell(macro.doc)} |")
    return "\n".join(out) + "\n"


def environment_page(api: gen_api.Api, source: str) -> str:
    out = banner(source, "Environment variables", [
        "Every environment variable the library reads. The attributes' variables,",
        "`LCI_ATTR_<NAME>`, are in [attributes.md](attributes.md). A test-only",
        "variable is read only by test programs (a test-only library sets the",
        "knob it names); a production library ignores it.",
    ])
    out += ["| variable | kind | default | meaning |", "|---|---|---|---|"]
    for variable in api.env:
        meaning = ("test only: " if variable.test_only else "") + variable.doc
        out.append(f"| `{variable.name}` | {variable.type} | {code(variable.default)} | "
                   f"{cell(meaning)} |")
    return "\n".join(out) + "\n"


def signature(op: gen_api.Operation) -> str:
    args = ", ".join(f"{p.type} {p.name}" for p in op.args)
    return f"{op.ret} {op.name}({args})"


def api_page(api: gen_api.Api, source: str) -> str:
    out = banner(source, "API reference", [
        "Every operation of the public API (`#include \"lci.hpp\"`, namespace `lci`).",
        "An operation `op(args...)` is also a functor `op_x(args...)` with one",
        "chainable setter per option, run by `operator()`:",
        "`lci::post_send_x(rank, buf, size, tag, comp).device(device)()`",
        "([docs/api_gen.md](../api_gen.md)). Every operation not marked \"no",
        "`runtime` option\" also takes the option `runtime` (`runtime_t`, empty:",
        "the global runtime), which the tables leave out. Resource attributes are",
        "in [attributes.md](attributes.md).", "", "## Enums"])
    for enum in api.enums:
        out.append(f"- `{enum.name}` {{{', '.join(enum.values)}}}: {enum.doc}")
    out += ["", "## Resources", "",
            "Each resource `R` has a handle `R_t` (empty by default) and an attribute",
            "struct `attr_R_t`.", ""]
    for resource in api.resources:
        out.append(f"- `{resource.name}_t`: {resource.doc}")
    out += ["", "## Operations", ""]
    for op in api.operations:
        notes = ["the result must be used"] if "nodiscard" in op.modifiers else []
        if not op.has_runtime:
            notes.append("no `runtime` option")
        doc = "; ".join(([op.doc] if op.doc else []) + notes)
        out += [f"### {op.name}", "", f"`{signature(op)}`", ""]
        if doc:
            out += [f"{doc[:1].upper()}{doc[1:]}.", ""]
        options = [p for p in op.options
                   if not (op.has_runtime and p.name == gen_api.RUNTIME_OPTION_NAME)]
        if options:
            out += ["| option | type | default | meaning |", "|---|---|---|---|"]
            for p in options:
                if p.attr_of:
                    attr = next(r for r in api.resources if r.name == p.attr_of).attr(p.name)
                    default = f"{code(bare_default(attr))} (attribute)"
                else:
                    default = code(p.default)
                out.append(f"| `{p.name}` | `{p.type}` | {cell(default)} | {cell(p.doc)} |")
            out.append("")
    while out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("description", help="the API description (.def)")
    parser.add_argument("--attributes", required=True, help="attributes page to write")
    parser.add_argument("--environment", required=True, help="environment page to write")
    parser.add_argument("--api", required=True, help="API page to write")
    parser.add_argument("--source-name", default=None,
                        help="the description's name in the banner (default: its path)")
    args = parser.parse_args(argv)
    try:
        with open(args.description, encoding="utf-8") as f:
            api = gen_api.parse(f.read(), args.description)
    except gen_api.DslError as e:
        print(f"{e}", file=sys.stderr)
        return 1
    source = args.source_name or args.description
    for path, text in ((args.attributes, attributes_page(api, source)),
                       (args.environment, environment_page(api, source)),
                       (args.api, api_page(api, source))):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
