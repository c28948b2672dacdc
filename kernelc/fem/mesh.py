"""What the unstructured meshes (`Trimesh2D`, `Trimesh3D`, `Tetmesh`, `Quadmesh2D`,
`Quadmesh3D`, `Hexmesh`) share: vertex positions and cell vertex indices given by the user,
sides and edges found on the host with NumPy, in Warp's order.

Warp numbers the sub-elements (edges of triangles and quadrilaterals, faces and edges of
tetrahedra and hexahedra) by their smallest vertex, then in the order they are met going
through that vertex's cells in increasing order, each cell's sub-elements in their local
order. A side's inner cell is the first cell met, its outer cell the last one (the same cell
for a boundary side), and boundary sides are listed in side order.
"""

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.geometry import Geometry


@dataclass(frozen=True)
class SubSimplices:
    """The distinct sub-elements (edges or faces) of a mesh's cells, in Warp's order.

    Attributes:
        vertices: (n, k) vertex indices, smallest first, then increasing.
        first_cell: Cell in which each was met first.
        last_cell: Cell in which each was met last.
        cell_index: (cells, sub-simplices per cell) index of each local sub-simplex.
    """

    vertices: np.ndarray
    first_cell: np.ndarray
    last_cell: np.ndarray
    cell_index: np.ndarray


