"""Negative array indices count from the end of their dimension, as in Warp (`a[-1]` is the
last element, `a[i - 1]` at `i == 0` wraps round). Every load, store, atomic and view of a
plain array takes its indices through `wrapped`; indexed arrays do the same in
`indexed_array.py`.

Every index gets `i < 0 ? i + n : i` here; constant propagation removes the test again
where the index is never negative (`ir/signs.py`: a constant, the thread index, a `range`
counter from zero, sums and products of those), once slot forwarding has shown what an
index is. So `i = kc.tid()` then `a[i]` keeps the affine form the CPU backend turns into
vector loads and stores.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernelc import types as T
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode


def wrapped(em, arr: ir.Value, indices: Sequence[ir.Value], first_axis: int = 0
            ) -> tuple[ir.Value, ...]:
    """`indices` (for axes `first_axis`, ... of plain array `arr`) with negative ones
    counted from the end of their axis."""
    out = []
    for axis, i in enumerate(indices, first_axis):
        size = em.cast(em.op(OpCode.ARRAY_SHAPE, (arr,), T.int32, axis), i.type)
        from_end = em.op(OpCode.ADD, (i, size), i.type)
        negative = em.op(OpCode.LT, (i, em.const(0, i.type)), T.bool_)
        out.append(em.op(OpCode.SELECT, (negative, from_end, i), i.type))
    return tuple(out)
