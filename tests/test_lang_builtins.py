"""Builtins of the table against NumPy; casts, random streams, atomics, print, assert,
local arrays."""

from __future__ import annotations

import math
import typing

import numpy as np
import pytest

import kernelc as kc
from kernelc.builtins import BUILTINS
from kernelc.ir import semantics
from tests.conftest import nonzero, poisoned, run_warp

# NumPy reference and input domain of every one-argument float builtin.
UNARY = {
    "sqrt": (np.sqrt, (0.1, 9)), "cbrt": (np.cbrt, (-9, 9)), "exp": (np.exp, (-5, 5)),
    "log": (np.log, (0.1, 9)), "log2": (np.log2, (0.1, 9)), "log10": (np.log10, (0.1, 9)),
    "sin": (np.sin, (-4, 4)), "cos": (np.cos, (-4, 4)), "tan": (np.tan, (-1.4, 1.4)),
    "asin": (np.arcsin, (-0.99, 0.99)), "acos": (np.arccos, (-0.99, 0.99)),
    "atan": (np.arctan, (-9, 9)), "sinh": (np.sinh, (-4, 4)), "cosh": (np.cosh, (-4, 4)),
    "tanh": (np.tanh, (-4, 4)), "floor": (np.floor, (-9, 9)), "ceil": (np.ceil, (-9, 9)),
    "round": (lambda x: np.trunc(x + np.copysign(0.5, x)), (-9, 9)), "rint": (np.rint, (-9, 9)),
    "trunc": (np.trunc, (-9, 9)), "frac": (lambda x: x - np.trunc(x), (-9, 9)),
    "fabs": (np.abs, (-9, 9)), "abs": (np.abs, (-9, 9)),
    "sign": (lambda x: np.where(x < 0, -1.0, 1.0), (-9, 9)),
    "step": (lambda x: np.where(x < 0, 1.0, 0.0), (-9, 9)),
    "degrees": (np.degrees, (-9, 9)), "radians": (np.radians, (-400, 400)),
    "neg": (np.negative, (-9, 9)),
}
BINARY = {
    "atan2": (np.arctan2, (-9, 9)), "pow": (np.power, (0.1, 3)),
    "min": (np.minimum, (-9, 9)), "max": (np.maximum, (-9, 9)), "add": (np.add, (-9, 9)),
    "sub": (np.subtract, (-9, 9)), "mul": (np.multiply, (-9, 9)),
    "div": (np.divide, (-9, 9)), "floordiv": (lambda x, y: np.floor(x / y), (-9, 9)),
    "mod": (np.fmod, (-9, 9)),
}
TERNARY = {
    "clamp": (lambda x, a, b: np.minimum(np.maximum(np.minimum(a, b), x), b), (-9, 9)),
    "lerp": (lambda a, b, t: a * (1 - t) + b * t, (-2, 2)),
    "smoothstep": (lambda e0, e1, x: (lambda u: u * u * (3 - 2 * u))(
        np.clip((x - e0) / (e1 - e0), 0, 1)), (-3, 3)),
}
PREDICATES = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}
OTHER = {"where", "select", "rand_init", "randf", "randi", "randu", "randn", "bit_and",
         "bit_or", "bit_xor", "lshift", "rshift", "atomic_add", "atomic_sub", "atomic_min",
         "atomic_max"}
# Tested in test_builtins_extra*.py (against NumPy and Warp).
OTHER |= {"atomic_and", "atomic_or", "atomic_xor", "atomic_cas", "atomic_exch", "bit_count",
          "cast", "copysign", "div_approx", "erf", "erfc", "erfinv", "erfcinv", "expect_eq",
          "expect_neq", "expect_near", "invert", "len", "lower_bound", "nonzero", "unot"}


def test_every_scalar_builtin_is_covered_here():
    covered = set(UNARY) | set(BINARY) | set(TERNARY) | set(PREDICATES) | OTHER
    scalar = {name for name, b in BUILTINS.items()
              if b.group in ("scalar math", "operators", "utility", "random", "atomic")}
    assert scalar <= covered, sorted(scalar - covered)


def _unary_kernel(name):
    fn = BUILTINS[name]

    @kc.kernel
    def unary(a: kc.array(dtype=typing.Any), o: kc.array(dtype=typing.Any)):
        i = kc.tid()
        o[i] = fn(a[i])

    return unary


