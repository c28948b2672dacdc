"""Space topologies: the global node index of each node of each cell (Warp's `SpaceTopology`).

Node numbers are computed on the host with NumPy, once per topology, as a (cells, nodes per
cell) table; kernels read that table. On sides, a topology is traced: side nodes are the
nodes of the side's inner cell followed by those of its outer cell (the same cell again
on the boundary), as in Warp, so `2 * NODES_PER_ELEMENT` per side.

Grid numberings are Warp's:
- Lagrange bases with nodes on the element ends (Gauss-Lobatto, closed Newton-Cotes) live
  on the global node grid: node (x, y) is x * (res[1] * k + 1) + y, (x, y, z) likewise;
- other bases (serendipity, ...) on 2-D grids number vertex nodes first (vertex-major),
  then interior nodes (cell-major), then side nodes (by side index); on 3-D grids, vertex,
  edge, face then interior nodes (`topology_grid3d.py`).

Mesh numberings: `topology_mesh.py` (triangles, tetrahedra), `topology_quadhex.py`
(quadrilaterals, hexahedra).
"""

from functools import cached_property
from typing import Any

import numpy as np

from kernelc.fem.geometry import Geometry
from kernelc.fem.polynomial import is_closed
from kernelc.fem.shape import EDGE_X, INTERIOR, VERTEX, ShapeFunction


class SpaceTopology:
    """Which global node each node of each element is (Warp's `warp.fem.SpaceTopology`)."""

    def __init__(self, geometry: Geometry, shape: ShapeFunction) -> None:
        self._geometry = geometry
        self._shape = shape
        self.MAX_NODES_PER_ELEMENT = shape.NODES_PER_ELEMENT
        self.dimension = geometry.dimension

    @property
    def geometry(self) -> Geometry:
        """The geometry whose cells carry the nodes."""
        return self._geometry

    @property
    def name(self) -> str:
        """Identifies the numbering scheme (not the resolution)."""
        return f"{type(self).__name__}_{self._geometry.name}_{self._shape.name}"

    def node_count(self) -> int:
        """Number of global nodes."""
        raise NotImplementedError

    def _cell_node_indices(self) -> np.ndarray:
        raise NotImplementedError

    def rebuild(self) -> None:
        """Numbers the nodes again after the geometry changed (`Nanogrid.rebuild`). The
        nodes are numbered when next needed; inside a CPU graph capture, again after each
        replay (which may rebuild the geometry)."""
        from kernelc.fem.host_capture import cpu_capture, record

        self._forget_nodes()
        capture = cpu_capture()
        if capture is not None:
            record(capture, self._forget_nodes)

    def _forget_nodes(self) -> None:
        for klass in type(self).__mro__:
            for name, value in vars(klass).items():
                if isinstance(value, cached_property):
                    self.__dict__.pop(name, None)
        # and what other modules keep on it: element nodes on devices (field_nodes.py),
        # restrictions to domains (restriction.py)
        for cache in ("_device_element_nodes", "_restrictions"):
            self.__dict__.pop(cache, None)

    @cached_property
    def _element_nodes(self) -> np.ndarray:
        nodes = np.ascontiguousarray(self._cell_node_indices(), dtype=np.int32)
        nodes.setflags(write=False)
        return nodes

    def element_node_indices(self, out: Any = None) -> Any:
        """(cells, nodes per cell) global node indices, as a `kc.array` of int32."""
        import kernelc as kc

        if out is None:
            return kc.array(self._element_nodes, dtype=kc.int32)
        out.assign(self._element_nodes)
        return out

    def host_element_nodes(self) -> np.ndarray:
        """(cells, nodes per cell) global node indices as a read-only NumPy array."""
        return self._element_nodes

    def host_side_nodes(self, sides: np.ndarray) -> np.ndarray:
        """(sides, 2 * nodes per cell): the nodes of each side's inner cell, then outer cell."""
        inner, outer = self._geometry.side_cells(sides)
        nodes = self._element_nodes
        return np.concatenate([nodes[inner], nodes[outer]], axis=1)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, SpaceTopology) and self._geometry is other._geometry
                and self.name == other.name)

    def __hash__(self) -> int:
        return hash((id(self._geometry), self.name))


