"""rc11: an exhaustive checker of small litmus programs under RC11.

RC11 is the repaired C++11 memory model of Lahav, Vafeiadis, Kang, Hur and
Dreyer ("Repairing sequential consistency in C/C++11", PLDI 2017). Relacy
explores the C++ orders operationally, one thread step at a time, so a load
never reads a value written "later" than the point where it runs; and TSan
models happens-before only. Neither can show a relaxed load that reads a
value too new (message passing without an acquire, which Arm and POWER
show), nor an order that leaves the single total order of seq_cst
accesses. This checker enumerates every execution graph of a straight-line
program and keeps those consistent with the model's axioms, so it shows
both (docs/verification.md, "RC11 litmus checks").

A program is a list of threads, each a list of operations on named
locations; every location starts at a given value. Operations:

    load(loc, order, reg)
    store(loc, value, order)
    rmw(loc, fn, order, reg)   atomic read-modify-write: writes fn(read)
    cas(loc, expected, desired, order, reg)
                              a compare-exchange that succeeds: the
                              executions where it would read another value
                              are not explored (scenarios name the CASes
                              that must succeed; a failed CAS is a load,
                              written as one)

Orders: "rlx", "acq", "rel", "acq_rel", "sc" (RMWs take any; loads rlx,
acq, sc; stores rlx, rel, sc), and "na" for a non-atomic load or store
(plain data: a buffer's bytes, a field). Registers end with the value the
access read. `exists(program, predicate)` returns an execution whose
registers satisfy the predicate, or None when none is consistent: the
outcome is forbidden. `race(program)` returns a consistent execution with
a data race, or None: two accesses of one location by different threads,
at least one a write and at least one non-atomic, that hb does not order.
A program with a race has undefined behavior in C++ whatever the values,
which is how a read that must finish before a buffer is reused (a shape
that RC11's no-thin-air axiom forbids from reading the later write even
when relaxed) still shows a missing release or acquire.

Limits: no fences (the scenarios need none), no control flow (a scenario that follows a branch puts the branch's
condition into its predicate), and each location's writes are ordered by
brute force, so a program stays within a dozen or so events.

The axioms, over events E with sequenced-before sb, reads-from rf,
modification order mo (init first) and from-read fr = rf^-1;mo minus the
identity:
    rs   = [W];(sb|loc)?;[W];(rf;rmw)*           release sequence
    sw   = [E rel];rs;rf;[E acq]                 synchronizes-with
    hb   = (sb | sw)+
    eco  = (rf | mo | fr)+
    coherence:   hb;eco? irreflexive
    atomicity:   no RMW reads from w with w mo w' mo the RMW
    SC:          psc = [E sc];scb;[E sc] acyclic, where
                 scb = sb | sb|!=loc;hb;sb|!=loc | hb|loc | mo | fr
    no thin air: sb | rf acyclic
"""

import itertools
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, List, Optional, Sequence

ORDERS = ("na", "rlx", "acq", "rel", "acq_rel", "sc")
_ACQUIRE = {"acq", "acq_rel", "sc"}
_RELEASE = {"rel", "acq_rel", "sc"}

# The C++ spellings used in the sources (util::mo_* are std::memory_order).
CXX_ORDERS = {
    "mo_relaxed": "rlx",
    "mo_acquire": "acq",
    "mo_consume": "acq",  # every compiler promotes consume to acquire
    "mo_release": "rel",
    "mo_acq_rel": "acq_rel",
    "mo_seq_cst": "sc",
}


@dataclass
class Op:
    kind: str  # "load", "store", "rmw"
    loc: str
    order: str
    reg: Optional[str] = None
    value: int = 0  # a store's value
    fn: Optional[Callable[[int], int]] = None  # an RMW's new value
    expected: Optional[int] = None  # a CAS's expected value

    def __post_init__(self):
        assert self.order in ORDERS, f"unknown order {self.order}"
        if self.kind == "load":
            assert self.order in ("na", "rlx", "acq", "sc"), f"a load cannot be {self.order}"
        if self.kind == "store":
            assert self.order in ("na", "rlx", "rel", "sc"), f"a store cannot be {self.order}"
        if self.kind == "rmw":
            assert self.order != "na", "a read-modify-write is atomic"


