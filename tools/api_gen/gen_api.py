#!/usr/bin/env python3
"""Generates the LCI public API from its description (docs/api_gen.md).

Reads an API description written in the DSL of lci/api/lci_api.def and
writes two C++ files, and with --macros a third:

  * a header with the enums, the resource attribute structs, the resource
    handles, one functor per operation (the Objectified Flexible
    Functions of the LCI paper, section 3.1), the runtime's defaults for
    a real process and a simulated rank, and the environment variables'
    accessors;
  * a source file with the enum name tables, the default attribute
    getters, which apply LCI_ATTR_<NAME> environment overrides, the
    checks of refused attributes, and the accessors of the environment
    variables declared with a C++ type;
  * (--macros) the compile-time macros of lci_config.hpp that programs
    read under upstream's names (`macro` lines, and `default` lines
    marked [macro=NAME], whose real value the macro is).

Any error in the description is reported as "<file>:<line>: <message>" and
makes the script exit with status 1, so the Bazel genrule (and the build)
fails. Python 3 standard library only.
"""

import argparse
import dataclasses
import re
import sys
from typing import Dict, List, Optional

IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
# lci_config.hpp's macros keep upstream's names, all under LCI_.
MACRO_NAME = r"LCI_[A-Z0-9_]+"

# Names a generated member, setter or parameter cannot take.
CPP_KEYWORDS = frozenset("""
    alignas alignof and asm auto bool break case catch char class const
    constexpr const_cast continue decltype default delete do double
    dynamic_cast else enum explicit export extern false float for friend goto
    if inline int long mutable namespace new noexcept not nullptr operator or
    private protected public register reinterpret_cast return short signed
    sizeof static static_assert static_cast struct switch template this throw
    true try typedef typeid typename union unsigned using virtual void
    volatile while xor
""".split())

# Attribute types that lci/api/attr_env.hpp can read from the environment
# (after whitespace normalisation). DSL enums are read by name; void* is the
# one attribute type an environment string cannot express, so it is never
# overridden.
ENV_READABLE_TYPES = frozenset([
    "size_t", "std::size_t", "uint64_t", "std::uint64_t", "int", "double",
    "bool", "std::string", "const char*",
])
ENV_UNREADABLE_TYPES = frozenset(["void*"])

MODIFIERS = frozenset(["no_runtime", "nodiscard"])
# Modifiers of an attribute: refused=REASON (only the default is accepted),
# refused_unless_ibv=REASON (the same where the network does not read ibv
# attributes), runtime_default=NAME (0 stands for that `default`).
ATTR_MODIFIER = re.compile(rf"^(refused|refused_unless_ibv|runtime_default)=({IDENTIFIER})$")
# Types a refused attribute may have: its value is shown in the refusal.
REFUSABLE_TYPES = frozenset([
    "size_t", "std::size_t", "uint64_t", "std::uint64_t", "int", "double", "bool",
])
# An environment variable's name; <WORD> stands for a family (LCI_SIM_FAULT_<KIND>).
ENV_NAME = r"[A-Z][A-Z0-9_]*(?:<[A-Z]+>)?"
# An environment variable whose KIND is one of these C++ types gets a
# generated accessor, detail::env_<name>(), reading it as attr_env reads an
# attribute of that type; any other KIND is a word for the reference only.
ENV_ACCESSOR_TYPES = frozenset([
    "size_t", "std::size_t", "uint64_t", "std::uint64_t", "int", "double", "bool",
])
RESOURCE_SENTINELS = re.compile(r"^sentinels=([1-9][0-9]*)$")

# Option types that own memory: call_impl takes them by const reference so
# that invoking a functor does not copy them.
BY_REFERENCE_TYPES = frozenset(["buffers_t"])

# Names the generated functors use themselves: call_impl's attribute struct
# (and the member m_attr) and the setters' parameter.
RESERVED_PARAM_NAMES = frozenset(["attr", "new_value"])

# The option every operation takes last unless it is marked [no_runtime].
RUNTIME_OPTION_NAME = "runtime"
RUNTIME_RESOURCE = "runtime"


class DslError(Exception):
    """A problem in the description, located by file and line."""

    def __init__(self, path: str, line: int, message: str):
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.message = message


@dataclasses.dataclass
class Enum:
    name: str
    values: List[str]
    doc: str
    line: int

    @property
    def stem(self) -> str:
        """attr_backend_t -> attr_backend (for get_<stem>_str, parse_<stem>)."""
        return self.name[:-2] if self.name.endswith("_t") else self.name


@dataclasses.dataclass
class Attr:
    name: str
    type: str
    default: str
    doc: str
    line: int
    # An output attribute ('out' line): the runtime writes it when it
    # allocates the resource; no setter, no LCI_ATTR_<NAME> override.
    output: bool = False
    # [refused=R] / [refused_unless_ibv=R]: the refusal R's name; any value
    # but the default is refused (everywhere, or where the network does not
    # read ibv attributes).
    refused: Optional[str] = None
    refused_unless_ibv: bool = False
    # [runtime_default=NAME]: the value 0 stands for the `default` NAME.
    runtime_default: Optional[str] = None


@dataclasses.dataclass
class Refusal:
    """Why the runtime refuses an attribute set away from its default."""
    name: str
    reason: str
    line: int


@dataclasses.dataclass
class Default:
    """A value the runtime picks, one for a real process, one for a simulated rank."""
    name: str
    type: str
    real: str
    sim: str
    doc: str
    line: int
    # [macro=NAME]: lci_config.hpp defines NAME as the real value.
    macro: Optional[str] = None


@dataclasses.dataclass
class Macro:
    """A compile-time macro of lci_config.hpp (a `macro` line, or a default's)."""
    name: str
    value: str
    doc: str
    line: int


