"""Node numbering of Lagrange and serendipity spaces on quadrilateral and hexahedral meshes
(Warp's `QuadmeshSpaceTopology` and `HexmeshSpaceTopology`).

Quadrilaterals: vertex nodes first (node = vertex), then interior nodes (cell-major), then
edge nodes (edge-major). Hexahedra: vertex nodes, then edge nodes, then face nodes, then
interior nodes. A node shared by neighbouring cells is numbered from the shared entity's
own frame, so that the cells agree on it:
- a quadrilateral's edge nodes run from the edge's first vertex (the side's vertex 0);
- a hexahedron's edge nodes run from the edge's smaller vertex index;
- a hexahedron's face nodes are turned by the face's orientation in the cell (Warp's
  rotation table; see `hexmesh.py`).
"""

from typing import Any

import numpy as np

from kernelc.fem.polynomial import is_closed
from kernelc.fem.shape import EDGE_X, INTERIOR, VERTEX
from kernelc.fem.shape_cube import EDGE, FACE
from kernelc.fem.topology import SpaceTopology

# A square shape function's vertex (x, y), numbered 2 x + y, is this vertex of a quadrilateral.
_SQUARE_TO_QUAD_VERTEX = np.array([0, 3, 1, 2])
# A cube shape function's vertex 4 x + 2 y + z is this vertex of a hexahedron, and its
# edges (numbered as in `shape_cube.py`) these edges of a hexahedron (`hexmesh.HEX_EDGES`).
_CUBE_TO_HEX_VERTEX = np.array([0, 4, 3, 7, 1, 5, 2, 6])
_CUBE_TO_HEX_EDGE = np.array([0, 4, 2, 6, 3, 1, 7, 5, 8, 11, 9, 10])


class QuadmeshTopology(SpaceTopology):
    """Continuous nodes of square shape functions on a `Quadmesh2D` / `Quadmesh3D`."""

    def __init__(self, geometry: Any, shape: Any) -> None:
        if not is_closed(shape.family):
            raise ValueError("a closed polynomial family is required to define a continuous "
                             "function space on a quadrilateral mesh")
        super().__init__(geometry, shape)

    def node_count(self) -> int:
        shape, geo = self._shape, self._geometry
        return (geo.vertex_count() * shape.VERTEX_NODE_COUNT
                + geo.side_count() * shape.EDGE_NODE_COUNT
                + geo.cell_count() * shape.INTERIOR_NODE_COUNT)

    def _cell_node_indices(self) -> np.ndarray:
        shape, geo = self._shape, self._geometry
        cells = geo.host_cell_vertices().astype(np.int64)
        vertex_count, edge_count, interior_count = (
            shape.VERTEX_NODE_COUNT, shape.EDGE_NODE_COUNT, shape.INTERIOR_NODE_COUNT)
        kind, instance, index = (a[None, :] for a in shape.node_types())
        cell = np.arange(cells.shape[0])[:, None]
        out = np.zeros((cells.shape[0], shape.NODES_PER_ELEMENT), dtype=np.int64)
        vertex = np.take_along_axis(cells, np.broadcast_to(
            _SQUARE_TO_QUAD_VERTEX[instance % 4], out.shape), axis=1)
        out = np.where(kind == VERTEX, vertex * vertex_count + index, out)
        offset = geo.vertex_count() * vertex_count
        out = np.where(kind == INTERIOR, offset + cell * interior_count + index, out)
        offset += geo.cell_count() * interior_count
        # The cell's local edge holding an edge node: y = 0 is edge 0, x = 1 edge 1,
        # y = 1 edge 2, x = 0 edge 3; edges 2 and 3 run against the shape's axes.
        local = np.where(kind == EDGE_X, np.where(instance == 0, 0, 2),
                         np.where(instance == 0, 3, 1))
        local = np.broadcast_to(local, out.shape)
        side = np.take_along_axis(geo.host_cell_sides().astype(np.int64), local, axis=1)
        start = np.take_along_axis(cells, local, axis=1)
        flipped = (local >= 2) ^ (start != geo.host_side_vertices()[side, 0])
        along = np.where(flipped, edge_count - 1 - index, index)
        edge = (kind != VERTEX) & (kind != INTERIOR)
        return np.where(edge, offset + edge_count * side + along, out)


