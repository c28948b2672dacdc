"""Every builtin kernelc shares with Warp, compared with Warp 1.19 on the CPU bit for bit.

The kernels below are written as Warp programs (`wp.*`) and run twice from the same source:
here with `wp` = kernelc, and in one Warp subprocess (`run_warp` imports this file with
KERNELC_BITEXACT_MODULE=warp and declares every overload before the first launch, so Warp
builds one module). Each kernel writes one column per builtin; the column names are the
lists next to the kernels, and a mismatch names the builtin, the precision and an input.

Inputs are random and non-zero with awkward cases mixed in: signed zeros, NaN, infinities,
huge and tiny magnitudes, near-cancelling pairs, halfway cases for rounding, singular and
nearly singular matrices. Results must agree in every bit (any NaN equals any NaN), except
for the few columns of `TOLERANT`, each with the reason it cannot or should not agree.
"""

# No `from __future__ import annotations`: Warp reads kernel annotations as objects.

import importlib
import os
import typing
from pathlib import Path

import numpy as np
import pytest

wp = importlib.import_module(os.environ.get("KERNELC_BITEXACT_MODULE", "kernelc"))
Any = typing.Any
N = int(os.environ.get("KERNELC_BITEXACT_N", "96"))  # more rows: a slower, wider sweep
ROOT = Path(__file__).resolve().parents[1]
PRECISIONS = ["float16", "float32", "float64"]
INT_TYPES = ["int8", "int32", "int64", "uint8", "uint32"]

# ---- scalar math -------------------------------------------------------------------------

SCALAR = ["abs", "sign", "floor", "ceil", "round", "rint", "trunc", "frac", "sqrt", "cbrt",
          "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
          "cosh", "tanh", "degrees", "radians", "erf", "erfc", "erfinv", "erfcinv", "step",
          "nonzero", "neg_op", "neg", "pow", "atan2", "min", "max", "add", "sub", "mul", "div",
          "mod", "floordiv", "copysign", "where", "min_ba", "clamp", "lerp", "smoothstep",
          "div_approx", "pow_int"]
SCALAR_FLAGS = ["isnan", "isinf", "isfinite"]


@wp.kernel
def k_scalar(x: wp.array(dtype=Any), y: wp.array(dtype=Any), z: wp.array(dtype=Any),
             u: wp.array(dtype=Any), c: wp.array(dtype=Any), o: wp.array2d(dtype=Any),
             flags: wp.array2d(dtype=Any)):
    i = wp.tid()
    a = x[i]
    b = y[i]
    e = z[i]
    zero = c[0]
    one = c[1]
    o[i, 0] = wp.abs(a)
    o[i, 1] = wp.sign(a)
    o[i, 2] = wp.floor(a)
    o[i, 3] = wp.ceil(a)
    o[i, 4] = wp.round(a)
    o[i, 5] = wp.rint(a)
    o[i, 6] = wp.trunc(a)
    o[i, 7] = wp.frac(a)
    o[i, 8] = wp.sqrt(a)
    o[i, 9] = wp.cbrt(a)
    o[i, 10] = wp.exp(a)
    o[i, 11] = wp.log(a)
    o[i, 12] = wp.log2(a)
    o[i, 13] = wp.log10(a)
    o[i, 14] = wp.sin(a)
    o[i, 15] = wp.cos(a)
    o[i, 16] = wp.tan(a)
    o[i, 17] = wp.asin(u[i])
    o[i, 18] = wp.acos(u[i])
    o[i, 19] = wp.atan(a)
    o[i, 20] = wp.sinh(a)
    o[i, 21] = wp.cosh(a)
    o[i, 22] = wp.tanh(a)
    o[i, 23] = wp.degrees(a)
    o[i, 24] = wp.radians(a)
    o[i, 25] = wp.erf(a)
    o[i, 26] = wp.erfc(a)
    o[i, 27] = wp.erfinv(u[i])
    o[i, 28] = wp.erfcinv(u[i] + one)
    o[i, 29] = wp.step(a)
    o[i, 30] = wp.nonzero(a)
    o[i, 31] = -a
    o[i, 32] = wp.neg(a)
    o[i, 33] = wp.pow(a, b)
    o[i, 34] = wp.atan2(a, b)
    o[i, 35] = wp.min(a, b)
    o[i, 36] = wp.max(a, b)
    o[i, 37] = a + b
    o[i, 38] = a - b
    o[i, 39] = a * b
    o[i, 40] = a / b
    o[i, 41] = a % b
    o[i, 42] = a // b
    o[i, 43] = wp.copysign(a, b)
    o[i, 44] = wp.where(a < b, a, e)
    o[i, 45] = wp.min(b, a)
    o[i, 46] = wp.clamp(a, b, e)
    o[i, 47] = wp.lerp(a, b, e)
    o[i, 48] = wp.smoothstep(a, b, e)
    o[i, 49] = wp.div_approx(a, b)
    o[i, 50] = wp.pow(a, wp.floor(b))
    flags[i, 0] = wp.where(wp.isnan(a), one, zero)
    flags[i, 1] = wp.where(wp.isinf(a), one, zero)
    flags[i, 2] = wp.where(wp.isfinite(a), one, zero)


INT = ["abs", "sign", "min", "max", "clamp", "step", "nonzero", "add", "sub", "mul", "div",
       "mod", "floordiv", "neg", "bit_and", "bit_or", "bit_xor", "invert", "where",
       "bit_count"]


