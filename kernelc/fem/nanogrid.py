"""`Nanogrid`: a sparse grid geometry whose cells are the active voxels of a `kc.Volume`
(Warp's `warp.fem.Nanogrid`).

Numbering (Warp's, so that dofs and matrices match): cells in the cell grid's voxel order;
vertices, faces and edges are the voxels of auxiliary index grids built with
`Volume.allocate_by_voxels` from every cell's corners, faces and edges, numbered in those
grids' voxel order. A face or an edge along axis a is the voxel of its lower corner with
bit 20 of coordinate a toggled (set for coordinates >= 0, cleared for negative ones), which
keeps the three axes apart in one grid. Sides are the faces; the boundary sides, the faces
with a cell on one side only, in face order.

Space topologies read these grids on the host: `NanogridTopology` numbers vertex nodes,
then edge nodes, then face nodes, then interior nodes, each block in its grid's order
(a node shared by neighbouring cells has one frame, the grid's axes, so no reorientation).
`NanogridBase` holds what `Nanogrid` shares with `AdaptiveNanogrid` (nanogrid_adaptive.py):
the transform, the index grids, and the voxels each cell's nodes sit at.
"""

from functools import cached_property
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.element import Element
from kernelc.fem.geometry import Geometry
from kernelc.fem.nanogrid_funcs import INNER_MISSING_BIT, OUTER_MISSING_BIT, nanogrid_funcs
from kernelc.fem.shape import INTERIOR, VERTEX
from kernelc.fem.shape_cube import EDGE, FACE
from kernelc.fem.topology_quadhex import HexmeshTopology
from kernelc.fem.types import mat_type, vec_type

AXIS_FLAG = 1 << 20


