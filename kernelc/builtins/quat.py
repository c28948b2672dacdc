"""Quaternion and transform builtins (Warp's names, parameter names and conventions).

A quaternion is (x, y, z, w) with w the real part; a unit quaternion q rotates v as
q v q^-1. A transform is 7 components: the translation p (3) then the rotation q (4).
Every builtin here is an expansion into scalar ops, for each float component type.
The conversions to and from Euler angles, axis-angle and twists are in `quat_euler.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelc import types as T
from kernelc.builtins.aggregate import binop, build, comps, dot_values, require
from kernelc.builtins.matrix import rows_of
from kernelc.builtins.registry import Expansion, Overload, Signature, TypeRule, register
from kernelc.builtins.vector import cross_values
from kernelc.ir.nodes import OpCode, Value
from kernelc.types_vec import matrix, quaternion, transformation, vector

GROUP = "quaternions and transforms"


def _is(t: T.Type, kind: str, length: int | None = None) -> bool:
    return isinstance(t, T.VectorType) and t.kind == kind and (length is None or
                                                               t.length == length)


def _is_square(t: T.Type, n: int) -> bool:
    return isinstance(t, T.MatrixType) and t.shape == (n, n)


# Argument kinds of `args_rule`: a test and the words an error message uses for each.
_KINDS: dict[str, tuple[Callable[[T.Type], bool], str]] = {
    "quat": (lambda t: _is(t, "quat"), "quaternion"),
    "transform": (lambda t: _is(t, "transform"), "transform"),
    "vec3": (lambda t: _is(t, "vec", 3), "3-vector"),
    "vec6": (lambda t: _is(t, "vec", 6), "spatial_vector (6 components)"),
    "mat33": (lambda t: _is_square(t, 3), "3x3 matrix"),
    "mat44": (lambda t: _is_square(t, 4), "4x4 matrix"),
}


def kind_type(kind: str, dtype: T.ScalarType) -> T.Type:
    """The type a kind name stands for with component type `dtype`."""
    return {"quat": quaternion(dtype), "transform": transformation(dtype),
            "vec3": vector(3, dtype), "vec6": vector(6, dtype),
            "mat33": matrix((3, 3), dtype), "mat44": matrix((4, 4), dtype),
            "mat66": matrix((6, 6), dtype), "scalar": dtype, "int": T.int32,
            "void": T.void}[kind]


def args_rule(*kinds: str, result: str | tuple[str, ...] = "void") -> TypeRule:
    """A rule for arguments of the given kinds, all with one float component type.

    Kinds are those of `_KINDS` (or two of them as "a|b"), "scalar" (a float of that
    component type; literals convert) and "int" (an int32; literals convert). `result`
    names the result kind the same way, or a tuple of kinds for several results. Without
    aggregate arguments the component type is the common type of the scalar arguments
    (float32 for literals only).
    """

    def rule(types: tuple[T.Type, ...], weak: tuple[bool, ...]) -> Signature:
        dtype = None
        for t, kind in zip(types, kinds):
            if kind in ("scalar", "int"):
                continue
            # "a|b" accepts either kind (one overload, so an error names both).
            alternatives = [_KINDS[k] for k in kind.split("|")]
            words = " or ".join(w for _, w in alternatives)
            require(any(test(t) for test, _ in alternatives) and t.dtype.is_float,
                    f"expected a float {words}, got {t!r}")
            require(dtype is None or t.dtype == dtype,
                    f"mixed component types: {t!r} with {dtype!r} components")
            dtype = t.dtype
        if dtype is None:
            dtype = _scalar_dtype([(t, w) for t, w, k in zip(types, weak, kinds)
                                   if k == "scalar"])
        params = [_param(t, w, kind, dtype) for t, w, kind in zip(types, weak, kinds)]
        if isinstance(result, tuple):
            return tuple(params), T.TupleType(tuple(kind_type(k, dtype) for k in result))
        return tuple(params), kind_type(result, dtype)

    return rule


def _scalar_dtype(scalars: list[tuple[T.Type, bool]]) -> T.ScalarType:
    strong = [t for t, w in scalars if not w]
    for t in strong:
        require(isinstance(t, T.ScalarType) and t.is_float, f"expected a float, got {t!r}")
        require(t == strong[0], f"mixed argument types: {strong[0]!r} and {t!r}")
    return strong[0] if strong else T.float32


def _param(t: T.Type, weak: bool, kind: str, dtype: T.ScalarType) -> T.Type:
    if kind == "int":
        require(t == T.int32 or (weak and isinstance(t, T.ScalarType) and t.is_int),
                f"expected an int32, got {t!r}")
        return T.int32
    if kind == "scalar":
        literal = weak and isinstance(t, T.ScalarType) and not t.is_bool
        require(t == dtype or literal, f"expected {dtype!r}, got {t!r}")
        return dtype
    return t


def neg(em, x: Value) -> Value:
    return em.op(OpCode.NEG, (x,), x.type)


def scale(em, xs: list[Value], s: Value) -> list[Value]:
    return [binop(em, OpCode.MUL, x, s) for x in xs]


def add(em, xs: list[Value], ys: list[Value]) -> list[Value]:
    return [binop(em, OpCode.ADD, x, y) for x, y in zip(xs, ys)]


def select(em, cond: Value, a: list[Value], b: list[Value]) -> list[Value]:
    """Component-wise `a if cond else b`."""
    return [em.op(OpCode.SELECT, (cond, x, y), x.type) for x, y in zip(a, b)]


# ---- quaternion algebra on component lists ----------------------------------------------


def quat_mul_values(em, a: list[Value], b: list[Value]) -> list[Value]:
    """Hamilton product (x, y, z, w), each component summed left to right in Warp's order:
    a.w b.v + b.w a.v + (a.v x b.v) and a.w b.w - a.x b.x - a.y b.y - a.z b.z."""

    def mul(x: Value, y: Value) -> Value:
        return binop(em, OpCode.MUL, x, y)

    def part(k: int) -> Value:
        i, j = (k + 1) % 3, (k + 2) % 3
        acc = binop(em, OpCode.ADD, mul(a[3], b[k]), mul(b[3], a[k]))
        acc = binop(em, OpCode.ADD, acc, mul(a[i], b[j]))
        return binop(em, OpCode.SUB, acc, mul(b[i], a[j]))

    w = mul(a[3], b[3])
    for k in range(3):
        w = binop(em, OpCode.SUB, w, mul(a[k], b[k]))
    return [part(0), part(1), part(2), w]


def rotate_values(em, q: list[Value], v: list[Value], inverse: bool = False) -> list[Value]:
    """q v q^-1 for a unit quaternion, u = q.xyz, component k summed in Warp's order:
    (v_k (2w^2 - 1) + u_k (2 u.v)) +/- (u x v)_k w 2, so results agree to the last bit."""
    u, w = q[:3], q[3]
    t = w.type
    two = em.const(2.0, t)
    c = binop(em, OpCode.SUB, binop(em, OpCode.MUL, binop(em, OpCode.MUL, two, w), w),
              em.const(1.0, t))
    d = binop(em, OpCode.MUL, two, dot_values(em, u, v))
    turn = OpCode.SUB if inverse else OpCode.ADD
    out = []
    for vk, uk, ck in zip(v, u, cross_values(em, u, v)):
        base = binop(em, OpCode.ADD, binop(em, OpCode.MUL, vk, c), binop(em, OpCode.MUL, uk, d))
        out.append(binop(em, turn, base,
                         binop(em, OpCode.MUL, binop(em, OpCode.MUL, ck, w), two)))
    return out


def conj_values(em, q: list[Value]) -> list[Value]:
    return [neg(em, q[0]), neg(em, q[1]), neg(em, q[2]), q[3]]


def rotation_columns(em, q: list[Value]) -> list[list[Value]]:
    """The columns of the rotation matrix: q applied to each unit vector."""
    t = q[3].type
    zero, one = em.const(0.0, t), em.const(1.0, t)
    return [rotate_values(em, q, [one if i == k else zero for i in range(3)]) for k in range(3)]


# ---- quaternion builtins --------------------------------------------------------------------


def _quat_identity(em) -> Value:
    t = T.float32
    zero = em.const(0.0, t)
    return build(em, quaternion(t), [zero, zero, zero, em.const(1.0, t)])


def _identity_value(make, count: int):
    def host(dtype: Any = float) -> Any:
        return make(T.as_type(dtype))(*([0] * (count - 1) + [1]))

    return host


register("quat_identity", GROUP, "The identity rotation (0, 0, 0, 1); `dtype=` picks the "
         "float type (float32 by default).",
         Overload((), args_rule(result="quat"), _quat_identity),
         special="quat_identity", host=_identity_value(quaternion, 4))


def _from_axis_angle(em, axis: Value, angle: Value) -> Value:
    t = angle.type
    half = binop(em, OpCode.MUL, angle, em.const(0.5, t))
    s = em.call("sin", (half,))
    return build(em, quaternion(t), [*scale(em, comps(em, axis), s), em.call("cos", (half,))])


register("quat_from_axis_angle", GROUP,
         "Rotation by `angle` radians about the unit vector `axis`.",
         Overload(("axis", "angle"), args_rule("vec3", "scalar", result="quat"),
                  _from_axis_angle))


def _quat_inverse(em, q: Value) -> Value:
    return build(em, q.type, conj_values(em, comps(em, q)))


register("quat_inverse", GROUP,
         "The conjugate (x, y, z negated): the inverse of a unit quaternion.",
         Overload(("quat",), args_rule("quat", result="quat"), _quat_inverse))


def _quat_rotate(inverse: bool):
    def expand(em, q: Value, v: Value) -> Value:
        return build(em, v.type, rotate_values(em, comps(em, q), comps(em, v), inverse))

    return expand


register("quat_rotate", GROUP, "Rotates vector `vec` by unit quaternion `quat`.",
         Overload(("quat", "vec"), args_rule("quat", "vec3", result="vec3"), _quat_rotate(False)))
register("quat_rotate_inv", GROUP, "Rotates vector `vec` by the inverse of unit quaternion `quat`.",
         Overload(("quat", "vec"), args_rule("quat", "vec3", result="vec3"), _quat_rotate(True)))


def _quat_to_matrix(em, q: Value) -> Value:
    t = q.type.dtype
    cols = rotation_columns(em, comps(em, q))
    return build(em, matrix((3, 3), t), [cols[c][r] for r in range(3) for c in range(3)])


register("quat_to_matrix", GROUP, "The 3x3 rotation matrix of a unit quaternion.",
         Overload(("quat",), args_rule("quat", result="mat33"), _quat_to_matrix))


def quat_from_rows(em, r: list[list[Value]]) -> Value:
    """The unit quaternion of the rotation in the top-left 3x3 block of rows `r`, by Warp's
    method: from the trace where it is >= 0, else from the largest diagonal entry (the first
    of equal ones), then normalized. The branches become selects."""
    t = r[0][0].type
    one, half = em.const(1.0, t), em.const(0.5, t)

    def plus(a, b):
        return binop(em, OpCode.ADD, a, b)

    def minus(a, b):
        return binop(em, OpCode.SUB, a, b)

    def branch(k: int, pivot: Value, pairs) -> list[Value]:
        """Component k from sqrt(pivot + 1); the others are (sum or difference) * 0.5 / h."""
        h = em.call("sqrt", (plus(pivot, one),))
        scale = binop(em, OpCode.DIV, half, h)
        out = [binop(em, OpCode.MUL, value, scale) for value in pairs]
        out.insert(k, binop(em, OpCode.MUL, half, h))
        return out

    trace = plus(plus(r[0][0], r[1][1]), r[2][2])
    q_w = branch(3, trace, [minus(r[2][1], r[1][2]), minus(r[0][2], r[2][0]),
                            minus(r[1][0], r[0][1])])
    q_x = branch(0, minus(r[0][0], plus(r[1][1], r[2][2])),
                 [plus(r[0][1], r[1][0]), plus(r[2][0], r[0][2]), minus(r[2][1], r[1][2])])
    q_y = branch(1, minus(r[1][1], plus(r[2][2], r[0][0])),
                 [plus(r[0][1], r[1][0]), plus(r[1][2], r[2][1]), minus(r[0][2], r[2][0])])
    q_z = branch(2, minus(r[2][2], plus(r[0][0], r[1][1])),
                 [plus(r[2][0], r[0][2]), plus(r[1][2], r[2][1]), minus(r[1][0], r[0][1])])

    def gt(a, b):
        return em.op(OpCode.GT, (a, b), T.bool_)

    y_first = gt(r[1][1], r[0][0])
    largest = em.op(OpCode.SELECT, (y_first, r[1][1], r[0][0]), t)
    diag = select(em, gt(r[2][2], largest), q_z, select(em, y_first, q_y, q_x))
    at_least_zero = em.op(OpCode.GE, (trace, em.const(0.0, t)), T.bool_)
    q = build(em, quaternion(t), select(em, at_least_zero, q_w, diag))
    return em.call("normalize", (q,))


def _quat_from_matrix(em, m: Value) -> Value:
    return quat_from_rows(em, rows_of(em, m))


register("quat_from_matrix", GROUP,
         "The unit quaternion of a 3x3 rotation matrix (or of the top-left 3x3 block of a 4x4 "
         "matrix); its sign is unspecified.",
         Overload(("mat",), args_rule("mat33|mat44", result="quat"), _quat_from_matrix))


def _slerp(em, a: Value, b: Value, t: Value) -> Value:
    """a * quat_from_axis_angle(axis, t * angle) for the axis and angle of a^-1 b, as Warp
    computes it."""
    x = comps(em, a)
    relative = build(em, a.type, quat_mul_values(em, conj_values(em, x), comps(em, b)))
    axis, angle = em.call("quat_to_axis_angle", (relative,))
    step = em.call("quat_from_axis_angle", (axis, binop(em, OpCode.MUL, t, angle)))
    return build(em, a.type, quat_mul_values(em, x, comps(em, step)))


register("quat_slerp", GROUP, "Spherical linear interpolation between two unit quaternions.",
         Overload(("a", "b", "t"), args_rule("quat", "quat", "scalar", result="quat"), _slerp))


# ---- transforms -------------------------------------------------------------------------


def split(em, tf: Value) -> tuple[list[Value], list[Value]]:
    c = comps(em, tf)
    return c[:3], c[3:]


def multiply_values(em, a: Value, b: Value) -> list[Value]:
    (ap, aq), (bp, bq) = split(em, a), split(em, b)
    return [*add(em, rotate_values(em, aq, bp), ap), *quat_mul_values(em, aq, bq)]


def _transform_identity(em) -> Value:
    t = T.float32
    zero = em.const(0.0, t)
    return build(em, transformation(t), [zero] * 6 + [em.const(1.0, t)])


register("transform_identity", GROUP, "The identity transform (p = 0, q = identity); "
         "`dtype=` picks the float type (float32 by default).",
         Overload((), args_rule(result="transform"), _transform_identity),
         special="transform_identity", host=_identity_value(transformation, 7))


def _apply(vector_only: bool):
    by_matrix = _apply_matrix(vector_only)

    def expand(em, tf: Value, v: Value) -> Value:
        if isinstance(tf.type, T.MatrixType):
            return by_matrix(em, tf, v)
        p, q = split(em, tf)
        out = rotate_values(em, q, comps(em, v))
        return build(em, v.type, out if vector_only else add(em, out, p))

    return expand


def _apply_matrix(vector_only: bool):
    """The first three rows of mat (x, y, z, 1), or of mat (x, y, z, 0) for a direction."""

    def expand(em, mat: Value, v: Value) -> Value:
        t = v.type.dtype
        x = [*comps(em, v), em.const(0.0 if vector_only else 1.0, t)]
        # All four terms, as Warp sums them (the zero term can turn -0.0 into +0.0).
        return build(em, v.type, [dot_values(em, row, x) for row in rows_of(em, mat)[:3]])

    return expand


register("transform_point", GROUP,
         "Applies a transform to a point: rotate, then translate; with a 4x4 matrix, the first "
         "three components of mat (x, y, z, 1).",
         Overload(("xform", "point"), args_rule("transform|mat44", "vec3", result="vec3"),
                  _apply(False)))
register("transform_vector", GROUP,
         "Applies a transform's rotation to a vector; with a 4x4 matrix, the first three "
         "components of mat (x, y, z, 0).",
         Overload(("xform", "vec"), args_rule("transform|mat44", "vec3", result="vec3"),
                  _apply(True)))


def _get(part: int):
    def expand(em, tf: Value) -> Value:
        dtype = tf.type.dtype
        values = split(em, tf)[part]
        return build(em, vector(3, dtype) if part == 0 else quaternion(dtype), values)

    return expand


register("transform_get_translation", GROUP, "The translation p of a transform.",
         Overload(("xform",), args_rule("transform", result="vec3"), _get(0)))
register("transform_get_rotation", GROUP, "The rotation q of a transform.",
         Overload(("xform",), args_rule("transform", result="quat"), _get(1)))


def _set(part: int):
    """Warp's in-place setters: the transform argument (a variable) gets its new value."""

    def expand(em, tf: Value, new: Value) -> Expansion:
        p, q = split(em, tf)
        parts = [comps(em, new), q] if part == 0 else [p, comps(em, new)]
        return Expansion(None, {0: build(em, tf.type, parts[0] + parts[1])})

    return expand


