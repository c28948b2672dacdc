"""Discontinuous spaces, side operators, `fem.node_count` / `fem.at_node` / `fem.cells`,
on their own: against NumPy references on random per-cell polynomials, and their errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem
from tests import fem_dg_programs as P

PROGRAMS = Path(P.__file__)
RES = (3, 2)
LO, HI = np.array([-1.0, 0.5]), np.array([1.0, 2.0])


@fem.integrand
def _jump_energy(s: fem.Sample, f: fem.Field):
    return fem.jump(f, s) * fem.jump(f, s) + 3.0 * fem.average(f, s) * fem.average(f, s)


@fem.integrand
def _grad_norm(s: fem.Sample, f: fem.Field):
    return kc.dot(fem.grad(f, s), fem.grad(f, s)) + f(s)


@fem.integrand
def _wrapped_value(s: fem.Sample, domain: fem.Domain, f: fem.Field, shift: kc.vec2):
    cell_domain = fem.cells(domain)
    f_cells = fem.cells(f)
    inside = fem.lookup(cell_domain, domain(s) * 0.5 + shift)
    # the same value inline, and the gradient there
    g = fem.grad(fem.cells(f), fem.lookup(fem.cells(domain), domain(s) * 0.5 + shift))
    return 0.5 * f_cells(inside) + 0.5 * fem.cells(f)(inside) + kc.dot(g, kc.vec2(1.0, 2.0))


def _grid() -> fem.Grid2D:
    return fem.Grid2D(res=kc.vec2i(*RES), bounds_lo=kc.vec2(*LO), bounds_hi=kc.vec2(*HI))


def _cell_of(x: np.ndarray) -> np.ndarray:
    h = (HI - LO) / np.array(RES)
    ij = np.clip(np.floor((x - LO) / h).astype(int), 0, np.array(RES) - 1)
    return ij[..., 0] * RES[1] + ij[..., 1]


def _per_cell_linear_field(space, rng) -> tuple[fem.DiscreteField, np.ndarray]:
    """A discrete field equal to a random linear function a + b.x in each cell."""
    coefs = rng.uniform(-1.0, 1.0, size=(np.prod(RES), 3))
    x = space.node_positions().numpy().astype(np.float64)
    cell = np.arange(space.node_count()) // space.topology.MAX_NODES_PER_ELEMENT
    field = space.make_field()
    field.dof_values = kc.array(coefs[cell, 0] + np.sum(coefs[cell, 1:] * x, axis=1),
                                dtype=kc.float32)
    return field, coefs


def _gauss(n: int = 4) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.legendre.leggauss(n)
    return 0.5 * x + 0.5, 0.5 * w


def test_discontinuous_topology_numbers_nodes_per_cell():
    geo = _grid()
    for degree, family in ((1, None), (2, fem.Polynomial.GAUSS_LEGENDRE), (0, None)):
        space = fem.make_polynomial_space(geo, degree=degree, discontinuous=True, family=family)
        n = (degree + 1) ** 2
        assert space.node_count() == geo.cell_count() * n
        nodes = space.topology.element_node_indices().numpy()
        np.testing.assert_array_equal(nodes, np.arange(geo.cell_count() * n).reshape(-1, n))
        # node positions: the shape's node coordinates in each cell
        x = space.node_positions().numpy()
        coords = space.shape.node_coords()[:, :2].astype(np.float64)
        h = (HI - LO) / np.array(RES)
        cells = np.stack(np.unravel_index(np.arange(geo.cell_count()), RES), axis=1)
        want = (LO + (cells[:, None, :] + coords[None]) * h).reshape(-1, 2)
        np.testing.assert_allclose(x, want, rtol=0, atol=1e-6)
    # degree 0 implies a discontinuous space
    assert fem.make_polynomial_space(geo, degree=0).node_count() == geo.cell_count()


def test_degree_zero_space(rng):
    geo = _grid()
    space = fem.make_polynomial_space(geo, degree=0, dtype=kc.vec2)
    assert space.degree == 0 and space.node_count() == geo.cell_count()
    cells = fem.Cells(geo)
    mass = fem.integrate(P.vector_mass_form, fields={"u": fem.make_trial(space, domain=cells),
                                                     "v": fem.make_test(space, domain=cells)})
    area = np.prod((HI - LO) / np.array(RES))
    values = mass.values.numpy()[: mass.nnz_sync()]
    np.testing.assert_array_equal(mass.columns.numpy()[: mass.nnz_sync()],
                                  np.arange(geo.cell_count()))
    np.testing.assert_allclose(values, np.broadcast_to(area * np.eye(2), values.shape),
                               rtol=1e-6)
    # constants have zero gradients; the value is the cell's value everywhere in it
    scalar = fem.make_polynomial_space(geo, degree=0)
    field = scalar.make_field()
    dofs = rng.uniform(0.5, 2.0, geo.cell_count())
    field.dof_values = kc.array(dofs, dtype=kc.float32)
    total = fem.integrate(_grad_norm, fields={"f": field}, domain=cells)
    np.testing.assert_allclose(total, dofs.sum() * area, rtol=1e-5)


def test_side_jumps_and_averages_of_discontinuous_fields(rng):
    geo = _grid()
    space = fem.make_polynomial_space(geo, degree=1, discontinuous=True)
    field, coefs = _per_cell_linear_field(space, rng)
    # (the default order follows the field's degree: too low for squares)
    quadrature = fem.RegularQuadrature(fem.Sides(geo), order=2)
    got = fem.integrate(_jump_energy, fields={"f": field.trace()}, quadrature=quadrature)
    # NumPy: every side of the grid, by Gauss quadrature of the two cells' linear functions
    t, w = _gauss()
    h = (HI - LO) / np.array(RES)
    want = 0.0
    for axis in (0, 1):
        other = 1 - axis
        for a in range(RES[axis] + 1):
            for b in range(RES[other]):
                x = np.zeros((len(t), 2))
                x[:, axis] = LO[axis] + a * h[axis]
                x[:, other] = LO[other] + (b + t) * h[other]
                lo_cell = _cell_of(x - 1e-9 * np.eye(2)[axis])
                hi_cell = _cell_of(x + 1e-9 * np.eye(2)[axis])
                if a == 0:
                    lo_cell = hi_cell  # boundary sides: the same cell on both sides
                if a == RES[axis]:
                    hi_cell = lo_cell
                f_lo = coefs[lo_cell, 0] + np.sum(coefs[lo_cell, 1:] * x, axis=1)
                f_hi = coefs[hi_cell, 0] + np.sum(coefs[hi_cell, 1:] * x, axis=1)
                integrand = (f_lo - f_hi) ** 2 + 3.0 * (0.5 * (f_lo + f_hi)) ** 2
                want += h[other] * np.dot(w, integrand)
    assert got == pytest.approx(want, rel=1e-5)


def test_node_count_and_at_node_give_the_cell_mean(rng):
    geo = _grid()
    space = fem.make_polynomial_space(geo, degree=2, discontinuous=True, dtype=kc.vec2,
                                      family=fem.Polynomial.GAUSS_LEGENDRE)
    field = space.make_field()
    dofs = rng.uniform(-1.0, 1.0, (space.node_count(), 2))
    field.dof_values = kc.array(dofs, dtype=kc.vec2)
    dest = space.make_field()
    dest.dof_values.fill_(np.nan)
    fem.interpolate(P.node_mean, dest=dest, fields={"f": field})
    mean = dofs.reshape(geo.cell_count(), 9, 2).mean(axis=1)
    np.testing.assert_allclose(dest.dof_values.numpy(), np.repeat(mean, 9, axis=0),
                               rtol=0, atol=1e-6)


def test_cells_of_a_side_domain_and_a_trace(rng):
    geo = _grid()
    space = fem.make_polynomial_space(geo, degree=1, discontinuous=True)
    field, coefs = _per_cell_linear_field(space, rng)
    shift = np.array([-0.05, 0.6])
    boundary = fem.BoundarySides(geo)
    got = fem.integrate(_wrapped_value, fields={"f": field.trace()}, values={
        "shift": kc.vec2(*shift)}, quadrature=fem.RegularQuadrature(boundary, order=1))
    # NumPy: the one-point rule on each boundary side, the field at 0.5 x + shift (inside
    # the grid, away from cell edges)
    h = (HI - LO) / np.array(RES)
    want = 0.0
    for axis in (0, 1):
        other = 1 - axis
        for end in (LO[axis], HI[axis]):
            for b in range(RES[other]):
                mid = np.zeros(2)
                mid[axis], mid[other] = end, LO[other] + (b + 0.5) * h[other]
                y = 0.5 * mid + shift
                cell = _cell_of(y)
                want += h[other] * (coefs[cell, 0] + np.dot(coefs[cell, 1:], y)
                                     + coefs[cell, 1] + 2.0 * coefs[cell, 2])
    assert got == pytest.approx(want, rel=1e-5)


def test_iterative_solvers_take_arrays_of_vectors(rng):
    # a block system's unknowns as vec2 arrays (as example_mixed_elasticity passes them)
    n = 6
    a = rng.uniform(-1.0, 1.0, (2 * n, 2 * n))
    dense = a @ a.T + 2 * n * np.eye(2 * n)
    blocks = dense.reshape(n, 2, n, 2).transpose(0, 2, 1, 3).reshape(-1, 2, 2)
    rows, cols = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    A = kc.sparse.bsr_from_triplets(n, n, kc.array(rows, dtype=kc.int32),
                                    kc.array(cols, dtype=kc.int32),
                                    kc.array(blocks, dtype=kc.mat22d))
    b = rng.uniform(-1.0, 1.0, 2 * n)
    x = kc.zeros(n, dtype=kc.vec2d)
    kc.optim.linear.cg(A, kc.array(b.reshape(n, 2), dtype=kc.vec2d), x, tol=1e-12,
                       maxiter=100)
    np.testing.assert_allclose(x.numpy().reshape(-1), np.linalg.solve(dense, b), rtol=1e-8)
    assert kc.types.type_is_matrix(kc.mat22) and not kc.types.type_is_matrix(kc.vec2)
    assert kc.types.type_is_vector(kc.vec3d) and not kc.types.type_is_vector(kc.float32)


def _where(marker: str, code: str) -> str:
    for number, line in enumerate(PROGRAMS.read_text().splitlines(), start=1):
        if line.rstrip().endswith(marker):
            return f"fem_dg_programs.py:{number}:{line.index(code) + 1}"
    raise LookupError(marker)


@pytest.mark.parametrize("name, domain, marker, code, words", [
    ("bad_at_node_args", "cells", "# BAD_AT_NODE_ARGS", "fem.at_node",
     "takes 3 arguments, got 2"),
    ("bad_cells_inline", "sides", "# BAD_CELLS_INLINE", "fem.cells",
     "can only be assigned to a name or passed to fem operators"),
    ("bad_cells_of_value", "cells", "# BAD_CELLS_VALUE", "x)",
     "must be a field or domain argument"),
])
def test_wrong_uses_point_at_the_integrand(name, domain, marker, code, words):
    geo = _grid()
    space = fem.make_polynomial_space(geo, degree=1, discontinuous=True, dtype=kc.vec2)
    field = space.make_field()
    dom = fem.Cells(geo) if domain == "cells" else fem.Sides(geo)
    fields = {"f": field if domain == "cells" else field.trace()}
    values = {"x": 1.0} if name == "bad_cells_of_value" else {}
    with pytest.raises(kc.KernelError) as info:
        fem.integrate(getattr(P, name), fields=fields, values=values, domain=dom)
    message = str(info.value)
    assert _where(marker, code) in message, message
    assert words in message, message
    assert "^" in message
