"""Finite-element programs with dof mappers, non-conforming bases and non-conforming fields
for tests/test_fem_nonconforming.py, written against Warp's `warp.fem` API.

This file runs as is with kernelc; the tests also run a copy whose imports say `warp`
instead of `kernelc` (in a Warp subprocess) and compare what both return. Discrete fields
get random node values (seeded), so that every dof and node matters.
"""

import numpy as np

import kernelc as wp
import kernelc.fem as fem
from tests.fem_harness import block_csr, prefixed
from tests.fem_mesh_programs import grid_positions, make_tetmesh, make_trimesh

# ---- integrands ----------------------------------------------------------------------------


@fem.integrand
def tensor_mass_form(s: fem.Sample, sig: fem.Field, tau: fem.Field):
    return wp.ddot(tau(s), sig(s))


@fem.integrand
def gradient_coupling_form(s: fem.Sample, u: fem.Field, tau: fem.Field):
    return wp.ddot(tau(s), fem.grad(u, s))


@fem.integrand
def tensor_div_form(s: fem.Sample, sig: fem.Field, v: fem.Field):
    return wp.dot(fem.div(sig, s), v(s))


@fem.integrand
def tensor_energy(s: fem.Sample, sig: fem.Field):
    return wp.ddot(sig(s), sig(s))


@fem.integrand
def field_value(s: fem.Sample, f: fem.Field):
    return f(s)


@fem.integrand
def field_gradient(s: fem.Sample, f: fem.Field):
    return fem.grad(f, s) + fem.D(f, s)


@fem.integrand
def general_tensor_2d(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return wp.mat22(wp.sin(3.0 * x[0]) + x[1], x[0] * x[1], 0.5 - x[0], wp.cos(2.0 * x[1]))


@fem.integrand
def general_tensor_2d_f64(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    two, three, half = wp.float64(2.0), wp.float64(3.0), wp.float64(0.5)
    return wp.mat22d(wp.sin(three * x[0]) + x[1], x[0] * x[1], half - x[0], wp.cos(two * x[1]))


@fem.integrand
def general_tensor_3d(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return wp.mat33(wp.sin(3.0 * x[0]), x[1], x[2] - x[0], 0.5 * x[0], wp.cos(x[1]), x[1] * x[2],
                    1.0 - x[2], x[0] * x[1], x[2] + 0.25)


@fem.integrand
def mass_stiffness_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s) + 0.25 * wp.dot(fem.grad(u, s), fem.grad(v, s))


@fem.integrand
def scalar_mass_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s)


@fem.integrand
def smooth_scalar(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return wp.sin(3.0 * x[0]) + x[0] * x[1] - x[1] * x[1]


@fem.integrand
def scalar_energy(s: fem.Sample, f: fem.Field):
    return f(s) * f(s) + wp.dot(fem.grad(f, s), fem.grad(f, s))


@fem.integrand
def boundary_stress_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, tau: fem.Field):
    return wp.dot(tau(s) * fem.normal(domain, s), u(s))


@fem.integrand
def horizontal_sides_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    return wp.dot(u(s), v(s)) * wp.abs(fem.normal(domain, s)[1])


@fem.integrand
def vector_cell_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(u(s), v(s)) + wp.ddot(fem.grad(u, s), fem.grad(v, s)) + fem.div(u, s) * v(s)[0]


@fem.integrand
def scalar_cell_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s) + wp.dot(fem.grad(u, s), fem.grad(v, s))


# ---- helpers -------------------------------------------------------------------------------


def _random_field(space, seed: int):
    field = space.make_field()
    rng = np.random.default_rng(seed)
    shape = field.dof_values.numpy().shape
    field.dof_values = wp.array(rng.uniform(-1.0, 1.0, shape).astype(np.float32),
                                dtype=space.dof_dtype)
    return field


def _qp_values(integrand, field, domain, dtype, order: int = 2):
    quadrature = fem.RegularQuadrature(domain, order=order)
    out = wp.zeros(quadrature.total_point_count(), dtype=dtype)
    fem.interpolate(integrand, dest=out, at=quadrature, fields={"f": field})
    return out.numpy()


def _matrix(out: dict, key: str, matrix) -> None:
    out.update({f"{key}.{k}": v for k, v in block_csr(matrix).items()})


# ---- dof mappers ---------------------------------------------------------------------------


