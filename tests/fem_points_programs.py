"""Programs for tests/test_fem_nodeops.py: `fem.ExplicitQuadrature` (rows per geometry
element and per domain element, on cells and on sides) in `integrate` and
`interpolate`, `fem.interpolate` at the particles of a `PicQuadrature`, and into an array at
the nodes of a `dest_space`; `fem.element_index`, `fem.element_partition_index` and
`fem.partition_lookup` on partitions and subdomains (with particles binned on partitions),
written against Warp's `warp.fem` API (the tests run a copy
whose imports say `warp` in a Warp subprocess and compare what both return).
"""

import numpy as np

import kernelc as wp
import kernelc.fem as fem
from tests.fem_harness import block_csr
from tests.fem_mesh_programs import grid_positions, make_trimesh


@fem.integrand
def weighted_mass(s: fem.Sample, domain: fem.Domain, u: fem.Field, v: fem.Field):
    return (1.0 + domain(s)[0]) * u(s) * v(s) + 0.1 * wp.dot(fem.grad(u, s), fem.grad(v, s))


@fem.integrand
def field_source(s: fem.Sample, domain: fem.Domain, f: fem.Field, v: fem.Field):
    return (f(s) + domain(s)[1]) * v(s)


@fem.integrand
def field_energy(s: fem.Sample, f: fem.Field):
    return f(s) * f(s) + 0.5 * wp.length_sq(fem.grad(f, s))


@fem.integrand
def point_record(s: fem.Sample, domain: fem.Domain, f: fem.Field, out: wp.array2d(dtype=float)):
    # what a point sees: its field value, weight, element and position
    i = s.qp_index
    x = domain(s)
    out[i, 0] = f(s)
    out[i, 1] = s.qp_weight
    out[i, 2] = float(s.element_index)
    out[i, 3] = x[0]
    out[i, 4] = x[1]
    out[i, 5] = fem.measure(domain, s)


@fem.integrand
def point_value(s: fem.Sample, domain: fem.Domain, f: fem.Field):
    return f(s) * domain(s)[0] + s.qp_weight


@fem.integrand
def node_value(s: fem.Sample, domain: fem.Domain, f: fem.Field):
    x = domain(s)
    return f(s) + x[0] * x[1]


def _field(space, seed: int):
    field = space.make_field()
    values = np.random.default_rng(seed).uniform(-1.0, 1.0, size=field.dof_values.numpy().shape)
    field.dof_values = wp.array(values.astype(np.float32), dtype=space.dtype)
    return field


def _explicit_points(rows: int, per_row: int, dim: int, seed: int, simplex: bool):
    rng = np.random.default_rng(seed)
    coords = np.zeros((rows, per_row, 3))
    coords[..., :dim] = rng.uniform(0.05, 0.45 if simplex else 0.95, size=(rows, per_row, dim))
    if simplex:  # barycentric coordinates of points inside the triangle
        coords[..., 2] = 1.0 - coords[..., 0] - coords[..., 1]
        coords = coords[..., [2, 0, 1]]
    weights = rng.uniform(0.1, 1.0, size=(rows, per_row))
    return (wp.array(coords.astype(np.float32), dtype=wp.vec3),
            wp.array(weights.astype(np.float32), dtype=float))


def _forms(domain, quadrature, space, f, prefix: str, out: dict) -> None:
    u = fem.make_trial(space, domain=domain)
    v = fem.make_test(space, domain=domain)
    matrix = fem.integrate(weighted_mass, quadrature=quadrature, fields={"u": u, "v": v},
                           assembly="generic")
    out.update({f"{prefix}.mass.{k}": x for k, x in block_csr(matrix).items()})
    out[f"{prefix}.rhs"] = fem.integrate(field_source, quadrature=quadrature,
                                         fields={"f": f, "v": v}).numpy()
    out[f"{prefix}.energy"] = np.array(fem.integrate(field_energy, quadrature=quadrature,
                                                     fields={"f": f}))
    n = quadrature.total_point_count()
    record = wp.zeros((n, 6), dtype=float)
    fem.interpolate(point_record, at=quadrature, fields={"f": f}, values={"out": record})
    values = wp.zeros(n, dtype=float)
    fem.interpolate(point_value, dest=values, at=quadrature, fields={"f": f})
    out[f"{prefix}.record"] = record.numpy()
    out[f"{prefix}.values"] = values.numpy()


