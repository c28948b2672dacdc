"""`kc.utils`: runlength_encode, segmented_sort_pairs and create_warp_function.

Results are checked against NumPy references on random data with poisoned outputs (and
poisoned scratch halves), at sizes from 0 to 1M, including block-size boundaries; runs of
every length, segments in any order with gaps, empty and adjacent ones; stability, special
floats, graph capture and replay, the errors; and, where warp-lang is installed, Warp's own
results on the same data. The CUDA side is in test_utils_cuda.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
from kernelc import utils
from tests.conftest import nonzero, poisoned, run_python, run_warp

SIZES = [1, 2, 1000, 8192, 8193, 100_003, 1 << 20]
POISON = np.iinfo(np.int32).min + 3  # what poisoned() fills int32 arrays with


# ---- runlength_encode ------------------------------------------------------------------------


def runs_reference(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(a) == 0:
        return a[:0], np.zeros(0, np.int32)
    heads = np.flatnonzero(np.concatenate([[True], a[1:] != a[:-1]]))
    return a[heads], np.diff(np.concatenate([heads, [len(a)]])).astype(np.int32)


def random_runs(rng, n: int, kind: str) -> np.ndarray:
    if kind == "sorted":
        return np.sort(nonzero(rng, n, np.int32, -1000, 1000))
    if kind == "short":  # values from a small range: runs of 1 to a few
        return nonzero(rng, n, np.int32, -3, 3)
    if kind == "long":  # a few runs, crossing block boundaries
        return np.repeat(nonzero(rng, 7, np.int32, -9, 9), -(-n // 7))[:n]
    return np.full(n, 42, np.int32)  # one run


def assert_runs(values: np.ndarray, run_values: kc.array, run_lengths: kc.array,
                count: int) -> None:
    want_values, want_lengths = runs_reference(values)
    assert count == len(want_values)
    np.testing.assert_array_equal(run_values.numpy()[:count], want_values)
    np.testing.assert_array_equal(run_lengths.numpy()[:count], want_lengths)
    assert (run_values.numpy()[count:] == POISON).all()  # nothing written past the runs
    assert (run_lengths.numpy()[count:] == POISON).all()


@pytest.mark.parametrize("kind", ["sorted", "short", "long", "one"])
@pytest.mark.parametrize("n", SIZES)
def test_runlength_encode_matches_numpy(rng, kind, n):
    values = random_runs(rng, n, kind)
    run_values, run_lengths = poisoned(n, np.int32), poisoned(n, np.int32)
    count = utils.runlength_encode(kc.array(values), run_values, run_lengths)
    assert isinstance(count, int)
    assert_runs(values, run_values, run_lengths, count)


def test_runlength_encode_run_count_array_and_value_count(rng):
    n = 50_000
    values = random_runs(rng, n, "short")
    run_values, run_lengths = poisoned(n, np.int32), poisoned(n, np.int32)
    run_count = poisoned(3, np.int32)
    result = utils.runlength_encode(kc.array(values), run_values, run_lengths, run_count)
    assert result is run_count
    assert run_count.numpy()[1:].tolist() == [POISON, POISON]  # only the first is written
    assert_runs(values, run_values, run_lengths, int(run_count.numpy()[0]))
    for k in (1, 8191, 12_345):  # the first k values only; outputs only k long
        run_values, run_lengths = poisoned(k, np.int32), poisoned(k, np.int32)
        count = utils.runlength_encode(kc.array(values), run_values, run_lengths, value_count=k)
        assert_runs(values[:k], run_values, run_lengths, count)
    assert utils.runlength_encode(kc.array(values), run_values, run_lengths, value_count=0) == 0
    utils.runlength_encode(kc.array(values), run_values, run_lengths, run_count, value_count=0)
    assert run_count.numpy().tolist() == [0, 0, 0]  # zeroed, as Warp does
    empty = kc.zeros(0, dtype=kc.int32)
    assert utils.runlength_encode(empty, empty, empty) == 0


def test_runlength_encode_strided_and_multidimensional(rng):
    values = random_runs(rng, 3 * 20_000, "short")
    run_values, run_lengths = poisoned(2 * 20_000, np.int32), poisoned(20_000, np.int32)
    count = utils.runlength_encode(kc.array(values)[::3], run_values[::2], run_lengths)
    want_values, want_lengths = runs_reference(values[::3])
    assert count == len(want_values)
    np.testing.assert_array_equal(run_values.numpy()[::2][:count], want_values)
    assert (run_values.numpy()[1::2] == POISON).all()
    np.testing.assert_array_equal(run_lengths.numpy()[:count], want_lengths)
    grid = values.reshape(300, 200)  # a contiguous 2-d array encodes in flattened order
    run_values, run_lengths = poisoned(grid.size, np.int32), poisoned(grid.size, np.int32)
    count = utils.runlength_encode(kc.array(grid), run_values, run_lengths)
    assert_runs(values, run_values, run_lengths, count)


def test_runlength_encode_errors():
    values = kc.zeros(8, dtype=kc.int32)
    out = kc.zeros(8, dtype=kc.int32)
    with pytest.raises(ValueError, match=r"at least equal to value_count \(8\)$"):
        utils.runlength_encode(values, kc.zeros(7, dtype=kc.int32), out)
    with pytest.raises(ValueError, match=r"at least equal to value_count \(8\)$"):
        utils.runlength_encode(values, out, kc.zeros(7, dtype=kc.int32))
    with pytest.raises(TypeError, match=r"data types do not match \(int32 vs float32\)$"):
        utils.runlength_encode(values, kc.zeros(8, dtype=kc.float32), out)
    with pytest.raises(TypeError, match="run_lengths array must be of type int32$"):
        utils.runlength_encode(values, out, kc.zeros(8, dtype=kc.int64))
    with pytest.raises(TypeError, match="run_count array must be of type int32$"):
        utils.runlength_encode(values, out, out, run_count=kc.zeros(1, dtype=kc.float32))
    with pytest.raises(ValueError, match="at least one element"):
        utils.runlength_encode(values, out, out, run_count=kc.zeros(0, dtype=kc.int32))
    for bad in (-1, -5):
        with pytest.raises(RuntimeError, match=rf"value_count must be non-negative, got {bad}$"):
            utils.runlength_encode(values, out, out, value_count=bad)
    with pytest.raises(ValueError, match="more than the 8 values"):
        utils.runlength_encode(values, kc.zeros(9, dtype=kc.int32),
                               kc.zeros(9, dtype=kc.int32), value_count=9)
    with pytest.raises(TypeError, match="value_count must be an int"):
        utils.runlength_encode(values, out, out, value_count=2.5)
    for dtype in (kc.float32, kc.int64, kc.uint32):  # Warp encodes int32 values only
        other = kc.zeros(8, dtype=dtype)
        with pytest.raises(TypeError, match=f"Unsupported data type: {dtype!r}$"):
            utils.runlength_encode(other, kc.zeros(8, dtype=dtype), out)
    with pytest.raises(TypeError, match="kc.array"):
        utils.runlength_encode(np.zeros(8, np.int32), out, out)


def test_runlength_encode_graph_capture(rng):
    n = 30_000
    values = kc.zeros(n, dtype=kc.int32)
    run_values, run_lengths = kc.zeros(n, dtype=kc.int32), kc.zeros(n, dtype=kc.int32)
    run_count = kc.zeros(1, dtype=kc.int32)
    with kc.ScopedCapture(device="cpu") as capture:
        utils.runlength_encode(values, run_values, run_lengths, run_count)
        with pytest.raises(NotImplementedError, match="explicit run_count"):
            utils.runlength_encode(values, run_values, run_lengths)
    for kind in ("short", "sorted"):  # the recording, replayed on new data
        data = random_runs(rng, n, kind)
        values.numpy()[:] = data
        run_values.numpy()[:] = POISON
        run_lengths.numpy()[:] = POISON
        kc.capture_launch(capture.graph)
        assert_runs(data, run_values, run_lengths, int(run_count.numpy()[0]))


# ---- segmented_sort_pairs --------------------------------------------------------------------


def random_segments(rng, n: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """`count` non-overlapping segments of [0, n) in random order, with gaps between some,
    adjacent others, and some empty ones."""
    cuts = np.sort(rng.integers(0, n + 1, 2 * count)).astype(np.int32)
    starts, ends = cuts[0::2].copy(), cuts[1::2].copy()
    adjacent = rng.random(count) < 0.5  # close half the gaps
    starts[1:][adjacent[1:]] = ends[:-1][adjacent[1:]]
    order = rng.permutation(count)
    return starts[order], ends[order]


def segments_reference(keys: np.ndarray, values: np.ndarray, starts: np.ndarray,
                       ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k, v = keys.copy(), values.copy()
    for s, e in zip(starts, ends):
        order = np.argsort(keys[s:e], kind="stable")
        k[s:e], v[s:e] = keys[s:e][order], values[s:e][order]
    return k, v


def sort_segments(keys: np.ndarray, values: np.ndarray, starts: np.ndarray,
                   ends: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Runs segmented_sort_pairs on copies, with poisoned scratch halves."""
    n = len(keys)
    k = poisoned(2 * n, keys.dtype)
    v = poisoned(2 * n, np.int32)
    k.numpy()[:n] = keys
    v.numpy()[:n] = values
    utils.segmented_sort_pairs(k, v, n, kc.array(starts, dtype=kc.int32),
                               None if ends is None else kc.array(ends, dtype=kc.int32))
    return k.numpy()[:n].copy(), v.numpy()[:n].copy()