def _mapped_2d(geo, mapper, u_space, seed: int, out: dict, prefix: str) -> None:
    cells = fem.Cells(geo)
    space = fem.make_polynomial_space(geo, degree=1, discontinuous=True, dof_mapper=mapper)
    out[f"{prefix}.dof_count"] = np.array([space.NODE_DOF_COUNT, space.VALUE_DOF_COUNT])
    sig, tau = fem.make_trial(space, domain=cells), fem.make_test(space, domain=cells)
    _matrix(out, f"{prefix}.mass", fem.integrate(tensor_mass_form,
                                                 fields={"sig": sig, "tau": tau}))
    _matrix(out, f"{prefix}.nodal_mass", fem.integrate(
        tensor_mass_form, fields={"sig": sig, "tau": tau}, assembly="nodal"))
    u = fem.make_trial(u_space, domain=cells)
    _matrix(out, f"{prefix}.coupling", fem.integrate(gradient_coupling_form,
                                                     fields={"u": u, "tau": tau}))
    field = _random_field(space, seed)
    out[f"{prefix}.energy"] = np.asarray(fem.integrate(tensor_energy, fields={"sig": field},
                                                        domain=cells))
    v = fem.make_test(u_space, domain=cells)
    out[f"{prefix}.div"] = fem.integrate(tensor_div_form, fields={"sig": field, "v": v},
                                         output_dtype=u_space.dtype).numpy()
    out[f"{prefix}.values"] = _qp_values(field_value, field, cells, space.dtype)
    target = space.make_field()
    general = general_tensor_2d if geo.dimension == 2 else general_tensor_3d
    fem.interpolate(general, dest=target)
    out[f"{prefix}.interpolated"] = target.dof_values.numpy()


def mapped_spaces() -> dict:
    """Symmetric (Voigt and DB16) and skew-symmetric tensor spaces on 2-d and 3-d grids."""
    out = {}
    geo = fem.Grid2D(res=wp.vec2i(3, 2), bounds_hi=wp.vec2(1.0, 0.75))
    u_space = fem.make_polynomial_space(geo, degree=2, dtype=wp.vec2)
    mappers = {"voigt": fem.SymmetricTensorMapper(wp.mat22),
               "db16": fem.SymmetricTensorMapper(
                   wp.mat22, mapping=fem.SymmetricTensorMapper.Mapping.DB16)}
    # (Warp 1.19 cannot assemble forms of SkewSymmetricTensorMapper(mat22) spaces: its
    # unit dofs are built as `float()`; tests/test_fem_nonconforming.py checks them alone)
    for k, (name, mapper) in enumerate(mappers.items()):
        _mapped_2d(geo, mapper, u_space, 10 + k, out, f"2d_{name}")
    geo3 = fem.Grid3D(res=wp.vec3i(2, 1, 1), bounds_hi=wp.vec3(1.0, 0.5, 0.75))
    u3_space = fem.make_polynomial_space(geo3, degree=1, dtype=wp.vec3)
    mappers3 = {"voigt": fem.SymmetricTensorMapper(wp.mat33),
                "db16": fem.SymmetricTensorMapper(
                    wp.mat33, mapping=fem.SymmetricTensorMapper.Mapping.DB16),
                "skew": fem.SkewSymmetricTensorMapper(wp.mat33)}
    for k, (name, mapper) in enumerate(mappers3.items()):
        _mapped_2d(geo3, mapper, u3_space, 20 + k, out, f"3d_{name}")
    return out


# ---- non-conforming bases ------------------------------------------------------------------


def _basis_forms(geo, degree: int, out: dict, prefix: str) -> None:
    cells = fem.Cells(geo)
    space = fem.make_polynomial_space(geo, degree=degree,
                                      element_basis=fem.ElementBasis.NONCONFORMING_POLYNOMIAL)
    out[f"{prefix}.node_count"] = np.array(space.node_count())
    out[f"{prefix}.nodes"] = space.node_positions().numpy()
    u, v = fem.make_trial(space, domain=cells), fem.make_test(space, domain=cells)
    # Warp's generic assembly: its default ("dispatch") rounds sums in another order, and an
    # entry that cancels exactly in one is 1e-10 in the other (pruned or not)
    _matrix(out, f"{prefix}.matrix", fem.integrate(mass_stiffness_form, fields={"u": u, "v": v},
                                                   assembly="generic"))
    _matrix(out, f"{prefix}.nodal", fem.integrate(scalar_mass_form, fields={"u": u, "v": v},
                                                  assembly="nodal"))
    field = space.make_field()
    fem.interpolate(smooth_scalar, dest=field)
    out[f"{prefix}.interpolated"] = field.dof_values.numpy()
    out[f"{prefix}.energy"] = np.asarray(fem.integrate(
        scalar_energy, fields={"f": field}, quadrature=fem.RegularQuadrature(cells, order=4)))
    boundary = fem.BoundarySides(geo)
    out[f"{prefix}.trace_nodal"] = fem.integrate(
        scalar_mass_form, fields={"u": field.trace(), "v": fem.make_test(space, domain=boundary)},
        assembly="nodal").numpy()