def load(loc: str, order: str, reg: str) -> Op:
    return Op("load", loc, order, reg=reg)


def store(loc: str, value: int, order: str) -> Op:
    return Op("store", loc, order, value=value)


def rmw(loc: str, fn: Callable[[int], int], order: str, reg: Optional[str] = None) -> Op:
    return Op("rmw", loc, order, reg=reg, fn=fn)


def fetch_add(loc: str, delta: int, order: str, reg: Optional[str] = None) -> Op:
    return rmw(loc, lambda v: v + delta, order, reg)


def cas(loc: str, expected: int, desired: int, order: str, reg: Optional[str] = None) -> Op:
    op = rmw(loc, lambda v: desired, order, reg)
    op.expected = expected
    return op


@dataclass
class Event:
    index: int
    thread: int  # -1: an initial write
    op: Optional[Op]  # None: an initial write
    loc: str
    is_read: bool
    is_write: bool
    order: str
    read_value: Optional[int] = None
    write_value: Optional[int] = None


@dataclass
class Execution:
    events: List[Event]
    rf: Dict[int, int]  # read event -> write event
    mo: Dict[str, List[int]]  # location -> writes, init first
    registers: Dict[str, int] = field(default_factory=dict)
    hb: List[int] = field(default_factory=list)  # happens-before, successor bitmasks

    def describe(self) -> str:
        lines = []
        for e in self.events:
            if e.thread < 0:
                continue
            what = f"T{e.thread} {e.op.kind} {e.loc} {e.order}"
            if e.is_read:
                src = self.events[self.rf[e.index]]
                origin = "init" if src.thread < 0 else f"T{src.thread}#{src.index}"
                what += f" read {e.read_value} (from {origin})"
            if e.is_write:
                what += f" wrote {e.write_value}"
            lines.append(f"  #{e.index} {what}")
        for loc, writes in self.mo.items():
            lines.append(f"  mo {loc}: " + " < ".join(
                "init" if self.events[w].thread < 0 else f"#{w}" for w in writes))
        return "\n".join(lines)


def _closure(rel: List[int]) -> List[int]:
    """Transitive closure of a relation given as successor bitmasks."""
    rel = list(rel)
    n = len(rel)
    for k in range(n):
        bit = 1 << k
        succ = rel[k]
        for i in range(n):
            if rel[i] & bit:
                rel[i] |= succ
    return rel


def _acyclic(rel: List[int]) -> bool:
    closed = _closure(rel)
    return all(not (closed[i] >> i) & 1 for i in range(len(closed)))


def _compose(a: List[int], b: List[int]) -> List[int]:
    out = []
    for succ in a:
        acc = 0
        j = 0
        while succ:
            if succ & 1:
                acc |= b[j]
            succ >>= 1
            j += 1
        out.append(acc)
    return out


def _build_events(init: Dict[str, int], threads: Sequence[Sequence[Op]]) -> List[Event]:
    events: List[Event] = []
    for loc, value in sorted(init.items()):
        events.append(Event(len(events), -1, None, loc, False, True, "rlx",
                            write_value=value))
    for t, ops in enumerate(threads):
        for op in ops:
            assert op.loc in init, f"location {op.loc} has no initial value"
            events.append(Event(len(events), t, op, op.loc,
                                op.kind in ("load", "rmw"), op.kind in ("store", "rmw"),
                                op.order,
                                write_value=op.value if op.kind == "store" else None))
    return events


def _sequenced_before(events: List[Event]) -> List[int]:
    """sb: initial writes before everything, then program order per thread."""
    n = len(events)
    sb = [0] * n
    for a in events:
        for b in events:
            if a.thread < 0 and b.thread >= 0:
                sb[a.index] |= 1 << b.index
            elif a.thread >= 0 and a.thread == b.thread and a.index < b.index:
                sb[a.index] |= 1 << b.index
    return sb


