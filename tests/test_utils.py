"""`kc.utils`: array_scan, radix_sort_pairs, array_sum and array_inner.

Results are checked against NumPy on random non-zero data with poisoned outputs, at sizes
from 0 to 1M (block-size multiples and not), for every dtype Warp accepts; the sort's
stability, negative and special float keys, thread-count independence, the errors, the
timing kinds; and, where warp-lang is installed, Warp's own results on the same data.
The CUDA side is in test_utils_cuda.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from kernelc import types as T
from kernelc import utils
from kernelc.runtime.context import get_runtime
from tests.conftest import nonzero, poisoned, run_warp

SIZES = [0, 1, 2, 1000, 8192, 8193, 100_003, 1 << 20]
SCAN_DTYPES = [np.int32, np.int64, np.float32, np.float64]
KEY_DTYPES = [np.int32, np.uint32, np.float32, np.int64, np.uint64, np.float64]


def kc_dtype(dtype) -> T.ScalarType:
    return T.from_numpy_dtype(np.dtype(dtype))


def scan_reference(x: np.ndarray, inclusive: bool) -> np.ndarray:
    total = np.cumsum(x.astype(np.float64 if x.dtype.kind == "f" else np.int64), axis=0)
    if not inclusive:
        total = np.concatenate([np.zeros_like(total[:1]), total[:-1]])
    return total


def assert_scan(got: np.ndarray, x: np.ndarray, inclusive: bool) -> None:
    want = scan_reference(x, inclusive)
    if x.dtype.kind == "f":
        # Rounding grows with the running sum of magnitudes.
        scale = np.cumsum(np.abs(x.astype(np.float64)), axis=0) + 1.0
        eps = np.finfo(x.dtype).eps
        assert np.all(np.abs(got - want) <= 64 * eps * scale)
    else:
        np.testing.assert_array_equal(got, want.astype(x.dtype))


def sort_pairs(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Runs radix_sort_pairs on copies of (keys, values) with poisoned scratch halves."""
    n = len(keys)
    k = poisoned(2 * n, keys.dtype)
    v = poisoned(2 * n, values.dtype)
    k.numpy()[:n] = keys
    v.numpy()[:n] = values
    utils.radix_sort_pairs(k, v, n)
    return k.numpy()[:n].copy(), v.numpy()[:n].copy()


