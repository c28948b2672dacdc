"""Quadrilateral meshes in the plane (`Quadmesh2D`) or in space (`Quadmesh3D`), Warp's
`warp.fem.Quadmesh2D` / `Quadmesh3D`.

A cell's vertices go around it counter-clockwise: vertices 0, 1, 2, 3 sit at the corners
(0, 0), (1, 0), (1, 1), (0, 1) of the reference square, and a point of the cell is the
bilinear blend of its vertices. Sides are the edges, local edge k of a cell joining its
vertices k and k + 1 (mod 4), numbered as Warp numbers them (`mesh.py`); a side runs from
its vertex 0 to its vertex 1 with coordinate (t, 0, 0) and is oriented so that its normal
(the edge direction turned clockwise in the plane; crossed with the inner cell's normal in
space) points out of its inner cell.
"""

from functools import cache
from types import SimpleNamespace
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.lookup import tensor_cell_lookup
from kernelc.fem.mesh import Mesh, mesh_struct, orient_edges, side_cell_funcs
from kernelc.fem.mesh2d import cell_gradient_funcs, edge_side_funcs
from kernelc.fem.types import OUTSIDE, coords_type, vec_type
from kernelc.frontend.decorators import Func

QUAD_EDGES = [(0, 1), (1, 2), (2, 3), (3, 0)]
QUAD_CORNERS = np.array([(0, 0), (1, 0), (1, 1), (0, 1)])


def bilinear_weights(coords: np.ndarray) -> np.ndarray:
    """(points, 4) weights of a quadrilateral's vertices at square coordinates (points, 2+)."""
    x, y = coords[:, 0:1], coords[:, 1:2]
    corners = QUAD_CORNERS[None, :, :]
    return (np.where(corners[..., 0] == 1, x, 1.0 - x)
            * np.where(corners[..., 1] == 1, y, 1.0 - y))


class Quadmesh(Mesh):
    """A quadrilateral mesh; the dimension (2 or 3) is that of the position vectors.

    Args:
        quad_vertex_indices: (quadrilaterals, 4) vertex indices, counter-clockwise, a
            `kc.array` of int.
        positions: Vertex positions, a `kc.array` of `vec2` / `vec3` (float32 or float64).
        build_bvh: Marks lookups as supported (`supports_cell_lookup`); kernelc's
            lookups search the cells and need no BVH.
        temporary_store: Accepted for Warp's sake.
        cell_env: Each cell's environment (an int32 array, with `env_count`): cells of
            different environments share no lookup (see docs/fem.md, environments).
        env_count: Number of environments.
    """

    _CELL_VERTICES = 4
    _SIDE_LOCAL = QUAD_EDGES
    _DIMENSIONS = (2, 3)

    def __init__(self, quad_vertex_indices: Any, positions: Any, build_bvh: bool = False,
                 temporary_store: Any = None, cell_env: Any = None,
                 env_count: int | None = None) -> None:
        super().__init__(quad_vertex_indices, positions, type(self).__name__)
        if build_bvh:
            self.build_bvh(self.positions.device)
        self._set_environments(cell_env, env_count)
        self.quad_vertex_indices = self._cell_vertices
        self._bind(_quadmesh_funcs(self.scalar_type, self.dimension))

    @property
    def name(self) -> str:
        suffix = "" if self.scalar_type == kc.float32 else "_f64"
        return f"Quadmesh{self.dimension}D{self._env_name()}{suffix}"

    def reference_cell(self) -> Element:
        return Element.SQUARE

    def reference_side(self) -> Element:
        return Element.LINE_SEGMENT

    @property
    def edge_vertex_indices(self) -> Any:
        """The two vertices of each edge, a `kc.array` of `vec2i`."""
        return self._topology_arrays(None)[0]

    @property
    def edge_quad_indices(self) -> Any:
        """The inner and outer quadrilateral of each edge, a `kc.array` of `vec2i`."""
        return self._topology_arrays(None)[1]

    def _orient_sides(self, vertices: np.ndarray, inner: np.ndarray) -> np.ndarray:
        normals = None
        if self.dimension == 3:
            quad = self.host_positions()[self._host_cells[inner]]
            normals = np.cross(quad[:, 2] - quad[:, 0], quad[:, 3] - quad[:, 1])
        return orient_edges(self.host_positions(), vertices, self._centroids(inner), normals)

    def host_cell_positions(self, coords: np.ndarray) -> np.ndarray:
        """(cells, points, dimension) world positions of square coordinates `coords`."""
        weights = bilinear_weights(np.asarray(coords, dtype=np.float64))
        corners = self.host_positions()[self._host_cells]  # (cells, 4, dim)
        return np.einsum("pk,ckd->cpd", weights, corners)


class Quadmesh2D(Quadmesh):
    """A quadrilateral mesh in the plane (Warp's `warp.fem.Quadmesh2D`)."""