@dataclasses.dataclass
class EnvVariable:
    """An environment variable the library reads, other than LCI_ATTR_<NAME>."""
    name: str
    type: str
    default: str
    doc: str
    line: int
    # Read only by test builds: a production library never reads it.
    test_only: bool = False

    @property
    def accessor(self) -> Optional[str]:
        """detail::env_<name>() (LCI_ dropped) for a C++ KIND, else None."""
        if self.type not in ENV_ACCESSOR_TYPES:
            return None
        stem = self.name[4:] if self.name.startswith("LCI_") else self.name
        return f"env_{stem.lower()}"


@dataclasses.dataclass
class Resource:
    name: str
    attrs: List[Attr]
    doc: str
    line: int
    # [sentinels=N]: handles whose p_impl is 1 .. N are named constants of
    # the hand-written API that name no resource (MR_DEVICE, MR_UNKNOWN);
    # they count as empty, so get_impl() refuses them and nothing
    # dereferences them.
    sentinels: int = 0

    def attr(self, name: str) -> Optional[Attr]:
        return next((a for a in self.attrs if a.name == name), None)


@dataclasses.dataclass
class Param:
    """A positional argument (default None) or an option of an operation."""
    name: str
    type: str
    default: Optional[str]
    doc: str
    line: int
    # For an option that sets an attribute: the resource owning it. Such an
    # option lives in the functor's m_attr rather than in its own member.
    attr_of: Optional[str] = None


@dataclasses.dataclass
class Operation:
    name: str
    ret: str
    modifiers: List[str]
    doc: str
    line: int
    args: List[Param] = dataclasses.field(default_factory=list)
    options: List[Param] = dataclasses.field(default_factory=list)
    # The `attrs` line: the resource whose attributes become options, the
    # attribute names ("*" until expanded), and where among the options
    # they stand.
    attr_resource: Optional[str] = None
    attr_names: List[str] = dataclasses.field(default_factory=list)
    attrs_line: int = 0
    attrs_index: int = 0

    @property
    def has_runtime(self) -> bool:
        return "no_runtime" not in self.modifiers


@dataclasses.dataclass
class Api:
    enums: List[Enum]
    resources: List[Resource]
    operations: List[Operation]
    refusals: List[Refusal] = dataclasses.field(default_factory=list)
    defaults: List[Default] = dataclasses.field(default_factory=list)
    env: List[EnvVariable] = dataclasses.field(default_factory=list)
    macro_lines: List[Macro] = dataclasses.field(default_factory=list)

    @property
    def macros(self) -> List[Macro]:
        """Every macro, in description order: macro lines and marked defaults."""
        marked = [Macro(d.macro, d.real, f"{d.doc} (the runtime default `{d.name}`)", d.line)
                  for d in self.defaults if d.macro]
        return sorted(self.macro_lines + marked, key=lambda m: m.line)

    def refusal(self, name: str) -> Optional[Refusal]:
        return next((r for r in self.refusals if r.name == name), None)

    def default(self, name: str) -> Optional[Default]:
        return next((d for d in self.defaults if d.name == name), None)

    def enum(self, type_name: str) -> Optional[Enum]:
        return next((e for e in self.enums if e.name == type_name), None)


def normalize_type(text: str) -> str:
    """'const  char *' -> 'const char*': one spelling per type."""
    text = re.sub(r"\s+", " ", text.strip())
    return re.sub(r"\s*\*", "*", text)


TYPE_RE = re.compile(
    r"^(const )?[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*\**$")


def split_doc(text: str):
    """Splits 'code // doc' at the first // outside a string literal."""
    in_string = False
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and in_string:
            i += 2
            continue
        if c == '"':
            in_string = not in_string
        elif not in_string and text.startswith("//", i):
            return text[:i].rstrip(), text[i + 2:].strip()
        i += 1
    return text.rstrip(), ""