@wp.kernel
def k_int(x: wp.array(dtype=Any), y: wp.array(dtype=Any), z: wp.array(dtype=Any),
          o: wp.array2d(dtype=Any), counts: wp.array2d(dtype=int)):
    i = wp.tid()
    a = x[i]
    b = y[i]
    e = z[i]
    o[i, 0] = wp.abs(a)
    o[i, 1] = wp.sign(a)
    o[i, 2] = wp.min(a, b)
    o[i, 3] = wp.max(a, b)
    o[i, 4] = wp.clamp(a, b, e)
    o[i, 5] = wp.step(a)
    o[i, 6] = wp.nonzero(a)
    o[i, 7] = a + b
    o[i, 8] = a - b
    o[i, 9] = a * b
    o[i, 10] = a / b
    o[i, 11] = a % b
    o[i, 12] = a // b
    o[i, 13] = -a
    o[i, 14] = a & b
    o[i, 15] = a | b
    o[i, 16] = a ^ b
    o[i, 17] = ~a
    o[i, 18] = wp.where(a < b, a, e)
    counts[i, 0] = wp.bit_count(a)


# ---- vectors -----------------------------------------------------------------------------

VEC_S = ["dot2", "dot3", "dot4", "length2", "length3", "length4", "length_sq3", "length_sq4",
         "min4", "max4", "norm_l2", "dot6"]
VEC_U = ["argmin", "argmax"]
VEC3 = ["cross", "normalize3", "mul_vs", "mul_sv", "div_vs", "div_sv", "add", "sub", "neg",
        "cw_mul", "cw_div", "mod", "min", "max", "abs", "lerp", "div_approx"]
VEC2 = ["normalize2", "mul_vs", "div_sv", "lerp"]
VEC4 = ["normalize4", "mul_vs", "div_vs", "div_sv", "neg", "cw_div", "lerp"]


@wp.kernel
def k_vec(a2: wp.array(dtype=Any), b2: wp.array(dtype=Any), a3: wp.array(dtype=Any),
          b3: wp.array(dtype=Any), a4: wp.array(dtype=Any), b4: wp.array(dtype=Any),
          a6: wp.array(dtype=Any), b6: wp.array(dtype=Any), x: wp.array(dtype=Any),
          os: wp.array2d(dtype=Any), ou: wp.array2d(dtype=int), o2: wp.array2d(dtype=Any),
          o3: wp.array2d(dtype=Any), o4: wp.array2d(dtype=Any)):
    i = wp.tid()
    s = x[i]
    u = a3[i]
    v = b3[i]
    os[i, 0] = wp.dot(a2[i], b2[i])
    os[i, 1] = wp.dot(u, v)
    os[i, 2] = wp.dot(a4[i], b4[i])
    os[i, 3] = wp.length(a2[i])
    os[i, 4] = wp.length(u)
    os[i, 5] = wp.length(a4[i])
    os[i, 6] = wp.length_sq(u)
    os[i, 7] = wp.length_sq(a4[i])
    os[i, 8] = wp.min(a4[i])
    os[i, 9] = wp.max(a4[i])
    os[i, 10] = wp.norm_l2(u)
    os[i, 11] = wp.dot(a6[i], b6[i])
    ou[i, 0] = int(wp.argmin(a4[i]))
    ou[i, 1] = int(wp.argmax(a4[i]))
    o3[i, 0] = wp.cross(u, v)
    o3[i, 1] = wp.normalize(u)
    o3[i, 2] = u * s
    o3[i, 3] = s * u
    o3[i, 4] = u / s
    o3[i, 5] = s / u
    o3[i, 6] = u + v
    o3[i, 7] = u - v
    o3[i, 8] = -u
    o3[i, 9] = wp.cw_mul(u, v)
    o3[i, 10] = wp.cw_div(u, v)
    o3[i, 11] = u % v
    o3[i, 12] = wp.min(u, v)
    o3[i, 13] = wp.max(u, v)
    o3[i, 14] = wp.abs(u)
    o3[i, 15] = wp.lerp(u, v, s)
    o3[i, 16] = wp.div_approx(u, s)
    o2[i, 0] = wp.normalize(a2[i])
    o2[i, 1] = a2[i] * s
    o2[i, 2] = s / a2[i]
    o2[i, 3] = wp.lerp(a2[i], b2[i], s)
    o4[i, 0] = wp.normalize(a4[i])
    o4[i, 1] = a4[i] * s
    o4[i, 2] = a4[i] / s
    o4[i, 3] = s / a4[i]
    o4[i, 4] = -a4[i]
    o4[i, 5] = wp.cw_div(a4[i], b4[i])
    o4[i, 6] = wp.lerp(a4[i], b4[i], s)


# ---- matrices ----------------------------------------------------------------------------

MAT_S = ["det2", "det3", "det4", "trace3", "ddot3", "ddot4"]
MAT22 = ["inverse", "mul_mm", "transpose", "outer", "mul_ms", "div_ms", "diag", "add", "neg"]
MAT33 = ["inverse", "mul_mm", "transpose", "outer", "skew", "mul_ms", "mul_sm", "div_ms",
         "div_sm", "cw_mul", "cw_div", "diag", "sub", "lerp", "from_rows", "from_cols",
         "neg", "inverse_approx"]
MAT44 = ["inverse", "mul_mm", "transpose", "outer", "mul_ms", "lerp", "neg"]
MAT_V2 = ["mul_mv", "mul_vm"]
MAT_V3 = ["mul_mv", "mul_vm", "get_diag", "transform_point", "transform_vector"]
MAT_V4 = ["mul_mv", "mul_vm"]


