"""Finite-element programs on unstructured meshes (triangles in the plane and in space,
tetrahedra) for tests/test_fem_mesh.py, written against Warp's `warp.fem` API.

This file runs as is with kernelc; the tests also run a copy whose imports say `warp`
instead of `kernelc` (in a Warp subprocess) and compare what both return (the result
helpers come from `tests/fem_harness.py`, in both processes). The meshes are grids cut
into simplices whose vertices are then moved, so that no two cells are alike.

Bilinear forms ask for Warp's "generic" assembly, the one kernelc implements: Warp's default
("dispatch") rounds differently, and entries that cancel exactly in one (couplings of P2
vertex and edge nodes that vanish on symmetric cells) are 1e-8 in the other, which changes
the sparsity after zeros are pruned.
"""

import numpy as np

import kernelc as wp
import kernelc.fem as fem
from tests.fem_harness import block_csr, flat


@fem.integrand
def diffusion_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(fem.grad(u, s), fem.grad(v, s))


@fem.integrand
def mass_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s)


@fem.integrand
def source_form(s: fem.Sample, domain: fem.Domain, v: fem.Field):
    x = domain(s)
    return wp.sin(3.0 * x[0]) * wp.cos(2.0 * x[1]) * v(s)


@fem.integrand
def wall_projector_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    n = fem.normal(domain, s)
    return wp.abs(n[0]) * u(s) * v(s)


@fem.integrand
def boundary_mass_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    x = domain(s)
    return (1.0 + x[1]) * u(s) * v(s)


@fem.integrand
def interior_penalty_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    n = fem.normal(domain, s)
    return fem.measure_ratio(domain, s) * fem.jump(u, s) * fem.jump(v, s) - wp.dot(
        fem.grad_average(u, s), n) * fem.jump(v, s)


@fem.integrand
def side_average_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    n = fem.normal(domain, s)
    return fem.measure_ratio(domain, s) * fem.average(u, s) * fem.average(v, s) + wp.dot(
        fem.grad_average(u, s), n) * fem.average(v, s) + fem.jump(u, s) * fem.jump(v, s)


@fem.integrand
def field_energy(s: fem.Sample, f: fem.Field):
    return f(s) * f(s) + wp.length_sq(fem.grad(f, s))


@fem.integrand
def side_trace_energy(s: fem.Sample, domain: fem.Domain, f: fem.Field):
    return fem.average(f, s) * fem.measure(domain, s) + wp.abs(fem.jump(f, s))


@fem.integrand
def edge_tangent_energy(s: fem.Sample, domain: fem.Domain):
    return wp.length(fem.deformation_gradient(domain, s)) + fem.normal(domain, s)[0]


@fem.integrand
def one_form(s: fem.Sample):
    return 1.0


