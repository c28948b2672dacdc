"""Hexahedral meshes (Warp's `warp.fem.Hexmesh`).

A cell's vertices are its bottom face's counter-clockwise, then its top face's: vertex k
sits at the corner (x, y, z) of the reference cube listed in `HEX_CORNERS`, and a point of
the cell is the trilinear blend of its vertices (or, with `assume_parallelepiped_cells`,
the affine map through vertices 0, 1, 3 and 4).

Sides are the faces, numbered as Warp numbers them (`mesh.py`). A cell's local faces are
x = 0, x = 1, y = 0, y = 1, z = 0, z = 1 (`HEX_FACES`). A face's vertices go around it
from its smallest vertex index, towards the smaller of that vertex's two neighbours, then
reversed if needed so that (v2 - v0) x (v3 - v1) points out of the inner cell; a point of
the face with coordinates (u, v) is the bilinear blend of them (v0 at (0, 0), v1 at (1, 0),
v2 at (1, 1), v3 at (0, 1)).

Each local face has its own frame in the cell (`FACE_FRAMES`: two cube axes along it, one
across it). How a face's coordinates map to a cell's local face frame is the face's
orientation in that cell: 2 k + r, where k is the face's vertex at which the cell's local
face starts and r is 1 when they go round in opposite directions (Warp's tables
`FACE_ORIENTATION`, `FACE_TRANSLATION`). Edges (for the nodes of degree-2 and higher
spaces) are numbered like faces, a cell's twelve edges being `HEX_EDGES`.
"""

from functools import cache, cached_property
from types import SimpleNamespace
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.lookup import tensor_cell_lookup
from kernelc.fem.mesh import CellEdges, Mesh, mesh_struct, side_cell_funcs
from kernelc.fem.types import OUTSIDE, coords_type, vec_type
from kernelc.frontend.decorators import Func

HEX_CORNERS = np.array([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0),
                        (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)])
HEX_FACES = [(0, 4, 7, 3), (1, 2, 6, 5), (0, 1, 5, 4), (3, 7, 6, 2), (0, 3, 2, 1), (4, 5, 6, 7)]
HEX_EDGES = [(0, 1), (1, 2), (3, 2), (0, 3), (4, 5), (5, 6), (7, 6), (4, 7),
             (0, 4), (1, 5), (2, 6), (3, 7)]
# Per local face: the cube axes of its first and second coordinates, the axis across it,
# and whether it is at the high end of that axis.
FACE_FRAMES = [(2, 1, 0, 0), (1, 2, 0, 1), (0, 2, 1, 0), (2, 0, 1, 1), (1, 0, 2, 0),
               (0, 1, 2, 1)]
# Per orientation 2 k + r: the rows of the matrix taking a face's coordinates, minus the
# translation of its vertex k (FACE_TRANSLATION[k]), to the cell's local face coordinates.
FACE_ORIENTATION = [(1, 0), (0, 1), (0, 1), (1, 0), (0, -1), (1, 0), (-1, 0), (0, 1),
                    (-1, 0), (0, -1), (0, -1), (-1, 0), (0, 1), (-1, 0), (1, 0), (0, -1)]
FACE_TRANSLATION = [(0, 0), (1, 0), (1, 1), (0, 1)]


