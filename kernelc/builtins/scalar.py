"""Scalar math builtins (Warp's names and argument orders)."""

from __future__ import annotations

import math

from kernelc import types as T
from kernelc.builtins.registry import (
    Overload,
    check_float,
    check_int,
    check_numeric,
    register,
    same_rule,
    unify,
)
from kernelc.ir.nodes import TIES_TO_OTHER, OpCode


def _float_rule(n: int):
    def rule(types, weak):
        t = unify(types, weak)
        if all(weak) and isinstance(t, T.ScalarType) and t.is_int:
            t = T.float32  # sqrt(2): literals only, so use the default float type
        check_float(t)
        return (t,) * n, t

    return rule


_FLOAT_UNARY = {
    "sqrt": "Square root of x.",
    "cbrt": "Cube root of x.",
    "exp": "e raised to the power x.",
    "log": "Natural logarithm of x.",
    "log2": "Base-2 logarithm of x.",
    "log10": "Base-10 logarithm of x.",
    "sin": "Sine of x (radians).",
    "cos": "Cosine of x (radians).",
    "tan": "Tangent of x (radians).",
    "atan": "Inverse tangent of x, in radians.",
    "sinh": "Hyperbolic sine of x.",
    "cosh": "Hyperbolic cosine of x.",
    "tanh": "Hyperbolic tangent of x.",
    "floor": "Largest integral value not greater than x.",
    "ceil": "Smallest integral value not less than x.",
    "round": "x rounded to the nearest integral value, halfway cases away from zero.",
    "rint": "x rounded to the nearest integral value, halfway cases to even.",
    "trunc": "x rounded towards zero.",
    "frac": "The fractional part of x, x - trunc(x).",
}
for _name, _doc in _FLOAT_UNARY.items():
    register(_name, "scalar math", _doc, Overload(("x",), _float_rule(1), key=_name))

# asin and acos: the C functions after clamping x to [-1, 1] (see `_unit_clamped`).
for _name in ("asin", "acos"):
    register(f"_{_name}", "internal", f"C's {_name} of x.",
             Overload(("x",), _float_rule(1), key=_name), public=False)

register("atan2", "scalar math", "Angle of the point (x, y) as atan(y / x), quadrant-aware.",
         Overload(("y", "x"), _float_rule(2), key="atan2"))


def _pow(em, x, y):
    return em.op(OpCode.POW, (x, y), x.type)


register("pow", "scalar math", "x raised to the power y.", Overload(("x", "y"), _float_rule(2), _pow))


def _abs(em, x):
    if x.type.kind == "uint":
        return x
    if x.type.is_float:
        return em.call("fabs", (x,))
    neg = em.op(OpCode.NEG, (x,), x.type)
    is_neg = em.op(OpCode.LT, (x, em.const(0, x.type)), T.bool_)
    return em.op(OpCode.SELECT, (is_neg, neg, x), x.type)


register("abs", "scalar math", "Absolute value of x.",
         Overload(("x",), same_rule(1, check_numeric), _abs))
register("fabs", "scalar math", "Absolute value of a float x.",
         Overload(("x",), _float_rule(1), key="fabs"))


def _sign(em, x):
    # Warp: -1 for negative x, 1 otherwise (zero included).
    is_neg = em.op(OpCode.LT, (x, em.const(0, x.type)), T.bool_)
    return em.op(OpCode.SELECT, (is_neg, em.const(-1, x.type), em.const(1, x.type)), x.type)


register("sign", "scalar math", "-1 if x < 0, else 1.",
         Overload(("x",), same_rule(1, check_numeric), _sign))


def _min_max(order: OpCode):
    """Warp's float min/max ignore a NaN operand (C's fmin/fmax) and return `a` on ties:
    `a <= b ? a : (b == b ? b : a)`; integers use `a < b ? a : b`. The outer select is
    marked `TIES_TO_OTHER`: Warp's `adj_min` / `adj_max` give the gradient of a tie to `b`,
    and the autodiff rule of a marked select does the same."""

    def expand(em, a, b):
        if not a.type.is_float:
            strict = OpCode.LT if order == OpCode.LE else OpCode.GT
            return em.op(OpCode.SELECT, (em.op(strict, (a, b), T.bool_), a, b), a.type)
        b_is_number = em.op(OpCode.EQ, (b, b), T.bool_)
        other = em.op(OpCode.SELECT, (b_is_number, b, a), a.type)
        return em.op(OpCode.SELECT, (em.op(order, (a, b), T.bool_), a, other), a.type,
                     TIES_TO_OTHER)

    return expand