def _binary_kernel(name):
    fn = BUILTINS[name]

    @kc.kernel
    def binary(a: kc.array(dtype=typing.Any), b: kc.array(dtype=typing.Any),
               o: kc.array(dtype=typing.Any)):
        i = kc.tid()
        o[i] = fn(a[i], b[i])

    return binary


def _ternary_kernel(name):
    fn = BUILTINS[name]

    @kc.kernel
    def ternary(a: kc.array(dtype=typing.Any), b: kc.array(dtype=typing.Any),
                c: kc.array(dtype=typing.Any), o: kc.array(dtype=typing.Any)):
        i = kc.tid()
        o[i] = fn(a[i], b[i], c[i])

    return ternary


TOL = {np.float32: 3e-6, np.float64: 1e-13}
N = 64


def _check(name, got, x64, ref, dtype):
    want = ref(*x64)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=TOL[dtype] * 4,
                               atol=TOL[dtype] * 4, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_builtin_matches_numpy(name, dtype, rng):
    ref, (lo, hi) = UNARY[name]
    a = nonzero(rng, N, dtype, lo, hi)
    if name in ("round", "rint"):
        a[:4] = np.array([0.5, -0.5, 1.5, -2.5], dtype)  # the halfway cases
    out = poisoned(N, dtype)
    t = kc.types.from_numpy_dtype(np.dtype(dtype))
    kc.launch(_unary_kernel(name), N, inputs=[kc.array(a, dtype=t), out])
    _check(name, out.numpy(), [a.astype(np.float64)], ref, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_builtin_matches_numpy(name, dtype, rng):
    ref, (lo, hi) = BINARY[name]
    a, b = nonzero(rng, N, dtype, lo, hi), nonzero(rng, N, dtype, lo, hi)
    out = poisoned(N, dtype)
    t = kc.types.from_numpy_dtype(np.dtype(dtype))
    kc.launch(_binary_kernel(name), N, inputs=[kc.array(a, dtype=t), kc.array(b, dtype=t), out])
    x64 = [a.astype(np.float64), b.astype(np.float64)]
    if name == "floordiv":
        assert np.mean(out.numpy() == ref(*x64).astype(dtype)) > 0.95
        return
    _check(name, out.numpy(), x64, ref, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(TERNARY))
def test_ternary_builtin_matches_numpy(name, dtype, rng):
    ref, (lo, hi) = TERNARY[name]
    args = [nonzero(rng, N, dtype, lo, hi) for _ in range(3)]
    if name == "clamp":
        args[1], args[2] = np.minimum(args[1], args[2]), np.maximum(args[1], args[2])
    out = poisoned(N, dtype)
    t = kc.types.from_numpy_dtype(np.dtype(dtype))
    kc.launch(_ternary_kernel(name), N, inputs=[kc.array(x, dtype=t) for x in args] + [out])
    _check(name, out.numpy(), [x.astype(np.float64) for x in args], ref, dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint32])
def test_integer_min_max_clamp_abs_sign(dtype, rng):
    @kc.kernel
    def int_math(a: kc.array(dtype=typing.Any), b: kc.array(dtype=typing.Any),
                 o: kc.array2d(dtype=typing.Any)):
        i = kc.tid()
        o[0, i] = min(a[i], b[i])
        o[1, i] = kc.max(a[i], b[i])
        o[2, i] = kc.clamp(a[i], 2, 5)
        o[3, i] = abs(a[i])
        o[4, i] = kc.sign(a[i])
        o[5, i] = kc.where(a[i] > b[i], a[i], b[i] + 1)
        o[6, i] = kc.select(a[i] > b[i], a[i], b[i] + 1)

    lo = 0 if np.dtype(dtype).kind == "u" else -9
    a, b = nonzero(rng, N, dtype, lo, 9), nonzero(rng, N, dtype, lo, 9)
    out = poisoned((7, N), dtype)
    t = kc.types.from_numpy_dtype(np.dtype(dtype))
    kc.launch(int_math, N, inputs=[kc.array(a, dtype=t), kc.array(b, dtype=t), out])
    want = [np.minimum(a, b), np.maximum(a, b), np.clip(a, 2, 5), np.abs(a),
            np.where(a < 0, -1, 1), np.where(a > b, a, b + 1), np.where(a > b, b + 1, a)]
    np.testing.assert_array_equal(out.numpy(), np.array(want).astype(dtype))