class Parser:
    """Line-oriented parser: top-level blocks, indented members."""

    TOP_ENUM = re.compile(rf"^enum\s+({IDENTIFIER})\s*\{{(.*)\}}$")
    TOP_RESOURCE = re.compile(rf"^resource\s+({IDENTIFIER})\s*(?:\[([^\]]*)\])?$")
    TOP_OP = re.compile(
        rf"^op\s+({IDENTIFIER})\s*->\s*([^\[\]]+?)\s*(?:\[([^\]]*)\])?$")
    TOP_REFUSAL = re.compile(rf"^refusal\s+({IDENTIFIER})$")
    TOP_DEFAULT = re.compile(
        rf"^default\s+({IDENTIFIER})\s*:\s*([^=]+?)\s+real=(\S+)\s+sim=(\S+)"
        rf"\s*(?:\[macro=({MACRO_NAME})\])?$")
    TOP_MACRO = re.compile(rf"^macro\s+({MACRO_NAME})\s*=\s*(.+)$")
    TOP_ENV = re.compile(
        rf"^env\s+({ENV_NAME})\s*:\s*(\S+)\s*=\s*([^\[]+?)\s*(?:\[([^\]]*)\])?$")
    MEMBER_ATTR = re.compile(
        rf"^(attr|out)\s+({IDENTIFIER})\s*:\s*([^=]+?)\s*=\s*([^\[]+?)\s*(?:\[([^\]]*)\])?$")
    MEMBER_ARG = re.compile(rf"^arg\s+({IDENTIFIER})\s*:\s*([^=]+?)$")
    MEMBER_OPT = re.compile(rf"^opt\s+({IDENTIFIER})\s*:\s*([^=]+?)\s*=\s*(.+)$")
    MEMBER_ATTRS = re.compile(rf"^attrs\s+({IDENTIFIER})\s*:\s*(.+)$")

    def __init__(self, text: str, path: str):
        self.text = text
        self.path = path
        self.api = Api([], [], [])
        self.block = None  # the Resource or Operation being filled, or None

    def error(self, line: int, message: str) -> DslError:
        return DslError(self.path, line, message)

    def parse(self) -> Api:
        for number, raw in enumerate(self.text.splitlines(), start=1):
            stripped = raw.strip()
            if not stripped or stripped.startswith("#"):
                continue
            code, doc = split_doc(stripped)
            if raw[0] in " \t":
                self.parse_member(number, code, doc)
            else:
                self.parse_top(number, code, doc)
        Validator(self.api, self.path).run()
        return self.api

    def check_name(self, line: int, name: str, what: str):
        if name in CPP_KEYWORDS:
            raise self.error(line, f"{what} name '{name}' is a C++ keyword")

    def check_type(self, line: int, type_text: str) -> str:
        type_name = normalize_type(type_text)
        if not TYPE_RE.match(type_name):
            raise self.error(line, f"'{type_text}' is not a type")
        return type_name

    def parse_top(self, line: int, code: str, doc: str):
        match = self.TOP_ENUM.match(code)
        if match:
            self.block = None
            values = [v.strip() for v in match.group(2).split(",")]
            if values == [""]:
                raise self.error(line, f"enum {match.group(1)} has no values")
            for value in values:
                if not re.fullmatch(IDENTIFIER, value):
                    raise self.error(line, f"enum value '{value}' is not an identifier")
                self.check_name(line, value, "enum value")
            self.api.enums.append(Enum(match.group(1), values, doc, line))
            return
        match = self.TOP_RESOURCE.match(code)
        if match:
            self.check_name(line, match.group(1), "resource")
            sentinels = 0
            for modifier in (match.group(2) or "").replace(",", " ").split():
                count = RESOURCE_SENTINELS.match(modifier)
                if not count:
                    raise self.error(line, f"unknown resource modifier '{modifier}' "
                                     "(known: sentinels=N)")
                sentinels = int(count.group(1))
            self.block = Resource(match.group(1), [], doc, line, sentinels=sentinels)
            self.api.resources.append(self.block)
            return
        match = self.TOP_OP.match(code)
        if match:
            self.check_name(line, match.group(1), "operation")
            modifiers = (match.group(3) or "").replace(",", " ").split()
            for modifier in modifiers:
                if modifier not in MODIFIERS:
                    raise self.error(
                        line, f"unknown modifier '{modifier}' (known: "
                        f"{', '.join(sorted(MODIFIERS))})")
            ret = self.check_type(line, match.group(2))
            self.block = Operation(match.group(1), ret, modifiers, doc, line)
            self.api.operations.append(self.block)
            return
        if self.parse_setting(line, code, doc):
            return
        raise self.error(
            line, f"expected 'enum NAME {{ ... }}', 'resource NAME', "
            f"'op NAME -> TYPE [modifiers]', 'refusal NAME', "
            f"'default NAME : TYPE real=VALUE sim=VALUE', 'env NAME : TYPE = DEFAULT' "
            f"or 'macro LCI_NAME = VALUE', "
            f"got '{code}'")

    def parse_setting(self, line: int, code: str, doc: str) -> bool:
        """A refusal, default, env or macro line; False when `code` is none of them."""
        refusal = self.TOP_REFUSAL.match(code)
        default = self.TOP_DEFAULT.match(code)
        env = self.TOP_ENV.match(code)
        macro = self.TOP_MACRO.match(code)
        if not (refusal or default or env or macro):
            return False
        self.block = None
        if not doc:
            raise self.error(line, f"'{code}' needs a one-line doc (// ...)")
        if refusal:
            self.api.refusals.append(Refusal(refusal.group(1), doc, line))
        elif default:
            self.check_name(line, default.group(1), "default")
            self.api.defaults.append(Default(default.group(1),
                                             self.check_type(line, default.group(2)),
                                             default.group(3), default.group(4), doc, line,
                                             macro=default.group(5)))
        elif macro:
            self.api.macro_lines.append(Macro(macro.group(1), macro.group(2), doc, line))
        else:
            modifiers = (env.group(4) or "").replace(",", " ").split()
            for modifier in modifiers:
                if modifier != "test_only":
                    raise self.error(line, f"unknown env modifier '{modifier}' "
                                     "(known: test_only)")
            self.api.env.append(EnvVariable(env.group(1), env.group(2), env.group(3), doc,
                                            line, test_only=bool(modifiers)))
        return True

    def parse_member(self, line: int, code: str, doc: str):
        if isinstance(self.block, Resource):
            match = self.MEMBER_ATTR.match(code)
            if not match:
                raise self.error(
                    line, f"expected 'attr NAME : TYPE = DEFAULT' or 'out NAME : TYPE = "
                    f"DEFAULT' in resource {self.block.name}, got '{code}'")
            if not doc:
                raise self.error(line, f"attribute {match.group(2)} needs a one-line doc (// ...)")
            self.check_name(line, match.group(2), "attribute")
            attr = Attr(match.group(2), self.check_type(line, match.group(3)),
                        match.group(4).strip(), doc, line, output=match.group(1) == "out")
            for modifier in (match.group(5) or "").replace(",", " ").split():
                self.apply_attr_modifier(line, attr, modifier)
            self.block.attrs.append(attr)
        elif isinstance(self.block, Operation):
            self.parse_op_member(line, code, doc)
        else:
            raise self.error(line, f"indented line outside a resource or op block: '{code}'")

    def apply_attr_modifier(self, line: int, attr: Attr, modifier: str):
        match = ATTR_MODIFIER.match(modifier)
        if not match:
            raise self.error(line, f"unknown attribute modifier '{modifier}' (known: "
                             "refused=REASON, refused_unless_ibv=REASON, runtime_default=NAME)")
        kind, name = match.group(1), match.group(2)
        if kind == "runtime_default":
            attr.runtime_default = name
            return
        if attr.refused:
            raise self.error(line, f"attribute {attr.name} is refused twice")
        attr.refused = name
        attr.refused_unless_ibv = kind == "refused_unless_ibv"

    def parse_op_member(self, line: int, code: str, doc: str):
        op = self.block
        match = self.MEMBER_ARG.match(code)
        if match:
            if op.options or op.attr_resource:
                raise self.error(line, f"op {op.name}: positional argument "
                                 f"'{match.group(1)}' after an option")
            self.check_name(line, match.group(1), "argument")
            op.args.append(Param(match.group(1), self.check_type(line, match.group(2)),
                                 None, doc, line))
            return
        match = self.MEMBER_OPT.match(code)
        if match:
            self.check_name(line, match.group(1), "option")
            op.options.append(Param(match.group(1), self.check_type(line, match.group(2)),
                                    match.group(3).strip(), doc, line))
            return
        match = self.MEMBER_ATTRS.match(code)
        if match:
            if op.attr_resource:
                raise self.error(line, f"op {op.name}: a second 'attrs' line")
            names = match.group(2).split()
            if names != ["*"]:
                for name in names:
                    if not re.fullmatch(IDENTIFIER, name):
                        raise self.error(line, f"'{name}' is not an attribute name")
            op.attr_resource = match.group(1)
            op.attr_names = names
            op.attrs_line = line
            op.attrs_index = len(op.options)
            return
        raise self.error(
            line, f"expected 'arg NAME : TYPE', 'opt NAME : TYPE = DEFAULT' or "
            f"'attrs RESOURCE : NAME...|*' in op {op.name}, got '{code}'")