@wp.kernel
def k_mat(m2: wp.array(dtype=Any), n2: wp.array(dtype=Any), m3: wp.array(dtype=Any),
          n3: wp.array(dtype=Any), m4: wp.array(dtype=Any), n4: wp.array(dtype=Any),
          a2: wp.array(dtype=Any), a3: wp.array(dtype=Any), b3: wp.array(dtype=Any),
          a4: wp.array(dtype=Any), x: wp.array(dtype=Any), os: wp.array2d(dtype=Any),
          o22: wp.array2d(dtype=Any), o33: wp.array2d(dtype=Any), o44: wp.array2d(dtype=Any),
          v2: wp.array2d(dtype=Any), v3: wp.array2d(dtype=Any), v4: wp.array2d(dtype=Any)):
    i = wp.tid()
    s = x[i]
    m = m3[i]
    n = n3[i]
    os[i, 0] = wp.determinant(m2[i])
    os[i, 1] = wp.determinant(m)
    os[i, 2] = wp.determinant(m4[i])
    os[i, 3] = wp.trace(m)
    os[i, 4] = wp.ddot(m, n)
    os[i, 5] = wp.ddot(m4[i], n4[i])
    o22[i, 0] = wp.inverse(m2[i])
    o22[i, 1] = m2[i] @ n2[i]
    o22[i, 2] = wp.transpose(m2[i])
    o22[i, 3] = wp.outer(a2[i], a2[i])
    o22[i, 4] = m2[i] * s
    o22[i, 5] = m2[i] / s
    o22[i, 6] = wp.diag(a2[i])
    o22[i, 7] = m2[i] + n2[i]
    o22[i, 8] = -m2[i]
    o33[i, 0] = wp.inverse(m)
    o33[i, 1] = m @ n
    o33[i, 2] = wp.transpose(m)
    o33[i, 3] = wp.outer(a3[i], b3[i])
    o33[i, 4] = wp.skew(a3[i])
    o33[i, 5] = m * s
    o33[i, 6] = s * m
    o33[i, 7] = m / s
    o33[i, 8] = s / m
    o33[i, 9] = wp.cw_mul(m, n)
    o33[i, 10] = wp.cw_div(m, n)
    o33[i, 11] = wp.diag(a3[i])
    o33[i, 12] = m - n
    o33[i, 13] = wp.lerp(m, n, s)
    o33[i, 14] = wp.matrix_from_rows(a3[i], b3[i], a3[i])
    o33[i, 15] = wp.matrix_from_cols(a3[i], b3[i], a3[i])
    o33[i, 16] = -m
    o33[i, 17] = wp.inverse_approx(m)
    o44[i, 0] = wp.inverse(m4[i])
    o44[i, 1] = m4[i] @ n4[i]
    o44[i, 2] = wp.transpose(m4[i])
    o44[i, 3] = wp.outer(a4[i], a4[i])
    o44[i, 4] = m4[i] * s
    o44[i, 5] = wp.lerp(m4[i], n4[i], s)
    o44[i, 6] = -m4[i]
    v2[i, 0] = m2[i] @ a2[i]
    v2[i, 1] = a2[i] @ m2[i]
    v3[i, 0] = m @ a3[i]
    v3[i, 1] = a3[i] @ m
    v3[i, 2] = wp.get_diag(m)
    v3[i, 3] = wp.transform_point(m4[i], a3[i])
    v3[i, 4] = wp.transform_vector(m4[i], a3[i])
    v4[i, 0] = m4[i] @ a4[i]
    v4[i, 1] = a4[i] @ m4[i]


# ---- quaternions, transforms and spatial vectors -----------------------------------------

QUAT_S = ["length", "dot", "axis_angle"]
QUAT_Q = ["from_axis_angle", "inverse", "mul", "mul_qs", "div_qs", "add", "neg", "normalize",
          "slerp", "rpy", "from_matrix33", "from_matrix44", "lerp"]
QUAT_V = ["rotate", "rotate_inv", "axis"]
QUAT_M = ["to_matrix"]


@wp.kernel
def k_quat(qa: wp.array(dtype=Any), qb: wp.array(dtype=Any), a3: wp.array(dtype=Any),
           ang: wp.array(dtype=Any), m3: wp.array(dtype=Any), m4: wp.array(dtype=Any),
           x: wp.array(dtype=Any), os: wp.array2d(dtype=Any), oq: wp.array2d(dtype=Any),
           ov: wp.array2d(dtype=Any), om: wp.array2d(dtype=Any)):
    i = wp.tid()
    q = qa[i]
    r = qb[i]
    v = a3[i]
    s = x[i]
    e = ang[i]
    axis = v
    angle = s
    wp.quat_to_axis_angle(q, axis, angle)
    os[i, 0] = wp.length(q)
    os[i, 1] = wp.dot(q, r)
    os[i, 2] = angle
    oq[i, 0] = wp.quat_from_axis_angle(v, s)
    oq[i, 1] = wp.quat_inverse(q)
    oq[i, 2] = q * r
    oq[i, 3] = q * s
    oq[i, 4] = q / s
    oq[i, 5] = q + r
    oq[i, 6] = -q
    oq[i, 7] = wp.normalize(q)
    oq[i, 8] = wp.quat_slerp(q, r, s)
    oq[i, 9] = wp.quat_rpy(e[0], e[1], e[2])
    oq[i, 10] = wp.quat_from_matrix(m3[i])
    oq[i, 11] = wp.quat_from_matrix(m4[i])
    oq[i, 12] = wp.lerp(q, r, s)
    ov[i, 0] = wp.quat_rotate(q, v)
    ov[i, 1] = wp.quat_rotate_inv(q, v)
    ov[i, 2] = axis
    om[i, 0] = wp.quat_to_matrix(q)


XFORM_T = ["multiply", "mul_op", "inverse", "from_matrix", "mul_ts"]
XFORM_V = ["point", "vector", "decompose_p", "decompose_s", "spatial_top", "spatial_bottom"]
XFORM_Q = ["decompose_q"]
XFORM_M = ["to_matrix", "compose"]
XFORM_S = ["spatial_dot"]
XFORM_6 = ["spatial_cross", "spatial_cross_dual", "neg", "adjoint_mul"]
XFORM_66 = ["spatial_adjoint"]


