"""B-spline spaces (`ElementBasis.BSPLINE`) on `Grid2D`, `Grid3D` and `Nanogrid`: fields,
gradients and node positions against NumPy splines (written from the truncated-power
formula, not from the piecewise forms kernelc uses), partition of unity, exact
reproduction of polynomials of the spline's degree, interpolation of affine fields,
matrices against a NumPy assembly, node numbering on sparse and rebuilt grids, the
errors, and agreement with Warp (tests/fem_bspline_programs.py run in a Warp subprocess).
"""

from __future__ import annotations

from math import comb, factorial
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem
from tests import fem_bspline_programs as P
from tests import fem_harness as H

BSPLINE = fem.ElementBasis.BSPLINE


@fem.integrand
def sample_field(s: fem.Sample, domain: fem.Domain, u: fem.Field, values: Any, grads: Any,
                 points: Any):
    values[s.qp_index] = u(s)
    grads[s.qp_index] = fem.grad(u, s)
    points[s.qp_index] = domain(s)


@fem.integrand
def affine_value(s: fem.Sample, domain: fem.Domain, slope: Any):
    return 2.0 + kc.dot(slope, domain(s))


@fem.integrand
def affine_error(s: fem.Sample, domain: fem.Domain, u: fem.Field, slope: Any):
    e = u(s) - (2.0 + kc.dot(slope, domain(s)))
    return e * e


@fem.integrand
def stiffness_mass(s: fem.Sample, u: fem.Field, v: fem.Field):
    return kc.dot(fem.grad(u, s), fem.grad(v, s)) + 0.5 * u(s) * v(s)


@fem.integrand
def side_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    return kc.dot(fem.grad(u, s), fem.normal(domain, s)) * fem.average(v, s)


# ---- NumPy references -------------------------------------------------------------------


def cardinal(x: np.ndarray, degree: int, derivative: bool = False) -> np.ndarray:
    """The centred cardinal B-spline of `degree` (or its derivative) at `x`, from its
    truncated-power form."""
    power = degree - 1 if derivative else degree
    total = np.zeros_like(x, dtype=np.float64)
    for j in range(degree + 2):
        t = x + (degree + 1) / 2.0 - j
        total += (-1) ** j * comb(degree + 1, j) * np.where(t > 0.0, np.abs(t) ** power, 0.0)
    return total / factorial(power)


