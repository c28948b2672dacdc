"""Warp's remaining scalar, bitwise and vector-utility builtins: erf and its inverses,
copysign, bit_count, invert, unot, nonzero, div_approx, argmin / argmax, ddot, the norms,
lower_bound, expect_*, len, cast and inverse_approx. NumPy (float64) references on random
non-zero inputs with poisoned outputs, host calls, and the error paths (with their
positions) of these builtins and of the atomics.

The atomics (atomic_and / or / xor / cas / exch) are in `tests/test_builtins_extra_atomics.py`;
the comparison with Warp and the CUDA-C (NVRTC, host harness) in
`tests/test_builtins_extra_warp_cuda.py`; the kernels they share in
`tests/builtins_extra_kernels.py`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import kernelc as kc
from kernelc.builtins import BUILTINS, primitive_keys
from tests.builtins_extra_kernels import (
    WARP_EXPECT_OUTPUT,
    _run_vector_utils,
    _vector_inputs,
    bits_of,
    cast_form_registered,
    casts,
    expectations,
    float_math,
    int_math,
    inverse_erf,
    lower_bound_ref,
    search,
)
from tests.conftest import nonzero, poisoned

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


def _arg_ref(row, better):
    best = None
    for k, x in enumerate(row):
        if np.isnan(x):
            continue
        if best is None or better(x, row[best]):
            best = k
    return 0 if best is None else best


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
    """`kc.cast` registered as a special form for the test (see `cast_form_registered`)."""
    with cast_form_registered():
        yield


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
