"""The CPU hash-grid build (`kernelc/spatial/hash_grid_sort.py`): points sorted stably by
cell, every cell's slots, and rebuilds that empty only the cells marked before, all
against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc


def _reference(pts: np.ndarray, radius: float, dims: tuple[int, int, int]):
    """(point ids, cell starts, cell ends) of a build, by NumPy: a stable sort of cells."""
    inv = np.float32(1) / np.float32(radius)
    coords = np.floor(pts * inv).astype(np.int64)  # as float32 products, as the kernels
    wrapped = np.mod(coords, np.array(dims, np.int64))
    cells = (wrapped[:, 2] * dims[0] * dims[1] + wrapped[:, 1] * dims[0] + wrapped[:, 0])
    order = np.argsort(cells, kind="stable")
    num = dims[0] * dims[1] * dims[2]
    starts = np.zeros(num, np.int32)
    ends = np.zeros(num, np.int32)
    sorted_cells = cells[order]
    first = np.r_[True, sorted_cells[1:] != sorted_cells[:-1]] if len(order) else []
    last = np.r_[sorted_cells[1:] != sorted_cells[:-1], True] if len(order) else []
    slots = np.arange(len(order))
    starts[sorted_cells[first]] = slots[first]
    ends[sorted_cells[last]] = slots[last] + 1
    return order.astype(np.int32), starts, ends


def _build_and_check(grid: kc.HashGrid, pts: np.ndarray, radius: float) -> None:
    if grid._values is not None:
        grid._values.fill_(-999)  # poison the slots the sort must write
    grid.build(kc.array(pts, dtype=kc.vec3), radius)
    ids, starts, ends = _reference(pts, radius, (grid.dim_x, grid.dim_y, grid.dim_z))
    if len(pts):
        np.testing.assert_array_equal(grid.point_ids.numpy(), ids)
    np.testing.assert_array_equal(grid.cell_starts.numpy(), starts)
    np.testing.assert_array_equal(grid.cell_ends.numpy(), ends)


# 1 cell; 6 bits (one level only); 14 bits (example_sph's table: one pass per bucket);
# 21 bits (128^3); 22 bits (two passes per bucket)
@pytest.mark.parametrize("dims", [(1, 1, 1), (4, 4, 4), (25, 25, 25), (128, 128, 128),
                                  (130, 130, 130)])
def test_build_matches_stable_sort(dims, rng):
    grid = kc.HashGrid(*dims)
    for n, side in ((5000, 40.0), (20000, 300.0), (3, 2.0)):
        # negative coordinates wrap around the table; many points share cells
        pts = ((rng.random((n, 3)) - 0.3) * side).astype(np.float32)
        _build_and_check(grid, pts, 1.5)


def test_rebuilds_empty_the_cells_marked_before(rng):
    grid = kc.HashGrid(128, 128, 128)
    big = (rng.random((30000, 3)) * 60).astype(np.float32)
    _build_and_check(grid, big, 1.0)
    far = (rng.random((500, 3)) * 20 + 70).astype(np.float32)  # other cells, fewer points
    _build_and_check(grid, far, 1.0)
    _build_and_check(grid, np.zeros((0, 3), np.float32), 1.0)
    _build_and_check(grid, big[:100], 1.0)
    grid.reserve(100000)  # new scratch: the old sorted cells are gone
    _build_and_check(grid, far, 1.0)
    _build_and_check(grid, big, 2.0)


def test_points_in_one_cell_and_one_point(rng):
    grid = kc.HashGrid(16, 16, 16)
    same = np.full((4000, 3), 3.5, np.float32)
    _build_and_check(grid, same, 1.0)
    _build_and_check(grid, same[:1], 1.0)
    _build_and_check(grid, (rng.random((4000, 3)) * 16).astype(np.float32), 1.0)


def test_grouped_then_plain_builds_agree(rng):
    # a grouped build (radix sort of 64-bit keys) leaves no stale cells for a plain one
    grid = kc.HashGrid(32, 32, 32)
    pts = (rng.random((3000, 3)) * 30).astype(np.float32)
    groups = kc.array(rng.integers(0, 4, 3000).astype(np.int32))
    grid.build(kc.array(pts, dtype=kc.vec3), 1.0, groups=groups)
    _build_and_check(grid, pts[:1000] + 1.0, 1.0)


def test_builds_around_a_graph_capture(rng):
    # a captured build replays with the captured size; builds after it zero every cell
    grid = kc.HashGrid(64, 64, 64)
    first = (rng.random((4000, 3)) * 40).astype(np.float32)
    _build_and_check(grid, first, 1.0)
    points = kc.array((rng.random((1000, 3)) * 40 + 20).astype(np.float32), dtype=kc.vec3)
    with kc.ScopedCapture(device="cpu") as capture:
        grid.build(points, 1.0)
    moved = (rng.random((1000, 3)) * 10).astype(np.float32)
    points.assign(moved)
    kc.capture_launch(capture.graph)
    ids, starts, ends = _reference(moved, 1.0, (64, 64, 64))
    np.testing.assert_array_equal(grid.point_ids.numpy(), ids)
    np.testing.assert_array_equal(grid.cell_starts.numpy(), starts)
    np.testing.assert_array_equal(grid.cell_ends.numpy(), ends)
    _build_and_check(grid, first[:200], 1.0)
    kc.capture_launch(capture.graph)
    _build_and_check(grid, first[:50] + 5.0, 1.0)