class HexmeshTopology(SpaceTopology):
    """Continuous nodes of cube shape functions on a `Hexmesh` (with an open family, all
    nodes are interior to their cell, as in Warp)."""

    def _counts(self) -> tuple[int, int, int, int]:
        s = self._shape
        return s.VERTEX_NODE_COUNT, s.EDGE_NODE_COUNT, s.FACE_NODE_COUNT, s.INTERIOR_NODE_COUNT

    def node_count(self) -> int:
        v, e, f, i = self._counts()
        geo = self._geometry
        edges = geo.edge_count() if e else 0
        return (geo.vertex_count() * v + edges * e + geo.side_count() * f
                + geo.cell_count() * i)

    def _cell_node_indices(self) -> np.ndarray:
        geo = self._geometry
        v_count, e_count, f_count, i_count = self._counts()
        cells = geo.host_cell_vertices().astype(np.int64)
        kind, instance, index = (a[None, :] for a in self._shape.node_types())
        shape = (cells.shape[0], self._shape.NODES_PER_ELEMENT)
        cell = np.arange(cells.shape[0])[:, None]
        out = np.zeros(shape, dtype=np.int64)
        if v_count:
            vertex = np.take_along_axis(cells, np.broadcast_to(
                _CUBE_TO_HEX_VERTEX[instance % 8], shape), axis=1)
            out = np.where(kind == VERTEX, vertex * v_count + index, out)
        offset = geo.vertex_count() * v_count
        if e_count:
            out = np.where(kind == EDGE, offset + self._edge_nodes(cells, instance, index), out)
            offset += e_count * geo.edge_count()
        if f_count:
            out = np.where(kind == FACE, offset + self._face_nodes(instance, index), out)
            offset += f_count * geo.side_count()
        return np.where(kind == INTERIOR, offset + cell * i_count + index, out)

    def _edge_nodes(self, cells: np.ndarray, instance: np.ndarray,
                    index: np.ndarray) -> np.ndarray:
        """Edge nodes relative to the first edge node: edge-major, each edge's nodes from
        its smaller vertex index."""
        from kernelc.fem.hexmesh import HEX_EDGES

        count = self._shape.EDGE_NODE_COUNT
        shape = (cells.shape[0], self._shape.NODES_PER_ELEMENT)
        local = np.broadcast_to(_CUBE_TO_HEX_EDGE[instance % 12], shape)
        edge = np.take_along_axis(self._geometry.host_cell_edges().astype(np.int64), local, 1)
        ends = np.array(HEX_EDGES)[local]
        v0 = np.take_along_axis(cells, ends[..., 0], axis=1)
        v1 = np.take_along_axis(cells, ends[..., 1], axis=1)
        return count * edge + np.where(v0 > v1, count - 1 - index, index)

    def _face_nodes(self, instance: np.ndarray, index: np.ndarray) -> np.ndarray:
        """Face nodes relative to the first face node: face-major, each face's nodes turned
        by Warp's rule from the cell's frame to the face's."""
        from kernelc.fem.hexmesh import FACE_ORIENTATION, FACE_TRANSLATION

        geo = self._geometry
        count = self._shape.FACE_NODE_COUNT
        shape = (geo.cell_count(), self._shape.NODES_PER_ELEMENT)
        local = np.broadcast_to(instance % 6, shape)
        face = np.take_along_axis(geo.host_cell_sides().astype(np.int64), local, axis=1)
        if count == 1:
            return face
        # Warp turns the node's (i, j) on the face by the face's orientation in the cell,
        # its parity flipped on the faces at the low ends (x = 0, y = 0, z = 0) whose
        # local frames are left-handed.
        orientation = np.take_along_axis(geo.host_cell_face_orientations(), local, axis=1)
        orientation = orientation ^ (1 - local % 2)
        m = self._shape.ORDER - 1
        ij = np.stack(np.divmod(np.broadcast_to(index, shape), m), axis=-1)
        rows = np.array(FACE_ORIENTATION).reshape(8, 2, 2)[orientation]  # (..., 2, 2)
        turned = np.einsum("...rk,...k->...r", rows, ij)
        turned = turned + np.array(FACE_TRANSLATION)[orientation // 2] * (m - 1)
        return count * face + turned[..., 0] * m + turned[..., 1]
