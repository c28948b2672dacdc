"""Adaptive sparse grids (`fem.AdaptiveNanogrid`, `adaptive_nanogrid_from_hierarchy`,
`adaptive_nanogrid_from_field`, grading): counts, measures and side/cell consistency,
fields on them, lookups, and Warp's `example_adaptive_grid.py` run with kernelc and in a
Warp subprocess."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem
from tests import fem_harness as H
from tests import fem_mesh_checks as C
from tests import fem_mesh_programs as M


def _grid(voxels, voxel_size=1.0, translation=(0.0, 0.0, 0.0)) -> kc.Volume:
    return kc.Volume.allocate_by_voxels(
        kc.array(np.asarray(voxels, dtype=np.int32), dtype=kc.vec3i),
        voxel_size=voxel_size, translation=translation)


def _two_level_grid() -> fem.AdaptiveNanogrid:
    """Three coarse cells (voxel size 1) and, in the fourth coarse cell, 8 fine ones."""
    fine = [[i, j, k] for i in (2, 3) for j in (2, 3) for k in (0, 1)]
    coarse = [[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 1, 0]]
    return fem.adaptive_nanogrid_from_hierarchy([_grid(fine, 0.5), _grid(coarse, 1.0)])


@kc.func
def distance_refinement(x: kc.vec3):
    return 4.0 * (kc.length(x) - 0.5)


@fem.integrand
def side_consistency(s: fem.Sample, domain: fem.Domain, error: kc.array(dtype=float),
                     measures: kc.array(dtype=float)):
    # A side's point seen from its inner and outer cells, and back, and its measure.
    side = s.element_index
    cells = fem.cells(domain)
    inner = fem.to_inner_cell(domain, s)
    outer = fem.to_outer_cell(domain, s)
    x = domain(s)
    e = kc.length(x - cells(inner)) + kc.length(x - cells(outer))
    e += kc.length(s.element_coords - fem.to_cell_side(domain, inner, side).element_coords)
    e += kc.length(s.element_coords - fem.to_cell_side(domain, outer, side).element_coords)
    e += kc.length(s.element_coords - fem.element_coordinates(domain, side, x))
    F = fem.deformation_gradient(domain, s)
    c = kc.cross(kc.vec3(F[0, 0], F[1, 0], F[2, 0]), kc.vec3(F[0, 1], F[1, 1], F[2, 1]))
    e += kc.abs(kc.length(c) - fem.measure(domain, s))
    e += kc.length(kc.normalize(c) - fem.normal(domain, s))
    kc.atomic_max(error, 0, e)
    kc.atomic_add(measures, side, fem.measure(domain, s) * s.qp_weight)


@fem.integrand
def cell_measure(s: fem.Sample, domain: fem.Domain, measures: kc.array(dtype=float)):
    kc.atomic_add(measures, s.element_index, fem.measure(domain, s) * s.qp_weight)


@fem.integrand
def lookup_check(s: fem.Sample, domain: fem.Domain, points: kc.array(dtype=kc.vec3),
                 cells: kc.array(dtype=int), positions: kc.array(dtype=kc.vec3)):
    found = fem.lookup(domain, points[s.qp_index])
    cells[s.qp_index] = found.element_index
    positions[s.qp_index] = domain(found)


@fem.integrand
def affine(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return 1.0 + 2.0 * x[0] - 0.5 * x[1] + 0.25 * x[2]


@fem.integrand
def sample_field(s: fem.Sample, domain: fem.Domain, u: fem.Field,
                 values: kc.array(dtype=float), points: kc.array(dtype=kc.vec3)):
    values[s.qp_index] = u(s)
    points[s.qp_index] = domain(s)


def _side_and_cell_measures(geo) -> tuple[np.ndarray, np.ndarray, float]:
    sides = kc.zeros(geo.side_count(), dtype=float)
    cells = kc.zeros(geo.cell_count(), dtype=float)
    error = kc.zeros(1, dtype=float)
    fem.interpolate(cell_measure, at=fem.RegularQuadrature(fem.Cells(geo), order=2),
                    values={"measures": cells})
    fem.interpolate(side_consistency, at=fem.RegularQuadrature(fem.Sides(geo), order=2),
                    values={"error": error, "measures": sides})
    return sides.numpy(), cells.numpy(), float(error.numpy()[0])


def test_hierarchy_counts_measures_and_sides():
    geo = _two_level_grid()
    # Warp's counts for this grid (warp/tests/fem/test_fem_geometry.py)
    assert geo.cell_count() == 3 + 8
    assert geo.vertex_count() == 2 * 9 + 27 - 8
    assert geo.side_count() == 2 * 4 + 6 * 2 + (3 * (2 + 1) * 2 ** 2 - 6)
    assert geo.boundary_side_count() == 2 * 4 + 4 * 2 + (4 * 4 - 4)
    assert geo.stacked_face_count() == geo.side_count() + 2
    assert geo.stacked_edge_count() == 6 * 4 + 9 + (3 * 2 * (2 + 1) ** 2 - 12) + 7
    levels = geo.cell_level.numpy()
    assert sorted(levels.tolist()) == [0] * 8 + [1] * 3
    sides, cells, error = _side_and_cell_measures(geo)
    assert error < 1e-4
    np.testing.assert_allclose(cells, np.where(levels == 1, 1.0, 0.125), rtol=1e-5)
    assert sides.sum() == pytest.approx(20 + 3.0, rel=1e-5)


def _refined(grading=None, level_count=3) -> fem.AdaptiveNanogrid:
    coarse = _grid([[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 1, 0]])
    field = fem.ImplicitField(fem.Cells(fem.Nanogrid(coarse)), func=distance_refinement)
    return fem.adaptive_nanogrid_from_field(coarse, level_count=level_count,
                                            refinement_field=field, grading=grading)


def _face_level_jumps(geo) -> np.ndarray:
    inner, outer = geo.side_cells(np.arange(geo.side_count()))
    levels = geo.cell_level.numpy().astype(int)
    return np.abs(levels[inner] - levels[outer])


def _vertex_level_jumps(geo) -> int:
    """The largest level difference between cells sharing a fine-grid corner point."""
    ijk = geo.cell_grid.get_voxels().numpy()[:geo.cell_count()].astype(np.int64)
    levels = geo.cell_level.numpy().astype(np.int64)
    size = 1 << levels
    # cell a touches cell b when their closed boxes intersect
    lo, hi = ijk, ijk + size[:, None]
    touch = np.all((lo[:, None, :] <= hi[None, :, :]) & (lo[None, :, :] <= hi[:, None, :]), -1)
    return int(np.max(np.abs(levels[:, None] - levels[None, :])[touch]))


def test_refinement_and_grading():
    plain, face, vertex = _refined(), _refined("face"), _refined("vertex")
    assert plain.cell_count() + 7 == face.cell_count()  # as in Warp's test
    for geo in (plain, face, vertex):
        sides, cells, error = _side_and_cell_measures(geo)
        assert error < 1e-4
        # the cells tile part of the coarse grid's 2 x 2 x 1 box
        assert cells.sum() <= 4.0 + 1e-4
        ijk = geo.cell_grid.get_voxels().numpy()[:geo.cell_count()]
        assert np.all(ijk >= 0) and np.all(ijk < 8)
    assert _face_level_jumps(plain).max() == 2
    assert _face_level_jumps(face).max() <= 1
    assert _refined(level_count=2).cell_count() == _refined("face", level_count=2).cell_count()
    # four levels: Warp 1.19 gives these counts for the same field
    grids = {g: _refined(g, level_count=4) for g in (None, "face", "vertex")}
    assert [(g.cell_count(), g.vertex_count(), g.side_count(), g.boundary_side_count())
            for g in grids.values()] == [(471, 840, 1796, 514), (485, 857, 1811, 532),
                                         (499, 874, 1856, 538)]
    assert _face_level_jumps(grids["face"]).max() <= 1
    assert _vertex_level_jumps(grids["face"]) == 2
    assert _vertex_level_jumps(grids["vertex"]) <= 1


def test_cells_carved_where_the_field_is_negative():
    geo = _refined()
    sides, cells, _ = _side_and_cell_measures(geo)
    # cells near the origin (field < 0 everywhere in them) are dropped
    assert cells.sum() < 4.0 - 0.05
    centres = geo.host_cell_positions(np.array([[0.5, 0.5, 0.5]]))[:, 0]
    assert np.min(np.linalg.norm(centres, axis=1)) > 0.3


def test_single_level_grid_is_a_coarser_nanogrid():
    """All cells at level 1: the Q1 and Q2 stiffness matrices are those of a Nanogrid with
    voxels twice as large (nodes matched by position)."""
    rng = np.random.default_rng(5)
    coarse = np.unique(rng.integers(0, 4, size=(20, 3)), axis=0)
    fine_grid = _grid(2 * coarse, 0.5, translation=(0.1, -0.2, 0.3))
    level = np.ones(fine_grid.get_voxel_count(), dtype=np.uint8)
    adaptive = fem.AdaptiveNanogrid(fine_grid, cell_level=kc.array(level, dtype=kc.uint8),
                                    level_count=2)
    regular = fem.Nanogrid(_grid(coarse, 1.0, translation=(0.35, 0.05, 0.55)))
    for degree in (1, 2):
        spaces = [fem.make_polynomial_space(g, degree=degree) for g in (adaptive, regular)]
        a, b = (C.dense_stiffness(s) for s in spaces)
        pa, pb = (s.node_positions().numpy() for s in spaces)
        order_a, order_b = np.lexsort(np.round(pa, 4).T), np.lexsort(np.round(pb, 4).T)
        np.testing.assert_allclose(pa[order_a], pb[order_b], atol=1e-5)
        np.testing.assert_allclose(a[np.ix_(order_a, order_a)], b[np.ix_(order_b, order_b)],
                                   atol=1e-4)


@pytest.mark.parametrize("degree", [1, 2])
def test_fields_reproduce_affine_functions(degree):
    """Each cell has nodes of its own at hanging corners, so interpolating an affine
    function is exact everywhere."""
    geo = _refined("face")
    field = fem.make_polynomial_space(geo, degree=degree).make_field()
    fem.interpolate(affine, dest=field)
    quadrature = fem.RegularQuadrature(fem.Cells(geo), order=3)
    n = quadrature.total_point_count()
    values = kc.full(n, np.nan, dtype=float)
    points = kc.zeros(n, dtype=kc.vec3)
    fem.interpolate(sample_field, at=quadrature, fields={"u": field},
                    values={"values": values, "points": points})
    x = points.numpy().astype(np.float64)
    want = 1.0 + 2.0 * x[:, 0] - 0.5 * x[:, 1] + 0.25 * x[:, 2]
    np.testing.assert_allclose(values.numpy(), want, atol=2e-5)


def test_lookup_finds_the_cell():
    geo = _refined("face")
    rng = np.random.default_rng(2)
    points = rng.uniform([-0.5, -0.5, -0.5], [1.5, 1.5, 0.5], size=(500, 3)).astype(np.float32)
    cells = kc.full(len(points), -7, dtype=int)
    positions = kc.zeros(len(points), dtype=kc.vec3)
    fem.interpolate(lookup_check, at=fem.Cells(geo), dim=len(points),
                    values={"points": kc.array(points, dtype=kc.vec3), "cells": cells,
                            "positions": positions})
    # NumPy reference: the cell whose box holds the point, in fine voxels (1/4, the lowest
    # one's lower corner at -1/2)
    ijk = geo.cell_grid.get_voxels().numpy()[:geo.cell_count()]
    size = 1 << geo.cell_level.numpy().astype(np.int64)
    fine = (points + 0.5) * 4.0
    lo, hi = ijk[None].astype(np.float64), (ijk + size[:, None])[None].astype(np.float64)
    inside = np.all((fine[:, None, :] >= lo) & (fine[:, None, :] < hi), -1)
    got = cells.numpy()
    held = inside.any(1)
    assert held.sum() > 300 and np.all(got[held] == inside.argmax(1)[held])
    np.testing.assert_allclose(positions.numpy()[held], points[held], atol=1e-5)
    # elsewhere (the carved ball), the closest cell within half a fine voxel, else none
    gap = np.linalg.norm(np.maximum(np.maximum(lo - fine[:, None, :], fine[:, None, :] - hi),
                                    0.0), axis=-1) / 4.0
    near, far = gap.min(1) < 0.125 - 1e-4, gap.min(1) > 0.125 + 1e-4
    assert np.all(got[~held & far] == -1) and (~held & far).any()
    assert np.all(got[~held & near] == gap.argmin(1)[~held & near]) and (~held & near).any()


@kc.kernel
def find_cells_kernel(grid: kc.uint64, levels: kc.array(dtype=kc.uint8), level_count: int,
                      voxels: kc.array(dtype=kc.vec3i), cells: kc.array(dtype=int),
                      coarse: kc.array(dtype=kc.vec3i)):
    i = kc.tid()
    cells[i] = fem.AdaptiveNanogrid.find_cell(grid, voxels[i], level_count, levels)
    coarse[i] = fem.AdaptiveNanogrid.coarse_ijk(fem.AdaptiveNanogrid.fine_ijk(voxels[i], 2), 1)


def test_find_cell_in_kernels():
    geo = _two_level_grid()
    voxels = np.random.default_rng(3).integers([-1, -1, -1], [5, 5, 3], size=(300, 3)).astype(np.int32)
    cells = kc.full(len(voxels), -7, dtype=int)
    coarse = kc.zeros(len(voxels), dtype=kc.vec3i)
    kc.launch(find_cells_kernel, len(voxels), [geo.cell_grid.id, geo.cell_level, geo.level_count,
                                               kc.array(voxels, dtype=kc.vec3i), cells, coarse])
    # NumPy reference: the cell whose box of fine voxels holds the voxel
    ijk = geo.cell_grid.get_voxels().numpy()[:geo.cell_count()]
    size = 1 << geo.cell_level.numpy().astype(np.int64)
    inside = np.all((voxels[:, None] >= ijk[None]) & (voxels[:, None] < ijk[None] + size[:, None]),
                    -1)
    want = np.where(inside.any(1), inside.argmax(1), -1)
    assert (want != -1).sum() > 20
    np.testing.assert_array_equal(cells.numpy(), want)
    np.testing.assert_array_equal(coarse.numpy(), 2 * voxels)


def test_bad_adaptive_grids_raise():
    grid = _grid([[0, 0, 0], [2, 0, 0]])
    with pytest.raises(ValueError, match="max 8"):
        fem.AdaptiveNanogrid(grid, cell_level=np.zeros(2, np.uint8), level_count=9)
    with pytest.raises(ValueError, match="one level per cell"):
        fem.AdaptiveNanogrid(grid, cell_level=np.zeros(1, np.uint8), level_count=2)
    with pytest.raises(ValueError, match=r"cell levels must lie in \[0, 1\]"):
        fem.AdaptiveNanogrid(grid, cell_level=np.full(2, 3, np.uint8), level_count=2)
    with pytest.raises(TypeError, match="kc.Volume"):
        fem.AdaptiveNanogrid("grid", cell_level=np.zeros(2, np.uint8), level_count=2)
    with pytest.raises(ValueError, match="grading"):
        _refined(grading="edge")
    with pytest.raises(ValueError, match="No grids"):
        fem.adaptive_nanogrid_from_hierarchy([])
    with pytest.raises(ValueError, match="Environment index 1 of cell 0 is out of bounds"):
        fem.AdaptiveNanogrid(grid, cell_level=np.zeros(2, np.uint8), level_count=2,
                             cell_env=np.ones(2, np.int32), env_offsets=[[0, 0, 0]])


# ---- Warp's example_adaptive_grid ------------------------------------------------------------

_WARP_SCRIPT = """
import warp.fem as fem
wp.set_module_options({"enable_backward": False})
example = importlib.import_module("warp.examples.fem.example_adaptive_grid").Example(
    quiet=True, degree=1, div_conforming=True, headless=True)
