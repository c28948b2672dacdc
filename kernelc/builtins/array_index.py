"""Negative array indices count from the end of their dimension, as in Warp (`a[-1]` is the
last element, `a[i - 1]` at `i == 0` wraps round). Every load, store, atomic and view of a
plain array takes its indices through `wrapped`; indexed arrays do the same in
`indexed_array.py`.

An index that is plainly never negative (a constant, the thread index, a shape, sums and
products of those) is left alone, so the common `a[i]` keeps its affine form for the CPU
backend's vector loads and stores. Any other index gets `i < 0 ? i + n : i`; constant
propagation drops the test again once slot forwarding shows the index is one of those
(`i = kc.tid()` then `a[i]`, a `range` counter from zero).
"""

from __future__ import annotations

from collections.abc import Sequence

from kernelc import types as T
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode
from kernelc.ir.signs import never_negative


def wrapped(em, arr: ir.Value, indices: Sequence[ir.Value], first_axis: int = 0
            ) -> tuple[ir.Value, ...]:
    """`indices` (for axes `first_axis`, ... of plain array `arr`) with negative ones
    counted from the end of their axis."""
    defs = getattr(em, "defs", {})
    out = []
    for axis, i in enumerate(indices, first_axis):
        if never_negative(defs, i):
            out.append(i)
            continue
        size = em.cast(em.op(OpCode.ARRAY_SHAPE, (arr,), T.int32, axis), i.type)
        from_end = em.op(OpCode.ADD, (i, size), i.type)
        op = defs.get(i.id)
        if op is not None and op.opcode == OpCode.CONST:  # a negative constant
            out.append(from_end)
            continue
        negative = em.op(OpCode.LT, (i, em.const(0, i.type)), T.bool_)
        out.append(em.op(OpCode.SELECT, (negative, from_end, i), i.type))
    return tuple(out)
