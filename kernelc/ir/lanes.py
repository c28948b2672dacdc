"""Blocks of several lanes on the CPU: a kernel rewritten to run once per block.

With `config.enable_cpu_blocks`, a CPU launch with `block_dim` B > 1 groups its threads in
blocks of B lanes, as a GPU does: a tile operation is the block's collective work, done
once, and everything else is each lane's own. The front end marks the statements of tile
operations (and the slots holding a block's tiles); this pass makes a kernel that runs once
per block:

- consecutive per-lane statements become a loop over the block's active lanes (the last
  block of a launch may have fewer);
- collective statements run once; control flow holding collective work runs once too, with
  its condition or bounds taken from lane 0 (every lane must reach a tile operation alike);
- a value a lane computes and uses after its loop, and a local variable used in more than
  one such loop or by collective code, get one entry per lane (a local array of B entries);
  collective code reads lane 0's entry and writes all of them;
- tid() is the block's first thread plus the lane; `return` in per-lane code retires the
  lane for the rest of the block; `break` / `continue` of a collective loop from per-lane
  code take effect after the loop over lanes.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable

from kernelc import types as T
from kernelc.errors import KernelError
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode
from kernelc.ir.passes.rewrite import operands, substitute

_CONTROL = (ir.If, ir.For, ir.While)
_COLLECTIVE = "C"  # the region of collective code


def split_lanes(fn: ir.Function, collective: Iterable[int], block_slots: set[int],
                lanes: int, next_id: int) -> ir.Function:
    """`fn` (a kernel just lowered, its collective statements' ids in `collective`) as a
    kernel run once per block of `lanes` lanes."""
    return _LaneSplit(fn, collective, block_slots, lanes, next_id).run()


def _children(s: ir.Stmt) -> tuple[ir.Block, ...]:
    if isinstance(s, ir.If):
        return (s.then_body, s.else_body)
    if isinstance(s, ir.For):
        return (s.body,)
    if isinstance(s, ir.While):
        return (s.cond_body, s.body)
    return ()


def _slot_of(s: ir.Stmt) -> ir.Slot | None:
    """The slot a statement reads or writes, if any."""
    if isinstance(s, (ir.StoreSlot, ir.LocalStore)):
        return s.slot
    if isinstance(s, ir.Op):
        if s.opcode in (OpCode.LOAD_SLOT, OpCode.LOCAL_LOAD):
            return s.attr
        if s.opcode in (OpCode.LOCAL_ARRAY, OpCode.SLOT_ADDRESS):
            return s.attr[0]
    return None


def _expandable(t: T.Type) -> T.Type | None:
    """The element type of a per-lane copy of a slot of type `t`, or None if a local array
    cannot hold it (an array, a handle): such a slot stays shared."""
    elem = t.dtype if isinstance(t, T.LocalArrayType) else t
    if isinstance(elem, (T.ScalarType, T.VectorType, T.MatrixType, T.StructType)):
        return elem
    return None


@dataclasses.dataclass
class _LaneLoop:
    var: ir.Value
    nested: bool  # inside a collective loop: it runs again at each of its iterations


class _LaneSplit:
    def __init__(self, fn: ir.Function, collective: Iterable[int], block_slots: set[int],
                 lanes: int, next_id: int):
        self.fn = fn
        self.marked = set(collective)
        self.block_slots = block_slots
        self.lanes = lanes
        self.ids = itertools.count(next_id + 1)
        self.keep: list[ir.Stmt] = []  # rebuilt statements' originals: their ids stay unique
        self.slots: list[ir.Slot] = list(fn.slots)
        self.loc = fn.loc
        self.lane_loops: dict[int, _LaneLoop] = {}  # lane variable id -> its loop
        self.alive: ir.Slot | None = None  # per lane: not yet returned
        self.uniform: set[int] = set()  # slots of this pass's own that stay one per block
        self.prologue: list[ir.Stmt] = []
        self._collective: dict[int, bool] = {}

    # ---- helpers ------------------------------------------------------------------------

    def value(self, t: T.Type) -> ir.Value:
        return ir.Value(next(self.ids), t)

    def slot(self, name: str, t: T.Type) -> ir.Slot:
        s = ir.Slot(next(self.ids), name, t)
        self.slots.append(s)
        return s

    def op(self, out: list, opcode: OpCode, args: Iterable[ir.Value], t: T.Type,
           attr=None, collective: bool = False) -> ir.Value:
        result = self.value(t)
        stmt = ir.Op(self.loc, result, opcode, tuple(args), attr)
        out.append(stmt)
        if collective:
            self.mark(stmt)
        return result

    def const(self, out: list, value, t: T.Type = T.int32, collective: bool = False):
        return self.op(out, OpCode.CONST, (), t, value, collective)

    def mark(self, stmt: ir.Stmt) -> ir.Stmt:
        self.marked.add(id(stmt))
        self.keep.append(stmt)
        return stmt

    def like(self, new: ir.Stmt, old: ir.Stmt) -> ir.Stmt:
        """`new` (rebuilt from `old`) keeps `old`'s collective mark."""
        self.keep.append(old)
        if id(old) in self.marked:
            self.mark(new)
        return new

    def is_collective(self, s: ir.Stmt) -> bool:
        found = self._collective.get(id(s))
        if found is None:
            found = id(s) in self.marked or any(self.is_collective(x)
                                                for body in _children(s) for x in body)
            self._collective[id(s)] = found
            self.keep.append(s)
        return found

    # ---- the pass -------------------------------------------------------------------------

    def run(self) -> ir.Function:
        fn = self.fn
        b = self.prologue
        B = self.lanes
        self.block = self.op(b, OpCode.TID, (), T.int32, (0, 0), True)
        self.width = self.const(b, B, collective=True)
        self.first = self.op(b, OpCode.MUL, (self.block, self.width), T.int32, collective=True)
        total = self.op(b, OpCode.LAUNCH_SIZE, (), T.int32, collective=True)
        rest = self.op(b, OpCode.SUB, (total, self.first), T.int32, collective=True)
        fewer = self.op(b, OpCode.LT, (rest, self.width), T.bool_, collective=True)
        self.active = self.op(b, OpCode.SELECT, (fewer, rest, self.width), T.int32,
                              collective=True)
        if self._returns_in_lanes(fn.body):
            self.alive = self.slot("lane_alive", T.LocalArrayType(T.bool_, B))
            self.uniform.add(self.alive.id)
            true = self.const(b, True, T.bool_, collective=True)
            self._fill(b, self.alive, B, true)
        body, _ = self.restructure(list(fn.body), loop=None, nested=False)
        body = self.expand_slots(body)
        return dataclasses.replace(fn, body=tuple(self.prologue + body), slots=tuple(self.slots),
                                   lanes=self.lanes)

    def _returns_in_lanes(self, block: ir.Block) -> bool:
        for s in block:
            if isinstance(s, ir.Return) and id(s) not in self.marked:
                return True
            if any(self._returns_in_lanes(body) for body in _children(s)):
                return True
        return False

    def _fill(self, out: list, slot: ir.Slot, count: int, value: ir.Value) -> None:
        """`slot[k] = value` for every k < count, as collective code."""
        k = self.value(T.int32)
        store = self.mark(ir.LocalStore(self.loc, slot, k, value))
        zero, one = self.const(out, 0, collective=True), self.const(out, 1, collective=True)
        stop = self.const(out, count, collective=True)
        out.append(self.mark(ir.For(self.loc, k, zero, stop, one, (store,))))

    # ---- lane loops and collective statements ----------------------------------------------

    def restructure(self, stmts: list[ir.Stmt], loop, nested: bool,
                    keep_visible: tuple[ir.Value, ...] = ()):
        """The statements of one block: runs of per-lane statements in loops over lanes,
        collective ones as they are (their regions restructured). `loop` is the innermost
        collective loop around (for `break` / `continue` from lanes); `keep_visible` are
        values the block's owner reads after it (a while loop's condition). Returns the
        new statements and the replacements of `keep_visible`."""
        groups: list[tuple[bool, list[ir.Stmt]]] = []
        for s in stmts:
            c = self.is_collective(s)
            if groups and not c and not groups[-1][0]:
                groups[-1][1].append(s)
            else:
                groups.append((c, [s]))
        kept = list(keep_visible)
        for gi, (c, _) in enumerate(groups):
            if not c:
                kept = self.localize(groups, gi, kept)
        out: list[ir.Stmt] = []
        for c, run in groups:
            if c:
                out.extend(self.collective_stmt(s, loop, nested) for s in run)
            else:
                out.extend(self.lane_loop(run, loop, nested))
        return out, tuple(kept)

    def localize(self, groups, gi: int, kept: list[ir.Value]) -> list[ir.Value]:
        """Values defined by the per-lane run `groups[gi]` and read after it go through a
        slot (expanded per lane later): stored where defined, loaded where read."""
        run = groups[gi][1]
        defs = {s.result.id: s for s in run if isinstance(s, ir.Op) and s.result is not None}
        later = [s for _, g in groups[gi + 1:] for s in g]
        used = {v.id for s in ir.walk(tuple(later)) for v in operands(s) if v.id in defs}
        used |= {v.id for v in kept if v.id in defs}
        if not used:
            return kept
        slots = {}
        new_run = []
        for s in run:
            new_run.append(s)
            if isinstance(s, ir.Op) and s.result is not None and s.result.id in used:
                slot = slots[s.result.id] = self.slot(f"lane_value{s.result.id}", s.result.type)
                new_run.append(ir.StoreSlot(self.loc, slot, s.result))
        run[:] = new_run
        for _, g in groups[gi + 1:]:
            g[:] = self.reload(g, slots)
        out = []
        for v in kept:
            if v.id in slots:
                tail: list[ir.Stmt] = []
                out.append(self.op(tail, OpCode.LOAD_SLOT, (), v.type, slots[v.id], True))
                groups.append((True, tail))
            else:
                out.append(v)
        return out

    def reload(self, block: list[ir.Stmt], slots: dict[int, ir.Slot]) -> list[ir.Stmt]:
        """`block` reading the values of `slots` (by value id) from them: a load before
        each statement that reads one, with that statement's mark."""
        out: list[ir.Stmt] = []
        for s in block:
            subst = {}
            for v in operands(s):
                if v.id in slots and v not in subst:
                    subst[v] = self.op(out, OpCode.LOAD_SLOT, (), v.type, slots[v.id],
                                       id(s) in self.marked or self.is_collective(s))
            new = substitute(s, subst) if subst else s
            if _children(new):
                new = _with_children(new, [tuple(self.reload(list(body), slots))
                                           for body in _children(new)])
            out.append(self.like(new, s) if new is not s else s)
        return out

    def collective_stmt(self, s: ir.Stmt, loop, nested: bool) -> ir.Stmt:
        if isinstance(s, ir.If):
            then, _ = self.restructure(list(s.then_body), loop, nested)
            other, _ = self.restructure(list(s.else_body), loop, nested)
            return self.like(dataclasses.replace(s, then_body=tuple(then),
                                                 else_body=tuple(other)), s)
        if isinstance(s, ir.For):
            flags = _LoopFlags(self)
            body, _ = self.restructure(list(s.body), flags, True)
            return self.like(dataclasses.replace(s, body=tuple(flags.prefix + body)), s)
        if isinstance(s, ir.While):
            flags = _LoopFlags(self)
            cond_body, (cond,) = self.restructure(list(s.cond_body), loop, True, (s.cond,))
            body, _ = self.restructure(list(s.body), flags, True)
            return self.like(dataclasses.replace(s, cond_body=tuple(cond_body), cond=cond,
                                                 body=tuple(flags.prefix + body)), s)
        if isinstance(s, ir.Op) and s.opcode == OpCode.TID:  # lane 0's
            return self.mark(ir.Op(s.loc, s.result, OpCode.TID_AT, (self.first,), s.attr))
        if isinstance(s, ir.Op) and s.opcode == OpCode.LANE:
            return self.mark(ir.Op(s.loc, s.result, OpCode.CONST, (), 0))
        return s

    def lane_loop(self, run: list[ir.Stmt], loop, nested: bool) -> list[ir.Stmt]:
        lane = self.value(T.int32)
        self.lane_loops[lane.id] = _LaneLoop(lane, nested)
        body: list[ir.Stmt] = []
        self.linear = self.op(body, OpCode.ADD, (self.first, lane), T.int32)
        inner = self.exits(run, depth=0, loop=loop, lane=lane)
        if self.alive is not None:
            live = self.op(body, OpCode.LOCAL_LOAD, (lane,), T.bool_, self.alive)
            body.append(ir.If(self.loc, live, tuple(inner)))
        else:
            body.extend(inner)
        out: list[ir.Stmt] = []
        if loop is not None:
            out.extend(loop.reset())
        zero, one = self.const(out, 0, collective=True), self.const(out, 1, collective=True)
        out.append(self.mark(ir.For(self.loc, lane, zero, self.active, one, tuple(body))))
        if loop is not None:
            out.extend(loop.apply())
        return out

    def exits(self, block: Iterable[ir.Stmt], depth: int, loop, lane: ir.Value) -> list:
        """Per-lane statements with `return` retiring the lane, `break` / `continue` of the
        collective loop around deferred to after the loop over lanes, and LANE / TID read
        from the lane's index. `depth` counts the per-lane loops around."""
        out: list[ir.Stmt] = []
        for s in block:
            if isinstance(s, ir.Return):
                false = self.const(out, False, T.bool_)
                out.append(ir.LocalStore(self.loc, self.alive, lane, false))
                out.append(ir.Break(self.loc) if depth else ir.Continue(self.loc))
                continue
            if isinstance(s, (ir.Break, ir.Continue)) and depth == 0:
                if loop is None:
                    raise KernelError("break or continue outside a loop", s.loc)
                out.extend(loop.request(isinstance(s, ir.Break)))
                out.append(ir.Continue(self.loc))
                continue
            if isinstance(s, ir.Op) and s.opcode == OpCode.LANE:
                out.append(ir.Op(s.loc, s.result, OpCode.ADD, (lane, self.const(out, 0)), None))
                continue
            if isinstance(s, ir.Op) and s.opcode == OpCode.TID:
                out.append(ir.Op(s.loc, s.result, OpCode.TID_AT, (self.linear,), s.attr))
                continue
            had_return = self.alive is not None and self._returns_in_lanes((s,))
            if isinstance(s, ir.If):
                s = dataclasses.replace(s, then_body=tuple(self.exits(s.then_body, depth, loop,
                                                                      lane)),
                                        else_body=tuple(self.exits(s.else_body, depth, loop,
                                                                   lane)))
            elif isinstance(s, ir.For):
                s = dataclasses.replace(s, body=tuple(self.exits(s.body, depth + 1, loop, lane)))
            elif isinstance(s, ir.While):
                s = dataclasses.replace(
                    s, cond_body=tuple(self.exits(s.cond_body, depth + 1, loop, lane)),
                    body=tuple(self.exits(s.body, depth + 1, loop, lane)))
            out.append(s)
            if isinstance(s, (ir.For, ir.While)) and had_return:
                live = self.op(out, OpCode.LOCAL_LOAD, (lane,), T.bool_, self.alive)
                dead = self.op(out, OpCode.NOT, (live,), T.bool_)
                leave = ir.Break(self.loc) if depth else ir.Continue(self.loc)
                out.append(ir.If(self.loc, dead, (leave,)))
        return out

    # ---- per-lane copies of local variables ---------------------------------------------------

    def expand_slots(self, body: list[ir.Stmt]) -> list[ir.Stmt]:
        regions: dict[int, set] = {}
        self._regions(body, _COLLECTIVE, regions)
        expanded: dict[int, tuple[ir.Slot, int]] = {}
        rezero: dict[int, list[ir.Slot]] = {}
        by_id = {s.id: s for s in self.slots}
        for sid, where in regions.items():
            slot = by_id[sid]
            if sid in self.block_slots or sid in self.uniform or where == {_COLLECTIVE}:
                continue
            lane_only = [r for r in where if r != _COLLECTIVE]
            if len(where) == 1 and not self.lane_loops[lane_only[0]].nested:
                if not isinstance(slot.type, T.LocalArrayType):
                    rezero.setdefault(lane_only[0], []).append(slot)
                continue
            elem = _expandable(slot.type)
            if elem is None:
                continue
            count = slot.type.length if isinstance(slot.type, T.LocalArrayType) else 1
            wide = self.slot(f"{slot.name}_lanes", T.LocalArrayType(elem, count * self.lanes))
            expanded[sid] = (wide, count)
            if not isinstance(slot.type, T.LocalArrayType):
                zero = _zero(self, self.prologue, elem)
                if zero is not None:
                    self._fill(self.prologue, wide, self.lanes, zero)
        return self._rewrite(body, _COLLECTIVE, expanded, rezero)

    def _regions(self, block, region, found: dict[int, set]) -> None:
        for s in block:
            slot = _slot_of(s)
            if slot is not None:
                found.setdefault(slot.id, set()).add(region)
            inner = region
            if isinstance(s, ir.For) and s.var.id in self.lane_loops:
                inner = s.var.id
            for body in _children(s):
                self._regions(body, inner, found)

    def _rewrite(self, block, region, expanded, rezero) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for s in block:
            inner = region
            if isinstance(s, ir.For) and s.var.id in self.lane_loops:
                inner = s.var.id
                start = [ir.StoreSlot(self.loc, slot, z) for slot in rezero.get(inner, ())
                         if (z := _zero(self, out, slot.type)) is not None]
                body = self._rewrite(s.body, inner, expanded, rezero)
                out.append(dataclasses.replace(s, body=tuple(start + body)))
                continue
            if _children(s):
                s = _with_children(s, [tuple(self._rewrite(b, inner, expanded, rezero))
                                       for b in _children(s)])
            slot = _slot_of(s)
            if slot is None or slot.id not in expanded:
                out.append(s)
                continue
            out.extend(self._per_lane(s, region, *expanded[slot.id]))
        return out

    def _per_lane(self, s: ir.Stmt, region, wide: ir.Slot, count: int) -> list[ir.Stmt]:
        """An access to an expanded slot: the lane's entry in a loop over lanes; lane 0's
        (reads) or every lane's (writes) in collective code."""
        out: list[ir.Stmt] = []
        if isinstance(s, ir.Op) and s.opcode in (OpCode.LOCAL_ARRAY, OpCode.SLOT_ADDRESS):
            raise KernelError(f"'{s.attr[0].name}' is used by several lanes of a CPU block "
                              f"and cannot be passed as an array or by address here", s.loc)

        def position(into: list, lane: ir.Value, index: ir.Value | None) -> ir.Value:
            if count == 1:
                return lane
            n = self.const(into, count)
            base = self.op(into, OpCode.MUL, (lane, n), T.int32)
            return self.op(into, OpCode.ADD, (base, index), T.int32)

        index = s.args[0] if isinstance(s, ir.Op) and s.opcode == OpCode.LOCAL_LOAD else (
            s.index if isinstance(s, ir.LocalStore) else None)
        if isinstance(s, ir.Op):  # a read
            lane = self.const(out, 0) if region == _COLLECTIVE else self.lane_loops[region].var
            out.append(ir.Op(s.loc, s.result, OpCode.LOCAL_LOAD, (position(out, lane, index),),
                             wide))
            return out
        value = s.value
        if region != _COLLECTIVE:
            where = position(out, self.lane_loops[region].var, index)
            out.append(ir.LocalStore(s.loc, wide, where, value))
            return out
        k = self.value(T.int32)
        body: list[ir.Stmt] = []
        body.append(ir.LocalStore(s.loc, wide, position(body, k, index), value))
        zero, one = self.const(out, 0), self.const(out, 1)
        out.append(ir.For(s.loc, k, zero, self.const(out, self.lanes), one, tuple(body)))
        return out


class _LoopFlags:
    """`break` / `continue` of a collective loop asked for by per-lane code: recorded in
    uniform slots, acted on after the loop over lanes."""

    def __init__(self, split: _LaneSplit):
        self.split = split
        self.slots: dict[bool, ir.Slot] = {}
        self.prefix: list[ir.Stmt] = []

    def request(self, is_break: bool) -> list[ir.Stmt]:
        sp = self.split
        slot = self.slots.get(is_break)
        if slot is None:
            slot = self.slots[is_break] = sp.slot("lane_break" if is_break else "lane_continue",
                                                 T.bool_)
            sp.uniform.add(slot.id)
        out: list[ir.Stmt] = []
        true = sp.const(out, True, T.bool_)
        out.append(ir.StoreSlot(sp.loc, slot, true))
        return out

    def reset(self) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for slot in self.slots.values():
            false = self.split.const(out, False, T.bool_, collective=True)
            out.append(self.split.mark(ir.StoreSlot(self.split.loc, slot, false)))
        return out

    def apply(self) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for is_break, slot in self.slots.items():
            flag = self.split.op(out, OpCode.LOAD_SLOT, (), T.bool_, slot, True)
            leave = ir.Break(self.split.loc) if is_break else ir.Continue(self.split.loc)
            out.append(self.split.mark(ir.If(self.split.loc, flag, (leave,))))
        return out


def _with_children(s: ir.Stmt, bodies: list[ir.Block]) -> ir.Stmt:
    if isinstance(s, ir.If):
        return dataclasses.replace(s, then_body=bodies[0], else_body=bodies[1])
    if isinstance(s, ir.For):
        return dataclasses.replace(s, body=bodies[0])
    if isinstance(s, ir.While):
        return dataclasses.replace(s, cond_body=bodies[0], body=bodies[1])
    return s


def _zero(split: _LaneSplit, out: list, t: T.Type) -> ir.Value | None:
    """A zero of `t` built in `out`, or None for types without one here."""
    if isinstance(t, T.ScalarType):
        return split.const(out, False if t.is_bool else 0, t, collective=True)
    if isinstance(t, (T.VectorType, T.MatrixType)):
        part = split.const(out, 0, t.dtype, collective=True)
        return split.op(out, OpCode.BUILD, (part,) * t.count, t, collective=True)
    if isinstance(t, T.StructType):
        parts = [_zero(split, out, f) for _, f in t.fields]
        if any(p is None for p in parts):
            return None
        return split.op(out, OpCode.BUILD, parts, t, collective=True)
    return None
