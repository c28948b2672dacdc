"""Small differentiable Warp programs, run under Warp and under kernelc to compare gradients.

`wp` is kernelc, or Warp when KERNELC_AUTODIFF_MODULE=warp (the Warp side imports this
file in a subprocess, so that Warp reads the kernels' source and builds one module). The
cases that launch them are in `tests/autodiff_cases.py`.

Kernels that take `Any` are declared for float32 and float64 (`wp.overload`) before the
first launch, so Warp compiles its module once. Constants inside generic kernels come from
arrays (a Python float literal is float32 in Warp).
"""

# No `from __future__ import annotations`: Warp reads kernel annotations as objects.

import importlib
import os
import typing

wp = importlib.import_module(os.environ.get("KERNELC_AUTODIFF_MODULE", "kernelc"))
Any = typing.Any
N = 8  # threads per case

# ---- scalar builtins: one column of inputs per builtin, so each gradient stands alone ----

# (name, (low, high)) for the input of each column of k_unary
UNARY = [("sin", (-3, 3)), ("cos", (-3, 3)), ("tan", (-1.2, 1.2)), ("asin", (-0.9, 0.9)),
         ("acos", (-0.9, 0.9)), ("atan", (-4, 4)), ("sinh", (-2, 2)), ("cosh", (-2, 2)),
         ("tanh", (-2, 2)), ("exp", (-2, 2)), ("log", (0.1, 4)), ("log2", (0.1, 4)),
         ("log10", (0.1, 4)), ("sqrt", (0.1, 4)), ("cbrt", (-4, 4)), ("abs", (-4, 4)),
         ("floor", (-4, 4)), ("ceil", (-4, 4)), ("round", (-4, 4)), ("trunc", (-4, 4)),
         ("frac", (-4, 4)), ("sign", (-4, 4)), ("neg", (-4, 4)), ("square", (-4, 4)),
         ("recip", (-4, 4)), ("degrees", (-4, 4)), ("radians", (-4, 4)), ("erf", (-2, 2)),
         ("erfc", (-2, 2)), ("erfinv", (-0.9, 0.9)), ("erfcinv", (0.1, 1.9)), ("step", (-4, 4)),
         ("pow_int", (-2, 2)), ("sqrt_abs", (-4, 4))]


@wp.kernel
def k_unary(x: wp.array2d(dtype=Any), w: wp.array2d(dtype=Any), loss: wp.array(dtype=Any)):
    i = wp.tid()
    s = w[i, 0] * wp.sin(x[i, 0])
    s += w[i, 1] * wp.cos(x[i, 1])
    s += w[i, 2] * wp.tan(x[i, 2])
    s += w[i, 3] * wp.asin(x[i, 3])
    s += w[i, 4] * wp.acos(x[i, 4])
    s += w[i, 5] * wp.atan(x[i, 5])
    s += w[i, 6] * wp.sinh(x[i, 6])
    s += w[i, 7] * wp.cosh(x[i, 7])
    s += w[i, 8] * wp.tanh(x[i, 8])
    s += w[i, 9] * wp.exp(x[i, 9])
    s += w[i, 10] * wp.log(x[i, 10])
    s += w[i, 11] * wp.log2(x[i, 11])
    s += w[i, 12] * wp.log10(x[i, 12])
    s += w[i, 13] * wp.sqrt(x[i, 13])
    s += w[i, 14] * wp.cbrt(x[i, 14])
    s += w[i, 15] * wp.abs(x[i, 15])
    s += w[i, 16] * wp.floor(x[i, 16])
    s += w[i, 17] * wp.ceil(x[i, 17])
    s += w[i, 18] * wp.round(x[i, 18])
    s += w[i, 19] * wp.trunc(x[i, 19])
    s += w[i, 20] * wp.frac(x[i, 20])
    s += w[i, 21] * wp.sign(x[i, 21])
    s += w[i, 22] * (-x[i, 22])
    s += w[i, 23] * (x[i, 23] * x[i, 23])
    s += w[i, 24] / x[i, 24]
    s += w[i, 25] * wp.degrees(x[i, 25])
    s += w[i, 26] * wp.radians(x[i, 26])
    s += w[i, 27] * wp.erf(x[i, 27])
    s += w[i, 28] * wp.erfc(x[i, 28])
    s += w[i, 29] * wp.erfinv(x[i, 29])
    s += w[i, 30] * wp.erfcinv(x[i, 30])
    s += w[i, 31] * wp.step(x[i, 31])
    s += w[i, 32] * (x[i, 32] * x[i, 32] * x[i, 32])
    s += w[i, 33] * wp.sqrt(wp.abs(x[i, 33]))
    wp.atomic_add(loss, 0, s)