register("transform_set_translation", GROUP,
         "Sets the translation of the transform variable `xform` in place (as `xform.p = p`).",
         Overload(("xform", "p"), args_rule("transform", "vec3"), _set(0)))
register("transform_set_rotation", GROUP,
         "Sets the rotation of the transform variable `xform` in place (as `xform.q = q`).",
         Overload(("xform", "q"), args_rule("transform", "quat"), _set(1)))


def _transform_multiply(em, a: Value, b: Value) -> Value:
    return build(em, a.type, multiply_values(em, a, b))


register("transform_multiply", GROUP, "Composition a * b (apply b first, then a).",
         Overload(("a", "b"), args_rule("transform", "transform", result="transform"),
                  _transform_multiply))


def _transform_inverse(em, tf: Value) -> Value:
    p, q = split(em, tf)
    qi = conj_values(em, q)
    pi = [neg(em, x) for x in rotate_values(em, qi, p)]
    return build(em, tf.type, [*pi, *qi])


register("transform_inverse", GROUP, "The inverse of a rigid transform.",
         Overload(("xform",), args_rule("transform", result="transform"), _transform_inverse))


# ---- transforms and 4x4 matrices --------------------------------------------------------


def _homogeneous(em, columns: list[list[Value]], p: list[Value]) -> Value:
    """The 4x4 matrix [[c0 c1 c2 p], [0 0 0 1]] from three 3-columns and a translation."""
    t = p[0].type
    zero, one = em.const(0.0, t), em.const(1.0, t)
    rows = [[columns[c][r] for c in range(3)] + [p[r]] for r in range(3)]
    rows.append([zero, zero, zero, one])
    return build(em, matrix((4, 4), t), [x for row in rows for x in row])


