"""Quaternion conversions (Warp's names and parameter names): roll-pitch-yaw and Euler
angles, axis-angle, swing-twist, and the `quaternion(...)` / `transformation(...)`
constructor builtins.

Axis indices of the Euler builtins are ordinary int arguments, so they may vary at run
time: components and axes are picked with selects, which constant propagation folds away
when the indices are literals.
"""

from __future__ import annotations

import math

from kernelc import types as T
from kernelc.builtins.aggregate import binop, build, comps, dot_values, require
from kernelc.builtins.quat import (
    GROUP,
    _is,
    _scalar_dtype,
    args_rule,
    neg,
    quat_mul_values,
    scale,
    select,
)
from kernelc.builtins.registry import Expansion, Overload, Signature, register
from kernelc.ir.nodes import OpCode, Value
from kernelc.types_vec import quaternion, transformation, vector


def _mul(em, a: Value, b: Value) -> Value:
    return binop(em, OpCode.MUL, a, b)


def _add(em, a: Value, b: Value) -> Value:
    return binop(em, OpCode.ADD, a, b)


def _sub(em, a: Value, b: Value) -> Value:
    return binop(em, OpCode.SUB, a, b)


def _is_index(em, index: Value, k: int) -> Value:
    return em.op(OpCode.EQ, (index, em.const(k, T.int32)), T.bool_)


def _pick(em, values: list[Value], index: Value) -> Value:
    """values[index] for a run-time index in 0..2 (anything else reads the last one)."""
    out = values[2]
    for k in (1, 0):
        out = em.op(OpCode.SELECT, (_is_index(em, index, k), values[k], out), out.type)
    return out


# ---- roll, pitch, yaw and Euler angles ---------------------------------------------------------


def _quat_rpy(em, roll: Value, pitch: Value, yaw: Value) -> Value:
    """The product qz(yaw) qy(pitch) qx(roll), written out on the half-angle sines/cosines."""
    t = roll.type
    half = em.const(0.5, t)
    (cr, sr), (cp, sp), (cy, sy) = (
        (em.call("cos", (_mul(em, a, half),)), em.call("sin", (_mul(em, a, half),)))
        for a in (roll, pitch, yaw)
    )

    def term(a, b, c, d, e, f, op):
        return binop(em, op, _mul(em, _mul(em, a, b), c), _mul(em, _mul(em, d, e), f))

    x = term(cy, sr, cp, sy, cr, sp, OpCode.SUB)
    y = term(cy, cr, sp, sy, sr, cp, OpCode.ADD)
    z = term(sy, cr, cp, cy, sr, sp, OpCode.SUB)
    w = term(cy, cr, cp, sy, sr, sp, OpCode.ADD)
    return build(em, quaternion(t), [x, y, z, w])


register("quat_rpy", GROUP,
         "The rotation by `roll`, then `pitch`, then `yaw` radians about the fixed x, y and z "
         "axes (extrinsic x-y-z): qz * qy * qx.",
         Overload(("roll", "pitch", "yaw"), args_rule("scalar", "scalar", "scalar",
                                                     result="quat"), _quat_rpy))


def _axis_quat(em, angle: Value, axis: Value) -> list[Value]:
    """The rotation by `angle` about coordinate axis `axis` (0, 1 or 2) as components."""
    t = angle.type
    half = _mul(em, em.const(0.5, t), angle)
    s, c = em.call("sin", (half,)), em.call("cos", (half,))
    zero = em.const(0.0, t)
    return [em.op(OpCode.SELECT, (_is_index(em, axis, k), s, zero), t) for k in range(2)] + [
        em.op(OpCode.SELECT, (em.op(OpCode.BITOR, (_is_index(em, axis, 0), _is_index(
            em, axis, 1)), T.bool_), zero, s), t), c]


def _quat_from_euler(em, e: Value, i: Value, j: Value, k: Value) -> Value:
    angles = comps(em, e)
    qi, qj, qk = (_axis_quat(em, _pick(em, angles, n), n) for n in (i, j, k))
    return build(em, quaternion(e.type.dtype), quat_mul_values(em, qk, quat_mul_values(em, qj, qi)))