def spline_field(points: np.ndarray, nodes: np.ndarray, spacing: np.ndarray, degree: int,
                 dofs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values and gradients at `points` of the spline with coefficients `dofs` on nodes at
    world positions `nodes`, node spacing `spacing` per axis."""
    u = (points[:, None, :] - nodes[None, :, :]) / spacing
    v, dv = cardinal(u, degree), cardinal(u, degree, True) / spacing
    values = v.prod(axis=-1) @ dofs
    grads = np.stack([(dv[..., a] * np.delete(v, a, axis=-1).prod(axis=-1)) @ dofs
                      for a in range(points.shape[1])], axis=1)
    return values, grads


def grid_nodes(res: tuple, lo: np.ndarray, spacing: np.ndarray, degree: int) -> np.ndarray:
    """World positions of a grid's B-spline nodes, in Warp's order (last axis fastest)."""
    pad = degree // 2
    index = np.indices([r + 2 * pad + 1 for r in res]).reshape(len(res), -1).T
    return lo + (index - pad) * spacing


def sample(space: fem.FunctionSpace, field: Any, order: int = 5) -> tuple:
    """(values, gradients, points) of `field` at the points of a regular quadrature."""
    geo = space.geometry
    quadrature = fem.RegularQuadrature(fem.Cells(geo), order=order)
    n = quadrature.total_point_count()
    scalar = np.float64 if geo.scalar_type == kc.float64 else np.float32
    vec = kc.types.vector(geo.dimension, geo.scalar_type)
    values = kc.array(np.full(n, np.nan, scalar), dtype=geo.scalar_type)  # poisoned
    grads = kc.array(np.full((n, geo.dimension), np.nan, scalar), dtype=vec)
    points = kc.array(np.full((n, geo.dimension), np.nan, scalar), dtype=vec)
    fem.interpolate(sample_field, at=quadrature, fields={"u": field},
                    values={"values": values, "grads": grads, "points": points})
    return values.numpy().astype(np.float64), grads.numpy().astype(np.float64), \
        points.numpy().astype(np.float64)


def field_with(space: fem.FunctionSpace, dofs: np.ndarray) -> Any:
    field = space.make_field()
    field.dof_values = kc.array(dofs.astype(field.dof_values.numpy().dtype),
                                dtype=space.dof_dtype)
    return field


GRIDS = {
    "2d": lambda scalar=kc.float32: fem.Grid2D(res=kc.vec2i(3, 2), bounds_lo=kc.vec2(-0.5, 0.25),
                                               bounds_hi=kc.vec2(1.0, 1.25), scalar_type=scalar),
    "3d": lambda scalar=kc.float32: fem.Grid3D(res=kc.vec3i(2, 3, 2),
                                               bounds_lo=kc.vec3(-0.5, 0.0, 0.2),
                                               bounds_hi=kc.vec3(0.5, 1.5, 0.7),
                                               scalar_type=scalar),
}


def _grid_frame(geo) -> tuple[tuple, np.ndarray, np.ndarray]:
    res = tuple(int(r) for r in geo.res)
    lo = np.array([float(c) for c in geo.bounds_lo])
    return res, lo, np.array([float(c) for c in geo.cell_size])


# ---- grids against NumPy ------------------------------------------------------------------


@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize("dim", ["2d", "3d"])
def test_grid_fields_match_numpy_splines(dim, degree, rng):
    """Random coefficients: values and gradients at quadrature points are the NumPy
    spline's, with Warp's node numbering and node positions."""
    geo = GRIDS[dim]()
    res, lo, spacing = _grid_frame(geo)
    space = fem.make_polynomial_space(geo, degree=degree, element_basis=BSPLINE)
    nodes = grid_nodes(res, lo, spacing, degree)
    assert space.node_count() == len(nodes)
    np.testing.assert_allclose(space.node_positions().numpy(), nodes, atol=1e-6)
    dofs = rng.uniform(0.5, 2.0, len(nodes)) * rng.choice([-1.0, 1.0], len(nodes))
    values, grads, points = sample(space, field_with(space, dofs))
    want_values, want_grads = spline_field(points, nodes, spacing, degree, dofs)
    np.testing.assert_allclose(values, want_values, atol=2e-5 * np.abs(want_values).max())
    np.testing.assert_allclose(grads, want_grads, atol=2e-5 * np.abs(want_grads).max())


def _polynomial(dim: int, degree: int, rng) -> list[tuple[float, tuple]]:
    """Random coefficients of every monomial of total degree <= `degree`."""
    exponents = [e for e in np.ndindex(*([degree + 1] * dim)) if sum(e) <= degree]
    return [(float(rng.uniform(-1.0, 1.0)), e) for e in exponents]


def _evaluate(poly, x: np.ndarray, derivative: tuple = ()) -> np.ndarray:
    """The polynomial, or its derivative along the axes in `derivative`, at points x."""
    total = np.zeros(len(x))
    for c, e in poly:
        e = np.array(e)
        factor = np.full(len(x), c)
        for a in derivative:
            factor = factor * e[a]
            e[a] -= 1
        if np.any(e < 0):
            continue
        total += factor * np.prod(x ** e, axis=1)
    return total


def _reproducing_dofs(poly, nodes: np.ndarray, spacing: np.ndarray, degree: int) -> np.ndarray:
    """Spline coefficients reproducing a polynomial of total degree <= `degree`: its value
    at the node less half the spline's variance ((degree + 1) / 12 node spacings squared)
    times its second derivatives (exact for these degrees, as odd moments vanish)."""
    variance = (degree + 1) / 12.0
    correction = sum(spacing[a] ** 2 * _evaluate(poly, nodes, (a, a))
                     for a in range(nodes.shape[1]))
    return _evaluate(poly, nodes) - 0.5 * variance * correction


def _sparse_grid(scalar=kc.float32, voxel_size=0.5) -> fem.Nanogrid:
    voxels = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [-1, 0, 2], [5, -3, 1]], dtype=np.int32)
    volume = kc.Volume.allocate_by_voxels(kc.array(voxels, dtype=kc.vec3i),
                                          voxel_size=voxel_size, translation=(0.1, -0.2, 0.3))
    return fem.Nanogrid(volume, scalar_type=scalar)


GEOMETRIES = {"2d": lambda: GRIDS["2d"](kc.float64), "3d": lambda: GRIDS["3d"](),
              "nano": lambda: _sparse_grid(kc.float64)}


@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize("kind", list(GEOMETRIES))
def test_unity_and_polynomials_are_reproduced(kind, degree, rng):
    """Unit coefficients give 1 (zero gradient); the quasi-interpolant of a random
    polynomial of total degree `degree` gives the polynomial and its gradient, in the
    padding's cells too."""
    geo = GEOMETRIES[kind]()
    space = fem.make_polynomial_space(geo, degree=degree, element_basis=BSPLINE)
    nodes = space.node_positions().numpy().astype(np.float64)
    spacing = np.full(3, 0.5) if kind == "nano" else _grid_frame(geo)[2]
    tolerance = 1e-10 if geo.scalar_type == kc.float64 else 2e-5
    values, grads, _ = sample(space, field_with(space, np.ones(len(nodes))))
    np.testing.assert_allclose(values, 1.0, atol=tolerance)
    np.testing.assert_allclose(grads, 0.0, atol=tolerance / spacing.min())
    poly = _polynomial(geo.dimension, degree, rng)
    dofs = _reproducing_dofs(poly, nodes, spacing, degree)
    values, grads, points = sample(space, field_with(space, dofs))
    np.testing.assert_allclose(values, _evaluate(poly, points), atol=tolerance * 10)
    want = np.stack([_evaluate(poly, points, (a,)) for a in range(geo.dimension)], axis=1)
    np.testing.assert_allclose(grads, want, atol=tolerance * 40)


@pytest.mark.parametrize("kind", list(GEOMETRIES))
def test_interpolation_reproduces_affine_fields(kind):
    """As Warp's test_bspline_space_interpolation: node values of an affine field are its
    spline coefficients, so the interpolated field is the affine field."""
    geo = GEOMETRIES[kind]()
    for degree in (1, 2, 3):
        space = fem.make_polynomial_space(geo, degree=degree, element_basis=BSPLINE)
        field = space.make_field()
        field.dof_values = kc.array(np.full(space.node_count(), np.nan),
                                    dtype=space.dof_dtype)  # poisoned
        slope = np.array([1.0, -0.5, 0.25])[:geo.dimension]
        values = {"slope": kc.types.vector(geo.dimension, geo.scalar_type)(*slope)}
        fem.interpolate(affine_value, dest=field, values=values)
        x = space.node_positions().numpy().astype(np.float64)
        tolerance = 1e-12 if geo.scalar_type == kc.float64 else 1e-5
        np.testing.assert_allclose(field.dof_values.numpy(), 2.0 + x @ slope, atol=tolerance)
        error = fem.integrate(affine_error, fields={"u": field}, values=values,
                              quadrature=fem.RegularQuadrature(fem.Cells(geo), order=2 * degree))
        assert error < tolerance ** 2, (degree, error)


def _assembled(geo, degree: int, order: int) -> np.ndarray:
    """The stiffness + mass matrix of a 2-D grid, assembled in NumPy with the Gauss rule of
    `order` (the rule kernelc takes) from the NumPy splines restricted to each cell."""
    res, lo, spacing = _grid_frame(geo)
    nodes = grid_nodes(res, lo, spacing, degree)
    x, w = np.polynomial.legendre.leggauss(order // 2 + 1)
    x, w = (x + 1.0) / 2.0, w / 2.0
    local = np.stack(np.meshgrid(x, x, indexing="ij"), axis=-1).reshape(-1, 2)
    weights = np.outer(w, w).reshape(-1) * spacing.prod()
    n = len(nodes)
    matrix = np.zeros((n, n))
    eye = np.eye(n)
    for cell in np.indices(res).reshape(2, -1).T:
        points = lo + (cell + local) * spacing
        values, grads = spline_field(points, nodes, spacing, degree, eye)
        matrix += np.einsum("q,qi,qj->ij", weights, values, values) * 0.5
        matrix += np.einsum("q,qai,qaj->ij", weights, grads, grads)
    return matrix


def _dense(matrix) -> np.ndarray:
    blocks = H.block_csr(matrix)
    out = np.zeros((matrix.nrow, matrix.ncol))
    rows = np.repeat(np.arange(matrix.nrow), np.diff(blocks["offsets"]))
    np.add.at(out, (rows, blocks["columns"]), blocks["values"].reshape(-1))
    return out


@pytest.mark.parametrize("degree", [1, 2, 3])
def test_matrix_matches_numpy_assembly(degree):
    geo = fem.Grid2D(res=kc.vec2i(2, 3), bounds_hi=kc.vec2(0.8, 0.6))
    space = fem.make_polynomial_space(geo, degree=degree, element_basis=BSPLINE)
    order = 2 * degree + 1
    matrix = _dense(fem.integrate(
        stiffness_mass, fields={"u": fem.make_trial(space), "v": fem.make_test(space)},
        quadrature=fem.RegularQuadrature(fem.Cells(geo), order=order), output_dtype=kc.float64))
    want = _assembled(geo, degree, order)
    np.testing.assert_allclose(matrix, want, atol=1e-5 * np.abs(want).max())
    np.testing.assert_allclose(matrix, matrix.T, atol=1e-6 * np.abs(want).max())
    assert np.linalg.eigvalsh(want).min() > 0.0
    # the mass part of a constant is the domain's area / 2, split among the nodes
    assert matrix.sum() == pytest.approx(0.5 * 0.8 * 0.6, rel=1e-5)


def test_degree_one_side_gradients_are_q1s():
    """Degree 1 is Q1: its gradients on sides (at the cells' upper ends too) are Q1's
    (Warp's degree-1 splines fall at their own node there: see shape_bspline.py)."""
    geo = GRIDS["2d"]()
    sides = fem.Sides(geo)
    forms = []
    for basis in (None, BSPLINE):
        space = fem.make_polynomial_space(geo, degree=1, element_basis=basis)
        forms.append(_dense(fem.integrate(
            side_form, fields={"u": fem.make_trial(space, domain=sides),
                               "v": fem.make_test(space, domain=sides)}, output_dtype=float)))
    assert np.abs(forms[0]).max() > 0.1
    np.testing.assert_allclose(forms[1], forms[0], atol=1e-6)


# ---- sparse grids ---------------------------------------------------------------------------


@pytest.mark.parametrize("degree", [1, 2, 3])
def test_sparse_nodes_are_padded_vertices(degree):
    """Node n of a cell is the vertex voxel cell + offset(n) (voxel v at index-space
    v - 1/2); every such voxel is one node and the nodes are these voxels only."""
    geo = _sparse_grid()
    space = fem.make_polynomial_space(geo, degree=degree, element_basis=BSPLINE)
    pad = degree // 2
    offsets = np.indices([2 * pad + 2] * 3).reshape(3, -1).T - pad
    ijk = geo.cell_grid.get_voxels().numpy()[:geo.cell_count()]
    voxels = (ijk[:, None, :] + offsets[None]).reshape(-1, 3)
    nodes = space.topology.element_node_indices().numpy().reshape(-1)
    unique, inverse = np.unique(voxels, axis=0, return_inverse=True)
    assert space.node_count() == len(unique)
    assert sorted(set(nodes.tolist())) == list(range(len(unique)))
    node_of_voxel = np.full(len(unique), -1)
    node_of_voxel[inverse.reshape(-1)] = nodes
    np.testing.assert_array_equal(node_of_voxel[inverse.reshape(-1)], nodes)
    positions = space.node_positions().numpy()
    np.testing.assert_allclose(positions[nodes], (voxels - 0.5) * 0.5 + [0.1, -0.2, 0.3],
                               atol=1e-6)


def test_rebuilt_topology_numbers_like_a_fresh_grid():
    start = np.array([[0, 0, 0], [1, 0, 0], [0, 2, 0]], dtype=np.int32)
    moved = np.array([[3, 0, 0], [1, 1, 0], [0, 2, 0], [-2, 0, 1]], dtype=np.int32)
    volume = kc.Volume.allocate_by_voxels(kc.array(start, dtype=kc.vec3i), voxel_size=0.5,
                                          rebuildable=True, max_active_voxels=64)
    geo = fem.Nanogrid(volume, rebuildable=True)
    spaces = [fem.make_polynomial_space(geo, degree=d, element_basis=BSPLINE) for d in (1, 3)]
    before = [s.node_count() for s in spaces]
    geo.rebuild(kc.array(moved, dtype=kc.vec3i))
    fresh = fem.Nanogrid(kc.Volume.allocate_by_voxels(kc.array(moved, dtype=kc.vec3i),
                                                      voxel_size=0.5))
    for space, count in zip(spaces, before, strict=True):
        assert space.node_count() == count  # until the topology is rebuilt
        space.topology.rebuild()
        want = fem.make_polynomial_space(fresh, degree=space.degree, element_basis=BSPLINE)
        assert space.node_count() == want.node_count() != count
        np.testing.assert_array_equal(space.topology.element_node_indices().numpy(),
                                      want.topology.element_node_indices().numpy())
        np.testing.assert_allclose(space.node_positions().numpy(),
                                   want.node_positions().numpy())
    with pytest.raises(RuntimeError, match="not constructed from a rebuildable Nanogrid"):
        want.topology.rebuild()


# ---- errors ---------------------------------------------------------------------------------


def _voxels(voxels, size) -> kc.Volume:
    return kc.Volume.allocate_by_voxels(kc.array(np.asarray(voxels, dtype=np.int32),
                                                 dtype=kc.vec3i), voxel_size=size)


def test_errors():
    fine = [[i, j, k] for i in (2, 3) for j in (2, 3) for k in (0, 1)]
    coarse = [[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 1, 0]]
    adaptive = fem.adaptive_nanogrid_from_hierarchy([_voxels(fine, 0.5), _voxels(coarse, 1.0)])
    with pytest.raises(ValueError, match="Adaptive Nanogrid does not support CubeBSpline2"):
        fem.make_polynomial_space(adaptive, degree=2, element_basis=BSPLINE)
    # discontinuous spaces have nodes per cell, on any cells (as in Warp)
    dg = fem.make_polynomial_space(adaptive, degree=2, element_basis=BSPLINE, discontinuous=True)
    assert dg.node_count() == adaptive.cell_count() * 64
    with pytest.raises(ValueError, match="Only degrees 1, 2, and 3 are supported"):
        fem.make_polynomial_space(GRIDS["2d"](), degree=4, element_basis=BSPLINE)
    positions = kc.array(np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=np.float32),
                         dtype=kc.vec2)
    quads = fem.Quadmesh2D(kc.array(np.array([[0, 1, 2, 3]]), dtype=int), positions)
    with pytest.raises(ValueError, match="need a Grid2D, Grid3D or Nanogrid geometry; "
                                         "Quadmesh2D"):
        fem.make_polynomial_space(quads, degree=2, element_basis=BSPLINE)
    assert fem.make_polynomial_space(quads, degree=2, element_basis=BSPLINE,
                                     discontinuous=True).node_count() == 16
    tris = fem.Trimesh2D(kc.array(np.array([[0, 1, 2], [0, 2, 3]]), dtype=int), positions)
    with pytest.raises(ValueError, match="need square or cube cells .* not TRIANGLE cells"):
        fem.make_polynomial_space(tris, degree=2, element_basis=BSPLINE)


# ---- Warp ------------------------------------------------------------------------------------

_WARP_PROGRAMS = """
import fem_bspline_programs_warp as P
results = P.run_all()
"""


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    with H.started_warp_run(tmp_path_factory, "warp_fem_bspline", Path(P.__file__),
                            {"programs": _WARP_PROGRAMS}, timeout=600) as run:
        yield run


def test_programs_match_warp(warp_run):
    """Node tables, positions, interpolated dofs (also at the boundary sides' nodes),
    matrices, side and nodal forms, boundary projectors, on grids, a sparse grid and a
    rebuilt one: integers exactly Warp's, values to 1e-5 of the largest (measured: dofs,
    positions and nodal forms bit for bit, matrices to 2e-7)."""
    H.assert_results_match(P.run_all(), warp_run.results())
