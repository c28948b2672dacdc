"""Node numbering and orientation signs of the Nedelec and Raviart-Thomas spaces
(`shape_vector.py`), as Warp's space topologies give them.

One node per edge (Nedelec; Raviart-Thomas in 2-d) or per side (Raviart-Thomas in 3-d),
numbered by the edge or side, and a sign per (cell, node): the cells sharing an edge or a
side see its basis function with opposite local orientations, and the sign turns each
cell's local function into the one global function (Warp's `element_node_sign`). Both are
host tables, computed once per topology:
- grids and nanogrids: no signs (every cell's local axes are the grid's); 2-d edges are numbered by side
  index, 3-d edges axis by axis then by their (transverse, along) position, 3-d faces axis by
  axis then by their position (not the grid's side order);
- quadrilateral meshes: the edge's sign says whether the cell walks it from the edge's first
  vertex; triangles likewise;
- tetrahedra: an edge runs from its smaller vertex index to its larger one; a face is
  positive in its inner cell;
- hexahedra: an edge runs from its smaller vertex index; a face's sign follows its
  orientation in the cell (Warp's parity rule, see `topology_quadhex.py`).
"""

from functools import cached_property
from typing import Any

import numpy as np

from kernelc.fem.nanogrid import NanogridBase, NanogridTopology
from kernelc.fem.shape import EDGE_X
from kernelc.fem.shape_cube import EDGE, FACE
from kernelc.fem.shape_simplex import TET_EDGES
from kernelc.fem.shape_vector import COVARIANT
from kernelc.fem.topology import DiscontinuousTopology, Grid2DElementTopology, SpaceTopology
from kernelc.fem.topology_quadhex import _CUBE_TO_HEX_EDGE, HexmeshTopology, QuadmeshTopology


class _Signed:
    """Mixed into topologies of vector-valued shapes: `host_element_signs()`."""

    _geometry: Any
    _shape: Any

    def _signs(self) -> np.ndarray:
        # default: every cell agrees with the global orientation
        return np.ones((self._geometry.cell_count(), self._shape.NODES_PER_ELEMENT))

    @cached_property
    def _element_signs(self) -> np.ndarray:
        signs = np.ascontiguousarray(self._signs(), dtype=self._shape.np_scalar)
        signs.setflags(write=False)
        return signs

    def host_element_signs(self) -> np.ndarray:
        """(cells, nodes per cell) +1 or -1: the orientation of each cell's node functions
        against the global ones (read-only)."""
        return self._element_signs


class DiscontinuousVectorTopology(_Signed, DiscontinuousTopology):
    """Nodes of their own in each cell, all positive."""


class Grid2DVectorTopology(_Signed, Grid2DElementTopology):
    """One node per side of a `Grid2D`, numbered by side index."""


class Grid3DVectorTopology(_Signed, SpaceTopology):
    """One node per edge (Nedelec) or per face (Raviart-Thomas) of a `Grid3D`, in Warp's
    order: by axis, then by position in the frame (axis, axis + 1, axis + 2)."""

    def _res(self) -> np.ndarray:
        return np.array([int(r) for r in self._geometry.res], dtype=np.int64)

    def _edge_offsets(self) -> np.ndarray:
        r = self._res()
        per_axis = [(r[(a + 1) % 3] + 1) * (r[(a + 2) % 3] + 1) * r[a] for a in range(3)]
        return np.concatenate([[0], np.cumsum(per_axis)])

    def _face_offsets(self) -> np.ndarray:
        r = self._res()
        per_axis = [(r[a] + 1) * r[(a + 1) % 3] * r[(a + 2) % 3] for a in range(3)]
        return np.concatenate([[0], np.cumsum(per_axis)])

    def node_count(self) -> int:
        offsets = self._edge_offsets() if self._shape.EDGE_NODE_COUNT else self._face_offsets()
        return int(offsets[-1])

    def _cell_node_indices(self) -> np.ndarray:
        r = self._res()
        cells = np.indices(r).reshape(3, -1).T  # x slowest, as the grid numbers its cells
        kind, instance, _ = self._shape.node_types()
        out = np.zeros((cells.shape[0], len(kind)), dtype=np.int64)
        for n in range(len(kind)):
            if kind[n] == EDGE:
                axis, e1, e2 = instance[n] // 4, (instance[n] // 2) % 2, instance[n] % 2
            else:
                axis, e1, e2 = instance[n] // 2, 0, 0
            frame = [axis, (axis + 1) % 3, (axis + 2) % 3]
            c, res = cells[:, frame], r[frame]
            if kind[n] == EDGE:
                out[:, n] = (self._edge_offsets()[axis] + (res[1] + 1) * (res[2] + 1) * c[:, 0]
                             + (res[2] + 1) * (c[:, 1] + e1) + c[:, 2] + e2)
            elif kind[n] == FACE:
                out[:, n] = (self._face_offsets()[axis]
                             + res[1] * res[2] * (c[:, 0] + instance[n] % 2)
                             + res[2] * c[:, 1] + c[:, 2])
        return out