@fem.integrand
def position_expr(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return x[0] * x[0] - 2.0 * x[1] + x[0] * x[1]


@fem.integrand
def vector_expr(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return wp.vec2(x[1] * x[1], x[0] - x[1])


@fem.integrand
def strain_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.ddot(fem.D(u, s), fem.D(v, s)) + fem.div(u, s) * fem.div(v, s)


@fem.integrand
def curl_div_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(fem.curl(u, s), fem.curl(v, s)) + fem.div(u, s) * fem.div(v, s)


@fem.integrand
def tangent_projector_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    t = fem.deformation_gradient(domain, s)
    return wp.abs(t[1]) * u(s) * v(s)


@fem.integrand
def normal_energy(s: fem.Sample, domain: fem.Domain):
    n = fem.normal(domain, s)
    return n[2] * n[2] + wp.abs(n[0])


def grid_positions(res: tuple, lo: tuple, hi: tuple) -> np.ndarray:
    axes = [np.linspace(a, b, r + 1) for a, b, r in zip(lo, hi, res)]
    grid = np.meshgrid(*axes, indexing="ij")
    return np.stack(grid, axis=-1).reshape(-1, len(res))


def make_trimesh(res=(4, 3), dim: int = 2, dtype=None):
    """A trimesh of [0, 1] x [0, 0.75], its vertices moved (and lifted to a surface in 3-d)."""
    pos = grid_positions(res, (0.0, 0.0), (1.0, 0.75))
    pos[:, 0] += 0.04 * np.sin(7.0 * pos[:, 1]) * pos[:, 0] * (1.0 - pos[:, 0])
    pos[:, 1] += 0.03 * np.cos(5.0 * pos[:, 0]) * pos[:, 1] * (0.75 - pos[:, 1])
    tris = wp.array(fem.utils.grid_to_tris(*res), dtype=int)
    if dim == 3:
        z = 0.2 * np.cos(3.0 * pos[:, 0]) * np.sin(4.0 * pos[:, 1])
        return fem.Trimesh3D(tris, wp.array(np.hstack([pos, z[:, None]]), dtype=wp.vec3))
    return fem.Trimesh2D(tris, wp.array(pos, dtype=dtype or wp.vec2))


def make_tetmesh(res=(2, 2, 1)):
    """A tetmesh of [0, 1] x [0, 1] x [0, 0.5], its vertices moved."""
    pos = grid_positions(res, (0.0, 0.0, 0.0), (1.0, 1.0, 0.5))
    pos += 0.03 * np.sin(5.0 * pos[:, [1, 2, 0]]) * np.cos(3.0 * pos)
    tets = wp.array(fem.utils.grid_to_tets(*res), dtype=int)
    return fem.Tetmesh(tets, wp.array(pos, dtype=wp.vec3))


def scalar_forms(geo, degree: int, out: dict) -> dict:
    """Matrices and vectors of a scalar space of `degree` on `geo`."""
    space = fem.make_polynomial_space(geo, degree=degree)
    cells, boundary, sides = fem.Cells(geo), fem.BoundarySides(geo), fem.Sides(geo)
    u, v = fem.make_trial(space, domain=cells), fem.make_test(space, domain=cells)
    bu, bv = fem.make_trial(space, domain=boundary), fem.make_test(space, domain=boundary)
    out["stiffness"] = block_csr(fem.integrate(diffusion_form, fields={"u": u, "v": v},
                                               assembly="generic"))
    out["mass"] = block_csr(fem.integrate(mass_form, fields={"u": u, "v": v},
                                               assembly="generic"))
    out["rhs"] = fem.integrate(source_form, fields={"v": v}).numpy()
    out["walls"] = block_csr(fem.integrate(wall_projector_form, fields={"u": bu, "v": bv},
                                           assembly="nodal"))
    out["boundary_mass"] = block_csr(fem.integrate(boundary_mass_form,
                                                   fields={"u": bu, "v": bv},
                                                   assembly="generic"))
    out["node_positions"] = space.node_positions().numpy()
    field = space.make_field()
    fem.interpolate(position_expr, dest=field)
    out["interpolated"] = field.dof_values.numpy()
    out["energy"] = fem.integrate(field_energy, fields={"f": field}, domain=cells)
    out["trace_energy"] = fem.integrate(side_trace_energy, fields={"f": field.trace()},
                                        domain=sides)
    su, sv = fem.make_trial(space, domain=sides), fem.make_test(space, domain=sides)
    out["side_averages"] = block_csr(fem.integrate(side_average_form,
                                                   fields={"u": su, "v": sv},
                                                   assembly="generic"))
    return out


def flat_forms(prefix: str, parts: dict, out: dict) -> None:
    for key, value in parts.items():
        if isinstance(value, dict):
            flat(f"{prefix}.{key}", value, out)
        else:
            out[f"{prefix}.{key}"] = np.asarray(value)


def trimesh_2d() -> dict:
    geo = make_trimesh()
    out = {"sizes": np.array([geo.cell_count(), geo.side_count(), geo.boundary_side_count(),
                              geo.vertex_count()]),
           "edges": geo.edge_vertex_indices.numpy(), "edge_tris": geo.edge_tri_indices.numpy(),
           "area": fem.integrate(one_form, domain=fem.Cells(geo)),
           "perimeter": fem.integrate(one_form, domain=fem.BoundarySides(geo)),
           "tangents": fem.integrate(edge_tangent_energy, domain=fem.Sides(geo))}
    for degree in (1, 2, 3):
        flat_forms(f"p{degree}", scalar_forms(geo, degree, {}), out)
    vspace = fem.make_polynomial_space(geo, degree=2, dtype=wp.vec2)
    cells = fem.Cells(geo)
    out["strain"] = block_csr(fem.integrate(
        strain_form, fields={"u": fem.make_trial(vspace, domain=cells),
                             "v": fem.make_test(vspace, domain=cells)},
        assembly="generic"))
    vfield = vspace.make_field()
    fem.interpolate(vector_expr, dest=vfield)
    out["vector_interpolated"] = vfield.dof_values.numpy()
    dg = fem.make_polynomial_space(geo, degree=1, discontinuous=True)
    sides = fem.Sides(geo)
    out["dg_jumps"] = block_csr(fem.integrate(
        interior_penalty_form, fields={"u": fem.make_trial(dg, domain=sides),
                                       "v": fem.make_test(dg, domain=sides)},
        assembly="generic"))
    out["dg_positions"] = dg.node_positions().numpy()
    const = fem.make_polynomial_space(geo, degree=0)
    out["p0_mass"] = block_csr(fem.integrate(
        mass_form, fields={"u": fem.make_trial(const, domain=cells),
                           "v": fem.make_test(const, domain=cells)},
        assembly="generic"))
    return out


def trimesh_3d() -> dict:
    geo = make_trimesh(dim=3)
    space = fem.make_polynomial_space(geo, degree=2)
    cells, boundary = fem.Cells(geo), fem.BoundarySides(geo)
    u, v = fem.make_trial(space, domain=cells), fem.make_test(space, domain=cells)
    bu, bv = fem.make_trial(space, domain=boundary), fem.make_test(space, domain=boundary)
    return {"area": fem.integrate(one_form, domain=cells),
            "normals": fem.integrate(normal_energy, domain=cells),
            "stiffness": block_csr(fem.integrate(diffusion_form, fields={"u": u, "v": v},
                                               assembly="generic")),
            "rhs": fem.integrate(source_form, fields={"v": v}).numpy(),
            "tangent_projector": block_csr(fem.integrate(
                tangent_projector_form, fields={"u": bu, "v": bv}, assembly="nodal")),
            "edges": geo.edge_vertex_indices.numpy(),
            "node_positions": space.node_positions().numpy()}


def tetmesh() -> dict:
    geo = make_tetmesh()
    out = {"sizes": np.array([geo.cell_count(), geo.side_count(), geo.boundary_side_count(),
                              geo.vertex_count()]),
           "faces": geo.face_vertex_indices.numpy(), "face_tets": geo.face_tet_indices.numpy(),
           "volume": fem.integrate(one_form, domain=fem.Cells(geo)),
           "surface": fem.integrate(one_form, domain=fem.BoundarySides(geo))}
    for degree in (1, 2):
        flat_forms(f"p{degree}", scalar_forms(geo, degree, {}), out)
    vspace = fem.make_polynomial_space(geo, degree=1, dtype=wp.vec3)
    cells = fem.Cells(geo)
    out["curl_div"] = block_csr(fem.integrate(
        curl_div_form, fields={"u": fem.make_trial(vspace, domain=cells),
                               "v": fem.make_test(vspace, domain=cells)},
        assembly="generic"))
    return out


def run_all() -> dict:
    """Every program, keys prefixed "tri2d.", "tri3d." and "tet."."""
    parts = {}
    for name, program in (("tri2d", trimesh_2d), ("tri3d", trimesh_3d), ("tet", tetmesh)):
        found = {}
        flat_forms(name, program(), found)
        parts.update(found)
    return parts


__all__ = ["flat_forms", "grid_positions", "make_tetmesh", "make_trimesh", "run_all", "scalar_forms"]


