"""Warp's remaining scalar, bitwise, vector-utility and atomic builtins: erf and its
inverses, copysign, bit_count, invert, unot, nonzero, div_approx, argmin / argmax, ddot, the
norms, lower_bound, expect_*, len, cast, inverse_approx, and atomic_and / or / xor / cas /
exch. NumPy (float64) references on random non-zero inputs with poisoned outputs, the same
programs run by Warp, contended atomics checked exactly, the CUDA-C compiled by NVRTC and
run through the host harness, and the error paths.
"""

from __future__ import annotations

import math
import shutil
from typing import Any

import numpy as np
import pytest

import kernelc as kc
from kernelc import types as T
from kernelc.builtins import BUILTINS, primitive_keys, utility
from tests.conftest import nonzero, poisoned, run_warp

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


# ---- references ------------------------------------------------------------------------------


def _bisect(f, lo: float, hi: float) -> float:
    """The point where the increasing f changes sign, to the last bit of a float64."""
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _inverse_core(a: float, t: float) -> float:
    """x >= 0 with erf(x) = a, erfc(x) = t, using whichever of a and t is exact."""
    if t == 0:
        return math.inf
    if a <= 0.5:
        return _bisect(lambda x: math.erf(x) - a, 0.0, 1.0)
    return _bisect(lambda x: t - math.erfc(x), 0.0, 30.0)


def erfinv_ref(y: float) -> float:
    if not -1 <= y <= 1:
        return math.nan
    a = abs(y)
    return math.copysign(_inverse_core(a, 1.0 - a), y)


def erfcinv_ref(z: float) -> float:
    if not 0 <= z <= 2:
        return math.nan
    if z > 1:
        return -erfcinv_ref(2.0 - z)
    return _inverse_core(1.0 - z, z)


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


# ---- every primitive has a lowering ---------------------------------------------------------


def test_every_new_primitive_has_a_lowering_in_every_backend():
    from kernelc.codegen import llvm_ops
    from kernelc.codegen.cuda_builtins import MATH

    keys = primitive_keys()
    assert {"erf", "erfc", "copysign", "popcount", "bitcast"} <= keys
    assert keys <= set(llvm_ops.BUILTIN_LOWERING) | set(llvm_ops.TYPED_LOWERING)
    assert keys <= set(MATH)
    for name in ("erf", "erfinv", "atomic_cas", "norm_huber", "lower_bound", "cast", "len"):
        assert getattr(kc, name) is BUILTINS[name]


# ---- scalar math -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_erf_copysign_div_approx_nonzero_step(rng, dtype):
    n = 500
    x = nonzero(rng, n, dtype, -3.0, 3.0)
    y = nonzero(rng, n, dtype)
    x[:4] = [0.0, -0.0, 1e-30, -6.0]
    y[:4] = [-1.0, 1.0, -0.0, 2.0]
    out = poisoned((n, 6), dtype)
    kc.launch(float_math, n, inputs=[kc.array(x), kc.array(y), out])
    got = out.numpy()
    wide = x.astype(np.float64)
    maxulp = 2  # the C library's erf / erfc (glibc's erfcf is within 2 ulp)
    np.testing.assert_array_max_ulp(got[:, 0], np.vectorize(math.erf)(wide).astype(dtype), maxulp)
    np.testing.assert_array_max_ulp(got[:, 1], np.vectorize(math.erfc)(wide).astype(dtype),
                                    maxulp)
    np.testing.assert_array_equal(got[:, 2], np.copysign(x, y))
    assert np.signbit(got[:, 2]).tolist() == np.signbit(y).tolist()
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(got[:, 3], x / y)
    np.testing.assert_array_equal(got[:, 4], (x != 0).astype(dtype))
    np.testing.assert_array_equal(got[:, 5], (x < 0).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                         ids=["float16", "float32", "float64"])
def test_erfinv_erfcinv_are_correctly_rounded(rng, dtype):
    n = 600
    y = np.concatenate([rng.uniform(-1, 1, n - 200),
                        np.copysign(1 - 10.0 ** -rng.uniform(0.5, 15, 100), rng.uniform(-1, 1, 100)),
                        10.0 ** -rng.uniform(1, 30, 100)])
    z = np.concatenate([rng.uniform(0, 2, n - 200), 10.0 ** -rng.uniform(1, 300, 100),
                        2 - 10.0 ** -rng.uniform(1, 15, 100)])
    y, z = y.astype(dtype), z.astype(dtype)
    y[:6] = [0.0, 1.0, -1.0, 1.5, 0.5, -0.5]
    z[:6] = [1.0, 0.0, 2.0, -0.5, 0.5, 1.5]
    out = poisoned((n, 2), dtype)
    kc.launch(inverse_erf, n, inputs=[kc.array(y), kc.array(z), out])
    got = out.numpy()
    want_y = np.array([erfinv_ref(float(v)) for v in y]).astype(dtype)
    want_z = np.array([erfcinv_ref(float(v)) for v in z]).astype(dtype)
    assert got[:3, 0].tolist() == [0.0, math.inf, -math.inf] and np.isnan(got[3, 0])
    assert got[1, 1] == math.inf and got[2, 1] == -math.inf and np.isnan(got[3, 1])
    # float32 comes from float64 arithmetic correctly rounded, float64 within 2 ulp; float16
    # within 1 (kernelc converts float64 to float16 through float32, on both backends).
    maxulp = {np.float16: 1, np.float32: 0, np.float64: 2}[dtype]
    finite = np.isfinite(want_y)
    np.testing.assert_array_max_ulp(got[finite, 0], want_y[finite], maxulp)
    finite = np.isfinite(want_z)
    np.testing.assert_array_max_ulp(got[finite, 1], want_z[finite], maxulp)


INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda d: np.dtype(d).name)
def test_bit_count_invert_unot_nonzero_step_on_integers(rng, dtype):
    info = np.iinfo(dtype)
    n = 300
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    x[:5] = [0, 1, info.max, info.min, info.max - 1]
    counts = poisoned(n, np.int32)
    inverted, misc, flags = poisoned(n, dtype), poisoned((n, 2), dtype), poisoned((n, 2), np.int32)
    kc.launch(int_math, n, inputs=[kc.array(x), counts, inverted, misc, flags])
    np.testing.assert_array_equal(counts.numpy(), bits_of(x))
    np.testing.assert_array_equal(inverted.numpy(), np.invert(x))
    np.testing.assert_array_equal(misc.numpy()[:, 0], (x != 0).astype(dtype))
    np.testing.assert_array_equal(misc.numpy()[:, 1], (x < 0).astype(dtype))
    np.testing.assert_array_equal(flags.numpy()[:, 0], (x == 0).astype(np.int32))
    np.testing.assert_array_equal(flags.numpy()[:, 1], np.ones(n, np.int32))


@kc.kernel
def truthiness(a: kc.array(dtype=float), b: kc.array2d(dtype=int), out: kc.array(dtype=int)):
    out[0] = int(kc.unot(a))
    out[1] = int(kc.unot(b))
    local = kc.zeros(shape=5, dtype=float)
    out[2] = kc.len(a) + 10 * kc.len(b) + 100 * kc.len(local)


def test_unot_and_len_of_arrays():
    out = poisoned(3, np.int32)
    kc.launch(truthiness, 1, inputs=[kc.zeros(3), kc.zeros((0, 4), dtype=int), out])
    assert out.numpy().tolist() == [0, 1, 503]
    kc.launch(truthiness, 1, inputs=[None, kc.zeros((2, 4), dtype=int), out])
    assert out.numpy().tolist() == [1, 0, 520]


def test_scalar_builtins_on_the_host():
    assert kc.bit_count(45) == 4
    assert kc.bit_count(kc.int8(-1)) == 8 and kc.bit_count(kc.int64(-1)) == 64
    assert kc.copysign(3.0, -0.0) == -3.0
    assert kc.erfinv(0.5) == pytest.approx(0.4769362762044699, rel=1e-7)
    assert kc.invert(kc.uint8(5)) == 250 and kc.unot(0) and not kc.unot(3)
    assert kc.nonzero(-0.0) == 0.0 and kc.step(-2) == 1


# ---- vector utilities ------------------------------------------------------------------------


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


def _arg_ref(row, better):
    best = None
    for k, x in enumerate(row):
        if np.isnan(x):
            continue
        if best is None or better(x, row[best]):
            best = k
    return 0 if best is None else best


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


def test_argmin_argmax_ddot_norms_len_inverse_approx(rng):
    n = 64
    v, m, m2, vi = _vector_inputs(rng, n)
    out = _run_vector_utils(v, m, m2, vi)
    idx = out["index"]
    assert idx[:, 0].tolist() == [_arg_ref(r, lambda a, b: a < b) for r in v]
    assert idx[:, 1].tolist() == [_arg_ref(r, lambda a, b: a > b) for r in v]
    assert idx[:, 2].tolist() == [int(np.argmin(r)) for r in vi]
    assert idx[:, 3].tolist() == [int(np.argmax(r)) for r in vi]
    assert idx[:3, 0].tolist() == [1, 3, 0] and idx[:4, 1].tolist() == [0, 1, 0, 2]
    got = out["f"]
    ok = ~np.isnan(v).any(axis=1)
    w = v.astype(np.float64)
    a = (w * w).sum(axis=1)
    np.testing.assert_allclose(got[:, 0], (m.astype(np.float64) * m2).sum(axis=(1, 2)),
                               rtol=2e-6, atol=1e-5)
    np.testing.assert_allclose(got[ok, 1], np.abs(w).sum(axis=1)[ok], rtol=1e-6)
    np.testing.assert_allclose(got[ok, 2], np.sqrt(a)[ok], rtol=1e-6)
    huber = lambda d: np.where(a <= d * d, 0.5 * a, d * (np.sqrt(a) - 0.5 * d))  # noqa: E731
    np.testing.assert_allclose(got[ok, 3], huber(1.0)[ok], rtol=1e-6)
    np.testing.assert_allclose(got[ok, 4], huber(0.5)[ok], rtol=1e-6)
    assert got[4, 3] == pytest.approx(0.5 * a[4], rel=1e-6)
    pseudo = lambda d: d * np.sqrt(1 + a / (d * d))  # noqa: E731
    np.testing.assert_allclose(got[ok, 5], pseudo(1.0)[ok], rtol=1e-6)
    np.testing.assert_allclose(got[ok, 6], pseudo(2.0)[ok], rtol=1e-6)
    assert (got[:, 7] == 4 + 30 + 100 * n).all()
    smooth = w / (0.7 * np.sqrt(1 + a / 0.49))[:, None]
    np.testing.assert_allclose(out["smooth"][ok], smooth[ok], rtol=1e-6)
    good = np.abs(np.linalg.det(m.astype(np.float64))) > 1e-2
    np.testing.assert_allclose(out["inv"][good], np.linalg.inv(m.astype(np.float64))[good],
                               rtol=1e-3, atol=1e-4)
    np.testing.assert_array_equal(out["vi_out"], np.invert(vi))
    np.testing.assert_allclose(out["scaled"][ok], (w / np.sqrt(a)[:, None])[ok], rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.int64], ids=["float32", "int64"])
def test_lower_bound_both_forms(rng, dtype):
    keys = np.sort(nonzero(rng, 200, dtype, -50, 50))
    n = 300
    values = nonzero(rng, n, dtype, -60, 60)
    values[:3] = [keys[0], keys[-1], keys[57]]  # exact hits, ends
    begin = rng.integers(0, 200, n)
    end = np.minimum(200, begin + rng.integers(0, 40, n))
    ranges = np.stack([begin, end], axis=1).astype(np.int32)
    ranges[0] = [5, 5]  # empty range
    out = poisoned((n, 2), np.int32)
    kc.launch(search, n, inputs=[kc.array(keys), kc.array(values), kc.array(ranges), out])
    got = out.numpy()
    assert got[:, 0].tolist() == [lower_bound_ref(keys, 0, 200, x) for x in values]
    assert got[:, 1].tolist() == [lower_bound_ref(keys, b, e, x)
                                  for (b, e), x in zip(ranges, values)]
    inside = values <= keys[-1]
    np.testing.assert_array_equal(got[inside, 0], np.searchsorted(keys, values[inside]))