register("quat_from_euler", GROUP,
         "The rotation by the Euler angles `e` (indexed by axis: e[0] about x) about the fixed "
         "axes `i`, `j`, `k` (0, 1, 2 for x, y, z) in that order: qk * qj * qi.",
         Overload(("e", "i", "j", "k"), args_rule("vec3", "int", "int", "int", result="quat"),
                  _quat_from_euler))


def _euler_terms(em, q: list[Value], i: Value, j: Value, k: Value, proper: Value, sign: Value):
    """The four terms (a, b, c, d) of the direct method of Bernardes & Viollet (2022), whose
    angles are atan2(b, a) +- atan2(d, c) and the acos of their magnitude ratio."""
    x, w = q[:3], q[3]
    qi, qj = _pick(em, x, i), _pick(em, x, j)
    qk = _mul(em, _pick(em, x, k), sign)
    # Tait-Bryan sequences (i != k) reduce to the proper case through these combinations.
    tait = [_sub(em, w, qj), _add(em, qi, qk), _add(em, qj, w), _sub(em, qk, qi)]
    return select(em, proper, [w, qi, qj, qk], tait)


def _quat_to_euler(em, quat: Value, i: Value, j: Value, k: Value) -> Value:
    t = quat.type.dtype
    q = comps(em, quat)
    proper = em.op(OpCode.EQ, (i, k), T.bool_)
    three = em.const(3, T.int32)
    # Proper Euler sequences (i == k) store their third angle in the remaining slot.
    k = em.op(OpCode.SELECT, (proper, _sub(em, _sub(em, three, i), j), k), T.int32)
    # The Levi-Civita symbol of (i, j, k): +1 for cyclic sequences, -1 otherwise.
    levi = _mul(em, _mul(em, _sub(em, i, j), _sub(em, j, k)), _sub(em, k, i))
    sign = _mul(em, em.op(OpCode.CAST, (levi,), t), em.const(0.5, t))
    a, b, c, d = _euler_terms(em, q, i, j, k, proper, sign)
    ab = _add(em, _mul(em, a, a), _mul(em, b, b))
    ratio = binop(em, OpCode.DIV, _mul(em, em.const(2.0, t), ab),
                  _add(em, _add(em, ab, _mul(em, c, c)), _mul(em, d, d)))
    one = em.const(1.0, t)
    cosine = em.call("clamp", (_sub(em, ratio, one), em.const(-1.0, t), one))
    middle = em.call("acos", (cosine,))
    plus, minus = em.call("atan2", (b, a)), em.call("atan2", (d, c))
    eps, zero, two = em.const(1e-6, t), em.const(0.0, t), em.const(2.0, t)

    def near(x: Value, target: Value) -> Value:
        return em.op(OpCode.LT, (em.call("abs", (_sub(em, x, target),)), eps), T.bool_)

    # At gimbal lock the first angle is not unique: Warp's convention sets it to zero.
    at_zero, at_pi = near(middle, zero), near(middle, em.const(math.pi, t))
    locked = em.op(OpCode.BITOR, (at_zero, at_pi), T.bool_)
    first = em.op(OpCode.SELECT, (locked, zero, _sub(em, plus, minus)), t)
    third = em.op(OpCode.SELECT, (at_zero, _mul(em, two, plus), em.op(
        OpCode.SELECT, (at_pi, _mul(em, two, minus), _add(em, plus, minus)), t)), t)
    middle = em.op(OpCode.SELECT, (proper, middle, _sub(em, middle, em.const(math.pi / 2, t))), t)
    third = em.op(OpCode.SELECT, (proper, third, _mul(em, third, sign)), t)
    return build(em, vector(3, t), _place(em, (first, middle, third), i, j, k))


