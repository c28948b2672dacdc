"""Warp-style kernels, part 2: random numbers, multi-dimensional launches, integer and float
semantics, compile-time values, precisions; vector constants, func defaults and math
constants.

See `tests/porting_programs.py` for how these programs run under Warp and kernelc.
"""

# No `from __future__ import annotations`: Warp reads kernel annotations as objects.

import numpy as np

from tests.porting_programs import DEVICE, nonzero, poisoned, program, wp

# ---- 9. random numbers -------------------------------------------------------------------------


@wp.kernel
def random_streams(
    seed: int,
    f: wp.array2d(dtype=float),
    n: wp.array(dtype=float),
    ii: wp.array2d(dtype=int),
    u: wp.array(dtype=wp.uint32),
):
    tid = wp.tid()
    state = wp.rand_init(seed, tid)
    f[tid, 0] = wp.randf(state)
    f[tid, 1] = wp.randf(state, -2.0, 3.0)
    n[tid] = wp.randn(state)
    ii[tid, 0] = wp.randi(state)
    ii[tid, 1] = wp.randi(state, -5, 17)
    u[tid] = wp.randu(state)
    s2 = wp.rand_init(seed)
    f[tid, 2] = wp.randf(s2)


@program
def program_random():
    m = 512
    f, n, ii, u = poisoned((m, 3)), poisoned(m), poisoned((m, 2), int), poisoned(m, wp.uint32)
    wp.launch(random_streams, dim=m, inputs=[42, f, n, ii, u], device=DEVICE)
    return {"f": f.numpy(), "n": n.numpy(), "ii": ii.numpy(), "u": u.numpy()}


# ---- 10. multi-dimensional launches --------------------------------------------------------------


