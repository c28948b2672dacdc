"""The hash-grid query's walk: every candidate, in Warp's order (cells x fastest, each cell's
points in slot order), against a NumPy walk of the same block of cells.

The query steps its wrapped cell coordinates along with the block's counters (no division
per cell) and visits a row's consecutive cells as one run of sorted slots; these cases put
blocks across the table's edges, over empty cells, wider than the table, and empty or
inverted (negative radius), with and without groups.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import poisoned

_FNV_OFFSET, _FNV_PRIME = 2166136261, 16777619


@kc.kernel
def walk(grid: kc.uint64, queries: kc.array(dtype=kc.vec3), radius: float,
         counts: kc.array(dtype=int), hashes: kc.array(dtype=kc.uint32),
         firsts: kc.array(dtype=int), lasts: kc.array(dtype=int)):
    t = kc.tid()
    h = kc.uint32(2166136261)
    n = int(0)
    first = int(-1)
    last = int(-1)
    for index in kc.hash_grid_query(grid, queries[t], radius):
        h = (h ^ kc.uint32(index)) * kc.uint32(16777619)
        if n == 0:
            first = index
        last = index
        n += 1
    counts[t] = n
    hashes[t] = h
    firsts[t] = first
    lasts[t] = last


@kc.kernel
def walk_group(grid: kc.uint64, queries: kc.array(dtype=kc.vec3), radius: float,
               group: int, counts: kc.array(dtype=int), hashes: kc.array(dtype=kc.uint32)):
    t = kc.tid()
    h = kc.uint32(2166136261)
    n = int(0)
    query = kc.hash_grid_query(grid, queries[t], radius, group)
    index = int(0)
    while kc.hash_grid_query_next(query, index):
        h = (h ^ kc.uint32(index)) * kc.uint32(16777619)
        n += 1
    counts[t] = n
    hashes[t] = h


@kc.kernel
def walk_break(grid: kc.uint64, queries: kc.array(dtype=kc.vec3), radius: float, stop: int,
               counts: kc.array(dtype=int), again: kc.array(dtype=int)):
    # `break` part-way through a run, then the same query variable walked on
    t = kc.tid()
    query = kc.hash_grid_query(grid, queries[t], radius)
    n = int(0)
    for _index in query:
        n += 1
        if n == stop:
            break
    m = int(0)
    for _index in query:
        m += 1
    counts[t] = n
    again[t] = m


def _cell_of(p: np.ndarray, inv: np.float32) -> np.ndarray:
    # as the kernels compute it: float32 product, floor, saturating conversion
    v = np.floor((p * inv).astype(np.float32)).astype(np.float64)
    return np.clip(np.nan_to_num(v, nan=0.0), -2.0**31, 2.0**31 - 2).astype(np.int64)


def _reference(pts, groups, dims, width, queries, radius, group=None):
    """The sequence of candidates of each query, walking cell by cell as Warp does."""
    inv = np.float32(1) / np.float32(width)
    dx, dy, dz = dims
    c = _cell_of(pts, inv) % np.array(dims)
    cell = c[:, 2] * (dx * dy) + c[:, 1] * dx + c[:, 0]
    key = cell if groups is None else cell * 2**32 + (groups.astype(np.int64) & 0xFFFFFFFF)
    order = np.argsort(key, kind="stable")
    members = {}
    for i in order:
        members.setdefault(int(cell[i]), []).append(int(i))
    r = np.float32(radius)
    lo = _cell_of((queries - r).astype(np.float32), inv)
    hi = _cell_of((queries + r).astype(np.float32), inv)
    seqs = []
    for q in range(len(queries)):
        ends = [hi[q, a] if hi[q, a] - lo[q, a] < dims[a] else lo[q, a] + dims[a] - 1
                for a in range(3)]
        xs, ys, zs = (range(lo[q, a], max(ends[a], lo[q, a]) + 1) for a in range(3))
        seq = []
        for z in zs:
            for y in ys:
                for x in xs:
                    k = (z % dz) * (dx * dy) + (y % dy) * dx + (x % dx)
                    seq += [i for i in members.get(k, ())
                            if group is None or groups is None or groups[i] == group]
        seqs.append(seq)
    return seqs


def _fnv(seq) -> int:
    h = _FNV_OFFSET
    for i in seq:
        h = ((h ^ i) * _FNV_PRIME) & 0xFFFFFFFF
    return h


def _check(seqs, counts, hashes, firsts=None, lasts=None):
    np.testing.assert_array_equal(counts.numpy(), [len(s) for s in seqs])
    np.testing.assert_array_equal(hashes.numpy(), [_fnv(s) for s in seqs])
    if firsts is not None:
        np.testing.assert_array_equal(firsts.numpy(), [s[0] if s else -1 for s in seqs])
        np.testing.assert_array_equal(lasts.numpy(), [s[-1] if s else -1 for s in seqs])


def _outputs(m: int):
    return (poisoned(m, np.int32), poisoned(m, np.uint32), poisoned(m, np.int32),
            poisoned(m, np.int32))


# (dims, cell width, query radius, lower corner, extent): wrap around small tables, blocks
# wider than the table, sparse grids with empty cells, negative coordinates
CASES = [((5, 4, 3), 1.0, 1.0, -3.0, 9.0),
         ((16, 16, 16), 0.5, 0.5, 0.0, 2.0),
         ((7, 9, 5), 0.75, 2.9, -10.0, 20.0),
         ((32, 8, 8), 0.3, 0.45, -1.0, 6.0),
         ((3, 3, 3), 1.0, 0.0, 0.0, 4.0),
         ((6, 5, 4), 1.0, -0.5, -2.0, 6.0)]


@pytest.fixture(params=["auto", "all"])
def simd_mode(request):
    previous = kc.config.cpu_simd
    kc.config.cpu_simd = request.param
    yield request.param
    kc.config.cpu_simd = previous


@pytest.mark.parametrize("case", range(len(CASES)))
def test_walk_matches_cell_by_cell(case, simd_mode):
    dims, width, radius, lower, extent = CASES[case]
    rng = np.random.default_rng(100 + case)
    n, m = 700, 300
    pts = (rng.random((n, 3)) * extent + lower).astype(np.float32)
    pts[: n // 5] = pts[rng.integers(0, n, n // 5)]  # duplicates: several points per cell
    queries = np.concatenate([pts[:150], (rng.random((m - 150, 3)) * extent * 1.5 + lower
                                          - extent / 4)]).astype(np.float32)
    grid = kc.HashGrid(*dims)
    grid.build(kc.array(pts, dtype=kc.vec3), width)
    outs = _outputs(m)
    kc.launch(walk, m, [grid.id, kc.array(queries, dtype=kc.vec3), radius, *outs])
    _check(_reference(pts, None, dims, width, queries, radius), *outs)


def test_walk_break_and_resume():
    dims, width, radius = (6, 6, 6), 1.0, 1.2
    rng = np.random.default_rng(7)
    pts = (rng.random((400, 3)) * 5.0).astype(np.float32)
    queries = pts[:200].copy()
    grid = kc.HashGrid(*dims)
    grid.build(kc.array(pts, dtype=kc.vec3), width)
    seqs = _reference(pts, None, dims, width, queries, radius)
    counts, again = poisoned(200, np.int32), poisoned(200, np.int32)
    kc.launch(walk_break, 200, [grid.id, kc.array(queries, dtype=kc.vec3), radius, 5, counts,
                                again])
    total = np.array([len(s) for s in seqs])
    np.testing.assert_array_equal(counts.numpy(), np.minimum(total, 5))
    np.testing.assert_array_equal(again.numpy(), np.maximum(total - 5, 0))


@pytest.mark.parametrize("filtered", [False, True])
def test_walk_grouped(filtered):
    dims, width, radius = (5, 6, 4), 0.8, 1.1
    rng = np.random.default_rng(11)
    n, m = 900, 250
    pts = (rng.random((n, 3)) * 6.0 - 1.0).astype(np.float32)
    groups = rng.integers(-2, 3, n).astype(np.int32)
    queries = (rng.random((m, 3)) * 7.0 - 1.5).astype(np.float32)
    grid = kc.HashGrid(*dims)
    grid.build(kc.array(pts, dtype=kc.vec3), width, groups=kc.array(groups, dtype=kc.int32))
    q = kc.array(queries, dtype=kc.vec3)
    if filtered:
        counts, hashes = poisoned(m, np.int32), poisoned(m, np.uint32)
        kc.launch(walk_group, m, [grid.id, q, radius, -1, counts, hashes])
        _check(_reference(pts, groups, dims, width, queries, radius, group=-1), counts, hashes)
    else:  # an unfiltered query of a grouped grid walks whole cells, groups in key order
        outs = _outputs(m)
        kc.launch(walk, m, [grid.id, q, radius, *outs])
        _check(_reference(pts, groups, dims, width, queries, radius), *outs)


def test_walk_unbuilt_grid_finds_nothing():
    grid = kc.HashGrid(4, 4, 4)
    outs = _outputs(8)
    queries = kc.array(np.zeros((8, 3), np.float32), dtype=kc.vec3)
    kc.launch(walk, 8, [grid.id, queries, 1.0, *outs])
    np.testing.assert_array_equal(outs[0].numpy(), 0)
    np.testing.assert_array_equal(outs[2].numpy(), -1)