example.step()
results["pressure"] = example.pressure_field.dof_values.numpy()
results["velocity"] = example.velocity_field.dof_values.numpy()
results["cells"] = example._geo.cell_grid.get_voxels().numpy()
results["levels"] = example._geo._cell_level.numpy()
"""


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    with H.started_warp_run(tmp_path_factory, "warp_fem_adaptive", Path(M.__file__),
                            {"adaptive": _WARP_SCRIPT}, timeout=900) as run:
        yield run


def test_example_adaptive_grid_matches_warp(tmp_path_factory, warp_run):
    modules = {"utils": "kcad_fem_example_utils",
               "example_apic_fluid": "kcad_fem_example_apic_fluid",
               "example_adaptive_grid": "kcad_fem_example_adaptive_grid"}
    with H.kernelc_examples(tmp_path_factory, "kc_fem_adaptive", modules) as loaded:
        example = loaded["kcad_fem_example_adaptive_grid"].Example(
            quiet=True, degree=1, div_conforming=True, headless=True)
        example.step()
        geo = example._geo
        got = {"pressure": example.pressure_field.dof_values.numpy(),
               "velocity": example.velocity_field.dof_values.numpy(),
               "cells": geo.cell_grid.get_voxels().numpy()[:geo.cell_count()],
               "levels": geo.cell_level.numpy()}
    want = warp_run.results()
    assert got["cells"].shape == (20230, 3)
    np.testing.assert_array_equal(got["cells"], want["cells"][:len(got["cells"])])
    np.testing.assert_array_equal(got["levels"], want["levels"])
    assert np.abs(want["velocity"]).max() > 1.0
    np.testing.assert_allclose(got["pressure"], want["pressure"], rtol=0, atol=1e-4)
    np.testing.assert_allclose(got["velocity"], want["velocity"], rtol=0, atol=1e-4)
