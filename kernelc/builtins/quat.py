"""Quaternion and transform builtins (Warp's names and conventions).

A quaternion is (x, y, z, w) with w the real part; a unit quaternion q rotates v as
q v q^-1. A transform is 7 components: the translation p (3) then the rotation q (4).
"""

from __future__ import annotations

from kernelc import types as T
from kernelc.builtins.aggregate import binop, build, comps, dot_values, require
from kernelc.builtins.matrix import rows_of
from kernelc.builtins.registry import Overload, register
from kernelc.builtins.vector import cross_values
from kernelc.ir.nodes import OpCode, Value
from kernelc.types_vec import matrix, quaternion, transformation, vector

GROUP = "quaternions and transforms"


def _is(t: T.Type, kind: str, length: int | None = None) -> bool:
    return isinstance(t, T.VectorType) and t.kind == kind and (length is None or
                                                               t.length == length)


def _args(*kinds: str, result=None):
    """A rule for float arguments of the given kinds ("quat", "transform", "vec3", "scalar"),
    all of one component type; `result` names the result kind the same way."""

    def rule(types, weak):
        dtype = None
        for t, kind in zip(types, kinds):
            if kind == "scalar":
                continue
            ok = _is(t, "vec", 3) if kind == "vec3" else _is(t, kind)
            require(ok and t.dtype.is_float, f"expected a float {kind}, got {t!r}")
            require(dtype is None or t.dtype == dtype, f"mixed component types: {t!r}")
            dtype = t.dtype
        dtype = dtype or T.float32
        params = []
        for t, w, kind in zip(types, weak, kinds):
            if kind == "scalar":
                require(t == dtype or (w and isinstance(t, T.ScalarType)),
                        f"expected {dtype!r}, got {t!r}")
                params.append(dtype)
            else:
                params.append(t)
        return tuple(params), _kind_type(result, dtype)

    return rule


def _kind_type(kind: str, dtype: T.ScalarType) -> T.Type:
    return {"quat": quaternion(dtype), "transform": transformation(dtype),
            "vec3": vector(3, dtype), "mat33": matrix((3, 3), dtype), "scalar": dtype}[kind]


def _neg(em, x: Value) -> Value:
    return em.op(OpCode.NEG, (x,), x.type)


def _scale(em, xs: list[Value], s: Value) -> list[Value]:
    return [binop(em, OpCode.MUL, x, s) for x in xs]


def _add(em, xs: list[Value], ys: list[Value]) -> list[Value]:
    return [binop(em, OpCode.ADD, x, y) for x, y in zip(xs, ys)]


# ---- quaternion algebra on component lists ----------------------------------------------


def quat_mul_values(em, a: list[Value], b: list[Value]) -> list[Value]:
    """Hamilton product (x, y, z, w)."""
    av, bv, aw, bw = a[:3], b[:3], a[3], b[3]
    v = _add(em, _add(em, _scale(em, bv, aw), _scale(em, av, bw)), cross_values(em, av, bv))
    w = binop(em, OpCode.SUB, binop(em, OpCode.MUL, aw, bw), dot_values(em, av, bv))
    return [*v, w]


def rotate_values(em, q: list[Value], v: list[Value], inverse: bool = False) -> list[Value]:
    """q v q^-1 for a unit quaternion: v (2w^2 - 1) + 2w (u x v) + 2u (u . v), u = q.xyz."""
    u, w = q[:3], q[3]
    t = w.type
    two = em.const(2.0, t)
    a = binop(em, OpCode.SUB, binop(em, OpCode.MUL, two, binop(em, OpCode.MUL, w, w)),
              em.const(1.0, t))
    c = binop(em, OpCode.MUL, two, w)
    if inverse:
        c = _neg(em, c)
    d = binop(em, OpCode.MUL, two, dot_values(em, u, v))
    return _add(em, _add(em, _scale(em, v, a), _scale(em, cross_values(em, u, v), c)),
                _scale(em, u, d))


def conj_values(em, q: list[Value]) -> list[Value]:
    return [_neg(em, q[0]), _neg(em, q[1]), _neg(em, q[2]), q[3]]


# ---- quaternion builtins --------------------------------------------------------------------


def _quat_identity(em) -> Value:
    t = T.float32
    zero = em.const(0.0, t)
    return build(em, quaternion(t), [zero, zero, zero, em.const(1.0, t)])


register("quat_identity", GROUP, "The identity rotation (0, 0, 0, 1).",
         Overload((), _args(result="quat"), _quat_identity))


