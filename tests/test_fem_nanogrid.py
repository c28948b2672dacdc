"""kernelc.fem on sparse grids (`fem.Nanogrid`) checked on their own; the agreement with
Warp's numbering and values is in tests/test_fem_quadhex.py (`nano.` programs)."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem
from tests import fem_mesh_checks as C
from tests import fem_mesh_programs as M
from tests import fem_quadhex_programs as P


@fem.integrand
def lookup_error(s: fem.Sample, domain: fem.Domain, points: kc.array(dtype=kc.vec3),
                 cells: kc.array(dtype=int), coords: kc.array(dtype=kc.vec3),
                 error: kc.array(dtype=float)):
    # one quadrature point per cell: look up the point given for that cell
    i = s.element_index
    found = fem.lookup(domain, points[i])
    error[i] = kc.where(found.element_index == cells[i],
                        kc.length(found.element_coords - coords[i]), 1.0e6)


def _box_nanogrid(res: tuple, lo: np.ndarray, size: np.ndarray) -> fem.Nanogrid:
    """A Nanogrid of every voxel of a res box, its lower corner at lo."""
    voxels = np.stack(np.meshgrid(*[np.arange(r) for r in res], indexing="ij"),
                      axis=-1).reshape(-1, 3)
    volume = kc.Volume.allocate_by_voxels(kc.array(voxels.astype(np.int32), dtype=kc.vec3i),
                                          voxel_size=tuple(size),
                                          translation=tuple(lo + 0.5 * size))
    return fem.Nanogrid(volume)


def test_dense_tile_counts_and_measures():
    n = 8
    volume = kc.Volume.allocate_by_tiles(kc.array(np.array([[0.5, 0.5, 0.5]]), dtype=float),
                                         voxel_size=1.0 / n, bg_value=None)
    geo = fem.Nanogrid(volume)
    assert (geo.cell_count(), geo.vertex_count(), geo.side_count(), geo.boundary_side_count(),
            geo.edge_count()) == (n ** 3, (n + 1) ** 3, 3 * (n + 1) * n ** 2, 6 * n ** 2,
                                  3 * n * (n + 1) ** 2)
    assert fem.integrate(M.one_form, domain=fem.Cells(geo)) == pytest.approx(1.0, rel=1e-5)
    assert fem.integrate(M.one_form, domain=fem.BoundarySides(geo)) == pytest.approx(
        6.0, rel=1e-5)


@pytest.mark.parametrize("degree", [1, 2])
def test_box_matches_the_grid(degree):
    """A Nanogrid of a box's voxels has the Grid3D's stiffness matrix (nodes matched by
    position)."""
    res, lo, hi = (3, 2, 2), np.array([-0.5, 0.25, 0.0]), np.array([1.0, 1.25, 0.8])
    matrices, positions = [], []
    for geo in (_box_nanogrid(res, lo, (hi - lo) / res),
                fem.Grid3D(res=res, bounds_lo=kc.vec3(*lo), bounds_hi=kc.vec3(*hi))):
        space = fem.make_polynomial_space(geo, degree=degree)
        matrices.append(C.dense_stiffness(space))
        positions.append(space.node_positions().numpy())
    order = [np.lexsort(np.round(p, 5).T[::-1]) for p in positions]
    np.testing.assert_allclose(positions[0][order[0]], positions[1][order[1]], atol=1e-6)
    np.testing.assert_allclose(matrices[0][np.ix_(order[0], order[0])],
                               matrices[1][np.ix_(order[1], order[1])], atol=1e-5)


def test_sheared_voxels():
    """A volume with a general linear transform: cells are its parallelepipeds."""
    matrix = np.array([[0.5, 0.1, 0.0], [0.05, 0.4, 0.1], [0.0, 0.2, 0.3]])
    voxels = np.array([[0, 0, 0], [1, 0, 0], [0, 2, -1]], dtype=np.int32)
    volume = kc.Volume.allocate_by_voxels(kc.array(voxels, dtype=kc.vec3i),
                                          transform=kc.mat33(*matrix.reshape(-1)))
    geo = fem.Nanogrid(volume)
    assert fem.integrate(M.one_form, domain=fem.Cells(geo)) == pytest.approx(
        3 * abs(np.linalg.det(matrix)), rel=1e-5)
    # each voxel's boundary faces: areas of the parallelograms of two of the matrix' columns
    areas = [np.linalg.norm(np.cross(matrix[:, (a + 1) % 3], matrix[:, (a + 2) % 3]))
             for a in range(3)]
    exposed = np.array([4, 6, 6])  # faces per axis: two voxels share an x face
    assert fem.integrate(M.one_form, domain=fem.BoundarySides(geo)) == pytest.approx(
        float(exposed @ areas), rel=1e-5)
    C.check_polynomial_reproduction(geo, 2)


def test_sides_join_their_cells():
    geo = P.make_nanogrid()
    size = np.array(geo.cell_grid.get_voxel_size())
    centres = geo.host_cell_positions(np.full((1, 3), 0.5))[:, 0]
    sides = np.arange(geo.side_count())
    inner, outer = geo.side_cells(sides)
    boundary = np.zeros(len(sides), dtype=bool)
    boundary[geo.boundary_side_indices()] = True
    np.testing.assert_array_equal(inner == outer, boundary)
    # interior sides join two cells one voxel apart along one axis; each cell has 6 sides
    step = np.abs(centres[outer] - centres[inner]) / size
    np.testing.assert_allclose(np.sort(step[~boundary], axis=1), [[0, 0, 1]] * (~boundary).sum(),
                               atol=1e-5)
    assert ((centres[outer] - centres[inner]).sum(axis=1)[~boundary] > 0.0).all()
    faces = np.bincount(np.concatenate([inner, outer[~boundary]]), minlength=geo.cell_count())
    np.testing.assert_array_equal(faces, 6)
    # the boundary normals of a closed surface sum to zero; its area is the exposed faces'
    normal_sum = fem.integrate(_normal_x, domain=fem.BoundarySides(geo))
    assert abs(normal_sum) < 1e-5


@fem.integrand
def _normal_x(s: fem.Sample, domain: fem.Domain):
    return fem.normal(domain, s)[0]


@pytest.mark.parametrize("element_basis, degrees", [(None, (1, 2, 3)),
                                                    (fem.ElementBasis.SERENDIPITY, (2, 3))])
def test_cells_agree_on_their_shared_nodes(element_basis, degrees):
    geo = P.make_nanogrid()
    for degree in degrees:
        space = fem.make_polynomial_space(geo, degree=degree, element_basis=element_basis)
        nodes = space.topology.host_element_nodes().reshape(-1)
        where = geo.host_cell_positions(space.shape.node_coords().astype(np.float64))
        where = where.reshape(len(nodes), -1)
        first = np.full((space.node_count(), 3), np.nan)
        first[nodes[::-1]] = where[::-1]
        assert not np.isnan(first).any()
        np.testing.assert_allclose(where, first[nodes], atol=1e-6, err_msg=str(degree))


def test_fields_reproduce_polynomials():
    C.check_polynomial_reproduction(P.make_nanogrid(), 2)


def test_lookup_finds_the_cell():
    geo = P.make_nanogrid()
    rng = np.random.default_rng(5)
    coords = rng.uniform(0.05, 0.95, (geo.cell_count(), 3))
    points = np.stack([geo.host_cell_positions(coords[c:c + 1])[c, 0]
                       for c in range(geo.cell_count())])
    error = kc.full(geo.cell_count(), -1.0, dtype=float)
    fem.interpolate(lookup_error, at=fem.RegularQuadrature(fem.Cells(geo), order=0),
                    values={"points": kc.array(points, dtype=kc.vec3),
                            "cells": kc.array(np.arange(geo.cell_count()), dtype=int),
                            "coords": kc.array(coords, dtype=kc.vec3), "error": error})
    assert error.numpy().max() < 1e-5


def test_bad_nanogrids_raise():
    voxels = kc.array(np.zeros((1, 3), dtype=np.int32), dtype=kc.vec3i)
    volume = kc.Volume.allocate_by_voxels(voxels, voxel_size=1.0)
    with pytest.raises(TypeError, match="kc.Volume"):
        fem.Nanogrid(voxels)
    with pytest.raises(RuntimeError, match="require a rebuildable Volume"):
        fem.Nanogrid(volume, rebuildable=True)
    with pytest.raises(RuntimeError, match="not constructed in rebuildable mode"):
        fem.Nanogrid(volume).rebuild(voxels)
    with pytest.raises(ValueError, match="one entry per Nanogrid cell"):
        fem.Nanogrid(volume, cell_env=kc.zeros(0, dtype=int))
    with pytest.raises(ValueError, match="Environment index 2 of cell 0 is out of bounds"):
        fem.Nanogrid(volume, cell_env=kc.full(1, 2, dtype=int))
    with pytest.raises(TypeError, match="float32 or float64"):
        fem.Nanogrid(volume, scalar_type=kc.float16)