@wp.kernel
def grid2d(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    up = a[wp.max(i - 1, 0), j]
    down = a[wp.min(i + 1, a.shape[0] - 1), j]
    out[i, j] = a[i][j] * 2.0 + up - down + float(a.shape[1])


@wp.kernel
def grid3d(out: wp.array3d(dtype=int)):
    i, j, k = wp.tid()
    out[i, j, k] = i * 100 + j * 10 + k


@wp.kernel
def grid4d(out: wp.array4d(dtype=int)):
    i, j, k, m = wp.tid()
    out[i, j, k, m] = i * 1000 + j * 100 + k * 10 + m


@program
def program_multidim():
    rng = np.random.default_rng(10)
    a = wp.array(nonzero(rng, (13, 7)), dtype=float, device=DEVICE)
    out = poisoned((13, 7))
    wp.launch(grid2d, dim=a.shape, inputs=[a, out], device=DEVICE)
    out3 = wp.empty((3, 4, 5), dtype=int, device=DEVICE)
    wp.launch(grid3d, dim=(3, 4, 5), inputs=[out3], device=DEVICE)
    out4 = wp.full((2, 3, 2, 2), -1, dtype=int, device=DEVICE)
    wp.launch(grid4d, dim=out4.shape, inputs=[out4], device=DEVICE)
    return {
        "out": out.numpy(),
        "out3": out3.numpy(),
        "out4": out4.numpy(),
        "strides3": np.array(out3.strides),
    }


# ---- 11. control flow and integer/float semantics -----------------------------------------------


@wp.kernel
def semantics(
    x: wp.array(dtype=int),
    y: wp.array(dtype=float),
    oi: wp.array2d(dtype=int),
    of: wp.array2d(dtype=float),
    ou: wp.array2d(dtype=wp.uint8),
):
    i = wp.tid()
    a = x[i]
    oi[i, 0] = a // 3
    oi[i, 1] = a % 3
    oi[i, 2] = a / 3
    oi[i, 3] = wp.abs(a) + wp.sign(a) * 1000
    oi[i, 4] = wp.clamp(a, -5, 5)
    oi[i, 5] = (a << 2) ^ (a >> 1) | (a & 7)
    oi[i, 6] = int(y[i] * 10.0)
    total = int(0)
    for k in range(10, 0, -3):
        if k == 4:
            continue
        total += k
    n = int(0)
    while True:
        n += 1
        if n * n > wp.abs(a):
            break
    oi[i, 7] = total * 1000 + n
    oi[i, 8] = 1 if a > 0 else -1
    oi[i, 9] = wp.where(a > 2, a, -a)
    b = y[i]
    of[i, 0] = b // 0.75
    of[i, 1] = b % 0.75
    of[i, 2] = wp.float32(wp.float64(b) * wp.float64(3.0))
    of[i, 3] = float(a) + 0.5
    of[i, 4] = wp.floor(b) + wp.ceil(b) * 10.0 + wp.round(b) * 100.0 + wp.trunc(b) * 1000.0
    of[i, 5] = wp.sqrt(wp.abs(b)) + wp.exp(b * 0.1) + wp.log(wp.abs(b)) + wp.pow(wp.abs(b), 1.5)
    of[i, 6] = wp.atan2(b, 2.0) + wp.tanh(b) + wp.lerp(b, 2.0, 0.25) + wp.smoothstep(-1.0, 1.0, b)
    of[i, 7] = wp.min(b, 1.0) + wp.max(b, -1.0) + wp.clamp(b, -0.5, 0.5)
    u = wp.uint8(a)
    ou[i, 0] = u + wp.uint8(200)
    ou[i, 1] = u * wp.uint8(3)


@program
def program_semantics():
    rng = np.random.default_rng(11)
    n = 200
    xi = rng.integers(-300, 300, n).astype(np.int32)
    xi[xi == 0] = 7
    x = wp.array(xi, dtype=int, device=DEVICE)
    y = wp.array(nonzero(rng, n), dtype=float, device=DEVICE)
    oi, of, ou = poisoned((n, 10), int), poisoned((n, 8)), poisoned((n, 2), wp.uint8)
    wp.launch(semantics, dim=n, inputs=[x, y, oi, of, ou], device=DEVICE)
    return {"int": oi.numpy(), "float": of.numpy(), "uint8": ou.numpy()}


# ---- 12. compile-time values: constants, closures, wp.static --------------------------------------

SCALE = wp.constant(3)
OFFSET = 0.25
USE_SQUARE = True


def make_kernel(power: int, shift: float):
    @wp.kernel(module="unique")  # Warp's advice for kernel factories
    def powk(a: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        v = a[i]
        r = float(1.0)
        for _ in range(power):
            r = r * v
        out[i] = r + shift

    return powk


@wp.kernel
def compile_time(a: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    out[i, 0] = a[i] * float(SCALE) + OFFSET
    if wp.static(USE_SQUARE):
        out[i, 1] = a[i] * a[i]
    else:
        out[i, 1] = a[i]
    out[i, 2] = float(wp.static(SCALE * 2 + 1))


@program
def program_compile_time():
    rng = np.random.default_rng(12)
    n = 16
    a = wp.array(nonzero(rng, n), dtype=float, device=DEVICE)
    out = poisoned((n, 3))
    wp.launch(compile_time, dim=n, inputs=[a, out], device=DEVICE)
    res = {"out": out.numpy()}
    for power, shift in [(2, 0.5), (3, -1.0)]:
        k = make_kernel(power, shift)
        o = poisoned(n)
        wp.launch(k, dim=n, inputs=[a, o], device=DEVICE)
        res[f"pow{power}"] = o.numpy()
    return res


# ---- 20. float16, float64 and local fixed-size arrays ----------------------------------------------------


@wp.kernel
def precisions(
    h: wp.array(dtype=wp.float16),
    d: wp.array(dtype=wp.float64),
    oh: wp.array(dtype=wp.float16),
    od: wp.array(dtype=wp.float64),
    ov: wp.array(dtype=wp.vec3d),
):
    i = wp.tid()
    oh[i] = h[i] * h[i] + wp.float16(0.5)
    x = d[i]
    od[i] = wp.sqrt(wp.abs(x)) * wp.float64(2.0) + wp.float64(h[i])
    ov[i] = wp.vec3d(x, x * x, wp.float64(1.0))


vec6 = wp.types.vector(length=6, dtype=float)


@wp.kernel
def local_array(out: wp.array2d(dtype=float)):
    i = wp.tid()
    tmp = wp.zeros(shape=8, dtype=float)
    for k in range(8):
        tmp[k] = float(i * k)
    acc = float(0.0)
    for k in range(8):
        acc += tmp[k]
    out[i, 0] = acc
    v = wp.vector(1.0, 2.0, 3.0, 4.0, 5.0, length=5, dtype=float)
    out[i, 1] = v[4] + wp.dot(v, v)
    w = vec6()
    w[2] = float(i)
    out[i, 2] = w[2] + w[0]


@program
def program_precisions():
    rng = np.random.default_rng(20)
    n = 32
    h = wp.array(nonzero(rng, n, -2.0, 2.0, np.float16), dtype=wp.float16, device=DEVICE)
    d = wp.array(nonzero(rng, n, dtype=np.float64), dtype=wp.float64, device=DEVICE)
    oh, od, ov = poisoned(n, wp.float16), poisoned(n, wp.float64), poisoned(n, wp.vec3d)
    wp.launch(precisions, dim=n, inputs=[h, d, oh, od, ov], device=DEVICE)
    out = poisoned((n, 3))
    wp.launch(local_array, dim=n, inputs=[out], device=DEVICE)
    return {"half": oh.numpy(), "double": od.numpy(), "vec3d": ov.numpy(), "local": out.numpy()}


# ---- vector constants, func default values, math constants ----------------------------------

GRAVITY_VEC = wp.constant(wp.vec3(0.0, -9.8, 0.0))
UP = wp.vec3(0.0, 1.0, 0.0)
ROTATION = wp.constant(wp.mat22(0.0, -1.0, 1.0, 0.0))


@wp.kernel
def vector_constants(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    v[i] = v[i] + GRAVITY_VEC * 0.5 + UP
    out[i] = ROTATION[0, 1]


@program
def program_vector_constants():
    v = wp.zeros(4, dtype=wp.vec3, device=DEVICE)
    out = poisoned(4)
    wp.launch(vector_constants, dim=4, inputs=[v, out], device=DEVICE)
    return {"v": v.numpy(), "out": out.numpy()}


@wp.func
def scaled(x: float, factor: float = 2.0):
    return x * factor


@wp.kernel
def default_arguments(out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = scaled(float(i)) + scaled(float(i), 10.0)


@program
def program_func_default_arguments():
    out = poisoned(4)
    wp.launch(default_arguments, dim=4, inputs=[out], device=DEVICE)
    return {"out": out.numpy()}


@wp.kernel
def math_constants(out: wp.array(dtype=float)):
    out[0] = wp.pi + wp.tau + wp.e
    out[1] = wp.inf


@program
def program_math_constants():
    out = poisoned(2)
    wp.launch(math_constants, dim=1, inputs=[out], device=DEVICE)
    return {"out": out.numpy(), "host": wp.pi}