@pytest.fixture
def cast_form():
    """`kc.cast` is a special form: registered here with the front end's table until
    kernelc.frontend.special lists `utility.SPECIAL_FORMS`."""
    from kernelc.frontend import special

    table = special._handlers()
    added = "cast" not in table
    table.setdefault("cast", utility.cast_form)
    yield
    if added:
        del table["cast"]


def test_cast_reinterprets_bits(rng, cast_form):
    n = 50
    x = rng.integers(-2**31, 2**31 - 1, n).astype(np.int32)
    x[0] = 0x40000000
    d = nonzero(rng, n, np.float64)
    v = nonzero(rng, 2 * n, np.float32).reshape(n, 2)
    outs = [poisoned(n, np.float32), poisoned(n, np.uint32), poisoned(n, np.int64),
            poisoned(n, np.uint64), kc.array(np.full((n, 2), np.nan, np.float32), dtype=kc.vec2),
            poisoned(n, np.int32)]
    kc.launch(casts, n, inputs=[kc.array(x), kc.array(d), kc.array(v, dtype=kc.vec2), *outs])
    np.testing.assert_array_equal(outs[0].numpy().view(np.int32), x)
    assert outs[0].numpy()[0] == 2.0
    np.testing.assert_array_equal(outs[1].numpy(), x.view(np.uint32))
    np.testing.assert_array_equal(outs[2].numpy(), d.view(np.int64))
    np.testing.assert_array_equal(outs[3].numpy(), v.view(np.uint64).ravel())
    np.testing.assert_array_equal(outs[4].numpy(), v)
    shorts = (x % 1000).astype(np.int16)  # C's %: the sign of x
    shorts = np.where(x < 0, -(np.abs(x) % 1000), x % 1000).astype(np.int16)
    want = (shorts.astype(np.int32) << 16) | 0x4000  # float16(2.0) == 0x4000
    np.testing.assert_array_equal(outs[5].numpy(), want)


def test_expect_helpers_print_warps_text(capfd):
    kc.launch(expectations, 1, inputs=[kc.array(np.array([1.5], np.float32))])
    kc.synchronize()
    assert capfd.readouterr().out == WARP_EXPECT_OUTPUT


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


@pytest.fixture
def threads(monkeypatch):
    monkeypatch.setattr(kc.config, "num_threads", 4)


def _slots(n, k, seed=0):
    return np.random.default_rng(seed).integers(0, k, n).astype(np.int32)


@pytest.mark.parametrize("itype, ftype", [(kc.int32, kc.float32), (kc.uint64, kc.float64),
                                          (kc.int64, kc.float32), (kc.uint32, kc.float64)])
def test_cas_counter_under_contention(threads, itype, ftype):
    n, k = 60_000, 3
    slots = _slots(n, k)
    counts, sums = kc.zeros(k, dtype=itype), kc.zeros(k, dtype=ftype)
    kc.launch(cas_counter, n, inputs=[kc.array(slots), counts, sums])
    want = np.bincount(slots, minlength=k)
    np.testing.assert_array_equal(counts.numpy(), want)
    np.testing.assert_array_equal(sums.numpy(), want)


def test_spin_lock_from_cas_and_exch(threads):
    n, k = 40_000, 2
    slots = _slots(n, k, 1)
    locks, data = kc.zeros(k, dtype=int), kc.zeros(k, dtype=int)
    kc.launch(spin_lock, n, inputs=[kc.array(slots), locks, data])
    np.testing.assert_array_equal(data.numpy(), np.bincount(slots, minlength=k))
    np.testing.assert_array_equal(locks.numpy(), [0, 0])


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64],
                         ids=lambda d: np.dtype(d).name)
def test_and_or_xor_exch_under_contention(threads, dtype):
    n = 50_000
    info = np.iinfo(dtype)
    v = np.random.default_rng(2).integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    v |= np.array(1 << 5, dtype)  # one bit every value has: the and keeps it
    a = kc.array(np.full(3, -1).astype(dtype))
    o, x = kc.zeros(3, dtype=kc.types.from_numpy_dtype(dtype)), kc.array(np.zeros(3, dtype))
    ex = kc.array(np.full(5, 7, dtype))
    olds = poisoned(n, dtype)
    kc.launch(bitwise_and_exchange, n, inputs=[kc.array(v), a, o, x, ex, olds])
    for r in range(3):
        part = v[np.arange(n) % 3 == r]
        assert a.numpy()[r] == np.bitwise_and.reduce(part)
        assert o.numpy()[r] == np.bitwise_or.reduce(part)
        assert x.numpy()[r] == np.bitwise_xor.reduce(part)
    assert a.numpy()[0] & (1 << 5)
    # Every value written by exch comes back exactly once: as an old value or as the last.
    for r in range(5):
        mine = np.arange(n) % 5 == r
        seen = sorted(olds.numpy()[mine].tolist() + [ex.numpy()[r]])
        assert seen == sorted(v[mine].tolist() + [7])


