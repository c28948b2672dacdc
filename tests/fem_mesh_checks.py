"""NumPy checks of kernelc.fem's meshes for tests/test_fem_mesh.py (kernelc only), and the
integrands they use (integrands live in files: kernelc reads their source)."""

from __future__ import annotations

from math import factorial
from pathlib import Path

import numpy as np

import kernelc as wp
import kernelc.fem as fem
from kernelc.fem.element import Element

THIS_FILE = Path(__file__)


# ---- integrands -------------------------------------------------------------------------------


@wp.func
def bump(x: wp.vec2):
    return wp.sin(3.14159265 * x[0]) * wp.sin(3.14159265 * x[1])


@wp.func
def bump(x: wp.vec3):  # noqa: F811
    return wp.sin(3.14159265 * x[0]) * wp.sin(3.14159265 * x[1]) * wp.sin(3.14159265 * x[2])


@fem.integrand
def poisson_source(s: fem.Sample, domain: fem.Domain, v: fem.Field, scale: float):
    return scale * bump(domain(s)) * v(s)


@fem.integrand
def laplacian_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(fem.grad(u, s), fem.grad(v, s))


@fem.integrand
def boundary_projector(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s)


@fem.integrand
def bump_error(s: fem.Sample, domain: fem.Domain, u: fem.Field):
    e = u(s) - bump(domain(s))
    return e * e


@wp.func
def polynomial(x: wp.vec2):
    return 1.0 + x[0] - 2.0 * x[1] + x[0] * x[1] + 0.5 * x[0] * x[0]


@wp.func
def polynomial(x: wp.vec3):  # noqa: F811
    return 1.0 + x[0] - 2.0 * x[1] + 0.3 * x[2] + x[0] * x[2] + 0.5 * x[1] * x[1]


@wp.func
def polynomial_gradient(x: wp.vec2):
    return wp.vec2(1.0 + x[1] + x[0], -2.0 + x[0])


@wp.func
def polynomial_gradient(x: wp.vec3):  # noqa: F811
    return wp.vec3(1.0 + x[2], -2.0 + x[1], 0.3 + x[0])


@wp.func
def linear(x: wp.vec3):
    return 1.0 + x[0] - 2.0 * x[1] + 0.5 * x[2]


@wp.func
def linear(x: wp.vec2):  # noqa: F811
    return 1.0 + x[0] - 2.0 * x[1]


@fem.integrand
def polynomial_expr(s: fem.Sample, domain: fem.Domain):
    return polynomial(domain(s))


@fem.integrand
def linear_expr(s: fem.Sample, domain: fem.Domain):
    return linear(domain(s))


@fem.integrand
def polynomial_error(s: fem.Sample, domain: fem.Domain, f: fem.Field):
    # the field's gradient against the polynomial's, projected on the cell (surfaces)
    x = domain(s)
    n = fem.normal(domain, s)
    g = polynomial_gradient(x)
    g = g - n * wp.dot(n, g)
    e = f(s) - polynomial(x)
    return e * e + wp.length_sq(fem.grad(f, s) - g)


@fem.integrand
def linear_error(s: fem.Sample, domain: fem.Domain, f: fem.Field):
    e = f(s) - linear(domain(s))
    return e * e


@fem.integrand
def lookup_miss_2d(s: fem.Sample, domain: fem.Domain, points: wp.array(dtype=wp.vec2)):
    x = points[s.qp_index]
    return wp.length(domain(fem.lookup(domain, x)) - x)


@fem.integrand
def lookup_miss_3d(s: fem.Sample, domain: fem.Domain, points: wp.array(dtype=wp.vec3)):
    x = points[s.qp_index]
    return wp.length(domain(fem.lookup(domain, x)) - x)


@fem.integrand
def mark_left_sides(s: fem.Sample, domain: fem.Domain, left: wp.array(dtype=int)):
    """Marks the sides whose normal points to -x (no value: it writes to `left`)."""
    if fem.normal(domain, s)[0] < -0.5:
        left[s.qp_index] = 1


@fem.integrand
def vector_valued_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.vec2(u(s), v(s))  # BAD_VALUE


@fem.integrand
def position_of_an_int(s: fem.Sample, domain: fem.Domain, u: fem.Field):
    return fem.position(domain, 3)[0] * u(s)  # an int where fem's code needs a Sample


def where(marker: str, code: str) -> str:
    """'fem_mesh_checks.py:LINE:COL' of `code` on the first line containing `marker`."""
    for number, line in enumerate(THIS_FILE.read_text().splitlines(), start=1):
        if marker in line:
            return f"{THIS_FILE.name}:{number}:{line.index(code) + 1}"
    raise LookupError(marker)


# ---- checks -----------------------------------------------------------------------------------


def grid_points(res: tuple) -> np.ndarray:
    """The vertices of a grid of the unit square or cube, last axis fastest."""
    axes = [np.linspace(0.0, 1.0, r + 1) for r in res]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(res))


def tet_volumes(tet, signed: bool = False) -> np.ndarray:
    corners = tet.host_positions()[tet.host_cell_vertices()]
    edges = corners[:, 1:] - corners[:, :1]
    volumes = np.linalg.det(edges) / 6.0
    return volumes if signed else np.abs(volumes)