def _to_matrix(em, tf: Value) -> Value:
    p, q = split(em, tf)
    return _homogeneous(em, rotation_columns(em, q), p)


register("transform_to_matrix", GROUP,
         "The 4x4 matrix [[R, p], [0, 1]] of a transform (R the rotation matrix of q).",
         Overload(("xform",), args_rule("transform", result="mat44"), _to_matrix))


def _from_matrix(em, mat: Value) -> Value:
    rows = rows_of(em, mat)
    q = comps(em, quat_from_rows(em, rows))
    return build(em, transformation(mat.type.dtype), [rows[0][3], rows[1][3], rows[2][3], *q])


register("transform_from_matrix", GROUP,
         "The transform of a 4x4 matrix [[R, p], [0, 1]]: p from the last column, q from R.",
         Overload(("mat",), args_rule("mat44", result="transform"), _from_matrix))


def _compose(em, position: Value, rotation: Value, scale_: Value) -> Value:
    s = comps(em, scale_)
    columns = rotation_columns(em, comps(em, rotation))
    scaled = [[binop(em, OpCode.MUL, s[c], x) for x in columns[c]] for c in range(3)]
    return _homogeneous(em, scaled, comps(em, position))


register("transform_compose", GROUP,
         "The 4x4 matrix of a translation, a rotation and a per-axis scale: "
         "[[R diag(scale), position], [0, 1]].",
         Overload(("position", "rotation", "scale"),
                  args_rule("vec3", "quat", "vec3", result="mat44"), _compose))


def _decompose(em, m: Value) -> tuple[Value, Value, Value]:
    rows = rows_of(em, m)
    t = m.type.dtype
    zero = em.const(0.0, t)
    scales, columns = [], []
    for c in range(3):
        column = [rows[r][c] for r in range(3)]
        length = em.call("sqrt", (dot_values(em, column, column),))
        # A zero column keeps its (zero) entries instead of becoming NaN, as in Warp.
        nonzero = em.op(OpCode.NE, (length, zero), T.bool_)
        columns.append(select(em, nonzero, [binop(em, OpCode.DIV, x, length) for x in column],
                              column))
        scales.append(length)
    rotation = quat_from_rows(em, [[columns[c][r] for c in range(3)] for r in range(3)])
    position = build(em, vector(3, t), [rows[r][3] for r in range(3)])
    return position, rotation, build(em, vector(3, t), scales)


register("transform_decompose", GROUP,
         "The (position, rotation, scale) of a 4x4 matrix built as by transform_compose: "
         "three results.",
         Overload(("m",), args_rule("mat44", result=("vec3", "quat", "vec3")), _decompose))
