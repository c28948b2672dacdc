"""`fem.lookup` with a maximum distance, a cell filter or a guess (Warp 1.19's call forms):

    fem.lookup(domain, x, max_dist)
    fem.lookup(domain, x, filter_array, filter_target)
    fem.lookup(domain, x, max_dist, filter_array, filter_target)
    fem.lookup(domain, x, guess)

on every geometry kind, against NumPy references of what Warp does: on grids and nanogrids
the windowed search around the point (max_dist widens it), on meshes and deformed
geometries the closest accepted cell (max_dist plays no part); and the errors of bad calls,
pinned to the integrand's line and column.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem
from kernelc.fem.utils import grid_to_hexes, grid_to_quads, grid_to_tets, grid_to_tris

RNG_SEED = 4321
N = 160  # points per geometry
FORMS = 6  # plain, max_dist, filter, max_dist + filter, guess, keywords
# Warp's Newton and projected gradient steps (quadrilaterals, deformed cells) stop once a
# step would be under 2^-10 in coordinates
POSITION_TOLERANCE = {"quad": 1e-3, "deformed": 1e-3}


def _lookups(cvec):
    @fem.integrand
    def lookups(s: fem.Sample, domain: fem.Domain, points: Any, flt: kc.array(dtype=int),
                target: int, guesses: kc.array(dtype=int), max_dist: float,
                cells: kc.array2d(dtype=int), coords: Any, where: Any):
        i = s.qp_index
        x = points[i]
        guess = fem.make_free_sample(guesses[i], cvec(cvec.dtype(0.5)))
        found = fem.lookup(domain, x)
        for form in range(FORMS):
            if form == 1:
                found = fem.lookup(domain, x, max_dist)
            elif form == 2:
                found = fem.lookup(domain, x, flt, target)
            elif form == 3:
                found = fem.lookup(domain, x, max_dist, flt, target)
            elif form == 4:
                found = fem.lookup(domain, x, guess)
            elif form == 5:
                found = fem.lookup(domain, x, filter_target=target, max_dist=max_dist,
                                   filter_array=flt)
            cells[i, form] = found.element_index
            coords[i, form] = found.element_coords
            if found.element_index >= 0:
                where[i, form] = domain(found)

    return lookups


def _run(geo, points: np.ndarray, flt: np.ndarray, guesses: np.ndarray, max_dist: float):
    """(cells, coords, world positions) of each form (axis 1) at each point."""
    scalar = geo.scalar_type
    vec = kc.types.vector(geo.dimension, scalar)
    cvec = kc.vec3d if scalar == kc.float64 else kc.vec3
    n = len(points)
    cells = kc.full((n, FORMS), -7, dtype=int)
    coords = kc.full((n, FORMS), cvec(np.nan), dtype=cvec)
    where = kc.full((n, FORMS), vec(np.nan), dtype=vec)
    values = {"points": kc.array(points, dtype=vec), "flt": kc.array(flt, dtype=int),
              "target": 1, "guesses": kc.array(guesses, dtype=int), "max_dist": max_dist,
              "cells": cells, "coords": coords, "where": where}
    fem.interpolate(_lookups(cvec), at=fem.Cells(geo), dim=n, values=values)
    return cells.numpy(), coords.numpy().astype(np.float64), where.numpy().astype(np.float64)


def _filters(rng, count: int) -> list[np.ndarray]:
    """A random filter (about a third of the cells accepted) and one accepting none."""
    return [(rng.uniform(size=count) < 0.35).astype(np.int32), np.zeros(count, np.int32)]


# ---- NumPy references: grids and nanogrids (Warp's windowed search) --------------------------


def _window_search(uvw, start, size, max_dist, candidates, closest):
    """Warp's search around index-space point `start`: windows of offset 0.5, then 3 times
    wider up to ceil(max_dist / smallest size) cells; `candidates(lo, hi)` gives the
    accepted cells (index, ijk) in loop order, `closest(ijk)` -> (squared dist, coords)."""
    min_size = size.min()
    max_offset, scales, offset = np.ceil(max_dist / min_size), min_size / size, 0.5
    best, best_coords = -1, np.zeros(3)
    while best == -1:
        lo = np.floor(start - offset * scales).astype(int)
        hi = np.floor(start + offset * scales).astype(int) + 1
        best_dist = min_size * min_size * offset * offset
        for c, ijk in candidates(lo, hi):
            dist, coords = closest(ijk)
            if dist <= best_dist:
                best, best_dist, best_coords = c, dist, coords
        if offset >= max_offset:
            break
        offset = min(3.0 * offset, max_offset)
    return best, best_coords


def _pad3(v):
    return np.concatenate([v, np.zeros(3 - len(v))])


def grid_reference(x, origin, size, res, max_dist, accept):
    """Warp's grid lookup: the clamped cell, else (filtered) the window search."""
    local = (x - origin) / size
    clamped = np.clip(local, 0.0, res)
    cell = np.minimum(np.floor(clamped), res - 1).astype(int)
    flat = int(np.ravel_multi_index(cell, res))
    if accept is None or accept[flat]:
        return flat, _pad3(clamped - cell)

    def candidates(lo, hi):
        ranges = [range(max(0, a), min(r, b)) for a, b, r in zip(lo, hi, res)]
        for ijk in itertools.product(*ranges):
            c = int(np.ravel_multi_index(ijk, res))
            if accept[c]:
                yield c, np.array(ijk)

    def closest(ijk):
        rel = (local - ijk) * size
        inside = np.clip(rel, 0.0, size)
        return np.sum((rel - inside) ** 2), _pad3(inside / size)

    return _window_search(local, clamped, size, max_dist, candidates, closest)


