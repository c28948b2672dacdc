"""B-spline (`ElementBasis.BSPLINE`) programs for tests/test_fem_bspline.py, written against
Warp's `warp.fem` API.

This file runs as is with kernelc; the test also runs a copy whose imports say `warp` (in
a Warp subprocess) and compares what both return: cell node tables, node positions, the
dofs of an affine field interpolated at the nodes (all of them, or those of the boundary
sides), stiffness + mass matrices, side forms, nodal linear forms and boundary projectors,
on a `Grid2D`, a `Grid3D`, a sparse `Nanogrid` (holes, negative voxels, translated) and a
rebuildable `Nanogrid` before and after a rebuild. Warp's rebuildable B-spline spaces
count their nodes' capacity; the programs keep the nodes the cells use (numbered 0 to
n - 1 in both).
"""

import numpy as np

import kernelc as wp
import kernelc.fem as fem
from tests.fem_harness import block_csr, flat

BSPLINE = fem.ElementBasis.BSPLINE


@wp.func
def affine_2d(x: wp.vec2):
    return 2.0 + x[0] - 0.5 * x[1]


@wp.func
def affine_3d(x: wp.vec3):
    return 2.0 + x[0] - 0.5 * x[1] + 0.25 * x[2]


@fem.integrand
def affine_value_2d(s: fem.Sample, domain: fem.Domain):
    return affine_2d(domain(s))


@fem.integrand
def affine_value_3d(s: fem.Sample, domain: fem.Domain):
    return affine_3d(domain(s))


@fem.integrand
def stiffness_mass(s: fem.Sample, u: fem.Field, v: fem.Field):
    return wp.dot(fem.grad(u, s), fem.grad(v, s)) + 0.5 * u(s) * v(s)


@fem.integrand
def side_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    return wp.dot(fem.grad_average(u, s), fem.normal(domain, s)) * fem.jump(v, s) + u(s) * v(s)


@fem.integrand
def mass(s: fem.Sample, u: fem.Field, v: fem.Field):
    return u(s) * v(s)


@fem.integrand
def source_2d(s: fem.Sample, domain: fem.Domain, v: fem.Field):
    x = domain(s)
    return (1.0 + x[0] * x[1]) * v(s)


def _space_parts(space, geo, value, matrices: bool) -> dict:
    field = space.make_field()
    fem.interpolate(value, dest=field)
    nodes = space.topology.element_node_indices().numpy()
    if isinstance(geo, fem.Nanogrid):  # Warp's rebuildable grids count a capacity of cells
        nodes = nodes[:geo.cell_grid.get_active_stats().voxel_count]
    used = int(nodes.max()) + 1  # and of nodes (the cells use nodes 0 to used - 1)
    parts = {"nodes": nodes, "positions": space.node_positions().numpy()[:used],
             "dofs": field.dof_values.numpy()[:used]}
    if matrices:
        matrix = fem.integrate(stiffness_mass, fields={"u": fem.make_trial(space),
                                                       "v": fem.make_test(space)},
                               output_dtype=float)
        parts.update({f"stiffness.{k}": v for k, v in block_csr(matrix).items()})
    return parts


def grid_2d() -> dict:
    """Degree 2 on a 3 x 2 grid off the origin: also a side form, a nodal linear form, and
    interpolation and a nodal projector on the boundary sides."""
    geo = fem.Grid2D(res=wp.vec2i(3, 2), bounds_lo=wp.vec2(-0.5, 0.25),
                     bounds_hi=wp.vec2(1.0, 1.25))
    out = {}
    space = fem.make_polynomial_space(geo, degree=2, element_basis=BSPLINE)
    flat("g2.b2", _space_parts(space, geo, affine_value_2d, True), out)
    sides = fem.Sides(geo)
    matrix = fem.integrate(side_form, fields={"u": fem.make_trial(space, domain=sides),
                                              "v": fem.make_test(space, domain=sides)},
                           output_dtype=float)
    flat("g2.b2.side", block_csr(matrix), out)
    nodal = fem.integrate(source_2d, fields={"v": fem.make_test(space)}, assembly="nodal",
                          output_dtype=float)
    out["g2.b2.nodal"] = nodal.numpy()
    boundary = fem.BoundarySides(geo)
    field = space.make_field()  # only the nodes of the boundary sides are set
    fem.interpolate(affine_value_2d, dest=fem.make_restriction(field, domain=boundary))
    out["g2.b2.boundary_dofs"] = field.dof_values.numpy()
    projector = fem.integrate(mass, fields={"u": fem.make_trial(space, domain=boundary),
                                            "v": fem.make_test(space, domain=boundary)},
                              assembly="nodal", output_dtype=float)
    flat("g2.b2.projector", block_csr(projector), out)
    return out


def grid_3d() -> dict:
    """Degree 3 on a 2 x 3 x 2 grid of boxes."""
    geo = fem.Grid3D(res=wp.vec3i(2, 3, 2), bounds_lo=wp.vec3(-0.5, 0.0, 0.2),
                     bounds_hi=wp.vec3(0.5, 1.5, 0.7))
    out = {}
    space = fem.make_polynomial_space(geo, degree=3, element_basis=BSPLINE)
    flat("g3.b3", _space_parts(space, geo, affine_value_3d, True), out)
    return out


def nanogrid() -> dict:
    voxels = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [-1, 0, 2], [5, -3, 1]],
                      dtype=np.int32)
    volume = wp.Volume.allocate_by_voxels(wp.array(voxels, dtype=wp.vec3i), voxel_size=0.5,
                                          translation=(0.1, -0.2, 0.3))
    geo = fem.Nanogrid(volume)
    space = fem.make_polynomial_space(geo, degree=2, element_basis=BSPLINE)
    out = {}
    flat("nano.b2", _space_parts(space, geo, affine_value_3d, True), out)
    return out


def rebuilt_nanogrid() -> dict:
    """Degree 2 (padded nodes) and 1 (the vertex grid) on a rebuildable grid, then after
    the grid and the spaces' topologies were rebuilt from other voxels."""
    start = np.array([[0, 0, 0], [1, 0, 0], [0, 2, 0]], dtype=np.int32)
    volume = wp.Volume.allocate_by_voxels(wp.array(start, dtype=wp.vec3i), voxel_size=0.5,
                                          rebuildable=True, max_active_voxels=64)
    geo = fem.Nanogrid(volume, rebuildable=True)
    spaces = {d: fem.make_polynomial_space(geo, degree=d, element_basis=BSPLINE) for d in (1, 2)}
    out = {}
    for degree, space in spaces.items():
        flat(f"rb0.b{degree}", _space_parts(space, geo, affine_value_3d, False), out)
    moved = np.array([[3, 0, 0], [1, 1, 0], [0, 2, 0], [-2, 0, 1]], dtype=np.int32)
    geo.rebuild(wp.array(moved, dtype=wp.vec3i))
    for degree, space in spaces.items():
        space.topology.rebuild()
        flat(f"rb1.b{degree}", _space_parts(space, geo, affine_value_3d, False), out)
    return out


def run_all() -> dict:
    """Every program's results in one flat dict."""
    out = {}
    for program in (grid_2d, grid_3d, nanogrid, rebuilt_nanogrid):
        out.update(program())
    return out