def test_atomics_index_forms_in_one_launch():
    n = 16
    v = np.arange(1, n + 1, dtype=np.uint32) * 0x01010101
    a2, a3 = kc.zeros((2, 3), dtype=kc.uint32), kc.array(np.full((2, 2, 2), -1, np.int64))
    a4, c4 = kc.array(np.full((1, 2, 2, 1), 0.5)), kc.zeros((1, 1, 1, 4), dtype=kc.int32)
    olds = poisoned((n, 2), np.float64)
    kc.launch(index_forms, n, inputs=[kc.array(v), a2, a3, a4, c4, olds])
    i = np.arange(n)
    want2 = np.zeros((2, 3), np.uint32)
    want_and = np.full(2, -1, np.int64)
    want_xor = np.full(2, -1, np.int64)
    for k in range(n):
        want2[k % 2, k % 3] |= v[k]
        want_and[k % 2] &= np.int64(v[k])
        want_xor[k % 2] ^= np.int64(v[k])
    np.testing.assert_array_equal(a2.numpy(), want2)
    np.testing.assert_array_equal(a3.numpy()[0, :, 1], want_and)
    np.testing.assert_array_equal(a3.numpy()[1, :, 0], want_xor)
    np.testing.assert_array_equal(a3.numpy()[0, :, 0], [-1, -1])  # untouched
    for parity in (0, 1):
        mine = i % 2 == parity
        seen = sorted(olds.numpy()[mine, 0].tolist() + [a4.numpy()[0, 1, parity, 0]])
        assert seen == sorted(i[mine].astype(float).tolist() + [0.5])
    np.testing.assert_array_equal(c4.numpy()[0, 0, 0], [1, 2, 3, 4])  # the first cas per slot wins
    np.testing.assert_array_equal(olds.numpy()[:4, 1], [0, 0, 0, 0])
    np.testing.assert_array_equal(olds.numpy()[4:, 1], (i[4:] % 4) + 1)


def test_component_wise_atomics_on_vector_arrays():
    n = 40
    v = np.random.default_rng(4).integers(-1000, 1000, (n, 3)).astype(np.int32)
    acc = kc.array(np.array([[0, 0, 0], [-1, -1, -1], [0, 0, 0]], np.int32), dtype=kc.vec3i)
    swap = kc.array(np.array([[0.0, 1.0]]), dtype=kc.vec2d)
    olds = kc.array(np.full((n, 2), np.nan), dtype=kc.vec2d)
    kc.launch(vector_atomics, n, inputs=[kc.array(v, dtype=kc.vec3i), acc, swap, olds])
    got = acc.numpy()
    np.testing.assert_array_equal(got[0], np.bitwise_or.reduce(v, axis=0))
    np.testing.assert_array_equal(got[1], np.bitwise_and.reduce(v, axis=0))
    np.testing.assert_array_equal(got[2], np.bitwise_xor.reduce(v, axis=0))
    # Each component is swapped on its own: exactly one thread saw the initial (0, 1).
    final = swap.numpy()[0]
    assert final[1] == 7.0 and 1.0 <= final[0] <= n
    first = olds.numpy()
    assert ((first[:, 0] == 0.0).sum(), (first[:, 1] == 1.0).sum()) == (1, 1)


def test_thread_private_atomics_are_plain_updates():
    from kernelc.ir.analysis import thread_private_params

    fn = own_element.get_ir(own_element.param_types).kernel
    assert {p.id for p in fn.params[:2]} == set(thread_private_params(fn))
    n = 100
    a = kc.array(np.arange(n, dtype=np.int32) % 7)
    b = kc.array(np.full(n, 3.0, np.float32))
    olds = poisoned((n, 4), np.int32)
    kc.launch(own_element, n, inputs=[a, b, olds])
    i = np.arange(n, dtype=np.int32)
    start = i % 7
    after_cas = np.where(start == i, -i, start)
    after_xor = after_cas ^ 3
    after_or = after_xor | 64
    np.testing.assert_array_equal(olds.numpy(), np.stack([start, after_cas, after_xor, after_or],
                                                         axis=1))
    np.testing.assert_array_equal(a.numpy(), after_or & -2)
    want_b = i * np.float32(0.5)
    want_b[0] = 9.0
    np.testing.assert_array_equal(b.numpy(), want_b)


# ---- ReduceMode.Expand -----------------------------------------------------------------------


@kc.kernel(reduce_mode=kc.ReduceMode.Expand)
def expand_bitwise(x: kc.array(dtype=kc.uint32), a: kc.array(dtype=kc.uint32),
                   o: kc.array(dtype=kc.uint32), xo: kc.array(dtype=kc.uint32),
                   mixed: kc.array(dtype=kc.uint32), c: kc.array(dtype=int),
                   e: kc.array(dtype=int)):
    i = kc.tid()
    kc.atomic_and(a, i % 4, x[i])
    kc.atomic_or(o, i % 4, x[i])
    kc.atomic_xor(xo, i % 4, x[i])
    kc.atomic_or(mixed, 0, x[i])
    kc.atomic_and(mixed, 1, x[i])  # two kinds on one array: never expanded
    kc.atomic_cas(c, i % 2, 0, i)  # order-dependent: never expanded
    kc.atomic_exch(e, 0, i)


def test_expand_combines_bitwise_atomics_and_never_expands_cas_exch(threads):
    n = 100_000
    x = np.random.default_rng(5).integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    x |= np.uint32(1)
    args = [kc.array(x), kc.full(4, 0xFFFFFFFF, dtype=kc.uint32), kc.zeros(4, dtype=kc.uint32),
            kc.zeros(4, dtype=kc.uint32), kc.array(np.array([0, 0xFFFFFFFF], np.uint32)),
            kc.zeros(2, dtype=int), kc.array(np.array([-1], np.int32))]
    cmd = kc.launch(expand_bitwise, n, inputs=args, record_cmd=True)
    assert [(i, kind) for i, kind, _ in cmd.expand.targets] == [(1, "and"), (2, "or"),
                                                                 (3, "xor")]
    cmd.launch()
    for r in range(4):
        part = x[np.arange(n) % 4 == r]
        assert args[1].numpy()[r] == np.bitwise_and.reduce(part)
        assert args[2].numpy()[r] == np.bitwise_or.reduce(part)
        assert args[3].numpy()[r] == np.bitwise_xor.reduce(part)
    assert args[4].numpy().tolist() == [np.bitwise_or.reduce(x), np.bitwise_and.reduce(x)]
    assert args[5].numpy()[0] in range(0, n, 2) and args[5].numpy()[1] in range(1, n, 2)
    assert 0 <= args[6].numpy()[0] < n


# ---- errors ----------------------------------------------------------------------------------


@kc.kernel
def and_on_floats(a: kc.array(dtype=float)):
    kc.atomic_and(a, 0, 1.0)


