"""Which integer values are never negative, from the ops that made them (a constant, the
thread index, a shape, and sums, products and quotients of those). Negative array indices
count from the end (`builtins/array_index.py`); this is what lets `a[i]` skip that test."""

from __future__ import annotations

from kernelc import types as T
from kernelc.ir import nodes as ir
from kernelc.ir.nodes import OpCode

# Ops whose result is non-negative when every argument is.
_CLOSED = frozenset({OpCode.ADD, OpCode.MUL, OpCode.DIV, OpCode.FLOORDIV, OpCode.BITOR})
# Ops whose result is non-negative when their first argument is.
_FIRST = frozenset({OpCode.MOD, OpCode.SHR})


def never_negative(defs: dict[int, ir.Op | ir.For], v: ir.Value, depth: int = 6) -> bool:
    """Whether `v` is never negative, from `defs` (value id -> the op that made it, or the
    `for` whose counter it is)."""
    t = v.type
    if isinstance(t, T.ScalarType) and (t.kind == "uint" or t.is_bool):
        return True
    op = defs.get(v.id)
    if op is None or depth == 0:
        return False
    if isinstance(op, ir.For):  # counting up from a non-negative start
        step = defs.get(op.step.id)
        return isinstance(step, ir.Op) and step.opcode == OpCode.CONST and step.attr > 0 \
            and never_negative(defs, op.start, depth - 1)
    if op.opcode == OpCode.CONST:
        return op.attr >= 0
    if op.opcode in (OpCode.TID, OpCode.ARRAY_SHAPE):
        return True
    if op.opcode == OpCode.CAST:
        src = op.args[0].type
        if not isinstance(src, T.ScalarType) or src.bits > t.bits or \
                (src.kind == "uint" and src.bits == t.bits):  # 2**31 and up turn negative
            return False
        return never_negative(defs, op.args[0], depth - 1)
    if op.opcode in _CLOSED:
        return all(never_negative(defs, a, depth - 1) for a in op.args)
    if op.opcode in _FIRST:
        return never_negative(defs, op.args[0], depth - 1)
    if op.opcode == OpCode.BITAND:
        return any(never_negative(defs, a, depth - 1) for a in op.args)
    return False
