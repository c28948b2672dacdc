"""Programs for tests/test_fem_nodeops.py: Warp's node and element operators
(`fem.node_index`, `fem.node_inner_weight` / `node_outer_weight` and their gradients,
`fem.at_node` of test, trial and discrete fields, `inner` / `outer` / `grad` / `div` of
one node, `fem.to_inner_cell`, `fem.to_outer_cell`, `fem.to_cell_side`,
`fem.element_coordinates`, `fem.element_closest_point`, `fem.environment_index`) on every
geometry kind, written against Warp's `warp.fem` API.

This file runs as is with kernelc; the tests also run a copy whose imports say `warp`
(in a Warp subprocess) and compare what both return. Probes are interpolated at the
points of a quadrature (one row per point); forms are integrated.
"""

import numpy as np

import kernelc as wp
import kernelc.fem as fem
from tests.fem_harness import block_csr
from tests.fem_mesh_programs import make_tetmesh, make_trimesh
from tests.fem_quadhex_programs import make_hexmesh, make_quadmesh

_PROBE_COLUMNS = 22
_NODE_COLUMNS = 12


@fem.integrand
def coordinates_probe(s: fem.Sample, domain: fem.Domain, out: wp.array2d(dtype=float)):
    # coordinates of the sample's own position and of a point off the element
    i = s.qp_index
    x = domain(s)
    own = fem.element_coordinates(domain, s.element_index, x)
    far = fem.element_coordinates(domain, s.element_index, x * 1.3)
    for c in range(3):
        out[i, c] = own[c]
        out[i, 3 + c] = far[c]
    out[i, 10] = float(fem.environment_index(domain, s))


@fem.integrand
def element_probe(s: fem.Sample, domain: fem.Domain, out: wp.array2d(dtype=float)):
    # with the element's closest point to the point off the element
    coordinates_probe(s, domain, out)
    i = s.qp_index
    closest, dist = fem.element_closest_point(domain, s.element_index, domain(s) * 1.3)
    for c in range(3):
        out[i, 6 + c] = closest[c]
    out[i, 9] = dist


@fem.integrand
def side_probe(s: fem.Sample, domain: fem.Domain, out: wp.array2d(dtype=float)):
    element_probe(s, domain, out)
    side_cells_probe(s, domain, out)


@fem.integrand
def edge_probe(s: fem.Sample, domain: fem.Domain, out: wp.array2d(dtype=float)):
    # Warp has no closest points on the (edge) sides of deformed 2-d geometries
    coordinates_probe(s, domain, out)
    side_cells_probe(s, domain, out)


@fem.integrand
def side_cells_probe(s: fem.Sample, domain: fem.Domain, out: wp.array2d(dtype=float)):
    i = s.qp_index
    inner = fem.to_inner_cell(domain, s)
    outer = fem.to_outer_cell(domain, s)
    back_inner = fem.to_cell_side(domain, inner, s.element_index)
    back_outer = fem.to_cell_side(domain, outer, s.element_index)
    out[i, 11] = float(inner.element_index)
    out[i, 12] = float(outer.element_index)
    for c in range(3):
        out[i, 13 + c] = inner.element_coords[c]
        out[i, 16 + c] = outer.element_coords[c]
    out[i, 19] = back_inner.element_coords[0]
    out[i, 20] = back_outer.element_coords[0]
    out[i, 21] = back_outer.element_coords[1]


@fem.integrand
def node_probe(s: fem.Sample, u: fem.Field, nodes: wp.array2d(dtype=int),
               values: wp.array3d(dtype=float)):
    # every node of the sample's element (both cells' on sides), one row per point
    i = s.qp_index
    for k in range(fem.node_count(u, s)):
        nodes[i, k] = fem.node_index(u, s, k)
        g_in = fem.node_inner_weight_gradient(u, s, k)
        g_out = fem.node_outer_weight_gradient(u, s, k)
        grad_in = fem.grad(u, s, k)
        moved = fem.at_node(u, s, k)
        values[i, k, 0] = fem.node_inner_weight(u, s, k)
        values[i, k, 1] = fem.node_outer_weight(u, s, k)
        values[i, k, 2] = g_in[0]
        values[i, k, 3] = wp.length_sq(g_in)
        values[i, k, 4] = g_out[1]
        values[i, k, 5] = fem.inner(u, s, k)
        values[i, k, 6] = fem.outer(u, s, k)
        values[i, k, 7] = grad_in[0]
        values[i, k, 8] = wp.length_sq(fem.grad_outer(u, s, k))
        values[i, k, 9] = moved.element_coords[0]
        values[i, k, 10] = moved.element_coords[1]
        values[i, k, 11] = float(moved.test_dof[0])