@kc.kernel
def cas_on_int8(a: kc.array(dtype=kc.int8)):
    kc.atomic_cas(a, 0, kc.int8(0), kc.int8(1))


@kc.kernel
def xor_wrong_value(a: kc.array(dtype=kc.uint32)):
    kc.atomic_xor(a, 0, kc.int64(1))


@kc.kernel
def cas_missing_compare(a: kc.array2d(dtype=int)):
    kc.atomic_cas(a, 0, 1, 2)


@kc.kernel
def bit_count_float(a: kc.array(dtype=float)):
    a[0] = float(kc.bit_count(a[0]))


@kc.kernel
def search_2d(a: kc.array2d(dtype=float), out: kc.array(dtype=int)):
    out[0] = kc.lower_bound(a, 1.0)


@kc.kernel
def cast_wrong_size(a: kc.array(dtype=float), out: kc.array(dtype=kc.float64)):
    out[0] = kc.cast(a[0], kc.float64)


@pytest.mark.parametrize("kernel, args, message", [
    (and_on_floats, [kc.zeros(1)],
     "atomic_and(): atomic_and() works on arrays of [u]int32 or [u]int64"),
    (cas_on_int8, [kc.zeros(1, dtype=kc.int8)],
     "atomic_cas() works on arrays of [u]int32, [u]int64, float32 or float64"),
    (xor_wrong_value, [kc.zeros(1, dtype=kc.uint32)],
     "value of type int64 for an array of uint32"),
    (cas_missing_compare, [kc.zeros((1, 1), dtype=int)], "2-d array indexed with 1 indices"),
    (bit_count_float, [kc.zeros(1)], "bit_count(): expected an integer, got float32"),
    (search_2d, [kc.zeros((2, 2)), kc.zeros(1, dtype=int)], "expected a 1-d array of scalars"),
])
def test_errors_name_the_builtin_and_the_line(kernel, args, message):
    with pytest.raises(kc.KernelError) as err:
        kc.launch(kernel, 1, inputs=args)
    text = str(err.value)
    assert message in text, text
    assert "test_builtins_extra.py:" in text and "^" in text


def test_cast_needs_equal_sizes(cast_form):
    with pytest.raises(kc.KernelError, match="cast\\(\\) needs types of the same size"):
        kc.launch(cast_wrong_size, 1, inputs=[kc.zeros(1), kc.zeros(1, dtype=kc.float64)])


# ---- against Warp ----------------------------------------------------------------------------

WARP_PROGRAM = """
from typing import Any

@wp.kernel
def scalars(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=float),
            out: wp.array2d(dtype=float), ints: wp.array(dtype=wp.int32),
            iout: wp.array2d(dtype=wp.int32)):
    i = wp.tid()
    out[i, 0] = wp.erf(x[i])
    out[i, 1] = wp.erfc(x[i])
    out[i, 2] = wp.erfinv(y[i])
    out[i, 3] = wp.erfcinv(z[i])
    out[i, 4] = wp.copysign(x[i], y[i])
    out[i, 5] = wp.div_approx(x[i], y[i])
    out[i, 6] = wp.nonzero(x[i])
    iout[i, 0] = wp.bit_count(ints[i])
    iout[i, 1] = wp.invert(ints[i])
    iout[i, 2] = wp.int32(wp.unot(ints[i]))
    iout[i, 3] = wp.int32(wp.bit_count(wp.int8(ints[i])))

@wp.kernel
def vectors(v: wp.array(dtype=wp.vec4), m: wp.array(dtype=wp.mat33), n: wp.array(dtype=wp.mat33),
            keys: wp.array(dtype=float), values: wp.array(dtype=float),
            ranges: wp.array2d(dtype=wp.int32), index: wp.array2d(dtype=wp.uint32),
            f: wp.array2d(dtype=float), smooth: wp.array(dtype=wp.vec4),
            inv: wp.array(dtype=wp.mat33), found: wp.array2d(dtype=wp.int32)):
    i = wp.tid()
    index[i, 0] = wp.argmin(v[i])
    index[i, 1] = wp.argmax(v[i])
    f[i, 0] = wp.ddot(m[i], n[i])
    f[i, 1] = wp.norm_l1(v[i])
    f[i, 2] = wp.norm_l2(v[i])
    f[i, 3] = wp.norm_huber(v[i])
    f[i, 4] = wp.norm_huber(v[i], 0.5)
    f[i, 5] = wp.norm_pseudo_huber(v[i])
    f[i, 6] = wp.norm_pseudo_huber(v[i], 2.0)
    f[i, 7] = float(wp.len(v[i]) + 10 * wp.len(m[i]) + 100 * wp.len(v))
    smooth[i] = wp.smooth_normalize(v[i], 0.7)
    inv[i] = wp.inverse_approx(m[i])
    found[i, 0] = wp.lower_bound(keys, values[i])
    found[i, 1] = wp.lower_bound(keys, ranges[i, 0], ranges[i, 1], values[i])

@wp.kernel
def atomics(v: wp.array(dtype=wp.uint32), a: wp.array(dtype=wp.uint32),
            o: wp.array(dtype=wp.uint32), x: wp.array(dtype=wp.uint32),
            c: wp.array(dtype=wp.int32), e: wp.array(dtype=float),
            olds: wp.array2d(dtype=wp.int32), fold: wp.array(dtype=float),
            bits: wp.array(dtype=wp.int32)):
    i = wp.tid()
    olds[i, 0] = wp.int32(wp.atomic_and(a, i % 3, v[i]))
    olds[i, 1] = wp.int32(wp.atomic_or(o, i % 3, v[i]))
    olds[i, 2] = wp.int32(wp.atomic_xor(x, i % 3, v[i]))
    olds[i, 3] = wp.atomic_cas(c, i % 2, 0, i + 1)
    fold[i] = wp.atomic_exch(e, 0, float(i))
    bits[i] = wp.cast(e[0], wp.int32)

d = inputs
wp.launch(scalars, len(d["x"]), inputs=[wp.array(d["x"]), wp.array(d["y"]), wp.array(d["z"])],
          outputs=[out := wp.zeros((len(d["x"]), 7), dtype=float),
                   wp.array(d["ints"]), iout := wp.zeros((len(d["x"]), 4), dtype=wp.int32)])
nv = len(d["v"])
vec_out = [wp.zeros((nv, 2), dtype=wp.uint32), wp.zeros((nv, 8), dtype=float),
           wp.zeros(nv, dtype=wp.vec4), wp.zeros(nv, dtype=wp.mat33),
           wp.zeros((nv, 2), dtype=wp.int32)]
wp.launch(vectors, nv, inputs=[wp.array(d["v"], dtype=wp.vec4), wp.array(d["m"], dtype=wp.mat33),
                               wp.array(d["m2"], dtype=wp.mat33), wp.array(d["keys"]),
                               wp.array(d["values"]), wp.array(d["ranges"])], outputs=vec_out)
na = len(d["bits_in"])
at = [wp.full(3, 0xFFFFFFFF, dtype=wp.uint32), wp.zeros(3, dtype=wp.uint32),
      wp.zeros(3, dtype=wp.uint32), wp.zeros(2, dtype=wp.int32), wp.full(1, -1.0, dtype=float),
      wp.zeros((na, 4), dtype=wp.int32), wp.zeros(na, dtype=float), wp.zeros(na, dtype=wp.int32)]
wp.launch(atomics, na, inputs=[wp.array(d["bits_in"])], outputs=at)
results.update(out=out.numpy(), iout=iout.numpy(), index=vec_out[0].numpy(),
               f=vec_out[1].numpy(), smooth=vec_out[2].numpy(), inv=vec_out[3].numpy(),
               found=vec_out[4].numpy(), a=at[0].numpy(), o=at[1].numpy(), x=at[2].numpy(),
               c=at[3].numpy(), e=at[4].numpy(), olds=at[5].numpy(), fold=at[6].numpy(),
               bits=at[7].numpy())
"""