class Validator:
    """Cross-reference checks that need the whole description."""

    def __init__(self, api: Api, path: str):
        self.api = api
        self.path = path

    def error(self, line: int, message: str) -> DslError:
        return DslError(self.path, line, message)

    def run(self):
        self.check_unique([(e.name, e.line) for e in self.api.enums], "enum")
        self.check_unique([(r.name, r.line) for r in self.api.resources], "resource")
        self.check_unique([(o.name, o.line) for o in self.api.operations], "operation")
        for enum in self.api.enums:
            self.check_unique([(v, enum.line) for v in enum.values], f"value of enum {enum.name}")
        self.check_unique([(r.name, r.line) for r in self.api.refusals], "refusal")
        self.check_unique([(d.name, d.line) for d in self.api.defaults], "default")
        self.check_unique([(v.name, v.line) for v in self.api.env], "environment variable")
        self.check_unique([(m.name, m.line) for m in self.api.macros], "macro")
        for variable in self.api.env:
            if variable.name.startswith("LCI_ATTR_"):
                raise self.error(variable.line, f"{variable.name}: LCI_ATTR_<NAME> variables "
                                 "come from the attributes, not from env lines")
            if variable.accessor and ("<" in variable.name or variable.test_only):
                raise self.error(variable.line, f"{variable.name}: a family or test_only "
                                 "variable gets no accessor: give it a KIND word, not a "
                                 f"C++ type ({variable.type})")
        for resource in self.api.resources:
            self.check_unique([(a.name, a.line) for a in resource.attrs],
                              f"attribute of resource {resource.name}")
            for attr in resource.attrs:
                self.check_attr_type(resource, attr)
                self.check_attr_modifiers(resource, attr)
                attr.default = self.resolve_default(attr.type, attr.default, attr.line)
        used = {a.refused for r in self.api.resources for a in r.attrs}
        for refusal in self.api.refusals:
            if refusal.name not in used:
                raise self.error(refusal.line, f"refusal {refusal.name} refuses no attribute")
        for op in self.api.operations:
            self.expand_attrs(op)
            for option in op.options:
                if option.attr_of is None:
                    option.default = self.resolve_default(option.type, option.default,
                                                          option.line)
            if op.has_runtime:
                for p in op.options:
                    if p.name == RUNTIME_OPTION_NAME:
                        raise self.error(p.line, f"op {op.name}: option '{RUNTIME_OPTION_NAME}' "
                                         "is implicit (every op takes it unless [no_runtime])")
                if not any(r.name == RUNTIME_RESOURCE for r in self.api.resources):
                    raise self.error(op.line, f"op {op.name} takes a '{RUNTIME_OPTION_NAME}' "
                                     f"option but no 'resource {RUNTIME_RESOURCE}' is declared "
                                     f"(or mark it [no_runtime])")
                op.options.append(Param(RUNTIME_OPTION_NAME, f"{RUNTIME_RESOURCE}_t", "{}",
                                        "the runtime to use (empty: the global runtime)",
                                        op.line))
            for p in op.args + op.options:
                if p.name in RESERVED_PARAM_NAMES:
                    raise self.error(p.line, f"op {op.name}: '{p.name}' is reserved "
                                     "for the generated code")
            names = [(p.name, p.line) for p in op.args + op.options]
            self.check_unique(names, f"argument or option of op {op.name}")

    def check_unique(self, names, what: str):
        seen: Dict[str, int] = {}
        for name, line in names:
            if name in seen:
                raise self.error(line, f"duplicate {what} '{name}' (first at line {seen[name]})")
            seen[name] = line

    def check_attr_type(self, resource: Resource, attr: Attr):
        if (attr.type in ENV_READABLE_TYPES or attr.type in ENV_UNREADABLE_TYPES
                or self.api.enum(attr.type)):
            return
        raise self.error(attr.line, f"attribute {resource.name}.{attr.name}: type "
                         f"'{attr.type}' has no environment reader (use one of "
                         f"{', '.join(sorted(ENV_READABLE_TYPES | ENV_UNREADABLE_TYPES))} "
                         f"or an enum declared here)")

    def check_attr_modifiers(self, resource: Resource, attr: Attr):
        where = f"attribute {resource.name}.{attr.name}"
        if attr.refused:
            if self.api.refusal(attr.refused) is None:
                raise self.error(attr.line, f"{where}: unknown refusal '{attr.refused}'")
            if attr.output:
                raise self.error(attr.line, f"{where}: an output attribute cannot be refused")
            if attr.type not in REFUSABLE_TYPES and not self.api.enum(attr.type):
                raise self.error(attr.line, f"{where}: a refused attribute's type must be "
                                 f"one of {', '.join(sorted(REFUSABLE_TYPES))} or an enum")
        if attr.runtime_default:
            default = self.api.default(attr.runtime_default)
            if default is None:
                raise self.error(attr.line, f"{where}: unknown default "
                                 f"'{attr.runtime_default}'")
            if attr.default != "0":
                raise self.error(attr.line, f"{where}: runtime_default needs the default 0 "
                                 "(the value that stands for it)")

    def resolve_default(self, type_name: str, default: str, line: int) -> str:
        """A DSL-enum default may be a bare value name: qualify and check it."""
        enum = self.api.enum(type_name)
        if enum is None or not re.fullmatch(IDENTIFIER, default):
            return default
        if default not in enum.values:
            raise self.error(line, f"'{default}' is not a value of enum {enum.name} "
                             f"({', '.join(enum.values)})")
        return f"{enum.name}::{default}"

    def expand_attrs(self, op: Operation):
        if op.attr_resource is None:
            return
        resource = next((r for r in self.api.resources if r.name == op.attr_resource), None)
        if resource is None:
            raise self.error(op.attrs_line, f"op {op.name}: unknown resource "
                             f"'{op.attr_resource}' in 'attrs'")
        if op.attr_names == ["*"]:
            op.attr_names = [a.name for a in resource.attrs if not a.output]
        self.check_unique([(n, op.attrs_line) for n in op.attr_names],
                          f"attribute in 'attrs' of op {op.name}")
        expanded = []
        for name in op.attr_names:
            attr = resource.attr(name)
            if attr is None:
                raise self.error(op.attrs_line, f"op {op.name}: resource {resource.name} "
                                 f"has no attribute '{name}'")
            if attr.output:
                raise self.error(op.attrs_line, f"op {op.name}: '{name}' is an output "
                                 f"attribute of {resource.name} (the runtime sets it)")
            expanded.append(Param(name, attr.type, None, attr.doc, op.attrs_line,
                                  attr_of=resource.name))
        op.options[op.attrs_index:op.attrs_index] = expanded