@fem.integrand
def vector_node_probe(s: fem.Sample, w: fem.Field, values: wp.array3d(dtype=float)):
    i = s.qp_index
    for k in range(fem.node_count(w, s)):
        g = fem.grad(w, s, k)
        values[i, k, 0] = fem.div(w, s, k)
        values[i, k, 1] = fem.div_outer(w, s, k)
        values[i, k, 2] = g[0, 1]
        values[i, k, 3] = g[1, 0]
        values[i, k, 4] = fem.inner(w, s, k)[1]
        values[i, k, 5] = float(fem.node_partition_index(w, fem.node_index(w, s, k)))


@fem.integrand
def dof_node_form(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    # test and trial node operators on cells: the sample moved to the other field's node,
    # products of node weights and of their gradients
    moved = fem.at_node(u, s)
    return (v(moved) * u(s) + 0.5 * u(fem.at_node(v, s))
            + fem.node_inner_weight(u, s) * fem.node_outer_weight(v, s)
            + 0.25 * wp.dot(fem.node_inner_weight_gradient(u, s),
                            fem.node_outer_weight_gradient(v, s))
            + 0.01 * float(fem.node_index(u, s) - fem.node_index(v, s))
            + 0.1 * moved.element_coords[0] * float(moved.trial_dof[0] + 1))


@fem.integrand
def dof_side_form(s: fem.Sample, domain: fem.Domain, v: fem.Field):
    # test node operators on sides (trace nodes of both cells)
    moved = fem.at_node(v, s)
    return (float(fem.node_index(v, s) % 5) * fem.node_inner_weight(v, s)
            + 2.0 * fem.node_outer_weight(v, s)
            + 0.1 * wp.length_sq(fem.node_inner_weight_gradient(v, s))
            + 0.2 * wp.length_sq(fem.node_outer_weight_gradient(v, s))
            + wp.max(moved.element_coords[0], -1.0) + wp.max(moved.element_coords[1], -1.0))


def _field(space, seed: int):
    field = space.make_field()
    values = np.random.default_rng(seed).uniform(-1.0, 1.0, size=field.dof_values.numpy().shape)
    field.dof_values = wp.array(values.astype(np.float32), dtype=space.dtype)
    return field


def _probe(domain, field, order: int, space, probe=None) -> dict:
    quadrature = fem.RegularQuadrature(domain, order=order)
    n = quadrature.total_point_count()
    out = wp.zeros((n, _PROBE_COLUMNS), dtype=float)
    if probe is None:
        probe = side_probe if domain.element_kind == fem.ElementKind.SIDE else element_probe
    fem.interpolate(probe, at=quadrature, values={"out": out})
    # nodes per cell of the (cell) space; the trace sees both cells' on sides
    count = space.topology.MAX_NODES_PER_ELEMENT
    count *= 2 if domain.element_kind == fem.ElementKind.SIDE else 1
    nodes = wp.zeros((n, count), dtype=int)
    values = wp.zeros((n, count, _NODE_COLUMNS), dtype=float)
    fem.interpolate(node_probe, at=quadrature, fields={"u": field},
                    values={"nodes": nodes, "values": values})
    return {"probe": out.numpy(), "nodes": nodes.numpy(), "node_values": values.numpy()}


def geometry_ops(geo, degree: int = 2, order: int = 2) -> dict:
    """Probes on cells and sides, and the test / trial node forms, of one geometry."""
    space = fem.make_polynomial_space(geo, degree=degree)
    field = _field(space, 3)
    cells, sides = fem.Cells(geo), fem.Sides(geo)
    out = {f"cells.{k}": v for k, v in _probe(cells, field, order, space).items()}
    # Warp has no closest points on the sides of deformed 2-d geometries
    edges = geo.base is not geo and geo.dimension == 2
    probe = edge_probe if edges else None
    out.update({f"sides.{k}": v for k, v in _probe(sides, field.trace(), order, space,
                                                    probe).items()})
    u, v = fem.make_trial(space, domain=cells), fem.make_test(space, domain=cells)
    matrix = fem.integrate(dof_node_form, fields={"u": u, "v": v}, assembly="generic")
    out.update({f"dof.{k}": x for k, x in block_csr(matrix).items()})
    side_test = fem.make_test(space, domain=sides)
    out["dof_side"] = fem.integrate(dof_side_form, fields={"v": side_test}).numpy()
    return out


def _grid2d():
    return fem.Grid2D(res=wp.vec2i(3, 2), bounds_lo=wp.vec2(0.1, -0.2),
                      bounds_hi=wp.vec2(1.3, 0.5))


def grid_extras() -> dict:
    """Degree-0 traces (their node at each side's centre) and a vector field's single-node
    divergences and gradients."""
    geo = _grid2d()
    p0_space = fem.make_polynomial_space(geo, degree=0)
    p0 = _field(p0_space, 5)
    out = {f"p0.{k}": v for k, v in _probe(fem.Sides(geo), p0.trace(), 1, p0_space).items()}
    vec_space = fem.make_polynomial_space(geo, degree=1, dtype=wp.vec2)
    w = _field(vec_space, 6)
    for name, domain, field in (("cells", fem.Cells(geo), w), ("sides", fem.Sides(geo),
                                                                w.trace())):
        quadrature = fem.RegularQuadrature(domain, order=1)
        count = 4 * (2 if name == "sides" else 1)
        values = wp.zeros((quadrature.total_point_count(), count, 6), dtype=float)
        fem.interpolate(vector_node_probe, at=quadrature, fields={"w": field},
                        values={"values": values})
        out[f"vec.{name}"] = values.numpy()
    return out


def _deformed_grid():
    base = _grid2d()
    space = fem.make_polynomial_space(base, degree=2, dtype=wp.vec2)
    x = space.node_positions().numpy()
    disp = np.stack([0.05 * np.sin(3.0 * x[:, 1]), 0.04 * np.cos(2.0 * x[:, 0]) * x[:, 0]], 1)
    field = space.make_field()
    field.dof_values = wp.array(disp.astype(np.float32), dtype=wp.vec2)
    return field.make_deformed_geometry(relative=True)


def _deformed_tetmesh():
    base = make_tetmesh()
    space = fem.make_polynomial_space(base, degree=1, dtype=wp.vec3)
    x = space.node_positions().numpy()
    disp = 0.03 * np.sin(4.0 * x[:, [1, 2, 0]])
    field = space.make_field()
    field.dof_values = wp.array(disp.astype(np.float32), dtype=wp.vec3)
    return field.make_deformed_geometry(relative=True)


# name: (geometry maker, space degree)
GEOMETRIES = {
    "grid2d": (_grid2d, 2),
    "grid3d": (lambda: fem.Grid3D(res=wp.vec3i(2, 2, 1), bounds_lo=wp.vec3(0.0, -0.1, 0.2),
                                  bounds_hi=wp.vec3(1.0, 0.7, 0.6)), 1),
    "trimesh2d": (lambda: make_trimesh(res=(3, 2)), 2),
    "trimesh3d": (lambda: make_trimesh(res=(3, 2), dim=3), 2),
    "tetmesh": (make_tetmesh, 2),
    "quadmesh2d": (lambda: make_quadmesh(res=(3, 2)), 2),
    "quadmesh3d": (lambda: make_quadmesh(res=(3, 2), dim=3), 1),
    "hexmesh": (make_hexmesh, 1),
    "hexmesh_parallelepiped": (lambda: make_hexmesh(sheared=True), 1),
    "deformed_grid2d": (_deformed_grid, 1),
    "deformed_tetmesh": (_deformed_tetmesh, 1),
}


def run_geometries(names) -> dict:
    out = {}
    for name in names:
        make, degree = GEOMETRIES[name]
        out.update({f"{name}.{k}": v for k, v in geometry_ops(make(), degree).items()})
    return out


def run_all() -> dict:
    return {**run_geometries(GEOMETRIES), **{f"extras.{k}": v
                                               for k, v in grid_extras().items()}}


__all__ = ["GEOMETRIES", "run_all", "run_geometries"]