def voxel_reference(x, table, ijks, voxel, translation, max_dist, accept):
    """Warp's nanogrid lookup: the active voxel holding x, else the window search."""
    uvw = (x - translation) / voxel + 0.5
    c = table.get(tuple(np.floor(uvw).astype(int)))
    if c is not None and (accept is None or accept[c]):
        return c, uvw - ijks[c]

    def candidates(lo, hi):
        for ijk in itertools.product(*[range(a, b) for a, b in zip(lo, hi)]):
            c = table.get(ijk)
            if c is not None and (accept is None or accept[c]):
                yield c, np.array(ijk)

    def closest(ijk):
        rel = uvw - ijk
        coords = np.clip(rel, 0.0, 1.0)
        return np.sum(((coords - rel) * voxel) ** 2), coords

    return _window_search(uvw, uvw, voxel, max_dist, candidates, closest)


def _check_searches(reference, cells, coords, flt, guess_dists, max_dist):
    """Forms 0-5 of each point against `reference(i, max_dist, accept)`."""
    for i in range(len(cells)):
        want = [reference(i, 0.0, None), reference(i, max_dist, None),
                reference(i, 0.0, flt), reference(i, max_dist, flt),
                reference(i, guess_dists[i], None), reference(i, max_dist, flt)]
        for form, (cell, wanted_coords) in enumerate(want):
            assert cells[i, form] == cell, (i, form, cells[i], cell)
            np.testing.assert_allclose(coords[i, form], wanted_coords, rtol=0, atol=2e-5)


@pytest.mark.parametrize("dim, scalar", [(2, kc.float32), (3, kc.float32), (2, kc.float64)])
def test_grids_match_warps_search(dim, scalar):
    rng = np.random.default_rng(RNG_SEED + dim)
    res = np.array([5, 4] if dim == 2 else [3, 4, 2])
    lo, hi = np.array([0.0, -0.5, 0.0][:dim]), np.array([2.0, 1.5, 1.0][:dim])
    vec = kc.types.vector(dim, scalar)
    geo_type = fem.Grid2D if dim == 2 else fem.Grid3D
    geo = geo_type(res=kc.types.vector(dim, kc.int32)(*res), bounds_lo=vec(*lo),
                   bounds_hi=vec(*hi), scalar_type=scalar)
    size = (hi - lo) / res
    points = rng.uniform(lo - 0.6, hi + 0.6, (N, dim))
    guesses = rng.integers(0, geo.cell_count(), N).astype(np.int32)
    max_dist = 0.9
    for flt in _filters(rng, geo.cell_count()):
        cells, coords, _ = _run(geo, points, flt, guesses, max_dist)

        def reference(i, reach, accept):
            return grid_reference(points[i], lo, size, res, reach, accept)

        _check_searches(reference, cells, coords, flt, np.zeros(N), max_dist)
    assert (cells[:, 2] == -1).all()  # nothing accepted: no cell, zero coordinates
    assert (coords[:, 2] == 0.0).all()


