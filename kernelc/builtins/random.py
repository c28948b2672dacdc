"""Random numbers: a PCG hash (Jarzynski & Olano, JCGT 2020) of a uint32 state.

Built from IR ops, so every backend produces the same stream; the streams match Warp's.
"""

from __future__ import annotations

from kernelc import types as T
from kernelc.builtins.registry import Expansion, Overload, fixed_rule, register
from kernelc.ir.nodes import OpCode

_U = T.uint32


def _u(em, v: int):
    return em.const(v, _U)


def pcg(em, state):
    """One step of the hash: uint32 -> uint32."""
    b = em.op(OpCode.ADD, (em.op(OpCode.MUL, (state, _u(em, 747796405)), _U), _u(em, 2891336453)), _U)
    shift = em.op(OpCode.ADD, (em.op(OpCode.SHR, (b, _u(em, 28)), _U), _u(em, 4)), _U)
    c = em.op(OpCode.BITXOR, (em.op(OpCode.SHR, (b, shift), _U), b), _U)
    c = em.op(OpCode.MUL, (c, _u(em, 277803737)), _U)
    return em.op(OpCode.BITXOR, (em.op(OpCode.SHR, (c, _u(em, 22)), _U), c), _U)


def _rand_init1(em, seed):
    return pcg(em, em.op(OpCode.CAST, (seed,), _U))


def _rand_init2(em, seed, offset):
    mixed = pcg(em, em.op(OpCode.CAST, (offset,), _U))
    return pcg(em, em.op(OpCode.ADD, (em.op(OpCode.CAST, (seed,), _U), mixed), _U))


register("rand_init", "random", "A random-number state from a seed (and an offset, e.g. tid()).",
         Overload(("seed",), fixed_rule((T.int32,), _U), _rand_init1),
         Overload(("seed", "offset"), fixed_rule((T.int32, T.int32), _U), _rand_init2))


def _unit_float(em, state):
    top = em.op(OpCode.CAST, (em.op(OpCode.SHR, (state, _u(em, 8)), _U),), T.float32)
    return em.op(OpCode.MUL, (top, em.const(1.0 / 16777216.0, T.float32)), T.float32)


def _randf1(em, state):
    s = pcg(em, state)
    return Expansion(_unit_float(em, s), {0: s})


def _randf3(em, state, lo, hi):
    s = pcg(em, state)
    span = em.op(OpCode.SUB, (hi, lo), T.float32)
    v = em.op(OpCode.ADD, (em.op(OpCode.MUL, (span, _unit_float(em, s)), T.float32), lo), T.float32)
    return Expansion(v, {0: s})


register("randf", "random", "A uniform float in [0, 1) (or [low, high)); advances state.",
         Overload(("state",), fixed_rule((_U,), T.float32), _randf1),
         Overload(("state", "low", "high"), fixed_rule((_U, T.float32, T.float32), T.float32), _randf3))


def _randi1(em, state):
    s = pcg(em, state)
    return Expansion(em.op(OpCode.CAST, (s,), T.int32), {0: s})


def _randi3(em, state, lo, hi):
    s = pcg(em, state)
    span = em.op(OpCode.CAST, (em.op(OpCode.SUB, (hi, lo), T.int32),), _U)
    r = em.op(OpCode.ADD, (em.op(OpCode.MOD, (s, span), _U), em.op(OpCode.CAST, (lo,), _U)), _U)
    return Expansion(em.op(OpCode.CAST, (r,), T.int32), {0: s})


register("randi", "random", "A random int32 (or one in [low, high)); advances state.",
         Overload(("state",), fixed_rule((_U,), T.int32), _randi1),
         Overload(("state", "low", "high"), fixed_rule((_U, T.int32, T.int32), T.int32), _randi3))


def _randu1(em, state):
    s = pcg(em, state)
    return Expansion(s, {0: s})


def _randu3(em, state, lo, hi):
    s = pcg(em, state)
    r = em.op(OpCode.ADD, (em.op(OpCode.MOD, (s, em.op(OpCode.SUB, (hi, lo), _U)), _U), lo), _U)
    return Expansion(r, {0: s})


register("randu", "random", "A random uint32 (or one in [low, high)); advances state.",
         Overload(("state",), fixed_rule((_U,), _U), _randu1),
         Overload(("state", "low", "high"), fixed_rule((_U, _U, _U), _U), _randu3))

_RANDN_EPSILON = 5.96e-8
_TWO_PI = 6.283185307179586


def _randn(em, state):
    f = T.float32
    s1 = pcg(em, state)
    u1 = em.op(OpCode.ADD, (_unit_float(em, s1), em.const(_RANDN_EPSILON, f)), f)
    s2 = pcg(em, s1)
    u2 = _unit_float(em, s2)
    radius = em.call("sqrt", (em.op(OpCode.MUL, (em.const(-2.0, f), em.call("log", (u1,))), f),))
    angle = em.op(OpCode.MUL, (em.const(_TWO_PI, f), u2), f)
    return Expansion(em.op(OpCode.MUL, (radius, em.call("cos", (angle,))), f), {0: s2})


register("randn", "random", "A standard normal float (Box-Muller); advances state.",
         Overload(("state",), fixed_rule((_U,), T.float32), _randn))