@wp.kernel
def k_xform(ta: wp.array(dtype=Any), tb: wp.array(dtype=Any), a3: wp.array(dtype=Any),
            b3: wp.array(dtype=Any), qa: wp.array(dtype=Any), m4: wp.array(dtype=Any),
            m3: wp.array(dtype=Any), n3: wp.array(dtype=Any), a6: wp.array(dtype=Any),
            b6: wp.array(dtype=Any), x: wp.array(dtype=Any), ot: wp.array2d(dtype=Any),
            ov: wp.array2d(dtype=Any), oq: wp.array2d(dtype=Any), om: wp.array2d(dtype=Any),
            os: wp.array2d(dtype=Any), o6: wp.array2d(dtype=Any), o66: wp.array2d(dtype=Any)):
    i = wp.tid()
    t = ta[i]
    u = tb[i]
    v = a3[i]
    p, q, scale = wp.transform_decompose(m4[i])
    ot[i, 0] = wp.transform_multiply(t, u)
    ot[i, 1] = t * u
    ot[i, 2] = wp.transform_inverse(t)
    ot[i, 3] = wp.transform_from_matrix(m4[i])
    ot[i, 4] = t * x[i]
    ov[i, 0] = wp.transform_point(t, v)
    ov[i, 1] = wp.transform_vector(t, v)
    ov[i, 2] = p
    ov[i, 3] = scale
    ov[i, 4] = wp.spatial_top(a6[i])
    ov[i, 5] = wp.spatial_bottom(a6[i])
    oq[i, 0] = q
    om[i, 0] = wp.transform_to_matrix(t)
    om[i, 1] = wp.transform_compose(v, qa[i], b3[i])
    os[i, 0] = wp.spatial_dot(a6[i], b6[i])
    o6[i, 0] = wp.spatial_cross(a6[i], b6[i])
    o6[i, 1] = wp.spatial_cross_dual(a6[i], b6[i])
    o6[i, 2] = -a6[i]
    o6[i, 3] = wp.spatial_adjoint(m3[i], n3[i]) @ b6[i]
    o66[i, 0] = wp.spatial_adjoint(m3[i], n3[i])


# ---- Warp's float32-only helpers (funcs of warp.math) ------------------------------------

F32_S = ["norm_l1", "norm_huber", "norm_pseudo_huber", "twist_angle", "twist_angle_signed",
         "randn", "randf", "pow_2", "pow_half", "pow_3", "pow_m1", "pow_base2", "pow_base10",
         "literal_mix", "sqrt_literal", "exp_neg"]
F32_V3 = ["smooth_normalize", "to_rpy", "to_euler", "velocity_at_point"]
F32_Q = ["from_euler", "twist"]
F32_6 = ["transform_twist", "transform_wrench"]


@wp.kernel
def k_f32(a3: wp.array(dtype=wp.vec3), qa: wp.array(dtype=wp.quat),
          ang: wp.array(dtype=wp.vec3), seq: wp.array2d(dtype=int),
          ta: wp.array(dtype=wp.transform), a6: wp.array(dtype=wp.spatial_vector),
          x: wp.array(dtype=float), os: wp.array2d(dtype=float),
          ov: wp.array2d(dtype=wp.vec3), oq: wp.array2d(dtype=wp.quat),
          o6: wp.array2d(dtype=wp.spatial_vector)):
    i = wp.tid()
    v = a3[i]
    q = qa[i]
    s = x[i]
    os[i, 0] = wp.norm_l1(v)
    os[i, 1] = wp.norm_huber(v, s)
    os[i, 2] = wp.norm_pseudo_huber(v, s)
    os[i, 3] = wp.quat_twist_angle(v, q)
    os[i, 4] = wp.quat_twist_angle_signed(v, q)
    state = wp.rand_init(1234, i)
    os[i, 5] = wp.randn(state)
    os[i, 6] = wp.randf(state, -2.0, 3.0)
    # Constant exponents and bases, which compilers may rewrite (x * x, sqrt, exp2).
    a = x[i]
    os[i, 7] = a ** 2.0
    os[i, 8] = wp.pow(a, 0.5)
    os[i, 9] = a ** 3.0
    os[i, 10] = wp.pow(a, -1.0)
    os[i, 11] = 2.0 ** a
    os[i, 12] = wp.pow(10.0, a)
    os[i, 13] = 0.5 * a + 1.0 - a / 3.0
    os[i, 14] = wp.sqrt(2.0) * a
    os[i, 15] = wp.exp(-a * a)
    ov[i, 0] = wp.smooth_normalize(v, s)
    ov[i, 1] = wp.quat_to_rpy(q)
    ov[i, 2] = wp.quat_to_euler(q, seq[i, 0], seq[i, 1], seq[i, 2])
    ov[i, 3] = wp.velocity_at_point(a6[i], v)
    oq[i, 0] = wp.quat_from_euler(ang[i], seq[i, 0], seq[i, 1], seq[i, 2])
    oq[i, 1] = wp.quat_twist(v, q)
    o6[i, 0] = wp.transform_twist(ta[i], a6[i])
    o6[i, 1] = wp.transform_wrench(ta[i], a6[i])


ATOMIC = ["add", "sub", "min", "max", "add_old", "min_old"]


@wp.kernel
def k_atomic(x: wp.array(dtype=Any), y: wp.array(dtype=Any), o: wp.array2d(dtype=Any)):
    # One thread per row: the read-modify-write results, not the ordering, are compared.
    i = wp.tid()
    o[i, 0] = x[i]
    o[i, 1] = x[i]
    o[i, 2] = x[i]
    o[i, 3] = x[i]
    wp.atomic_add(o, i, 0, y[i])
    wp.atomic_sub(o, i, 1, y[i])
    wp.atomic_min(o, i, 2, y[i])
    wp.atomic_max(o, i, 3, y[i])
    o[i, 4] = wp.atomic_add(o, i, 0, y[i])
    o[i, 5] = wp.atomic_min(o, i, 2, x[i])


