"""Early exits (`return`, `break`, `continue`) rewritten as flags and guarded regions.

The reverse sweep walks a function's statements backwards, which only works when every
region runs to its end. This pass rewrites an early exit into a store to a boolean flag
and wraps the statements after it in `if not flag`. What is left of the exits: each loop
that had one ends its body with `if flag: break` (a *tail break*), and a func with an
early return has a single `return` at the end of its body. A loop body starts by clearing
its own flags, so no flag carries a value from one iteration into the next.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelc import types as T
from kernelc.ir import nodes as ir


def max_id(fn: ir.Function) -> int:
    """The largest value or slot id used in `fn`."""
    best = max([p.id for p in fn.params] + [s.id for s in fn.slots] + [0])
    for stmt in ir.walk(fn.body):
        if isinstance(stmt, ir.Op) and stmt.result is not None:
            best = max(best, stmt.result.id)
        elif isinstance(stmt, ir.For):
            best = max(best, stmt.var.id)
    return best


def is_tail_break(stmt: ir.Stmt) -> bool:
    return isinstance(stmt, ir.If) and stmt.then_body == (ir.Break(stmt.loc),) \
        and not stmt.else_body


def _has(block: ir.Block, kinds: tuple[type, ...], into_loops: bool) -> bool:
    for stmt in block:
        if isinstance(stmt, kinds):
            return True
        if isinstance(stmt, ir.If) and (_has(stmt.then_body, kinds, into_loops)
                                        or _has(stmt.else_body, kinds, into_loops)):
            return True
        if into_loops and isinstance(stmt, ir.For) and _has(stmt.body, kinds, True):
            return True
        if into_loops and isinstance(stmt, ir.While) and _has(stmt.body, kinds, True):
            return True
    return False


@dataclass
class _Loop:
    brk: ir.Slot | None
    cont: ir.Slot | None


class _Lowering:
    def __init__(self, fn: ir.Function):
        self.fn = fn
        self.next_id = max_id(fn)
        self.slots = list(fn.slots)
        self.ret_flag: ir.Slot | None = None
        self.ret_slots: list[ir.Slot] = []

    def new_slot(self, name: str, type: T.Type) -> ir.Slot:
        self.next_id += 1
        slot = ir.Slot(self.next_id, name, type)
        self.slots.append(slot)
        return slot

    def new_value(self, type: T.Type) -> ir.Value:
        self.next_id += 1
        return ir.Value(self.next_id, type)

    def store_const(self, loc, slot: ir.Slot, value: bool) -> list[ir.Stmt]:
        v = self.new_value(T.bool_)
        return [ir.Op(loc, v, ir.OpCode.CONST, (), value), ir.StoreSlot(loc, slot, v)]

    def run(self) -> ir.Function:
        fn = self.fn
        returns = [s for s in ir.walk(fn.body) if isinstance(s, ir.Return)]
        simple_return = not fn.is_kernel and len(returns) == 1 and fn.body \
            and fn.body[-1] is returns[0]
        if not returns or simple_return:
            if not _has(fn.body, (ir.Break, ir.Continue), True):
                return fn
        if returns and not simple_return:
            self.ret_flag = self.new_slot("returned", T.bool_)
            self.ret_slots = [self.new_slot(f"result{i}", t)
                              for i, t in enumerate(fn.return_types)]
        body = self.block(fn.body[:-1] if simple_return else fn.body, None)
        if self.ret_flag is not None:
            body = self.store_const(fn.loc, self.ret_flag, False) + body
            if not fn.is_kernel:
                loads = []
                for s in self.ret_slots:
                    v = self.new_value(s.type)
                    loads.append(ir.Op(fn.loc, v, ir.OpCode.LOAD_SLOT, (), s))
                body += loads + [ir.Return(fn.loc, tuple(op.result for op in loads))]
        elif simple_return:
            body.append(fn.body[-1])
        return ir.Function(fn.name, fn.params, fn.param_names, fn.return_types, tuple(body),
                           tuple(self.slots), fn.is_kernel, fn.loc, fn.lanes)

    def block(self, stmts: ir.Block, loop: _Loop | None) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for k, stmt in enumerate(stmts):
            if isinstance(stmt, ir.Return):
                for slot, v in zip(self.ret_slots, stmt.values):
                    out.append(ir.StoreSlot(stmt.loc, slot, v))
                out += self.store_const(stmt.loc, self.ret_flag, True)
                return out  # what follows in this block cannot run
            if isinstance(stmt, ir.Break):
                return out + self.store_const(stmt.loc, loop.brk, True)
            if isinstance(stmt, ir.Continue):
                return out + self.store_const(stmt.loc, loop.cont, True)
            if isinstance(stmt, ir.If):
                out.append(ir.If(stmt.loc, stmt.cond, tuple(self.block(stmt.then_body, loop)),
                                 tuple(self.block(stmt.else_body, loop))))
            elif isinstance(stmt, (ir.For, ir.While)):
                out += self.loop(stmt)
            else:
                out.append(stmt)
            flags = self.exit_flags(stmt, loop)
            rest = stmts[k + 1:]
            if flags and rest:
                guarded = self.block(rest, loop)
                if guarded:
                    out += self.unless(stmt.loc, flags, guarded)
                return out
        return out

    def exit_flags(self, stmt: ir.Stmt, loop: _Loop | None) -> list[ir.Slot]:
        """The flags that may be set when `stmt` finishes (then what follows must not run)."""
        flags = []
        if self.ret_flag is not None and _has((stmt,), (ir.Return,), True):
            flags.append(self.ret_flag)
        if loop is not None and isinstance(stmt, ir.If):
            if loop.brk is not None and _has((stmt,), (ir.Break,), False):
                flags.append(loop.brk)
            if loop.cont is not None and _has((stmt,), (ir.Continue,), False):
                flags.append(loop.cont)
        return flags

    def unless(self, loc, flags: list[ir.Slot], body: list[ir.Stmt]) -> list[ir.Stmt]:
        """`if not (flag or ...): body`, as nested ifs with empty then-branches."""
        stmts = list(body)
        for flag in reversed(flags):
            v = self.new_value(T.bool_)
            stmts = [ir.Op(loc, v, ir.OpCode.LOAD_SLOT, (), flag), ir.If(loc, v, (), tuple(stmts))]
        return stmts

    def loop(self, stmt: ir.For | ir.While) -> list[ir.Stmt]:
        brk = self.new_slot("broke", T.bool_) if _has(stmt.body, (ir.Break,), False) else None
        cont = self.new_slot("continued", T.bool_) \
            if _has(stmt.body, (ir.Continue,), False) else None
        returns = self.ret_flag is not None and _has(stmt.body, (ir.Return,), True)
        ctx = _Loop(brk, cont)
        body: list[ir.Stmt] = []
        for flag in (brk, cont):
            if flag is not None:
                body += self.store_const(stmt.loc, flag, False)
        body += self.block(stmt.body, ctx)
        leave = [f for f in (brk, self.ret_flag if returns else None) if f is not None]
        if leave:
            # One tail break per flag that leaves the loop.
            for flag in leave:
                v = self.new_value(T.bool_)
                body += [ir.Op(stmt.loc, v, ir.OpCode.LOAD_SLOT, (), flag),
                         ir.If(stmt.loc, v, (ir.Break(stmt.loc),))]
        if isinstance(stmt, ir.For):
            return [ir.For(stmt.loc, stmt.var, stmt.start, stmt.stop, stmt.step, tuple(body))]
        return [ir.While(stmt.loc, stmt.cond_body, stmt.cond, tuple(body))]


def lower_exits(fn: ir.Function) -> ir.Function:
    """`fn` with its early exits rewritten as flags (see the module's docstring)."""
    return _Lowering(fn).run()
