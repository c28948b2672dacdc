"""Node numbering of serendipity and open-family Lagrange spaces on 3-D grids (Warp's
`Grid3DSpaceTopology`; closed Lagrange bases use the node grid of `topology.py`).

Nodes are numbered per entity kind, one block after the other: vertex nodes (vertex-major),
then edge nodes, then face nodes, then interior nodes (cell-major). Within a block, each
entity owns a run of `*_NODE_COUNT` consecutive nodes. Entities are numbered as Warp does:
- vertex (x, y, z) is (x * (res[1] + 1) + y) * (res[2] + 1) + z;
- edges are grouped by axis (x, then y, then z); an edge along `axis` starting at the
  vertex whose local coordinates (in the frame axis, axis + 1, axis + 2) are (a, b, c) is
  ((a * (R1 + 1)) + b) * (R2 + 1) + c within its group, R the resolution in that frame;
- faces are grouped by normal axis; a face at altitude a, longitude b, latitude c is
  (a * R1 + b) * R2 + c within its group. This is not the geometry's side numbering.
"""

import numpy as np

from kernelc.fem.shape_cube import EDGE, FACE, INTERIOR, VERTEX
from kernelc.fem.topology import SpaceTopology


def _to_local(axis: np.ndarray, v: np.ndarray) -> np.ndarray:
    """World (..., 3) -> the frame (axis, axis + 1, axis + 2) of `axis` (...)."""
    idx = (axis[..., None] + np.arange(3)) % 3
    return np.take_along_axis(v, idx, axis=-1)


class Grid3DElementTopology(SpaceTopology):
    """Vertex / edge / face / interior numbering on 3-D grids (serendipity and open
    families; with an open family, every node is interior to its cell)."""

    def _counts(self) -> tuple[int, int, int, int]:
        s = self._shape
        return (s.VERTEX_NODE_COUNT, s.EDGE_NODE_COUNT, getattr(s, "FACE_NODE_COUNT", 0),
                s.INTERIOR_NODE_COUNT)

    def _res(self) -> np.ndarray:
        return np.array([int(r) for r in self._geometry.res], dtype=np.int64)

    def _edge_group_sizes(self) -> np.ndarray:
        r = self._res()
        return np.array([r[a] * (r[(a + 1) % 3] + 1) * (r[(a + 2) % 3] + 1) for a in range(3)])

    def _face_group_sizes(self) -> np.ndarray:
        r = self._res()
        return np.array([(r[a] + 1) * r[(a + 1) % 3] * r[(a + 2) % 3] for a in range(3)])

    def node_count(self) -> int:
        v, e, f, i = self._counts()
        g = self._geometry
        # per environment; several environments are tiled by `EnvironmentTopology`
        cells = int(np.prod(self._res()))
        return (int(np.prod(self._res() + 1)) * v + int(self._edge_group_sizes().sum()) * e
                + int(self._face_group_sizes().sum()) * f + cells * i) * g.environment_count()

    def _cell_node_indices(self) -> np.ndarray:
        if self._geometry.environment_count() != 1:
            raise NotImplementedError("build on a grid of one environment and tile it")
        r = self._res()
        v_count, e_count, f_count, i_count = self._counts()
        cells = int(np.prod(r))
        cell = np.arange(cells, dtype=np.int64)[:, None]
        n = self._shape.NODES_PER_ELEMENT
        if i_count == n:  # open families: every node is interior to its cell
            return cell * n + np.arange(n)[None, :]
        xyz = np.stack(np.unravel_index(cell, tuple(r)), axis=-1)  # (cells, 1, 3)
        kind, instance, index = (np.broadcast_to(a[None, :], (cells, n))
                                 for a in self._shape.node_types())
        out = np.zeros((cells, n), dtype=np.int64)

        corner = xyz + np.stack([instance // 4, instance // 2 % 2, instance % 2], axis=-1)
        vertex = (corner[..., 0] * (r[1] + 1) + corner[..., 1]) * (r[2] + 1) + corner[..., 2]
        out = np.where(kind == VERTEX, vertex * v_count + index, out)
        offset = int(np.prod(r + 1)) * v_count

        axis = np.where(kind == EDGE, instance >> 2, 0)
        r_loc = _to_local(axis, np.broadcast_to(r, axis.shape + (3,)))
        c_loc = _to_local(axis, np.broadcast_to(xyz, axis.shape + (3,)))
        edge = (np.concatenate([[0], np.cumsum(self._edge_group_sizes())[:2]])[axis]
                + ((c_loc[..., 0] * (r_loc[..., 1] + 1)) + c_loc[..., 1] + (instance >> 1 & 1))
                * (r_loc[..., 2] + 1) + c_loc[..., 2] + (instance & 1))
        out = np.where(kind == EDGE, offset + edge * e_count + index, out)
        offset += int(self._edge_group_sizes().sum()) * e_count

        axis = np.where(kind == FACE, instance >> 1, 0)
        r_loc = _to_local(axis, np.broadcast_to(r, axis.shape + (3,)))
        c_loc = _to_local(axis, np.broadcast_to(xyz, axis.shape + (3,)))
        face = (np.concatenate([[0], np.cumsum(self._face_group_sizes())[:2]])[axis]
                + ((c_loc[..., 0] + (instance & 1)) * r_loc[..., 1] + c_loc[..., 1])
                * r_loc[..., 2] + c_loc[..., 2])
        out = np.where(kind == FACE, offset + face * f_count + index, out)
        offset += int(self._face_group_sizes().sum()) * f_count

        return np.where(kind == INTERIOR, offset + cell * i_count + index, out)
