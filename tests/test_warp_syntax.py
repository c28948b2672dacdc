"""Warp 1.19 spellings: `wp.array[T]` annotations, mixed-type comparisons, empty structs,
loops over a query variable and `lerp` of vectors, each compared with Warp."""

from __future__ import annotations

import typing

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import run_warp


def test_array_subscript_annotations():
    assert kc.array[kc.vec3].dtype == kc.vec3 and kc.array[kc.vec3].ndim == 1
    assert kc.array[float, 2].ndim == 2
    assert kc.array[float, typing.Literal[3]].ndim == 3
    for cls, ndim in ((kc.array1d, 1), (kc.array2d, 2), (kc.array3d, 3), (kc.array4d, 4)):
        ann = cls[kc.int32]
        assert ann.ndim == ndim and ann.dtype == kc.int32 and ann.ptr is None
    made = kc.array2d(np.ones((2, 3), np.float32))  # still a constructor
    assert isinstance(made, kc.array) and made.shape == (2, 3)


@pytest.mark.parametrize("bad, message", [
    (lambda: kc.array[float, 5], "1 to 4"),
    (lambda: kc.array[float, "2"], "must be an int"),
    (lambda: kc.array[float, 2, 3], "dtype and an optional ndim"),
    (lambda: kc.array2d[float, 2], "takes one dtype"),
])
def test_array_subscript_errors(bad, message):
    with pytest.raises((TypeError, ValueError), match=message):
        bad()


@kc.kernel
def k_subscripted(a: kc.array[float], b: kc.array2d[kc.vec2], c: kc.array[kc.int32, 3]):
    i = kc.tid()
    a[i] = b[i, 1].y + float(c[i, 0, 1])


def test_subscripted_annotations_in_kernels(rng):
    b = rng.standard_normal((4, 2, 2)).astype(np.float32)
    c = rng.integers(-50, 50, (4, 2, 2)).astype(np.int32)
    a = kc.full(4, np.nan)
    kc.launch(k_subscripted, 4, [a, kc.array(b, dtype=kc.vec2), c])
    np.testing.assert_allclose(a.numpy(), b[:, 1, 1] + c[:, 0, 1])


@kc.kernel
def k_compare(f: kc.array[float], i: kc.array[int], u: kc.array[kc.uint32],
              b: kc.array[kc.uint8], d: kc.array[kc.float64], n: kc.array[kc.int64],
              out: kc.array2d[int]):
    t = kc.tid()
    out[t, 0] = int(f[t] < i[t])
    out[t, 1] = int(i[t] >= f[t])
    out[t, 2] = int(i[t] < u[t])  # int32 meets uint32: compared as unsigned, as in C++
    out[t, 3] = int(b[t] < i[t])
    out[t, 4] = int(d[t] <= f[t])
    out[t, 5] = int(n[t] > u[t])  # int64 holds every uint32: compared as int64
    out[t, 6] = int(f[t] == i[t])
    out[t, 7] = int(b[t] != u[t])


_COMPARE_WARP = """
@wp.kernel
def k_compare(f: wp.array[float], i: wp.array[int], u: wp.array[wp.uint32],
              b: wp.array[wp.uint8], d: wp.array[wp.float64], n: wp.array[wp.int64],
              out: wp.array2d[int]):
    t = wp.tid()
    out[t, 0] = int(f[t] < i[t])
    out[t, 1] = int(i[t] >= f[t])
    out[t, 2] = int(i[t] < u[t])
    out[t, 3] = int(b[t] < i[t])
    out[t, 4] = int(d[t] <= f[t])
    out[t, 5] = int(n[t] > u[t])
    out[t, 6] = int(f[t] == i[t])
    out[t, 7] = int(b[t] != u[t])

args = [wp.array(inputs[k]) for k in ("f", "i", "u", "b", "d", "n")]
out = wp.zeros((len(inputs["f"]), 8), dtype=int)
wp.launch(k_compare, len(inputs["f"]), args + [out])
results["out"] = out.numpy()
"""