def _quadmesh(res=(3, 2)):
    pos = grid_positions(res, (0.0, 0.0), (1.0, 0.75))
    pos[:, 0] += 0.05 * np.sin(5.0 * pos[:, 1]) * pos[:, 0] * (1.0 - pos[:, 0])
    pos[:, 1] += 0.04 * np.cos(4.0 * pos[:, 0]) * pos[:, 1] * (0.75 - pos[:, 1])
    quads = wp.array(fem.utils.grid_to_quads(*res), dtype=int)
    return fem.Quadmesh2D(quads, wp.array(pos, dtype=wp.vec2))


def nonconforming_bases() -> dict:
    """ElementBasis.NONCONFORMING_POLYNOMIAL on grids and meshes of every cell kind."""
    out = {}
    grid = fem.Grid2D(res=wp.vec2i(3, 2), bounds_hi=wp.vec2(1.0, 0.75))
    for degree in (1, 2, 3):
        _basis_forms(grid, degree, out, f"square{degree}")
    _basis_forms(_quadmesh(), 2, out, "quad2")
    tris = make_trimesh(res=(3, 2))
    for degree in (1, 2, 3):
        _basis_forms(tris, degree, out, f"tri{degree}")
    grid3 = fem.Grid3D(res=wp.vec3i(2, 1, 1), bounds_hi=wp.vec3(1.0, 0.5, 0.75))
    for degree in (1, 2):
        _basis_forms(grid3, degree, out, f"cube{degree}")
    tets = make_tetmesh(res=(1, 1, 1))
    for degree in (1, 2):
        _basis_forms(tets, degree, out, f"tet{degree}")
    return out


# ---- non-conforming fields -----------------------------------------------------------------


def _lookup_trimesh():
    """A triangle mesh over part of [0, 1] x [0, 0.5] (with Warp's BVH, for lookups)."""
    res = (3, 2)
    pos = grid_positions(res, (0.15, 0.05), (0.85, 0.45))
    pos[:, 0] += 0.03 * np.sin(6.0 * pos[:, 1])
    tris = wp.array(fem.utils.grid_to_tris(*res), dtype=int)
    return fem.Trimesh2D(tris, wp.array(pos, dtype=wp.vec2), build_bvh=True)


