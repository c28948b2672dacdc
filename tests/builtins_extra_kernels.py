"""Shared pieces of the tests of Warp's remaining builtins (`tests/test_builtins_extra.py`,
`tests/test_builtins_extra_atomics.py`, `tests/test_builtins_extra_warp_cuda.py`): the
scalar, vector-utility, search, cast, expect_* and atomic kernels that the CPU tests and
the CUDA-C tests both launch, the references they share (lower_bound, bit counts), the
vector-utility inputs and launcher, and the `kc.cast` special-form registration.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.builtins import utility
from tests.conftest import nonzero, poisoned

# ---- kernels ---------------------------------------------------------------------------------


@kc.kernel
def float_math(x: kc.array(dtype=Any), y: kc.array(dtype=Any), out: kc.array2d(dtype=Any)):
    i = kc.tid()
    out[i, 0] = kc.erf(x[i])
    out[i, 1] = kc.erfc(x[i])
    out[i, 2] = kc.copysign(x[i], y[i])
    out[i, 3] = kc.div_approx(x[i], y[i])
    out[i, 4] = kc.nonzero(x[i])
    out[i, 5] = kc.step(x[i])


@kc.kernel
def inverse_erf(y: kc.array(dtype=Any), z: kc.array(dtype=Any), out: kc.array2d(dtype=Any)):
    i = kc.tid()
    out[i, 0] = kc.erfinv(y[i])
    out[i, 1] = kc.erfcinv(z[i])


@kc.kernel
def int_math(x: kc.array(dtype=Any), counts: kc.array(dtype=int), inverted: kc.array(dtype=Any),
             misc: kc.array2d(dtype=Any), flags: kc.array2d(dtype=int)):
    i = kc.tid()
    counts[i] = kc.bit_count(x[i])
    inverted[i] = kc.invert(x[i])
    misc[i, 0] = kc.nonzero(x[i])
    misc[i, 1] = kc.step(x[i])
    flags[i, 0] = int(kc.unot(x[i]))
    flags[i, 1] = int(kc.unot(x[i] > x[i]))


@kc.kernel
def vector_utils(v: kc.array(dtype=kc.vec4), m: kc.array(dtype=kc.mat33),
                 n: kc.array(dtype=kc.mat33), index: kc.array2d(dtype=kc.uint32),
                 f: kc.array2d(dtype=float), smooth: kc.array(dtype=kc.vec4),
                 inv: kc.array(dtype=kc.mat33), vi: kc.array(dtype=kc.vec3i),
                 vi_out: kc.array(dtype=kc.vec3i), scaled: kc.array(dtype=kc.vec4)):
    i = kc.tid()
    index[i, 0] = kc.argmin(v[i])
    index[i, 1] = kc.argmax(v[i])
    index[i, 2] = kc.argmin(vi[i])
    index[i, 3] = kc.argmax(vi[i])
    f[i, 0] = kc.ddot(m[i], n[i])
    f[i, 1] = kc.norm_l1(v[i])
    f[i, 2] = kc.norm_l2(v[i])
    f[i, 3] = kc.norm_huber(v[i])
    f[i, 4] = kc.norm_huber(v[i], 0.5)
    f[i, 5] = kc.norm_pseudo_huber(v[i])
    f[i, 6] = kc.norm_pseudo_huber(v[i], delta=2.0)
    f[i, 7] = float(kc.len(v[i]) + 10 * kc.len(m[i]) + 100 * kc.len(v))
    smooth[i] = kc.smooth_normalize(v[i], 0.7)
    inv[i] = kc.inverse_approx(m[i])
    vi_out[i] = kc.invert(vi[i])
    scaled[i] = kc.div_approx(v[i], f[i, 2])


@kc.kernel
def search(keys: kc.array(dtype=Any), values: kc.array(dtype=Any), ranges: kc.array2d(dtype=int),
           out: kc.array2d(dtype=int)):
    i = kc.tid()
    out[i, 0] = kc.lower_bound(keys, values[i])
    out[i, 1] = kc.lower_bound(keys, ranges[i, 0], ranges[i, 1], values[i])


@kc.struct
class HalfAndShort:
    f: kc.float16
    i: kc.int16


@kc.kernel
def casts(x: kc.array(dtype=kc.int32), d: kc.array(dtype=kc.float64),
          v: kc.array(dtype=kc.vec2), as_float: kc.array(dtype=float),
          as_uint: kc.array(dtype=kc.uint32), as_long: kc.array(dtype=kc.int64),
          as_u64: kc.array(dtype=kc.uint64), as_vec: kc.array(dtype=kc.vec2),
          as_int: kc.array(dtype=kc.int32)):
    i = kc.tid()
    as_float[i] = kc.cast(x[i], kc.float32)
    as_uint[i] = kc.cast(as_float[i], dtype=kc.uint32)
    as_long[i] = kc.cast(d[i], kc.int64)
    as_u64[i] = kc.cast(v[i], kc.uint64)
    as_vec[i] = kc.cast(as_u64[i], kc.vec2)
    s = HalfAndShort()
    s.f = kc.float16(2.0)
    s.i = kc.int16(x[i] % 1000)
    as_int[i] = kc.cast(s, kc.int32)


@kc.kernel
def expectations(x: kc.array(dtype=float)):
    kc.expect_eq(1, 2)
    kc.expect_eq(kc.vec3(1.0, 2.0, 3.0), kc.vec3(1.0, 2.0, 4.0))
    kc.expect_neq(1.5, 1.5)
    kc.expect_near(1.0, 1.1)
    kc.expect_near(kc.vec2(1.0, 2.0), kc.vec2(1.0, 2.5), 0.1)
    kc.expect_eq(kc.mat22(1.0, 2.0, 3.0, 4.0), kc.mat22(1.0, 2.0, 3.0, 5.0))
    # These hold: nothing is printed.
    kc.expect_eq(x[0], x[0])
    kc.expect_neq(x[0], x[0] + 1.0)
    kc.expect_near(x[0], x[0] + 1.0e-7)
    kc.expect_near(kc.vec2(x[0], 1.0), kc.vec2(x[0], 1.05), tolerance=0.1)


# Warp's own output for `expectations` (warp-lang 1.19 on the CPU).
WARP_EXPECT_OUTPUT = (
    "Error, expect_eq() failed:\n\t Expected: 2\n\t Actual: 1\n"
    "Error, expect_eq() failed:\n\t Expected: 1 2 4 \n\t Actual: 1 2 3 \n"
    "Error, expect_neq() failed:\n\t Expected: 1.5\n\t Actual: 1.5\n"
    "Error, expect_near() failed with tolerance 1e-06\n    Expected: 1.1\n    Actual: 1\n"
    "    Absolute difference: 0.1\n"
    "Error, expect_near() failed with tolerance 0.1\n    Expected: 1 2.5 \n    Actual: 1 2 \n"
    "    Max absolute difference: 0.5\n"
    "Error, expect_eq() failed:\n\t Expected: 1 2 \n3 5 \n\t Actual: 1 2 \n3 4 \n"
)


# ---- atomics ---------------------------------------------------------------------------------


@kc.kernel
def cas_counter(slots: kc.array(dtype=int), counts: kc.array(dtype=Any), sums: kc.array(dtype=Any)):
    """An increment built from compare-and-swap loops, on integer and float slots."""
    i = kc.tid()
    s = slots[i]
    expected = counts[s]  # a guess; the loop corrects it
    while True:
        seen = kc.atomic_cas(counts, s, expected, expected + 1)
        if seen == expected:
            break
        expected = seen
    e = sums[s]
    while True:
        got = kc.atomic_cas(sums, s, e, e + 1.0)
        if got == e:
            break
        e = got


@kc.kernel
def spin_lock(slots: kc.array(dtype=int), locks: kc.array(dtype=int), data: kc.array(dtype=int)):
    """A lock per slot from cas / exch guards a plain read-modify-write."""
    i = kc.tid()
    s = slots[i]
    while kc.atomic_cas(locks, s, 0, 1) != 0:
        pass
    data[s] = data[s] + 1
    kc.atomic_exch(locks, s, 0)


@kc.kernel
def bitwise_and_exchange(v: kc.array(dtype=Any), a: kc.array(dtype=Any), o: kc.array(dtype=Any),
                         x: kc.array(dtype=Any), ex: kc.array(dtype=Any),
                         olds: kc.array(dtype=Any)):
    i = kc.tid()
    kc.atomic_and(a, i % 3, v[i])
    kc.atomic_or(o, i % 3, v[i])
    kc.atomic_xor(x, i % 3, v[i])
    olds[i] = kc.atomic_exch(ex, i % 5, v[i])


@kc.kernel
def index_forms(v: kc.array(dtype=kc.uint32), a2: kc.array2d(dtype=kc.uint32),
                a3: kc.array3d(dtype=kc.int64), a4: kc.array4d(dtype=kc.float64),
                c4: kc.array4d(dtype=kc.int32), olds: kc.array2d(dtype=kc.float64)):
    i = kc.tid()
    kc.atomic_or(a2, i % 2, i % 3, v[i])
    kc.atomic_and(a3, 0, i % 2, 1, kc.int64(v[i]))
    kc.atomic_xor(a3, 1, i % 2, 0, kc.int64(v[i]))
    olds[i, 0] = kc.atomic_exch(a4, 0, 1, i % 2, 0, kc.float64(i))
    olds[i, 1] = kc.float64(kc.atomic_cas(c4, 0, 0, 0, i % 4, 0, i + 1))


@kc.kernel
def vector_atomics(v: kc.array(dtype=kc.vec3i), acc: kc.array(dtype=kc.vec3i),
                   swap: kc.array(dtype=kc.vec2d), olds: kc.array(dtype=kc.vec2d)):
    i = kc.tid()
    kc.atomic_or(acc, 0, v[i])
    kc.atomic_and(acc, 1, v[i])
    kc.atomic_xor(acc, 2, v[i])
    olds[i] = kc.atomic_cas(swap, 0, kc.vec2d(0.0, 1.0), kc.vec2d(kc.float64(i) + 1.0, 7.0))


@kc.kernel
def own_element(a: kc.array(dtype=int), b: kc.array(dtype=float), olds: kc.array2d(dtype=int)):
    i = kc.tid()  # each thread touches only a[i], b[i]: private atomics (plain updates)
    olds[i, 0] = kc.atomic_cas(a, i, i, -i)
    olds[i, 1] = kc.atomic_xor(a, i, 3)
    olds[i, 2] = kc.atomic_or(a, i, 64)
    olds[i, 3] = kc.atomic_and(a, i, -2)
    kc.atomic_exch(b, i, kc.float32(i) * 0.5)
    kc.atomic_cas(b, i, -0.0, 9.0)  # 0.0 == -0.0: thread 0 swaps


# ---- references and inputs -------------------------------------------------------------------


def lower_bound_ref(keys, begin: int, end: int, value) -> int:
    """Warp's search: bisection over [begin, end - 1], so never more than end - 1."""
    lower, upper = begin, end - 1
    while lower < upper:
        mid = lower + (upper - lower) // 2
        if keys[mid] < value:
            lower = mid + 1
        else:
            upper = mid
    return lower