class NanogridVectorTopology(_Signed, NanogridTopology):
    """One node per edge (Nedelec) or per face (Raviart-Thomas) of a `Nanogrid`, in the
    edge or face grid's order."""


class QuadmeshVectorTopology(_Signed, QuadmeshTopology):
    """One node per edge of a `Quadmesh2D`; a cell's local edges 2 and 3 run against the
    shape's axes, so the sign also flips there."""

    def __init__(self, geometry: Any, shape: Any) -> None:
        SpaceTopology.__init__(self, geometry, shape)  # no node family to check

    def _signs(self) -> np.ndarray:
        geo = self._geometry
        cells = geo.host_cell_vertices().astype(np.int64)
        kind, instance, _ = self._shape.node_types()
        local = np.where(kind == EDGE_X, np.where(instance == 0, 0, 2),
                         np.where(instance == 0, 3, 1))
        local = np.broadcast_to(local[None, :], (cells.shape[0], len(kind)))
        side = np.take_along_axis(geo.host_cell_sides().astype(np.int64), local, axis=1)
        start = np.take_along_axis(cells, local, axis=1)
        flipped = (local >= 2) ^ (start != geo.host_side_vertices()[side, 0])
        signs = np.where(flipped, -1.0, 1.0)
        if self._shape.VALUE == COVARIANT:
            return signs
        # Raviart-Thomas: the reference normal is the tangent turned one way on x-edges,
        # the other way on y-edges (and on mirrored cells)
        turn = np.where(kind < EDGE_X + 1, 1.0, -1.0)[None, :] * _orientations(geo, 3)[:, None]
        return _agree_with_inner_cell(geo, signs, turn, side, local)


class HexmeshVectorTopology(_Signed, HexmeshTopology):
    """One node per edge or face of a `Hexmesh`."""

    def _signs(self) -> np.ndarray:
        from kernelc.fem.hexmesh import HEX_EDGES

        geo = self._geometry
        cells = geo.host_cell_vertices().astype(np.int64)
        kind, instance, _ = self._shape.node_types()
        out = np.ones((cells.shape[0], len(kind)))
        for n in range(len(kind)):
            if kind[n] == EDGE:
                a, b = HEX_EDGES[_CUBE_TO_HEX_EDGE[instance[n]]]
                out[:, n] = np.where(cells[:, a] > cells[:, b], -1.0, 1.0)
            elif kind[n] == FACE:
                local = instance[n]
                flip = geo.host_cell_face_orientations()[:, local] ^ (1 - local % 2)
                out[:, n] = np.where(flip & 1, -1.0, 1.0)
        return out