# ---- inputs ------------------------------------------------------------------------------

SEQUENCES = [(i, j, k) for i in range(3) for j in range(3) for k in range(3)
             if i != j and j != k]
_SPECIAL = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e30, -1e30, 1e-30, -1e-40, 1e300, 1e-310,
            0.5, 1.5, 2.5, -0.5, -2.5, 3.0, -3.0, 1.0, -1.0, 65504.0, 100.0, -88.5, 710.0,
            1e-8, 2.0**24 + 1, 0.1, np.pi, -np.pi / 2, 1e5]


def _scalars(rng, n: int, low: float = -4.0, high: float = 4.0) -> np.ndarray:
    """Uniform in [low, high), with a quarter of the rows of any magnitude (1e-30 to 1e30,
    either sign) and a tenth halfway cases of rounding (k / 2)."""
    x = rng.uniform(low, high, n)
    x[np.abs(x) < 0.05] = 0.75
    wide = rng.random(n) < 0.25
    x[wide] = np.sign(x[wide]) * 10.0 ** rng.uniform(-30, 30, wide.sum())
    halves = rng.random(n) < 0.1
    x[halves] = np.round(x[halves] * 2) / 2
    return x


def _unit_quats(rng, n: int) -> np.ndarray:
    q = rng.standard_normal((n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _rotations(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], 1)


def _awkward_vectors(rng, a: np.ndarray) -> np.ndarray:
    """Random vectors with zero, signed-zero, NaN, huge and tiny rows mixed in; b nearly
    parallel to a in some rows (cancellation in cross products)."""
    n, k = a.shape
    a *= np.where(rng.random((n, 1)) < 0.2, 10.0 ** rng.uniform(-8, 8, (n, 1)), 1.0)
    a[0] = 0.0
    a[1] = -0.0
    a[2, 0] = np.nan
    a[3] *= 1e20
    a[4] *= 1e-20
    a[5, 1:] = 0.0
    a[6] = np.inf
    return a


def _awkward_matrices(rng, m: np.ndarray) -> np.ndarray:
    n, r, _ = m.shape
    m *= np.where(rng.random((n, 1, 1)) < 0.2, 10.0 ** rng.uniform(-8, 8, (n, 1, 1)), 1.0)
    m[0] = 0.0
    m[1, 1] = m[1, 0]  # two equal rows: singular
    m[2] = np.eye(r)
    m[3, 0, 0] = np.nan
    m[4] *= 1e15
    m[5] *= 1e-15
    m[6, -1] = m[6, 0] + 1e-7 * m[6, 1]  # nearly singular
    m[7] = np.diag(rng.uniform(-2, 2, r))
    m[8, :, 1] = -0.0
    return m


def make_inputs(n: int = N, seed: int = int(os.environ.get("KERNELC_BITEXACT_SEED", "5"))
                ) -> dict[str, np.ndarray]:
    """Inputs in float64 (each precision casts them); integer inputs by type."""
    rng = np.random.default_rng(seed)
    x, y, z = _scalars(rng, n), _scalars(rng, n), _scalars(rng, n)
    k = len(_SPECIAL)
    x[:k] = _SPECIAL
    y[k:2 * k] = _SPECIAL
    z[2 * k:2 * k + 6] = [0.0, -0.0, np.nan, np.inf, 1e-30, 1e30]
    near = slice(2 * k, 2 * k + 10)  # near-cancelling pairs: x - y, x + (-y), lerp ...
    y[near] = x[near] * (1 + rng.uniform(-1e-6, 1e-6, 10))
    y[2 * k + 10:2 * k + 14] = [0.0, -0.0, np.nan, np.inf]
    u = rng.uniform(-1, 1, n)
    u[:12] = [1.0, -1.0, 0.0, -0.0, np.nan, 1 + 1e-7, -1 - 1e-7, 1e-9, 0.999999, -0.9999999,
              0.5, 1e-30]
    s = _scalars(rng, n, 0.2, 3.0)
    s[:6] = [np.nan, 1e30, 1e-30, -1.5, 0.0, 1.0]
    vec = {f"a{d}": _awkward_vectors(rng, rng.uniform(-2, 2, (n, d))) for d in (2, 3, 4, 6)}
    for d in (2, 3, 4, 6):
        b = rng.uniform(-2, 2, (n, d))
        b[10:20] = vec[f"a{d}"][10:20] * (1 + rng.uniform(-1e-6, 1e-6, (10, d)))
        vec[f"b{d}"] = b
    mats = {}
    for d in (2, 3, 4):
        mats[f"m{d}"] = _awkward_matrices(rng, rng.uniform(-2, 2, (n, d, d)))
        mats[f"n{d}"] = rng.uniform(-2, 2, (n, d, d))
    qa, qb = _unit_quats(rng, n), _unit_quats(rng, n)
    qa[0] = [0.0, 0.0, 0.0, 0.0]
    qa[1] = [0.0, 0.0, 0.0, 1.0]
    qa[2] = [1.0, 0.0, 0.0, 0.0]  # a half turn: w == 0
    qa[3] *= 3.0  # not unit
    qa[4, 3] = -abs(qa[4, 3])
    qa[5, :3] *= 1e-4
    qa[5] /= np.linalg.norm(qa[5])
    qb[6], qb[7], qb[8] = qa[6], -qa[7], qa[8] + 1e-4
    rot_q = _unit_quats(rng, n)
    rot_q[:4] = [[0, 0, 0, 1], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]
    rot_q[4:8, 3] = 1e-3  # traces near -1: the other branches of quat_from_matrix
    rot_q /= np.linalg.norm(rot_q, axis=1, keepdims=True)
    rot3 = _rotations(rot_q)
    rot3[8:12] = rng.uniform(-1, 1, (4, 3, 3))  # not rotations at all
    scale3 = rng.uniform(0.5, 2.0, (n, 3))
    scale3[0] = [0.0, 1.0, 2.0]
    rot4 = np.zeros((n, 4, 4))
    rot4[:, :3, :3] = _rotations(_unit_quats(rng, n)) * scale3[:, None, :]
    rot4[:, :3, 3] = rng.uniform(-5, 5, (n, 3))
    rot4[:, 3, 3] = 1.0
    ta = np.concatenate([rng.uniform(-5, 5, (n, 3)), _unit_quats(rng, n)], 1)
    tb = np.concatenate([rng.uniform(-5, 5, (n, 3)), _unit_quats(rng, n)], 1)
    ang = np.stack([rng.uniform(-3, 3, n), rng.uniform(-1.5, 1.5, n), rng.uniform(-3, 3, n)], 1)
    ang[0] = [0.0, np.pi / 2, 0.0]
    axis = rng.standard_normal((n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    out = dict(x=x, y=y, z=z, u=u, s=s, qa=qa, qb=qb, rot3=rot3, rot4=rot4, ta=ta, tb=tb,
               ang=ang, axis=axis, scale3=scale3, **vec, **mats)
    out["seq"] = np.array([SEQUENCES[i % 12] for i in range(n)], np.int32)
    out["consts"] = np.zeros(n)
    out["consts"][1] = 1.0  # the kernels' typed 0 and 1
    for name in INT_TYPES:
        info = np.iinfo(name)
        a = rng.integers(info.min, info.max, n, endpoint=True)
        b = rng.integers(info.min, info.max, n, endpoint=True)
        c = rng.integers(info.min, info.max, n, endpoint=True)
        a[:16] = rng.integers(max(info.min, -20), 20, 16)
        b[:16] = rng.integers(max(info.min, -5), 5, 16)
        a[16:20] = [info.min, info.max, 0, 1]
        b[b == 0] = 3  # Warp (C) traps on x / 0 and on MIN / -1
        b[(a == info.min) & (b == -1)] = 7
        for key, value in (("x", a), ("y", b), ("z", c)):
            out[f"{name}_{key}"] = value.astype(name)
    return out


# ---- programs: run under kernelc here and under Warp in a subprocess ---------------------

_SUFFIX = {"float16": "h", "float32": "", "float64": "d"}


def _dtype(kind: str, p: str) -> Any:
    """The Warp type of an argument kind for precision `p` ("scalar": `p` itself)."""
    if kind in ("scalar", "int32"):
        return getattr(wp, p if kind == "scalar" else kind)
    return getattr(wp, kind + _SUFFIX[p])


# Each program: kernel, precisions, inputs (input name, kind) and outputs, by column label:
# (column names, kind). Columns are reported as "label.name" ("name" for the label "").
_SCALAR_IN = [(k, "scalar") for k in ("x", "y", "z", "u", "consts")]
_MAT_IN = [(f"{mn}{d}", f"mat{d}{d}") for d in (2, 3, 4) for mn in "mn"]
_XFORM_IN = ["ta:transform", "tb:transform", "a3:vec3", "scale3:vec3", "qa:quat",
             "rot4:mat44", "m3:mat33", "n3:mat33", "a6:spatial_vector", "b6:spatial_vector",
             "s:scalar"]
PROGRAMS = {
    "scalar": (k_scalar, PRECISIONS, _SCALAR_IN,
               {"": (SCALAR, "scalar"), "flag": (SCALAR_FLAGS, "scalar")}),
    "int": (k_int, INT_TYPES, _SCALAR_IN[:3], {"": (INT[:-1], "scalar"), "count": (INT[-1:],
                                                                                  "int32")}),
    "atomic": (k_atomic, ["float32", "float64"], _SCALAR_IN[:2], {"": (ATOMIC, "scalar")}),
    "vec": (k_vec, PRECISIONS,
            [(f"{ab}{d}", kind) for d, kind in ((2, "vec2"), (3, "vec3"), (4, "vec4"),
                                                 (6, "spatial_vector")) for ab in "ab"]
            + [("s", "scalar")],
            {"s": (VEC_S, "scalar"), "u": (VEC_U, "int32"), "v2": (VEC2, "vec2"),
             "v3": (VEC3, "vec3"), "v4": (VEC4, "vec4")}),
    "mat": (k_mat, PRECISIONS,
            _MAT_IN + [("a2", "vec2"), ("a3", "vec3"), ("b3", "vec3"), ("a4", "vec4"),
                       ("s", "scalar")],
            {"s": (MAT_S, "scalar"), "m22": (MAT22, "mat22"), "m33": (MAT33, "mat33"),
             "m44": (MAT44, "mat44"), "v2": (MAT_V2, "vec2"), "v3": (MAT_V3, "vec3"),
             "v4": (MAT_V4, "vec4")}),
    "quat": (k_quat, PRECISIONS,
             [("qa", "quat"), ("qb", "quat"), ("axis", "vec3"), ("ang", "vec3"),
              ("rot3", "mat33"), ("rot4", "mat44"), ("s", "scalar")],
             {"s": (QUAT_S, "scalar"), "q": (QUAT_Q, "quat"), "v": (QUAT_V, "vec3"),
              "m": (QUAT_M, "mat33")}),
    "xform": (k_xform, PRECISIONS, [tuple(a.split(":")) for a in _XFORM_IN],
              {"t": (XFORM_T, "transform"), "v": (XFORM_V, "vec3"), "q": (XFORM_Q, "quat"),
               "m": (XFORM_M, "mat44"), "s": (XFORM_S, "scalar"),
               "s6": (XFORM_6, "spatial_vector"), "s66": (XFORM_66, "spatial_matrix")}),
    "f32": (k_f32, ["float32"],
            [("axis", "vec3"), ("qa", "quat"), ("ang", "vec3"), ("seq", "int32"),
             ("ta", "transform"), ("a6", "spatial_vector"), ("x", "scalar")],
            {"s": (F32_S, "scalar"), "v": (F32_V3, "vec3"), "q": (F32_Q, "quat"),
             "s6": (F32_6, "spatial_vector")}),
}


def program_args(name: str, p: str) -> list:
    """Input arrays, then outputs filled with a value that differs between kernelc and Warp
    (so a column that one side leaves unwritten cannot pass)."""
    _, _, inputs, outputs = PROGRAMS[name]
    x = make_inputs()
    args = []
    for key, kind in inputs:
        data = x[f"{p}_{key}"] if p in INT_TYPES else x[key]
        if kind != "int32":
            with np.errstate(over="ignore"):  # huge inputs become infinities in float16
                data = data.astype(p)
        args.append(wp.array(data, dtype=_dtype(kind, p), device="cpu"))
    for names, kind in outputs.values():
        out = wp.empty((N, len(names)), dtype=_dtype(kind, p), device="cpu")
        out.numpy()[...] = 77 if wp.__name__ == "kernelc" else 55
        args.append(out)
    return args


def run_program(name: str, precision: str) -> dict[str, np.ndarray]:
    """The outputs of one kernel (or of the host program) for one precision, by column."""
    if name == "host":
        return run_host(precision)
    kernel, _, _, outputs = PROGRAMS[name]
    args = program_args(name, precision)
    wp.launch(kernel, dim=N, inputs=args, device="cpu")
    results = {}
    for (label, (names, _)), arr in zip(outputs.items(), args[-len(outputs):]):
        data = arr.numpy()
        for k, col in enumerate(names):
            results[f"{label}.{col}" if label else col] = data[:, k]
    return results


HOST_N = 8  # elements of the host program (each a few Python calls)


def _host_values(p: str, k: int) -> dict[str, Any]:
    x = make_inputs()

    def value(kind: str, key: str) -> Any:
        return _dtype(kind, p)(*x[key][k].astype(p).ravel().tolist())

    named = {"s": "s:scalar", "x": "x:scalar", "y": "y:scalar", "unit": "u:scalar",
             "v2": "a2:vec2", "v3": "a3:vec3", "w3": "b3:vec3", "v4": "a4:vec4",
             "m2": "m2:mat22", "m3": "m3:mat33", "n3": "n3:mat33", "m4": "m4:mat44",
             "n4": "n4:mat44", "q": "qa:quat", "r": "qb:quat", "t": "ta:transform",
             "u": "tb:transform", "rot": "rot3:mat33"}
    with np.errstate(over="ignore"):
        return {name: value(*reversed(spec.split(":"))) for name, spec in named.items()}


# Host expressions: Python operators and builtin calls on host values (Warp's values on
# the host run Warp's native builtins; kernelc's run the same code as its kernels).
HOST = {
    "mul_vs": lambda h: h["v3"] * h["s"], "mul_sv": lambda h: h["s"] * h["v3"],
    "div_vs": lambda h: h["v3"] / h["s"], "add_vv": lambda h: h["v3"] + h["w3"],
    "mul_v_literal": lambda h: h["v3"] * 2.5, "mul_literal_m": lambda h: 0.1 * h["m3"],
    "div_literal_v": lambda h: 3.0 / h["v3"], "mul_q_literal": lambda h: h["q"] * 0.3,
    "sub_vv": lambda h: h["v3"] - h["w3"], "neg_v": lambda h: -h["v3"],
    "mul_mv": lambda h: h["m3"] @ h["v3"], "mul_vm": lambda h: h["v3"] @ h["m3"],
    "mul_mm": lambda h: h["m3"] @ h["n3"], "mul_mm4": lambda h: h["m4"] @ h["n4"],
    "mul_mv4": lambda h: h["m4"] @ h["v4"], "mul_ms": lambda h: h["m3"] * h["s"],
    "mul_qq": lambda h: h["q"] * h["r"], "mul_tt": lambda h: h["t"] * h["u"],
    "normalize": lambda h: wp.normalize(h["v3"]), "normalize_q": lambda h: wp.normalize(h["q"]),
    "length": lambda h: wp.length(h["v3"]), "dot4": lambda h: wp.dot(h["v4"], h["v4"]),
    "cross": lambda h: wp.cross(h["v3"], h["w3"]), "inverse2": lambda h: wp.inverse(h["m2"]),
    "inverse3": lambda h: wp.inverse(h["m3"]), "inverse4": lambda h: wp.inverse(h["m4"]),
    "determinant4": lambda h: wp.determinant(h["m4"]),
    "quat_rotate": lambda h: wp.quat_rotate(h["q"], h["v3"]),
    "quat_from_matrix": lambda h: wp.quat_from_matrix(h["rot"]),
    "quat_slerp": lambda h: wp.quat_slerp(h["q"], h["r"], h["s"]),
    "transform_point": lambda h: wp.transform_point(h["t"], h["v3"]),
    "transform_inverse": lambda h: wp.transform_inverse(h["t"]),
    "sin": lambda h: wp.sin(h["x"]), "pow": lambda h: wp.pow(h["x"], h["y"]),
    "acos": lambda h: wp.acos(h["unit"]), "degrees": lambda h: wp.degrees(h["x"]),
    "min": lambda h: wp.min(h["x"], h["y"]), "atan2": lambda h: wp.atan2(h["x"], h["y"]),
}


def run_host(precision: str) -> dict[str, np.ndarray]:
    """Every host expression on HOST_N elements; one that fails gives no column."""
    values = [_host_values(precision, k) for k in range(HOST_N)]
    out = {}
    for name, expr in HOST.items():
        try:
            rows = [np.asarray(expr(h), dtype=precision).reshape(-1) for h in values]
        except Exception:  # noqa: BLE001 - Warp has no host form of some (type, builtin)
            continue
        out[name] = np.stack(rows)
    return out


def warp_cases() -> list[tuple[str, str]]:
    kernels = [(name, p) for name, (_, precisions, _, _) in PROGRAMS.items() for p in precisions]
    return kernels + [("host", p) for p in ("float32", "float64")]


_WARP_DRIVER = f"""
import importlib.util
import os
import sys
import traceback

sys.path.insert(0, {str(ROOT)!r})
os.environ["KERNELC_BITEXACT_MODULE"] = "warp"
spec = importlib.util.spec_from_file_location("bitexact_programs", {__file__!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
# Every overload declared before the first launch: Warp then builds the module once.
for name, precision in module.warp_cases():
    if name not in ("f32", "host"):
        args = module.program_args(name, precision)
        wp.overload(module.PROGRAMS[name][0],
                    [wp.array(dtype=a.dtype, ndim=a.ndim) for a in args])
for name, precision in module.warp_cases():
    try:
        outputs = module.run_program(name, precision)
    except Exception as err:
        traceback.print_exc()
        results[name + ":" + precision + ":error"] = np.array(repr(err))
    else:
        for key, value in outputs.items():
            results[name + ":" + precision + ":" + key] = value
"""


@pytest.fixture(scope="module")
def warp_results(tmp_path_factory) -> dict[str, dict[str, np.ndarray]]:
    """Every program's columns under Warp, by "program:precision" (one Warp process)."""
    from tests.conftest import run_warp

    flat = run_warp(_WARP_DRIVER, tmp_path_factory.mktemp("warp_bitexact"))
    out: dict[str, dict[str, np.ndarray]] = {}
    for key, value in flat.items():
        name, precision, column = key.split(":", 2)
        out.setdefault(f"{name}:{precision}", {})[column] = value
    return out


def _same_bits_each(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per component: the same bits, or both NaN (any payload)."""
    if a.dtype.kind != "f":
        return a == b
    bits = f"u{a.dtype.itemsize}"
    return (a.view(bits) == b.view(bits)) | (np.isnan(a) & np.isnan(b))


def same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row (first axis): every component has the same bits, or is NaN on both sides."""
    a, b = np.asarray(a), np.asarray(b)
    return _same_bits_each(a, b).reshape(len(a), -1).all(axis=1)


class Tolerance(typing.NamedTuple):
    """How a column may differ from Warp: relative error by precision (0: same bits), on
    the rows `rows` selects from the inputs (None: all), +-0.0 equal when `zero_sign`."""

    rtol: dict[str, float]
    rows: typing.Callable[[dict], np.ndarray] | None
    zero_sign: bool
    why: str


def _not_near_zero(x: dict) -> np.ndarray:
    return (np.abs(x["u"]) >= 1e-6) & (np.abs(x["u"] + 1) >= 1e-6)


_ERFINV = Tolerance(
    {"float16": 0.0, "float32": 1.2e-7, "float64": 1e-10}, _not_near_zero, True,
    "Warp's CPU erfinv is Cephes' ndtri((z + 1) / 2) / sqrt(2) in double (erfcinv(x) is "
    "erfinv(1 - x)): it loses the relative accuracy near z = 0 (erfinv(1e-30) is 0) and near "
    "|z| = 1 (4e-12 off at 0.999999), and gives +0.0 for -0.0; Warp's CUDA erfinv is another "
    "function again. kernelc's is correctly rounded in float32 and within an ulp in float64 "
    "on both backends; off those ranges the results agree to the last float32 bit.")
TOLERANT: dict[tuple[str, str], Tolerance] = {
    ("scalar", "erfinv"): _ERFINV,
    ("scalar", "erfcinv"): _ERFINV,
}


def _mismatches(name: str, column: str, precision: str, ours: np.ndarray,
                theirs: np.ndarray) -> np.ndarray:
    """Rows where kernelc and Warp differ by more than the column allows."""
    tol = TOLERANT.get((name, column))
    if tol is None or ours.dtype.kind != "f":
        return ~same_bits(ours, theirs)
    close = _same_bits_each(ours, theirs)
    a, b = ours.astype(np.float64), theirs.astype(np.float64)
    if tol.zero_sign:
        close |= a == b
    rtol = tol.rtol.get(precision, 0.0)
    if rtol:
        with np.errstate(invalid="ignore"):
            close |= np.abs(a - b) <= rtol * np.abs(b)
    bad = ~close.reshape(len(a), -1).all(axis=1)
    if tol.rows is not None:
        bad &= tol.rows(make_inputs())
    return bad


def _report(name: str, ours: np.ndarray, theirs: np.ndarray, bad: np.ndarray) -> str:
    i = int(np.flatnonzero(bad)[0])
    return (f"{name}: {int(bad.sum())}/{len(bad)} differ, e.g. row {i}: kernelc "
            f"{ours[i].tolist()} Warp {theirs[i].tolist()}")


@pytest.mark.parametrize("name, precision", warp_cases())
def test_builtins_match_warp_bit_for_bit(name, precision, warp_results):
    warp = warp_results[f"{name}:{precision}"]
    assert "error" not in warp, f"Warp failed: {warp.get('error')}"
    ours = run_program(name, precision)
    if name == "host":  # Warp has no host form of a few builtins for some types
        assert set(warp) <= set(ours)
    else:
        assert sorted(ours) == sorted(warp)
    problems = []
    for column, theirs in warp.items():
        bad = _mismatches(name, column, precision, ours[column], theirs)
        if bad.any():
            problems.append(_report(column, ours[column], theirs, bad))
    assert not problems, "\n".join(problems)
