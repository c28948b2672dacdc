"""Tetrahedral meshes (Warp's `warp.fem.Tetmesh`).

A point of a cell has coordinates (l1, l2, l3): its barycentric weights on vertices 1 to 3,
vertex 0 taking the rest. Sides are the triangular faces, numbered as Warp numbers them
(`mesh.py`), with barycentric coordinates on their three vertices, ordered so that
(v1 - v0) x (v2 - v0) points out of the inner cell. Edges (for the nodes of degree-2
spaces) are numbered the same way, a cell's six edges being (0, 1), (1, 2), (2, 0), (0, 3),
(1, 3), (2, 3).
"""

from functools import cache
from types import SimpleNamespace
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.mesh import CellEdges, Mesh, closest_cell_lookup, mesh_struct, side_cell_funcs
from kernelc.fem.shape_simplex import TET_EDGES
from kernelc.fem.types import OUTSIDE, coords_type, vec_type
from kernelc.frontend.decorators import Func

_TET_FACES = [(0, 1, 2), (1, 2, 3), (2, 3, 0), (3, 0, 1)]


class Tetmesh(CellEdges, Mesh):
    """A tetrahedral mesh.

    Args:
        tet_vertex_indices: (tetrahedra, 4) vertex indices, a `kc.array` of int.
        positions: Vertex positions, a `kc.array` of `vec3` (float32 or float64).
        build_bvh: Marks lookups as supported (`supports_cell_lookup`); kernelc's
            lookups search the cells and need no BVH.
        temporary_store: Accepted for Warp's sake.
        cell_env: Each cell's environment (an int32 array, with `env_count`): cells of
            different environments share no lookup (see docs/fem.md, environments).
        env_count: Number of environments.
    """

    _CELL_VERTICES = 4
    _SIDE_LOCAL = _TET_FACES
    _DIMENSIONS = (3,)
    _EDGE_LOCAL = TET_EDGES
    dimension = 3

    def __init__(self, tet_vertex_indices: Any, positions: Any, build_bvh: bool = False,
                 temporary_store: Any = None, cell_env: Any = None,
                 env_count: int | None = None) -> None:
        super().__init__(tet_vertex_indices, positions, "Tetmesh")
        if build_bvh:
            self.build_bvh(self.positions.device)
        self._set_environments(cell_env, env_count)
        self.tet_vertex_indices = self._cell_vertices
        self._bind(_tetmesh_funcs(self.scalar_type))

    def reference_cell(self) -> Element:
        return Element.TETRAHEDRON

    def reference_side(self) -> Element:
        return Element.TRIANGLE

    @property
    def face_vertex_indices(self) -> Any:
        """The three vertices of each face, a `kc.array` of `vec3i`."""
        return self._topology_arrays(None)[0]

    @property
    def face_tet_indices(self) -> Any:
        """The inner and outer tetrahedron of each face, a `kc.array` of `vec2i`."""
        return self._topology_arrays(None)[1]

    def _orient_sides(self, vertices: np.ndarray, inner: np.ndarray) -> np.ndarray:
        pos = self.host_positions()
        v0, v1, v2 = (pos[vertices[:, k]] for k in range(3))
        normal = np.cross(v1 - v0, v2 - v0)
        towards_inner = np.einsum("ij,ij->i", self._centroids(inner) - (v0 + v1 + v2) / 3.0,
                                  normal) > 0.0
        return np.where(towards_inner[:, None], vertices[:, [0, 2, 1]], vertices)

    def host_cell_positions(self, coords: np.ndarray) -> np.ndarray:
        """(cells, points, 3) world positions of cell coordinates `coords` (points, 3)."""
        coords = np.asarray(coords, dtype=np.float64)[:, :3]
        weights = np.concatenate([1.0 - coords.sum(axis=1, keepdims=True), coords], axis=1)
        corners = self.host_positions()[self._host_cells]  # (cells, 4, 3)
        return np.einsum("pk,ckd->cpd", weights, corners)