def nonconforming_fields() -> dict:
    """Fields of one geometry evaluated on the cells and boundary sides of another."""
    out = {}
    geo1 = fem.Grid2D(res=wp.vec2i(4, 3), bounds_hi=wp.vec2(1.0, 0.5))
    above = fem.Grid2D(res=wp.vec2i(3, 2), bounds_lo=wp.vec2(0.3, 0.5),
                       bounds_hi=wp.vec2(0.7, 0.8))
    inside = fem.Grid2D(res=wp.vec2i(2, 2), bounds_lo=wp.vec2(0.2, 0.1),
                        bounds_hi=wp.vec2(0.8, 0.4))
    u1_space = fem.make_polynomial_space(geo1, degree=2, dtype=wp.vec2,
                                         element_basis=fem.ElementBasis.SERENDIPITY)
    u_above = _random_field(fem.make_polynomial_space(
        above, degree=2, dtype=wp.vec2, element_basis=fem.ElementBasis.SERENDIPITY), 1)
    sig_above = _random_field(fem.make_polynomial_space(
        above, degree=1, discontinuous=True, dof_mapper=fem.SymmetricTensorMapper(wp.mat22)), 2)
    u_inside = _random_field(fem.make_polynomial_space(inside, degree=2, dtype=wp.vec2), 3)
    sig_inside = _random_field(fem.make_polynomial_space(
        inside, degree=2, discontinuous=True, dtype=wp.mat22,
        element_basis=fem.ElementBasis.NONCONFORMING_POLYNOMIAL), 4)

    boundary = fem.BoundarySides(geo1)
    v_bd = fem.make_test(u1_space, domain=boundary)
    out["stress_rhs"] = fem.integrate(
        boundary_stress_form, fields={"u": v_bd, "tau": fem.NonconformingField(boundary, sig_above)},
        output_dtype=wp.vec2).numpy()
    out["nodal_rhs"] = fem.integrate(
        horizontal_sides_form, fields={"u": fem.NonconformingField(boundary, u_above), "v": v_bd},
        assembly="nodal", output_dtype=wp.vec2).numpy()
    shifted = fem.NonconformingField(boundary, u_above, background=wp.vec2(0.25, -0.5))
    out["background_rhs"] = fem.integrate(horizontal_sides_form, fields={"u": shifted, "v": v_bd},
                                          output_dtype=wp.vec2).numpy()

    cells = fem.Cells(geo1)
    v = fem.make_test(u1_space, domain=cells)
    nc_u = fem.NonconformingField(cells, u_inside)
    out["cell_rhs"] = fem.integrate(vector_cell_form, fields={"u": nc_u, "v": v},
                                    output_dtype=wp.vec2).numpy()
    out["cell_values"] = _qp_values(field_value, nc_u, cells, wp.vec2)
    out["cell_gradients"] = _qp_values(field_gradient, nc_u, cells, wp.mat22)
    out["tensor_values"] = _qp_values(field_value, fem.NonconformingField(cells, sig_inside),
                                      cells, wp.mat22, order=3)
    own = _random_field(u1_space, 5)
    with_field = fem.NonconformingField(cells, u_inside, background=own)
    out["field_background_rhs"] = fem.integrate(vector_cell_form,
                                                fields={"u": with_field, "v": v},
                                                output_dtype=wp.vec2).numpy()

    tris = _lookup_trimesh()
    p_tri = _random_field(fem.make_polynomial_space(tris, degree=2), 6)
    scalar_space = fem.make_polynomial_space(geo1, degree=1)
    nc_p = fem.NonconformingField(cells, p_tri)
    out["mesh_rhs"] = fem.integrate(scalar_cell_form, fields={
        "u": nc_p, "v": fem.make_test(scalar_space, domain=cells)}).numpy()
    out["mesh_values"] = _qp_values(field_value, nc_p, cells, wp.float32)
    return out


def float64_spaces() -> dict:
    """A symmetric tensor space (DB16, whose constants Warp widens from float32) and a
    non-conforming basis on a float64 grid."""
    out = {}
    geo = fem.Grid2D(res=wp.vec2i(2, 2), bounds_hi=wp.vec2d(1.0, 0.75), scalar_type=wp.float64)
    cells = fem.Cells(geo)
    mapper = fem.SymmetricTensorMapper(wp.mat22d, mapping=fem.SymmetricTensorMapper.Mapping.DB16)
    space = fem.make_polynomial_space(geo, degree=1, discontinuous=True, dof_mapper=mapper)
    target = space.make_field()
    fem.interpolate(general_tensor_2d_f64, dest=target)
    out["interpolated"] = target.dof_values.numpy()
    out["values"] = _qp_values(field_value, target, cells, wp.mat22d)
    voigt = fem.make_polynomial_space(geo, degree=1, discontinuous=True,
                                      dof_mapper=fem.SymmetricTensorMapper(wp.mat22d))
    voigt_field = voigt.make_field()
    fem.interpolate(general_tensor_2d_f64, dest=voigt_field)
    out["voigt_values"] = _qp_values(field_value, voigt_field, cells, wp.mat22d)
    nc = fem.make_polynomial_space(geo, degree=2,
                                   element_basis=fem.ElementBasis.NONCONFORMING_POLYNOMIAL)
    out["nc_nodes"] = nc.node_positions().numpy()
    u, v = fem.make_trial(nc, domain=cells), fem.make_test(nc, domain=cells)
    _matrix(out, "nc_matrix", fem.integrate(scalar_cell_form, fields={"u": u, "v": v},
                                            assembly="generic"))
    return out


def run_all() -> dict:
    return prefixed({"mapped": mapped_spaces(), "bases": nonconforming_bases(),
                     "fields": nonconforming_fields(), "f64": float64_spaces()})
