"""More scalar builtins with Warp's names: the error function and its inverses, copysign,
bit counting, bitwise and logical not, nonzero and div_approx.

erf, erfc and copysign are primitives (the C math library on the CPU, CUDA's math
functions on the GPU). The inverses, which C lacks, are expansions: a first guess refined
by Halley steps on erf (or on erfc in the tails, where 1 - |y| is exact), computed in
float64 for every input type so that float32 results are correctly rounded and float64
results within an ulp or two, on both backends alike.
"""

from __future__ import annotations

import math

from kernelc import types as T
from kernelc.builtins.aggregate import comps, is_aggregate, map_comps, require
from kernelc.builtins.registry import (
    BUILTINS,
    Overload,
    check_float,
    check_int,
    check_numeric,
    register,
    same_rule,
)
from kernelc.builtins.scalar import _float_rule
from kernelc.ir.nodes import OpCode, Value

GROUP = "scalar math"

register("erf", GROUP, "The error function of x.", Overload(("x",), _float_rule(1), key="erf"))
register("erfc", GROUP, "The complementary error function of x, 1 - erf(x).",
         Overload(("x",), _float_rule(1), key="erfc"))
register("copysign", GROUP, "A value with the magnitude of x and the sign of y.",
         Overload(("x", "y"), _float_rule(2), key="copysign"))


# ---- erfinv / erfcinv ------------------------------------------------------------------------

F64 = T.float64
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
# M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): the first guess
# as a polynomial in w = -log((1 - a)(1 + a)), for w < 5 and for 5 <= w (in sqrt(w) - 3).
_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
            -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_OUTER = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
          -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
# Beyond w = 16 (1 - a < 6e-8, out of float32's reach) the guess is the asymptotic solution
# of erfc(x) = t, x^2 = -log(t) - log(x sqrt(pi)) + log(1 - 1 / (2 x^2)), iterated.
_TAIL_W = 16.0


class _Math:
    """Small float64 helpers over an emitter, so the formulas read as formulas."""

    def __init__(self, em):
        self.em = em

    def c(self, value: float) -> Value:
        return self.em.const(value, F64)

    def add(self, a: Value, b: Value) -> Value:
        return self.em.op(OpCode.ADD, (a, b), F64)

    def sub(self, a: Value, b: Value) -> Value:
        return self.em.op(OpCode.SUB, (a, b), F64)

    def mul(self, a: Value, b: Value) -> Value:
        return self.em.op(OpCode.MUL, (a, b), F64)

    def div(self, a: Value, b: Value) -> Value:
        return self.em.op(OpCode.DIV, (a, b), F64)

    def fn(self, name: str, *args: Value) -> Value:
        return self.em.call(name, args)

    def cmp(self, op: OpCode, a: Value, b: Value) -> Value:
        return self.em.op(op, (a, b), T.bool_)

    def pick(self, cond: Value, a: Value, b: Value) -> Value:
        return self.em.op(OpCode.SELECT, (cond, a, b), F64)

    def poly(self, coefficients: tuple[float, ...], x: Value) -> Value:
        acc = self.c(coefficients[0])
        for k in coefficients[1:]:
            acc = self.add(self.c(k), self.mul(acc, x))
        return acc


def _first_guess(m: _Math, a: Value, t: Value) -> Value:
    """x with erf(x) ~ a, given a and t = 1 - a (whichever of the two is exact)."""
    w = m.sub(m.c(0.0), m.fn("log", m.mul(t, m.add(m.c(1.0), a))))
    central = m.poly(_CENTRAL, m.sub(w, m.c(2.5)))
    outer = m.poly(_OUTER, m.sub(m.fn("sqrt", w), m.c(3.0)))
    giles = m.mul(m.pick(m.cmp(OpCode.LT, w, m.c(5.0)), central, outer), a)
    minus_log_t = m.sub(m.c(0.0), m.fn("log", t))
    x = m.fn("sqrt", minus_log_t)
    for _ in range(3):
        correction = m.fn("log", m.sub(m.c(1.0), m.div(m.c(0.5), m.mul(x, x))))
        spread = m.fn("log", m.mul(m.c(math.sqrt(math.pi)), x))
        x = m.fn("sqrt", m.add(m.sub(minus_log_t, spread), correction))
    return m.pick(m.cmp(OpCode.GT, w, m.c(_TAIL_W)), x, giles)


def _halley(m: _Math, x: Value, a: Value, t: Value) -> Value:
    """One Halley step for erf(x) = a: the residual from erf where a <= 0.5, else from
    erfc (t - erfc(x), exact in the tails). erf'' / erf' = -2x makes the step
    x - u / (1 + x u) with u = residual / erf'(x)."""
    e = m.fn("exp", m.sub(m.c(0.0), m.mul(x, x)))
    small = m.cmp(OpCode.LE, a, m.c(0.5))
    residual = m.pick(small, m.sub(m.fn("erf", x), a), m.sub(t, m.fn("erfc", x)))
    u = m.div(residual, m.mul(m.c(_TWO_OVER_SQRT_PI), e))
    stepped = m.sub(x, m.div(u, m.add(m.c(1.0), m.mul(x, u))))
    # exp(-x^2) underflows only past x ~ 26.5 (t below 1e-306): keep the guess there.
    return m.pick(m.cmp(OpCode.GT, e, m.c(0.0)), stepped, x)


def _inverse_core(m: _Math, a: Value, t: Value, steps: int) -> Value:
    """x >= 0 with erf(x) = a, i.e. erfc(x) = t; +inf where t == 0, NaN outside [0, 1]."""
    x = _first_guess(m, a, t)
    for _ in range(steps):
        x = _halley(m, x, a, t)
    return m.pick(m.cmp(OpCode.EQ, t, m.c(0.0)), m.c(math.inf), x)