def explicit_quadratures() -> dict:
    out = {}
    mesh = make_trimesh(res=(3, 2))
    space = fem.make_polynomial_space(mesh, degree=2)
    f = _field(space, 11)
    cells = fem.Cells(mesh)
    points, weights = _explicit_points(mesh.cell_count(), 4, 2, 1, True)
    _forms(cells, fem.ExplicitQuadrature(cells, points, weights), space, f, "tri_cells", out)

    # rows per domain element: a subdomain of the cells
    mask = np.zeros(mesh.cell_count(), dtype=np.int32)
    mask[[0, 3, 4, 7, 9]] = 1
    some = fem.Subdomain(cells, element_mask=wp.array(mask, dtype=int))
    points, weights = _explicit_points(some.element_count(), 3, 2, 2, True)
    _forms(some, fem.ExplicitQuadrature(some, points, weights), space, f, "tri_subdomain", out)

    grid = fem.Grid2D(res=wp.vec2i(3, 2), bounds_lo=wp.vec2(0.1, -0.2),
                      bounds_hi=wp.vec2(1.3, 0.5))
    grid_space = fem.make_polynomial_space(grid, degree=2)
    g = _field(grid_space, 12)
    sides = fem.Sides(grid)
    points, weights = _explicit_points(grid.side_count(), 2, 1, 3, False)
    quadrature = fem.ExplicitQuadrature(sides, points, weights)
    _forms(sides, quadrature, grid_space, g.trace(), "grid_sides", out)
    return out


def pic_interpolation() -> dict:
    out = {}
    grid = fem.Grid2D(res=wp.vec2i(4, 3), bounds_hi=wp.vec2(1.0, 0.75))
    space = fem.make_polynomial_space(grid, degree=2)
    f = _field(space, 21)
    rng = np.random.default_rng(4)
    # a few particles outside the grid, found in their closest cell
    positions = rng.uniform(-0.05, 1.05, size=(40, 2)) * np.array([1.0, 0.75])
    measures = rng.uniform(0.001, 0.01, size=40)
    cells = fem.Cells(grid)
    pic = fem.PicQuadrature(cells, wp.array(positions.astype(np.float32), dtype=wp.vec2),
                            measures=wp.array(measures.astype(np.float32), dtype=float))
    record = wp.zeros((pic.total_point_count(), 6), dtype=float)
    fem.interpolate(point_record, at=pic, fields={"f": f}, values={"out": record})
    values = wp.zeros(pic.total_point_count(), dtype=float)
    fem.interpolate(point_value, dest=values, at=pic, fields={"f": f})
    out["grid.record"], out["grid.values"] = record.numpy(), values.numpy()

    mesh = make_trimesh(res=(3, 2))
    mesh_space = fem.make_polynomial_space(mesh, degree=1)
    g = _field(mesh_space, 22)
    cell_indices = rng.integers(0, mesh.cell_count(), size=30)
    bary = rng.dirichlet(np.ones(3), size=30)
    pic = fem.PicQuadrature(fem.Cells(mesh), (wp.array(cell_indices.astype(np.int32), dtype=int),
                                              wp.array(bary.astype(np.float32), dtype=wp.vec3)))
    record = wp.zeros((pic.total_point_count(), 6), dtype=float)
    fem.interpolate(point_record, at=pic, fields={"f": g}, values={"out": record})
    out["tri.record"] = record.numpy()
    return out


def dest_space_interpolation() -> dict:
    out = {}
    grid = fem.Grid2D(res=wp.vec2i(3, 2), bounds_lo=wp.vec2(0.1, -0.2),
                      bounds_hi=wp.vec2(1.3, 0.5))
    source = _field(fem.make_polynomial_space(grid, degree=1), 31)
    dest_space = fem.make_polynomial_space(grid, degree=2)
    values = wp.zeros(dest_space.node_count(), dtype=float)
    fem.interpolate(node_value, dest=values, dest_space=dest_space, fields={"f": source})
    out["all"] = values.numpy()
    partial = wp.zeros(dest_space.node_count(), dtype=float)
    mask = wp.array(np.array([1, 0, 1, 1, 0, 0], dtype=np.int32), dtype=int)
    some = fem.Subdomain(fem.Cells(grid), element_mask=mask)
    fem.interpolate(node_value, dest=partial, at=some, dest_space=dest_space,
                    fields={"f": source}, reduction="mean")
    out["subdomain"] = partial.numpy()
    return out


@fem.integrand
def index_probe(s: fem.Sample, domain: fem.Domain, out: wp.array2d(dtype=int)):
    # one point per domain element: its index in the domain is the point's
    out[s.qp_index, 0] = fem.element_index(domain, s.qp_index)
    out[s.qp_index, 1] = s.element_index