def sub_simplices(cells: np.ndarray, local: list[tuple[int, ...]]) -> SubSimplices:
    """The distinct sub-elements spanned by the `local` vertex tuples of each cell (two
    tuples with the same vertices are the same sub-element).

    Args:
        cells: (cells, vertices per cell) vertex indices.
        local: Each sub-element of a cell as positions in the cell's vertex list.
    """
    cell_count, per_cell = cells.shape[0], len(local)
    keys = np.sort(np.stack([cells[:, list(t)] for t in local], axis=1), axis=2)
    keys = keys.reshape(cell_count * per_cell, -1)
    # Entries are already ordered by (cell, local index); a stable sort by smallest vertex
    # gives the order in which Warp meets them.
    order = np.argsort(keys[:, 0], kind="stable")
    sorted_keys = keys[order]
    _, first, inverse = np.unique(sorted_keys, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    ids_sorted = rank[inverse]
    last = np.zeros(len(first), dtype=np.int64)  # by unique key, as `first`
    np.maximum.at(last, inverse, np.arange(len(order)))
    entry_cell = order // per_cell
    by_rank = np.argsort(rank)
    cell_index = np.empty(cell_count * per_cell, dtype=np.int32)
    cell_index[order] = ids_sorted
    return SubSimplices(vertices=sorted_keys[first[by_rank]].astype(np.int32),
                        first_cell=entry_cell[first[by_rank]].astype(np.int32),
                        last_cell=entry_cell[last[by_rank]].astype(np.int32),
                        cell_index=cell_index.reshape(cell_count, per_cell))


def orient_edges(positions: np.ndarray, vertices: np.ndarray, inner_centroids: np.ndarray,
                 cell_normals: np.ndarray | None = None) -> np.ndarray:
    """Edges (sides of 2-d cells) reversed where needed so that their normal points out of
    their inner cell, as Warp orients them.

    Args:
        positions: (vertices, dimension) vertex positions.
        vertices: (edges, 2) vertex indices of each edge.
        inner_centroids: (edges, dimension) centroid of each edge's inner cell.
        cell_normals: (edges, 3) normal of each edge's inner cell, for cells in space; in
            the plane the edge's normal is its direction turned clockwise.
    """
    v0, v1 = positions[vertices[:, 0]], positions[vertices[:, 1]]
    edge = v1 - v0
    if cell_normals is None:
        normal = np.stack([edge[:, 1], -edge[:, 0]], axis=1)
    else:
        normal = np.cross(edge, cell_normals)
    towards_inner = np.einsum("ij,ij->i", inner_centroids - 0.5 * (v0 + v1), normal) > 0.0
    return np.where(towards_inner[:, None], vertices[:, ::-1], vertices)


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


class Mesh(Geometry):
    """Base of unstructured meshes: cells given by vertex indices, positions by a `kc.array`
    of vectors (whose length is the geometry's dimension and scalar its precision).

    Subclasses set `_CELL_VERTICES`, `_SIDE_LOCAL` (the sides of a cell, as vertex
    positions) and build their funcs in `_bind_funcs`.
    """

    _CELL_VERTICES: int
    _SIDE_LOCAL: list[tuple[int, ...]]
    _DIMENSIONS: tuple[int, ...]  # lengths the position vectors may have
    _lookup_needs_bvh = True

    def __init__(self, cell_vertex_indices: Any, positions: Any, name: str) -> None:
        positions = _as_positions(positions)
        vector = kc.types.as_type(positions.dtype)
        if vector.length not in self._DIMENSIONS:
            raise TypeError(f"{name} positions must be " + " or ".join(
                f"vec{d}" for d in self._DIMENSIONS) + f", got {vector!r}")
        super().__init__(vector.dtype)
        self.dimension = vector.length
        self.positions = positions
        indices = cell_vertex_indices
        if not isinstance(indices, kc.array):
            indices = kc.array(np.asarray(indices, dtype=np.int32), dtype=kc.int32)
        host = np.asarray(indices.numpy(), dtype=np.int64).reshape(-1, self._CELL_VERTICES)
        bad = np.flatnonzero((host < 0) | (host >= positions.shape[0]))
        if bad.size:
            raise ValueError(f"{name}: Vertex index {host.flat[bad[0]]} at flattened array index "
                             f"{bad[0]} is out of bounds; expected a value in "
                             f"[0, {positions.shape[0]})")
        if indices.ndim != 2:
            indices = kc.array(host.astype(np.int32), dtype=kc.int32, device=indices.device)
        self._cell_vertices = indices
        self._host_cells = _readonly(host.astype(np.int32))
        sides = sub_simplices(host, self._SIDE_LOCAL)
        side_vertices = self._orient_sides(sides.vertices, sides.first_cell)
        self._host_side_vertices = _readonly(side_vertices)
        self._host_side_cells = _readonly(np.stack([sides.first_cell, sides.last_cell], axis=1))
        self._host_cell_sides = _readonly(sides.cell_index)
        self._host_boundary = _readonly(
            np.flatnonzero(sides.first_cell == sides.last_cell).astype(np.int32))
        self._args: dict[Any, Any] = {}
        self._device_arrays: dict[str, tuple] = {}

    # ---- sizes -------------------------------------------------------------------------

    def cell_count(self) -> int:
        return int(self._host_cells.shape[0])

    def vertex_count(self) -> int:
        return int(self.positions.shape[0])

    def side_count(self) -> int:
        return int(self._host_side_vertices.shape[0])

    def boundary_side_count(self) -> int:
        return int(self._host_boundary.shape[0])

    # ---- host topology -----------------------------------------------------------------

    def host_positions(self) -> np.ndarray:
        """(vertices, dimension) positions in float64."""
        return np.asarray(self.positions.numpy(), dtype=np.float64).reshape(-1, self.dimension)

    def host_cell_vertices(self) -> np.ndarray:
        """(cells, vertices per cell) vertex indices (read-only)."""
        return self._host_cells

    def host_side_vertices(self) -> np.ndarray:
        """(sides, vertices per side) vertex indices, oriented as Warp orients them."""
        return self._host_side_vertices

    def host_cell_sides(self) -> np.ndarray:
        """(cells, sides per cell) side index of each local side of each cell."""
        return self._host_cell_sides

    def boundary_side_indices(self) -> np.ndarray:
        return self._host_boundary

    def side_cells(self, sides: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sides = np.asarray(sides, dtype=np.int64)
        return self._host_side_cells[sides, 0], self._host_side_cells[sides, 1]

    def _orient_sides(self, vertices: np.ndarray, inner: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _centroids(self, cells: np.ndarray) -> np.ndarray:
        return self.host_positions()[self._host_cells[cells]].mean(axis=1)

    # ---- kernel arguments --------------------------------------------------------------

    def _topology_arrays(self, device: Any) -> tuple:
        """(side vertices, side cells) as `kc.array`s of int vectors on `device`."""
        key = str(kc.get_device(device))
        if key not in self._device_arrays:
            side_type = {2: kc.vec2i, 3: kc.vec3i, 4: kc.vec4i}[
                self._host_side_vertices.shape[1]]
            self._device_arrays[key] = (
                kc.array(self._host_side_vertices, dtype=side_type, device=device),
                kc.array(self._host_side_cells, dtype=kc.vec2i, device=device))
        return self._device_arrays[key]

    # ---- environments ------------------------------------------------------------------

    def _set_environments(self, cell_env: Any, env_count: Any) -> None:
        """Each cell's environment (Warp's checks and messages): None for one environment."""
        self._env_count, self._cell_env = 1, None
        if cell_env is None:
            if env_count not in (None, 1):
                raise ValueError("Environment count can only be greater than one when cell "
                                 "environment indices are provided")
            return
        if env_count is None:
            raise ValueError("Environment count must be provided when cell environment "
                             "indices are provided")
        if int(env_count) < 1:
            raise ValueError("Environment count must be at least one")
        if not isinstance(cell_env, kc.array):
            raise ValueError("Cell environment indices must be a kernelc array")
        if cell_env.ndim != 1 or cell_env.shape[0] != self.cell_count():
            raise ValueError("Cell environment indices must have one entry per cell")
        if kc.types.as_type(cell_env.dtype) != kc.types.as_type(kc.int32):
            raise ValueError("Cell environment indices must have dtype wp.int32")
        self._env_count, self._cell_env = int(env_count), cell_env

    def environment_count(self) -> int:
        return getattr(self, "_env_count", 1)

    @property
    def cell_env(self) -> Any:
        """Each cell's environment (an int32 array), None for one environment."""
        return getattr(self, "_cell_env", None)

    def _env_name(self) -> str:
        return "_env" if self.environment_count() > 1 else ""

    def cell_arg_value(self, device: Any = None) -> Any:
        key = ("cell", str(kc.get_device(device)))
        if key not in self._args:
            arg = self.CellArg()
            arg.cell_vertices = self._cell_vertices.to(device)
            arg.positions = self.positions.to(device)
            cell_env = self.cell_env
            arg.cell_env = (kc.zeros(self.cell_count(), dtype=int, device=device)
                            if cell_env is None else cell_env.to(device))
            self._args[key] = arg
        return self._args[key]

    def side_arg_value(self, device: Any = None) -> Any:
        key = ("side", str(kc.get_device(device)))
        if key not in self._args:
            arg = self.SideArg()
            arg.cell_arg = self.cell_arg_value(device)
            arg.side_vertices, arg.side_cells = self._topology_arrays(device)
            self._fill_side_arg(arg, device)
            self._args[key] = arg
        return self._args[key]

    def _fill_side_arg(self, arg: Any, device: Any) -> None:
        """Sets the fields of the side argument that only some meshes have."""

    def _bind(self, funcs: Any) -> None:
        self.CellArg, self.SideArg = funcs.CellArg, funcs.SideArg
        for name in self.CELL_FUNCS + self.SIDE_FUNCS + (
                "cell_lookup", "cell_environment_index", "side_environment_index"):
            setattr(self, name, getattr(funcs, name))


class CellEdges:
    """The edges of a mesh of 3-d cells (`Tetmesh`, `Hexmesh`), numbered as its sides are
    (see the module's docstring); mixed into a `Mesh` that sets `_EDGE_LOCAL`."""

    _EDGE_LOCAL: list[tuple[int, int]]
    _host_cells: np.ndarray

    @cached_property
    def _edges(self) -> SubSimplices:
        return sub_simplices(self._host_cells.astype(np.int64), self._EDGE_LOCAL)

    def edge_count(self) -> int:
        """Number of edges."""
        return int(self._edges.vertices.shape[0])

    def host_cell_edges(self) -> np.ndarray:
        """(cells, edges per cell) edge index of each local edge of each cell."""
        return self._edges.cell_index


def _as_positions(positions: Any) -> Any:
    """`positions` as a `kc.array` of vectors (NumPy (n, d) arrays become float32 vectors)."""
    if isinstance(positions, kc.array):
        t = kc.types.as_type(positions.dtype)
        if not isinstance(t, kc.types.VectorType):
            raise TypeError(f"mesh positions must be an array of vectors, got {t!r}")
        return positions
    data = np.asarray(positions)
    if data.ndim != 2 or data.shape[1] not in (2, 3):
        raise TypeError("mesh positions must be an (n, 2) or (n, 3) array")
    return kc.array(data, dtype=kc.types.vector(length=data.shape[1], dtype=kc.float32))


def mesh_struct(name: str, fields: dict[str, Any]) -> type:
    """A kernelc struct type with the given fields (a cell argument also gets `cell_env`,
    each cell's environment)."""
    if "CellArg" in name:
        fields = {**fields, "cell_env": kc.array(dtype=int)}
    return kc.struct(type(name, (), {"__annotations__": dict(fields)}))


def side_cell_funcs(SideArg: type, Coords: type, inverse_gradient: Any, side_measure: Any,
                    cell_measure: Any, inner_cell: Any, outer_cell: Any,
                    inner_coords: Any = None, outer_coords: Any = None) -> dict[str, Any]:
    """The side funcs every mesh defines alike from its cell funcs: the inverse deformation
    gradients seen from the inner and outer cell (called with the sample moved to that
    cell, see `field_eval.py`), and the side's measure over the smaller of its two cells'
    measures. Simplices have constant cell measures; meshes whose cell measures vary
    (quadrilaterals, hexahedra) pass `inner_coords` / `outer_coords`, the side-to-cell
    coordinate maps, so that the cells are measured at the side's point, as in Warp."""
    from kernelc.fem.types import make_free_sample

    at_point = inner_coords is not None

    @kc.func
    def side_inner_inverse_deformation_gradient(arg: SideArg, cell_s: Any):
        return inverse_gradient(arg.cell_arg, cell_s)

    @kc.func
    def side_outer_inverse_deformation_gradient(arg: SideArg, cell_s: Any):
        return inverse_gradient(arg.cell_arg, cell_s)

    @kc.func
    def side_measure_ratio(arg: SideArg, s: Any):
        side = s.element_index
        inner_at = Coords()
        outer_at = Coords()
        if kc.static(at_point):
            inner_at = inner_coords(arg, side, s.element_coords)
            outer_at = outer_coords(arg, side, s.element_coords)
        inner = make_free_sample(inner_cell(arg, side), inner_at)
        outer = make_free_sample(outer_cell(arg, side), outer_at)
        return side_measure(arg, s) / kc.min(cell_measure(arg.cell_arg, inner),
                                             cell_measure(arg.cell_arg, outer))

    @kc.func
    def cell_environment_index(arg: Any, s: Any):
        return arg.cell_env[s.element_index]

    @kc.func
    def side_environment_index(arg: SideArg, s: Any):
        # a side is in its inner cell's environment
        return arg.cell_arg.cell_env[arg.side_cells[s.element_index][0]]

    return {"side_inner_inverse_deformation_gradient": side_inner_inverse_deformation_gradient,
            "side_outer_inverse_deformation_gradient": side_outer_inverse_deformation_gradient,
            "side_measure_ratio": side_measure_ratio,
            "cell_environment_index": cell_environment_index,
            "side_environment_index": side_environment_index}


def closest_cell_lookup(CellArg: type, triangle: bool, scalar: Any) -> Any:
    """The `cell_lookup` overloads (`lookup.py`) of triangle or tetrahedron meshes: the cell
    closest to the position (a point inside a cell has distance 0), found by going through
    every cell: meshes keep no spatial index (Warp needs `build_bvh=True` for this; here it
    always works). Each cell's closest point is Warp's (`closest_point.py`), so points on
    vertices and edges get Warp's exact coordinates; of cells at the same distance, the
    first wins (Warp's is the last its BVH visits)."""
    from functools import partial

    from kernelc.fem.closest_point import closest_point_funcs
    from kernelc.fem.lookup import closest_search, environment_overloads, vertex_cell_count
    from kernelc.fem.types import sample_type

    funcs = closest_point_funcs(scalar)
    on_tri, on_tet = funcs.on_triangle, funcs.on_tetrahedron

    @kc.func
    def closest_on_triangle(arg: CellArg, cell: int, pos: Any):
        p0 = arg.positions[arg.cell_vertices[cell, 0]]
        e1 = arg.positions[arg.cell_vertices[cell, 1]] - p0
        e2 = arg.positions[arg.cell_vertices[cell, 2]] - p0
        dist, coords = on_tri(pos - p0, e1, e2)
        return coords, dist

    @kc.func
    def closest_on_tetrahedron(arg: CellArg, cell: int, pos: Any):
        p0 = arg.positions[arg.cell_vertices[cell, 0]]
        e1 = arg.positions[arg.cell_vertices[cell, 1]] - p0
        e2 = arg.positions[arg.cell_vertices[cell, 2]] - p0
        e3 = arg.positions[arg.cell_vertices[cell, 3]] - p0
        dist, coords = on_tet(pos - p0, e1, e2, e3)
        return coords, dist

    closest_point = closest_on_triangle if triangle else closest_on_tetrahedron
    return environment_overloads(CellArg, sample_type(scalar), partial(
        closest_search, scalar, CellArg, vertex_cell_count, closest_point, environments=True))