def _from_axis_angle(em, axis: Value, angle: Value) -> Value:
    t = angle.type
    half = binop(em, OpCode.MUL, angle, em.const(0.5, t))
    s = em.call("sin", (half,))
    return build(em, quaternion(t), [*_scale(em, comps(em, axis), s), em.call("cos", (half,))])


register("quat_from_axis_angle", GROUP,
         "Rotation by `angle` radians about the unit vector `axis`.",
         Overload(("axis", "angle"), _args("vec3", "scalar", result="quat"), _from_axis_angle))


def _quat_inverse(em, q: Value) -> Value:
    return build(em, q.type, conj_values(em, comps(em, q)))


register("quat_inverse", GROUP, "The conjugate (x, y, z negated): the inverse of a unit quaternion.",
         Overload(("q",), _args("quat", result="quat"), _quat_inverse))


def _quat_rotate(inverse: bool):
    def expand(em, q: Value, v: Value) -> Value:
        return build(em, v.type, rotate_values(em, comps(em, q), comps(em, v), inverse))

    return expand


register("quat_rotate", GROUP, "Rotates vector v by unit quaternion q.",
         Overload(("q", "v"), _args("quat", "vec3", result="vec3"), _quat_rotate(False)))
register("quat_rotate_inv", GROUP, "Rotates vector v by the inverse of unit quaternion q.",
         Overload(("q", "v"), _args("quat", "vec3", result="vec3"), _quat_rotate(True)))


def _quat_to_matrix(em, q: Value) -> Value:
    """The rotation matrix: column k is q applied to the k-th unit vector."""
    t = q.type.dtype
    qc = comps(em, q)
    zero, one = em.const(0.0, t), em.const(1.0, t)
    cols = [rotate_values(em, qc, [one if i == k else zero for i in range(3)]) for k in range(3)]
    return build(em, matrix((3, 3), t), [cols[c][r] for r in range(3) for c in range(3)])


register("quat_to_matrix", GROUP, "The 3x3 rotation matrix of a unit quaternion.",
         Overload(("q",), _args("quat", result="mat33"), _quat_to_matrix))


def _sel(em, cond: Value, a: list[Value], b: list[Value]) -> list[Value]:
    return [em.op(OpCode.SELECT, (cond, x, y), x.type) for x, y in zip(a, b)]


def _quat_from_matrix(em, m: Value) -> Value:
    """Shepperd's method: the branch with the largest pivot, chosen with selects."""
    r = rows_of(em, m)
    t = m.type.dtype
    one, quarter = em.const(1.0, t), em.const(0.25, t)

    def add(a, b):
        return binop(em, OpCode.ADD, a, b)

    def sub(a, b):
        return binop(em, OpCode.SUB, a, b)

    def branch(pivot: Value, make) -> list[Value]:
        s = binop(em, OpCode.MUL, em.call("sqrt", (add(one, pivot),)), em.const(2.0, t))
        inv = binop(em, OpCode.DIV, one, s)
        big = binop(em, OpCode.MUL, quarter, s)
        return make(big, lambda x: binop(em, OpCode.MUL, x, inv))

    trace = add(add(r[0][0], r[1][1]), r[2][2])
    q_w = branch(trace, lambda big, d: [d(sub(r[2][1], r[1][2])), d(sub(r[0][2], r[2][0])),
                                        d(sub(r[1][0], r[0][1])), big])
    q_x = branch(sub(sub(r[0][0], r[1][1]), r[2][2]),
                 lambda big, d: [big, d(add(r[0][1], r[1][0])), d(add(r[0][2], r[2][0])),
                                 d(sub(r[2][1], r[1][2]))])
    q_y = branch(sub(sub(r[1][1], r[0][0]), r[2][2]),
                 lambda big, d: [d(add(r[0][1], r[1][0])), big, d(add(r[1][2], r[2][1])),
                                 d(sub(r[0][2], r[2][0]))])
    q_z = branch(sub(sub(r[2][2], r[0][0]), r[1][1]),
                 lambda big, d: [d(add(r[0][2], r[2][0])), d(add(r[1][2], r[2][1])), big,
                                 d(sub(r[1][0], r[0][1]))])

    def gt(a, b):
        return em.op(OpCode.GT, (a, b), T.bool_)

    y_or_z = _sel(em, gt(r[1][1], r[2][2]), q_y, q_z)
    x_pick = em.op(OpCode.BITAND, (gt(r[0][0], r[1][1]), gt(r[0][0], r[2][2])), T.bool_)
    diag = _sel(em, x_pick, q_x, y_or_z)
    q = build(em, quaternion(t), _sel(em, gt(trace, em.const(0.0, t)), q_w, diag))
    return em.call("normalize", (q,))