_min = _min_max(OpCode.LE)
_max = _min_max(OpCode.GE)


register("min", "scalar math", "The smaller of a and b.",
         Overload(("a", "b"), same_rule(2, check_numeric), _min))
register("max", "scalar math", "The larger of a and b.",
         Overload(("a", "b"), same_rule(2, check_numeric), _max))


def _clamp(em, x, lo, hi):
    return _min(em, _max(em, lo, x), hi)


register("clamp", "scalar math", "x limited to the range [a, b].",
         Overload(("x", "a", "b"), same_rule(3, check_numeric), _clamp))


def _unit_clamped(name: str):
    """Warp clamps the argument of asin and acos to [-1, 1] first, as min(max(x, -1), 1):
    just outside the range gives +-pi/2 (0, pi), and NaN gives asin(-1) (acos(-1))."""

    def expand(em, x):
        unit = _min(em, _max(em, x, em.const(-1.0, x.type)), em.const(1.0, x.type))
        return em.call(f"_{name}", (unit,))

    return expand


register("asin", "scalar math", "Inverse sine of x clamped to [-1, 1], in radians.",
         Overload(("x",), _float_rule(1), _unit_clamped("asin")))
register("acos", "scalar math", "Inverse cosine of x clamped to [-1, 1], in radians.",
         Overload(("x",), _float_rule(1), _unit_clamped("acos")))


def _lerp(em, a, b, t):
    one = em.const(1.0, t.type)
    wa = em.op(OpCode.MUL, (a, em.op(OpCode.SUB, (one, t), t.type)), a.type)
    return em.op(OpCode.ADD, (wa, em.op(OpCode.MUL, (b, t), a.type)), a.type)


register("lerp", "scalar math", "Linear interpolation a * (1 - t) + b * t.",
         Overload(("a", "b", "t"), _float_rule(3), _lerp))


def _smoothstep(em, e0, e1, x):
    t = x.type
    u = em.op(OpCode.DIV, (em.op(OpCode.SUB, (x, e0), t), em.op(OpCode.SUB, (e1, e0), t)), t)
    u = _clamp(em, u, em.const(0.0, t), em.const(1.0, t))
    poly = em.op(OpCode.SUB, (em.const(3.0, t), em.op(OpCode.MUL, (em.const(2.0, t), u), t)), t)
    return em.op(OpCode.MUL, (em.op(OpCode.MUL, (u, u), t), poly), t)


register("smoothstep", "scalar math",
         "Hermite interpolation between 0 and 1 as x goes from edge0 to edge1.",
         Overload(("edge0", "edge1", "x"), _float_rule(3), _smoothstep))


def _step(em, x):
    is_neg = em.op(OpCode.LT, (x, em.const(0.0, x.type)), T.bool_)
    return em.op(OpCode.SELECT, (is_neg, em.const(1.0, x.type), em.const(0.0, x.type)), x.type)


register("step", "scalar math", "1 if x < 0, else 0 (in x's type, as in Warp).",
         Overload(("x",), same_rule(1, check_numeric), _step))


# Warp's conversion factors are double constants: float16 and float32 arguments are
# multiplied in double and the product rounded back (through float32 for float16);
# bfloat16 ones are multiplied in float32 by the factor rounded to float32 (Warp's
# bfloat16-times-double product).
_RAD_TO_DEG = float("57.29577951308232087679")
_DEG_TO_RAD = float("0.01745329251994329577")


def _scaled_in_double(factor: float):
    def expand(em, x):
        w = T.float32 if x.type == T.bfloat16 else T.float64
        wide = x if x.type == w else em.op(OpCode.CAST, (x,), w)
        out = em.op(OpCode.MUL, (wide, em.const(factor, w)), w)
        return out if x.type == w else em.op(OpCode.CAST, (out,), x.type)

    return expand


_degrees = _scaled_in_double(_RAD_TO_DEG)
_radians = _scaled_in_double(_DEG_TO_RAD)