@pytest.mark.parametrize("scalar", [kc.float32, kc.float64])
def test_nanogrids_match_warps_search(scalar):
    rng = np.random.default_rng(RNG_SEED + 7)
    box = np.stack(np.meshgrid(np.arange(-2, 3), np.arange(0, 4), np.arange(-1, 2),
                               indexing="ij"), axis=-1).reshape(-1, 3)
    voxels = box[rng.uniform(size=len(box)) < 0.5].astype(np.int32)
    voxel, translation = np.array([0.25, 0.4, 0.3]), np.array([0.1, -0.2, 0.05])
    volume = kc.Volume.allocate_by_voxels(kc.array(voxels, dtype=kc.vec3i),
                                          voxel_size=tuple(voxel), translation=tuple(translation))
    geo = fem.Nanogrid(volume, scalar_type=scalar)
    ijks = volume.get_voxels().numpy()  # in cell order
    table = {tuple(ijk): c for c, ijk in enumerate(ijks)}
    lo, hi = (box.min(0) - 0.5) * voxel + translation, (box.max(0) + 0.5) * voxel + translation
    points = rng.uniform(lo - 0.4, hi + 0.4, (N, 3))
    # guesses: cells (their centres set max_dist), and samples of no cell (max_dist 0)
    guesses = rng.integers(0, geo.cell_count(), N).astype(np.int32)
    guesses[::9], guesses[1::9] = -1, geo.cell_count() + 3
    centres = ijks[np.clip(guesses, 0, len(ijks) - 1)] * voxel + translation
    reach = np.where((guesses >= 0) & (guesses < len(ijks)),
                     np.linalg.norm(centres - points, axis=1), 0.0)
    max_dist = 0.7
    for flt in _filters(rng, geo.cell_count()):
        cells, coords, _ = _run(geo, points, flt, guesses, max_dist)

        def reference(i, dist, accept):
            return voxel_reference(points[i], table, ijks, voxel, translation, dist, accept)

        _check_searches(reference, cells, coords, flt, reach, max_dist)
        assert (cells[:, 1] != -1).sum() > (cells[:, 0] != -1).sum()  # max_dist widens


# ---- NumPy references: meshes and deformed geometries (the closest accepted cell) ------------


def _segment_dist(x, a, b):
    t = np.clip(np.dot(x - a, b - a) / np.dot(b - a, b - a), 0.0, 1.0)
    return np.linalg.norm(x - (a + t * (b - a)))


def polygon_distance(x, corners):
    """Distance from 2-d point x to a convex counter-clockwise polygon."""
    edges = list(zip(corners, np.roll(corners, -1, axis=0)))
    if all((b - a)[0] * (x - a)[1] - (b - a)[1] * (x - a)[0] >= 0 for a, b in edges):
        return 0.0
    return min(_segment_dist(x, a, b) for a, b in edges)


def _triangle_distance_3d(x, a, b, c):
    n = np.cross(b - a, c - a)
    p = x - np.dot(x - a, n) / np.dot(n, n) * n
    areas = [np.dot(np.cross(v - u, p - u), n) for u, v in ((a, b), (b, c), (c, a))]
    if min(areas) >= 0:
        return np.linalg.norm(x - p)
    return min(_segment_dist(x, u, v) for u, v in ((a, b), (b, c), (c, a)))


def tetrahedron_distance(x, corners):
    bary = np.linalg.solve((corners[1:] - corners[0]).T, x - corners[0])
    if bary.min() >= 0 and bary.sum() <= 1:
        return 0.0
    return min(_triangle_distance_3d(x, *corners[list(face)])
               for face in ((0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)))


def box_distance(x, corners):
    return np.linalg.norm(x - np.clip(x, corners.min(0), corners.max(0)))


def _grid_positions(res, rng=None, jitter=0.0):
    positions = np.stack(np.meshgrid(*[np.linspace(0.0, 1.0, r + 1) for r in res],
                                     indexing="ij"), axis=-1).reshape(-1, len(res))
    if rng is not None:
        inner = np.all((positions > 1e-6) & (positions < 1.0 - 1e-6), axis=1)
        positions[inner] += rng.uniform(-jitter, jitter, (inner.sum(), len(res))) / res
    return positions