def random_keys(rng, n: int, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return nonzero(rng, n, dtype, -1e3, 1e3)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


# ---- array_scan ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", SCAN_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_scan_matches_numpy(rng, dtype, n):
    x = nonzero(rng, n, dtype, -100, 100)
    for inclusive in (True, False):
        out = poisoned(n, dtype)
        utils.array_scan(kc.array(x), out, inclusive)
        assert_scan(out.numpy(), x, inclusive)


@pytest.mark.parametrize("dtype", [kc.vec3, kc.vec2i, kc.mat22d], ids=repr)
def test_scan_vectors_component_wise(rng, dtype):
    n = 20_011
    shape = (n, *((dtype.length,) if isinstance(dtype, T.VectorType) else dtype.shape))
    x = nonzero(rng, int(np.prod(shape)), dtype.dtype.np_dtype, -9, 9).reshape(shape)
    for inclusive in (True, False):
        out = kc.array(np.full(shape, -7, dtype.dtype.np_dtype), dtype=dtype)
        utils.array_scan(kc.array(x, dtype=dtype), out, inclusive)
        assert_scan(out.numpy(), x, inclusive)


def test_scan_strided_and_in_place(rng):
    x = nonzero(rng, 60_000, np.int32, -50, 50)
    base = kc.array(x)
    strided = base[::3]
    out = poisoned(strided.size, np.int32)
    utils.array_scan(strided, out)
    assert_scan(out.numpy(), x[::3], True)
    utils.array_scan(base, base, inclusive=False)  # in place
    assert_scan(base.numpy(), x, False)
    grid = kc.array(x.reshape(200, 300))  # a contiguous 2-d array scans in flat order
    flat = poisoned((200, 300), np.int32)
    utils.array_scan(grid, flat)
    assert_scan(flat.numpy().ravel(), x, True)


def test_scan_errors():
    a = kc.zeros(10, dtype=kc.int32)
    with pytest.raises(ValueError, match="sizes do not match"):
        utils.array_scan(a, kc.zeros(11, dtype=kc.int32))
    with pytest.raises(RuntimeError, match="data types do not match"):
        utils.array_scan(a, kc.zeros(10, dtype=kc.float32))
    for dtype in (kc.uint32, kc.int8, kc.float16):
        with pytest.raises(TypeError, match="Unsupported data type: "):
            utils.array_scan(kc.zeros(4, dtype=dtype), kc.zeros(4, dtype=dtype))
    grid = kc.zeros((8, 8), dtype=kc.int32)
    with pytest.raises(RuntimeError, match="contiguous or one-dimensional"):
        utils.array_scan(grid[:, ::2], kc.zeros((8, 4), dtype=kc.int32))
    with pytest.raises(TypeError, match="kc.array"):
        utils.array_scan(np.zeros(4, np.int32), a)
    utils.array_scan(kc.zeros(0, dtype=kc.int32), kc.zeros(0, dtype=kc.int32))  # a no-op


# ---- radix_sort_pairs ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_sort_matches_stable_argsort(rng, dtype, n):
    if n == 1 << 20 and np.dtype(dtype).itemsize == 8:
        n = 300_007  # 64-bit keys take twice the passes: keep the suite quick
    keys = random_keys(rng, n, dtype)
    values = rng.permutation(n).astype(np.int32)
    got_keys, got_values = sort_pairs(keys, values)
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(got_keys, keys[order])
    np.testing.assert_array_equal(got_values, values[order])


@pytest.mark.parametrize("dtype", KEY_DTYPES, ids=lambda d: np.dtype(d).name)
def test_sort_is_stable_with_many_equal_and_negative_keys(rng, dtype):
    n = 200_003
    low = 0 if np.dtype(dtype).kind == "u" else -40
    keys = rng.integers(low, 40, n).astype(dtype)
    keys[keys == 0] = 7
    values = np.arange(n, dtype=np.int32)  # the input order
    got_keys, got_values = sort_pairs(keys, values)
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(got_keys, keys[order])
    np.testing.assert_array_equal(got_values, order)  # equal keys keep their order


@pytest.mark.parametrize("value_dtype", [np.float32, np.uint32, np.int64, np.float64])
def test_sort_moves_any_four_or_eight_byte_values(rng, value_dtype):
    n = 50_000
    keys = random_keys(rng, n, np.int32)
    values = nonzero(rng, n, value_dtype, 1, 1000)
    got_keys, got_values = sort_pairs(keys, values)
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(got_values, values[order])
    vec_values = kc.array(np.zeros((2 * n, 2), np.float32), dtype=kc.vec2)  # 8 bytes each
    vec_values.numpy()[:n] = np.stack([values, -values], axis=1).astype(np.float32)
    k = kc.array(np.concatenate([keys, keys]))
    utils.radix_sort_pairs(k, vec_values, n)
    np.testing.assert_array_equal(vec_values.numpy()[:n, 0], values[order].astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sort_special_floats(dtype):
    keys = np.array([3.0, -0.0, np.inf, -1.5, 0.0, -np.inf, 2.5, -0.0, np.nan, 1e-30, -1e-30],
                    dtype)
    values = np.arange(len(keys), dtype=np.int32)
    got_keys, got_values = sort_pairs(keys, values)
    # Bit-pattern order: -inf < ... < -0.0 < +0.0 < ... < inf < NaN, stable among equals.
    assert got_values.tolist() == [5, 3, 10, 1, 7, 4, 9, 6, 0, 2, 8]
    assert np.isnan(got_keys[-1]) and np.signbit(got_keys[2:5]).tolist() == [True, True, True]


def test_sort_bit_range(rng):
    n = 30_000
    keys = rng.integers(0, 1 << 20, n).astype(np.uint32)
    values = np.arange(n, dtype=np.int32)
    k = kc.array(np.concatenate([keys, keys]))
    v = kc.array(np.concatenate([values, values]))
    utils.radix_sort_pairs(k, v, n, begin_bit=4, end_bit=12)  # sort by bits 4..11 only
    order = np.argsort((keys >> 4) & 0xFF, kind="stable")
    np.testing.assert_array_equal(v.numpy()[:n], order)
    before = k.numpy().copy()
    utils.radix_sort_pairs(k, v, n, begin_bit=5, end_bit=5)  # an empty range: a no-op
    np.testing.assert_array_equal(k.numpy(), before)


def test_sort_errors():
    k = kc.zeros(20, dtype=kc.int32)
    v = kc.zeros(20, dtype=kc.int32)
    with pytest.raises(ValueError, match="20 keys and 20 values.*2\\*count elements$"):
        utils.radix_sort_pairs(k, v, 11)
    with pytest.raises(ValueError, match="2\\*count"):
        utils.radix_sort_pairs(k, kc.zeros(10, dtype=kc.int32), 6)
    for keys, values in ((kc.zeros(20, dtype=kc.int16), v), (kc.zeros(20, dtype=kc.float16), v),
                         (k, kc.zeros(20, dtype=kc.int8)), (k, kc.zeros(20, dtype=kc.vec3))):
        with pytest.raises(TypeError, match="Unsupported keys and values data types: "
                                            f"{keys.dtype!r}, {values.dtype!r}$"):
            utils.radix_sort_pairs(keys, values, 5)
    with pytest.raises(RuntimeError, match="contiguous keys"):
        utils.radix_sort_pairs(kc.zeros(40, dtype=kc.int32)[::2], v, 5)
    with pytest.raises(RuntimeError, match="Invalid radix sort bit range"):
        utils.radix_sort_pairs(k, v, 5, begin_bit=8, end_bit=4)
    with pytest.raises(RuntimeError, match="Invalid radix sort bit range"):
        utils.radix_sort_pairs(k, v, 5, end_bit=33)
    with pytest.raises(ValueError, match="non-negative"):
        utils.radix_sort_pairs(k, v, -1)
    utils.radix_sort_pairs(kc.zeros(1, dtype=kc.int8), v, 0)  # count 0: nothing is checked


# ---- array_sum and array_inner --------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 2, 1000, 8193, 100_003, 1 << 20])
def test_sum_and_inner_match_numpy(rng, dtype, n):
    a = nonzero(rng, n, dtype)
    b = nonzero(rng, n, dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    total = utils.array_sum(kc.array(a))
    assert isinstance(total, np.dtype(dtype).type)
    assert total == pytest.approx(a.astype(np.float64).sum(), rel=tol, abs=tol * n)
    inner = utils.array_inner(kc.array(a), kc.array(b))
    assert isinstance(inner, np.dtype(dtype).type)
    assert inner == pytest.approx(np.dot(a.astype(np.float64), b), rel=tol, abs=tol * n)
    out = poisoned(1, dtype)
    assert utils.array_sum(kc.array(a), out=out) is out
    assert out.numpy()[0] == total
    k = max(1, n // 3)
    part = utils.array_sum(kc.array(a), value_count=k)
    assert part == pytest.approx(a[:k].astype(np.float64).sum(), rel=tol, abs=tol * n)
    out = poisoned(1, dtype)
    utils.array_inner(kc.array(a), kc.array(b), out=out, count=k)
    assert out.numpy()[0] == pytest.approx(np.dot(a[:k].astype(np.float64), b[:k]), rel=tol,
                                           abs=tol * n)


def test_sum_and_inner_of_vectors_and_matrices(rng):
    v = nonzero(rng, 3 * 40_000, np.float32).reshape(-1, 3)
    w = nonzero(rng, 3 * 40_000, np.float32).reshape(-1, 3)
    total = utils.array_sum(kc.array(v, dtype=kc.vec3))
    assert isinstance(total, np.ndarray) and total.shape == (3,)
    np.testing.assert_allclose(total, v.astype(np.float64).sum(axis=0), rtol=1e-4, atol=1e-2)
    inner = utils.array_inner(kc.array(v, dtype=kc.vec3), kc.array(w, dtype=kc.vec3))
    assert inner == pytest.approx(np.sum(v.astype(np.float64) * w), rel=1e-4, abs=1e-2)
    m = nonzero(rng, 4 * 5000, np.float64).reshape(-1, 2, 2)
    np.testing.assert_allclose(utils.array_sum(kc.array(m, dtype=kc.mat22d)), m.sum(axis=0))
    assert utils.array_inner(kc.array(m, dtype=kc.mat22d), kc.array(m, dtype=kc.mat22d)) == \
        pytest.approx(np.sum(m * m))


@pytest.mark.parametrize("shape", [(7, 20_000), (300, 5, 9), (2, 3, 4, 70_001)])
def test_axis_reductions(rng, shape):
    a = nonzero(rng, int(np.prod(shape)), np.float64).reshape(shape)
    b = nonzero(rng, int(np.prod(shape)), np.float64).reshape(shape)
    for axis in range(-len(shape), len(shape)):
        total = utils.array_sum(kc.array(a), axis=axis)
        assert isinstance(total, kc.array)
        np.testing.assert_allclose(total.numpy(), a.sum(axis=axis, keepdims=True), atol=1e-9)
        out = poisoned(total.shape, np.float64)
        assert utils.array_inner(kc.array(a), kc.array(b), out=out, axis=axis) is out
        np.testing.assert_allclose(out.numpy(), (a * b).sum(axis=axis, keepdims=True),
                                   atol=1e-9)
    half = shape[1] // 2
    part = utils.array_sum(kc.array(a), axis=1, value_count=half)
    np.testing.assert_allclose(part.numpy(), a[:, :half].sum(axis=1, keepdims=True), atol=1e-9)


def test_reductions_of_strided_views_and_strided_out(rng):
    a = nonzero(rng, 40 * 60, np.float32).reshape(40, 60)
    view = kc.array(a)[:, ::2]  # not contiguous
    assert utils.array_sum(view) == pytest.approx(a[:, ::2].astype(np.float64).sum(), rel=1e-5)
    wide = poisoned((40, 2), np.float32)
    out = wide[:, 1:]  # a strided (40, 1) output
    utils.array_sum(view, out=out, axis=1)
    np.testing.assert_allclose(wide.numpy()[:, 1], a[:, ::2].sum(axis=1), rtol=1e-5, atol=1e-4)
    assert np.isnan(wide.numpy()[:, 0]).all()


def test_empty_reductions():
    empty = kc.zeros(0, dtype=kc.float32)
    assert utils.array_sum(empty) == 0.0
    assert utils.array_inner(empty, empty) == 0.0 and isinstance(
        utils.array_inner(empty, empty), float)
    a = kc.ones(10, dtype=kc.float32)
    assert utils.array_sum(a, value_count=0) == 0.0
    out = poisoned(1, np.float32)
    utils.array_inner(a, a, out=out, count=0)
    assert out.numpy()[0] == 0.0
    total = utils.array_sum(kc.zeros((0, 4), dtype=kc.float32), axis=0)
    np.testing.assert_array_equal(total.numpy(), np.zeros((1, 4)))


def test_reduction_errors():
    a = kc.ones(10, dtype=kc.float32)
    with pytest.raises(TypeError, match="Unsupported data type: "):
        utils.array_sum(kc.ones(10, dtype=kc.int32))
    with pytest.raises(TypeError, match="Unsupported data type: "):
        utils.array_inner(kc.ones(4, dtype=kc.vec3i), kc.ones(4, dtype=kc.vec3i))
    with pytest.raises(RuntimeError, match="should have type"):
        utils.array_sum(a, out=kc.zeros(1, dtype=kc.float64))
    with pytest.raises(RuntimeError, match="should have shape"):
        utils.array_sum(a, out=kc.zeros(2, dtype=kc.float32))
    with pytest.raises(RuntimeError, match="should have shape"):
        utils.array_sum(kc.ones((3, 4), dtype=kc.float32), out=kc.zeros(3, dtype=kc.float32),
                        axis=1)
    with pytest.raises(IndexError, match="out of bounds"):
        utils.array_sum(a, axis=1)
    with pytest.raises(IndexError, match="out of bounds"):
        utils.array_inner(a, a, axis=-2)
    with pytest.raises(ValueError, match="same shape"):
        utils.array_inner(a, kc.ones(11, dtype=kc.float32))
    with pytest.raises(RuntimeError, match="data types do not match"):
        utils.array_inner(a, kc.ones(10, dtype=kc.float64))
    with pytest.raises(ValueError, match="out of range"):
        utils.array_sum(a, value_count=11)
    with pytest.raises(ValueError, match="out of range"):
        utils.array_inner(a, a, count=-1)
    with pytest.raises(RuntimeError, match="should have type float32"):
        utils.array_inner(kc.ones(2, dtype=kc.vec3), kc.ones(2, dtype=kc.vec3),
                          out=kc.zeros(1, dtype=kc.vec3))


# ---- array_cast ----------------------------------------------------------------------------


def test_cast_element_wise_and_scalar_level(rng):
    a = nonzero(rng, 3000, np.float64, -1e3, 1e3)
    out = poisoned(3000, np.int32)
    utils.array_cast(kc.array(a), out)
    np.testing.assert_array_equal(out.numpy(), a.astype(np.int32))  # truncation, as C
    grid = a.reshape(30, 100)
    out = poisoned((30, 100), np.float32)
    utils.array_cast(kc.array(grid), out)
    np.testing.assert_array_equal(out.numpy(), grid.astype(np.float32))
    # Element shapes or dimensions differ: both are flat runs of scalars, `count` counts
    # source elements.
    pairs = kc.array(a.reshape(-1, 2), dtype=kc.vec2d)
    out = poisoned(3000, np.float32)
    utils.array_cast(pairs, out, count=100)
    np.testing.assert_array_equal(out.numpy()[:200], a[:200].astype(np.float32))
    assert np.isnan(out.numpy()[200:]).all()
    out = poisoned((1000, 3), np.float32)
    utils.array_cast(kc.array(a), out)
    np.testing.assert_array_equal(out.numpy().ravel(), a.astype(np.float32))


def test_cast_errors():
    a = kc.zeros(10, dtype=kc.float32)
    with pytest.raises(RuntimeError, match=r"Cast count \(10\) exceeds the input size \(10\) or "
                                           r"output size \(3\)$"):
        utils.array_cast(a, kc.zeros(3, dtype=kc.int32))
    with pytest.raises(ValueError, match=r"Cast count \(5\) exceeds the input size \(3\)"):
        utils.array_cast(a[:3], kc.zeros(10, dtype=kc.int32), count=5)
    with pytest.raises(ValueError, match=r"Array shapes do not match \(\(2, 3\) vs \(3, 2\)\)$"):
        utils.array_cast(kc.zeros((2, 3)), kc.zeros((3, 2), dtype=kc.float64))
    with pytest.raises(ValueError, match="Partial cast is not supported"):
        utils.array_cast(kc.zeros((2, 2)), kc.zeros((2, 2), dtype=kc.float64), count=1)
    with pytest.raises(ValueError, match="needs a contiguous in_array"):
        utils.array_cast(kc.zeros((4, 4))[:, ::2], kc.zeros(8, dtype=kc.float64))


# ---- determinism, graphs, imports -----------------------------------------------------------


def test_results_do_not_depend_on_the_thread_count(rng, monkeypatch):
    n = 1 << 20
    x = nonzero(rng, n, np.float32, -1e3, 1e3)
    keys = nonzero(rng, n, np.float32, -1e3, 1e3)
    results = []
    for threads in (1, 2, 3, 5):
        monkeypatch.setattr(kc.config, "num_threads", threads)
        out = poisoned(n, np.float32)
        utils.array_scan(kc.array(x), out)
        got = sort_pairs(keys, np.arange(n, dtype=np.int32))
        results.append((out.numpy().copy(), utils.array_sum(kc.array(x)),
                        utils.array_inner(kc.array(x), kc.array(keys)), *got))
    for later in results[1:]:
        for a, b in zip(results[0], later):
            np.testing.assert_array_equal(a, b)  # bit for bit


def test_cpu_graph_capture_replays_the_utilities(rng):
    n = 100_000
    x = kc.zeros(n, dtype=kc.int32)
    y = kc.zeros(n, dtype=kc.int32)
    k = kc.zeros(2 * n, dtype=kc.float32)
    v = kc.zeros(2 * n, dtype=kc.int32)
    total = kc.zeros(1, dtype=kc.float32)
    with kc.ScopedCapture(device="cpu") as capture:
        utils.array_scan(x, y)
        utils.radix_sort_pairs(k, v, n)
        utils.array_sum(k, out=total, value_count=n)
    for _ in range(2):  # the recording, replayed on new data
        xs = nonzero(rng, n, np.int32, -9, 9)
        ks = nonzero(rng, n, np.float32)
        x.numpy()[:] = xs
        k.numpy()[:n] = ks
        v.numpy()[:n] = np.arange(n)
        kc.capture_launch(capture.graph)
        assert_scan(y.numpy(), xs, True)
        order = np.argsort(ks, kind="stable")
        np.testing.assert_array_equal(v.numpy()[:n], order)
        assert total.numpy()[0] == pytest.approx(ks.astype(np.float64).sum(),
                                                 abs=float(1e-5 * np.abs(ks).sum()))
    with pytest.raises(NotImplementedError, match="explicit out"):
        with kc.ScopedCapture(device="cpu"):
            utils.array_sum(k)


def test_import_forms():
    import kernelc.utils as by_path

    assert by_path is utils
    assert {"array_scan", "radix_sort_pairs", "array_sum", "array_inner"} <= set(utils.__all__)


# ---- timing -----------------------------------------------------------------------------------


@kc.kernel
def _double(a: kc.array(dtype=float)):
    i = kc.tid()
    a[i] = a[i] * 2.0


@pytest.fixture
def quiet_runtime(monkeypatch):
    rt = get_runtime()
    monkeypatch.setattr(rt, "recorder", None)
    monkeypatch.setattr(rt, "history", [])


def _run_all(n: int = 50_000) -> kc.array:
    a = kc.ones(n, dtype=kc.float32)
    utils.array_scan(a, kc.zeros(n, dtype=kc.float32))
    keys = kc.array(np.arange(2 * n, dtype=np.int32)[::-1].copy())  # every pass moves pairs
    utils.radix_sort_pairs(keys, kc.zeros(2 * n, dtype=kc.int32), n)
    utils.array_sum(a)
    utils.array_inner(a, a)
    kc.launch(_double, dim=n, inputs=[a])
    return a


def test_timing_kinds(quiet_runtime):
    _run_all()  # compiled before timing
    with kc.ScopedTimer("utils", cuda_filter=kc.TIMING_KERNEL_BUILTIN, print=False) as timer:
        _run_all()
    names = {r.name for r in timer.timing_results}
    assert {"builtin kernel array_scan_serial", "builtin kernel radix_sort_histogram",
            "builtin kernel radix_sort_scatter", "builtin kernel array_sum_blocks",
            "builtin kernel array_inner_blocks"} <= names
    assert all(r.filter == kc.TIMING_KERNEL_BUILTIN for r in timer.timing_results)
    assert "forward kernel _double" not in names
    with kc.ScopedTimer("user", cuda_filter=kc.TIMING_KERNEL, print=False) as timer:
        _run_all()
    assert {r.name for r in timer.timing_results} == {"forward kernel _double"}


def test_kernel_history_marks_builtins(quiet_runtime):
    _run_all()
    with kc.scoped_set_flag(kc.JitFlag.KernelHistory):
        _run_all()
    history = kc.kernel_history()
    builtin = [e for e in history if e["type"] == "builtin"]
    assert {e["name"] for e in builtin} >= {"array_scan_serial", "radix_sort_scatter"}
    assert [e["name"] for e in history if e["type"] == "kernel"] == ["_double"]
    assert all(e["execution_time"] >= 0.0 for e in history)


# ---- against warp-lang ------------------------------------------------------------------------

_WARP_SCRIPT = """
n = len(inputs["scan"])
x = wp.array(inputs["scan"], dtype=wp.int32)
y = wp.zeros_like(x)
wp.utils.array_scan(x, y, inclusive=True)
results["scan_inclusive"] = y.numpy().copy()  # numpy() is a view on the CPU
wp.utils.array_scan(x, y, inclusive=False)
results["scan_exclusive"] = y.numpy()
for name in ("keys_i32", "keys_f32", "keys_i64"):
    keys = inputs[name]
    k = wp.array(np.concatenate([keys, keys]))
    v = wp.array(np.arange(2 * len(keys), dtype=np.int32))
    wp.utils.radix_sort_pairs(k, v, len(keys))
    results[name] = k.numpy()[:len(keys)]
    results[name + "_values"] = v.numpy()[:len(keys)]
f = wp.array(inputs["f"], dtype=wp.float32)
g = wp.array(inputs["g"], dtype=wp.float32)
results["sum"] = np.array(wp.utils.array_sum(f))
results["inner"] = np.array(wp.utils.array_inner(f, g))
m = wp.array(inputs["m"], dtype=wp.float64)
results["sum_axis0"] = wp.utils.array_sum(m, axis=0).numpy()
v3 = wp.array(inputs["v3"], dtype=wp.vec3)
results["sum_vec3"] = np.array(wp.utils.array_sum(v3))
"""


def test_matches_warp(rng, tmp_path):
    n = 100_003
    data = {
        "scan": nonzero(rng, n, np.int32, -1000, 1000),
        "keys_i32": rng.integers(-50, 50, n).astype(np.int32),
        "keys_f32": nonzero(rng, n, np.float32, -1e3, 1e3),
        "keys_i64": rng.integers(-(2**40), 2**40, n).astype(np.int64),
        "f": nonzero(rng, n, np.float32),
        "g": nonzero(rng, n, np.float32),
        "m": nonzero(rng, 60 * 70, np.float64).reshape(60, 70),
        "v3": nonzero(rng, 3 * 999, np.float32).reshape(-1, 3),
    }
    warp = run_warp(_WARP_SCRIPT, tmp_path, **data)
    x = kc.array(data["scan"])
    y = poisoned(n, np.int32)
    utils.array_scan(x, y, inclusive=True)
    np.testing.assert_array_equal(y.numpy(), warp["scan_inclusive"])
    utils.array_scan(x, y, inclusive=False)
    np.testing.assert_array_equal(y.numpy(), warp["scan_exclusive"])
    for name in ("keys_i32", "keys_f32", "keys_i64"):
        keys = data[name]
        got_keys, got_values = sort_pairs(keys, np.arange(len(keys), dtype=np.int32))
        np.testing.assert_array_equal(got_keys, warp[name])
        np.testing.assert_array_equal(got_values, warp[name + "_values"])
    f, g = kc.array(data["f"]), kc.array(data["g"])
    # float32 sums: Warp adds in one sequence, kernelc in blocks; both round differently.
    scale = float(1e-5 * np.abs(data["f"] * data["g"]).sum())
    assert utils.array_sum(f) == pytest.approx(float(warp["sum"]),
                                               abs=float(1e-5 * np.abs(data["f"]).sum()))
    assert utils.array_inner(f, g) == pytest.approx(float(warp["inner"]), abs=scale)
    np.testing.assert_allclose(utils.array_sum(kc.array(data["m"]), axis=0).numpy(),
                               warp["sum_axis0"], rtol=1e-12)
    np.testing.assert_allclose(utils.array_sum(kc.array(data["v3"], dtype=kc.vec3)),
                               warp["sum_vec3"], rtol=1e-5)
