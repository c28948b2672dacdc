"""Node numbering of Lagrange spaces on simplex meshes (Warp's `TrimeshSpaceTopology` and
`TetmeshSpaceTopology`): vertex nodes first (node = vertex), then edge nodes (edge-major),
then interior nodes (cell-major).

An edge node's position along its edge is counted from the edge's first vertex, so
neighbouring cells agree on it: a triangle whose local edge starts at the edge's other
vertex sees that edge's nodes in reverse order.
"""

import numpy as np

from kernelc.fem.shape_simplex import EDGE, INTERIOR, VERTEX, SimplexPolynomialShapeFunctions
from kernelc.fem.topology import SpaceTopology


class SimplexMeshTopology(SpaceTopology):
    """Continuous P_k nodes on a `Trimesh` or a `Tetmesh`."""

    def _edges(self) -> tuple[int, np.ndarray, np.ndarray | None]:
        """(edge count, (cells, local edges) edge index, (edges, 2) edge vertices or None)."""
        geo = self._geometry
        if geo.reference_cell().dimension == 2:
            return geo.side_count(), geo.host_cell_sides(), geo.host_side_vertices()
        return geo.edge_count(), geo.host_cell_edges(), None

    def node_count(self) -> int:
        shape = self._shape
        edges, _, _ = self._edges()
        return (self._geometry.vertex_count() * shape.VERTEX_NODE_COUNT
                + edges * shape.EDGE_NODE_COUNT
                + self._geometry.cell_count() * shape.INTERIOR_NODE_COUNT)

    def _cell_node_indices(self) -> np.ndarray:
        shape: SimplexPolynomialShapeFunctions = self._shape
        geo = self._geometry
        cells = geo.host_cell_vertices().astype(np.int64)
        kinds = shape.node_kinds()
        out = np.zeros((cells.shape[0], shape.NODES_PER_ELEMENT), dtype=np.int64)
        vertex = kinds == VERTEX
        out[:, vertex] = cells[:, np.flatnonzero(vertex)]
        offset = geo.vertex_count()
        per_edge = shape.EDGE_NODE_COUNT
        edge_count, cell_edges, edge_vertices = self._edges()
        for n in np.flatnonzero(kinds == EDGE):
            local_edge, along = divmod(n - len(np.flatnonzero(vertex)), per_edge)
            edge = cell_edges[:, local_edge].astype(np.int64)
            if edge_vertices is not None and per_edge > 1:
                reversed_ = edge_vertices[edge, 0] != cells[:, local_edge]
                along = np.where(reversed_, per_edge - 1 - along, along)
            out[:, n] = offset + per_edge * edge + along
        offset += per_edge * edge_count
        interior = np.flatnonzero(kinds == INTERIOR)
        cell = np.arange(cells.shape[0])[:, None]
        out[:, interior] = offset + cell * len(interior) + np.arange(len(interior))[None, :]
        return out