def _place(em, angles: tuple[Value, Value, Value], i: Value, j: Value, k: Value) -> list[Value]:
    """The three angles by axis: slot i gets the first, then slot j the second and slot k the
    third (in that order, so overlapping indices resolve as in Warp)."""
    first, second, third = angles
    t = first.type
    out = list(angles)
    swap_y, swap_z = _is_index(em, i, 1), _is_index(em, i, 2)
    out[0] = em.op(OpCode.SELECT, (swap_y, second, em.op(
        OpCode.SELECT, (swap_z, third, first), t)), t)
    out[1] = em.op(OpCode.SELECT, (swap_y, first, second), t)
    out[2] = em.op(OpCode.SELECT, (swap_z, first, third), t)
    for index, value in ((j, second), (k, third)):
        out = [em.op(OpCode.SELECT, (_is_index(em, index, s), value, out[s]), t)
               for s in range(3)]
    return out


register("quat_to_euler", GROUP,
         "The Euler angles (indexed by axis) of `q` for rotations about the fixed axes `i`, "
         "`j`, `k` in that order; inverse of quat_from_euler for i != k.",
         Overload(("q", "i", "j", "k"), args_rule("quat", "int", "int", "int", result="vec3"),
                  _quat_to_euler))


def _quat_to_rpy(em, quat: Value) -> Value:
    t = quat.type.dtype
    x, y, z, w = comps(em, quat)
    one, two = em.const(1.0, t), em.const(2.0, t)

    def twice(a: Value) -> Value:
        return _mul(em, two, a)

    roll = em.call("atan2", (twice(_add(em, _mul(em, w, x), _mul(em, y, z))),
                             _sub(em, one, twice(_add(em, _mul(em, x, x), _mul(em, y, y))))))
    sine = em.call("clamp", (twice(_sub(em, _mul(em, w, y), _mul(em, z, x))),
                             em.const(-1.0, t), one))
    yaw = em.call("atan2", (twice(_add(em, _mul(em, w, z), _mul(em, x, y))),
                            _sub(em, one, twice(_add(em, _mul(em, y, y), _mul(em, z, z))))))
    return build(em, vector(3, t), [roll, em.call("asin", (sine,)), yaw])


register("quat_to_rpy", GROUP,
         "The (roll, pitch, yaw) angles of a unit quaternion: the inverse of quat_rpy "
         "(pitch in [-pi/2, pi/2]).",
         Overload(("q",), args_rule("quat", result="vec3"), _quat_to_rpy))


# ---- axis-angle and twist ----------------------------------------------------------------------


def _axis_angle(em, quat: Value) -> tuple[Value, Value]:
    t = quat.type.dtype
    x = comps(em, quat)
    v = build(em, vector(3, t), x[:3])
    unit = comps(em, em.call("normalize", (v,)))
    # q and -q are one rotation: the axis follows the sign of w so the angle is in [0, pi].
    negative = em.op(OpCode.LT, (x[3], em.const(0.0, t)), T.bool_)
    axis = build(em, v.type, select(em, negative, [neg(em, c) for c in unit], unit))
    angle = _mul(em, em.const(2.0, t), em.call("atan2", (em.call("length", (v,)),
                                                          em.call("abs", (x[3],)))))
    return axis, angle


def _axis_angle_into(em, quat: Value, axis: Value, angle: Value) -> Expansion:
    new_axis, new_angle = _axis_angle(em, quat)
    return Expansion(None, {1: new_axis, 2: new_angle})


register("quat_to_axis_angle", GROUP,
         "The rotation axis and angle (in [0, pi]) of `quat`: returned as a tuple, or written "
         "into the variables `axis` and `angle`.",
         Overload(("quat",), args_rule("quat", result=("vec3", "scalar")), _axis_angle),
         Overload(("quat", "axis", "angle"), args_rule("quat", "vec3", "scalar"),
                  _axis_angle_into))


def _twist_sine(em, axis: Value, q: Value, signed: bool) -> tuple[Value, Value]:
    """The half-angle sine of the twist about `axis` (the projection of q.xyz on it) and w."""
    x = comps(em, q)
    s = dot_values(em, comps(em, axis), x[:3])
    return (s if signed else em.call("abs", (s,))), x[3]


def _quat_twist(em, axis: Value, q: Value) -> Value:
    x = comps(em, q)
    a = comps(em, axis)
    projected = scale(em, a, dot_values(em, x[:3], a))
    return em.call("normalize", (build(em, q.type, [*projected, x[3]]),))