def test_float_predicates():
    @kc.kernel
    def predicates(a: kc.array(dtype=float), o: kc.array2d(dtype=bool)):
        i = kc.tid()
        o[0, i] = kc.isnan(a[i])
        o[1, i] = kc.isinf(a[i])
        o[2, i] = kc.isfinite(a[i])

    a = np.array([1.5, np.nan, np.inf, -np.inf, -2.0, 0.0], np.float32)
    out = poisoned((3, len(a)), np.bool_)
    kc.launch(predicates, len(a), inputs=[kc.array(a, dtype=float), out])
    np.testing.assert_array_equal(out.numpy(), [np.isnan(a), np.isinf(a), np.isfinite(a)])


@kc.kernel
def casts(a: kc.array(dtype=kc.float64), o8: kc.array(dtype=kc.int8),
          ou8: kc.array(dtype=kc.uint8), o32: kc.array(dtype=int), o64: kc.array(dtype=kc.int64),
          ou64: kc.array(dtype=kc.uint64), of: kc.array(dtype=float), ob: kc.array(dtype=bool)):
    i = kc.tid()
    x = a[i]
    o8[i] = kc.int8(x)
    ou8[i] = kc.uint8(x)
    o32[i] = int(x)
    o64[i] = kc.int64(x)
    ou64[i] = kc.uint64(x)
    of[i] = float(x)
    ob[i] = bool(x)


def test_casts_truncate_and_saturate_nan_is_zero():
    x = np.array([1.9, -1.9, 300.7, -300.7, 3e9, -3e9, 1e30, -1e30, np.nan, np.inf, -np.inf,
                  0.0], np.float64)
    outs = [poisoned(len(x), d) for d in (np.int8, np.uint8, np.int32, np.int64, np.uint64,
                                         np.float32, np.bool_)]
    kc.launch(casts, len(x), inputs=[kc.array(x, dtype=kc.float64), *outs])

    def sat(v, dtype):
        info = np.iinfo(dtype)
        return 0 if math.isnan(v) else int(min(max(np.trunc(v), info.min), info.max))

    for out, dtype in zip(outs[:5], (np.int8, np.uint8, np.int32, np.int64, np.uint64)):
        assert out.numpy().tolist() == [sat(v, dtype) for v in x], dtype
    np.testing.assert_array_equal(outs[5].numpy(), x.astype(np.float32))
    assert outs[6].numpy().tolist() == [bool(v) for v in x]


@kc.kernel
def convert_any(x: typing.Any, out: typing.Any):
    i = kc.tid()
    out[i] = out.dtype(x[i])


@pytest.mark.parametrize("src", [kc.float16, kc.float32, kc.float64], ids=repr)
def test_float_to_int_saturates_at_every_width_in_long_launches(src):
    # Long enough that the loop over threads runs vectorised: each conversion is a plain
    # one plus selects there, which must agree with the scalar definition at every edge.
    edges = [0.0, -0.0, 0.5, -0.99, 127.9, 128.0, -128.0, -129.0, 255.9, 256.0, 32768.0,
             -32769.0, 65536.0, 2.0**31 - 128, 2.0**31, -2.0**31, -2.0**31 - 256, 2.0**32,
             2.0**63, -2.0**63, 2.0**64, 1e30, -1e30, np.inf, -np.inf, np.nan, 3.7, -3.7]
    rng = np.random.default_rng(3)
    with np.errstate(over="ignore"):  # (halves overflow to infinities: edges too)
        x = np.concatenate([edges * 8, rng.uniform(-3e9, 3e9, 200)]).astype(src.np_dtype)
    for dst in (kc.int8, kc.int16, kc.int32, kc.int64, kc.uint8, kc.uint16, kc.uint32,
                kc.uint64):
        out = poisoned(len(x), dst.np_dtype)
        kc.launch(convert_any, len(x), inputs=[kc.array(x, dtype=src)], outputs=[out])
        want = [semantics.to_type(float(v), dst) for v in x]
        assert out.numpy().tolist() == want, dst