@fem.integrand
def _affine(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return kc.vec2(0.3 * x[1] - 0.1 * x[0], 0.2 * x[0] + 0.15 * x[1])


def _mesh(kind: str, rng):
    """(geometry, cell corner positions (cells, corners, dim), distance func)."""
    if kind == "tri":
        positions, cells = _grid_positions((4, 3), rng, 0.3), grid_to_tris(4, 3)
        geo = fem.Trimesh2D(kc.array(cells, dtype=int), kc.array(positions, dtype=kc.vec2))
        return geo, positions[cells], polygon_distance
    if kind == "quad":
        positions, cells = _grid_positions((4, 3), rng, 0.25), grid_to_quads(4, 3)
        geo = fem.Quadmesh2D(kc.array(cells, dtype=int), kc.array(positions, dtype=kc.vec2))
        return geo, positions[cells], polygon_distance
    if kind == "tet":
        positions, cells = _grid_positions((3, 2, 2), rng, 0.2), grid_to_tets(3, 2, 2)
        geo = fem.Tetmesh(kc.array(cells, dtype=int), kc.array(positions, dtype=kc.vec3))
        return geo, positions[cells], tetrahedron_distance
    if kind == "hex":  # a rectilinear grid of boxes of different sizes
        positions = _grid_positions((3, 2, 2)) ** np.array([1.0, 1.5, 0.7])
        cells = grid_to_hexes(3, 2, 2)
        geo = fem.Hexmesh(kc.array(cells, dtype=int), kc.array(positions, dtype=kc.vec3))
        return geo, positions[cells], box_distance
    # a grid moved by an affine displacement: parallelogram cells
    base = fem.Grid2D(res=kc.vec2i(4, 3))
    field = fem.make_polynomial_space(base, degree=1, dtype=kc.vec2).make_field()
    fem.interpolate(_affine, dest=field)
    geo = field.make_deformed_geometry(relative=True)
    A = np.array([[0.9, 0.3], [0.2, 1.15]])
    corners = _grid_positions((4, 3))[grid_to_quads(4, 3)] @ A.T
    return geo, corners, polygon_distance


@pytest.mark.parametrize("kind", ["tri", "quad", "tet", "hex", "deformed"])
def test_meshes_find_the_closest_accepted_cell(kind):
    rng = np.random.default_rng(RNG_SEED + len(kind))
    geo, corners, distance = _mesh(kind, rng)
    lo, hi = corners.min(axis=(0, 1)), corners.max(axis=(0, 1))
    points = rng.uniform(lo - 0.3, hi + 0.3, (N, geo.dimension))
    guesses = rng.integers(0, geo.cell_count(), N).astype(np.int32)
    dists = np.array([[distance(x, c) for c in corners] for x in points])
    for flt in _filters(rng, geo.cell_count()):
        cells, coords, where = _run(geo, points, flt, guesses, 5.0)
        accepted = flt == 1
        for form, only in ((0, None), (1, None), (2, accepted), (3, accepted), (4, None)):
            found = cells[:, form]
            if only is not None and not only.any():  # nothing accepted: no cell
                assert (found == -1).all() and (coords[:, form] == -1.0e8).all()
                continue
            best = dists[:, only].min(axis=1) if only is not None else dists.min(axis=1)
            assert (found >= 0).all() and (only is None or only[found].all()), form
            # the cell is a closest one, and the sample its closest point
            np.testing.assert_allclose(dists[np.arange(N), found], best, rtol=0, atol=2e-5)
            np.testing.assert_allclose(np.linalg.norm(where[:, form] - points, axis=1), best,
                                       rtol=0, atol=POSITION_TOLERANCE.get(kind, 2e-5))
        # max_dist, a guess and keywords change nothing on meshes
        for form, same in ((1, 0), (4, 0), (3, 2), (5, 3)):
            np.testing.assert_array_equal(cells[:, form], cells[:, same])
            np.testing.assert_array_equal(coords[:, form], coords[:, same])


@fem.integrand
def _small_dtype_filter(s: fem.Sample, domain: fem.Domain, points: kc.array(dtype=kc.vec2),
                        flt: kc.array(dtype=kc.uint8), cells: kc.array(dtype=int)):
    cells[s.qp_index] = fem.lookup(domain, points[s.qp_index], 1.5, flt, 2).element_index


def test_filters_of_other_dtypes_compare_with_literal_targets():
    rng = np.random.default_rng(RNG_SEED + 11)
    res, lo, hi = np.array([4, 4]), np.zeros(2), np.ones(2)
    geo = fem.Grid2D(res=kc.vec2i(4, 4))
    flt = rng.integers(0, 3, geo.cell_count()).astype(np.uint8)
    points = rng.uniform(-0.2, 1.2, (N, 2))
    cells = kc.full(N, -7, dtype=int)
    fem.interpolate(_small_dtype_filter, at=fem.Cells(geo), dim=N,
                    values={"points": kc.array(points, dtype=kc.vec2),
                            "flt": kc.array(flt, dtype=kc.uint8), "cells": cells})
    want = [grid_reference(x, lo, (hi - lo) / res, res, 1.5, flt == 2)[0] for x in points]
    np.testing.assert_array_equal(cells.numpy(), want)


@fem.integrand
def _environment_forms(s: fem.Sample, domain: fem.Domain, points: kc.array(dtype=kc.vec2),
                       flt: kc.array(dtype=int), env: int, plain: kc.array(dtype=int),
                       with_env: kc.array(dtype=int)):
    x = points[s.qp_index]
    i = s.qp_index * 4
    plain[i] = fem.lookup(domain, x).element_index
    plain[i + 1] = fem.lookup(domain, x, 0.7).element_index
    plain[i + 2] = fem.lookup(domain, x, flt, 1).element_index
    plain[i + 3] = fem.lookup(domain, x, 0.7, flt, 1).element_index
    with_env[i] = fem.lookup(domain, x, env).element_index
    with_env[i + 1] = fem.lookup(domain, x, 0.7, env).element_index
    with_env[i + 2] = fem.lookup(domain, x, flt, 1, env).element_index
    with_env[i + 3] = fem.lookup(domain, x, 0.7, flt, 1, env_index=env).element_index


@pytest.mark.parametrize("env", [0, 3])
def test_environment_index_is_ignored_with_one_environment(env):
    # As Warp: a geometry of one environment holds every cell whatever the index.
    rng = np.random.default_rng(RNG_SEED + 12)
    geo = fem.Grid2D(res=kc.vec2i(4, 4))
    points = rng.uniform(-0.2, 1.2, (N, 2))
    flt = rng.integers(0, 2, geo.cell_count())
    plain, with_env = kc.full(4 * N, -7, dtype=int), kc.full(4 * N, -9, dtype=int)
    fem.interpolate(_environment_forms, at=fem.Cells(geo), dim=N,
                    values={"points": kc.array(points, dtype=kc.vec2),
                            "flt": kc.array(flt, dtype=int), "env": env, "plain": plain,
                            "with_env": with_env})
    assert np.all(plain.numpy() >= -1)
    np.testing.assert_array_equal(with_env.numpy(), plain.numpy())


# ---- errors ---------------------------------------------------------------------------------


# One bad call per integrand (x: vec2, flt: int array, grid: 2-d int array, k: int,
# d: float), a marker at the end of its line.
Ints = kc.array(dtype=int)
Grid = kc.array2d(dtype=int)


@fem.integrand
def bad_filter_env(s: fem.Sample, domain: fem.Domain, x: kc.vec2, flt: Ints, grid: Grid,
                   k: int, d: float):
    return fem.lookup(domain, x, flt, 1, d).element_index  # BAD_FILTER_ENV


@fem.integrand
def bad_seven(s: fem.Sample, domain: fem.Domain, x: kc.vec2, flt: Ints, grid: Grid,
              k: int, d: float):
    return fem.lookup(domain, x, d, flt, 1, 0, 0).element_index  # BAD_SEVEN


@fem.integrand
def bad_not_array(s: fem.Sample, domain: fem.Domain, x: kc.vec2, flt: Ints, grid: Grid,
                  k: int, d: float):
    return fem.lookup(domain, x, d, d).element_index  # BAD_NOT_ARRAY


@fem.integrand
def bad_filter_2d(s: fem.Sample, domain: fem.Domain, x: kc.vec2, flt: Ints, grid: Grid,
                  k: int, d: float):
    return fem.lookup(domain, x, grid, 1).element_index  # BAD_FILTER_2D


@fem.integrand
def bad_target_type(s: fem.Sample, domain: fem.Domain, x: kc.vec2, flt: Ints, grid: Grid,
                    k: int, d: float):
    return fem.lookup(domain, x, flt, d).element_index  # BAD_TARGET_TYPE


@fem.integrand
def bad_target_literal(s: fem.Sample, domain: fem.Domain, x: kc.vec2, flt: Ints, grid: Grid,
                       k: int, d: float):
    return fem.lookup(domain, x, flt, 1.5).element_index  # BAD_TARGET_LITERAL


@fem.integrand
def bad_guess_type(s: fem.Sample, domain: fem.Domain, x: kc.vec2, flt: Ints, grid: Grid,
                   k: int, d: float):
    return fem.lookup(domain, x, guess=d).element_index  # BAD_GUESS_TYPE


@fem.integrand
def bad_max_dist_type(s: fem.Sample, domain: fem.Domain, x: kc.vec2, flt: Ints, grid: Grid,
                      k: int, d: float):
    return fem.lookup(domain, x, max_dist=s).element_index  # BAD_MAX_DIST_TYPE


@fem.integrand
def bad_env_keyword(s: fem.Sample, domain: fem.Domain, x: kc.vec2, flt: Ints, grid: Grid,
                    k: int, d: float):
    return fem.lookup(domain, x, env_index=d).element_index  # BAD_ENV_KEYWORD


@fem.integrand
def bad_unknown_keyword(s: fem.Sample, domain: fem.Domain, x: kc.vec2, flt: Ints, grid: Grid,
                        k: int, d: float):
    return fem.lookup(domain, x, radius=0.5).element_index  # BAD_UNKNOWN_KEYWORD


@fem.integrand
def bad_position(s: fem.Sample, domain: fem.Domain, x: kc.vec2, flt: Ints, grid: Grid,
                 k: int, d: float):
    return fem.lookup(domain, kc.vec3(0.0), 0.5).element_index  # BAD_POSITION


@fem.integrand
def bad_half_filter(s: fem.Sample, domain: fem.Domain, x: kc.vec2, flt: Ints, grid: Grid,
                    k: int, d: float):
    return fem.lookup(domain, x, filter_array=flt).element_index  # BAD_HALF_FILTER


@fem.integrand
def bad_two_reaches(s: fem.Sample, domain: fem.Domain, x: kc.vec2, flt: Ints, grid: Grid,
                    k: int, d: float):
    return fem.lookup(domain, x, 0.5, guess=s).element_index  # BAD_TWO_REACHES


@fem.integrand
def bad_too_few(s: fem.Sample, domain: fem.Domain, x: kc.vec2, flt: Ints, grid: Grid,
                k: int, d: float):
    return fem.lookup(domain).element_index  # BAD_TOO_FEW


@fem.integrand
def bad_twice(s: fem.Sample, domain: fem.Domain, x: kc.vec2, flt: Ints, grid: Grid,
              k: int, d: float):
    return fem.lookup(domain, x, 0.5, max_dist=0.5).element_index  # BAD_TWICE

def _where(marker: str, code: str) -> str:
    """'test_fem_lookup_filters.py:LINE:COL' of `code` on the line ending with `marker`."""
    for number, line in enumerate(Path(__file__).read_text().splitlines(), start=1):
        if line.rstrip().endswith(marker):
            return f"test_fem_lookup_filters.py:{number}:{line.index(code) + 1}"
    raise LookupError(marker)


@pytest.mark.parametrize("name, code, words", [
    ("filter_env", "d)", "env_index must be an int, got float32"),
    ("seven", "fem.lookup", "takes 2 to 6 arguments, got 7"),
    ("not_array", "d, d", "filter_array must be an array, got float32"),
    ("filter_2d", "grid", "filter_array must be a 1-d array"),
    ("target_type", "d)", "filter_target must have filter_array's dtype (int32), got float32"),
    ("target_literal", "1.5", "filter_target must have filter_array's dtype (int32)"),
    ("guess_type", "d)", "guess must be a Sample"),
    ("max_dist_type", "s)", "max_dist must be a float, got Sample"),
    ("env_keyword", "d)", "env_index must be an int, got float32"),
    ("unknown_keyword", "0.5", "no keyword argument 'radius'"),
    ("position", "kc.vec3", "the position must be a vec2"),
    ("half_filter", "fem.lookup", "(filter_array) is not a call form"),
    ("two_reaches", "fem.lookup", "(guess, max_dist) is not a call form"),
    ("too_few", "fem.lookup", "takes 2 to 6 arguments, got 1"),
    ("twice", "0.5)", "got two values for 'max_dist'"),
])
def test_bad_calls_point_at_the_integrand(name, code, words):
    geo = fem.Grid2D(res=kc.vec2i(2))
    values = {"x": kc.vec2(0.5), "flt": kc.zeros(4, dtype=int),
              "grid": kc.zeros((2, 2), dtype=int), "k": 0, "d": 0.5}
    with pytest.raises(kc.KernelError) as info:
        fem.interpolate(globals()[f"bad_{name}"], at=fem.Cells(geo), dim=1, values=values)
    message = str(info.value)
    assert _where(f"# BAD_{name.upper()}", code) in message, message
    assert words in message, message
    assert "^" in message