class Quadmesh3D(Quadmesh):
    """A quadrilateral mesh in space, a surface (Warp's `warp.fem.Quadmesh3D`)."""


@cache
def _quadmesh_funcs(scalar: Any, dim: int) -> SimpleNamespace:
    """Argument structs and device funcs of quadrilateral meshes of `dim`-vectors of
    `scalar`."""
    vec = vec_type(dim, scalar)
    vec2 = vec_type(2, scalar)
    Coords = coords_type(scalar)
    suffix = f"{dim}d" + ("" if scalar == kc.float32 else "_f64")
    CellArg = mesh_struct(f"QuadmeshCellArg{suffix}", {
        "cell_vertices": kc.array2d(dtype=int), "positions": kc.array(dtype=vec)})
    SideArg = mesh_struct(f"QuadmeshSideArg{suffix}", {
        "cell_arg": CellArg, "side_vertices": kc.array(dtype=kc.vec2i),
        "side_cells": kc.array(dtype=kc.vec2i)})
    Corners = kc.types.matrix(shape=(4, 2), dtype=kc.int32)
    corner_table = Corners(*QUAD_CORNERS.reshape(-1).tolist())
    zero, one = scalar(0.0), scalar(1.0)

    @kc.func
    def corner(arg: CellArg, cell: int, k: int):
        return arg.positions[arg.cell_vertices[cell, k]]

    @kc.func
    def cell_position(arg: CellArg, s: Any):
        cell = s.element_index
        p = s.element_coords
        m = Coords(one) - p
        return (m[0] * m[1] * corner(arg, cell, 0) + p[0] * m[1] * corner(arg, cell, 1)
                + p[0] * p[1] * corner(arg, cell, 2) + m[0] * p[1] * corner(arg, cell, 3))

    @kc.func
    def cell_deformation_gradient(arg: CellArg, s: Any):
        # the sum over vertices of position x gradient of the vertex's bilinear weight
        cell = s.element_index
        p = s.element_coords
        m = Coords(one) - p
        return (kc.outer(corner(arg, cell, 0), vec2(-m[1], -m[0]))
                + kc.outer(corner(arg, cell, 1), vec2(m[1], -p[0]))
                + kc.outer(corner(arg, cell, 2), vec2(p[1], p[0]))
                + kc.outer(corner(arg, cell, 3), vec2(-p[1], m[0])))

    cell_funcs = cell_gradient_funcs(CellArg, cell_deformation_gradient, scalar, dim, 1.0)

    @kc.func
    def edge_in_cell(arg: SideArg, side_index: int, cell: int):
        # the cell's local vertices at the edge's start and end
        edge = arg.side_vertices[side_index]
        start = 0
        end = 0
        for k in range(4):
            v = arg.cell_arg.cell_vertices[cell, k]
            if v == edge[0]:
                start = k
            if v == edge[1]:
                end = k
        return start, end

    @kc.func
    def edge_to_cell_coords(arg: SideArg, side_index: int, cell: int, side_coords: Any):
        start, end = edge_in_cell(arg, side_index, cell)
        t = side_coords[0]
        out = Coords()
        for axis in range(2):
            a = corner_table[start, axis]
            if a == corner_table[end, axis]:
                out[axis] = scalar(a)
            elif a == 0:
                out[axis] = t
            else:
                out[axis] = one - t
        return out

    @kc.func
    def side_from_cell_coords(arg: SideArg, side_index: int, cell_index: int,
                              cell_coords: Any):
        # The edge coordinate of a point of the cell, or OUTSIDE when it is off the edge.
        start, end = edge_in_cell(arg, side_index, cell_index)
        t = scalar(0.0)
        off = scalar(0.0)
        for axis in range(2):
            a = corner_table[start, axis]
            c = cell_coords[axis]
            if a == corner_table[end, axis]:  # across the edge: the distance to it
                off = kc.where(a == 0, c, one - c)
            else:
                t = kc.where(a == 0, c, one - c)
        if off == zero:
            return Coords(t, zero, zero)
        return Coords(scalar(OUTSIDE))

    side_funcs = edge_side_funcs(SideArg, cell_funcs["cell_normal"], edge_to_cell_coords,
                                 scalar, dim)
    inverse_gradient = cell_funcs["cell_inverse_deformation_gradient"]
    shared = side_cell_funcs(SideArg, Coords, inverse_gradient, side_funcs["side_measure"],
                             cell_funcs["cell_measure"], side_funcs["side_inner_cell_index"],
                             side_funcs["side_outer_cell_index"],
                             side_funcs["side_inner_cell_coords"],
                             side_funcs["side_outer_cell_coords"])
    cell_lookup = tensor_cell_lookup(CellArg, cell_position, cell_deformation_gradient,
                                     inverse_gradient, 2, scalar)
    funcs = {k: v for k, v in locals().items() if k in ("CellArg", "SideArg") or isinstance(v, Func)}
    return SimpleNamespace(**funcs, **cell_funcs, **side_funcs, **shared)