def random_sort_keys(rng, n: int, dtype) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return nonzero(rng, n, dtype, -1e3, 1e3)
    return rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)


@pytest.mark.parametrize("dtype", [np.int32, np.float32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", SIZES)
def test_segmented_sort_matches_numpy(rng, dtype, n):
    keys = random_sort_keys(rng, n, dtype)
    values = rng.permutation(n).astype(np.int32)
    for count in {1, 5, max(1, n // 100)}:
        starts, ends = random_segments(rng, n, count)
        got_keys, got_values = sort_segments(keys, values, starts, ends)
        want_keys, want_values = segments_reference(keys, values, starts, ends)
        np.testing.assert_array_equal(got_keys, want_keys)  # pairs outside: untouched
        np.testing.assert_array_equal(got_values, want_values)


@pytest.mark.parametrize("dtype", [np.int32, np.float32], ids=lambda d: np.dtype(d).name)
def test_segmented_sort_offsets_and_stability(rng, dtype):
    n = 200_003
    keys = rng.integers(-40, 40, n).astype(dtype)  # many equal keys
    values = np.arange(n, dtype=np.int32)  # the input order
    offsets = np.unique(np.concatenate([[3], rng.integers(3, n - 10, 500), [n - 10]]))
    got_keys, got_values = sort_segments(keys, values, offsets.astype(np.int32), None)
    want_keys, want_values = segments_reference(keys, values, offsets[:-1], offsets[1:])
    np.testing.assert_array_equal(got_keys, want_keys)
    np.testing.assert_array_equal(got_values, want_values)  # equal keys keep their order
    got_keys, got_values = sort_segments(keys, values, np.array([0, n], np.int32), None)
    order = np.argsort(keys, kind="stable")  # one segment: radix_sort_pairs' result
    np.testing.assert_array_equal(got_values, order)


def test_segmented_sort_special_floats():
    keys = np.array([3.0, -0.0, np.inf, -1.5, 0.0, -np.inf, 2.5, -0.0, np.nan, 1e-30, -1e-30],
                    np.float32)
    values = np.arange(len(keys), dtype=np.int32)
    got_keys, got_values = sort_segments(keys, values, np.array([0, len(keys)], np.int32),
                                          None)
    # Bit-pattern order, as radix_sort_pairs: -0.0 before +0.0, stable among equals.
    assert got_values.tolist() == [5, 3, 10, 1, 7, 4, 9, 6, 0, 2, 8]
    assert np.isnan(got_keys[-1])


def test_segmented_sort_no_ops():
    keys = kc.array(np.array([2, 1, 4, 3], np.int32))
    values = kc.array(np.array([20, 10, 40, 30], np.int32))
    none = kc.zeros(0, dtype=kc.int32)
    utils.segmented_sort_pairs(keys, values, 2, kc.array([0], dtype=kc.int32))  # no segments
    utils.segmented_sort_pairs(keys, values, 2, none, none)
    utils.segmented_sort_pairs(keys, values, 2, kc.array([1, 0], dtype=kc.int32),
                               kc.array([1, 0], dtype=kc.int32))  # empty segments
    utils.segmented_sort_pairs(none, none, 0, none)  # count 0: sizes are not checked
    assert keys.numpy()[:2].tolist() == [2, 1]  # (the second halves are scratch space)
    assert values.numpy()[:2].tolist() == [20, 10]
    utils.segmented_sort_pairs(keys, values, 2, kc.array([0, 2], dtype=kc.int32))
    assert keys.numpy()[:2].tolist() == [1, 2] and values.numpy()[:2].tolist() == [10, 20]


def test_segmented_sort_invalid_ranges_leave_the_inputs_alone():
    base = np.array([2, 1, 4, 3, 9, 9, 9, 9], np.int32)
    for index, (start, end) in ((0, (-2, -1)), (0, (-2, 0)), (1, (4, 5)), (1, (3, 2))):
        keys, values = kc.array(base), kc.array(base * 10)
        starts = kc.array([0, start], dtype=kc.int32)
        ends = kc.array([2, end], dtype=kc.int32)
        with pytest.raises(ValueError, match=rf"Invalid segment range at index {index}: "
                                             rf"\[{start}, {end}\) for count 4$"):
            utils.segmented_sort_pairs(keys, values, 4, starts if index else starts[1:],
                                       ends if index else ends[1:])
        np.testing.assert_array_equal(keys.numpy(), base)  # the valid segment is not sorted
        np.testing.assert_array_equal(values.numpy(), base * 10)
    keys = kc.array(base)
    with pytest.raises(ValueError, match=r"index 1: \[2, 5\) for count 4$"):
        utils.segmented_sort_pairs(keys, kc.array(base), 4, kc.array([0, 2, 5], dtype=kc.int32))


def test_segmented_sort_errors():
    k = kc.zeros(8, dtype=kc.int32)
    v = kc.zeros(8, dtype=kc.int32)
    seg = kc.array([0, 2], dtype=kc.int32)
    for count in (1.5, True, "2"):
        with pytest.raises(TypeError, match="count must be an integer"):
            utils.segmented_sort_pairs(k, v, count, seg)
    with pytest.raises(ValueError, match="count must be non-negative, got -1$"):
        utils.segmented_sort_pairs(k, v, -1, seg)
    with pytest.raises(ValueError, match="count must not exceed 2147483647, got 2147483648$"):
        utils.segmented_sort_pairs(k, v, 1 << 31, seg)
    utils.segmented_sort_pairs(k, v, np.int64(2), seg)  # NumPy integers are integers
    with pytest.raises(RuntimeError, match=r"contain 2\*count elements$"):
        utils.segmented_sort_pairs(k, v, 5, seg)
    with pytest.raises(RuntimeError, match="contiguous keys array$"):
        utils.segmented_sort_pairs(kc.zeros(16, dtype=kc.int32)[::2], k, 2, seg)
    with pytest.raises(RuntimeError, match="contiguous values array$"):
        utils.segmented_sort_pairs(k, kc.zeros(16, dtype=kc.int32)[::2], 2, seg)
    with pytest.raises(TypeError, match="segment_start_indices array must be of type int32$"):
        utils.segmented_sort_pairs(k, k, 2, kc.array([0, 2], dtype=kc.int64))
    with pytest.raises(ValueError, match="segment_start_indices must be one-dimensional$"):
        utils.segmented_sort_pairs(k, k, 2, kc.zeros((2, 2), dtype=kc.int32))
    with pytest.raises(ValueError, match="contiguous segment_start_indices array$"):
        utils.segmented_sort_pairs(k, k, 2, kc.zeros(4, dtype=kc.int32)[::2])
    with pytest.raises(ValueError, match="segment_end_indices must be one-dimensional$"):
        utils.segmented_sort_pairs(k, k, 2, seg, kc.zeros((1, 2), dtype=kc.int32))
    with pytest.raises(ValueError, match=r"must have the same size \(2 vs 1\)$"):
        utils.segmented_sort_pairs(k, k, 2, seg, kc.array([2], dtype=kc.int32))
    for keys in (kc.zeros(8, dtype=kc.int64), kc.zeros(8, dtype=kc.float64),
                 kc.zeros(8, dtype=kc.uint32)):
        with pytest.raises(TypeError, match=f"Unsupported data type: {keys.dtype!r}$"):
            utils.segmented_sort_pairs(keys, k, 2, seg)
    for keys in (k, kc.zeros(8, dtype=kc.float32)):  # values: int32 only (Warp's message)
        with pytest.raises(TypeError, match=f"int32 values only.*: {keys.dtype!r}$"):
            utils.segmented_sort_pairs(keys, kc.zeros(8, dtype=kc.float32), 2, seg)


def test_segmented_sort_graph_capture(rng):
    n = 40_000
    keys = kc.zeros(2 * n, dtype=kc.float32)
    values = kc.zeros(2 * n, dtype=kc.int32)
    starts_np, ends_np = random_segments(rng, n, 50)
    starts, ends = kc.array(starts_np), kc.array(ends_np)
    with kc.ScopedCapture(device="cpu") as capture:
        utils.segmented_sort_pairs(keys, values, n, starts, ends)
    for _ in range(2):  # the recording, replayed on new data
        data = nonzero(rng, n, np.float32)
        keys.numpy()[:n] = data
        values.numpy()[:n] = np.arange(n)
        kc.capture_launch(capture.graph)
        want_keys, want_values = segments_reference(data, np.arange(n, dtype=np.int32),
                                                    starts_np, ends_np)
        np.testing.assert_array_equal(keys.numpy()[:n], want_keys)
        np.testing.assert_array_equal(values.numpy()[:n], want_values)
    ends.numpy()[7] = n + 1  # the ranges are checked at each replay, before any sorting
    before = keys.numpy()[:n].copy()
    with pytest.raises(RuntimeError, match="Invalid segment range at index 7"):
        kc.capture_launch(capture.graph)
    np.testing.assert_array_equal(keys.numpy()[:n], before)


# ---- create_warp_function --------------------------------------------------------------------

_made, _made_module = utils.create_warp_function(lambda x, y: x * 2.0 + y)


@kc.kernel
def _apply_made(a: kc.array(dtype=float), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = _made(a[i], 1.0)


def _named(x):
    return x + 1


def test_create_warp_function(rng):
    assert _made(1.5, 2.0) == 5.0  # on the host: the Python function
    assert _made.key.startswith("func_") and len(_made.key) == 21
    assert _made_module.name == f"map_{_made.key}"
    a = nonzero(rng, 1000, np.float32)
    out = poisoned(1000, np.float32)
    kc.launch(_apply_made, 1000, inputs=[kc.array(a), out])
    np.testing.assert_allclose(out.numpy(), a * 2.0 + 1.0, rtol=1e-6)
    np.testing.assert_allclose(kc.map(_made, kc.array(a), kc.array(a)).numpy(), a * 3.0,
                               rtol=1e-6)
    named, module = utils.create_warp_function(_named)
    assert (named.key, module.name, named(2)) == ("_named", "map__named", 3)
    with pytest.raises(TypeError, match="Python function"):
        utils.create_warp_function(kc.sin)


def test_create_warp_function_key_is_the_same_in_every_process():
    code = "from tests.test_utils_segments import _made; print(_made.key)"
    keys = {_made.key}
    for seed in ("1", "2"):
        proc = run_python(code, env={"PYTHONHASHSEED": seed}, cwd=Path(__file__).parents[1])
        assert proc.returncode == 0, proc.stderr
        keys.add(proc.stdout.strip().splitlines()[-1])
    assert len(keys) == 1


# ---- against warp-lang -----------------------------------------------------------------------

_WARP_SCRIPT = """
x = wp.array(inputs["runs"], dtype=wp.int32)
rv = wp.zeros_like(x)
rl = wp.zeros_like(x)
count = wp.utils.runlength_encode(x, rv, rl)
results["run_values"] = rv.numpy()[:count].copy()
results["run_lengths"] = rl.numpy()[:count].copy()
for name in ("keys_i32", "keys_f32"):
    keys = inputs[name]
    n = len(keys)
    k = wp.array(np.concatenate([keys, keys]))
    v = wp.array(np.arange(2 * n, dtype=np.int32))
    starts = wp.array(inputs["starts"], dtype=wp.int32)
    ends = wp.array(inputs["ends"], dtype=wp.int32)
    wp.utils.segmented_sort_pairs(k, v, n, starts, ends)
    results[name] = k.numpy()[:n].copy()
    results[name + "_values"] = v.numpy()[:n].copy()
"""


def test_matches_warp(rng, tmp_path):
    n = 100_003
    starts, ends = random_segments(rng, n, 300)
    data = {
        "runs": random_runs(rng, n, "short"),
        "keys_i32": rng.integers(-50, 50, n).astype(np.int32),
        "keys_f32": nonzero(rng, n, np.float32, -1e3, 1e3),
        "starts": starts,
        "ends": ends,
    }
    warp = run_warp(_WARP_SCRIPT, tmp_path, **data)
    run_values, run_lengths = poisoned(n, np.int32), poisoned(n, np.int32)
    count = utils.runlength_encode(kc.array(data["runs"]), run_values, run_lengths)
    np.testing.assert_array_equal(run_values.numpy()[:count], warp["run_values"])
    np.testing.assert_array_equal(run_lengths.numpy()[:count], warp["run_lengths"])
    for name in ("keys_i32", "keys_f32"):
        got_keys, got_values = sort_segments(data[name], np.arange(n, dtype=np.int32),
                                              starts, ends)
        np.testing.assert_array_equal(got_keys, warp[name])
        np.testing.assert_array_equal(got_values, warp[name + "_values"])
