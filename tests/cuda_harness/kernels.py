"""Kernels covering the scalar language, shared by the CUDA codegen and harness tests."""

from __future__ import annotations

from typing import Any

import kernelc as kc
from kernelc import types as T


def arr(dtype: T.Type, ndim: int = 1) -> T.ArrayType:
    return T.ArrayType(dtype, ndim)


F32 = arr(T.float32)
I32 = arr(T.int32)

INT_OPS = ("add", "sub", "mul", "div", "mod", "floordiv", "shl", "shr", "and", "or", "xor",
           "neg", "invert")


@kc.kernel
def int_ops(a: Any, b: Any, out: Any):
    i = kc.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = x + y
    out[i, 1] = x - y
    out[i, 2] = x * y
    out[i, 3] = x / y
    out[i, 4] = x % y
    out[i, 5] = x // y
    out[i, 6] = x << y
    out[i, 7] = x >> y
    out[i, 8] = x & y
    out[i, 9] = x | y
    out[i, 10] = x ^ y
    out[i, 11] = -x
    out[i, 12] = ~x


FLOAT_OPS = ("add", "sub", "mul", "div", "floordiv", "mod", "pow", "neg")


@kc.kernel
def float_ops(a: Any, b: Any, out: Any):
    i = kc.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = x + y
    out[i, 1] = x - y
    out[i, 2] = x * y
    out[i, 3] = x / y
    out[i, 4] = x // y
    out[i, 5] = x % y
    out[i, 6] = x**y
    out[i, 7] = -x


@kc.kernel
def compares(a: Any, b: Any, out: arr(T.bool_, 2)):
    i = kc.tid()
    x = a[i]
    y = b[i]
    out[i, 0] = x == y
    out[i, 1] = x != y
    out[i, 2] = x < y
    out[i, 3] = x <= y
    out[i, 4] = x > y
    out[i, 5] = x >= y


@kc.kernel
def casts(f: F32, d: arr(T.float64), big: arr(T.int64), out_i: arr(T.int64, 2),
          out_f: arr(T.float64, 2)):
    i = kc.tid()
    x = f[i]
    out_i[i, 0] = kc.int64(kc.int32(x))
    out_i[i, 1] = kc.int64(kc.int8(x))
    out_i[i, 2] = kc.int64(kc.uint32(x))
    out_i[i, 3] = kc.int64(kc.uint8(x))
    out_i[i, 4] = kc.int64(x)
    out_i[i, 5] = kc.int64(kc.int32(big[i]))
    out_i[i, 6] = kc.int64(kc.uint16(big[i]))
    out_i[i, 7] = kc.int64(kc.int16(d[i]))
    out_i[i, 8] = kc.int64(kc.uint64(d[i]))
    out_i[i, 9] = kc.int64(x > 0.0)
    out_f[i, 0] = kc.float64(kc.float32(big[i]))
    out_f[i, 1] = kc.float64(big[i])
    out_f[i, 2] = kc.float64(kc.float32(d[i]))
    out_f[i, 3] = kc.float64(kc.uint32(big[i]))


@kc.func
def count_to(n: int) -> int:
    total = 0
    for k in range(n):
        if k == 5:
            return total + 1000
        total += k
    return total


@kc.func
def divmod_pair(a: int, b: int):
    return a // b, a % b


@kc.kernel
def control(n: I32, step: I32, out: arr(T.int32, 2)):
    i = kc.tid()
    # nested loops with break and continue
    acc = 0
    for j in range(n[i]):
        if j % 3 == 1:
            continue
        for k in range(j, -1, -1):
            if k < j - 2:
                break
            acc += k
    out[i, 0] = acc
    # a range whose step sign is only known at run time
    s = 0
    count = 0
    for j in range(n[i], -n[i], step[i]):
        s += j
        count += 1
    out[i, 1] = s
    out[i, 2] = count
    # while with break/continue
    w = 0
    m = n[i]
    while m > 0:
        m -= 1
        if m == 2:
            continue
        if w > 40:
            break
        w += m
    out[i, 3] = w
    # short-circuit and/or, ternary (the right side would read out of bounds)
    ok = i < n.shape[0] - 1 and n[i + 1] > 3
    out[i, 4] = 1 if ok else 0
    out[i, 5] = 7 if (i + 1 >= n.shape[0] or n[i + 1] % 2 == 0) else -7
    out[i, 6] = count_to(n[i])
    q, r = divmod_pair(n[i] - 7, 3)
    out[i, 7] = q * 100 + r


@kc.kernel
def early_return(a: F32, out: F32):
    i = kc.tid()
    if a[i] < 0.0:
        return
    out[i] = a[i] * 2.0