def _values(events: List[Event], rf: Dict[int, int], sb: List[int]) -> bool:
    """Fills in read and written values along sb | rf; False on a cycle (thin air)."""
    done = [e.op is None or e.op.kind == "store" for e in events]
    for e in events:
        if e.op is None or e.op.kind == "store":
            continue
        e.read_value = None
        if e.op.kind == "rmw":
            e.write_value = None
    progress = True
    while progress:
        progress = False
        for e in events:
            if done[e.index]:
                continue
            w = rf[e.index]
            if not done[w]:
                continue
            e.read_value = events[w].write_value
            if e.op.kind == "rmw":
                e.write_value = e.op.fn(e.read_value)
            done[e.index] = True
            progress = True
    if not all(done):
        return False
    # no thin air: sb | rf acyclic (values alone may hide a cycle of equal values)
    rel = list(sb)
    for r, w in rf.items():
        rel[w] |= 1 << r
    return _acyclic(rel)


def _consistent(events: List[Event], sb: List[int], rf: Dict[int, int],
                mo: Dict[str, List[int]]) -> Optional[List[int]]:
    """The execution's hb when it is consistent, else None."""
    n = len(events)
    mo_rel = [0] * n
    mo_pos = {}
    for writes in mo.values():
        for i, w in enumerate(writes):
            mo_pos[w] = i
            for later in writes[i + 1:]:
                mo_rel[w] |= 1 << later
    # atomicity: an RMW directly follows, in mo, the write it reads
    for r, w in rf.items():
        if events[r].is_write and mo_pos[r] != mo_pos[w] + 1:
            return None
    rf_rel = [0] * n
    for r, w in rf.items():
        rf_rel[w] |= 1 << r
    fr_rel = [0] * n
    for r, w in rf.items():
        fr_rel[r] = mo_rel[w] & ~(1 << r)
    # release sequences and synchronizes-with
    same_loc_write_after = [0] * n
    for a in events:
        if not a.is_write:
            continue
        for b in events:
            if b.is_write and b.loc == a.loc and (sb[a.index] >> b.index) & 1:
                same_loc_write_after[a.index] |= 1 << b.index
    sw = [0] * n
    for a in events:
        if not (a.is_write and a.thread >= 0 and a.order in _RELEASE):
            continue
        seq = (1 << a.index) | same_loc_write_after[a.index]
        frontier = seq
        while frontier:  # (rf;rmw)*
            nxt = 0
            for w in range(n):
                if (frontier >> w) & 1:
                    for r in range(n):
                        if (rf_rel[w] >> r) & 1 and events[r].is_write and not (seq >> r) & 1:
                            nxt |= 1 << r
            seq |= nxt
            frontier = nxt
        for w in range(n):
            if (seq >> w) & 1:
                for r in range(n):
                    if (rf_rel[w] >> r) & 1 and events[r].order in _ACQUIRE:
                        sw[a.index] |= 1 << r
    hb = _closure([sb[i] | sw[i] for i in range(n)])
    eco = _closure([rf_rel[i] | mo_rel[i] | fr_rel[i] for i in range(n)])
    # coherence: hb;eco? irreflexive
    for i in range(n):
        if (hb[i] >> i) & 1:
            return None
        reach = hb[i]
        j = 0
        while reach:
            if reach & 1 and (eco[j] >> i) & 1:
                return None
            reach >>= 1
            j += 1
    # SC: psc over the seq_cst events acyclic
    loc_mask = {}
    for e in events:
        loc_mask[e.loc] = loc_mask.get(e.loc, 0) | (1 << e.index)
    same_loc = [loc_mask[e.loc] for e in events]
    sb_neq = [sb[i] & ~same_loc[i] for i in range(n)]
    scb = list(sb)
    middle = _compose(_compose(sb_neq, hb), sb_neq)
    for i in range(n):
        scb[i] |= middle[i] | (hb[i] & same_loc[i]) | mo_rel[i] | fr_rel[i]
    sc_mask = 0
    for e in events:
        if e.order == "sc" and e.thread >= 0:
            sc_mask |= 1 << e.index
    psc = [scb[i] & sc_mask if (sc_mask >> i) & 1 else 0 for i in range(n)]
    return hb if _acyclic(psc) else None


