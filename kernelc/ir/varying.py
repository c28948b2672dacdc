"""Which values of a kernel differ between threads, for code that runs threads as SIMD lanes.

A value is *uniform* when every thread of a launch computes the same one (parameters,
constants, loads at such indices, loop counters of such ranges); the SIMD lowering keeps
it in one scalar register. Every other value is *varying*: a vector with one lane per
thread. A local variable (`Slot`) is varying when a varying value is stored in it, or when
it is stored under *divergent* control: inside an `if` whose condition varies, or inside a
loop that some lanes may leave or skip while others go on (varying bounds or condition, or
a `break`/`continue` under a varying `if`). There only some lanes store, so the others keep
another value. A `return` makes no slot varying: the lanes that leave never read again.

Results of atomics and of funcs that depend on the thread (they read `tid()` or have
effects: atomics, stores, prints) are varying too; such ops run once per lane.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

_ALWAYS_VARYING = frozenset({OpCode.TID, OpCode.ATOMIC})


@dataclass
class Varying:
    values: set[int] = field(default_factory=set)  # ids of varying values
    slots: set[int] = field(default_factory=set)  # ids of varying slots
    loops: set[int] = field(default_factory=set)  # id() of loops run under a lane mask
    lane_funcs: frozenset[str] = frozenset()  # funcs whose calls run once per lane

    def value(self, v: ir.Value) -> bool:
        return v.id in self.values


def lane_dependent_funcs(module: ir.Module) -> frozenset[str]:
    """Funcs that read `tid()` or have effects, directly or through the funcs they call."""
    found: set[str] = set()
    for fn in module.funcs:  # callees come first
        for s in ir.walk(fn.body):
            if isinstance(s, (ir.ArrayStore, ir.Print)) or (
                    isinstance(s, ir.Op) and (s.opcode in _ALWAYS_VARYING or (
                        s.opcode == OpCode.CALL_FUNC and s.attr in found))):
                found.add(fn.name)
                break
    return frozenset(found)


def analyse(module: ir.Module) -> Varying:
    """The varying values, slots and masked loops of `module`'s kernel."""
    return analyse_function(module.kernel, frozenset(), lane_dependent_funcs(module))


def analyse_function(fn: ir.Function, varying_params: frozenset[int],
                     lane_funcs: frozenset[str]) -> Varying:
    """The same for `fn` whose parameters `varying_params` (ids) vary (a fixed point: a
    slot found varying makes its loads varying, which may make more control divergent)."""
    result = Varying(values=set(varying_params), lane_funcs=lane_funcs)
    while True:
        before = (len(result.values), len(result.slots), len(result.loops))
        _Walker(result).block(fn.body, divergent=False)
        if (len(result.values), len(result.slots), len(result.loops)) == before:
            return result


class _Walker:
    def __init__(self, result: Varying):
        self.r = result
        # per enclosing loop: [the loop, whether a varying `if` encloses us inside it]
        self.loops: list[list] = []

    def block(self, block: ir.Block, divergent: bool) -> None:
        for s in block:
            getattr(self, "visit_" + type(s).__name__)(s, divergent)

    def visit_Op(self, s: ir.Op, divergent: bool) -> None:
        if s.result is None:
            return
        r = self.r
        if (s.opcode in _ALWAYS_VARYING
                or any(a.id in r.values for a in s.args)
                or (s.opcode in (OpCode.LOAD_SLOT, OpCode.LOCAL_LOAD) and s.attr.id in r.slots)
                or (s.opcode == OpCode.CALL_FUNC and s.attr in r.lane_funcs)):
            r.values.add(s.result.id)

    def visit_StoreSlot(self, s: ir.StoreSlot, divergent: bool) -> None:
        if divergent or s.value.id in self.r.values:
            self.r.slots.add(s.slot.id)

    def visit_LocalStore(self, s: ir.LocalStore, divergent: bool) -> None:
        if divergent or s.index.id in self.r.values or s.value.id in self.r.values:
            self.r.slots.add(s.slot.id)

    def visit_If(self, s: ir.If, divergent: bool) -> None:
        varying = s.cond.id in self.r.values
        if varying:
            for frame in self.loops:
                frame[1] = True
        saved = [frame[1] for frame in self.loops]
        self.block(s.then_body, divergent or varying)
        self.block(s.else_body, divergent or varying)
        for frame, old in zip(self.loops, saved):
            frame[1] = old

    def _loop(self, s, varying_bounds: bool, divergent: bool, blocks) -> None:
        if varying_bounds:
            self.r.loops.add(id(s))
        self.loops.append([s, False])
        inner = divergent or id(s) in self.r.loops
        for block in blocks:
            self.block(block, inner)
        self.loops.pop()

    def visit_For(self, s: ir.For, divergent: bool) -> None:
        varying = any(v.id in self.r.values for v in (s.start, s.stop, s.step))
        if varying:
            self.r.values.add(s.var.id)
        self._loop(s, varying, divergent, (s.body,))

    def visit_While(self, s: ir.While, divergent: bool) -> None:
        self.block(s.cond_body, divergent or id(s) in self.r.loops)  # decides `cond`
        self._loop(s, s.cond.id in self.r.values, divergent, (s.cond_body, s.body))

    def visit_Break(self, s, divergent: bool) -> None:
        if self.loops and self.loops[-1][1]:  # some lanes leave or skip, others go on
            self.r.loops.add(id(self.loops[-1][0]))

    visit_Continue = visit_Break

    def visit_Return(self, s: ir.Return, divergent: bool) -> None:
        pass

    def visit_ArrayStore(self, s, divergent: bool) -> None:
        pass

    visit_Print = visit_Assert = visit_ArrayStore