def test_integer_casts_wrap():
    @kc.kernel
    def int_casts(a: kc.array(dtype=kc.int64), o: kc.array2d(dtype=kc.int64)):
        i = kc.tid()
        o[0, i] = kc.int64(kc.int8(a[i]))
        o[1, i] = kc.int64(kc.uint16(a[i]))
        o[2, i] = kc.int64(kc.uint32(kc.int32(a[i])))
        o[3, i] = kc.int64(kc.float32(a[i]))

    x = np.array([300, -129, 70000, -1, 2**40 + 5, 12345], np.int64)
    out = poisoned((4, len(x)), np.int64)
    kc.launch(int_casts, len(x), inputs=[kc.array(x, dtype=kc.int64), out])
    want = [x.astype(np.int8), x.astype(np.uint16), x.astype(np.int32).astype(np.uint32),
            x.astype(np.float32)]
    np.testing.assert_array_equal(out.numpy(), np.array(want).astype(np.int64))


# ---- random numbers ------------------------------------------------------------------------

RAND_N = 64


@kc.kernel
def rand_streams(seed: int, f: kc.array2d(dtype=float), n: kc.array2d(dtype=float),
                 ii: kc.array2d(dtype=int), u: kc.array2d(dtype=kc.uint32)):
    i = kc.tid()
    st = kc.rand_init(seed, i)
    f[0, i] = kc.randf(st)
    f[1, i] = kc.randf(st, -2.0, 3.0)
    n[0, i] = kc.randn(st)
    n[1, i] = kc.randn(st)
    ii[0, i] = kc.randi(st)
    ii[1, i] = kc.randi(st, -5, 17)
    u[0, i] = kc.randu(st)
    u[1, i] = kc.randu(st, kc.uint32(3), kc.uint32(1000))
    s1 = kc.rand_init(seed + i)
    f[2, i] = kc.randf(s1)


_WARP_RAND = """
@wp.kernel
def rand_streams(seed: int, f: wp.array2d(dtype=float), n: wp.array2d(dtype=float),
                 ii: wp.array2d(dtype=int), u: wp.array2d(dtype=wp.uint32)):
    i = wp.tid()
    st = wp.rand_init(seed, i)
    f[0, i] = wp.randf(st)
    f[1, i] = wp.randf(st, -2.0, 3.0)
    n[0, i] = wp.randn(st)
    n[1, i] = wp.randn(st)
    ii[0, i] = wp.randi(st)
    ii[1, i] = wp.randi(st, -5, 17)
    u[0, i] = wp.randu(st)
    u[1, i] = wp.randu(st, wp.uint32(3), wp.uint32(1000))
    s1 = wp.rand_init(seed + i)
    f[2, i] = wp.randf(s1)

N = int(inputs["n"])
f = wp.zeros((3, N), dtype=float)
n = wp.zeros((2, N), dtype=float)
ii = wp.zeros((2, N), dtype=int)
u = wp.zeros((2, N), dtype=wp.uint32)
wp.launch(rand_streams, N, inputs=[int(inputs["seed"]), f, n, ii, u])
results.update(f=f.numpy(), n=n.numpy(), ii=ii.numpy(), u=u.numpy())
"""


def run_rand(seed, size):
    outs = [poisoned((3, size), np.float32), poisoned((2, size), np.float32),
            poisoned((2, size), np.int32), poisoned((2, size), np.uint32)]
    kc.launch(rand_streams, size, inputs=[seed, *outs])
    return [o.numpy() for o in outs]


def test_random_streams_match_warp(tmp_path):
    warp = run_warp(_WARP_RAND, tmp_path, n=np.array(RAND_N), seed=np.array(42))
    f, n, ii, u = run_rand(42, RAND_N)
    np.testing.assert_array_equal(f, warp["f"])
    np.testing.assert_array_equal(ii, warp["ii"])
    np.testing.assert_array_equal(u, warp["u"])
    np.testing.assert_allclose(n, warp["n"], rtol=1e-5, atol=1e-6)  # libm may differ in ulps


def test_random_distributions_are_sane():
    f, n, ii, u = run_rand(7, 20000)
    assert 0.0 <= f[0].min() and f[0].max() < 1.0 and abs(f[0].mean() - 0.5) < 0.01
    assert -2.0 <= f[1].min() and f[1].max() < 3.0 and abs(f[1].mean() - 0.5) < 0.05
    assert abs(n.mean()) < 0.03 and abs(n.std() - 1.0) < 0.03
    assert ii[1].min() == -5 and ii[1].max() == 16
    assert u[1].min() >= 3 and u[1].max() < 1000
    assert len(np.unique(ii[0])) > 19900  # distinct threads get distinct streams