register("quat_from_matrix", GROUP, "The unit quaternion of a 3x3 rotation matrix.",
         Overload(("m",), lambda types, weak: _mat33_rule(types), _quat_from_matrix))


def _mat33_rule(types):
    (m,) = types
    require(isinstance(m, T.MatrixType) and m.shape == (3, 3) and m.dtype.is_float,
            f"expected a 3x3 float matrix, got {m!r}")
    return (m,), quaternion(m.dtype)


def _slerp(em, a: Value, b: Value, t: Value) -> Value:
    """Spherical interpolation from a (t = 0) to b (t = 1) along the great arc between them."""
    dt = t.type
    one = em.const(1.0, dt)
    x, y = comps(em, a), comps(em, b)
    cosine = em.call("clamp", (dot_values(em, x, y), em.const(-1.0, dt), one))
    theta = em.call("acos", (cosine,))
    sine = em.call("sin", (theta,))
    tiny = em.op(OpCode.LT, (em.call("abs", (sine,)), em.const(1e-6, dt)), T.bool_)
    safe = em.op(OpCode.SELECT, (tiny, one, sine), dt)
    wa = binop(em, OpCode.DIV, em.call("sin", (binop(em, OpCode.MUL, binop(
        em, OpCode.SUB, one, t), theta),)), safe)
    wb = binop(em, OpCode.DIV, em.call("sin", (binop(em, OpCode.MUL, t, theta),)), safe)
    # Nearly equal rotations: linear interpolation avoids dividing by ~0.
    wa = em.op(OpCode.SELECT, (tiny, binop(em, OpCode.SUB, one, t), wa), dt)
    wb = em.op(OpCode.SELECT, (tiny, t, wb), dt)
    return build(em, a.type, _add(em, _scale(em, x, wa), _scale(em, y, wb)))


register("quat_slerp", GROUP, "Spherical linear interpolation between two unit quaternions.",
         Overload(("a", "b", "t"), _args("quat", "quat", "scalar", result="quat"), _slerp))


# ---- transforms -------------------------------------------------------------------------


def split(em, tf: Value) -> tuple[list[Value], list[Value]]:
    c = comps(em, tf)
    return c[:3], c[3:]


def multiply_values(em, a: Value, b: Value) -> list[Value]:
    (ap, aq), (bp, bq) = split(em, a), split(em, b)
    return [*_add(em, rotate_values(em, aq, bp), ap), *quat_mul_values(em, aq, bq)]


def _transform_identity(em) -> Value:
    t = T.float32
    zero = em.const(0.0, t)
    return build(em, transformation(t), [zero] * 6 + [em.const(1.0, t)])


register("transform_identity", GROUP, "The identity transform (p = 0, q = identity).",
         Overload((), _args(result="transform"), _transform_identity))


def _apply(vector_only: bool):
    def expand(em, tf: Value, v: Value) -> Value:
        p, q = split(em, tf)
        out = rotate_values(em, q, comps(em, v))
        return build(em, v.type, out if vector_only else _add(em, out, p))

    return expand


register("transform_point", GROUP, "Applies a transform to a point: rotate, then translate.",
         Overload(("t", "p"), _args("transform", "vec3", result="vec3"), _apply(False)))
register("transform_vector", GROUP, "Applies a transform's rotation to a vector.",
         Overload(("t", "v"), _args("transform", "vec3", result="vec3"), _apply(True)))


def _get(part: int):
    def expand(em, tf: Value) -> Value:
        dtype = tf.type.dtype
        values = split(em, tf)[part]
        return build(em, vector(3, dtype) if part == 0 else quaternion(dtype), values)

    return expand


register("transform_get_translation", GROUP, "The translation p of a transform.",
         Overload(("t",), _args("transform", result="vec3"), _get(0)))
register("transform_get_rotation", GROUP, "The rotation q of a transform.",
         Overload(("t",), _args("transform", result="quat"), _get(1)))


def _transform_multiply(em, a: Value, b: Value) -> Value:
    return build(em, a.type, multiply_values(em, a, b))


register("transform_multiply", GROUP, "Composition a * b (apply b first, then a).",
         Overload(("a", "b"), _args("transform", "transform", result="transform"),
                  _transform_multiply))


def _transform_inverse(em, tf: Value) -> Value:
    p, q = split(em, tf)
    qi = conj_values(em, q)
    pi = [_neg(em, x) for x in rotate_values(em, qi, p)]
    return build(em, tf.type, [*pi, *qi])


register("transform_inverse", GROUP, "The inverse of a rigid transform.",
         Overload(("t",), _args("transform", result="transform"), _transform_inverse))