def parse(text: str, path: str = "<input>") -> Api:
    """Parses and validates a description; raises DslError."""
    return Parser(text, path).parse()


# ---------------------------------------------------------------------------
# Generation


def refusable_resources(api: Api) -> List[Resource]:
    """The resources a user sets attributes of (each gets a find_refused)."""
    return [r for r in api.resources if any(not a.output for a in r.attrs)]


def attr_struct(resource: str) -> str:
    return f"attr_{resource}_t"


def upstream_attr_struct(resource: str) -> str:
    return f"{resource}_attr_t"


def impl_class(resource: str) -> str:
    return f"{resource}_impl_t"


def cpp_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def comment(doc: str, indent: str = "") -> List[str]:
    return [f"{indent}// {doc}"] if doc else []


LINE_WIDTH = 100


def wrap(head: str, items: List[str], tail: str, indent: str) -> List[str]:
    """head(item, item)tail on one line, or one item per line if too long."""
    line = f"{head}{', '.join(items)}{tail}"
    if len(line) <= LINE_WIDTH or len(items) < 2:
        return [line]
    lines = [f"{head}{items[0]},"]
    pad = indent + "    "
    lines += [f"{pad}{item}," for item in items[1:-1]]
    lines.append(f"{pad}{items[-1]}{tail}")
    return lines