def executions(init: Dict[str, int], threads: Sequence[Sequence[Op]],
               predicate: Callable[[Dict[str, int]], bool] = lambda regs: True):
    """Yields every RC11-consistent execution whose registers satisfy predicate."""
    events = _build_events(init, threads)
    sb = _sequenced_before(events)
    reads = [e for e in events if e.is_read]
    writes_of = {}
    for e in events:
        if e.is_write:
            writes_of.setdefault(e.loc, []).append(e.index)
    choices = [[w for w in writes_of[r.loc] if w != r.index] for r in reads]
    for picked in itertools.product(*choices):
        rf = {r.index: w for r, w in zip(reads, picked)}
        if not _values(events, rf, sb):
            continue
        if any(e.op is not None and e.op.expected is not None and
               e.read_value != e.op.expected for e in events):
            continue
        regs = {e.op.reg: e.read_value for e in events
                if e.op is not None and e.op.reg is not None}
        if not predicate(regs):
            continue
        per_loc = []
        for loc, ws in sorted(writes_of.items()):
            init_w = [w for w in ws if events[w].thread < 0]
            rest = [w for w in ws if events[w].thread >= 0]
            per_loc.append([(loc, init_w + list(p)) for p in itertools.permutations(rest)])
        for combo in itertools.product(*per_loc):
            mo = dict(combo)
            hb = _consistent(events, sb, rf, mo)
            if hb is not None:
                # A copy: the next candidate overwrites the events' values.
                yield Execution([replace(e) for e in events], dict(rf), mo,
                                dict(regs), hb)


def exists(init: Dict[str, int], threads: Sequence[Sequence[Op]],
           predicate: Callable[[Dict[str, int]], bool]) -> Optional[Execution]:
    """An RC11-consistent execution satisfying predicate, or None (forbidden)."""
    for execution in executions(init, threads, predicate):
        return execution
    return None


def racing_pair(execution: Execution) -> Optional[tuple]:
    """Two events of the execution that race (see race()), or None."""
    events, hb = execution.events, execution.hb
    for a in events:
        for b in events[a.index + 1:]:
            if a.thread < 0 or a.thread == b.thread or a.loc != b.loc:
                continue
            if not (a.is_write or b.is_write) or "na" not in (a.order, b.order):
                continue
            if not (hb[a.index] >> b.index) & 1 and not (hb[b.index] >> a.index) & 1:
                return a.index, b.index
    return None


def race(init: Dict[str, int], threads: Sequence[Sequence[Op]]) -> Optional[Execution]:
    """A consistent execution with a data race, or None (the program is race free)."""
    for execution in executions(init, threads):
        if racing_pair(execution) is not None:
            return execution
    return None


class LitmusAssertions:
    """Assertions for a unittest.TestCase that checks litmus programs
    (mix in beside it): each failure shows the execution that breaks it."""

    def assertForbidden(self, init, threads, outcome, what):
        """No consistent execution's registers satisfy outcome."""
        execution = exists(init, threads, outcome)
        if execution is not None:
            self.fail(f"{what}: RC11 allows it:\n{execution.describe()}")

    def assertRaceFree(self, init, threads, goes_on, what):
        """No consistent execution whose registers satisfy goes_on races."""
        for execution in executions(init, threads, goes_on):
            pair = racing_pair(execution)
            if pair is not None:
                self.fail(f"{what}: events #{pair[0]} and #{pair[1]} race:\n"
                          f"{execution.describe()}")


def order_at(path: str, anchor: str, which: int = -1, occurrence: int = 0,
             lines: int = 1, offset: int = 0) -> str:
    """The memory order written on a source line that contains anchor.

    Exactly `lines` lines must contain anchor (so that a scenario cannot
    silently read another line after an edit); occurrence picks one of them,
    in file order; offset moves from it to a later line of the same
    statement. which picks among that line's util::mo_* tokens (-1: the
    last, which on a line that selects a broken variant's order,
    `mutated(...) ? mo_a : mo_b`, is the order of every other build). A
    mutated line makes the scenario that reads it check the mutant.
    """
    with open(path, encoding="utf-8") as f:
        text = f.read().splitlines()
    hits = [i for i, line in enumerate(text) if anchor in line]
    if len(hits) != lines:
        raise LookupError(f"{path}: {len(hits)} lines contain {anchor!r}, want {lines}")
    line = text[hits[occurrence] + offset]
    tokens = re.findall(r"\bmo_[a-z_]+\b", line)
    if not tokens:
        raise LookupError(f"{path}: the line with {anchor!r} names no memory order")
    return CXX_ORDERS[tokens[which]]