def test_mixed_type_comparisons_match_warp(rng, tmp_path):
    n = 64
    data = {
        "f": rng.integers(-4, 4, n).astype(np.float32) + rng.choice([0, 0.5], n).astype(
            np.float32),
        "i": rng.integers(-4, 4, n).astype(np.int32),
        "u": rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32),
        "b": rng.integers(0, 256, n).astype(np.uint8),
        "d": rng.integers(-4, 4, n).astype(np.float64),
        "n": rng.integers(-2**40, 2**40, n).astype(np.int64),
    }
    data["u"][:8] = [0, 1, 2, 3, 4, 5, 6, 7]  # small values too, so `i < u` goes both ways
    out = kc.full((n, 8), -1, dtype=int)
    kc.launch(k_compare, n, [kc.array(data[k]) for k in ("f", "i", "u", "b", "d", "n")] + [out])
    got = out.numpy()
    f, i, u, b, d, m = (data[k] for k in ("f", "i", "u", "b", "d", "n"))
    expected = np.stack([f < i, i >= f, i.astype(np.uint32) < u, b < i, d <= f, m > u,
                         f == i, b != u], 1).astype(np.int32)
    np.testing.assert_array_equal(got, expected)
    warp = run_warp(_COMPARE_WARP, tmp_path, **data)
    np.testing.assert_array_equal(got, warp["out"])


@kc.struct
class Empty:
    pass


@kc.struct
class HoldsEmpty:
    marker: Empty
    scale: float


@kc.kernel
def k_empty(tag: Empty, holder: HoldsEmpty, out: kc.array[float]):
    i = kc.tid()
    out[i] = holder.scale * float(i)


def test_empty_structs():
    out = kc.full(5, np.nan)
    kc.launch(k_empty, 5, [Empty(), HoldsEmpty(scale=2.5), out])
    np.testing.assert_allclose(out.numpy(), 2.5 * np.arange(5))
    assert repr(Empty()) == "Empty()"


@kc.kernel
def k_lerp(a: kc.array[kc.vec3], b: kc.array[kc.vec3], t: kc.array[float],
           out: kc.array[kc.vec3], q_out: kc.array[kc.quat], m_out: kc.array[kc.mat22]):
    i = kc.tid()
    out[i] = kc.lerp(a[i], b[i], t[i])
    q_out[i] = kc.lerp(kc.quat(a[i][0], a[i][1], a[i][2], 1.0), kc.quat_identity(), t[i])
    m_out[i] = kc.lerp(kc.mat22(a[i][0], a[i][1], b[i][0], b[i][1]), kc.mat22(), 0.25)


def test_lerp_of_vectors_quaternions_and_matrices(rng):
    n = 16
    a, b = (rng.standard_normal((n, 3)).astype(np.float32) for _ in range(2))
    t = rng.uniform(0, 1, n).astype(np.float32)
    out = kc.array(np.full((n, 3), np.nan, np.float32), dtype=kc.vec3)
    q_out = kc.array(np.full((n, 4), np.nan, np.float32), dtype=kc.quat)
    m_out = kc.array(np.full((n, 2, 2), np.nan, np.float32), dtype=kc.mat22)
    kc.launch(k_lerp, n, [kc.array(a, dtype=kc.vec3), kc.array(b, dtype=kc.vec3), t, out,
                          q_out, m_out])
    s = t[:, None]
    np.testing.assert_allclose(out.numpy(), a * (1 - s) + b * s, rtol=1e-6, atol=1e-6)
    qa = np.concatenate([a, np.ones((n, 1), np.float32)], 1)
    qi = np.array([0, 0, 0, 1], np.float32)
    np.testing.assert_allclose(q_out.numpy(), qa * (1 - s) + qi * s, rtol=1e-6, atol=1e-6)
    ma = np.stack([a[:, :2], b[:, :2]], 1)
    np.testing.assert_allclose(m_out.numpy(), ma * 0.75, rtol=1e-6)


@kc.kernel
def k_lerp_bad(a: kc.array[kc.vec3], out: kc.array[kc.vec3]):
    i = kc.tid()
    out[i] = kc.lerp(a[i], a[i], kc.float64(0.5))