class HeaderWriter:
    def __init__(self, api: Api, namespace: str, source_path: str):
        self.api = api
        self.namespace = namespace
        self.source_path = source_path
        self.out: List[str] = []

    def emit(self, *lines: str):
        self.out.extend(lines)

    def write(self) -> str:
        self.banner()
        self.emit(f"namespace {self.namespace} {{", "")
        if self.namespace != "lci":
            self.emit("// The public value types (status_t, tag_t, ...) live in namespace lci.",
                      "using namespace ::lci;", "")
        self.enums()
        self.forward_declarations()
        self.attr_structs()
        self.detail_declarations()
        for resource in self.api.resources:
            self.handle(resource)
        for op in self.api.operations:
            self.functor(op)
        self.emit(f"}}  // namespace {self.namespace}")
        return "\n".join(self.out) + "\n"

    def banner(self):
        self.emit(
            f"// Generated from {self.source_path} by tools/api_gen/gen_api.py; do not edit.",
            "// Change the API description and rebuild instead (docs/api_gen.md).",
            "//",
            "// The public API: attribute enums, one attribute struct and one handle per",
            "// resource, and per operation op(positional...) a functor op_x(positional...)",
            "// with one chainable setter per option, invoked by operator() (Objectified",
            "// Flexible Functions, LCI paper section 3.1). The runtime defines every",
            "// call_impl and detail::get_attr; the default attribute getters and the enum",
            "// name tables are in the generated source beside this header.",
            "//",
            "// Thread safety: handles and functors are plain values. Distinct functor",
            "//                objects may be used from any threads; one functor object",
            "//                is not shared while its setters run. What an operation",
            "//                allows concurrently is documented by its resource.",
            "// Blocking:      setters and handles never block; operator() blocks only",
            "//                as the operation it runs does.",
            "// Ownership:     a handle does not own its resource: copies name the same",
            "//                resource, and free_<resource> releases it. A functor holds",
            "//                copies of its arguments (pointers stay the caller's).",
            "// Allocation:    the functor of an allocating operation copies the default",
            "//                attributes at construction (reading LCI_ATTR_<NAME> from",
            "//                the environment, copying strings); other functors and",
            "//                handles never allocate.",
            "#pragma once",
            "",
            "#include <cstddef>",
            "#include <cstdint>",
            "#include <stdexcept>",
            "#include <string>",
            "",
            '#include "lci/api/lci_types.hpp"',
            "")

    def enums(self):
        if not self.api.enums:
            return
        self.emit("// Enums of attributes. For each enum X_t, get_X_str() gives a value's name",
                  "// as written in the description and in LCI_ATTR_<NAME> (\"invalid\" for a",
                  "// value outside the enum); detail::parse_X() maps a name, in any case, back",
                  "// to its value (false, leaving *out unchanged, for an unknown name).", "")
        for enum in self.api.enums:
            self.emit(*comment(enum.doc))
            self.emit(f"enum class {enum.name} : int {{ {', '.join(enum.values)} }};",
                      f"const char* get_{enum.stem}_str({enum.name} value);", "")
        self.emit("namespace detail {")
        for enum in self.api.enums:
            self.emit(f"bool parse_{enum.stem}(const char* text, {enum.name}* out);")
        self.emit("}  // namespace detail", "")

    def forward_declarations(self):
        self.emit("namespace detail {")
        for resource in self.api.resources:
            self.emit(f"class {impl_class(resource.name)};")
        self.emit("}  // namespace detail",
                  "// The resources' implementation classes by upstream's names: programs keep",
                  "// X_impl_t pointers and derive their own completion objects from comp_impl_t.")
        for resource in self.api.resources:
            self.emit(f"using detail::{impl_class(resource.name)};")
        self.emit("")

    def attr_structs(self):
        for resource in self.api.resources:
            self.emit(f"// Attributes of a {resource.name} ({resource.doc}).")
            self.emit(f"struct {attr_struct(resource.name)} {{")
            for attr in resource.attrs:
                output = "output, set by the runtime: " if attr.output else ""
                self.emit(f"  {attr.type} {attr.name} = {attr.default};  // {output}{attr.doc}")
            self.emit("};",
                      "// Upstream LCI's name of the struct, for programs written for it.",
                      f"using {upstream_attr_struct(resource.name)} = {attr_struct(resource.name)};",
                      "")

    def detail_declarations(self):
        self.emit("namespace detail {", "",
                  "// The description's defaults, each overridden by LCI_ATTR_<NAME> when",
                  "// that variable is set (std::invalid_argument on a malformed value).",
                  "// Reads the environment on every call: do not setenv concurrently.")
        for resource in self.api.resources:
            self.emit(f"{attr_struct(resource.name)} get_default_attr_{resource.name}();")
        self.emit("", "// The attributes a resource was allocated with (defined by the runtime).")
        for resource in self.api.resources:
            self.emit(f"const {attr_struct(resource.name)}& get_attr("
                      f"const {impl_class(resource.name)}* impl);")
        self.emit("")
        self.refusal_declarations()
        self.runtime_defaults()
        self.env_accessors()
        self.emit("}  // namespace detail", "")

    def env_accessors(self):
        variables = [v for v in self.api.env if v.accessor]
        if not variables:
            return
        self.emit("// Environment variables with a C++ type (the description's `env` lines):",
                  "// each accessor returns the variable's value, or its default when it is",
                  "// unset, and throws std::invalid_argument naming the variable for a",
                  "// malformed value (spellings as for an attribute: lci/api/attr_env.hpp).",
                  "// Each call reads the environment: do not setenv concurrently.")
        for variable in variables:
            self.emit(f"// {variable.name}: {variable.doc}",
                      f"inline constexpr {variable.type} {variable.accessor}_default = "
                      f"{variable.default};",
                      f"{variable.type} {variable.accessor}();")
        self.emit("")

    def refusal_declarations(self):
        self.emit("// An attribute the runtime does not act on (the description's `refused`),",
                  "// found set away from its description default.",
                  "struct refused_attr_t {",
                  "  const char* name = nullptr;",
                  "  std::string value;            // as the refusal shows it",
                  "  const char* reason = nullptr;  // why setting it would have no effect",
                  "};",
                  "// The first refused attribute of attr not at its default, in description",
                  "// order: those refused everywhere, then (network_reads_ibv false) those",
                  "// refused unless the network reads ibv attributes. False if none.")
        for resource in refusable_resources(self.api):
            self.emit(f"bool find_refused(const {attr_struct(resource.name)}& attr, "
                      "bool network_reads_ibv,",
                      "                  refused_attr_t* out);")
        self.emit("")

    def runtime_defaults(self):
        if not self.api.defaults:
            return
        self.emit("// The values the runtime picks where the description leaves them to it:",
                  "// one row for a real process, one for a simulated rank (hundreds of them",
                  "// share a process).",
                  "struct runtime_defaults_t {")
        for default in self.api.defaults:
            self.emit(f"  {default.type} {default.name};  // {default.doc}")
        self.emit("};")
        for row in ("real", "sim"):
            self.emit(f"inline constexpr runtime_defaults_t runtime_defaults_{row} = {{")
            for default in self.api.defaults:
                self.emit(f"    {getattr(default, row)},  // {default.name}")
            self.emit("};")
        self.emit("// The one place that picks a row.",
                  "inline const runtime_defaults_t& runtime_defaults(bool simulated) {",
                  "  return simulated ? runtime_defaults_sim : runtime_defaults_real;",
                  "}", "")

    def handle(self, resource: Resource):
        name = f"{resource.name}_t"
        impl = impl_class(resource.name)
        self.emit(f"// {name}: handle of a {resource.name} ({resource.doc}).",
                  "// Pointer-like: empty by default, copies name the same resource. Made",
                  f"// implicitly from a {impl}* or a void* naming one (nullptr: empty),",
                  "// as upstream's handles, so a program may keep and pass the raw pointer.",
                  f"class {name} {{",
                  " public:",
                  f"  using attr_t = {attr_struct(resource.name)};",
                  f"  {impl}* p_impl = nullptr;",
                  "",
                  f"  {name}() = default;",
                  f"  {name}(void* p) : p_impl(static_cast<{impl}*>(p)) {{}}  // NOLINT: implicit")
        if resource.sentinels:
            self.emit(f"  // Empty also for the sentinels 1 .. {resource.sentinels}, which name no resource.",
                      "  bool is_empty() const {",
                      f"    return reinterpret_cast<std::uintptr_t>(p_impl) <= {resource.sentinels};",
                      "  }")
        else:
            self.emit("  bool is_empty() const { return p_impl == nullptr; }")
        self.emit("  // The runtime reaches the resource through here, so every use of an",
                  "  // empty handle is refused with an exception.",
                  f"  {impl}* get_impl() const {{",
                  "    if (is_empty()) {",
                  f"      throw std::invalid_argument({cpp_string(name + ': empty handle')});",
                  "    }",
                  "    return p_impl;",
                  "  }",
                  f"  void set_impl({impl}* p) {{ p_impl = p; }}",
                  f"  bool operator==(const {name}& other) const {{ return p_impl == other.p_impl; }}",
                  f"  bool operator!=(const {name}& other) const {{ return p_impl != other.p_impl; }}")
        if resource.attrs:
            self.emit("", "  // The attributes it was allocated with (output attributes as the",
                      "  // runtime set them); throw if empty.",
                      "  attr_t get_attr() const { return detail::get_attr(get_impl()); }")
        for attr in resource.attrs:
            self.emit(f"  {attr.type} get_attr_{attr.name}() const {{",
                      f"    return detail::get_attr(get_impl()).{attr.name};",
                      "  }")
        self.emit("};",
                  "// Programs ship and store handles as one pointer.",
                  f"static_assert(sizeof({name}) == sizeof(void*), {cpp_string(name + ' is one pointer')});",
                  "")

    def functor(self, op: Operation):
        cls = f"{op.name}_x"
        nodiscard = "[[nodiscard]] " if "nodiscard" in op.modifiers else ""
        own_options = [p for p in op.options if p.attr_of is None]
        positional = [f"{p.type} {p.name}" for p in op.args]
        explicit = "explicit " if len(op.args) == 1 else ""
        inits = [f"m_{p.name}({p.name})" for p in op.args]
        impl_params = list(positional)
        call_args = [f"m_{p.name}" for p in op.args]
        if op.attr_resource:
            inits.append(f"m_attr(detail::get_default_attr_{op.attr_resource}())")
            impl_params.append(f"const {attr_struct(op.attr_resource)}& attr")
            call_args.append("m_attr")
        impl_params += [f"const {p.type}& {p.name}" if p.type in BY_REFERENCE_TYPES
                        else f"{p.type} {p.name}" for p in own_options]
        call_args += [f"m_{p.name}" for p in own_options]
        ret = "" if op.ret == "void" else "return "

        self.emit(f"// {op.name}: {op.doc}" if op.doc else f"// {op.name}")
        self.emit(f"class {cls} {{", " public:")
        ctor = wrap(f"  {explicit}{cls}(", positional, ")", "  ")
        init_list = f" : {', '.join(inits)}" if inits else ""
        if len(ctor) == 1 and len(ctor[0] + init_list) + 3 <= LINE_WIDTH:
            self.emit(f"{ctor[0]}{init_list} {{}}")
        else:
            self.emit(*ctor)
            self.emit(*wrap("      : ", inits, " {}", "    "))
        if op.options:
            self.emit("")
        for p in op.options:
            target = f"m_attr.{p.name}" if p.attr_of else f"m_{p.name}"
            self.emit(*comment(p.doc, "  "))
            setter = f"  {cls}& {p.name}({p.type} new_value) {{"
            body = f"{target} = new_value; return *this; }}"
            if len(setter) + 1 + len(body) <= LINE_WIDTH:
                self.emit(f"{setter} {body}")
            else:
                self.emit(setter, f"    {target} = new_value;", "    return *this;", "  }")
        self.emit("", f"  {nodiscard}{op.ret} operator()() const {{")
        self.emit(*wrap(f"    {ret}call_impl(", call_args, ");", "    "))
        self.emit("  }",
                  "  // Defined by the runtime.")
        self.emit(*wrap(f"  {op.ret} call_impl(", impl_params, ") const;", "  "))
        if op.args or op.attr_resource or own_options:
            self.emit("", " private:")
        for p in op.args:
            self.emit(f"  {p.type} m_{p.name};")
        if op.attr_resource:
            self.emit(f"  {attr_struct(op.attr_resource)} m_attr;")
        for p in own_options:
            self.emit(f"  {p.type} m_{p.name} = {p.default};")
        self.emit("};", "")
        names = ", ".join(p.name for p in op.args)
        self.emit(*wrap(f"{nodiscard}inline {op.ret} {op.name}(", positional, ") {", ""))
        # Braces: `free_comp_x(comp)();` would declare a function named comp.
        self.emit(f"  {ret}{cls}{{{names}}}();", "}", "")


