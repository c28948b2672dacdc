"""Finite-element programs on Nedelec (H(curl)) and Raviart-Thomas (H(div)) spaces for
tests/test_fem_nedelec_rt.py, written against Warp's `warp.fem` API.

This file runs as is with kernelc; the tests also run a copy whose imports say `warp`
(in a Warp subprocess) and compare what both return: node numbers, sparsity and values of
curl / divergence / mass / side forms, nodal boundary projectors, interpolated analytic
fields (their dofs, on cells and on boundary sides) and the integrals of discrete fields,
on grids and on meshes whose vertices are moved off a grid (or whose cells are listed from
other vertices, so that edges and faces meet their cells in every orientation).
"""

import numpy as np

import kernelc as wp
import kernelc.fem as fem
from tests.fem_harness import block_csr
from tests.fem_mesh_programs import make_tetmesh, make_trimesh
from tests.fem_quadhex_programs import make_hexmesh, make_quadmesh

BASES = {"N1": fem.ElementBasis.NEDELEC_FIRST_KIND, "RT": fem.ElementBasis.RAVIART_THOMAS}


@fem.integrand
def curl_grad_form_3d(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(fem.curl(u, s), fem.curl(v, s)) + wp.ddot(fem.grad(u, s), fem.grad(v, s))


@fem.integrand
def curl_grad_form_2d(s: fem.Sample, u: fem.Field, v: fem.Field):
    return fem.curl(u, s) * fem.curl(v, s) + wp.ddot(fem.grad(u, s), fem.grad(v, s))


@fem.integrand
def div_mass_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return fem.div(u, s) * fem.div(v, s) + 0.5 * wp.dot(u(s), v(s))


@fem.integrand
def mass_form(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(u(s), v(s))


@fem.integrand
def side_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    n = fem.normal(domain, s)
    return wp.dot(fem.jump(u, s), n) * wp.dot(fem.average(v, s), n) + wp.dot(u(s), v(s))


@fem.integrand
def field_3d(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return wp.vec3(wp.sin(2.0 * x[1]) + x[2], x[0] * x[2] - 0.3, wp.cos(x[0] + x[1]))


@fem.integrand
def field_2d(s: fem.Sample, domain: fem.Domain):
    x = domain(s)
    return wp.vec2(wp.sin(2.0 * x[1]) + x[0], x[0] * x[1] - 0.3)


@fem.integrand
def source_3d(s: fem.Sample, domain: fem.Domain, v: fem.Field):
    x = domain(s)
    return wp.dot(wp.vec3(x[1], 1.0 - x[0], x[2] * x[0]), v(s))


@fem.integrand
def source_2d(s: fem.Sample, domain: fem.Domain, v: fem.Field):
    x = domain(s)
    return wp.dot(wp.vec2(x[1], 1.0 - x[0]), v(s))


@fem.integrand
def energy_3d(s: fem.Sample, f: fem.Field):
    return wp.length_sq(f(s)) + wp.length_sq(fem.curl(f, s)) + fem.div(f, s) * fem.div(f, s)


@fem.integrand
def energy_2d(s: fem.Sample, f: fem.Field):
    return wp.length_sq(f(s)) + fem.curl(f, s) * fem.curl(f, s) + fem.div(f, s) * fem.div(f, s)


@fem.integrand
def inflow(s: fem.Sample, domain: fem.Domain):
    return -fem.normal(domain, s) * (1.0 + domain(s)[0])


@fem.integrand
def side_energy(s: fem.Sample, domain: fem.Domain, f: fem.Field):
    return wp.dot(f(s), fem.normal(domain, s)) + wp.length_sq(fem.jump(f, s))


def geometries() -> dict:
    """The geometries the programs run on, by name, with the bases run on each. Raviart-
    Thomas fields on quadrilaterals listed from other vertices are not conforming in Warp
    (kernelc's are: see docs/fem.md), so they run on a mesh whose cells turn alike."""
    both = tuple(BASES)
    return {
        "grid3": (fem.Grid3D(res=wp.vec3i(2, 3, 2), bounds_lo=wp.vec3(0.0),
                             bounds_hi=wp.vec3(1.0, 0.7, 0.5)), both),
        "tet": (make_tetmesh(res=(2, 2, 2)), both),
        "hex": (make_hexmesh(res=(2, 2, 2), scrambled=True), both),
        "hexp": (make_hexmesh(res=(2, 2, 2), sheared=True), both),
        "grid2": (fem.Grid2D(res=wp.vec2i(3, 2), bounds_lo=wp.vec2(0.0),
                             bounds_hi=wp.vec2(1.0, 0.7)), both),
        "tri": (make_trimesh(res=(3, 3)), both),
        "quad": (make_quadmesh(res=(3, 3)), ("RT",)),
        "quads": (make_quadmesh(res=(3, 3), scrambled=True), ("N1",)),
    }


def _matrix(out: dict, prefix: str, matrix) -> None:
    out.update({f"{prefix}.{k}": v for k, v in block_csr(matrix).items()})


def space_programs(geo, basis, out: dict, prefix: str) -> None:
    """Topology, forms and interpolation of the degree-1 `basis` space on `geo`."""
    three = geo.dimension == 3
    space = fem.make_polynomial_space(geo, degree=1, element_basis=basis)
    out[f"{prefix}.node_count"] = np.array(space.node_count())
    out[f"{prefix}.element_nodes"] = space.topology.element_node_indices().numpy()
    out[f"{prefix}.node_positions"] = space.node_positions().numpy()
    u, v = fem.make_trial(space), fem.make_test(space)
    curl_form = curl_grad_form_3d if three else curl_grad_form_2d
    _matrix(out, f"{prefix}.curl", fem.integrate(curl_form, fields={"u": u, "v": v},
                                                 assembly="generic"))
    _matrix(out, f"{prefix}.div", fem.integrate(div_mass_form, fields={"u": u, "v": v},
                                                assembly="generic"))
    out[f"{prefix}.rhs"] = fem.integrate(source_3d if three else source_2d,
                                         fields={"v": v}).numpy()
    boundary, sides = fem.BoundarySides(geo), fem.Sides(geo)
    _matrix(out, f"{prefix}.nodal", fem.integrate(
        mass_form, fields={"u": fem.make_trial(space, domain=boundary),
                           "v": fem.make_test(space, domain=boundary)}, assembly="nodal"))
    _matrix(out, f"{prefix}.sides", fem.integrate(
        side_form, fields={"u": fem.make_trial(space, domain=sides),
                           "v": fem.make_test(space, domain=sides)}, assembly="generic"))
    field = space.make_field()
    fem.interpolate(field_3d if three else field_2d, dest=field)
    out[f"{prefix}.interpolated"] = field.dof_values.numpy()
    out[f"{prefix}.energy"] = np.array(fem.integrate(energy_3d if three else energy_2d,
                                                     fields={"f": field},
                                                     domain=fem.Cells(geo)))
    out[f"{prefix}.side_energy"] = np.array(fem.integrate(
        side_energy, fields={"f": field.trace()}, domain=sides))
    inflow_field = space.make_field()
    fem.interpolate(inflow, dest=inflow_field, at=boundary)
    out[f"{prefix}.boundary_interpolated"] = inflow_field.dof_values.numpy()


def run_all() -> dict:
    """Every program's results, by key."""
    out = {}
    for name, (geo, bases) in geometries().items():
        for basis_name in bases:
            space_programs(geo, BASES[basis_name], out, f"{name}.{basis_name}")
    return out