@kc.kernel
def atomics_float(v: F32, total: F32, lo: F32, hi: F32, olds: arr(T.float32, 2)):
    i = kc.tid()
    kc.atomic_add(total, 0, v[i])
    total[1] += v[i]
    kc.atomic_sub(total, 2, v[i])
    olds[i, 0] = kc.atomic_min(lo, 0, v[i])
    olds[i, 1] = kc.atomic_max(hi, 0, v[i])


@kc.kernel
def atomics_int(v: Any, sums: Any, lo: Any, hi: Any, olds: Any):
    i = kc.tid()
    kc.atomic_add(sums, 0, v[i])
    kc.atomic_sub(sums, 1, v[i])
    olds[i, 0] = kc.atomic_min(lo, i % 2, v[i])
    olds[i, 1] = kc.atomic_max(hi, i % 2, v[i])


@kc.kernel
def randoms(seed: int, out_u: arr(T.uint32, 2), out_f: arr(T.float32, 2)):
    i = kc.tid()
    state = kc.rand_init(seed, i)
    out_f[i, 0] = kc.randf(state)
    out_u[i, 0] = kc.uint32(kc.randi(state))
    out_f[i, 1] = kc.randf(state, -2.0, 3.0)
    out_u[i, 1] = kc.uint32(kc.randi(state, -5, 9))
    out_f[i, 2] = kc.randn(state)
    single = kc.rand_init(seed)
    out_u[i, 2] = kc.randu(single)


UNARY_MATH = ("sqrt", "cbrt", "exp", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
              "atan", "sinh", "cosh", "tanh", "floor", "ceil", "round", "rint", "trunc", "frac",
              "fabs")


@kc.kernel
def math_unit(u: Any, w: Any, out: Any):
    """Every math builtin; `u` in (0, 1) fits every domain, `w` spans negatives too."""
    i = kc.tid()
    x = u[i]
    out[i, 0] = kc.sqrt(x)
    out[i, 1] = kc.cbrt(w[i])
    out[i, 2] = kc.exp(x)
    out[i, 3] = kc.log(x)
    out[i, 4] = kc.log2(x)
    out[i, 5] = kc.log10(x)
    out[i, 6] = kc.sin(w[i])
    out[i, 7] = kc.cos(w[i])
    out[i, 8] = kc.tan(x)
    out[i, 9] = kc.asin(x)
    out[i, 10] = kc.acos(x)
    out[i, 11] = kc.atan(w[i])
    out[i, 12] = kc.sinh(x)
    out[i, 13] = kc.cosh(x)
    out[i, 14] = kc.tanh(w[i])
    out[i, 15] = kc.floor(w[i])
    out[i, 16] = kc.ceil(w[i])
    out[i, 17] = kc.round(w[i])
    out[i, 18] = kc.rint(w[i])
    out[i, 19] = kc.trunc(w[i])
    out[i, 20] = kc.frac(w[i])
    out[i, 21] = kc.fabs(w[i])
    out[i, 22] = kc.atan2(w[i], x)
    out[i, 23] = kc.pow(x, w[i] * 0.1)


@kc.kernel
def local_arrays(a: F32, out: arr(T.float32, 2)):
    i = kc.tid()
    buf = kc.zeros(shape=8, dtype=float)
    for k in range(8):
        buf[k] = a[i] + float(k)
    acc = 0.0
    for k in range(7, -1, -1):
        acc = acc * 0.5 + buf[k]
    out[i, 0] = acc
    buf[8 + i] = 100.0  # out of range: dropped in release
    out[i, 1] = buf[-1 - i]  # out of range: reads 0 in release
    out[i, 2] = buf[i % 8]


@kc.kernel
def tid_1d(out: I32):
    i = kc.tid()
    out[i] = i * 3


@kc.kernel
def tid_2d(out: arr(T.int32, 2)):
    i, j = kc.tid()
    out[i, j] = i * 100 + j


@kc.kernel
def tid_3d(out: arr(T.int32, 3), lead: arr(T.int32, 3), pair: arr(T.int32, 3)):
    i, j, k = kc.tid()
    out[i, j, k] = i * 10000 + j * 100 + k
    lead[i, j, k] = kc.tid()  # a scalar tid() in a 3-d launch: the leading index (Warp's)
    a, b = kc.tid()  # the leading two
    pair[i, j, k] = a * 100 + b


@kc.kernel
def tid_4d(out: arr(T.int32, 4)):
    i, j, k, m = kc.tid()
    out[i, j, k, m] = i * 1000 + j * 100 + k * 10 + m


