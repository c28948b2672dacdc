"""`AdaptiveNanogrid`: a sparse grid whose cells have levels, a cell of level l spanning
2^l fine voxels a side (Warp's `warp.fem.AdaptiveNanogrid`; build one with
`adaptive_nanogrid_from_field` or `adaptive_nanogrid_from_hierarchy`, adaptivity.py).

Numbering (Warp's, so that dofs and matrices match):
- cells: the cell grid's voxel order, a cell being stored at its lowest fine voxel;
- vertices: the voxels of an index grid of every cell's eight corners (a corner of a fine
  cell lying on a coarse cell's face is a vertex of the fine cell only);
- sides: the voxels of an index grid of every cell's six faces, each at its lower corner,
  completed where cells of different levels meet by the faces of the finer level, so that
  a side never spans more than one cell on either hand;
- edge and face nodes of function spaces: "stacked" grids, where an edge or a face is
  keyed by its cell's level as well (bit 19 of coordinate a holds bit a of the level), so
  that a coarse face and the fine faces on it carry nodes of their own. Spaces are
  therefore not conforming where levels meet; Warp's adaptive example adds the jump terms.
"""

from functools import cached_property
from typing import Any

import numpy as np

import kernelc as kc
from kernelc.fem.nanogrid import (
    _CUBE_CORNERS,
    AXIS_FLAG,
    NanogridBase,
    cell_edges,
    flag_axis,
    grid_voxels,
    lookup_voxels,
    unflag_axis,
)
from kernelc.fem.nanogrid_adaptive_funcs import (
    FACE_LEVEL_SHIFT,
    adaptive_nanogrid_funcs,
    coarse_ijk,
    find_cell,
    fine_ijk,
)
from kernelc.fem.nanogrid_funcs import INNER_MISSING_BIT, OUTER_MISSING_BIT

LEVEL_FLAG = AXIS_FLAG >> 1
MAX_LEVELS = 8