class SimplexVectorTopology(_Signed, SpaceTopology):
    """One node per edge (triangles: their sides; tetrahedra, Nedelec) or per face
    (tetrahedra, Raviart-Thomas) of a `Trimesh` or `Tetmesh`."""

    def _entities(self) -> tuple[int, np.ndarray]:
        geo = self._geometry
        if geo.reference_cell().dimension == 3 and self._shape.EDGE_NODE_COUNT:
            return geo.edge_count(), geo.host_cell_edges()
        return geo.side_count(), geo.host_cell_sides()

    def node_count(self) -> int:
        return self._entities()[0]

    def _cell_node_indices(self) -> np.ndarray:
        return self._entities()[1].astype(np.int64)

    def _signs(self) -> np.ndarray:
        geo = self._geometry
        cells = geo.host_cell_vertices().astype(np.int64)
        if geo.reference_cell().dimension == 2:
            sides = geo.host_cell_sides().astype(np.int64)
            signs = np.where(geo.host_side_vertices()[sides, 0] == cells, 1.0, -1.0)
            if self._shape.VALUE == COVARIANT:
                return signs
            turn = np.broadcast_to(_orientations(geo, 2)[:, None], signs.shape)
            local = np.broadcast_to(np.arange(3)[None, :], signs.shape)
            return _agree_with_inner_cell(geo, signs, turn, sides, local)
        if self._shape.EDGE_NODE_COUNT:
            ends = np.array(TET_EDGES)
            return np.where(cells[:, ends[:, 0]] > cells[:, ends[:, 1]], -1.0, 1.0)
        inner, _ = geo.side_cells(geo.host_cell_sides().reshape(-1))
        inner = inner.reshape(cells.shape[0], -1)
        return np.where(inner == np.arange(cells.shape[0])[:, None], 1.0, -1.0)


def _orientations(geo: Any, third: int) -> np.ndarray:
    """+1 for the cells of a 2-d mesh whose vertices 0, 1, `third` turn counter-clockwise,
    -1 for mirrored ones."""
    pos = geo.host_positions()[geo.host_cell_vertices().astype(np.int64)]
    a, b = pos[:, 1] - pos[:, 0], pos[:, third] - pos[:, 0]
    return np.where(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0] < 0.0, -1.0, 1.0)


def _agree_with_inner_cell(geo: Any, signs: np.ndarray, turn: np.ndarray, sides: np.ndarray,
                           local: np.ndarray) -> np.ndarray:
    """Raviart-Thomas signs on 2-d meshes. Warp signs a cell's edge node by the edge's
    direction only, which gives opposite normals in two cells that turn their reference
    normals differently from the edge (one sees it as an x-edge, the other as a y-edge, or
    one is mirrored): non-conforming fields. Here each side's normal is the one its inner
    cell gives it under Warp's rule, which the other cell's sign follows, so that the signs
    are Warp's wherever Warp's fields are conforming. `turn` (cells, nodes): +-1, how each
    cell's reference normal turns from its edge; `sides`, `local`: each node's side and
    local edge."""
    inner = geo.side_cells(sides.reshape(-1))[0].reshape(sides.shape)
    cell_sides = geo.host_cell_sides().astype(np.int64)
    inner_local = np.argmax(cell_sides[inner] == sides[..., None], axis=-1)
    node_of_local = np.argsort(local[0])
    inner_turn = turn[inner, node_of_local[inner_local]]
    return signs * turn * inner_turn


def make_vector_topology(geometry: Any, shape: Any, discontinuous: bool = False
                         ) -> SpaceTopology:
    """The topology of a Nedelec or Raviart-Thomas `shape` on `geometry` (not deformed)."""
    from kernelc.fem.grid2d import Grid2D
    from kernelc.fem.grid3d import Grid3D
    from kernelc.fem.mesh import Mesh

    if discontinuous:
        return DiscontinuousVectorTopology(geometry, shape)
    if isinstance(geometry, Grid2D):
        return Grid2DVectorTopology(geometry, shape)
    if isinstance(geometry, Grid3D):
        return Grid3DVectorTopology(geometry, shape)
    if isinstance(geometry, NanogridBase):
        return NanogridVectorTopology(geometry, shape)
    if isinstance(geometry, Mesh) and geometry.dimension == geometry.cell_dimension:
        topology = {"SQUARE": QuadmeshVectorTopology, "CUBE": HexmeshVectorTopology}.get(
            geometry.reference_cell().name, SimplexVectorTopology)
        return topology(geometry, shape)
    raise NotImplementedError(f"{shape.name} spaces on {geometry.name} are not supported yet")


def host_element_signs(topology: SpaceTopology) -> np.ndarray:
    """The (cells, nodes per cell) orientation signs of a vector-valued space's topology
    (that of its base geometry's topology on a deformed geometry)."""
    while not hasattr(topology, "host_element_signs"):
        topology = topology.base
    return topology.host_element_signs()


__all__ = ["make_vector_topology", "host_element_signs"]