def _twist_angle(signed: bool):
    def expand(em, axis: Value, q: Value) -> Value:
        s, w = _twist_sine(em, axis, q, signed)
        return _mul(em, em.const(2.0, w.type), em.call("atan2", (s, w)))

    return expand


register("quat_twist", GROUP,
         "The twist part of `q` about the unit vector `axis` (swing-twist decomposition), "
         "normalized.",
         Overload(("axis", "q"), args_rule("vec3", "quat", result="quat"), _quat_twist))
register("quat_twist_angle", GROUP,
         "The unsigned twist angle of `q` about the unit vector `axis`: 2 atan2(|axis . q.xyz|, "
         "q.w).",
         Overload(("axis", "q"), args_rule("vec3", "quat", result="scalar"),
                  _twist_angle(False)))
register("quat_twist_angle_signed", GROUP,
         "The signed twist angle of `q` about the unit vector `axis` (right-hand rule): "
         "2 atan2(axis . q.xyz, q.w).",
         Overload(("axis", "q"), args_rule("vec3", "quat", result="scalar"),
                  _twist_angle(True)))


# ---- constructor builtins ----------------------------------------------------------------------


def _zero(what):
    def expand(em) -> Value:
        t = what(T.float32)
        return build(em, t, [em.const(0.0, T.float32)] * t.length)

    return expand


def _copy(em, value: Value) -> Value:
    return value


def _quat_parts(em, ijk: Value, real: Value) -> Value:
    return build(em, quaternion(real.type), [*comps(em, ijk), real])


def _quat_xyzw(em, *xyzw: Value) -> Value:
    return build(em, quaternion(xyzw[0].type), xyzw)


register("quaternion", GROUP,
         "A quaternion: zero, a copy of `quat`, from vector part `ijk` and real part `real`, "
         "or from components (x, y, z, w). The `dtype=` keyword is not supported.",
         Overload((), args_rule(result="quat"), _zero(quaternion)),
         Overload(("quat",), args_rule("quat", result="quat"), _copy),
         Overload(("ijk", "real"), args_rule("vec3", "scalar", result="quat"), _quat_parts),
         Overload(("x", "y", "z", "w"), args_rule(*["scalar"] * 4, result="quat"), _quat_xyzw))


def _transformation1_rule(types: tuple[T.Type, ...], weak: tuple[bool, ...]) -> Signature:
    """transformation(p), transformation(xform) (a copy) or transformation(fill)."""
    (t,) = types
    aggregate = (_is(t, "vec", 3) or _is(t, "transform")) and t.dtype.is_float
    require(aggregate or isinstance(t, T.ScalarType),
            f"expected a float 3-vector, transform or scalar, got {t!r}")
    if aggregate:
        return (t,), transformation(t.dtype)
    dtype = _scalar_dtype([(t, weak[0])])
    return (dtype,), transformation(dtype)


def _transformation1(em, value: Value) -> Value:
    t = value.type
    if _is(t, "transform"):
        return value
    if isinstance(t, T.VectorType):  # a translation, with the identity rotation
        zero = em.const(0.0, t.dtype)
        return build(em, transformation(t.dtype),
                     [*comps(em, value), zero, zero, zero, em.const(1.0, t.dtype)])
    return build(em, transformation(t), [value] * 7)


def _transformation_pq(em, p: Value, q: Value) -> Value:
    return build(em, transformation(p.type.dtype), [*comps(em, p), *comps(em, q)])


def _transformation7(em, *values: Value) -> Value:
    return build(em, transformation(values[0].type), values)


register("transformation", GROUP,
         "A transform: zero, from a translation `p` (identity rotation), a copy, one fill "
         "value, `p` and `q`, or seven components. The `dtype=` keyword is not supported.",
         Overload((), args_rule(result="transform"), _zero(transformation)),
         Overload(("p",), _transformation1_rule, _transformation1),
         Overload(("p", "q"), args_rule("vec3", "quat", result="transform"), _transformation_pq),
         Overload(("px", "py", "pz", "qx", "qy", "qz", "qw"),
                  args_rule(*["scalar"] * 7, result="transform"), _transformation7))