class SourceWriter:
    def __init__(self, api: Api, namespace: str, source_path: str, header_include: str):
        self.api = api
        self.namespace = namespace
        self.source_path = source_path
        self.header_include = header_include
        self.out: List[str] = []

    def emit(self, *lines: str):
        self.out.extend(lines)

    def write(self) -> str:
        self.emit(
            f"// Generated from {self.source_path} by tools/api_gen/gen_api.py; do not edit.",
            "// The enums' name tables and the default attribute getters (see the header).",
            f'#include "{self.header_include}"',
            "",
            '#include "lci/api/attr_env.hpp"',
            "",
            f"namespace {self.namespace} {{",
            "",
            "namespace {",
            "",
            "using ::lci::detail::enum_names_t;",
            "using ::lci::detail::read_attr_env;",
            "")
        for enum in self.api.enums:
            names = ", ".join(cpp_string(v) for v in enum.values)
            self.emit(f"constexpr const char* {enum.stem}_value_names[] = {{{names}}};",
                      f"constexpr enum_names_t {enum.stem}_names =",
                      f"    ::lci::detail::make_enum_names({enum.stem}_value_names);")
        if self.api.refusals:
            self.emit("", "// Why each refused attribute is refused.")
        for refusal in self.api.refusals:
            self.emit(f"constexpr const char* refusal_{refusal.name} =",
                      f"    {cpp_string(refusal.reason)};")
        self.emit("", "}  // namespace", "")
        for enum in self.api.enums:
            self.emit(f"const char* get_{enum.stem}_str({enum.name} value) {{",
                      f"  return ::lci::detail::enum_name({enum.stem}_names, "
                      "static_cast<int>(value));",
                      "}", "")
        self.emit("namespace detail {", "")
        for enum in self.api.enums:
            self.emit(f"bool parse_{enum.stem}(const char* text, {enum.name}* out) {{",
                      f"  return ::lci::detail::parse_enum({enum.stem}_names, text, out);",
                      "}", "")
        for resource in self.api.resources:
            self.default_getter(resource)
        for resource in refusable_resources(self.api):
            self.refusal_finder(resource)
        for variable in self.api.env:
            if variable.accessor:
                self.emit(f"{variable.type} {variable.accessor}() {{",
                          f"  {variable.type} value = {variable.accessor}_default;",
                          f"  (void)read_attr_env({cpp_string(variable.name)}, &value);",
                          "  return value;", "}", "")
        self.emit("}  // namespace detail", "", f"}}  // namespace {self.namespace}")
        return "\n".join(self.out) + "\n"

    def value_text(self, attr: Attr) -> str:
        enum = self.api.enum(attr.type)
        if enum:
            return f"get_{enum.stem}_str(attr.{attr.name})"
        return f"::lci::detail::attr_value_text(attr.{attr.name})"

    def refusal_finder(self, resource: Resource):
        struct = attr_struct(resource.name)
        refused = [a for a in resource.attrs if a.refused]
        self.emit(f"bool find_refused(const {struct}& attr, bool network_reads_ibv,",
                  "                  refused_attr_t* out) {")
        if not refused:
            self.emit("  (void)attr;", "  (void)network_reads_ibv;", "  (void)out;",
                      "  return false;", "}", "")
            return
        self.emit(f"  const {struct} defaults{{}};  // the description's, not the environment's")
        if not any(a.refused_unless_ibv for a in refused):
            self.emit("  (void)network_reads_ibv;")
        ordered = ([a for a in refused if not a.refused_unless_ibv]
                   + [a for a in refused if a.refused_unless_ibv])
        for attr in ordered:
            condition = f"attr.{attr.name} != defaults.{attr.name}"
            if attr.refused_unless_ibv:
                condition = f"!network_reads_ibv && {condition}"
            self.emit(f"  if ({condition}) {{",
                      f"    *out = {{{cpp_string(attr.name)}, {self.value_text(attr)},",
                      f"            refusal_{attr.refused}}};",
                      "    return true;",
                      "  }")
        self.emit("  return false;", "}", "")

    def default_getter(self, resource: Resource):
        struct = attr_struct(resource.name)
        self.emit(f"{struct} get_default_attr_{resource.name}() {{",
                  f"  {struct} attr;")
        for attr in resource.attrs:
            variable = cpp_string(f"LCI_ATTR_{attr.name.upper()}")
            enum = self.api.enum(attr.type)
            if attr.output:
                self.emit(f"  // {attr.name}: an output attribute, set by the runtime.")
            elif enum:
                self.emit(f"  read_attr_env({variable}, {enum.stem}_names, &attr.{attr.name});")
            elif attr.type in ENV_UNREADABLE_TYPES:
                self.emit(f"  // {attr.name} ({attr.type}) cannot come from the environment.")
            else:
                self.emit(f"  read_attr_env({variable}, &attr.{attr.name});")
        self.emit("  return attr;", "}", "")