# (name, (x low, high), (y low, high), (z low, high)) for each column of k_binary
BINARY = [("add", (-4, 4), (-4, 4)), ("sub", (-4, 4), (-4, 4)), ("mul", (-4, 4), (-4, 4)),
          ("div", (-4, 4), (-4, 4)), ("pow", (0.2, 3), (-2, 2)), ("atan2", (-4, 4), (-4, 4)),
          ("min", (-4, 4), (-4, 4)), ("max", (-4, 4), (-4, 4)), ("mod", (-4, 4), (0.3, 2)),
          ("clamp", (-2, 2), (-1.5, -0.2), (0.2, 1.5)), ("lerp", (-4, 4), (-4, 4), (0, 1)),
          ("smoothstep", (-1, -0.1), (0.1, 1), (-1.2, 1.2)), ("copysign", (-4, 4), (-4, 4)),
          ("where", (-4, 4), (-4, 4), (-4, 4)), ("ternary", (-4, 4), (-4, 4), (-4, 4)),
          ("muladd", (-4, 4), (-4, 4), (-4, 4))]


@wp.kernel
def k_binary(x: wp.array2d(dtype=Any), y: wp.array2d(dtype=Any), z: wp.array2d(dtype=Any),
             w: wp.array2d(dtype=Any), loss: wp.array(dtype=Any)):
    i = wp.tid()
    s = w[i, 0] * (x[i, 0] + y[i, 0])
    s += w[i, 1] * (x[i, 1] - y[i, 1])
    s += w[i, 2] * (x[i, 2] * y[i, 2])
    s += w[i, 3] * (x[i, 3] / y[i, 3])
    s += w[i, 4] * wp.pow(x[i, 4], y[i, 4])
    s += w[i, 5] * wp.atan2(x[i, 5], y[i, 5])
    s += w[i, 6] * wp.min(x[i, 6], y[i, 6])
    s += w[i, 7] * wp.max(x[i, 7], y[i, 7])
    s += w[i, 8] * wp.mod(x[i, 8], y[i, 8])
    s += w[i, 9] * wp.clamp(x[i, 9], y[i, 9], z[i, 9])
    s += w[i, 10] * wp.lerp(x[i, 10], y[i, 10], z[i, 10])
    s += w[i, 11] * wp.smoothstep(x[i, 11], y[i, 11], z[i, 11])
    s += w[i, 12] * wp.copysign(x[i, 12], y[i, 12])
    s += w[i, 13] * wp.where(x[i, 13] < y[i, 13], y[i, 13] * z[i, 13], x[i, 13])
    s += w[i, 14] * (z[i, 14] * x[i, 14] if x[i, 14] > y[i, 14] else y[i, 14])
    s += w[i, 15] * (x[i, 15] * y[i, 15] + z[i, 15])
    wp.atomic_add(loss, 0, s)


for _t in (wp.float32, wp.float64):
    wp.overload(k_unary, [wp.array2d(dtype=_t), wp.array2d(dtype=_t), wp.array(dtype=_t)])
    wp.overload(k_binary, [wp.array2d(dtype=_t)] * 4 + [wp.array(dtype=_t)])