class NanogridBase(Geometry):
    """What regular and adaptive sparse grids share: a cell grid and its transform, index
    grids built from voxels, host lookups, environments and kernel arguments. Subclasses set
    `_cell_grid`, `_device`, `_cell_ijk_host`, `_node_grid` (the vertices), `_faces`, `_args`,
    the transform (`_init_transform`) and the environments (`_set_environments`), and say
    where each cell's nodes sit (`cell_vertex_voxels`, `cell_edge_voxels`,
    `cell_face_voxels`)."""

    dimension = 3
    _args: dict[Any, Any]
    _cell_grid: kc.Volume
    _device: Any
    _node_grid: kc.Volume
    _faces: tuple[kc.Volume, np.ndarray, np.ndarray, np.ndarray]
    _cell_ijk_host: np.ndarray

    def _index_grid(self, voxels: np.ndarray) -> kc.Volume:
        """An index grid with these voxels, of the cell grid's voxel size (as Warp builds
        its vertex, face and edge grids)."""
        points = kc.array(np.ascontiguousarray(voxels, dtype=np.int32), dtype=kc.vec3i,
                          device=self._device)
        return kc.Volume.allocate_by_voxels(points, voxel_size=self._cell_grid.get_voxel_size(),
                                            device=self._device)

    def _init_transform(self) -> None:
        # Warp's rule: a (near-)diagonal transform is inverted entry by entry.
        t = np.array(self.transform, dtype=np.float64).reshape(3, 3)
        diag = np.diag(t)
        mat33, vec3 = mat_type(3, 3, self._scalar_type), vec_type(3, self._scalar_type)
        if np.max(np.abs(t - np.diag(diag))) < 1.0e-6 * np.max(diag):
            inverse = np.diag(1.0 / diag)
            volume = diag[0] * diag[1] * diag[2]
            areas = (diag[1] * diag[2], diag[2] * diag[0], diag[0] * diag[1])
        else:
            inverse = np.linalg.inv(t)
            volume = abs(np.linalg.det(t))
            areas = tuple(np.linalg.norm(np.cross(t[:, k - 2], t[:, k - 1])) for k in range(3))
        self._inverse_transform = mat33(*[float(x) for x in inverse.reshape(-1)])
        self._cell_volume = float(volume)
        self._face_areas = vec3(*[float(a) for a in areas])

    # ---- Warp's properties -------------------------------------------------------------

    @property
    def transform(self) -> Any:
        """The 3x3 index-to-world matrix of the cell grid."""
        return self._cell_grid.get_grid_info().transform_matrix

    @property
    def cell_grid(self) -> kc.Volume:
        """The volume whose voxels are the cells."""
        return self._cell_grid

    @property
    def vertex_grid(self) -> kc.Volume:
        """The index grid of the cells' corners (its voxel order numbers the vertices)."""
        return self._node_grid

    @property
    def face_grid(self) -> kc.Volume:
        """The index grid of the cells' faces, axis-flagged (it numbers the sides)."""
        return self._faces[0]

    # ---- sizes -------------------------------------------------------------------------

    def cell_count(self) -> int:
        return len(self._cell_ijk_host)

    def vertex_count(self) -> int:
        return self._node_grid.get_voxel_count()

    def side_count(self) -> int:
        return len(self._faces[1])

    def boundary_side_count(self) -> int:
        return len(self.boundary_side_indices())

    def reference_cell(self) -> Element:
        return Element.CUBE

    def reference_side(self) -> Element:
        return Element.SQUARE

    def lookup_cells(self, ijk: np.ndarray) -> np.ndarray:
        """Cell index of each voxel (n, 3) of the cell grid, -1 where there is none."""
        return lookup_voxels(self._cell_grid, ijk)

    # ---- host topology -----------------------------------------------------------------

    def boundary_side_indices(self) -> np.ndarray:
        flags = self._faces[2]
        boundary = (flags >> INNER_MISSING_BIT) | (flags >> OUTER_MISSING_BIT)
        return np.flatnonzero(boundary & 1).astype(np.int32)

    def side_cells(self, sides: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cells = self._faces[3][np.asarray(sides, dtype=np.int64)]
        return cells[:, 0], cells[:, 1]


    # ---- where each cell's nodes sit (read by NanogridTopology) --------------------------

    def cell_vertex_voxels(self, corner: int) -> np.ndarray:
        """The vertex-grid voxel of corner `corner` (a cube's vertex numbering) of each
        cell."""
        return self._cell_ijk_host + _CUBE_CORNERS[corner]

    def cell_edge_voxels(self, edge: int) -> np.ndarray:
        """The edge-grid voxel of local edge `edge` of each cell (see `cell_edges`)."""
        return flag_axis(cell_edges(self._cell_ijk_host, edge), edge // 4)

    def cell_face_voxels(self, face: int) -> np.ndarray:
        """The face-grid voxel of local face `face` (2 axis + high end) of each cell."""
        axis, high = divmod(face, 2)
        return flag_axis(self._cell_ijk_host + np.eye(3, dtype=np.int32)[axis] * high, axis)

    def topology_edge_grid(self) -> kc.Volume:
        """The index grid numbering edge nodes."""
        return self.edge_grid

    def topology_face_grid(self) -> kc.Volume:
        """The index grid numbering face nodes."""
        return self.face_grid

    # ---- environments ------------------------------------------------------------------

    def _set_environments(self, cell_env: Any, env_offsets: Any) -> None:
        """Each cell's environment and each environment's offset in the cell grid (one
        environment at offset 0 when both are None)."""
        count = len(self._cell_ijk_host)
        offsets = np.zeros((1, 3), np.int32) if env_offsets is None else _host(env_offsets)
        offsets = offsets.astype(np.int32).reshape(-1, 3)
        if len(offsets) == 0:
            raise ValueError("Environment offsets must have at least one entry")
        envs = np.zeros(count, np.int32) if cell_env is None else _host(cell_env).reshape(-1)
        if len(envs) < count:
            raise ValueError(f"Cell environment array must have one entry per "
                             f"{type(self).__name__} cell ({count}), got {len(envs)}")
        envs = envs[:count].astype(np.int32)
        if count and (envs.min() < 0 or envs.max() >= len(offsets)):
            bad = int(np.flatnonzero((envs < 0) | (envs >= len(offsets)))[0])
            raise ValueError(f"Environment index {int(envs[bad])} of cell {bad} is out of "
                             f"bounds; expected a value in [0, {len(offsets)})")
        self._env_offsets_host, self._cell_env_host = offsets, envs
        self._cell_env = kc.array(envs, dtype=int, device=self._device)
        self._env_offsets = kc.array(offsets, dtype=kc.vec3i, device=self._device)
        self._args.clear()

    def environment_count(self) -> int:
        return len(self._env_offsets_host)

    @property
    def cell_env(self) -> Any:
        """The environment of each cell (an int array)."""
        return self._cell_env

    @property
    def env_offsets(self) -> Any:
        """Where each environment sits in the cell grid: the offset (a `kc.vec3i`) added to
        its voxels."""
        return self._env_offsets

    def _cell_ijk_local(self) -> np.ndarray:
        """Each cell's voxel in its environment's own coordinates."""
        return self._cell_ijk_host - self._env_offsets_host[self._cell_env_host]

    # ---- kernel arguments --------------------------------------------------------------

    def cell_arg_value(self, device: Any = None) -> Any:
        key = ("cell", str(kc.get_device(device)))
        if key not in self._args:
            arg = self.CellArg()
            arg.cell_grid = self._cell_grid.id
            # positions come from each environment's own (unpacked) voxels
            arg.cell_ijk = kc.array(self._cell_ijk_local(), dtype=kc.vec3i, device=device)
            arg.inverse_transform = self._inverse_transform
            arg.cell_volume = self._scalar_type(self._cell_volume)
            arg.cell_env = self._cell_env.to(device)
            arg.env_offsets = self._env_offsets.to(device)
            self._fill_cell_arg(arg, device)
            self._args[key] = arg
        return self._args[key]

    def side_arg_value(self, device: Any = None) -> Any:
        key = ("side", str(kc.get_device(device)))
        if key not in self._args:
            _, face_ijk, flags, _ = self._faces
            arg = self.SideArg()
            arg.cell_arg = self.cell_arg_value(device)
            face_env = self._cell_env_host[self._faces[3][:, 0]]
            local = face_ijk - self._env_offsets_host[face_env]
            arg.face_ijk = kc.array(local, dtype=kc.vec3i, device=device)
            arg.face_flags = kc.array(flags, dtype=kc.uint8, device=device)
            arg.face_areas = self._face_areas
            arg.face_env = kc.array(face_env.astype(np.int32), dtype=int, device=device)
            self._fill_side_arg(arg, device)
            self._args[key] = arg
        return self._args[key]

    def _fill_cell_arg(self, arg: Any, device: Any) -> None:
        """Sets the cell argument's fields of the subclass's own."""

    def _fill_side_arg(self, arg: Any, device: Any) -> None:
        """Sets the side argument's fields of the subclass's own."""


class Nanogrid(NanogridBase):
    """A sparse grid of hexahedral cells, one per active voxel of a volume.

    Args:
        grid: The volume. For an index grid made by `Volume.allocate_by_voxels` the cells
            are its active voxels; for other grids, every voxel of its leaves.
        temporary_store: Accepted for Warp compatibility (kernelc's construction needs no
            temporary pool).
        scalar_type: `kc.float32` or `kc.float64` positions.
        cell_env: The environment of each cell (int array; default: all in environment 0).
        env_offsets: Where each environment sits in the grid (`kc.vec3i` array, one per
            environment; default: one environment at offset 0). Cell positions subtract
            their environment's offset, so environments may overlap in space; see
            `from_environment_voxels`.
        rebuildable: Whether `rebuild` may change the cells in place (the volume must be
            rebuildable: `kc.Volume.allocate_by_voxels(..., rebuildable=True)`).
    """

    dimension = 3

    def __init__(self, grid: kc.Volume, temporary_store: Any = None,
                 scalar_type: Any = kc.float32, cell_env: Any = None, env_offsets: Any = None,
                 rebuildable: bool = False) -> None:
        super().__init__(scalar_type)
        if not isinstance(grid, kc.Volume):
            raise TypeError(f"Nanogrid needs a kc.Volume, got {type(grid).__name__}")
        if rebuildable and not grid.is_rebuildable:
            raise RuntimeError("Rebuildable Nanogrids require a rebuildable Volume")
        self._rebuildable = bool(rebuildable)
        self._cell_grid = grid
        self._device = grid.device
        self._args: dict[Any, Any] = {}
        self._set_cells()
        self._set_environments(cell_env, env_offsets)
        self._init_transform()
        funcs = nanogrid_funcs(scalar_type)
        self.CellArg, self.SideArg = funcs.CellArg, funcs.SideArg
        for name in self.CELL_FUNCS + self.SIDE_FUNCS + (
                "cell_lookup", "cell_coordinates", "cell_closest_point", "side_coordinates",
                "side_closest_point", "cell_environment_index", "side_environment_index"):
            setattr(self, name, getattr(funcs, name))

    @classmethod
    def from_environment_voxels(cls, points: Any = None, point_envs: Any = None,
                                env_count: int | None = None, env_offsets: Any = None, *,
                                point_mask: Any = None, guard_cells: int = 3,
                                voxel_size: Any = 1.0, translation: Any = (0.0, 0.0, 0.0),
                                transform: Any = None, temporary_store: Any = None,
                                scalar_type: Any = kc.float32, device: Any = None,
                                rebuildable: bool = False, max_active_voxels: int | None = None,
                                max_leaf_nodes: int | None = None,
                                max_lower_nodes: int | None = None,
                                max_upper_nodes: int | None = None, status: Any = None,
                                cell_ijks: Any = None) -> "Nanogrid":
        """A grid of several environments from voxels tagged with their environment.

        Args:
            points: Voxels (`kc.vec3i`) or world points (`kc.vec3f`), each in its own
                environment's coordinates (or Warp's older form: one `kc.vec3i` array
                per environment, with `point_envs` and `env_count` left out).
            point_envs: The environment of each point (int32).
            env_count: Number of environments.
            env_offsets: Where each environment goes in the packed grid (`kc.vec3i`, one
                per environment); by default environments are laid side by side along x,
                `guard_cells` empty voxels apart (see `kernelc/fem/nanogrid_env.py`).
            point_mask: Points where it is 0 are left out.
            rebuildable: Whether `rebuild` may change the cells (capacities as
                `kc.Volume.allocate_by_voxels`). An exact build raises ValueError for a
                used point whose environment is out of range; a rebuildable one drops it
                and sets `REBUILD_INVALID_INPUT` in `status`.

        Positions are each environment's own: `fem.lookup` and `PicQuadrature` take the
        environment to search (`env_index`, `env_indices`)."""
        from kernelc.fem.nanogrid_env import build_nanogrid, given_points

        points = given_points(points, cell_ijks)
        capacity = {k: v for k, v in (("max_active_voxels", max_active_voxels),
                                      ("max_leaf_nodes", max_leaf_nodes),
                                      ("max_lower_nodes", max_lower_nodes),
                                      ("max_upper_nodes", max_upper_nodes)) if v is not None}
        return build_nanogrid(cls, points, point_envs, env_count, env_offsets,
                              point_mask=point_mask, guard_cells=guard_cells,
                              voxel_size=voxel_size, translation=translation,
                              transform=transform, scalar_type=scalar_type, device=device,
                              rebuildable=rebuildable, status=status, capacity=capacity,
                              temporary_store=temporary_store)

    def _set_cells(self) -> None:
        """Reads the cells (the active voxels) from the cell grid, and makes the vertex
        grid; the face and edge grids follow when first needed."""
        grid = self._cell_grid
        self._cell_ijk_host = grid_voxels(grid)
        if len(self._cell_ijk_host) == 0:
            raise ValueError("Nanogrid requires at least one active cell")
        corners = self._cell_ijk_host[:, None, :] + _CUBE_CORNERS[None, :, :]
        self._node_grid = self._index_grid(corners.reshape(-1, 3))
        for derived in ("_faces", "_edges"):
            self.__dict__.pop(derived, None)
        self._args.clear()

    def rebuild(self, points: Any, point_envs: Any = None, *, status: Any = None,
                point_mask: Any = None) -> Any:
        """Rebuilds the cell grid from active voxel points (`kc.Volume.rebuild`), then the
        vertex, edge and face grids. Spaces made on the grid see the new cells once their
        topologies are rebuilt too (`space.topology.rebuild()`). Returns `status`.

        Unlike Warp's, a rebuilt kernelc Nanogrid counts its current cells, vertices and
        sides (Warp's counts are the volume's capacity). Inside a CPU graph capture,
        nothing changes now: each replay rebuilds from the arrays' contents then."""
        if not self._rebuildable:
            raise RuntimeError("Nanogrid was not constructed in rebuildable mode")
        from kernelc.fem.host_capture import cpu_capture, record

        capture = cpu_capture(self._device)
        if capture is not None:
            # Inside a CPU capture the rebuild runs at each replay, from the arrays'
            # contents then (as a captured CUDA rebuild does).
            record(capture, lambda: self._rebuild_now(points, point_envs, status, point_mask))
            return status
        return self._rebuild_now(points, point_envs, status, point_mask)

    def _rebuild_now(self, points: Any, point_envs: Any, status: Any, point_mask: Any
                     ) -> Any:
        if point_envs is not None:
            from kernelc.fem.nanogrid_env import rebuild_nanogrid
            return rebuild_nanogrid(self, points, point_envs, status, point_mask)
        if self.environment_count() > 1:
            raise ValueError("point_envs is required when rebuilding a multi-environment "
                             "Nanogrid")
        status = self._cell_grid.rebuild(points, status=status, point_mask=point_mask)
        self.rebuild_topology_from_cells()
        return status

    def rebuild_topology_from_cells(self) -> None:
        """Reads the cells again from the cell grid (after it was rebuilt). Inside a CPU
        graph capture it runs now and again at each replay."""
        if not self._rebuildable:
            raise RuntimeError("Nanogrid was not constructed in rebuildable mode")
        from kernelc.fem.host_capture import cpu_capture, record, suspended

        capture = cpu_capture(self._device)
        if capture is None:
            self._read_cells()
            return
        with suspended(capture):
            self._read_cells()
        record(capture, self._read_cells)

    def _read_cells(self) -> None:
        self._set_cells()
        self._set_environments(None, self._env_offsets_host)

    # ---- faces and edges ---------------------------------------------------------------

    @property
    def edge_grid(self) -> kc.Volume:
        """The index grid of the cells' edges, axis-flagged (it numbers the edges)."""
        return self._edges[0]

    def edge_count(self) -> int:
        """Number of edges."""
        return len(self._edges[1])

    @cached_property
    def _faces(self) -> tuple[kc.Volume, np.ndarray, np.ndarray, np.ndarray]:
        """(face grid, face ijk (the upper cell's), face flags, (inner, outer) cells)."""
        ijk = self._cell_ijk_host
        faces = [flag_axis(ijk + np.eye(3, dtype=np.int32)[a] * high, a)
                 for high in (0, 1) for a in range(3)]
        grid = self._index_grid(np.concatenate(faces))
        axis, face_ijk = unflag_axis(grid.get_voxels().numpy())
        below = face_ijk.copy()
        below[np.arange(len(below)), axis] -= 1
        above_cell, below_cell = self.lookup_cells(face_ijk), self.lookup_cells(below)
        flags = (axis | ((below_cell == -1) << INNER_MISSING_BIT)
                 | ((above_cell == -1) << OUTER_MISSING_BIT)).astype(np.uint8)
        inner = np.where(below_cell == -1, above_cell, below_cell)
        outer = np.where(above_cell == -1, below_cell, above_cell)
        return grid, face_ijk, flags, np.stack([inner, outer], axis=1).astype(np.int32)

    @cached_property
    def _edges(self) -> tuple[kc.Volume, np.ndarray]:
        """(edge grid, flagged edge ijk in grid order)."""
        grid = self._index_grid(np.concatenate(
            [flag_axis(cell_edges(self._cell_ijk_host, e), e // 4) for e in range(12)]))
        return grid, grid.get_voxels().numpy()

    # ---- host geometry ------------------------------------------------------------------

    def host_cell_positions(self, coords: np.ndarray) -> np.ndarray:
        info = self._cell_grid.get_grid_info()
        t = np.array(info.transform_matrix, dtype=np.float64).reshape(3, 3)
        uvw = (self._cell_ijk_local()[:, None, :].astype(np.float64)
               + np.asarray(coords, dtype=np.float64)[None, :, :3] - 0.5)
        return uvw @ t.T + np.asarray(info.translation, dtype=np.float64)

# ---- voxel helpers -----------------------------------------------------------------------

# Corner n of a cell is (n >> 2 & 1, n >> 1 & 1, n & 1), as a cube's vertex n.
_CUBE_CORNERS = np.array([[(n >> 2) & 1, (n >> 1) & 1, n & 1] for n in range(8)],
                         dtype=np.int32)


def _host(values: Any) -> np.ndarray:
    """A kc array or a sequence as a NumPy array."""
    return np.asarray(values.numpy() if hasattr(values, "numpy") else values)


def grid_voxels(volume: kc.Volume) -> np.ndarray:
    """The active voxels (n, 3) of a volume, in its voxel order (a rebuildable volume's
    buffer holds its capacity; the rows past the active ones are left out)."""
    voxels = volume.get_voxels().numpy()[:volume.get_active_stats().voxel_count]
    return np.ascontiguousarray(voxels, dtype=np.int32)


def flag_axis(ijk: np.ndarray, axis: Any) -> np.ndarray:
    """`ijk` (n, 3) with bit 20 of coordinate `axis` (an int or one per row) toggled on."""
    out = np.array(ijk, dtype=np.int32)
    rows = np.arange(len(out))
    c = out[rows, axis]
    out[rows, axis] = np.where(c < 0, c & ~AXIS_FLAG, c | AXIS_FLAG)
    return out


def unflag_axis(ijk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(axis, ijk with the axis flag removed) of axis-flagged voxels (n, 3)."""
    ijk = np.array(ijk, dtype=np.int32).reshape(-1, 3)
    flagged = np.where(ijk < 0, (ijk & AXIS_FLAG) == 0, (ijk & AXIS_FLAG) != 0)
    axis = np.argmax(flagged, axis=1)
    rows = np.arange(len(ijk))
    c = ijk[rows, axis]
    ijk[rows, axis] = np.where(c < 0, c | AXIS_FLAG, c & ~AXIS_FLAG)
    return axis, ijk


def cell_edges(cell_ijk: np.ndarray, edge: int) -> np.ndarray:
    """The lower corner of local edge `edge` of each cell: edges 4 a .. 4 a + 3 run along
    axis a, offset by (o >> 1, o & 1) along axes (a + 1, a + 2) for o = edge % 4."""
    axis, offset = divmod(edge, 4)
    out = np.array(cell_ijk, dtype=np.int32)
    out[:, (axis + 1) % 3] += offset >> 1
    out[:, (axis + 2) % 3] += offset & 1
    return out


@kc.kernel
def _lookup_voxels_kernel(volume: kc.uint64, ijk: kc.array(dtype=kc.vec3i),
                          out: kc.array(dtype=kc.int32)):
    i = kc.tid()
    v = ijk[i]
    out[i] = kc.volume_lookup_index(volume, v[0], v[1], v[2])


def lookup_voxels(volume: kc.Volume, ijk: np.ndarray) -> np.ndarray:
    """The index of each voxel (n, 3) in an index grid, -1 for voxels it does not hold."""
    ijk = np.ascontiguousarray(np.asarray(ijk, dtype=np.int32).reshape(-1, 3))
    device = volume.device
    out = kc.empty(len(ijk), dtype=kc.int32, device=device)
    if len(ijk):
        kc.launch(_lookup_voxels_kernel, len(ijk),
                  [volume.id, kc.array(ijk, dtype=kc.vec3i, device=device), out], device=device)
    return out.numpy().astype(np.int64)


class NanogridTopology(HexmeshTopology):
    """Continuous nodes of cube shape functions on a `Nanogrid` or an `AdaptiveNanogrid`
    (Warp's numbering: see the module's docstring; with an open family, all nodes are
    interior to their cell): vertex nodes, then edge, face and interior nodes, the first
    three numbered by the geometry's vertex grid and its topology edge and face grids."""

    def node_count(self) -> int:
        v, e, f, i = self._counts()
        geo = self._geometry
        edges = geo.topology_edge_grid().get_voxel_count() if e else 0
        faces = geo.topology_face_grid().get_voxel_count() if f else 0
        return geo.vertex_count() * v + edges * e + faces * f + geo.cell_count() * i

    def _cell_node_indices(self) -> np.ndarray:
        geo = self._geometry
        v_count, e_count, f_count, i_count = self._counts()
        kind, instance, index = self._shape.node_types()
        out = np.zeros((geo.cell_count(), len(kind)), dtype=np.int64)
        edge_block = geo.vertex_count() * v_count
        face_block = edge_block + (
            geo.topology_edge_grid().get_voxel_count() * e_count if e_count else 0)
        for n in range(len(kind)):
            if kind[n] == VERTEX:
                voxel, grid, count = geo.cell_vertex_voxels(instance[n]), geo.vertex_grid, v_count
                block = 0
            elif kind[n] == EDGE:
                voxel, grid = geo.cell_edge_voxels(instance[n]), geo.topology_edge_grid()
                count, block = e_count, edge_block
            elif kind[n] == FACE:
                voxel, grid = geo.cell_face_voxels(instance[n]), geo.topology_face_grid()
                count, block = f_count, face_block
            else:
                continue
            out[:, n] = block + count * lookup_voxels(grid, voxel) + index[n]
        offset = self.node_count() - geo.cell_count() * i_count
        interior = kind == INTERIOR
        cell = np.arange(geo.cell_count())[:, None]
        out[:, interior] = offset + cell * i_count + index[None, interior]
        return out