def generate(api: Api, namespace: str, source_path: str, header_include: str):
    """Returns (header text, source text)."""
    return (HeaderWriter(api, namespace, source_path).write(),
            SourceWriter(api, namespace, source_path, header_include).write())


def macros_header(api: Api, source_path: str) -> str:
    """The macros of lci_config.hpp, each with its doc."""
    out = [f"// Generated by tools/api_gen/gen_api.py from {source_path}: do not edit.",
           "// Compile-time facts about this build (lci_config.hpp includes it).",
           "#pragma once", ""]
    for macro in api.macros:
        out += [f"// {macro.doc}", f"#define {macro.name} {macro.value}"]
    return "\n".join(out) + "\n"


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("description", help="the API description (.def)")
    parser.add_argument("--namespace", default="lci", help="C++ namespace of the output")
    parser.add_argument("--header", required=True, help="header file to write")
    parser.add_argument("--source", required=True, help="source file to write")
    parser.add_argument("--include", required=True,
                        help="how the source includes the header, e.g. lci/api/lci_generated.hpp")
    parser.add_argument("--macros", help="the macros header to write (lci_config.hpp's)")
    args = parser.parse_args(argv)
    if not re.fullmatch(rf"{IDENTIFIER}(::{IDENTIFIER})*", args.namespace):
        print(f"gen_api.py: bad namespace '{args.namespace}'", file=sys.stderr)
        return 1
    try:
        with open(args.description, encoding="utf-8") as f:
            api = parse(f.read(), args.description)
    except DslError as e:
        print(f"{e}", file=sys.stderr)
        return 1
    header, source = generate(api, args.namespace, args.description, args.include)
    with open(args.header, "w", encoding="utf-8") as f:
        f.write(header)
    with open(args.source, "w", encoding="utf-8") as f:
        f.write(source)
    if args.macros:
        with open(args.macros, "w", encoding="utf-8") as f:
            f.write(macros_header(api, args.description))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
