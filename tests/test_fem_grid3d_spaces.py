"""Serendipity and open-family Lagrange spaces on `Grid3D`: the programs of
`tests/fem_grid3d_programs.py` against Warp (a subprocess started when the comparison first
needs it: node tables, matrices and fields, float32 and float64, one and two
environments), and checks of their own (shared nodes, polynomial reproduction, mass and
stiffness identities)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem
from kernelc.fem.shape_cube import make_cube_shape
from kernelc.fem.topology_grid3d import Grid3DElementTopology
from tests import fem_grid3d_programs as P
from tests import fem_harness as H

_WARP_SCRIPT = """
import fem_grid3d_programs_warp as P
results = P.run_all()
"""


@pytest.fixture(scope="module")
def warp_run(tmp_path_factory):
    with H.started_warp_run(tmp_path_factory, "warp_fem_grid3d", Path(P.__file__),
                            {"grid3d": _WARP_SCRIPT}, timeout=900) as run:
        yield run


def test_grid3d_spaces_match_warp(warp_run):
    H.assert_results_match(P.run_all(), warp_run.results())


def _check_shared_nodes(geo, topology, shape) -> None:
    """Every cell puts each of its nodes where the other cells holding it put it, and every
    node belongs to some cell."""
    nodes = topology.host_element_nodes().reshape(-1)
    where = geo.host_cell_positions(shape.node_coords().astype(np.float64))
    where = where.reshape(len(nodes), -1)
    first = np.full((topology.node_count(), 3), np.nan)
    first[nodes[::-1]] = where[::-1]
    assert not np.isnan(first).any()
    np.testing.assert_allclose(where, first[nodes], atol=1e-6)


@pytest.mark.parametrize("name", ["s2", "s3", "open1", "open3"])
def test_cells_agree_on_their_shared_nodes(name):
    geo = P.make_grid()
    space = fem.make_polynomial_space(geo, **P.SPACES[name])
    _check_shared_nodes(geo, space.topology, space.shape)
    if name.startswith("open"):  # every node its cell's own
        assert space.node_count() == geo.cell_count() * space.shape.NODES_PER_ELEMENT


@pytest.mark.parametrize("degree", [2, 3])
def test_face_nodes_are_shared(degree):
    """The vertex / edge / face / interior numbering also holds closed Lagrange bases (which
    the spaces number on their node grid), so its face branch is checked here."""
    geo = fem.Grid3D(res=kc.vec3i(3, 2, 2))
    shape = make_cube_shape(degree, fem.ElementBasis.LAGRANGE,
                            fem.Polynomial.LOBATTO_GAUSS_LEGENDRE, kc.float32)
    topology = Grid3DElementTopology(geo, shape)
    assert topology.node_count() == np.prod([degree * r + 1 for r in (3, 2, 2)])
    _check_shared_nodes(geo, topology, shape)


def test_environments_tile_the_numbering():
    one, two = P.make_grid(), P.make_grid(env_count=2)
    for name in ("s2", "open2"):
        base = fem.make_polynomial_space(one, **P.SPACES[name])
        tiled = fem.make_polynomial_space(two, **P.SPACES[name])
        nodes = base.topology.element_node_indices().numpy()
        assert tiled.node_count() == 2 * base.node_count()
        np.testing.assert_array_equal(tiled.topology.element_node_indices().numpy(),
                                      np.concatenate([nodes, nodes + base.node_count()]))


@fem.integrand
def _quadratic(s: fem.Sample, domain: fem.Domain, c: kc.array(dtype=float)):
    x = domain(s)
    return c[0] + c[1] * x[0] * x[1] + c[2] * x[2] * x[2] + c[3] * x[1] * x[2] + c[4] * x[0]


@pytest.mark.parametrize("name", ["s2", "s3", "open2", "open3", "legendre2"])
def test_interpolation_reproduces_quadratics(name):
    """Serendipity (degree 2 and up) and Q_2 spaces hold every quadratic polynomial, so its
    interpolant read back at quadrature points is the polynomial (NumPy reference)."""
    geo = P.make_grid()
    space = fem.make_polynomial_space(geo, **P.SPACES[name])
    c = np.random.default_rng(7).uniform(0.5, 2.0, 5).astype(np.float32)
    field = space.make_field()
    field.dof_values.fill_(-999.0)
    fem.interpolate(_quadratic, dest=field, values={"c": kc.array(c, dtype=float)})
    quadrature = fem.RegularQuadrature(fem.Cells(geo), order=3)
    n = quadrature.total_point_count()
    values = kc.full(n, -999.0, dtype=float)
    grads = kc.full(n, kc.vec3(-999.0), dtype=kc.vec3)
    fem.interpolate(P.field_value, at=quadrature, fields={"f": field}, dest=values)
    fem.interpolate(P.field_grad, at=quadrature, fields={"f": field}, dest=grads)
    positions = kc.full(n, kc.vec3(-999.0), dtype=kc.vec3)
    fem.interpolate(_position, at=quadrature, dest=positions)
    x, y, z = positions.numpy().astype(np.float64).T
    want = c[0] + c[1] * x * y + c[2] * z * z + c[3] * y * z + c[4] * x
    np.testing.assert_allclose(values.numpy(), want, rtol=1e-4, atol=1e-4)
    want_grad = np.stack([c[1] * y + c[4], c[1] * x + c[3] * z, 2 * c[2] * z + c[3] * y], 1)
    np.testing.assert_allclose(grads.numpy(), want_grad, rtol=1e-3, atol=1e-3)


@fem.integrand
def _position(s: fem.Sample, domain: fem.Domain):
    return domain(s)


@pytest.mark.parametrize("name", ["s3", "open1"])
@pytest.mark.parametrize("scalar_type", [kc.float32, kc.float64])
def test_mass_and_stiffness_identities(name, scalar_type):
    """The basis sums to one, so the mass matrix sums to the grid's volume and each
    stiffness row to zero."""
    geo = P.make_grid(scalar_type)
    space = fem.make_polynomial_space(geo, **P.SPACES[name])
    u, v = fem.make_trial(space), fem.make_test(space)
    mass = fem.integrate(P.mass_form, fields={"u": u, "v": v}, output_dtype=scalar_type)
    stiffness = fem.integrate(P.diffusion_form, fields={"u": u, "v": v},
                              output_dtype=scalar_type)
    tol = 1e-5 if scalar_type == kc.float32 else 1e-12
    assert H.block_csr(mass)["values"].sum() == pytest.approx(1.0 * 0.75 * 0.5, rel=tol)
    dense = np.zeros((space.node_count(),) * 2)
    parts = H.block_csr(stiffness)
    rows = np.repeat(np.arange(stiffness.nrow), np.diff(parts["offsets"]))
    dense[rows, parts["columns"]] = parts["values"].reshape(-1)
    np.testing.assert_allclose(dense.sum(axis=1), 0.0, atol=100 * tol)