def _in_f64(expand_f64):
    """Computes in float64 (one Halley step suffices below float64), then rounds back."""

    def expand(em, x: Value) -> Value:
        t = x.type
        steps = 2 if t.bits == 64 else 1
        wide = em.op(OpCode.CAST, (x,), F64) if t != F64 else x
        out = expand_f64(_Math(em), wide, steps)
        return em.op(OpCode.CAST, (out,), t) if t != F64 else out

    return expand


def _erfinv(m: _Math, y: Value, steps: int) -> Value:
    a = m.fn("fabs", y)
    t = m.sub(m.c(1.0), a)  # exact where it is used (a >= 0.5)
    return m.fn("copysign", _inverse_core(m, a, t, steps), y)


def _erfcinv(m: _Math, z: Value, steps: int) -> Value:
    # erfcinv(z) = -erfcinv(2 - z): fold z into (0, 1], where 2 - z is exact.
    low = m.cmp(OpCode.LE, z, m.c(1.0))
    t = m.pick(low, z, m.sub(m.c(2.0), z))
    a = m.sub(m.c(1.0), t)  # exact where it is used (t >= 0.5)
    x = _inverse_core(m, a, t, steps)
    return m.pick(low, x, m.sub(m.c(0.0), x))


register("erfinv", GROUP, "The inverse error function of x (x in [-1, 1]).",
         Overload(("x",), _float_rule(1), _in_f64(_erfinv)))
register("erfcinv", GROUP, "The inverse complementary error function of x (x in [0, 2]).",
         Overload(("x",), _float_rule(1), _in_f64(_erfcinv)))


# ---- integers and truth values ---------------------------------------------------------------

_UNSIGNED = {8: T.uint8, 16: T.uint16, 32: T.uint32, 64: T.uint64}


def _popcount_rule(types, weak):
    require(types[0] == T.uint64, f"expected a uint64, got {types[0]!r}")
    return (T.uint64,), T.int32


register("_popcount", "internal", "Set bits of a uint64 value.",
         Overload(("x",), _popcount_rule, key="popcount"), public=False)


def _bit_count(em, x: Value) -> Value:
    # Two's complement bits: reinterpret as unsigned of the same width, zero-extend.
    bits = em.op(OpCode.CAST, (x,), _UNSIGNED[x.type.bits]) if x.type.kind == "int" else x
    wide = em.op(OpCode.CAST, (bits,), T.uint64) if bits.type != T.uint64 else bits
    return em.call("_popcount", (wide,))


register("bit_count", GROUP,
         "The number of set bits of an integer (of its two's-complement bits for signed x).",
         Overload(("x",), same_rule(1, check_int, result=T.int32), _bit_count))


def _invert_rule(types, weak):
    (a,) = types
    if is_aggregate(a):
        require(a.dtype.is_int, f"expected integer components, got {a!r}")
        return (a,), a
    check_int(a)
    return (a,), a


def _invert(em, a: Value) -> Value:
    if is_aggregate(a.type):
        return map_comps(em, a.type, lambda c: em.op(OpCode.INVERT, (c,), c.type), comps(em, a))
    return em.op(OpCode.INVERT, (a,), a.type)


register("invert", "operators",
         "Bitwise complement ~a of an integer (component-wise for vectors and matrices).",
         Overload(("a",), _invert_rule, _invert))


def _unot_rule(types, weak):
    (a,) = types
    if isinstance(a, T.ArrayType):
        return (a,), T.bool_
    if not (isinstance(a, T.ScalarType) and (a.is_int or a.is_bool)):
        raise TypeError(f"expected a bool, an integer or an array, got {a!r}")
    return (a,), T.bool_


def _unot(em, a: Value) -> Value:
    if isinstance(a.type, T.ArrayType):  # an empty (or null) array is falsy
        empty = None
        for axis in range(a.type.ndim):
            n = em.op(OpCode.ARRAY_SHAPE, (a,), T.int32, axis)
            zero = em.op(OpCode.EQ, (n, em.const(0, T.int32)), T.bool_)
            empty = zero if empty is None else \
                em.op(OpCode.SELECT, (zero, em.const(True, T.bool_), empty), T.bool_)
        return empty
    if a.type == T.bool_:
        return em.op(OpCode.NOT, (a,), T.bool_)
    return em.op(OpCode.EQ, (a, em.const(0, a.type)), T.bool_)


register("unot", "operators",
         "Logical not: True if a is False, zero, or an empty (or null) array.",
         Overload(("a",), _unot_rule, _unot))


def _nonzero(em, x: Value) -> Value:
    is_zero = em.op(OpCode.EQ, (x, em.const(0, x.type)), T.bool_)
    return em.op(OpCode.SELECT, (is_zero, em.const(0, x.type), em.const(1, x.type)), x.type)


register("nonzero", GROUP, "1 if x is not zero, else 0 (in x's type).",
         Overload(("x",), same_rule(1, check_numeric), _nonzero))


# ---- div_approx: exact division on every backend -------------------------------------------


def _div_approx_rule(types, weak):
    params, result = BUILTINS["div"].overload_for(2).rule(types, weak)
    scalar = result.dtype if is_aggregate(result) else result
    check_float(scalar)
    return params, result


def _div_approx(em, a: Value, b: Value) -> Value:
    return em.call("div", (a, b))


register("div_approx", "operators",
         "a / b for floats, vectors, matrices and quaternions (by a scalar, or a scalar by "
         "each component). Warp may use a faster approximate division on GPUs; kernelc "
         "divides exactly everywhere.",
         Overload(("a", "b"), _div_approx_rule, _div_approx))