class GridNodeGridTopology(SpaceTopology):
    """Closed-family Lagrange bases on grids: nodes on one global (k * res + 1) grid."""

    def node_count(self) -> int:
        k = self._shape.ORDER
        return int(np.prod([k * int(r) + 1 for r in self._geometry.res]))

    def _cell_node_indices(self) -> np.ndarray:
        k = self._shape.ORDER
        res = [int(r) for r in self._geometry.res]
        dim = len(res)
        cells = np.indices(res).reshape(dim, -1).T  # cell-major, last axis fastest
        local = np.indices([k + 1] * dim).reshape(dim, -1).T  # node-major, last fastest
        pitch = [k * r + 1 for r in res]
        strides = [int(np.prod(pitch[a + 1:])) for a in range(dim)]
        grid = cells[:, None, :] * k + local[None, :, :]
        return np.tensordot(grid, np.array(strides), axes=([2], [0]))


class Grid2DElementTopology(SpaceTopology):
    """Vertex / interior / side numbering on 2-D grids (serendipity and open families)."""

    def _counts(self) -> tuple[int, int, int]:
        s = self._shape
        return s.VERTEX_NODE_COUNT, s.EDGE_NODE_COUNT, s.INTERIOR_NODE_COUNT

    def node_count(self) -> int:
        v, e, i = self._counts()
        g = self._geometry
        return g.vertex_count() * v + g.side_count() * e + g.cell_count() * i

    def _cell_node_indices(self) -> np.ndarray:
        g = self._geometry
        v_count, e_count, i_count = self._counts()
        res1 = int(g.res[1])
        cell = np.arange(g.cell_count())[:, None]
        cx, cy = cell // res1, cell % res1
        n = self._shape.NODES_PER_ELEMENT
        if i_count == n:  # open families: every node is interior to its cell
            return cell * n + np.arange(n)[None, :]
        kind, instance, index = (a[None, :] for a in self._shape.node_types())
        vertex = (cx + instance // 2) * (res1 + 1) + (cy + instance % 2)
        out = np.where(kind == VERTEX, vertex * v_count + index, 0)
        offset = g.vertex_count() * v_count
        out = np.where(kind == INTERIOR, offset + cell * i_count + index, out)
        offset += g.cell_count() * i_count
        # An x-edge node lies on a side y = const (axis 1), a y-edge node on x = const.
        axis = np.where(kind == EDGE_X, 1, 0)
        altitude = np.where(axis == 0, cx, cy) + instance
        longitude = np.where(axis == 0, cy, cx)
        side = g._side_index(np.broadcast_to(axis, out.shape), altitude, longitude)
        edge = (kind != VERTEX) & (kind != INTERIOR)
        return np.where(edge, offset + side * e_count + index, out)


class DiscontinuousTopology(SpaceTopology):
    """Every cell owns its nodes: node n of cell c is c * nodes per cell + n (Warp's
    `RegularDiscontinuousSpaceTopology`, also used for degree 0)."""

    @property
    def name(self) -> str:
        return f"Discontinuous_{self._geometry.name}_{self._shape.name}"

    def node_count(self) -> int:
        return self._geometry.cell_count() * self.MAX_NODES_PER_ELEMENT

    def _cell_node_indices(self) -> np.ndarray:
        n = self.MAX_NODES_PER_ELEMENT
        cell = np.arange(self._geometry.cell_count())[:, None]
        return cell * n + np.arange(n)[None, :]


class EnvironmentTopology(SpaceTopology):
    """The nodes of a dense grid of several environments: those of one environment's grid
    (`base`, a topology on a grid of one environment), numbered environment after
    environment (Warp's numbering)."""

    def __init__(self, geometry: Geometry, base: SpaceTopology) -> None:
        super().__init__(geometry, base._shape)
        self.base = base

    @property
    def name(self) -> str:
        return f"{self.base.name}_env"

    def node_count(self) -> int:
        return self._geometry.environment_count() * self.base.node_count()

    def _cell_node_indices(self) -> np.ndarray:
        nodes = self.base.host_element_nodes().astype(np.int64)
        envs = self._geometry.environment_count()
        shift = np.arange(envs, dtype=np.int64)[:, None, None] * self.base.node_count()
        return np.where(nodes[None] >= 0, nodes[None] + shift, nodes[None]).reshape(
            -1, nodes.shape[1])


def make_topology(geometry: Geometry, shape: ShapeFunction,
                  discontinuous: bool = False) -> SpaceTopology:
    """The topology Warp uses for `shape` on `geometry` (per-cell nodes when
    `discontinuous` or of degree 0)."""
    from kernelc.fem.grid2d import Grid2D
    from kernelc.fem.grid3d import Grid3D

    if isinstance(geometry, (Grid2D, Grid3D)) and geometry.environment_count() > 1:
        if hasattr(shape, "VALUE") or getattr(shape, "BSPLINE", False):
            raise NotImplementedError(f"{shape.name} spaces on grids of several environments "
                                      "are not supported yet")
        one = type(geometry)(geometry.res, geometry.bounds_lo, geometry.bounds_hi,
                             geometry.scalar_type)
        return EnvironmentTopology(geometry, make_topology(one, shape, discontinuous))

    if isinstance(geometry, Geometry) and geometry.base is not geometry:
        # a deformed geometry numbers its nodes as its base does
        from kernelc.fem.deformed import DeformedTopology

        return DeformedTopology(geometry, make_topology(geometry.base, shape, discontinuous))
    if hasattr(shape, "VALUE"):  # Nedelec, Raviart-Thomas: signed edge / side nodes
        from kernelc.fem.topology_vector import make_vector_topology

        return make_vector_topology(geometry, shape, discontinuous)
    if discontinuous or shape.ORDER == 0:
        if not isinstance(geometry, Geometry):
            raise NotImplementedError(f"function spaces on {geometry.name} are not supported yet")
        return DiscontinuousTopology(geometry, shape)
    if getattr(shape, "BSPLINE", False):  # padded vertex nodes: topology_bspline.py
        from kernelc.fem.topology_bspline import make_bspline_topology

        return make_bspline_topology(geometry, shape)

    closed_lagrange = shape.TENSOR_LAGRANGE and is_closed(shape.family)
    if isinstance(geometry, Grid2D):
        if closed_lagrange:
            return GridNodeGridTopology(geometry, shape)
        return Grid2DElementTopology(geometry, shape)
    if isinstance(geometry, Grid3D):
        if closed_lagrange:
            return GridNodeGridTopology(geometry, shape)
        from kernelc.fem.topology_grid3d import Grid3DElementTopology

        return Grid3DElementTopology(geometry, shape)
    from kernelc.fem.nanogrid import NanogridBase, NanogridTopology

    if isinstance(geometry, NanogridBase):
        return NanogridTopology(geometry, shape)
    from kernelc.fem.mesh import Mesh

    if isinstance(geometry, Mesh):
        from kernelc.fem.topology_mesh import SimplexMeshTopology
        from kernelc.fem.topology_quadhex import HexmeshTopology, QuadmeshTopology

        topology = {"SQUARE": QuadmeshTopology, "CUBE": HexmeshTopology}.get(
            geometry.reference_cell().name, SimplexMeshTopology)
        return topology(geometry, shape)
    raise NotImplementedError(f"function spaces on {geometry.name} are not supported yet")