# ---- atomics ---------------------------------------------------------------------------------


@kc.kernel
def atomics(v: kc.array(dtype=typing.Any), acc: kc.array(dtype=typing.Any),
            old: kc.array2d(dtype=typing.Any)):
    i = kc.tid()
    old[0, i] = kc.atomic_add(acc, 0, v[i])
    old[1, i] = kc.atomic_sub(acc, 1, v[i])
    old[2, i] = kc.atomic_min(acc, 2, v[i])
    old[3, i] = kc.atomic_max(acc, 3, v[i])
    acc[4] += v[i]
    acc[5] -= v[i]


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.float32, np.float64])
def test_atomics_return_old_values_and_accumulate(dtype, rng):
    n = 2000
    v = nonzero(rng, n, dtype, 1, 50)
    start = np.array([0, 10**6, 10**6, 0, 0, 10**6], dtype)
    acc = kc.array(start.copy(), dtype=kc.types.from_numpy_dtype(np.dtype(dtype)))
    old = poisoned((4, n), dtype)
    t = kc.types.from_numpy_dtype(np.dtype(dtype))
    kc.launch(atomics, n, inputs=[kc.array(v, dtype=t), acc, old])
    got = acc.numpy().astype(np.float64)
    total = v.astype(np.float64).sum()
    tol = 1e-3 * total if np.dtype(dtype).kind == "f" else 0
    assert abs(got[0] - total) <= tol and abs(got[4] - total) <= tol
    assert abs(got[1] - (10**6 - total)) <= tol and abs(got[5] - (10**6 - total)) <= tol
    assert got[2] == v.min() and got[3] == v.max()
    o = old.numpy().astype(np.float64)
    # the old values of the add are the running sums in some order: each below the total,
    # distinct for integers, and one of them is the start value 0
    assert o[0].min() == 0 and o[0].max() < total + tol
    if np.dtype(dtype).kind != "f":
        assert len(np.unique(o[0])) == n
        # each thread's old value plus its own addend is the next running sum
        after = np.sort(o[0] + v.astype(np.float64))
        assert after[-1] == total and (after[:-1] == np.sort(o[0])[1:]).all()
    assert o[2].max() == 10**6 and (o[2] >= v.min()).all()
    assert o[3].min() == 0 and (o[3] <= v.max()).all()


@kc.kernel
def atomic_minmax_nan(slot: kc.array(dtype=typing.Any), value: kc.array(dtype=typing.Any),
                      lo: kc.array(dtype=typing.Any), hi: kc.array(dtype=typing.Any),
                      shared: kc.array(dtype=typing.Any)):
    i = kc.tid()
    lo[i] = slot[i]  # each thread owns its element: a plain read-modify-write
    hi[i] = slot[i]
    kc.atomic_min(lo, i, value[i])
    kc.atomic_max(hi, i, value[i])
    kc.atomic_min(shared, 0, value[i])  # all threads on one element: a real atomic
    kc.atomic_max(shared, 1, value[i])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_atomic_min_max_treat_nan_as_missing(dtype, rng):
    # Warp's rule (fmin/fmax): a NaN value leaves the element alone, a NaN element gives way.
    n = 64
    slot = nonzero(rng, n, dtype, -4, 4)
    value = nonzero(rng, n, dtype, -4, 4)
    slot[::3] = np.nan
    value[1::4] = np.nan
    t = kc.types.from_numpy_dtype(np.dtype(dtype))
    lo, hi = poisoned(n, dtype), poisoned(n, dtype)
    shared = kc.array(np.full(2, np.nan, dtype), dtype=t)
    kc.launch(atomic_minmax_nan, n, inputs=[kc.array(slot, dtype=t), kc.array(value, dtype=t),
                                           lo, hi, shared])
    np.testing.assert_array_equal(lo.numpy(), np.fmin(slot, value))
    np.testing.assert_array_equal(hi.numpy(), np.fmax(slot, value))
    np.testing.assert_array_equal(shared.numpy(), [np.nanmin(value), np.nanmax(value)])