@kc.kernel
def strided(src: arr(T.float32, 2), dst: arr(T.float64, 2), col: F32):
    i, j = kc.tid()
    dst[i, j] = kc.float64(src[i, j]) * 2.0 + kc.float64(src.shape[1])
    if j == 0:
        col[i] = src[i, src.shape[1] - 1]


@kc.kernel
def views(src: arr(T.float32, 2), out: arr(T.float32, 2)):
    i = kc.tid()
    row = src[i]
    back = row[::-2]
    block = src[1:, 2:5]
    out[i, 0] = row[1] + back[0]
    out[i, 1] = kc.float32(back.shape[0] * 100 + block.shape[0] * 10 + block.shape[1])
    out[i, 2] = block[i % block.shape[0], 1] + src[:, 3][i]


@kc.kernel
def negative_indices(src: arr(T.float32, 2), out: arr(T.float32, 2)):
    i = kc.tid()
    out[i, -1] = src[i - 1, -2]  # row -1 is the last row, column -2 the one before last
    last = src[-1]
    out[i, 0] = last[-i - 1] + src[-2, :3][1]
    kc.atomic_add(out, -1 - i, 1, 1.0)


@kc.kernel
def printer(a: I32, f: F32):
    i = kc.tid()
    print("row", i, a[i], f[i], a[i] > 0)
    kc.printf("%d:%.3f|%lld\n", a[i], f[i], kc.int64(a[i]) * kc.int64(1000000000))


@kc.func
def checked_read(a: F32, k: int) -> float:
    return a[k]


@kc.kernel
def debug_checks(a: F32, out: F32, mode: int):
    i = kc.tid()
    if mode == 0:
        out[i] = a[i + 1]
    elif mode == 1:
        assert a[i] < 5.0
        out[i] = 1.0
    elif mode == 2:
        buf = kc.zeros(shape=4, dtype=float)
        out[i] = buf[i]
    else:
        out[i] = checked_read(a, i * 2)


@kc.kernel
def halves(a: arr(T.float16), b: arr(T.float16), out: arr(T.float16, 2), acc: arr(T.float16),
           f: F32):
    i = kc.tid()
    out[i, 5] = kc.float16(f[i])
    out[i, 0] = a[i] + b[i]
    out[i, 1] = a[i] * b[i]
    out[i, 2] = a[i] / b[i]
    out[i, 3] = kc.float16(kc.float32(a[i]) * 3.0)
    out[i, 4] = kc.sqrt(kc.fabs(a[i]))
    kc.atomic_add(acc, 0, a[i])


@kc.kernel
def saxpy(x: F32, y: F32, alpha: float):
    i = kc.tid()
    y[i] = alpha * x[i] + y[i]


def _a(dtype: T.Type, ndim: int = 1) -> T.ArrayType:
    return T.ArrayType(dtype, ndim)


def int_ops_types(t: T.ScalarType) -> tuple[T.Type, ...]:
    return (_a(t), _a(t), _a(t, 2))


def float_ops_types(t: T.ScalarType) -> tuple[T.Type, ...]:
    return (_a(t), _a(t), _a(t, 2))


def atomics_int_types(t: T.ScalarType) -> tuple[T.Type, ...]:
    return (_a(t), _a(t), _a(t), _a(t), _a(t, 2))


# Every kernel above with the argument types its generic parameters are tested with.
SPECIALISATIONS: tuple[tuple[Any, tuple[T.Type, ...] | None], ...] = (
    *((int_ops, int_ops_types(t)) for t in (T.int32, T.int64, T.uint32, T.int8, T.uint64)),
    *((float_ops, float_ops_types(t)) for t in (T.float32, T.float64)),
    (compares, (_a(T.float32), _a(T.float32), None)),
    (compares, (_a(T.int64), _a(T.int64), None)),
    (casts, None), (control, None), (early_return, None), (atomics_float, None),
    *((atomics_int, atomics_int_types(t)) for t in (T.int32, T.int64, T.uint32, T.int16)),
    (randoms, None),
    *((math_unit, float_ops_types(t)) for t in (T.float32, T.float64)),
    (local_arrays, None), (tid_1d, None), (tid_2d, None), (tid_3d, None), (tid_4d, None),
    (strided, None), (views, None), (negative_indices, None), (printer, None), (debug_checks, None), (halves, None), (saxpy, None),
)


def get_ir(kernel: Any, types: tuple[T.Type | None, ...] | None):
    """The IR module of `kernel`; None entries of `types` keep the declared type."""
    if types is not None:
        types = tuple(d if t is None else t for t, d in zip(types, kernel.param_types))
    return kernel.get_ir(types)