def bits_of(x: np.ndarray) -> np.ndarray:
    unsigned = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    return np.array([bin(int(v)).count("1") for v in unsigned], np.int32)


def _vector_inputs(rng, n):
    v = nonzero(rng, 4 * n, np.float32).reshape(n, 4)
    v[0] = [3.0, 1.0, 1.0, 2.0]  # ties: the first index wins
    v[1] = [np.nan, 2.0, np.nan, -1.0]  # NaN skipped
    v[2] = [np.nan] * 4  # all NaN: index 0
    v[3] = [1.0, np.nan, 5.0, 5.0]
    v[4] = [0.1, -0.2, 0.1, 0.2]  # |v| < delta for the Huber norms
    m = nonzero(rng, 9 * n, np.float32).reshape(n, 3, 3)
    m2 = nonzero(rng, 9 * n, np.float32).reshape(n, 3, 3)
    vi = rng.integers(-5, 5, (n, 3)).astype(np.int32)
    vi[0] = [2, -1, -1]
    return v, m, m2, vi


def _run_vector_utils(v, m, m2, vi):
    n = len(v)
    args = [kc.array(v, dtype=kc.vec4), kc.array(m, dtype=kc.mat33),
            kc.array(m2, dtype=kc.mat33), poisoned((n, 4), np.uint32),
            poisoned((n, 8), np.float32),
            kc.array(np.full((n, 4), np.nan, np.float32), dtype=kc.vec4),
            kc.array(np.full((n, 3, 3), np.nan, np.float32), dtype=kc.mat33),
            kc.array(vi, dtype=kc.vec3i), kc.array(np.zeros((n, 3), np.int32), dtype=kc.vec3i),
            kc.array(np.full((n, 4), np.nan, np.float32), dtype=kc.vec4)]
    kc.launch(vector_utils, n, inputs=args)
    names = ("index", "f", "smooth", "inv", "vi", "vi_out", "scaled")
    return dict(zip(names, (a.numpy() for a in args[3:])))


def _slots(n, k, seed=0):
    return np.random.default_rng(seed).integers(0, k, n).astype(np.int32)


@contextlib.contextmanager
def cast_form_registered():
    """`kc.cast` is a special form: registered with the front end's table while the context
    is open, until kernelc.frontend.special lists `utility.SPECIAL_FORMS`."""
    from kernelc.frontend import special

    table = special._handlers()
    added = "cast" not in table
    table.setdefault("cast", utility.cast_form)
    try:
        yield
    finally:
        if added:
            del table["cast"]