@kc.kernel
def scalars_like_warp(x: kc.array(dtype=float), y: kc.array(dtype=float),
                      z: kc.array(dtype=float), out: kc.array2d(dtype=float),
                      ints: kc.array(dtype=kc.int32), iout: kc.array2d(dtype=kc.int32)):
    i = kc.tid()
    out[i, 0] = kc.erf(x[i])
    out[i, 1] = kc.erfc(x[i])
    out[i, 2] = kc.erfinv(y[i])
    out[i, 3] = kc.erfcinv(z[i])
    out[i, 4] = kc.copysign(x[i], y[i])
    out[i, 5] = kc.div_approx(x[i], y[i])
    out[i, 6] = kc.nonzero(x[i])
    iout[i, 0] = kc.bit_count(ints[i])
    iout[i, 1] = kc.invert(ints[i])
    iout[i, 2] = kc.int32(kc.unot(ints[i]))
    iout[i, 3] = kc.int32(kc.bit_count(kc.int8(ints[i])))


@kc.kernel
def atomics_like_warp(v: kc.array(dtype=kc.uint32), a: kc.array(dtype=kc.uint32),
                      o: kc.array(dtype=kc.uint32), x: kc.array(dtype=kc.uint32),
                      c: kc.array(dtype=kc.int32), e: kc.array(dtype=float),
                      olds: kc.array2d(dtype=kc.int32), fold: kc.array(dtype=float),
                      bits: kc.array(dtype=kc.int32)):
    i = kc.tid()
    olds[i, 0] = kc.int32(kc.atomic_and(a, i % 3, v[i]))
    olds[i, 1] = kc.int32(kc.atomic_or(o, i % 3, v[i]))
    olds[i, 2] = kc.int32(kc.atomic_xor(x, i % 3, v[i]))
    olds[i, 3] = kc.atomic_cas(c, i % 2, 0, i + 1)
    fold[i] = kc.atomic_exch(e, 0, float(i))
    bits[i] = kc.cast(e[0], kc.int32)


