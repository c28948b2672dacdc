"""The meaning of each scalar op, executable in Python.

Used to fold constants (front end and the constant-propagation pass) and as the reference
the backends are tested against: Warp's/C's rules, with integers wrapped to their width.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.ir.nodes import OpCode
from kernelc.types_bf16 import round_float32


def wrap(value: int, t: T.ScalarType) -> int:
    mask = (1 << t.bits) - 1
    value &= mask
    if t.kind == "int" and value >> (t.bits - 1):
        value -= 1 << t.bits
    return value


def to_type(value: Any, t: T.ScalarType) -> Any:
    """Conversion of a Python number to `t`: float -> int truncates toward zero and
    saturates at the type's range (NaN -> 0), as LLVM's fptosi.sat and PTX cvt.rzi.sat do."""
    if t.is_bool:
        return bool(value)
    if t.is_float:
        with np.errstate(over="ignore"):
            return float(_float_type(t)(value))
    if isinstance(value, float):
        if math.isnan(value):
            return 0
        lo, hi = int_range(t)
        if math.isinf(value):
            return hi if value > 0 else lo
        return min(max(math.trunc(value), lo), hi)
    return wrap(int(value), t)


def _float_type(t: T.ScalarType) -> Any:
    """Makes a NumPy number of float type `t` from a number: bfloat16, which NumPy lacks,
    is a float32 rounded to it (ints and float64 go through float32, as in kernels)."""
    if t == T.bfloat16:
        return lambda v: np.float32(round_float32(v))
    return t.np_dtype.type


def int_range(t: T.ScalarType) -> tuple[int, int]:
    if t.kind == "uint":
        return 0, (1 << t.bits) - 1
    return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1


def _int_div(a: int, b: int, t: T.ScalarType) -> int:
    if b == 0:
        return 0  # defined here instead of trapping; see docs/language.md
    q = abs(a) // abs(b)
    return wrap(q if (a >= 0) == (b >= 0) else -q, t)


def _int_floordiv(a: int, b: int, t: T.ScalarType) -> int:
    return 0 if b == 0 else wrap(a // b, t)


def _int_mod(a: int, b: int, t: T.ScalarType) -> int:
    if b == 0:
        return 0
    return wrap(a - b * _int_div(a, b, t), t)


def _float_mod(a: float, b: float) -> float:
    return math.fmod(a, b) if b != 0 and math.isfinite(a) else math.nan


def eval_binary(op: OpCode, a: Any, b: Any, t: T.ScalarType) -> Any:
    """`a op b` for operands of type `t`; the result for arithmetic ops has type `t`."""
    if t.is_float:
        # Each op rounds its result to `t` (bfloat16's are computed in float32 first).
        f = _float_type(t)
        with np.errstate(all="ignore"):
            x, y = f(a), f(b)
            result = {
                OpCode.ADD: lambda: x + y,
                OpCode.SUB: lambda: x - y,
                OpCode.MUL: lambda: x * y,
                OpCode.DIV: lambda: x / y,
                OpCode.FLOORDIV: lambda: np.floor(f(x / y)),
                OpCode.MOD: lambda: f(_float_mod(float(x), float(y))),
                OpCode.POW: lambda: f(np.power(x, y)),
            }[op]()
            return float(f(result))
    if op == OpCode.DIV:
        return _int_div(a, b, t)
    if op == OpCode.FLOORDIV:
        return _int_floordiv(a, b, t)
    if op == OpCode.MOD:
        return _int_mod(a, b, t)
    if op in (OpCode.SHL, OpCode.SHR):
        # As in C (and Warp): 8- and 16-bit operands are promoted to 32 bits, so their
        # counts run to 31; the count is taken modulo the (promoted) width.
        n = b & (max(t.bits, 32) - 1)
        return wrap(a << n if op == OpCode.SHL else a >> n, t)
    if op == OpCode.POW:
        return wrap(int(a) ** int(b), t) if b >= 0 else 0
    result = {
        OpCode.ADD: lambda: a + b,
        OpCode.SUB: lambda: a - b,
        OpCode.MUL: lambda: a * b,
        OpCode.BITAND: lambda: a & b,
        OpCode.BITOR: lambda: a | b,
        OpCode.BITXOR: lambda: a ^ b,
    }[op]()
    return bool(result) if t.is_bool else wrap(result, t)


def eval_compare(op: OpCode, a: Any, b: Any) -> bool:
    return {
        OpCode.EQ: a == b,
        OpCode.NE: a != b,  # true for NaN operands, as C's !=
        OpCode.LT: a < b,
        OpCode.LE: a <= b,
        OpCode.GT: a > b,
        OpCode.GE: a >= b,
    }[op]


def eval_unary(op: OpCode, a: Any, t: T.ScalarType) -> Any:
    if op == OpCode.NOT:
        return not a
    if op == OpCode.NEG:
        return float(-_float_type(t)(a)) if t.is_float else wrap(-a, t)
    if op == OpCode.INVERT:
        return wrap(~a, t)
    raise KeyError(op)