class AdaptiveNanogrid(NanogridBase):
    """A sparse grid of hexahedral cells of several sizes.

    Args:
        cell_grid: A volume (an index grid) with one active voxel per cell, the cell's
            lowest fine voxel: a cell of level l at voxel ijk spans ijk to ijk + 2^l - 1.
        cell_level: The level of each voxel of `cell_grid`, in its voxel order (uint8;
            0 is the finest level).
        level_count: The number of levels (at most 8).
        temporary_store: Accepted for Warp compatibility.
        scalar_type: `kc.float32` or `kc.float64` positions.
        cell_env: The environment of each cell (int array; default: all in environment 0).
        env_offsets: Each environment's offset in the grid (`kc.vec3i` array, fine voxels,
            multiples of the coarsest cell size; default: one environment at 0).
    """

    dimension = 3
    # Warp's static kernel funcs on the class
    find_cell = find_cell
    fine_ijk = fine_ijk
    coarse_ijk = coarse_ijk

    @classmethod
    def from_environment_voxels(cls, points: Any = None, cell_levels: Any = None,
                                point_envs: Any = None, env_count: Any = None,
                                level_count: int | None = None, env_offsets: Any = None, *,
                                point_mask: Any = None, voxel_size: Any = 1.0,
                                translation: Any = (0.0, 0.0, 0.0), transform: Any = None,
                                temporary_store: Any = None, scalar_type: Any = kc.float32,
                                device: Any = None, cell_ijks: Any = None
                                ) -> "AdaptiveNanogrid":
        """An adaptive grid of several environments (as `Nanogrid.from_environment_voxels`):
        `points` are each cell's lowest fine voxel in its environment's coordinates,
        `cell_levels` (uint8) their levels. Generated offsets are multiples of the
        coarsest cell size, with one coarse cell of guard between environments. Warp's
        older form (per-environment arrays of voxels and of levels) is accepted too."""
        from kernelc.fem.nanogrid_env import build_adaptive_nanogrid, given_points

        points = given_points(points, cell_ijks)
        if not hasattr(points, "shape"):  # older form: (cell_ijks, levels, level_count, offsets)
            if isinstance(point_envs, int):
                level_count, point_envs = point_envs, None
            if env_count is not None and not isinstance(env_count, int):
                env_offsets, env_count = env_count, None
        return build_adaptive_nanogrid(cls, points, cell_levels, point_envs, env_count,
                                       level_count, env_offsets, point_mask=point_mask,
                                       voxel_size=voxel_size, translation=translation,
                                       transform=transform, scalar_type=scalar_type,
                                       device=device, temporary_store=temporary_store)

    def __init__(self, cell_grid: kc.Volume, cell_level: Any, level_count: int,
                 temporary_store: Any = None, scalar_type: Any = kc.float32,
                 cell_env: Any = None, env_offsets: Any = None) -> None:
        super().__init__(scalar_type)
        if not isinstance(cell_grid, kc.Volume):
            raise TypeError(f"AdaptiveNanogrid needs a kc.Volume, got {type(cell_grid).__name__}")
        if level_count > MAX_LEVELS:
            raise ValueError(f"Too many refinement levels, max {MAX_LEVELS} supported")
        self.level_count = int(level_count)
        self._cell_grid = cell_grid
        self._device = cell_grid.device
        self._args: dict[Any, Any] = {}
        self._cell_ijk_host = grid_voxels(cell_grid)
        count = len(self._cell_ijk_host)
        if count == 0:
            raise ValueError("Adaptive Nanogrid requires at least one active cell")
        levels = np.asarray(cell_level.numpy() if hasattr(cell_level, "numpy") else cell_level)
        if levels.ndim != 1 or len(levels) < count:
            raise ValueError(f"cell_level needs one level per cell ({count}), got shape "
                             f"{levels.shape}")
        levels = levels[:count].astype(np.int64)
        if levels.min() < 0 or levels.max() >= self.level_count:
            raise ValueError(f"cell levels must lie in [0, {self.level_count - 1}]")
        self._cell_level_host = levels.astype(np.uint8)
        self._cell_level = kc.array(self._cell_level_host, dtype=kc.uint8, device=self._device)
        self._node_grid = self._index_grid(np.concatenate(
            [self.cell_vertex_voxels(n) for n in range(8)]))
        self._set_environments(cell_env, env_offsets)
        self._init_transform()
        funcs = adaptive_nanogrid_funcs(scalar_type)
        self.CellArg, self.SideArg = funcs.CellArg, funcs.SideArg
        for name in self.CELL_FUNCS + self.SIDE_FUNCS + (
                "cell_lookup", "cell_coordinates", "cell_closest_point", "side_coordinates",
                "side_closest_point", "cell_environment_index", "side_environment_index"):
            setattr(self, name, getattr(funcs, name))

    # ---- levels and stacked grids ------------------------------------------------------

    @property
    def cell_level(self) -> Any:
        """The level of each cell (uint8 array)."""
        return self._cell_level

    @cached_property
    def _stacked_faces(self) -> kc.Volume:
        return self._index_grid(np.concatenate([self.cell_face_voxels(f) for f in range(6)]))

    @cached_property
    def _stacked_edges(self) -> kc.Volume:
        return self._index_grid(np.concatenate([self.cell_edge_voxels(e) for e in range(12)]))

    @property
    def stacked_face_grid(self) -> kc.Volume:
        """The index grid numbering face nodes: every cell's faces keyed by level."""
        return self._stacked_faces

    def stacked_face_count(self) -> int:
        """Number of faces of the stacked face grid."""
        return self._stacked_faces.get_voxel_count()

    @property
    def stacked_edge_grid(self) -> kc.Volume:
        """The index grid numbering edge nodes: every cell's edges keyed by level."""
        return self._stacked_edges

    def stacked_edge_count(self) -> int:
        """Number of edges of the stacked edge grid."""
        return self._stacked_edges.get_voxel_count()

    def topology_edge_grid(self) -> kc.Volume:
        return self._stacked_edges

    def topology_face_grid(self) -> kc.Volume:
        return self._stacked_faces

    def cell_vertex_voxels(self, corner: int) -> np.ndarray:
        return self._cell_ijk_host + (_CUBE_CORNERS[corner][None, :]
                                      << self._cell_level_host[:, None].astype(np.int32))

    def cell_edge_voxels(self, edge: int) -> np.ndarray:
        coarse = self._coarse_ijk()
        return encode_level(flag_axis(cell_edges(coarse, edge), edge // 4), self._cell_level_host)

    def cell_face_voxels(self, face: int) -> np.ndarray:
        axis, high = divmod(face, 2)
        coarse = self._coarse_ijk() + np.eye(3, dtype=np.int32)[axis] * high
        return encode_level(flag_axis(coarse, axis), self._cell_level_host)

    def _coarse_ijk(self) -> np.ndarray:
        """Each cell's voxel in the grid of its own level."""
        return self._cell_ijk_host >> self._cell_level_host[:, None].astype(np.int32)

    # ---- sides -------------------------------------------------------------------------

    def find_cells(self, ijk: np.ndarray) -> np.ndarray:
        """The cell holding each fine voxel (n, 3), -1 where none does."""
        ijk = np.asarray(ijk, dtype=np.int32).reshape(-1, 3)
        return find_cells(self._cell_grid, self._cell_level_host, self.level_count, ijk)

    @cached_property
    def _faces(self) -> tuple[kc.Volume, np.ndarray, np.ndarray, np.ndarray]:
        """(face grid, face ijk, face flags, (inner, outer) cells)."""
        ijk, level = self._cell_ijk_host, self._cell_level_host.astype(np.int32)
        cell_faces = self._index_grid(np.concatenate(
            [flag_axis(ijk + (np.eye(3, dtype=np.int32)[a] << level[:, None]) * high, a)
             for high in (0, 1) for a in range(3)]))
        axis, face_ijk = unflag_axis(grid_voxels(cell_faces))
        finer = self._finer_faces(axis, face_ijk)
        grid = self._index_grid(np.concatenate([finer, grid_voxels(cell_faces)]))
        axis, face_ijk = unflag_axis(grid_voxels(grid))
        above, below = self._face_neighbours(axis, face_ijk)
        inner = np.where(below == -1, above, below)
        outer = np.where(above == -1, below, above)
        face_level = np.minimum(self._cell_level_host[inner], self._cell_level_host[outer])
        flags = (axis | ((below == -1) << INNER_MISSING_BIT) | ((above == -1) << OUTER_MISSING_BIT)
                 | (face_level.astype(np.int64) << FACE_LEVEL_SHIFT)).astype(np.uint8)
        return grid, face_ijk, flags, np.stack([inner, outer], axis=1).astype(np.int32)

    def _face_neighbours(self, axis: np.ndarray, face_ijk: np.ndarray) -> tuple[np.ndarray, ...]:
        """The cells above and below each face (-1 where none)."""
        below = face_ijk.copy()
        below[np.arange(len(below)), axis] -= 1
        return self.find_cells(face_ijk), self.find_cells(below)

    def _finer_faces(self, axis: np.ndarray, face_ijk: np.ndarray) -> np.ndarray:
        """Where a face has cells of different levels on both hands, the faces of the finer
        level tiling it (axis-flagged)."""
        above, below = self._face_neighbours(axis, face_ijk)
        both = (above != -1) & (below != -1)
        levels = self._cell_level_host.astype(np.int32)
        hi = np.where(both, levels[above], 0)
        lo = np.where(both, levels[below], 0)
        diff = np.abs(hi - lo)
        out = []
        for d in np.unique(diff[diff > 0]):
            rows = np.flatnonzero(diff == d)
            fine, coarse = np.minimum(hi, lo)[rows], np.maximum(hi, lo)[rows]
            base = face_ijk[rows] & ~((1 << coarse[:, None]) - 1)
            a, r = axis[rows], np.arange(len(rows))
            for f in range(1 << (2 * d)):
                tile = base.copy()
                tile[r, (a + 1) % 3] |= (f & ((1 << d) - 1)) << fine
                tile[r, (a + 2) % 3] |= (f >> d) << fine
                out.append(flag_axis(tile, a))
        return np.concatenate(out) if out else np.zeros((0, 3), dtype=np.int32)

    # ---- host geometry -----------------------------------------------------------------

    def host_cell_positions(self, coords: np.ndarray) -> np.ndarray:
        info = self._cell_grid.get_grid_info()
        t = np.array(info.transform_matrix, dtype=np.float64).reshape(3, 3)
        scale = (1 << self._cell_level_host.astype(np.int64)).astype(np.float64)
        uvw = (self._cell_ijk_local()[:, None, :].astype(np.float64)
               + np.asarray(coords, dtype=np.float64)[None, :, :3] * scale[:, None, None] - 0.5)
        return uvw @ t.T + np.asarray(info.translation, dtype=np.float64)

    # ---- kernel arguments --------------------------------------------------------------

    def _fill_cell_arg(self, arg: Any, device: Any) -> None:
        arg.cell_level = self._cell_level.to(device)
        arg.level_count = self.level_count

    def _fill_side_arg(self, arg: Any, device: Any) -> None:
        arg.face_cell_indices = kc.array(self._faces[3], dtype=kc.vec2i, device=device)


# ---- host helpers ------------------------------------------------------------------------


def encode_level(ijk: np.ndarray, level: np.ndarray) -> np.ndarray:
    """Axis-flagged voxels (n, 3) with bit a of each row's level toggled on in bit 19 of
    coordinate a (as `flag_axis` sets bit 20)."""
    out = np.array(ijk, dtype=np.int32)
    for a in range(3):
        bit = (((np.asarray(level, dtype=np.int32) >> a) & 1) * LEVEL_FLAG).astype(np.int32)
        c = out[:, a]
        out[:, a] = np.where(c < 0, c & ~bit, c | bit)
    return out


def find_cells(cell_grid: kc.Volume, cell_level: np.ndarray, level_count: int,
               ijk: np.ndarray) -> np.ndarray:
    """`find_cell` on the host: for each fine voxel, the first level l at which its
    l-aligned corner is a cell of level l or more (-1 if none)."""
    found = np.full(len(ijk), -1, dtype=np.int64)
    for level in range(level_count):
        todo = np.flatnonzero(found == -1)
        if not len(todo):
            break
        cell = lookup_voxels(cell_grid, ijk[todo] & ~np.int32((1 << level) - 1))
        ok = cell != -1
        ok[ok] = cell_level[cell[ok]] >= level
        found[todo[ok]] = cell[ok]
    return found