def test_same_results_as_warp(rng, tmp_path, cast_form, monkeypatch):
    monkeypatch.setattr(kc.config, "num_threads", 1)  # in order, as Warp's CPU runs threads
    n = 400
    x = nonzero(rng, n, np.float32, -3, 3)
    y = nonzero(rng, n, np.float32, -0.999, 0.999)
    z = rng.uniform(0.01, 1.99, n).astype(np.float32)
    ints = rng.integers(-2**31, 2**31 - 1, n).astype(np.int32)
    ints[:2] = [0, -1]
    nv = 64
    v, m, m2, _ = _vector_inputs(rng, nv)
    keys = np.sort(nonzero(rng, 100, np.float32, -50, 50))
    values = nonzero(rng, nv, np.float32, -60, 60)
    begin = rng.integers(0, 100, nv)
    ranges = np.stack([begin, np.minimum(100, begin + rng.integers(0, 30, nv))], 1).astype(np.int32)
    na = 50
    bits_in = rng.integers(0, 2**32, na, dtype=np.uint64).astype(np.uint32)
    warp = run_warp(WARP_PROGRAM, tmp_path, x=x, y=y, z=z, ints=ints, v=v, m=m, m2=m2, keys=keys,
                    values=values, ranges=ranges, bits_in=bits_in)

    out, iout = poisoned((n, 7), np.float32), poisoned((n, 4), np.int32)
    kc.launch(scalars_like_warp, n, inputs=[kc.array(x), kc.array(y), kc.array(z), out,
                                            kc.array(ints), iout])
    np.testing.assert_array_max_ulp(out.numpy()[:, :2], warp["out"][:, :2], 1)
    np.testing.assert_allclose(out.numpy()[:, 2:4], warp["out"][:, 2:4], rtol=3e-7)
    np.testing.assert_array_equal(out.numpy()[:, 4:], warp["out"][:, 4:])
    np.testing.assert_array_equal(iout.numpy(), warp["iout"])

    got = _run_vector_utils(v, m, m2, np.zeros((nv, 3), np.int32))
    np.testing.assert_array_equal(got["index"][:, :2], warp["index"])
    ok = ~np.isnan(v).any(axis=1)
    np.testing.assert_allclose(got["f"][ok], warp["f"][ok], rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(got["smooth"][ok], warp["smooth"][ok], rtol=2e-6)
    good = np.abs(np.linalg.det(m.astype(np.float64))) > 1e-2
    np.testing.assert_allclose(got["inv"][good], warp["inv"][good], rtol=1e-4, atol=1e-5)
    found = poisoned((nv, 2), np.int32)
    kc.launch(search, nv, inputs=[kc.array(keys), kc.array(values), kc.array(ranges), found])
    np.testing.assert_array_equal(found.numpy(), warp["found"])

    at = [kc.full(3, 0xFFFFFFFF, dtype=kc.uint32), kc.zeros(3, dtype=kc.uint32),
          kc.zeros(3, dtype=kc.uint32), kc.zeros(2, dtype=kc.int32), kc.full(1, -1.0),
          poisoned((na, 4), np.int32), poisoned(na, np.float32), poisoned(na, np.int32)]
    kc.launch(atomics_like_warp, na, inputs=[kc.array(bits_in), *at])
    for k, name in enumerate(("a", "o", "x", "c", "e", "olds", "fold", "bits")):
        np.testing.assert_array_equal(at[k].numpy(), warp[name], err_msg=name)


# ---- CUDA-C: NVRTC and the host harness ------------------------------------------------------


def _specialisations():
    return [
        (float_math, (T.ArrayType(T.float32, 1), T.ArrayType(T.float32, 1),
                      T.ArrayType(T.float32, 2))),
        (float_math, (T.ArrayType(T.float64, 1), T.ArrayType(T.float64, 1),
                      T.ArrayType(T.float64, 2))),
        (float_math, (T.ArrayType(T.float16, 1), T.ArrayType(T.float16, 1),
                      T.ArrayType(T.float16, 2))),
        (inverse_erf, (T.ArrayType(T.float32, 1),) * 2 + (T.ArrayType(T.float32, 2),)),
        (inverse_erf, (T.ArrayType(T.float64, 1),) * 2 + (T.ArrayType(T.float64, 2),)),
        (int_math, (T.ArrayType(T.int8, 1), T.ArrayType(T.int32, 1), T.ArrayType(T.int8, 1),
                    T.ArrayType(T.int8, 2), T.ArrayType(T.int32, 2))),
        (int_math, (T.ArrayType(T.uint64, 1), T.ArrayType(T.int32, 1),
                    T.ArrayType(T.uint64, 1), T.ArrayType(T.uint64, 2),
                    T.ArrayType(T.int32, 2))),
        (vector_utils, None), (search, (T.ArrayType(T.float32, 1),) * 2 +
                               (T.ArrayType(T.int32, 2),) * 2),
        (casts, None), (expectations, None), (spin_lock, None), (index_forms, None),
        (vector_atomics, None), (own_element, None),
        *((cas_counter, (T.ArrayType(T.int32, 1), T.ArrayType(it, 1), T.ArrayType(ft, 1)))
          for it, ft in ((T.int32, T.float32), (T.int64, T.float64), (T.uint32, T.float32),
                         (T.uint64, T.float64))),
        *((bitwise_and_exchange, (T.ArrayType(t, 1),) * 6)
          for t in (T.int32, T.int64, T.uint32, T.uint64)),
    ]


def _cuda_source(kernel, types):
    from kernelc.codegen.cuda import CudaOptions, emit_cuda

    return emit_cuda(kernel.get_ir(types or kernel.param_types), CudaOptions())


def test_cuda_c_compiles_with_nvrtc(cast_form):
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs the NVRTC bindings")
    from kernelc.codegen import nvrtc

    for kernel, types in _specialisations():
        source = _cuda_source(kernel, types)
        image, fmt = nvrtc.compile_cuda(source.text, 80, name=source.kernel)
        assert fmt == "cubin" and image[:4] == b"\x7fELF", kernel.__name__


def _vectors(a: np.ndarray):
    """An array of vectors / matrices for the harness: one element per leading index."""
    from kernelc.codegen.cuda_layout import ArrayArg

    return ArrayArg(a.ctypes.data, a.shape[:1], a.strides[:1])


@pytest.fixture
def harness():
    import cuda_harness

    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    return lambda kernel, types=None: cuda_harness.build(_cuda_source(kernel, types))


def test_harness_math_matches_the_cpu(rng, harness):
    n = 300
    for dtype, t in ((np.float32, T.float32), (np.float64, T.float64)):
        x, y = nonzero(rng, n, dtype, -3, 3), nonzero(rng, n, dtype)
        arrays = (T.ArrayType(t, 1), T.ArrayType(t, 1), T.ArrayType(t, 2))
        cpu, gpu = poisoned((n, 6), dtype), np.full((n, 6), np.nan, dtype)
        kc.launch(float_math, n, inputs=[kc.array(x), kc.array(y), cpu])
        harness(float_math, arrays).launch(n, [x, y, gpu], workers=2)
        np.testing.assert_array_max_ulp(gpu, cpu.numpy(), 1)
        yi = rng.uniform(-1, 1, n).astype(dtype)
        z = rng.uniform(0, 2, n).astype(dtype)
        cpu, gpu = poisoned((n, 2), dtype), np.full((n, 2), np.nan, dtype)
        kc.launch(inverse_erf, n, inputs=[kc.array(yi), kc.array(z), cpu])
        harness(inverse_erf, arrays).launch(n, [yi, z, gpu], workers=2)
        np.testing.assert_array_max_ulp(gpu, cpu.numpy(), 1)
    x = rng.integers(-128, 127, n).astype(np.int8)
    counts, inverted = np.full(n, -1, np.int32), np.zeros(n, np.int8)
    misc, flags = np.zeros((n, 2), np.int8), np.full((n, 2), -1, np.int32)
    harness(int_math, (T.ArrayType(T.int8, 1), T.ArrayType(T.int32, 1), T.ArrayType(T.int8, 1),
                       T.ArrayType(T.int8, 2), T.ArrayType(T.int32, 2))).launch(
        n, [x, counts, inverted, misc, flags])
    np.testing.assert_array_equal(counts, bits_of(x))
    np.testing.assert_array_equal(inverted, np.invert(x))
    np.testing.assert_array_equal(flags[:, 0], (x == 0).astype(np.int32))


def test_harness_search_and_cast_match_the_cpu(rng, harness, cast_form):
    keys = np.sort(nonzero(rng, 100, np.float32, -50, 50))
    n = 200
    values = nonzero(rng, n, np.float32, -60, 60)
    begin = rng.integers(0, 100, n)
    ranges = np.stack([begin, np.minimum(100, begin + rng.integers(0, 30, n))], 1).astype(np.int32)
    found = np.full((n, 2), -7, np.int32)
    harness(search, (T.ArrayType(T.float32, 1),) * 2 + (T.ArrayType(T.int32, 2),) * 2).launch(
        n, [keys, values, ranges, found])
    assert found[:, 1].tolist() == [lower_bound_ref(keys, b, e, x)
                                    for (b, e), x in zip(ranges, values)]
    x = rng.integers(-2**31, 2**31 - 1, n).astype(np.int32)
    d = nonzero(rng, n, np.float64)
    v = nonzero(rng, 2 * n, np.float32).reshape(n, 2)
    outs = [np.zeros(n, np.float32), np.zeros(n, np.uint32), np.zeros(n, np.int64),
            np.zeros(n, np.uint64), np.zeros((n, 2), np.float32), np.zeros(n, np.int32)]
    harness(casts).launch(n, [x, d, _vectors(v), *outs[:4], _vectors(outs[4]), outs[5]])
    np.testing.assert_array_equal(outs[0].view(np.int32), x)
    np.testing.assert_array_equal(outs[2], d.view(np.int64))
    np.testing.assert_array_equal(outs[4], v)
    shorts = np.where(x < 0, -(np.abs(x) % 1000), x % 1000).astype(np.int16)
    np.testing.assert_array_equal(outs[5], (shorts.astype(np.int32) << 16) | 0x4000)


def test_harness_atomics_under_contention(harness):
    n, k = 20_000, 3
    slots = _slots(n, k, 7)
    want = np.bincount(slots, minlength=k)
    for it, ft, ni, nf in ((T.int32, T.float32, np.int32, np.float32),
                           (T.uint64, T.float64, np.uint64, np.float64)):
        counts, sums = np.zeros(k, ni), np.zeros(k, nf)
        harness(cas_counter, (T.ArrayType(T.int32, 1), T.ArrayType(it, 1),
                              T.ArrayType(ft, 1))).launch(n, [slots, counts, sums], workers=4,
                                                          max_blocks=64)
        np.testing.assert_array_equal(counts, want)
        np.testing.assert_array_equal(sums, want)
    locks, data = np.zeros(k, np.int32), np.zeros(k, np.int32)
    harness(spin_lock).launch(n, [slots, locks, data], workers=4, max_blocks=64)
    np.testing.assert_array_equal(data, want)
    for dtype, t in ((np.int32, T.int32), (np.uint64, T.uint64), (np.int64, T.int64)):
        info = np.iinfo(dtype)
        v = np.random.default_rng(8).integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        a, o, x = np.full(3, -1).astype(dtype), np.zeros(3, dtype), np.zeros(3, dtype)
        ex, olds = np.full(5, 7, dtype), np.zeros(n, dtype)
        harness(bitwise_and_exchange, (T.ArrayType(t, 1),) * 6).launch(
            n, [v, a, o, x, ex, olds], workers=4, max_blocks=64)
        for r in range(3):
            part = v[np.arange(n) % 3 == r]
            assert (a[r], o[r], x[r]) == (np.bitwise_and.reduce(part),
                                          np.bitwise_or.reduce(part),
                                          np.bitwise_xor.reduce(part))
        for r in range(5):
            mine = np.arange(n) % 5 == r
            assert sorted(olds[mine].tolist() + [ex[r]]) == sorted(v[mine].tolist() + [7])


def test_harness_index_forms_and_vector_atomics_match_the_cpu(harness):
    n = 16
    v = np.arange(1, n + 1, dtype=np.uint32) * 0x01010101
    cpu = [kc.zeros((2, 3), dtype=kc.uint32), kc.array(np.full((2, 2, 2), -1, np.int64)),
           kc.array(np.full((1, 2, 2, 1), 0.5)), kc.zeros((1, 1, 1, 4), dtype=kc.int32)]
    kc.launch(index_forms, n, inputs=[kc.array(v), *cpu, poisoned((n, 2), np.float64)])
    host = [np.zeros((2, 3), np.uint32), np.full((2, 2, 2), -1, np.int64),
            np.full((1, 2, 2, 1), 0.5), np.zeros((1, 1, 1, 4), np.int32)]
    harness(index_forms).launch(n, [v, *host, np.zeros((n, 2))])
    for c, h in zip(cpu[:2], host[:2]):
        np.testing.assert_array_equal(h, c.numpy())
    np.testing.assert_array_equal(host[3], cpu[3].numpy())
    vi = np.random.default_rng(4).integers(-1000, 1000, (n, 3)).astype(np.int32)
    acc = np.array([[0, 0, 0], [-1, -1, -1], [0, 0, 0]], np.int32)
    swap, olds = np.array([[0.0, 1.0]]), np.zeros((n, 2))
    harness(vector_atomics).launch(n, [_vectors(vi), _vectors(acc), _vectors(swap),
                                       _vectors(olds)])
    np.testing.assert_array_equal(acc, [np.bitwise_or.reduce(vi), np.bitwise_and.reduce(vi),
                                        np.bitwise_xor.reduce(vi)])
    assert swap[0, 1] == 7.0 and ((olds[:, 0] == 0.0).sum(), (olds[:, 1] == 1.0).sum()) == (1, 1)


def test_harness_expect_output(harness, capfd):
    harness(expectations).launch(1, [np.array([1.5], np.float32)])
    assert capfd.readouterr().out == WARP_EXPECT_OUTPUT
