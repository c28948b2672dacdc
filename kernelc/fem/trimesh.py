"""Triangle meshes in the plane (`Trimesh2D`) or in space (`Trimesh3D`), Warp's
`warp.fem.Trimesh2D` / `Trimesh3D`.

Cells are the given triangles; a point of a cell has barycentric coordinates (l0, l1, l2)
on its vertices. Sides are the edges, numbered as Warp numbers them (`mesh.py`), each
running from vertex 0 to vertex 1 with coordinate (t, 0, 0), oriented so that its normal
(the edge direction turned clockwise in the plane; crossed with the triangle's normal in
space) points out of its inner cell.
"""

from functools import cache
from types import SimpleNamespace
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.mesh import (
    Mesh,
    closest_cell_lookup,
    mesh_struct,
    orient_edges,
    side_cell_funcs,
)
from kernelc.fem.mesh2d import cell_gradient_funcs, edge_side_funcs
from kernelc.fem.types import OUTSIDE, coords_type, vec_type
from kernelc.frontend.decorators import Func

_TRIANGLE_EDGES = [(0, 1), (1, 2), (2, 0)]


class Trimesh(Mesh):
    """A triangle mesh; the dimension (2 or 3) is that of the position vectors.

    Args:
        tri_vertex_indices: (triangles, 3) vertex indices, a `kc.array` of int.
        positions: Vertex positions, a `kc.array` of `vec2` / `vec3` (float32 or float64).
        build_bvh: Marks lookups as supported (`supports_cell_lookup`); kernelc's
            lookups search the cells and need no BVH.
        temporary_store: Accepted for Warp's sake.
        cell_env: Each cell's environment (an int32 array, with `env_count`): cells of
            different environments share no lookup (see docs/fem.md, environments).
        env_count: Number of environments.
    """

    _CELL_VERTICES = 3
    _SIDE_LOCAL = _TRIANGLE_EDGES
    _DIMENSIONS = (2, 3)

    def __init__(self, tri_vertex_indices: Any, positions: Any, build_bvh: bool = False,
                 temporary_store: Any = None, cell_env: Any = None,
                 env_count: int | None = None) -> None:
        super().__init__(tri_vertex_indices, positions, type(self).__name__)
        if build_bvh:
            self.build_bvh(self.positions.device)
        self._set_environments(cell_env, env_count)
        self.tri_vertex_indices = self._cell_vertices
        self._bind(_trimesh_funcs(self.scalar_type, self.dimension))

    @property
    def name(self) -> str:
        suffix = "" if self.scalar_type == kc.float32 else "_f64"
        return f"Trimesh{self.dimension}D{self._env_name()}{suffix}"

    def reference_cell(self) -> Element:
        return Element.TRIANGLE

    def reference_side(self) -> Element:
        return Element.LINE_SEGMENT

    @property
    def edge_vertex_indices(self) -> Any:
        """The two vertices of each edge, a `kc.array` of `vec2i`."""
        return self._topology_arrays(None)[0]

    @property
    def edge_tri_indices(self) -> Any:
        """The inner and outer triangle of each edge, a `kc.array` of `vec2i`."""
        return self._topology_arrays(None)[1]

    def _orient_sides(self, vertices: np.ndarray, inner: np.ndarray) -> np.ndarray:
        normals = None
        if self.dimension == 3:
            tri = self.host_positions()[self._host_cells[inner]]
            normals = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        return orient_edges(self.host_positions(), vertices, self._centroids(inner), normals)

    def host_cell_positions(self, coords: np.ndarray) -> np.ndarray:
        """(cells, points, dimension) world positions of barycentric `coords` (points, 3)."""
        corners = self.host_positions()[self._host_cells]  # (cells, 3, dim)
        return np.einsum("pk,ckd->cpd", np.asarray(coords, dtype=np.float64)[:, :3], corners)


class Trimesh2D(Trimesh):
    """A triangle mesh in the plane (Warp's `warp.fem.Trimesh2D`)."""


class Trimesh3D(Trimesh):
    """A triangle mesh in space, a surface (Warp's `warp.fem.Trimesh3D`)."""


@cache
def _trimesh_funcs(scalar: Any, dim: int) -> SimpleNamespace:
    """Argument structs and device funcs of triangle meshes of `dim`-vectors of `scalar`."""
    vec = vec_type(dim, scalar)
    Coords = coords_type(scalar)
    suffix = f"{dim}d" + ("" if scalar == kc.float32 else "_f64")
    CellArg = mesh_struct(f"TrimeshCellArg{suffix}", {
        "cell_vertices": kc.array2d(dtype=int), "positions": kc.array(dtype=vec)})
    SideArg = mesh_struct(f"TrimeshSideArg{suffix}", {
        "cell_arg": CellArg, "side_vertices": kc.array(dtype=kc.vec2i),
        "side_cells": kc.array(dtype=kc.vec2i)})

    @kc.func
    def corners(arg: CellArg, cell: int):
        return (arg.positions[arg.cell_vertices[cell, 0]],
                arg.positions[arg.cell_vertices[cell, 1]],
                arg.positions[arg.cell_vertices[cell, 2]])

    @kc.func
    def cell_position(arg: CellArg, s: Any):
        p0, p1, p2 = corners(arg, s.element_index)
        c = s.element_coords
        return c[0] * p0 + c[1] * p1 + c[2] * p2

    @kc.func
    def cell_deformation_gradient(arg: CellArg, s: Any):
        p0, p1, p2 = corners(arg, s.element_index)
        return kc.matrix_from_cols(p1 - p0, p2 - p0)

    cell_funcs = cell_gradient_funcs(CellArg, cell_deformation_gradient, scalar, dim, 0.5)

    @kc.func
    def edge_to_cell_coords(arg: SideArg, side_index: int, cell: int, side_coords: Any):
        edge = arg.side_vertices[side_index]
        tri = arg.cell_arg.cell_vertices
        out = Coords()
        t = side_coords[0]
        for k in range(3):
            if tri[cell, k] == edge[0]:
                out[k] = scalar(1.0) - t
            elif tri[cell, k] == edge[1]:
                out[k] = t
        return out

    @kc.func
    def side_from_cell_coords(arg: SideArg, side_index: int, cell_index: int,
                              cell_coords: Any):
        # The edge coordinate of a point of the cell, or OUTSIDE when it is off the edge.
        edge = arg.side_vertices[side_index]
        tri = arg.cell_arg.cell_vertices
        start = 2
        end = 2
        for k in range(2):
            if tri[cell_index, k] == edge[1]:
                end = k
            elif tri[cell_index, k] == edge[0]:
                start = k
        if cell_coords[start] + cell_coords[end] > scalar(0.999):
            return Coords(cell_coords[end], scalar(0.0), scalar(0.0))
        return Coords(scalar(OUTSIDE))

    side_funcs = edge_side_funcs(SideArg, cell_funcs["cell_normal"], edge_to_cell_coords,
                                 scalar, dim)
    inverse_gradient = cell_funcs["cell_inverse_deformation_gradient"]
    shared = side_cell_funcs(SideArg, Coords, inverse_gradient, side_funcs["side_measure"],
                             cell_funcs["cell_measure"], side_funcs["side_inner_cell_index"],
                             side_funcs["side_outer_cell_index"])
    cell_lookup = closest_cell_lookup(CellArg, True, scalar)
    funcs = {k: v for k, v in locals().items() if k in ("CellArg", "SideArg") or isinstance(v, Func)}
    return SimpleNamespace(**funcs, **cell_funcs, **side_funcs, **shared)