def test_float_atomic_add_under_heavy_contention(rng):
    @kc.kernel
    def total(v: kc.array(dtype=float), out: kc.array(dtype=float)):
        kc.atomic_add(out, 0, v[kc.tid()])

    v = rng.uniform(0.5, 1.5, 200_000).astype(np.float32)
    out = kc.zeros(1, dtype=float)
    kc.launch(total, len(v), inputs=[kc.array(v, dtype=float), out])
    assert abs(out.numpy()[0] - v.astype(np.float64).sum()) < 1e-4 * v.sum()


# ---- print, assert, local arrays -------------------------------------------------------------


def test_print_and_printf(capfd):
    @kc.kernel
    def talk(a: kc.array(dtype=int), x: kc.float64):
        i = kc.tid()
        print("value", a[i], x)
        kc.printf("i=%d x=%.2f\n", i, x)

    kc.launch(talk, 1, inputs=[kc.array(np.array([42], np.int32), dtype=int), 2.5])
    out = capfd.readouterr().out
    assert "value 42 2.5" in out and "i=0 x=2.50" in out


def test_print_formats_values_as_warp_does(capfd):
    # Warp's text for each kind (checked against Warp 1.19): bools as words, a vector's
    # components each followed by a space, a matrix row per line.
    @kc.kernel
    def show(x: kc.array(dtype=float)):
        i = kc.tid()
        print(x[i] > 0.5)
        print(x[i] > 0.5, "and", x[i] < 0.5, 3)
        kc.printf("%d\n", x[i] > 0.5)
        print(kc.vec3(1.0, 2.0, x[i]))
        print(kc.vec2i(3, -4))
        print(kc.mat22(1.0, 2.0, 3.0, 4.5))
        print(kc.quat(0.0, 0.0, 0.0, 1.0))
        print(kc.transform(kc.vec3(1.0, 2.0, 3.0), kc.quat(0.0, 0.0, 0.0, 1.0)))

    kc.launch(show, 1, inputs=[kc.array(np.array([0.75], np.float32))])
    out = capfd.readouterr().out
    assert out == ("True\nTrue and False 3\n1\n1 2 0.75 \n3 -4 \n1 2 \n3 4.5 \n0 0 0 1\n"
                   "(1 2 3) (0 0 0 1)\n")


def test_print_of_too_many_bools_is_a_clear_error():
    with pytest.raises(kc.KernelError, match="at most 4 bools"):
        @kc.kernel
        def chatty(x: kc.array(dtype=float)):
            b = x[0] > 0.0
            print(b, b, b, b, b)

        kc.launch(chatty, 1, inputs=[kc.zeros(1, dtype=float)])


@kc.kernel
def checked(a: kc.array(dtype=int)):
    i = kc.tid()
    assert a[i] < 10
    a[i] = a[i] + 1


def test_assert_raises_in_debug_mode(debug_mode):
    a = kc.array(np.array([1, 2, 30], np.int32), dtype=int)
    with pytest.raises(kc.KernelRuntimeError, match="assertion failed") as info:
        kc.launch(checked, 3, inputs=[a])
    assert "checked" in str(info.value) and "assert a[i] < 10" in str(info.value)


def test_assert_is_ignored_in_release_mode():
    a = kc.array(np.array([1, 2, 30], np.int32), dtype=int)
    kc.launch(checked, 3, inputs=[a])
    assert a.numpy().tolist() == [2, 3, 31]


@kc.kernel
def local_arrays(a: kc.array2d(dtype=float), o: kc.array2d(dtype=float)):
    i = kc.tid()
    hist = kc.zeros(shape=4, dtype=int)
    for r in range(3):
        tmp = kc.zeros(shape=4, dtype=float)  # fresh (zero) on every iteration
        for k in range(4):
            tmp[k] += a[i, k] * float(r + 1)
            hist[k] = hist[k] + 1
        for k in range(4):
            o[i, 4 * r + k] = tmp[k]
    for k in range(4):
        o[i, 12 + k] = float(hist[k])


def test_local_arrays_start_at_zero_in_every_iteration(rng):
    a = nonzero(rng, (8, 4), np.float32)
    out = poisoned((8, 16), np.float32)
    kc.launch(local_arrays, 8, inputs=[kc.array(a, dtype=float), out])
    want = np.concatenate([a, 2 * a, 3 * a, np.full((8, 4), 3.0, np.float32)], axis=1)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