register("degrees", "scalar math", "x converted from radians to degrees.",
         Overload(("x",), _float_rule(1), _degrees))
register("radians", "scalar math", "x converted from degrees to radians.",
         Overload(("x",), _float_rule(1), _radians))


def _isnan(em, x):
    return em.op(OpCode.NE, (x, x), T.bool_)


def _isinf(em, x):
    return em.op(OpCode.EQ, (em.call("fabs", (x,)), em.const(math.inf, x.type)), T.bool_)


def _isfinite(em, x):
    return em.op(OpCode.LT, (em.call("fabs", (x,)), em.const(math.inf, x.type)), T.bool_)


for _name, _fn, _doc in (
    ("isnan", _isnan, "True if x is NaN (a vector, matrix or quaternion: any component)."),
    ("isinf", _isinf, "True if x is positive or negative infinity (an aggregate: any "
     "component)."),
    ("isfinite", _isfinite, "True if x is neither infinite nor NaN (an aggregate: every "
     "component)."),
):
    register(_name, "scalar math", _doc,
             Overload(("x",), same_rule(1, check_float, result=T.bool_), _fn))


def _binary(opcode, check, name, doc):
    def expand(em, a, b):
        return em.op(opcode, (a, b), a.type)

    register(name, "operators", doc, Overload(("a", "b"), same_rule(2, check), expand))


_binary(OpCode.ADD, check_numeric, "add", "a + b.")
_binary(OpCode.SUB, check_numeric, "sub", "a - b.")
_binary(OpCode.MUL, check_numeric, "mul", "a * b.")
_binary(OpCode.DIV, check_numeric, "div", "a / b (truncating for integers).")
_binary(OpCode.FLOORDIV, check_numeric, "floordiv", "a // b, rounding towards negative infinity.")
_binary(OpCode.MOD, check_numeric, "mod", "Remainder of a / b with the sign of a (C's %).")
_binary(OpCode.BITAND, check_int, "bit_and", "Bitwise a & b.")
_binary(OpCode.BITOR, check_int, "bit_or", "Bitwise a | b.")
_binary(OpCode.BITXOR, check_int, "bit_xor", "Bitwise a ^ b.")
_binary(OpCode.SHL, check_int, "lshift", "a << b (8- and 16-bit operands promoted to 32 bits, as in C).")
_binary(OpCode.SHR, check_int, "rshift", "a >> b (arithmetic for signed types).")


def _neg(em, x):
    # Warp's scalar negation is 0 - x: -(+0.0) and -(-0.0) are both +0.0.
    if x.type.is_float:
        return em.op(OpCode.SUB, (em.const(0.0, x.type), x), x.type)
    return em.op(OpCode.NEG, (x,), x.type)


register("neg", "operators", "-x.", Overload(("x",), same_rule(1, check_numeric), _neg))


def _where_rule(types, weak):
    if types[0] != T.bool_ and not (isinstance(types[0], T.ScalarType)):
        raise TypeError(f"the condition must be a bool or a scalar, got {types[0]!r}")
    t = unify(types[1:], weak[1:])
    return (types[0], t, t), t


def _where(em, cond, a, b):
    return em.op(OpCode.SELECT, (_truth(em, cond), a, b), a.type)


def _select(em, cond, if_false, if_true):
    return em.op(OpCode.SELECT, (_truth(em, cond), if_true, if_false), if_true.type)


def _truth(em, v):
    if v.type == T.bool_:
        return v
    return em.op(OpCode.NE, (v, em.const(0, v.type)), T.bool_)


def _fma_rule(types, weak):
    t = unify(types, weak)
    if not (isinstance(t, T.ScalarType) and t.is_float and t.bits >= 32):
        raise TypeError(f"expected float32 or float64, got {t!r}")
    return (t, t, t), t


register("_fma", "internal", "a * b + c rounded once (C's fma).",
         Overload(("a", "b", "c"), _fma_rule, key="fma"), public=False)


register("where", "utility", "a if cond is true, else b (both are evaluated).",
         Overload(("cond", "a", "b"), _where_rule, _where))
register("select", "utility", "Warp's older form: value_if_false if cond is false, else value_if_true.",
         Overload(("cond", "value_if_false", "value_if_true"), _where_rule, _select))