class Hexmesh(CellEdges, Mesh):
    """A hexahedral mesh.

    Args:
        hex_vertex_indices: (hexahedra, 8) vertex indices, a `kc.array` of int: the bottom
            face's vertices counter-clockwise, then the top face's.
        positions: Vertex positions, a `kc.array` of `vec3` (float32 or float64).
        assume_parallelepiped_cells: Whether every cell is a parallelepiped (cheaper
            positions and gradients, from vertices 0, 1, 3 and 4 only).
        build_bvh: Marks lookups as supported (`supports_cell_lookup`); kernelc's
            lookups search the cells and need no BVH.
        temporary_store: Accepted for Warp's sake.
        cell_env: Each cell's environment (an int32 array, with `env_count`): cells of
            different environments share no lookup (see docs/fem.md, environments).
        env_count: Number of environments.
    """

    _CELL_VERTICES = 8
    _SIDE_LOCAL = HEX_FACES
    _EDGE_LOCAL = HEX_EDGES
    _DIMENSIONS = (3,)
    dimension = 3

    def __init__(self, hex_vertex_indices: Any, positions: Any,
                 assume_parallelepiped_cells: bool = False, build_bvh: bool = False,
                 temporary_store: Any = None, cell_env: Any = None,
                 env_count: int | None = None) -> None:
        super().__init__(hex_vertex_indices, positions, "Hexmesh")
        if build_bvh:
            self.build_bvh(self.positions.device)
        self._set_environments(cell_env, env_count)
        self.hex_vertex_indices = self._cell_vertices
        self.parallelepiped_cells = bool(assume_parallelepiped_cells)
        self._host_face_orientation = self._face_orientations()
        self._host_face_orientation.setflags(write=False)
        self._bind(_hexmesh_funcs(self.scalar_type, self.parallelepiped_cells))

    @property
    def name(self) -> str:
        mode = "parallelepiped" if self.parallelepiped_cells else "general"
        return f"{super().name}_{mode}"

    def reference_cell(self) -> Element:
        return Element.CUBE

    def reference_side(self) -> Element:
        return Element.SQUARE

    @property
    def face_vertex_indices(self) -> Any:
        """The four vertices of each face, a `kc.array` of `vec4i`."""
        return self._topology_arrays(None)[0]

    @property
    def face_hex_indices(self) -> Any:
        """The inner and outer hexahedron of each face, a `kc.array` of `vec2i`."""
        return self._topology_arrays(None)[1]

    @cached_property
    def hex_edge_indices(self) -> Any:
        """The edge index of each local edge of each cell, a (cells, 12) `kc.array` of int."""
        return kc.array(self.host_cell_edges().astype(np.int32), dtype=kc.int32)

    def host_face_orientations(self) -> np.ndarray:
        """(faces, 4): local face index and orientation of each face in its inner cell,
        then in its outer cell."""
        return self._host_face_orientation

    def host_cell_face_orientations(self) -> np.ndarray:
        """(cells, 6) orientation of each local face of each cell, seen from the cell."""
        out = np.zeros((self.cell_count(), 6), dtype=np.int64)
        faces = self._host_face_orientation
        inner, outer = self._host_side_cells[:, 0], self._host_side_cells[:, 1]
        out[inner, faces[:, 0]] = faces[:, 1]
        out[outer, faces[:, 2]] = faces[:, 3]
        return out

    def _local_faces(self, faces: np.ndarray, cells: np.ndarray) -> np.ndarray:
        """The local face index of each face in the given cell."""
        return np.argmax(self._host_cell_sides[cells] == faces[:, None], axis=1)

    def _orient_sides(self, vertices: np.ndarray, inner: np.ndarray) -> np.ndarray:
        # Face vertices as Warp lists them: round the inner cell's local face from the
        # smallest vertex, towards its smaller neighbour; then flipped to point outwards.
        cell_faces = self._host_cells[inner][:, np.array(HEX_FACES)]  # (faces, 6, 4)
        same = (np.sort(cell_faces, axis=2) == vertices[:, None, :]).all(axis=2)
        cycle = cell_faces[np.arange(len(inner)), np.argmax(same, axis=1)]
        start = np.argmin(cycle, axis=1)
        cycle = np.take_along_axis(cycle, (start[:, None] + np.arange(4)[None, :]) % 4, 1)
        cycle = np.where((cycle[:, 1] > cycle[:, 3])[:, None], cycle[:, [0, 3, 2, 1]], cycle)
        pos = self.host_positions()
        v0, v1, v2, v3 = (pos[cycle[:, k]] for k in range(4))
        normal = np.cross(v2 - v0, v3 - v1)
        towards_inner = np.einsum("ij,ij->i", self._centroids(inner)
                                  - (v0 + v1 + v2 + v3) / 4.0, normal) > 0.0
        return np.where(towards_inner[:, None], cycle[:, [0, 3, 2, 1]], cycle).astype(np.int32)

    def _face_orientations(self) -> np.ndarray:
        faces = self._host_side_vertices.astype(np.int64)
        index = np.arange(len(faces))
        columns = []
        for cells in (self._host_side_cells[:, 0], self._host_side_cells[:, 1]):
            local = self._local_faces(index, cells)
            first = self._host_cells[cells, np.array(HEX_FACES)[local, 0]]
            second = self._host_cells[cells, np.array(HEX_FACES)[local, 1]]
            k = np.argmax(faces == first[:, None], axis=1)
            reverse = faces[index, (k + 1) % 4] != second
            columns += [local, 2 * k + reverse]
        return np.stack(columns, axis=1).astype(np.int32)

    def _fill_side_arg(self, arg: Any, device: Any) -> None:
        arg.face_orientation = kc.array(self._host_face_orientation, dtype=kc.vec4i,
                                        device=device)

    def host_cell_positions(self, coords: np.ndarray) -> np.ndarray:
        """(cells, points, 3) world positions of cube coordinates `coords` (points, 3)."""
        c = np.asarray(coords, dtype=np.float64)[:, None, :3]
        corners = self.host_positions()[self._host_cells]  # (cells, 8, 3)
        if self.parallelepiped_cells:
            origin = corners[:, None, 0]
            axes = corners[:, [1, 3, 4]] - corners[:, None, 0]
            return origin + np.einsum("pk,ckd->cpd", c[:, 0], axes)
        weights = np.where(HEX_CORNERS[None] == 1, c, 1.0 - c).prod(axis=2)
        return np.einsum("pk,ckd->cpd", weights, corners)


