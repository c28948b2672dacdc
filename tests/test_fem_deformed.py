"""Deformed geometries (`field.make_deformed_geometry`): affine deformations of every
geometry kind against the same geometry built with moved vertices (or other grid
bounds); curved ones against exact identities (divergence theorem) and NumPy; lookups,
node positions, implicit and uniform deforming fields, and the errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem

RNG_SEED = 1234


# ---- integrands ----------------------------------------------------------------------------


@fem.integrand
def _affine_map(s: fem.Sample, domain: fem.Domain, A: Any, b: Any, displacement: Any):
    x = domain(s)
    return A * x + b - displacement * x


@fem.integrand
def _stiffness(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    x = domain(s)
    return (1.0 + 0.25 * x[0] * x[0]) * kc.dot(fem.grad(u, s), fem.grad(v, s)) + u(s) * v(s)


@fem.integrand
def _side_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    nor = fem.normal(domain, s)
    x = domain(s)
    return (fem.measure_ratio(domain, s) * fem.jump(u, s) * fem.jump(v, s)
            + kc.dot(fem.grad_average(u, s), nor) * fem.jump(v, s) * (1.0 + x[1])
            + fem.average(u, s) * fem.average(v, s))


@fem.integrand
def _boundary_flux(s: fem.Sample, domain: fem.Domain, v: fem.Field):
    return kc.dot(domain(s), fem.normal(domain, s)) * v(s)


@fem.integrand
def _one(s: fem.Sample):
    return 1.0


@fem.integrand
def _x_dot_n(s: fem.Sample, domain: fem.Domain):
    return kc.dot(domain(s), fem.normal(domain, s))


@fem.integrand
def _measure_and_gradient(s: fem.Sample, domain: fem.Domain, out_f: Any, out_m: Any):
    out_f[s.qp_index] = fem.deformation_gradient(domain, s)
    out_m[s.qp_index] = fem.measure(domain, s)


@fem.integrand
def _lookup_roundtrip(s: fem.Sample, domain: fem.Domain, points: Any, out: Any):
    found = fem.lookup(domain, points[s.qp_index])
    out[s.qp_index] = domain(found)


@fem.integrand
def _annulus(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    r = x[1] + 0.5
    t = 0.5 * 3.1415926 * x[0]
    return r * kc.vec2(kc.sin(t), kc.cos(t))


@fem.integrand
def _position(s: fem.Sample, domain: fem.Domain):
    return domain(s)


@kc.func
def _affine_implicit(x: kc.vec2, A: kc.mat22, b: kc.vec2):
    return A * x + b


@kc.func
def _affine_implicit_grad(x: kc.vec2, A: kc.mat22, b: kc.vec2):
    return A


@kc.func
def _scalar_implicit(x: kc.vec2):
    return x[0]


# ---- geometries ------------------------------------------------------------------------------


def _jittered_grid_points(res: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    axes = [np.linspace(0.0, 1.0, r + 1) for r in res]
    pts = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, len(res))
    return pts + rng.uniform(-0.15, 0.15, size=pts.shape) / max(res)


def _mesh(kind: str, positions: np.ndarray, scalar: Any = kc.float32) -> fem.Geometry:
    dim = positions.shape[1]
    vec = kc.types.vector(length=dim, dtype=scalar)
    pos = kc.array(positions, dtype=vec)
    if kind == "tri2d":
        return fem.Trimesh2D(kc.array(fem.utils.grid_to_tris(3, 2), dtype=int), pos)
    if kind == "tri3d":
        return fem.Trimesh3D(kc.array(fem.utils.grid_to_tris(3, 2), dtype=int), pos)
    return fem.Tetmesh(kc.array(fem.utils.grid_to_tets(2, 2, 1), dtype=int), pos)


def _base_points(kind: str, rng: np.random.Generator) -> np.ndarray:
    if kind == "tri2d":
        return _jittered_grid_points((3, 2), rng)
    if kind == "tri3d":
        p = _jittered_grid_points((3, 2), rng)
        return np.concatenate([p, (0.3 * p[:, :1] * p[:, 1:]) + 0.1], axis=1)
    return _jittered_grid_points((2, 2, 1), rng)


def _random_affine(dim: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    A = np.eye(dim) + rng.uniform(-0.3, 0.3, size=(dim, dim))
    if np.linalg.det(A) < 0:
        A[0] *= -1.0
    return A, rng.uniform(-1.0, 1.0, size=dim)


def _deformation_field(geo: fem.Geometry, A: np.ndarray, b: np.ndarray, relative: bool,
                       degree: int = 1) -> fem.DiscreteField:
    dim = geo.dimension
    vec = kc.types.vector(length=dim, dtype=geo.scalar_type)
    mat = kc.types.matrix(shape=(dim, dim), dtype=geo.scalar_type)
    space = fem.make_polynomial_space(geo, degree=degree, dtype=vec)
    field = space.make_field()
    field.dof_values.fill_(np.nan)
    fem.interpolate(_affine_map, dest=field, values={
        "A": mat(*A.reshape(-1)), "b": vec(*b),
        "displacement": geo.scalar_type(1.0 if relative else 0.0)})
    return field


def _dense(matrix: Any) -> np.ndarray:
    n = matrix.nnz_sync()
    offsets = matrix.offsets.numpy()[: matrix.nrow + 1]
    rows = np.repeat(np.arange(matrix.nrow), np.diff(offsets))
    out = np.zeros((matrix.nrow, matrix.ncol))
    np.add.at(out, (rows, matrix.columns.numpy()[:n]), matrix.values.numpy()[:n])
    return out


def _forms(geo: fem.Geometry, degree: int = 2) -> dict[str, np.ndarray]:
    """Cell, side and boundary forms of a scalar space of `degree` on `geo`."""
    space = fem.make_polynomial_space(geo, degree=degree)
    cells, sides, boundary = fem.Cells(geo), fem.Sides(geo), fem.BoundarySides(geo)
    out = {}
    out["stiffness"] = _dense(fem.integrate(_stiffness, fields={
        "u": fem.make_trial(space, domain=cells), "v": fem.make_test(space, domain=cells)}))
    out["sides"] = _dense(fem.integrate(_side_form, fields={
        "u": fem.make_trial(space, domain=sides), "v": fem.make_test(space, domain=sides)}))
    out["flux"] = fem.integrate(_boundary_flux, fields={
        "v": fem.make_test(space, domain=boundary)}).numpy()
    out["area"] = np.array([fem.integrate(_one, domain=cells, quadrature=fem.RegularQuadrature(
        cells, order=2))])
    out["nodes"] = space.node_positions().numpy()
    return out


def _assert_same_forms(got: dict, want: dict) -> None:
    for name in want:
        scale = max(np.abs(want[name]).max(), 1e-30)
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=2e-5 * scale,
                                   err_msg=name)


# ---- affine deformations -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["tri2d", "tri3d", "tet"])
@pytest.mark.parametrize("relative", [False, True])
def test_affine_deformation_of_mesh_equals_moved_mesh(kind, relative):
    rng = np.random.default_rng(RNG_SEED)
    points = _base_points(kind, rng)
    A, b = _random_affine(points.shape[1], rng)
    base = _mesh(kind, points)
    deformed = _deformation_field(base, A, b, relative).make_deformed_geometry(relative=relative)
    assert isinstance(deformed, fem.DeformedGeometry) and deformed.base is base
    assert deformed.cell_count() == base.cell_count()
    assert deformed.boundary_side_count() == base.boundary_side_count()
    moved = _mesh(kind, points @ A.T + b)
    _assert_same_forms(_forms(deformed), _forms(moved))


@pytest.mark.parametrize("dim", [2, 3])
def test_scaling_deformation_of_grid_equals_grid_with_other_bounds(dim):
    rng = np.random.default_rng(RNG_SEED + dim)
    res = (3, 2) if dim == 2 else (2, 2, 1)
    scale, shift = rng.uniform(0.5, 2.0, size=dim), rng.uniform(-1.0, 1.0, size=dim)
    vec = kc.types.vector(length=dim, dtype=kc.float32)
    grid = fem.Grid2D if dim == 2 else fem.Grid3D
    base = grid(res=kc.types.vector(length=dim, dtype=kc.int32)(*res))
    deformed = _deformation_field(base, np.diag(scale), shift, False).make_deformed_geometry(
        relative=False)
    moved = grid(res=kc.types.vector(length=dim, dtype=kc.int32)(*res), bounds_lo=vec(*shift),
                 bounds_hi=vec(*(shift + scale)))
    _assert_same_forms(_forms(deformed, degree=1 if dim == 3 else 2),
                       _forms(moved, degree=1 if dim == 3 else 2))


def test_deformation_gradient_and_measure_operators_match_numpy():
    rng = np.random.default_rng(RNG_SEED + 7)
    points = _base_points("tri2d", rng)
    A, b = _random_affine(2, rng)
    base = _mesh("tri2d", points)
    deformed = _deformation_field(base, A, b, True).make_deformed_geometry()
    cells = fem.Cells(deformed)
    quadrature = fem.RegularQuadrature(cells, order=2)
    n = quadrature.total_point_count()
    out_f = kc.full(n, kc.mat22(np.nan), dtype=kc.mat22)
    out_m = kc.full(n, np.nan, dtype=kc.float32)
    fem.interpolate(_measure_and_gradient, at=quadrature, values={"out_f": out_f,
                                                                   "out_m": out_m})
    tris = fem.utils.grid_to_tris(3, 2)
    corners = points[tris]
    base_F = np.stack([corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]], axis=2)
    want_F = np.repeat(A @ base_F, quadrature.points_per_element(), axis=0)
    np.testing.assert_allclose(out_f.numpy(), want_F, rtol=0, atol=1e-5)
    np.testing.assert_allclose(out_m.numpy(), 0.5 * np.abs(np.linalg.det(want_F)), rtol=1e-5)


# ---- curved deformations ----------------------------------------------------------------------


def _annulus_geometry(mesh: str, degree: int = 2) -> fem.DeformedGeometry:
    if mesh == "grid":
        base = fem.Grid2D(res=kc.vec2i(6, 4))
    else:
        x, y = np.meshgrid(np.linspace(0.0, 1.0, 7), np.linspace(0.0, 1.0, 5), indexing="ij")
        base = fem.Trimesh2D(kc.array(fem.utils.grid_to_tris(6, 4), dtype=int),
                             kc.array(np.stack([x.ravel(), y.ravel()], axis=1), dtype=kc.vec2))
    space = fem.make_polynomial_space(base, degree=degree, dtype=kc.vec2)
    field = space.make_field()
    fem.interpolate(_annulus, dest=field)
    return field.make_deformed_geometry(relative=False)


@pytest.mark.parametrize("mesh", ["grid", "tri"])
def test_curved_geometry_satisfies_divergence_theorem(mesh):
    geo = _annulus_geometry(mesh)
    cells, boundary = fem.Cells(geo), fem.BoundarySides(geo)
    area = fem.integrate(_one, quadrature=fem.RegularQuadrature(cells, order=6))
    flux = fem.integrate(_x_dot_n, quadrature=fem.RegularQuadrature(boundary, order=6))
    # div x = 2, and the deformed cells' sides are exactly their neighbours' sides
    assert abs(flux - 2.0 * area) < 1e-5 * area
    if mesh == "grid":  # the quarter annulus of radii 0.5 and 1.5
        assert abs(area - 0.5 * np.pi) < 2e-3


@pytest.mark.parametrize("mesh", ["grid", "tri"])
def test_lookup_and_node_positions_on_curved_geometry(mesh):
    geo = _annulus_geometry(mesh)
    rng = np.random.default_rng(RNG_SEED + 3)
    cells = fem.Cells(geo)
    quadrature = fem.RegularQuadrature(cells, order=0)
    n = quadrature.total_point_count()
    r, t = rng.uniform(0.55, 1.45, size=n), rng.uniform(0.05, 0.5 * np.pi - 0.05, size=n)
    want = np.stack([r * np.sin(t), r * np.cos(t)], axis=1)
    points = kc.array(want, dtype=kc.vec2)
    out = kc.full(n, kc.vec2(np.nan), dtype=kc.vec2)
    fem.interpolate(_lookup_roundtrip, at=quadrature, values={"points": points, "out": out})
    # Warp's Newton loop stops once a step would be under 2^-10 in coordinates (Warp's own
    # test of deformed lookups allows 1e-3)
    np.testing.assert_allclose(out.numpy(), want, rtol=0, atol=1e-3)
    # nodes of a space on the deformed geometry: the deforming field's nodes (same degree)
    space = fem.make_polynomial_space(geo, degree=2, dtype=kc.vec2)
    base_nodes = fem.make_polynomial_space(geo.base, degree=2).node_positions().numpy()
    nodes = space.node_positions().numpy()
    x, y = base_nodes[:, 0], base_nodes[:, 1]
    r, t = y + 0.5, 0.5 * 3.1415926 * x
    np.testing.assert_allclose(nodes, np.stack([r * np.sin(t), r * np.cos(t)], axis=1),
                               rtol=0, atol=1e-5)
    # and interpolating the position there gives them
    field = space.make_field()
    field.dof_values.fill_(np.nan)
    fem.interpolate(_position, dest=field)
    np.testing.assert_allclose(field.dof_values.numpy(), nodes, rtol=0, atol=1e-5)


# ---- other deforming fields -----------------------------------------------------------------


def test_implicit_and_uniform_fields_deform_like_discrete_ones():
    rng = np.random.default_rng(RNG_SEED + 5)
    A, b = _random_affine(2, rng)
    base = fem.Grid2D(res=kc.vec2i(3, 2))
    implicit = fem.ImplicitField(fem.Cells(base), _affine_implicit,
                                 values={"A": kc.mat22(*A.reshape(-1)), "b": kc.vec2(*b)},
                                 grad_func=_affine_implicit_grad)
    by_implicit = implicit.make_deformed_geometry(relative=False)
    by_discrete = _deformation_field(base, A, b, False).make_deformed_geometry(relative=False)
    _assert_same_forms(_forms(by_implicit), _forms(by_discrete))
    # a uniform displacement translates
    shifted = fem.UniformField(fem.Cells(base), kc.vec2(*b)).make_deformed_geometry()
    translated = fem.Grid2D(res=kc.vec2i(3, 2), bounds_lo=kc.vec2(*b),
                            bounds_hi=kc.vec2(*(b + 1.0)))
    _assert_same_forms(_forms(shifted), _forms(translated))


def test_float64_deformation():
    rng = np.random.default_rng(RNG_SEED + 9)
    points = _base_points("tri2d", rng)
    A, b = _random_affine(2, rng)
    base = _mesh("tri2d", points, kc.float64)
    deformed = _deformation_field(base, A, b, True).make_deformed_geometry()
    assert deformed.scalar_type == kc.float64
    area = fem.integrate(_one, domain=fem.Cells(deformed))
    tris = points[fem.utils.grid_to_tris(3, 2)] @ A.T
    e1, e2 = tris[:, 1] - tris[:, 0], tris[:, 2] - tris[:, 0]
    want = 0.5 * np.abs(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]).sum()
    assert abs(area - want) < 1e-12


# ---- errors --------------------------------------------------------------------------------------


def test_deformation_errors():
    base = fem.Grid2D(res=kc.vec2i(2, 2))
    scalar_field = fem.make_polynomial_space(base, degree=1).make_field()
    with pytest.raises(ValueError, match="vector-valued"):
        scalar_field.make_deformed_geometry()
    vec3_field = fem.make_polynomial_space(base, degree=1, dtype=kc.vec3).make_field()
    with pytest.raises(ValueError, match="vector-valued"):
        vec3_field.make_deformed_geometry()
    no_grad = fem.ImplicitField(fem.Cells(base), _affine_implicit,
                                values={"A": kc.mat22(), "b": kc.vec2()})
    with pytest.raises(ValueError, match="Gradient"):
        no_grad.make_deformed_geometry()
    field = fem.make_polynomial_space(base, degree=1, dtype=kc.vec2).make_field()
    with pytest.raises(TypeError, match="DiscreteFieldTrace"):
        fem.DeformedGeometry(field.trace())