@cache
def _tetmesh_funcs(scalar: Any) -> SimpleNamespace:
    """Argument structs and device funcs of tetrahedral meshes of `scalar` positions."""
    vec3 = vec_type(3, scalar)
    Coords = coords_type(scalar)
    suffix = "" if scalar == kc.float32 else "_f64"
    CellArg = mesh_struct(f"TetmeshCellArg{suffix}", {
        "cell_vertices": kc.array2d(dtype=int), "positions": kc.array(dtype=vec3)})
    SideArg = mesh_struct(f"TetmeshSideArg{suffix}", {
        "cell_arg": CellArg, "side_vertices": kc.array(dtype=kc.vec3i),
        "side_cells": kc.array(dtype=kc.vec2i)})
    sixth = scalar(1.0 / 6.0)
    half = scalar(0.5)

    @kc.func
    def corner(arg: CellArg, cell: int, k: int):
        return arg.positions[arg.cell_vertices[cell, k]]

    @kc.func
    def cell_position(arg: CellArg, s: Any):
        c = s.element_coords
        cell = s.element_index
        return ((scalar(1.0) - c[0] - c[1] - c[2]) * corner(arg, cell, 0)
                + c[0] * corner(arg, cell, 1) + c[1] * corner(arg, cell, 2)
                + c[2] * corner(arg, cell, 3))

    @kc.func
    def cell_deformation_gradient(arg: CellArg, s: Any):
        cell = s.element_index
        p0 = corner(arg, cell, 0)
        return kc.matrix_from_cols(corner(arg, cell, 1) - p0, corner(arg, cell, 2) - p0,
                                   corner(arg, cell, 3) - p0)

    @kc.func
    def cell_inverse_deformation_gradient(arg: CellArg, s: Any):
        return kc.inverse(cell_deformation_gradient(arg, s))

    @kc.func
    def cell_measure(arg: CellArg, s: Any):
        return kc.abs(kc.determinant(cell_deformation_gradient(arg, s))) * sixth

    @kc.func
    def cell_normal(arg: CellArg, s: Any):
        return vec3(scalar(0.0))

    @kc.func
    def side_to_cell_arg(arg: SideArg):
        return arg.cell_arg

    @kc.func
    def face_corner(arg: SideArg, side: int, k: int):
        return arg.cell_arg.positions[arg.side_vertices[side][k]]

    @kc.func
    def side_position(arg: SideArg, s: Any):
        c = s.element_coords
        side = s.element_index
        return (c[0] * face_corner(arg, side, 0) + c[1] * face_corner(arg, side, 1)
                + c[2] * face_corner(arg, side, 2))

    @kc.func
    def side_deformation_gradient(arg: SideArg, s: Any):
        v0 = face_corner(arg, s.element_index, 0)
        return kc.matrix_from_cols(face_corner(arg, s.element_index, 1) - v0,
                                   face_corner(arg, s.element_index, 2) - v0)

    @kc.func
    def face_cross(arg: SideArg, s: Any):
        v0 = face_corner(arg, s.element_index, 0)
        return kc.cross(face_corner(arg, s.element_index, 1) - v0,
                        face_corner(arg, s.element_index, 2) - v0)

    @kc.func
    def side_measure(arg: SideArg, s: Any):
        return kc.length(face_cross(arg, s)) * half

    @kc.func
    def side_normal(arg: SideArg, s: Any):
        return kc.normalize(face_cross(arg, s))

    @kc.func
    def side_inner_cell_index(arg: SideArg, side_index: int):
        return arg.side_cells[side_index][0]

    @kc.func
    def side_outer_cell_index(arg: SideArg, side_index: int):
        return arg.side_cells[side_index][1]

    @kc.func
    def face_to_cell_coords(arg: SideArg, side_index: int, cell: int, side_coords: Any):
        face = arg.side_vertices[side_index]
        out = Coords()
        for k in range(3):
            for j in range(3):
                if arg.cell_arg.cell_vertices[cell, j + 1] == face[k]:
                    out[j] = side_coords[k]
        return out

    @kc.func
    def side_inner_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        return face_to_cell_coords(arg, side_index, side_inner_cell_index(arg, side_index),
                                   side_coords)

    @kc.func
    def side_outer_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        return face_to_cell_coords(arg, side_index, side_outer_cell_index(arg, side_index),
                                   side_coords)

    @kc.func
    def side_from_cell_coords(arg: SideArg, side_index: int, cell_index: int,
                              cell_coords: Any):
        # The face coordinates of a point of the cell, or OUTSIDE when it is off the face.
        face = arg.side_vertices[side_index]
        rest = scalar(1.0) - cell_coords[0] - cell_coords[1] - cell_coords[2]
        out = Coords(rest, rest, rest)
        for k in range(3):
            for j in range(3):
                if arg.cell_arg.cell_vertices[cell_index, j + 1] == face[k]:
                    out[k] = cell_coords[j]
        if out[0] + out[1] + out[2] > scalar(0.999):
            return out
        return Coords(scalar(OUTSIDE))

    shared = side_cell_funcs(SideArg, Coords, cell_inverse_deformation_gradient, side_measure,
                             cell_measure, side_inner_cell_index, side_outer_cell_index)
    cell_lookup = closest_cell_lookup(CellArg, False, scalar)
    funcs = {k: v for k, v in locals().items() if k in ("CellArg", "SideArg") or isinstance(v, Func)}
    return SimpleNamespace(**funcs, **shared)