def test_lerp_weight_type_error():
    a = kc.zeros(2, dtype=kc.vec3)
    with pytest.raises(kc.KernelError, match="weight of lerp") as info:
        kc.launch(k_lerp_bad, 2, [a, a])
    assert "test_warp_syntax.py" in str(info.value)


@kc.kernel
def k_query_variable(grid: kc.uint64, points: kc.array[kc.vec3], out: kc.array2d[int]):
    i = kc.tid()
    query = kc.hash_grid_query(grid, points[i], 0.3)
    first = int(0)
    for j in query:
        if kc.length(points[j] - points[i]) <= 0.3:
            first += 1
    again = int(0)
    for _j in query:  # the first loop used the query up, as in Warp
        again += 1
    out[i, 0] = first
    out[i, 1] = again


def test_loop_over_a_query_variable_advances_it(rng):
    pts = rng.uniform(0, 2, (300, 3)).astype(np.float32)
    points = kc.array(pts, dtype=kc.vec3)
    grid = kc.HashGrid(16, 16, 16)
    grid.build(points, 0.3)
    out = kc.full((300, 2), -1, dtype=int)
    kc.launch(k_query_variable, 300, [grid.id, points, out])
    dist = np.linalg.norm(pts[:, None, :] - pts[None, :, :], axis=-1)
    np.testing.assert_array_equal(out.numpy()[:, 0], (dist <= 0.3).sum(1))
    np.testing.assert_array_equal(out.numpy()[:, 1], 0)


@kc.kernel
def k_spatial_from_parts(w: kc.array[kc.vec3], v: kc.array[kc.vec3],
                         out: kc.array[kc.spatial_vector]):
    i = kc.tid()
    out[i] = kc.spatial_vector(w[i], v[i])


def test_spatial_vector_from_two_vec3(rng):
    w, v = (rng.standard_normal((8, 3)).astype(np.float32) for _ in range(2))
    out = kc.array(np.full((8, 6), np.nan, np.float32), dtype=kc.spatial_vector)
    kc.launch(k_spatial_from_parts, 8, [kc.array(w, dtype=kc.vec3), kc.array(v, dtype=kc.vec3),
                                        out])
    np.testing.assert_array_equal(out.numpy(), np.concatenate([w, v], 1))


def test_empty_structs_compile_for_cuda():
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs the NVRTC bindings")
    compiled = kc.compile(k_empty, target="cuda", arch=80)
    assert compiled.format == "cubin" and compiled.binary
    assert "char padding;" in compiled.source


@kc.func
def draws_in_a_loop(state: kc.uint32, out: kc.array[float], base: int):
    for k in range(3):
        out[base + k] = kc.randf(state)
    if base < 0:  # never taken: the state must still be the advanced one afterwards
        out[0] = kc.randf(state)
    out[base + 3] = kc.randf(state)


@kc.kernel
def k_parameter_state(seed: int, out: kc.array[float]):
    i = kc.tid()
    draws_in_a_loop(kc.rand_init(seed, i), out, 4 * i)


_PARAMETER_STATE_WARP = """
@wp.func
def draws_in_a_loop(state: wp.uint32, out: wp.array[float], base: int):
    for k in range(3):
        out[base + k] = wp.randf(state)
    if base < 0:
        out[0] = wp.randf(state)
    out[base + 3] = wp.randf(state)


@wp.kernel
def k_parameter_state(seed: int, out: wp.array[float]):
    i = wp.tid()
    draws_in_a_loop(wp.rand_init(seed, i), out, 4 * i)


out = wp.zeros(16, dtype=float)
wp.launch(k_parameter_state, 4, [42, out])
results["out"] = out.numpy()
"""


def test_a_state_parameter_advances_in_loops_and_branches(tmp_path):
    out = kc.full(16, np.nan)
    kc.launch(k_parameter_state, 4, [42, out])
    got = out.numpy()
    assert len(np.unique(got)) == 16  # four different draws per thread
    np.testing.assert_array_equal(got, run_warp(_PARAMETER_STATE_WARP, tmp_path)["out"])
