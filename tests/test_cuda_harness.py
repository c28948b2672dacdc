"""The generated CUDA-C run on the host (grid emulated, g++) against NumPy references.

Inputs are random and non-zero where it matters, outputs poisoned (NaN / sentinel) first.
Integer results are compared exactly with the IR's executable semantics
(`kernelc.ir.semantics`), float results with float64 NumPy references.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import cuda_harness
import numpy as np
import pytest
from cuda_harness import kernels as K

from kernelc import types as T
from kernelc.codegen.cuda import CudaOptions, emit_cuda
from kernelc.ir import semantics
from kernelc.ir.nodes import OpCode

pytestmark = pytest.mark.skipif(shutil.which(cuda_harness.CXX) is None, reason="needs g++")

SENTINEL = -0x5A5A5A5A


def run(kernel, types=None, *, debug=False):
    """The host build of `kernel` (IR -> CUDA-C -> g++)."""
    return cuda_harness.build(emit_cuda(K.get_ir(kernel, types), CudaOptions(debug=debug)))


def poisoned(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype)
    if dtype.kind == "b":
        return np.zeros(shape, dtype)
    return np.full(shape, SENTINEL, np.int64).astype(dtype)


def _edge_ints(t: T.ScalarType, rng, n: int) -> np.ndarray:
    lo, hi = semantics.int_range(t)
    edges = [0, 1, -1, lo, hi, 7, -7, -2, 2, 3, t.bits - 1, t.bits, t.bits + 1, -t.bits, lo + 1]
    values = [semantics.wrap(v, t) for v in edges]
    values += [int(x) for x in rng.integers(lo, hi, size=n - len(values), endpoint=True,
                                            dtype=np.int64 if t.bits < 64 or t.kind == "int"
                                            else np.uint64)]
    return np.array(values, dtype=t.np_dtype)


@pytest.mark.parametrize("t", [T.int32, T.int64, T.uint32, T.int8, T.uint64], ids=repr)
def test_int_ops_match_semantics(t):
    rng = np.random.default_rng(1)
    n = 240
    a = _edge_ints(t, rng, n)
    b = np.roll(_edge_ints(t, rng, n), 3)
    b[:40] = _edge_ints(t, rng, n)[:40]  # every edge value against every other nearby
    a[:15], b[:15] = a[:15], a[:15][::-1].copy()
    out = poisoned((n, len(K.INT_OPS)), t.np_dtype)
    run(K.int_ops, K.int_ops_types(t)).launch(n, [a, b, out])
    binary = [OpCode.ADD, OpCode.SUB, OpCode.MUL, OpCode.DIV, OpCode.MOD, OpCode.FLOORDIV,
              OpCode.SHL, OpCode.SHR, OpCode.BITAND, OpCode.BITOR, OpCode.BITXOR]
    for i in range(n):
        x, y = int(a[i]), int(b[i])
        want = [semantics.eval_binary(op, x, y, t) for op in binary]
        want += [semantics.eval_unary(OpCode.NEG, x, t), semantics.eval_unary(OpCode.INVERT, x, t)]
        got = [int(v) for v in out[i]]
        assert got == want, (x, y, dict(zip(K.INT_OPS, zip(got, want))))


def test_int_division_edge_cases_explicitly():
    a = np.array([7, -7, 7, -7, -(2**31), -(2**31), 5, 0], np.int32)
    b = np.array([-2, 2, 0, -1, -1, 1, 33, -3], np.int32)
    out = poisoned((8, len(K.INT_OPS)), np.int32)
    run(K.int_ops, K.int_ops_types(T.int32)).launch(8, [a, b, out])
    col = {name: out[:, k].tolist() for k, name in enumerate(K.INT_OPS)}
    assert col["div"] == [-3, -3, 0, 7, -(2**31), -(2**31), 0, 0]
    assert col["floordiv"] == [-4, -4, 0, 7, -(2**31), -(2**31), 0, 0]
    assert col["mod"] == [1, -1, 0, 0, 0, 0, 5, 0]
    assert col["shl"][6] == 10  # 5 << (33 & 31)
    assert col["neg"][4] == -(2**31)


@pytest.mark.parametrize("t", [T.float32, T.float64], ids=repr)
def test_float_ops(t):
    rng = np.random.default_rng(2)
    n = 200
    a = rng.uniform(-50, 50, n).astype(t.np_dtype)
    b = (rng.uniform(0.5, 4, n) * rng.choice([-1, 1], n)).astype(t.np_dtype)
    a[:4] = [7.0, -7.0, 0.5, 3.0]
    b[:4] = [-2.0, 2.0, 0.0, -0.0]
    out = poisoned((n, len(K.FLOAT_OPS)), t.np_dtype)
    run(K.float_ops, K.float_ops_types(t)).launch(n, [a, b, out])
    with np.errstate(all="ignore"):
        exact = [a + b, a - b, a * b, a / b, np.floor(a / b), np.fmod(a, b)]
        np.testing.assert_array_equal(out[:, :6], np.stack(exact, axis=1))
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        pos = a64 > 0
        np.testing.assert_allclose(out[pos, 6], np.power(a64[pos], b64[pos]), rtol=3e-6)
    np.testing.assert_array_equal(out[:, 7], -a)
    assert out[0, 4] == -4.0 and out[0, 5] == 1.0


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_compares(dtype):
    rng = np.random.default_rng(3)
    n = 64
    a = rng.integers(-3, 3, n).astype(dtype)
    b = rng.integers(-3, 3, n).astype(dtype)
    if dtype == np.float32:
        a[:3] = [np.nan, 1.0, np.nan]
        b[:3] = [1.0, np.nan, np.nan]
    out = np.ones((n, 6), bool)
    t = T.from_numpy_dtype(dtype)
    run(K.compares, (T.ArrayType(t, 1), T.ArrayType(t, 1), None)).launch(n, [a, b, out])
    want = np.stack([a == b, a != b, a < b, a <= b, a > b, a >= b], axis=1)
    np.testing.assert_array_equal(out, want)


def _saturate(x: float, t: T.ScalarType) -> int:
    if math.isnan(x):
        return 0
    lo, hi = semantics.int_range(t)
    if math.isinf(x):
        return hi if x > 0 else lo
    return max(lo, min(hi, math.trunc(x)))


def test_casts_saturate_and_wrap():
    rng = np.random.default_rng(4)
    n = 64
    special = [np.nan, np.inf, -np.inf, 1e10, -1e10, 3.7, -3.7, 300.0, -300.0, 2.0**31,
               -(2.0**31), 2.0**32, 255.5, -0.9, 2.0**63, 2.0**64]
    f = np.concatenate([special, rng.uniform(-1e3, 1e3, n - len(special))]).astype(np.float32)
    d = np.concatenate([special[::-1], rng.uniform(-1e5, 1e5, n - len(special))])
    big = rng.integers(-(2**62), 2**62, n, dtype=np.int64)
    big[:3] = [2**31, -(2**31) - 1, 2**24 + 1]
    out_i = poisoned((n, 10), np.int64)
    out_f = poisoned((n, 4), np.float64)
    run(K.casts).launch(n, [f, d, big, out_i, out_f])
    for i in range(n):
        x, y = float(f[i]), float(d[i])
        want = [_saturate(x, T.int32), _saturate(x, T.int8), _saturate(x, T.uint32),
                _saturate(x, T.uint8), _saturate(x, T.int64),
                semantics.wrap(int(big[i]), T.int32), semantics.wrap(int(big[i]), T.uint16),
                _saturate(y, T.int16), semantics.wrap(_saturate(y, T.uint64), T.int64),
                int(x > 0)]
        assert out_i[i].tolist() == want, (i, x, y)
    np.testing.assert_array_equal(out_f[:, 0], big.astype(np.float32).astype(np.float64))
    np.testing.assert_array_equal(out_f[:, 1], big.astype(np.float64))
    np.testing.assert_array_equal(out_f[:, 2], d.astype(np.float32).astype(np.float64))
    np.testing.assert_array_equal(out_f[:, 3], big.astype(np.uint32).astype(np.float64))


def _control_reference(n: np.ndarray, step: np.ndarray, i: int) -> list[int]:
    acc = 0
    for j in range(n[i]):
        if j % 3 == 1:
            continue
        for k in range(j, -1, -1):
            if k < j - 2:
                break
            acc += k
    rng = range(n[i], -n[i], step[i])
    w, m = 0, n[i]
    while m > 0:
        m -= 1
        if m == 2:
            continue
        if w > 40:
            break
        w += m
    last = i + 1 >= len(n)
    ok = not last and n[i + 1] > 3
    even = last or n[i + 1] % 2 == 0
    count_to = sum(range(min(n[i], 5))) + (1000 if n[i] > 5 else 0)
    a = n[i] - 7
    q, r = a // 3, int(math.fmod(a, 3))
    return [acc, sum(rng), len(rng), w, int(ok), 7 if even else -7, count_to, q * 100 + r]


def test_control_flow_and_funcs():
    rng = np.random.default_rng(5)
    n = rng.integers(0, 12, 70).astype(np.int32)
    step = rng.choice([1, 2, 3, -1, -2, -5], 70).astype(np.int32)
    out = poisoned((70, 8), np.int32)
    # debug mode: the short-circuited reads of n[i + 1] must never be evaluated
    assert run(K.control, debug=True).launch(70, [n, step, out]) is None
    for i in range(70):
        assert out[i].tolist() == _control_reference(n, step, i), i


def test_early_return_ends_only_that_thread():
    a = np.array([1.0, -1.0, 2.0, -3.0, 4.0] * 20, np.float32)
    out = poisoned(100, np.float32)
    run(K.early_return).launch(100, [a, out])
    np.testing.assert_array_equal(out[a >= 0], a[a >= 0] * 2)
    assert np.isnan(out[a < 0]).all()


def test_float_atomics_under_contention():
    rng = np.random.default_rng(6)
    n = 4000
    v = rng.uniform(-1, 1, n).astype(np.float32)
    total = np.zeros(3, np.float32)
    lo, hi = np.full(1, np.inf, np.float32), np.full(1, -np.inf, np.float32)
    olds = poisoned((n, 2), np.float32)
    run(K.atomics_float).launch(n, [v, total, lo, hi, olds], workers=4, max_blocks=64)
    exact = v.astype(np.float64).sum()
    np.testing.assert_allclose(total, [exact, exact, -exact], atol=2e-3)
    assert lo[0] == v.min() and hi[0] == v.max()
    assert (olds[:, 0] >= v.min()).all() and (olds[:, 1] <= v.max()).all()
    assert np.isin(olds[:, 0], np.append(v, np.inf)).all()


def test_atomic_min_max_return_old_values_in_order():
    v = np.random.default_rng(7).uniform(-1, 1, 200).astype(np.float32)
    total = np.zeros(3, np.float32)
    lo, hi = np.full(1, 0.5, np.float32), np.full(1, -0.5, np.float32)
    olds = poisoned((200, 2), np.float32)
    run(K.atomics_float).launch(200, [v, total, lo, hi, olds], block_dim=256)  # tid order
    np.testing.assert_array_equal(olds[:, 0], np.minimum.accumulate(np.append(0.5, v))[:-1])
    np.testing.assert_array_equal(olds[:, 1], np.maximum.accumulate(np.append(-0.5, v))[:-1])


def test_float_atomic_min_max_treat_nan_as_missing():
    """As fminf/fmaxf (and Warp): a NaN value leaves the element, a NaN element gives way."""
    v = np.random.default_rng(9).uniform(-1, 1, 200).astype(np.float32)
    v[[3, 50, 51, 199]] = np.nan
    total = np.zeros(3, np.float32)
    lo, hi = np.full(1, np.nan, np.float32), np.full(1, np.nan, np.float32)
    olds = poisoned((200, 2), np.float32)
    run(K.atomics_float).launch(200, [v, total, lo, hi, olds], block_dim=256)  # tid order
    np.testing.assert_array_equal(olds[:, 0], np.fmin.accumulate(np.append(np.nan, v))[:-1])
    np.testing.assert_array_equal(olds[:, 1], np.fmax.accumulate(np.append(np.nan, v))[:-1])
    assert lo[0] == np.nanmin(v) and hi[0] == np.nanmax(v)


@pytest.mark.parametrize("t", [T.int32, T.int64, T.uint32, T.int16], ids=repr)
def test_int_atomics(t):
    n = 300
    v = _edge_ints(t, np.random.default_rng(8), n)
    sums = np.zeros(2, t.np_dtype)
    info = np.iinfo(t.np_dtype)
    lo, hi = np.full(2, info.max, t.np_dtype), np.full(2, info.min, t.np_dtype)
    olds = poisoned((n, 2), t.np_dtype)
    kernel = run(K.atomics_int, K.atomics_int_types(t))
    kernel.launch(n, [v, sums, lo, hi, olds], block_dim=512)
    total = sum(int(x) for x in v)
    assert [int(x) for x in sums] == [semantics.wrap(total, t), semantics.wrap(-total, t)]
    for parity in (0, 1):
        sel = v[parity::2]
        assert lo[parity] == sel.min() and hi[parity] == sel.max()
        want_lo = np.minimum.accumulate(np.append(info.max, sel))[:-1].astype(t.np_dtype)
        np.testing.assert_array_equal(olds[parity::2, 0], want_lo)
    # contention: several host threads at once
    sums[:] = 0
    kernel.launch(n, [v, sums, lo, hi, olds], workers=4, block_dim=8, max_blocks=40)
    assert int(sums[0]) == semantics.wrap(total, t)


def _pcg(state: int) -> int:
    m = 0xFFFFFFFF
    b = (state * 747796405 + 2891336453) & m
    c = (((b >> ((b >> 28) + 4)) ^ b) * 277803737) & m
    return (c >> 22) ^ c


def test_random_numbers_match_the_pcg_reference():
    n, seed = 100, 42
    out_u = poisoned((n, 3), np.uint32)
    out_f = poisoned((n, 3), np.float32)
    run(K.randoms).launch(n, [seed, out_u, out_f])
    f32, unit = np.float32, (lambda s: np.float32(s >> 8) * np.float32(1.0 / 16777216.0))
    for i in range(n):
        s0 = _pcg((seed + _pcg(i)) & 0xFFFFFFFF)
        s1, s2, s3, s4 = _pcg(s0), None, None, None
        s2 = _pcg(s1)
        s3 = _pcg(s2)
        s4 = _pcg(s3)
        s5 = _pcg(s4)
        s6 = _pcg(s5)
        assert out_f[i, 0] == unit(s1)
        assert out_u[i, 0] == s2
        assert out_f[i, 1] == f32(5.0) * unit(s3) + f32(-2.0)
        assert int(out_u[i, 1]) == semantics.wrap(s4 % 14 - 5, T.uint32)
        u1, u2 = float(unit(s5) + f32(5.96e-8)), float(unit(s6))
        want = math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)
        assert out_f[i, 2] == pytest.approx(want, rel=1e-5, abs=1e-5)
        assert out_u[i, 2] == _pcg(_pcg(seed))


def _math_reference(u: np.ndarray, w: np.ndarray) -> np.ndarray:
    cols = [np.sqrt(u), np.cbrt(w), np.exp(u), np.log(u), np.log2(u), np.log10(u), np.sin(w),
            np.cos(w), np.tan(u), np.arcsin(u), np.arccos(u), np.arctan(w), np.sinh(u),
            np.cosh(u), np.tanh(w), np.floor(w), np.ceil(w),
            np.sign(w) * np.floor(np.abs(w) + 0.5), np.rint(w), np.trunc(w), w - np.trunc(w),
            np.abs(w), np.arctan2(w, u)]
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("t", [T.float32, T.float64], ids=repr)
def test_math_builtins(t):
    rng = np.random.default_rng(9)
    n = 128
    u = rng.uniform(0.02, 0.98, n).astype(t.np_dtype)
    w = rng.uniform(-20, 20, n).astype(t.np_dtype)
    w[:6] = [2.5, -2.5, 0.5, -0.5, 1.5, 3.0]  # halfway cases: round away, rint to even
    out = poisoned((n, 24), t.np_dtype)
    run(K.math_unit, K.float_ops_types(t)).launch(n, [u, w, out])
    u64, w64 = u.astype(np.float64), w.astype(np.float64)
    rtol = 2e-6 if t == T.float32 else 1e-13
    np.testing.assert_allclose(out[:, :23], _math_reference(u64, w64), rtol=rtol, atol=rtol)
    exponent = (w * t.np_dtype.type(0.1)).astype(np.float64)
    np.testing.assert_allclose(out[:, 23], np.power(u64, exponent), rtol=rtol)
    assert out[:6, 17].tolist() == [3.0, -3.0, 1.0, -1.0, 2.0, 3.0]
    assert out[:6, 18].tolist() == [2.0, -2.0, 0.0, -0.0, 2.0, 3.0]


def test_local_arrays():
    a = np.random.default_rng(10).uniform(1, 2, 20).astype(np.float32)
    out = poisoned((20, 3), np.float32)
    run(K.local_arrays).launch(20, [a, out])
    want = np.zeros(20, np.float32)
    for k in range(7, -1, -1):
        want = want * np.float32(0.5) + (a + np.float32(k))
    np.testing.assert_array_equal(out[:, 0], want)
    np.testing.assert_array_equal(out[:, 1], 0.0)  # out-of-range load reads 0
    np.testing.assert_array_equal(out[:, 2], a + (np.arange(20) % 8).astype(np.float32))


@pytest.mark.parametrize("shape", [(5, 7), (3, 4, 5), (2, 3, 4, 5)])
def test_tid_in_nd_launches(shape):
    out = poisoned(shape, np.int32)
    idx = np.indices(shape)
    if len(shape) == 2:
        run(K.tid_2d).launch(shape, [out])
        want = idx[0] * 100 + idx[1]
    elif len(shape) == 3:
        lead, pair = poisoned(shape, np.int32), poisoned(shape, np.int32)
        run(K.tid_3d).launch(shape, [out, lead, pair], block_dim=16)
        want = idx[0] * 10000 + idx[1] * 100 + idx[2]
        np.testing.assert_array_equal(lead, idx[0])
        np.testing.assert_array_equal(pair, idx[0] * 100 + idx[1])
    else:
        run(K.tid_4d).launch(shape, [out])
        want = idx[0] * 1000 + idx[1] * 100 + idx[2] * 10 + idx[3]
    np.testing.assert_array_equal(out, want)


def test_tid_1d_grid_stride():
    out = poisoned(1000, np.int32)
    run(K.tid_1d).launch(1000, [out], block_dim=32, max_blocks=3)
    np.testing.assert_array_equal(out, np.arange(1000) * 3)


def test_non_contiguous_arrays():
    rng = np.random.default_rng(11)
    base = rng.uniform(-1, 1, (12, 20)).astype(np.float32)
    src = base[::2, ::-3]  # byte strides (160, -12)
    dst = np.full((src.shape[1], src.shape[0]), np.nan).T  # transposed float64 view
    col = np.full(30, np.nan, np.float32)[::5]  # stride 20 bytes
    run(K.strided).launch(src.shape, [src, dst, col])
    np.testing.assert_array_equal(dst, src.astype(np.float64) * 2 + src.shape[1])
    np.testing.assert_array_equal(col, src[:, -1])


def test_array_views():
    rng = np.random.default_rng(12)
    src = rng.uniform(-1, 1, (5, 7)).astype(np.float32)
    out = poisoned((5, 3), np.float32)
    run(K.views).launch(5, [src, out])
    block = src[1:, 2:5]
    for i in range(5):
        back = src[i, ::-2]
        assert out[i, 0] == src[i, 1] + back[0]
        assert out[i, 1] == back.size * 100 + block.shape[0] * 10 + block.shape[1]
        assert out[i, 2] == block[i % block.shape[0], 1] + src[i, 3]


def test_negative_indices_count_from_the_end():
    rng = np.random.default_rng(13)
    src = rng.uniform(-1, 1, (5, 7)).astype(np.float32)
    out = np.zeros((5, 7), np.float32)
    run(K.negative_indices).launch(5, [src, out])
    for i in range(5):
        assert out[i, -1] == src[i - 1, -2]
        assert out[i, 0] == src[-1, -i - 1] + src[-2, 1]
    np.testing.assert_array_equal(out[:, 1], np.ones(5, np.float32))


def test_print(capfd):
    a = np.array([3, -4], np.int32)
    f = np.array([1.5, -0.25], np.float32)
    run(K.printer).launch(2, [a, f])
    lines = capfd.readouterr().out.splitlines()
    assert lines == ["row 0 3 1.5 True", "3:1.500|3000000000", "row 1 -4 -0.25 False",
                     "-4:-0.250|-4000000000"]


def _line_of(text: str) -> int:
    source = Path(K.__file__).read_text().splitlines()
    return next(k + 1 for k, line in enumerate(source) if line.strip() == text)


@pytest.mark.parametrize(("mode", "code", "index", "shape", "line"), [
    (0, 1, (8,), (8,), "out[i] = a[i + 1]"),
    (1, 2, (), (), "assert a[i] < 5.0"),
    (2, 3, (4,), (4,), "out[i] = buf[i]"),
    (3, 1, (8,), (8,), "return a[k]"),
])
def test_debug_checks_write_the_error_record(mode, code, index, shape, line):
    source = emit_cuda(K.debug_checks.get_ir(), CudaOptions(debug=True))
    kernel = cuda_harness.build(source)
    a = np.arange(8, dtype=np.float32)
    out = poisoned(8, np.float32)
    error = kernel.launch(8, [a, out, mode], block_dim=8)
    assert error is not None
    assert (error.code, error.index, error.shape) == (code, index, shape)
    assert source.check_locs[error.check_id].line == _line_of(line)
    first_bad = {0: 7, 1: 5, 2: 4, 3: 4}[mode]
    assert np.isnan(out[first_bad:]).all()  # failing threads touch no memory
    assert not np.isnan(out[:first_bad]).any()


def test_release_mode_reports_nothing():
    kernel = run(K.debug_checks)
    out = poisoned(8, np.float32)
    assert kernel.launch(8, [np.arange(8, dtype=np.float32), out, 1], block_dim=8) is None
    np.testing.assert_array_equal(out, 1.0)  # asserts are not checked in release


def test_float16():
    rng = np.random.default_rng(12)
    n = 200
    a = rng.uniform(-4, 4, n).astype(np.float16)
    b = (rng.uniform(0.5, 3, n) * rng.choice([-1, 1], n)).astype(np.float16)
    bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    f = bits.view(np.float32).copy()
    f[:8] = [65504.0, 65519.0, 65520.0, 1e-8, 2.0**-24, 3 * 2.0**-26, -0.0, np.nan]
    out = poisoned((n, 6), np.float16)
    acc = np.zeros(1, np.float16)
    run(K.halves).launch(n, [a, b, out, acc, f], block_dim=256)
    np.testing.assert_array_equal(out[:, 0], a + b)
    np.testing.assert_array_equal(out[:, 1], a * b)
    np.testing.assert_array_equal(out[:, 2], a / b)
    np.testing.assert_array_equal(out[:, 3], (a.astype(np.float32) * 3).astype(np.float16))
    np.testing.assert_array_equal(out[:, 4], np.sqrt(np.abs(a)))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out[:, 5], f.astype(np.float16))
    total = np.float16(0)
    for x in a:
        total = np.float16(total + x)
    assert acc[0] == total