@cache
def _hexmesh_funcs(scalar: Any, parallelepiped: bool) -> SimpleNamespace:
    """Argument structs and device funcs of hexahedral meshes of `scalar` positions."""
    vec2 = vec_type(2, scalar)
    vec3 = vec_type(3, scalar)
    mat33 = kc.types.matrix(shape=(3, 3), dtype=scalar)
    Coords = coords_type(scalar)
    suffix = "" if scalar == kc.float32 else "_f64"
    CellArg = mesh_struct(f"HexmeshCellArg{suffix}", {
        "cell_vertices": kc.array2d(dtype=int), "positions": kc.array(dtype=vec3)})
    SideArg = mesh_struct(f"HexmeshSideArg{suffix}", {
        "cell_arg": CellArg, "side_vertices": kc.array(dtype=kc.vec4i),
        "side_cells": kc.array(dtype=kc.vec2i), "face_orientation": kc.array(dtype=kc.vec4i)})
    corner_table = kc.types.matrix(shape=(8, 3), dtype=kc.int32)(*HEX_CORNERS.reshape(-1).tolist())
    frames = kc.types.matrix(shape=(6, 4), dtype=kc.int32)(*np.ravel(FACE_FRAMES).tolist())
    turns = kc.types.matrix(shape=(16, 2), dtype=scalar)(*np.ravel(FACE_ORIENTATION).tolist())
    shifts = kc.types.matrix(shape=(4, 2), dtype=scalar)(*np.ravel(FACE_TRANSLATION).tolist())
    zero, one = scalar(0.0), scalar(1.0)

    @kc.func
    def corner(arg: CellArg, cell: int, k: int):
        return arg.positions[arg.cell_vertices[cell, k]]

    @kc.func
    def vertex_weight(p: Any, m: Any, k: int):
        # the trilinear weight of vertex k and its gradient
        w = vec3()
        g = vec3()
        for axis in range(3):
            high = corner_table[k, axis] == 1
            w[axis] = kc.where(high, p[axis], m[axis])
            g[axis] = kc.where(high, scalar(1.0), scalar(-1.0))
        return w[0] * w[1] * w[2], vec3(g[0] * w[1] * w[2], g[1] * w[0] * w[2],
                                        g[2] * w[0] * w[1])

    @kc.func
    def trilinear_position(arg: CellArg, s: Any):
        p = s.element_coords
        m = Coords(one) - p
        total = vec3()
        for k in range(8):
            w, g = vertex_weight(p, m, k)
            total += w * corner(arg, s.element_index, k)
        return total

    @kc.func
    def trilinear_gradient(arg: CellArg, s: Any):
        p = s.element_coords
        m = Coords(one) - p
        total = mat33()
        for k in range(8):
            w, g = vertex_weight(p, m, k)
            total += kc.outer(corner(arg, s.element_index, k), g)
        return total

    @kc.func
    def affine_position(arg: CellArg, s: Any):
        cell = s.element_index
        w = s.element_coords
        return (w[0] * corner(arg, cell, 1) + w[1] * corner(arg, cell, 3)
                + w[2] * corner(arg, cell, 4) + (one - w[0] - w[1] - w[2]) * corner(arg, cell, 0))

    @kc.func
    def affine_gradient(arg: CellArg, s: Any):
        cell = s.element_index
        p0 = corner(arg, cell, 0)
        return kc.matrix_from_cols(corner(arg, cell, 1) - p0, corner(arg, cell, 3) - p0,
                                   corner(arg, cell, 4) - p0)

    cell_position = affine_position if parallelepiped else trilinear_position
    cell_deformation_gradient = affine_gradient if parallelepiped else trilinear_gradient

    @kc.func
    def cell_inverse_deformation_gradient(arg: CellArg, s: Any):
        return kc.inverse(cell_deformation_gradient(arg, s))

    @kc.func
    def cell_measure(arg: CellArg, s: Any):
        return kc.abs(kc.determinant(cell_deformation_gradient(arg, s)))

    @kc.func
    def cell_normal(arg: CellArg, s: Any):
        return vec3(zero)

    @kc.func
    def side_to_cell_arg(arg: SideArg):
        return arg.cell_arg

    @kc.func
    def face_corner(arg: SideArg, side: int, k: int):
        return arg.cell_arg.positions[arg.side_vertices[side][k]]

    @kc.func
    def side_position(arg: SideArg, s: Any):
        side = s.element_index
        p = s.element_coords
        m = Coords(one) - p
        return (m[0] * m[1] * face_corner(arg, side, 0) + p[0] * m[1] * face_corner(arg, side, 1)
                + p[0] * p[1] * face_corner(arg, side, 2)
                + m[0] * p[1] * face_corner(arg, side, 3))

    @kc.func
    def face_tangents(arg: SideArg, s: Any):
        side = s.element_index
        p = s.element_coords
        m = Coords(one) - p
        v0 = face_corner(arg, side, 0)
        v1 = face_corner(arg, side, 1)
        v2 = face_corner(arg, side, 2)
        v3 = face_corner(arg, side, 3)
        return m[1] * (v1 - v0) + p[1] * (v2 - v3), p[0] * (v2 - v1) + m[0] * (v3 - v0)

    @kc.func
    def side_deformation_gradient(arg: SideArg, s: Any):
        t0, t1 = face_tangents(arg, s)
        return kc.matrix_from_cols(t0, t1)

    @kc.func
    def side_measure(arg: SideArg, s: Any):
        t0, t1 = face_tangents(arg, s)
        return kc.length(kc.cross(t0, t1))

    @kc.func
    def side_normal(arg: SideArg, s: Any):
        t0, t1 = face_tangents(arg, s)
        return kc.normalize(kc.cross(t0, t1))

    @kc.func
    def side_inner_cell_index(arg: SideArg, side_index: int):
        return arg.side_cells[side_index][0]

    @kc.func
    def side_outer_cell_index(arg: SideArg, side_index: int):
        return arg.side_cells[side_index][1]

    @kc.func
    def face_to_cell_coords(local_face: int, orientation: int, side_coords: Any):
        # the face's coordinates turned into the local face's frame, then placed in the cell
        shift = shifts[orientation // 2]
        c0 = side_coords[0] - shift[0]
        c1 = side_coords[1] - shift[1]
        local = c0 * turns[2 * orientation] + c1 * turns[2 * orientation + 1]
        out = Coords()
        out[frames[local_face, 0]] = local[0]
        out[frames[local_face, 1]] = local[1]
        out[frames[local_face, 2]] = scalar(frames[local_face, 3])
        return out

    @kc.func
    def side_inner_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        f = arg.face_orientation[side_index]
        return face_to_cell_coords(f[0], f[1], side_coords)

    @kc.func
    def side_outer_cell_coords(arg: SideArg, side_index: int, side_coords: Any):
        f = arg.face_orientation[side_index]
        return face_to_cell_coords(f[2], f[3], side_coords)

    @kc.func
    def side_from_cell_coords(arg: SideArg, side_index: int, cell_index: int,
                              cell_coords: Any):
        # The face coordinates of a point of the cell, or OUTSIDE when it is off the face.
        f = arg.face_orientation[side_index]
        local_face = f[2]
        orientation = f[3]
        if side_inner_cell_index(arg, side_index) == cell_index:
            local_face = f[0]
            orientation = f[1]
        local = vec2(cell_coords[frames[local_face, 0]], cell_coords[frames[local_face, 1]])
        across = cell_coords[frames[local_face, 2]]
        across = kc.where(frames[local_face, 3] == 0, -across, across - one)
        if across == zero:
            shift = shifts[orientation // 2]
            return Coords(kc.dot(turns[2 * orientation], local) + shift[0],
                          kc.dot(turns[2 * orientation + 1], local) + shift[1], zero)
        return Coords(scalar(OUTSIDE))

    shared = side_cell_funcs(SideArg, Coords, cell_inverse_deformation_gradient, side_measure,
                             cell_measure, side_inner_cell_index, side_outer_cell_index,
                             side_inner_cell_coords, side_outer_cell_coords)
    cell_lookup = tensor_cell_lookup(CellArg, cell_position, cell_deformation_gradient,
                                     cell_inverse_deformation_gradient, 3, scalar)
    funcs = {k: v for k, v in locals().items() if k in ("CellArg", "SideArg") or isinstance(v, Func)}
    return SimpleNamespace(**funcs, **shared)
