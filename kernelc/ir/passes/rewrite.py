"""Rebuilding blocks statement by statement (IR nodes are immutable)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from kernelc.ir import nodes as ir


def map_block(block: ir.Block, fn: Callable[[ir.Stmt], ir.Stmt | None]) -> ir.Block:
    """Applies `fn` to every statement, innermost regions first; None drops a statement."""
    out = []
    for s in block:
        s = map_regions(s, lambda b: map_block(b, fn))
        s = fn(s)
        if s is not None:
            out.append(s)
    return tuple(out)


def map_regions(s: ir.Stmt, fn: Callable[[ir.Block], ir.Block]) -> ir.Stmt:
    if isinstance(s, ir.If):
        return dataclasses.replace(s, then_body=fn(s.then_body), else_body=fn(s.else_body))
    if isinstance(s, ir.For):
        return dataclasses.replace(s, body=fn(s.body))
    if isinstance(s, ir.While):
        return dataclasses.replace(s, cond_body=fn(s.cond_body), body=fn(s.body))
    return s


def operands(s: ir.Stmt) -> tuple[ir.Value, ...]:
    """The values a statement reads (not those of its nested regions)."""
    if isinstance(s, ir.Op):
        return s.args
    if isinstance(s, (ir.StoreSlot,)):
        return (s.value,)
    if isinstance(s, ir.LocalStore):
        return (s.index, s.value)
    if isinstance(s, ir.ArrayStore):
        return (s.array, *s.indices, s.value)
    if isinstance(s, ir.If):
        return (s.cond,)
    if isinstance(s, ir.For):
        return (s.start, s.stop, s.step)
    if isinstance(s, ir.While):
        return (s.cond,)
    if isinstance(s, (ir.Return, ir.Print)):
        return s.values if isinstance(s, ir.Return) else s.args
    if isinstance(s, ir.Assert):
        return (s.cond,)
    return ()


def substitute(s: ir.Stmt, subst: dict[ir.Value, ir.Value]) -> ir.Stmt:
    """`s` with its operands replaced through `subst`."""
    def r(v):
        return subst.get(v, v)

    if isinstance(s, ir.Op):
        return dataclasses.replace(s, args=tuple(r(a) for a in s.args)) if s.args else s
    if isinstance(s, ir.StoreSlot):
        return dataclasses.replace(s, value=r(s.value))
    if isinstance(s, ir.LocalStore):
        return dataclasses.replace(s, index=r(s.index), value=r(s.value))
    if isinstance(s, ir.ArrayStore):
        return dataclasses.replace(s, array=r(s.array), indices=tuple(map(r, s.indices)),
                                   value=r(s.value))
    if isinstance(s, (ir.If, ir.While, ir.Assert)):
        return dataclasses.replace(s, cond=r(s.cond))
    if isinstance(s, ir.For):
        return dataclasses.replace(s, start=r(s.start), stop=r(s.stop), step=r(s.step))
    if isinstance(s, ir.Return):
        return dataclasses.replace(s, values=tuple(map(r, s.values)))
    if isinstance(s, ir.Print):
        return dataclasses.replace(s, args=tuple(map(r, s.args)))
    return s


def with_body(fn: ir.Function, body: ir.Block) -> ir.Function:
    return dataclasses.replace(fn, body=body)