# ---- vectors, matrices, quaternions, transforms ------------------------------------------

VEC3 = ["dot", "cross", "length", "length_sq", "normalize", "normalize_zero", "cw_mul",
        "cw_div", "div_s", "mul_s", "min", "max", "neg_add", "outer", "index", "sub_abs",
        "lerp", "vec_ctor"]


@wp.kernel
def k_vec3(a: wp.array2d(dtype=wp.vec3), b: wp.array2d(dtype=wp.vec3),
           c: wp.array2d(dtype=wp.vec3), loss: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.dot(a[i, 0], b[i, 0]) * c[i, 0][0]
    s += wp.dot(wp.cross(a[i, 1], b[i, 1]), c[i, 1])
    s += wp.length(a[i, 2]) * c[i, 2][1]
    s += wp.length_sq(a[i, 3]) * c[i, 3][2]
    s += wp.dot(wp.normalize(a[i, 4]), c[i, 4])
    s += wp.dot(wp.normalize(a[i, 5] * 0.0), c[i, 5]) + wp.dot(b[i, 5], c[i, 5])
    s += wp.dot(wp.cw_mul(a[i, 6], b[i, 6]), c[i, 6])
    s += wp.dot(wp.cw_div(a[i, 7], b[i, 7]), c[i, 7])
    s += wp.dot(a[i, 8] / b[i, 8][0], c[i, 8])
    s += wp.dot(b[i, 9][1] * a[i, 9] * 2.0, c[i, 9])
    s += wp.dot(wp.min(a[i, 10], b[i, 10]), c[i, 10])
    s += wp.dot(wp.max(a[i, 11], b[i, 11]), c[i, 11])
    s += wp.dot(-a[i, 12] + b[i, 12], c[i, 12])
    s += wp.dot(wp.outer(a[i, 13], b[i, 13]) * c[i, 13], c[i, 13])
    s += a[i, 14][1] * b[i, 14][2] - a[i, 14].x * c[i, 14].z
    s += wp.length(a[i, 15] - b[i, 15]) * wp.abs(c[i, 15][0])
    s += wp.dot(wp.lerp(a[i, 16], b[i, 16], c[i, 16][0]), c[i, 16])
    v = wp.vec3(a[i, 17][0] * b[i, 17][1], wp.sin(a[i, 17][2]), c[i, 17][1])
    s += wp.dot(v, v)
    wp.atomic_add(loss, 0, s)


@wp.kernel
def k_vec24(a: wp.array(dtype=wp.vec2), b: wp.array(dtype=wp.vec2), p: wp.array(dtype=wp.vec4),
            q: wp.array(dtype=wp.vec4), loss: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.dot(a[i], b[i]) + wp.length(a[i]) * wp.dot(wp.normalize(b[i]), a[i])
    s += wp.dot(p[i], q[i]) * wp.length(q[i])
    s += wp.dot(wp.normalize(p[i]), q[i]) + wp.length_sq(p[i] - q[i]) * p[i][3]
    s += wp.dot(wp.outer(a[i], b[i]) * a[i], b[i]) + wp.dot(wp.outer(p[i], q[i]) * q[i], p[i])
    wp.atomic_add(loss, 0, s)


@wp.kernel
def k_mat33(m: wp.array2d(dtype=wp.mat33), n: wp.array2d(dtype=wp.mat33),
            v: wp.array2d(dtype=wp.vec3), loss: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.ddot(m[i, 0] * n[i, 0], n[i, 0])
    s += wp.dot(wp.transpose(m[i, 1]) * v[i, 1], v[i, 1]) + m[i, 1][0, 2] * n[i, 1][2, 1]
    s += wp.determinant(m[i, 2]) * v[i, 2][0]
    s += wp.ddot(wp.inverse(m[i, 3]), n[i, 3])
    s += wp.dot(m[i, 4] * v[i, 4], wp.mul(v[i, 4], n[i, 4]))
    s += wp.trace(m[i, 5] + n[i, 5] * 2.0) * wp.length(v[i, 5])
    s += wp.ddot(wp.outer(v[i, 6], v[i, 6]) - m[i, 6], m[i, 6])
    r = wp.mat33(v[i, 7][0], m[i, 7][0, 1], 1.0, 0.0, v[i, 7][1], 2.0, n[i, 7][2, 2], 0.0,
                 v[i, 7][2])
    s += wp.determinant(r) + wp.ddot(r, m[i, 7])
    wp.atomic_add(loss, 0, s)


@wp.kernel
def k_mat24(a: wp.array(dtype=wp.mat22), b: wp.array(dtype=wp.mat22),
            p: wp.array(dtype=wp.mat44), q: wp.array(dtype=wp.mat44),
            loss: wp.array(dtype=float)):
    i = wp.tid()
    s = wp.determinant(a[i]) + wp.ddot(wp.inverse(a[i]), b[i]) + wp.ddot(a[i] * b[i], b[i])
    s += wp.determinant(p[i]) * 0.1 + wp.ddot(wp.inverse(p[i]), q[i])
    s += wp.ddot(wp.transpose(p[i]) * q[i], p[i])
    wp.atomic_add(loss, 0, s)


@wp.kernel
def k_quat(q: wp.array(dtype=wp.quat), r: wp.array(dtype=wp.quat), v: wp.array(dtype=wp.vec3),
           axis: wp.array(dtype=wp.vec3), angle: wp.array(dtype=float),
           loss: wp.array(dtype=float)):
    i = wp.tid()
    qn = wp.normalize(q[i])
    s = wp.dot(wp.quat_rotate(qn, v[i]), axis[i])
    s += wp.dot(wp.quat_rotate_inv(q[i], v[i]), v[i])
    h = wp.quat_from_axis_angle(wp.normalize(axis[i]), angle[i])
    s += wp.dot(h, r[i])
    s += wp.dot(wp.mul(q[i], r[i]), wp.quat_inverse(r[i]))
    m = wp.quat_to_matrix(qn)
    s += wp.dot(m * v[i], axis[i]) + q[i].w * r[i][1]
    wp.atomic_add(loss, 0, s)


@wp.kernel
def k_transform(t: wp.array(dtype=wp.transform), u: wp.array(dtype=wp.transform),
                p: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
    i = wp.tid()
    tn = wp.transform(wp.transform_get_translation(t[i]),
                      wp.normalize(wp.transform_get_rotation(t[i])))
    s = wp.dot(wp.transform_point(tn, p[i]), p[i])
    s += wp.dot(wp.transform_vector(u[i], p[i]), wp.vec3(1.0, 2.0, 3.0))
    w = wp.transform_multiply(tn, u[i])
    s += wp.length(wp.transform_point(wp.transform_inverse(w), p[i]))
    wp.atomic_add(loss, 0, s)


# ---- structs, funcs, control flow ----------------------------------------------------------


@wp.struct
class Params:
    x: wp.array(dtype=float)
    y: wp.array(dtype=wp.vec3)
    scale: float


@wp.kernel
def k_struct(p: Params, loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, p.scale * p.x[i] * wp.length(p.y[i]) + wp.sin(p.x[i]))


@wp.func
def params_of(x: wp.array(dtype=float), y: wp.array(dtype=wp.vec3), scale: float):
    p = Params()
    p.x = x
    p.y = y
    p.scale = scale
    return p, scale * 2.0


@wp.func
def either(x: wp.array(dtype=float), z: wp.array(dtype=float), i: int):
    if i % 2 == 0:
        return x
    return z


@wp.kernel
def k_struct_built(x: wp.array(dtype=float), y: wp.array(dtype=wp.vec3),
                   z: wp.array(dtype=float), loss: wp.array(dtype=float)):
    """Structs of arrays built in the kernel and in funcs, and arrays returned by funcs:
    gradients flow through them to the arrays they were built from."""
    i = wp.tid()
    q = Params()
    q.x = z
    q.y = y
    q.scale = 0.5
    p, c = params_of(either(x, z, i), y, 1.5)
    wp.atomic_add(loss, 0, p.scale * p.x[i] * wp.length(p.y[i]) * c + q.x[i] * q.x[i] * q.scale)


@wp.kernel
def k_struct_fields(m: wp.array(dtype=float), v: wp.array(dtype=wp.vec3),
                    loss: wp.array(dtype=float)):
    """A struct holding an array built in the kernel: gradients flow through its value
    fields (set by the constructor and by assignment) to the arrays they came from."""
    i = wp.tid()
    s = Params(m, v, m[i] * 2.0)
    s.scale = s.scale * m[i] + wp.length(s.y[i])
    u = v[i] * s.scale + wp.vec3(s.x[i])
    wp.atomic_add(loss, 0, wp.dot(u, u))


@wp.kernel
def k_store_through(p: Params, y: wp.array(dtype=float), z: wp.array(dtype=float)):
    """Stores through a struct field, an alias of one and a view consume their gradients."""
    i = wp.tid()
    p.x[i] = y[i] * 3.0
    ys = p.y
    ys[i] = wp.vec3(y[i], 0.0, 1.0)
    z[1:][i] = wp.sin(y[i])


@wp.kernel
def k_store_loss(p: Params, z: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, p.x[i] * p.x[i] + wp.length_sq(p.y[i]) + z[i + 1] * 2.0)


@wp.func
def piecewise(x: float):
    if x < -1.0:
        return x * x
    if x > 1.0:
        return wp.sin(x) * 3.0
    return 2.0 * x + wp.exp(x)


@wp.func
def polar(x: float, y: float):
    return wp.sqrt(x * x + y * y), wp.atan2(y, x)


@wp.func
def nested(x: float, y: float):
    r, t = polar(x, y)
    return piecewise(r * t) * r


@wp.kernel
def k_funcs(x: wp.array(dtype=float), y: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    r, t = polar(x[i], y[i])
    wp.atomic_add(loss, 0, piecewise(x[i] * 2.0) + r * t + nested(y[i], x[i]))


@wp.kernel
def k_branches(x: wp.array(dtype=float), y: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    a = x[i]
    b = y[i]
    if a > b:
        c = a * b
        if a > 0.0:
            c = c * a
        else:
            c = c + wp.sin(b)
    elif a < -1.0:
        c = b * b
    else:
        c = wp.exp(a) - b
    d = wp.where(c > 0.0, c * c, -c)
    e = b if d > 1.0 else a * b
    wp.atomic_add(loss, 0, c + d + e)


@wp.kernel
def k_loops(x: wp.array(dtype=float), a: wp.array(dtype=float), n: int,
            loss: wp.array(dtype=float)):
    i = wp.tid()
    s = float(0.0)
    for j in range(4):  # static, linear
        s += x[i] * a[j]
    p = x[i]
    for j in range(3):  # static, carried and nonlinear
        p = wp.sin(p) * a[j] + p
    t = float(0.0)
    for j in range(n):  # dynamic, linear accumulation
        t += a[j] * x[i] * x[i]
    wp.atomic_add(loss, 0, s + p + t)


@wp.kernel
def k_dyn_product(x: wp.array(dtype=Any), a: wp.array(dtype=Any), n: int,
                  loss: wp.array(dtype=Any)):
    i = wp.tid()
    p = x[i]
    for j in range(n):  # dynamic, carried and nonlinear
        p = p * a[j]
    wp.atomic_add(loss, 0, p)


@wp.kernel
def k_dyn_sin(x: wp.array(dtype=Any), a: wp.array(dtype=Any), n: int,
              loss: wp.array(dtype=Any)):
    i = wp.tid()
    p = x[i]
    for j in range(n):
        p = wp.sin(p) + a[j]
    wp.atomic_add(loss, 0, p)


@wp.kernel
def k_while(x: wp.array(dtype=Any), a: wp.array(dtype=Any), n: int,
            loss: wp.array(dtype=Any)):
    i = wp.tid()
    p = x[i]
    k = int(0)
    while k < n:
        p = p * a[k]
        k += 1
    wp.atomic_add(loss, 0, p)


@wp.kernel
def k_dyn_used_after(x: wp.array(dtype=Any), a: wp.array(dtype=Any), n: int,
                     loss: wp.array(dtype=Any)):
    i = wp.tid()
    s = a[0] - a[0]
    for j in range(n):  # dynamic, linear; the sum is used after the loop
        s = s + a[j]
    wp.atomic_add(loss, 0, s * x[i])


for _t in (wp.float32, wp.float64):
    for _k in (k_dyn_product, k_dyn_sin, k_while, k_dyn_used_after):
        wp.overload(_k, [wp.array(dtype=_t), wp.array(dtype=_t), int, wp.array(dtype=_t)])


@wp.kernel
def k_break_continue(x: wp.array(dtype=Any), a: wp.array(dtype=Any), c: wp.array(dtype=Any),
                     n: int, loss: wp.array(dtype=Any)):
    i = wp.tid()
    s = c[0]  # 0; c[1] is the threshold of the break
    for j in range(n):
        if a[j] < c[0]:
            continue
        s += a[j] * x[i]
        if s > c[1]:
            break
    for j in range(4):
        if j == 2:
            continue
        s += a[j] * a[j]
    wp.atomic_add(loss, 0, s)


for _t in (wp.float32, wp.float64):
    wp.overload(k_break_continue, [wp.array(dtype=_t)] * 3 + [int, wp.array(dtype=_t)])


@wp.kernel
def k_linalg(v: wp.array(dtype=Any), m: wp.array(dtype=Any), q: wp.array(dtype=Any),
             loss: wp.array(dtype=Any)):
    i = wp.tid()
    s = wp.dot(wp.normalize(v[i]), m[i] * v[i]) + wp.determinant(wp.inverse(m[i]))
    s += wp.length(wp.cross(v[i], m[i][0])) * wp.trace(wp.transpose(m[i]) * m[i])
    s += wp.dot(wp.quat_rotate(wp.normalize(q[i]), v[i]), m[i][1])
    s += wp.ddot(wp.outer(v[i], m[i][2]), m[i])
    wp.atomic_add(loss, 0, s)


wp.overload(k_linalg, [wp.array(dtype=wp.vec3), wp.array(dtype=wp.mat33),
                       wp.array(dtype=wp.quat), wp.array(dtype=wp.float32)])
wp.overload(k_linalg, [wp.array(dtype=wp.vec3d), wp.array(dtype=wp.mat33d),
                       wp.array(dtype=wp.quatd), wp.array(dtype=wp.float64)])


# ---- atomics, 2-D launches, repeated reads, written-then-read arrays, chains ------------


@wp.kernel
def k_atomics(x: wp.array(dtype=float), y: wp.array(dtype=float), total: wp.array(dtype=float),
              lo: wp.array(dtype=float), hi: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(total, 0, x[i] * y[i])
    wp.atomic_sub(total, 0, wp.sin(y[i]))
    wp.atomic_min(lo, 0, x[i] * 2.0)
    wp.atomic_max(hi, 0, y[i] * x[i])


@wp.kernel
def k_atomic_nan(lo: wp.array(dtype=float), hi: wp.array(dtype=float),
                 value: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.atomic_min(lo, i, value[i]) + wp.atomic_max(hi, i, value[i])


@wp.kernel
def k_atomic_vec(v: wp.array(dtype=wp.vec3), m: wp.array(dtype=wp.mat22),
                 lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.mat22)):
    i = wp.tid()
    wp.atomic_min(lo, 0, v[i] * 2.0)
    wp.atomic_max(hi, 0, m[i])


@wp.kernel
def k_combine(total: wp.array(dtype=float), lo: wp.array(dtype=float),
              hi: wp.array(dtype=float), loss: wp.array(dtype=float)):
    loss[0] = total[0] + 3.0 * lo[0] - 2.0 * hi[0] * hi[0]


@wp.kernel
def k_grid(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float), loss: wp.array(dtype=float)):
    i, j = wp.tid()
    wp.atomic_add(loss, 0, x[i, j] * y[j, i] + wp.cos(x[i, j]) * y[i, j])


@wp.kernel
def k_reads(x: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    n = x.shape[0]
    v = x[i] * x[i] + x[(i + 1) % n] * wp.sin(x[i]) - x[(i + n - 1) % n]
    wp.atomic_add(loss, 0, v * x[i])


@wp.kernel
def k_square_into(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i] + wp.sin(x[i])


@wp.kernel
def k_write_read(x: wp.array(dtype=float), y: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * 3.0
    wp.atomic_add(loss, 0, y[i] * x[i])


@wp.kernel
def k_sum_sq(y: wp.array(dtype=float), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, y[i] * y[i] * float(i + 1))


@wp.kernel
def k_scale_vec(x: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), s: float,
                out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = v[i] * x[i] * s


@wp.kernel
def k_vec_loss(v: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, wp.length(v[i]))


# ---- components, casts, reversed ranges, arrays of structs, 3-D arrays --------------------


@wp.kernel
def k_components(a: wp.array(dtype=wp.vec3), s: wp.array(dtype=float),
                 idx: wp.array(dtype=int), loss: wp.array(dtype=float)):
    i = wp.tid()
    v = a[i]
    v[0] = v[1] * s[i]  # a component written with a constant index
    k = idx[i]
    v[k] = v[k] * 2.0 + s[i]  # read and written with a dynamic index
    m = wp.mat22(v[0], v[1], v[2], s[i])
    m[1, 0] = m[0, 1] * v[k]
    v.z += m[1, 1]
    wp.atomic_add(loss, 0, wp.dot(v, v) + wp.determinant(m))


@wp.func
def horner(c: wp.array(dtype=float), n: int, x: float):
    r = float(0.0)
    for j in range(n - 1, -1, -1):  # a reversed dynamic range in a func
        r = r * x + c[j]
    return r


@wp.kernel
def k_cast_reverse(x: wp.array(dtype=wp.float64), y: wp.array(dtype=float),
                   c: wp.array(dtype=float), n: int, loss: wp.array(dtype=float)):
    i = wp.tid()
    xf = float(x[i])  # float64 -> float32
    t = float(0.0)
    for j in range(5, 0, -2):  # a reversed static range
        t += c[j] * xf
    q = float(int(y[i] * 3.0))  # through an int: no gradient
    wp.atomic_add(loss, 0, horner(c, n, y[i]) * xf + t + q * y[i] + float(x[i] * x[i]))


@wp.struct
class Body:
    pos: wp.vec3
    mass: float


@wp.kernel
def k_struct_array(bodies: wp.array(dtype=Body), loss: wp.array(dtype=float)):
    i = wp.tid()
    b = bodies[i]
    wp.atomic_add(loss, 0, b.mass * wp.length_sq(b.pos) + wp.sin(b.mass))


@wp.kernel
def k_grid3(x: wp.array3d(dtype=float), v: wp.array2d(dtype=wp.vec2),
            acc: wp.array(dtype=wp.vec2)):
    i, j, k = wp.tid()
    wp.atomic_add(acc, k, v[i, j] * x[i, j, k] * x[j, i, k])


@wp.kernel
def k_vec_norms(acc: wp.array(dtype=wp.vec2), loss: wp.array(dtype=float)):
    k = wp.tid()
    wp.atomic_add(loss, 0, wp.length(acc[k]) * float(k + 1))


# The rest of the programs (loops, early return, half precision) are in their own file.
from tests.autodiff_programs_loops import k_early_vec, k_half, k_nested, k_pair  # noqa: E402,F401
