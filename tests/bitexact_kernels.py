"""The kernels of the Warp bit-exactness suite (`tests/test_warp_bitexact.py`), written as
Warp programs (`wp.*`): one kernel per group of builtins (scalar math, integers, vectors,
matrices, quaternions, transforms and spatial vectors, Warp's float32-only helpers, atomics).

They run twice from the same source: under kernelc with `wp` = kernelc, and in a Warp
subprocess that imports this module with KERNELC_BITEXACT_MODULE=warp. Each kernel writes
one column per builtin; the lists next to the kernels name the columns, in order.
"""

# No `from __future__ import annotations`: Warp reads kernel annotations as objects.

import importlib
import os
import typing

wp = importlib.import_module(os.environ.get("KERNELC_BITEXACT_MODULE", "kernelc"))
Any = typing.Any

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
VEC_U = ["argmin", "argmax", "isnan3", "isinf3", "isfinite3", "isnan4", "isfinite_m33",
         "isinf_q"]
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
    ou[i, 2] = int(wp.isnan(u))
    ou[i, 3] = int(wp.isinf(u))
    ou[i, 4] = int(wp.isfinite(u))
    ou[i, 5] = int(wp.isnan(a4[i]))
    ou[i, 6] = int(wp.isfinite(wp.outer(u, v)))
    ou[i, 7] = int(wp.isinf(wp.quaternion(u, s)))
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


ATOMIC = ["add", "sub", "min", "max", "add_old", "min_old", "min_z", "max_z"]


@wp.kernel
def k_atomic(x: wp.array(dtype=Any), y: wp.array(dtype=Any), z: wp.array(dtype=Any),
             o: wp.array2d(dtype=Any)):
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
    # z holds NaN, infinities and signed zeros: a NaN in memory gives way, as fmin/fmax do
    o[i, 6] = z[i]
    o[i, 7] = z[i]
    wp.atomic_min(o, i, 6, y[i])
    wp.atomic_max(o, i, 7, x[i])