@fem.integrand
def partition_probe(s: fem.Sample, domain: fem.Domain, points: wp.array(dtype=wp.vec2),
                    table: wp.array(dtype=int), cells: wp.array2d(dtype=int),
                    coords: wp.array2d(dtype=wp.vec3)):
    i = s.qp_index
    if i == 0:
        for c in range(table.shape[0]):
            table[c] = fem.element_partition_index(domain, c)
    if i < points.shape[0]:
        near = fem.partition_lookup(domain, points[i])
        far = fem.partition_lookup(domain, points[i], 0.3)
        cells[i, 0] = near.element_index
        cells[i, 1] = far.element_index
        coords[i, 0] = near.element_coords
        coords[i, 1] = far.element_coords


def _indices(domain) -> np.ndarray:
    out = wp.zeros((domain.element_count(), 2), dtype=int)
    fem.interpolate(index_probe, at=domain, values={"out": out})
    return out.numpy()


def _partition_lookups(geo, partition, points: np.ndarray, prefix: str, out: dict) -> None:
    cells = fem.Cells(partition)
    n = min(len(points), cells.element_count())
    table = wp.zeros(geo.cell_count(), dtype=int)
    found = wp.zeros((n, 2), dtype=int)
    coords = wp.zeros((n, 2), dtype=wp.vec3)
    fem.interpolate(partition_probe, at=cells, values={
        "points": wp.array(points[:n].astype(np.float32), dtype=wp.vec2), "table": table,
        "cells": found, "coords": coords})
    out[f"{prefix}.table"], out[f"{prefix}.cells"] = table.numpy(), found.numpy()
    out[f"{prefix}.coords"] = coords.numpy()
    # particles binned in the partition's cells, those nearby included
    f = _field(fem.make_polynomial_space(geo, degree=1), 41)
    pic = fem.PicQuadrature(cells, wp.array(points.astype(np.float32), dtype=wp.vec2))
    record = wp.zeros((pic.total_point_count(), 6), dtype=float)
    fem.interpolate(point_record, at=pic, fields={"f": f}, values={"out": record})
    out[f"{prefix}.pic_offsets"] = pic.cell_particle_offsets.numpy()
    out[f"{prefix}.pic_record"] = record.numpy()


def domain_indices() -> dict:
    out = {}
    grid = fem.Grid2D(res=wp.vec2i(6, 4), bounds_hi=wp.vec2(1.2, 0.8))
    partition = fem.LinearGeometryPartition(grid, 1, 3)
    out["grid.boundary"] = _indices(fem.BoundarySides(grid))
    out["grid.partition_cells"] = _indices(fem.Cells(partition))
    out["grid.partition_sides"] = _indices(fem.Sides(partition))
    out["grid.frontier"] = _indices(fem.FrontierSides(partition))
    mask = np.zeros(grid.cell_count(), dtype=np.int32)
    mask[[1, 5, 6, 13, 20]] = 1
    out["grid.subdomain"] = _indices(fem.Subdomain(fem.Cells(grid),
                                                   element_mask=wp.array(mask, dtype=int)))
    rng = np.random.default_rng(8)
    points = rng.uniform(-0.05, 1.0, size=(30, 2)) * np.array([1.2, 0.8])
    _partition_lookups(grid, partition, points, "grid", out)

    tris = wp.array(fem.utils.grid_to_tris(4, 3), dtype=int)
    vertices = grid_positions((4, 3), (0.0, 0.0), (1.0, 0.75))
    vertices += 0.03 * np.sin(5.0 * vertices[:, ::-1])
    mesh = fem.Trimesh2D(tris, wp.array(vertices, dtype=wp.vec2), build_bvh=True)
    mesh_mask = np.zeros(mesh.cell_count(), dtype=np.int32)
    mesh_mask[[0, 1, 2, 3, 8, 9, 15]] = 1
    mesh_partition = fem.ExplicitGeometryPartition(mesh, wp.array(mesh_mask, dtype=int))
    out["mesh.partition_cells"] = _indices(fem.Cells(mesh_partition))
    mesh_points = rng.uniform(0.0, 1.0, size=(7, 2)) * np.array([1.0, 0.75])
    _partition_lookups(mesh, mesh_partition, mesh_points, "mesh", out)
    return out


def run_all() -> dict:
    return {**{f"explicit.{k}": v for k, v in explicit_quadratures().items()},
            **{f"pic.{k}": v for k, v in pic_interpolation().items()},
            **{f"dest_space.{k}": v for k, v in dest_space_interpolation().items()},
            **{f"indices.{k}": v for k, v in domain_indices().items()}}


__all__ = ["run_all"]
