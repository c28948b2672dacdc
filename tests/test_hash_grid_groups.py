"""Grouped hash grids (`build(points, r, groups=)` and `hash_grid_query(grid, p, r, group)`)
and half-precision grids, against brute force in NumPy and against Warp's visit order."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import poisoned, run_warp


@kc.kernel
def count_group(grid: kc.uint64, points: kc.array(dtype=kc.vec3), radius: float,
                groups: kc.array(dtype=kc.int32), counts: kc.array(dtype=int),
                order: kc.array(dtype=kc.uint32)):
    i = kc.tid()
    p = points[i]
    c = int(0)
    h = kc.uint32(2166136261)
    for index in kc.hash_grid_query(grid, p, radius, groups[i]):
        h = (h ^ kc.uint32(index)) * kc.uint32(16777619)
        if kc.length(points[index] - p) <= radius:
            c += 1
    counts[i] = c
    order[i] = h


@kc.kernel
def count_all(grid: kc.uint64, points: kc.array(dtype=kc.vec3), radius: float,
              counts: kc.array(dtype=int)):
    i = kc.tid()
    p = points[i]
    c = int(0)
    for index in kc.hash_grid_query(grid, p, radius):
        if kc.length(points[index] - p) <= radius:
            c += 1
    counts[i] = c


@kc.func
def _nearest(query: kc.HashGridQuery[kc.float16], center: kc.vec3h,
             points: kc.array(dtype=kc.vec3h), radius: kc.float16) -> int:
    best = int(-1)
    best_d = radius * radius
    index = int(0)
    while kc.hash_grid_query_next(query, index):
        d = points[index] - center
        if kc.dot(d, d) <= best_d:
            best = index
            best_d = kc.dot(d, d)
    return best


@kc.kernel
def nearest_h(grid: kc.uint64, queries: kc.array(dtype=kc.vec3h),
              points: kc.array(dtype=kc.vec3h), radius: kc.float16, out: kc.array(dtype=int)):
    i = kc.tid()
    query = kc.hash_grid_query(grid, queries[i], radius)
    out[i] = _nearest(query, queries[i], points, radius)


def _near(pts: np.ndarray, radius: float) -> np.ndarray:
    d = np.linalg.norm(pts[:, None, :].astype(np.float64) - pts[None, :, :], axis=-1)
    return d <= radius


def _grouped(rng, n=300):
    pts = ((rng.random((n, 3)) - 0.5) * 6.0).astype(np.float32)
    ids = np.array([np.iinfo(np.int32).min, -1, 0, 7, np.iinfo(np.int32).max], np.int32)
    return pts, ids[rng.integers(0, len(ids), n)]


def test_grouped_queries_see_their_group_only(rng):
    pts, groups = _grouped(rng)
    n, radius = len(pts), 0.9
    grid = kc.HashGrid(5, 4, 6)
    points, group_arr = kc.array(pts, dtype=kc.vec3), kc.array(groups, dtype=kc.int32)
    grid.build(points, 0.7, groups=group_arr)
    counts, order = poisoned(n, np.int32), poisoned(n, np.uint32)
    kc.launch(count_group, n, [grid.id, points, radius, group_arr, counts, order])
    near = _near(pts, radius)
    same = groups[:, None] == groups[None, :]
    np.testing.assert_array_equal(counts.numpy(), (near & same).sum(axis=1))
    every = poisoned(n, np.int32)  # a query without a group sees every group
    kc.launch(count_all, n, [grid.id, points, radius, every])
    np.testing.assert_array_equal(every.numpy(), near.sum(axis=1))
    missing = kc.full(n, 99, dtype=kc.int32)  # a group without points finds nothing
    kc.launch(count_group, n, [grid.id, points, radius, missing, counts, order])
    np.testing.assert_array_equal(counts.numpy(), np.zeros(n, np.int32))
    # the same grid rebuilt without groups: a group argument is then ignored, as in Warp
    grid.build(points, 0.7)
    kc.launch(count_group, n, [grid.id, points, radius, group_arr, counts, order])
    np.testing.assert_array_equal(counts.numpy(), near.sum(axis=1))


def test_grouped_visit_order_matches_warp(rng, tmp_path):
    pts, groups = _grouped(rng, 200)
    n = len(pts)
    grid = kc.HashGrid(5, 4, 6)
    points, group_arr = kc.array(pts, dtype=kc.vec3), kc.array(groups, dtype=kc.int32)
    grid.build(points, 0.7, groups=group_arr)
    counts, order = poisoned(n, np.int32), poisoned(n, np.uint32)
    kc.launch(count_group, n, [grid.id, points, 0.9, group_arr, counts, order])
    script = """
    @wp.kernel
    def count_group(grid: wp.uint64, points: wp.array(dtype=wp.vec3), radius: float,
                    groups: wp.array(dtype=wp.int32), counts: wp.array(dtype=int),
                    order: wp.array(dtype=wp.uint32)):
        i = wp.tid()
        p = points[i]
        c = int(0)
        h = wp.uint32(2166136261)
        for index in wp.hash_grid_query(grid, p, radius, groups[i]):
            h = (h ^ wp.uint32(index)) * wp.uint32(16777619)
            if wp.length(points[index] - p) <= radius:
                c += 1
        counts[i] = c
        order[i] = h

    grid = wp.HashGrid(5, 4, 6, device="cpu")
    points = wp.array(inputs["pts"], dtype=wp.vec3, device="cpu")
    groups = wp.array(inputs["groups"], dtype=wp.int32, device="cpu")
    grid.build(points, 0.7, groups=groups)
    counts = wp.zeros(len(points), dtype=int, device="cpu")
    order = wp.zeros(len(points), dtype=wp.uint32, device="cpu")
    wp.launch(count_group, len(points), [grid.id, points, 0.9, groups, counts, order],
              device="cpu")
    results.update(counts=counts.numpy(), order=order.numpy())
    """
    ref = run_warp(script, tmp_path, pts=pts, groups=groups)
    np.testing.assert_array_equal(counts.numpy(), ref["counts"])
    np.testing.assert_array_equal(order.numpy(), ref["order"])


def test_half_precision_grid(rng):
    pts = np.array([[0.0, 0.0, 0.0], [0.2, 0.0, 0.0], [0.8, 0.0, 0.0], [2.0, 0.0, 0.0]])
    queries = np.array([[0.18, 0.0, 0.0], [0.72, 0.0, 0.0], [1.7, 0.0, 0.0], [5.0, 0.0, 0.0]])
    grid = kc.HashGrid(16, 16, 16, dtype=kc.float16)
    points = kc.array(pts, dtype=kc.vec3h)
    grid.build(points, 0.5)
    out = poisoned(4, np.int32)
    kc.launch(nearest_h, 4, [grid.id, kc.array(queries, dtype=kc.vec3h), points,
                             kc.float16(0.35), out])
    np.testing.assert_array_equal(out.numpy(), [1, 2, 3, -1])
    assert kc.HashGridQuery[kc.float64] is kc.HashGridQuery
    with pytest.raises(TypeError, match="float16, float32, float64"):
        kc.HashGridQuery[kc.int32]


def test_group_and_capture_errors():
    grid = kc.HashGrid(4, 4, 4)
    points = kc.zeros(3, dtype=kc.vec3)
    with pytest.raises(RuntimeError, match="type kc.int32"):
        grid.build(points, 1.0, groups=kc.zeros(3, dtype=kc.float32))
    with pytest.raises(RuntimeError, match="same length as points"):
        grid.build(points, 1.0, groups=kc.zeros(2, dtype=kc.int32))
    with pytest.raises(TypeError, match="should have type"):
        kc.HashGrid(4, 4, 4, dtype=kc.float16).build(points, 1.0)
    grid.reserve(8, with_groups=True)
    with pytest.raises(NotImplementedError, match="reserve before capture"):
        with kc.ScopedCapture(device="cpu", force_module_load=False):
            grid.reserve(16)


def test_grouped_and_half_queries_compile_with_nvrtc():
    pytest.importorskip("cuda.bindings.nvrtc")
    from kernelc.codegen import nvrtc
    from kernelc.codegen.cuda import CudaOptions, emit_cuda

    for kernel in (count_group, nearest_h):
        source = emit_cuda(kernel.get_ir(kernel.param_types), CudaOptions())
        image, fmt = nvrtc.compile_cuda(source.text, 80, name=source.kernel)
        assert fmt == "cubin" and source.entry.encode() in image