def check_side_orientation(geo) -> None:
    """Each side's normal (as its vertex order gives it) points away from its inner cell."""
    pos = geo.host_positions()
    sides = geo.host_side_vertices()
    corners = pos[sides]
    if sides.shape[1] == 2:
        edge = corners[:, 1] - corners[:, 0]
        normal = np.stack([edge[:, 1], -edge[:, 0]], axis=1)
    else:
        normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    inner, outer = geo.side_cells(np.arange(len(sides)))
    centroid = pos[geo.host_cell_vertices()].mean(axis=1)
    towards = np.einsum("ij,ij->i", centroid[inner] - corners.mean(axis=1), normal)
    assert (towards < 0.0).all()
    boundary = np.zeros(len(sides), dtype=bool)
    boundary[geo.boundary_side_indices()] = True
    np.testing.assert_array_equal(inner == outer, boundary)
    cell_sides = geo.host_cell_sides()
    for local in range(cell_sides.shape[1]):  # each cell lists each of its sides once
        side = cell_sides[:, local]
        assert ((inner[side] == np.arange(len(cell_sides)))
                | (outer[side] == np.arange(len(cell_sides)))).all()


def check_simplex_rule(element: Element, order: int, points: np.ndarray,
                       weights: np.ndarray) -> None:
    """The rule integrates every monomial of degree <= order exactly (weights sum to 1)."""
    dim = element.dimension
    coords = points[:, 1:] if element == Element.TRIANGLE else points
    assert (weights > 0).all() and abs(weights.sum() - 1.0) < 1e-12
    for powers in np.ndindex(*(order + 1,) * dim):
        if sum(powers) > order:
            continue
        exact = factorial(dim) * np.prod([factorial(p) for p in powers]) / factorial(
            sum(powers) + dim)
        value = (weights * np.prod(coords ** np.array(powers), axis=1)).sum()
        assert abs(value - exact) < 1e-12, (element, order, powers)


# A mesh type's dimension and the generator of its cells on a grid.
_GRID_CELLS = {fem.Trimesh2D: (2, fem.utils.grid_to_tris), fem.Tetmesh: (3, fem.utils.grid_to_tets),
               fem.Quadmesh2D: (2, fem.utils.grid_to_quads),
               fem.Hexmesh: (3, fem.utils.grid_to_hexes)}


def poisson_error(mesh_type, n: int, degree: int, element_basis=None) -> float:
    """L2 error of -lap u = f, u = 0 on the boundary of the unit square (cube), whose solution
    is the `bump`, on a mesh of n cells a side."""
    dim, cells_of = _GRID_CELLS[mesh_type]
    res = (n,) * dim
    geo = mesh_type(wp.array(cells_of(*res), dtype=int),
                    wp.array(grid_points(res), dtype=wp.vec2 if dim == 2 else wp.vec3))
    space = fem.make_polynomial_space(geo, degree=degree, element_basis=element_basis)
    cells, boundary = fem.Cells(geo), fem.BoundarySides(geo)
    test, trial = fem.make_test(space, domain=cells), fem.make_trial(space, domain=cells)
    matrix = fem.integrate(laplacian_form, fields={"u": trial, "v": test},
                           output_dtype=wp.float64)
    rhs = fem.integrate(poisson_source, fields={"v": test}, output_dtype=wp.float64,
                        values={"scale": float(dim * np.pi ** 2)},
                        quadrature=fem.RegularQuadrature(cells, order=2 * degree + 2))
    projector = fem.integrate(boundary_projector, assembly="nodal", output_dtype=wp.float64,
                              fields={"u": fem.make_trial(space, domain=boundary),
                                      "v": fem.make_test(space, domain=boundary)})
    fem.project_linear_system(matrix, rhs, projector)
    x = wp.zeros_like(rhs)
    wp.optim.linear.cg(matrix, rhs, x, tol=1e-10, maxiter=2000)
    field = space.make_field()
    field.dof_values = wp.array(x.numpy().astype(np.float32), dtype=float)
    error = fem.integrate(bump_error, fields={"u": field}, domain=cells,
                          quadrature=fem.RegularQuadrature(cells, order=2 * degree + 2))
    return float(np.sqrt(error))


def check_polynomial_reproduction(geo, degree: int) -> None:
    """A field interpolating a polynomial of `degree` has its values and gradients."""
    space = fem.make_polynomial_space(geo, degree=degree)
    field = space.make_field()
    cells = fem.Cells(geo)
    surface = geo.dimension != geo.cell_dimension
    fem.interpolate(linear_expr if surface else polynomial_expr, dest=field)
    form = linear_error if surface else polynomial_error
    error = fem.integrate(form, fields={"f": field}, domain=cells)
    assert error < 1e-9, error


def check_lookup(geo, tolerance: float = 1e-5) -> None:
    """`fem.lookup` finds a point of each cell again (one random point per cell), to
    `tolerance` (Warp stops its search in cells that are not affine when a step would move
    the point's coordinates by less than 2^-10)."""
    rng = np.random.default_rng(3)
    cells = geo.host_cell_vertices()
    weights = rng.dirichlet(np.ones(cells.shape[1]), size=len(cells))
    points = np.einsum("ck,ckd->cd", weights, geo.host_positions()[cells])
    vec = wp.vec2 if geo.dimension == 2 else wp.vec3
    miss = wp.zeros(len(cells), dtype=float)
    domain = fem.Cells(geo)
    fem.interpolate(lookup_miss_2d if geo.dimension == 2 else lookup_miss_3d, dest=miss,
                    at=fem.RegularQuadrature(domain, order=0),
                    values={"points": wp.array(points, dtype=vec)})
    assert miss.numpy().max() < tolerance


def dense_stiffness(space) -> np.ndarray:
    """The stiffness matrix (grad u . grad v) of `space` as a dense NumPy array."""
    from tests import fem_harness as H
    from tests import fem_mesh_programs as M

    matrix = fem.integrate(M.diffusion_form, assembly="generic",
                           fields={"u": fem.make_trial(space), "v": fem.make_test(space)})
    n = space.node_count()
    csr = H.block_csr(matrix)
    dense = np.zeros((n, n))
    dense[np.repeat(np.arange(n), np.diff(csr["offsets"])), csr["columns"]] = \
        csr["values"].reshape(-1)
    return dense
