"""`kc.HashGrid`: a uniform hash grid of points for neighbour queries inside kernels.

`build(points, radius)` buckets the points into cubic cells of width `radius` (the grid
wraps around, so it covers all of space with `dim_x * dim_y * dim_z` cells) with three
passes of kernels: the cell of every point, a stable sort of (cell, point) pairs, and the
first and last slot of every cell (on the CPU the sort is `hash_grid_sort.CellSort`, a
counting sort by cell, and only the cells the last build filled are emptied first).
Kernels receive `grid.id` (a `uint64`) and iterate with
`kc.hash_grid_query` / `kc.hash_grid_query_next`.

A build with `groups` (one int32 group id per point, for independent worlds sharing one grid)
sorts 64-bit keys `cell << 32 | group` instead, so that within a cell each group's points are
contiguous; a grouped query finds its group's run by binary search.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.runtime.array import array, zeros
from kernelc.runtime.device import get_device

_MAX_CELLS = (1 << 31) - 1


class HashGrid:
    """A hash grid of `dim_x * dim_y * dim_z` cells on `device`, for points of `dtype`.

    Attributes:
        id: The `uint64` to pass to kernels (0 until the grid is built).
        device: The device the grid and the points live on.
        dtype: `kc.float16` (points are `vec3h`), `kc.float32` (`vec3`) or `kc.float64`
            (`vec3d`).
        point_ids: After `build`, the original index of the point in each sorted slot.
        cell_starts: After `build`, the first sorted slot of each cell.
        cell_ends: After `build`, one past the last sorted slot of each cell.
    """

    def __init__(self, dim_x: int, dim_y: int, dim_z: int, device: Any = None,
                 dtype: Any = None) -> None:
        try:
            dims = tuple(operator.index(d) for d in (dim_x, dim_y, dim_z))
        except TypeError:
            raise TypeError("HashGrid dimensions must be integers") from None
        if min(dims) <= 0:
            raise RuntimeError(f"Hash grid dimensions must be positive, got {dims}")
        cells = dims[0] * dims[1] * dims[2]
        if cells > _MAX_CELLS:
            raise RuntimeError(f"Hash grid cell count exceeds supported limit: {dims[0]} * "
                               f"{dims[1]} * {dims[2]} = {cells} > {_MAX_CELLS}")
        try:
            scalar = T.float32 if dtype is None else T.as_type(dtype)
        except (TypeError, ValueError):
            scalar = None
        if scalar not in (T.float16, T.float32, T.float64):
            raise TypeError(f"Unsupported dtype {dtype!r} for HashGrid. Supported types: "
                            "float16, float32, float64")
        self.dim_x, self.dim_y, self.dim_z = dims
        self.dtype = scalar
        self.device = get_device(device)
        self.num_points = 0
        self.cell_width = 0.0
        self.cell_starts = zeros(cells, dtype=T.int32, device=self.device)
        self.cell_ends = zeros(cells, dtype=T.int32, device=self.device)
        self._keys: array | None = None  # 2n int32: cells, then sort scratch
        self._values: array | None = None  # 2n int32: point indices, then sort scratch
        self._group_keys: array | None = None  # 2n uint64: grouped builds' keys and scratch
        self._cell_sort = None  # the CPU build's sort scratch (hash_grid_sort.CellSort)
        # How many sorted cells at the start of `_keys` name every marked cell (for a CPU
        # build to empty just those), or None when unknown (it zeroes the whole table)
        self._marked: int | None = 0
        self._captured = False  # built in a graph capture: replays mark cells unseen here
        self.point_ids: array | None = None
        self.groups: array | None = None
        from kernelc.spatial.hash_grid_lang import DESCRIPTOR_SIZE

        self._descriptor = zeros(DESCRIPTOR_SIZE, dtype=T.uint8, device=self.device)
        self._write_descriptor()
        self.id = self._descriptor.ptr

    def reserve(self, num_points: int, with_groups: bool = False) -> None:
        """Allocates room for `num_points` points (and, `with_groups`, for grouped builds),
        so a later `build` of up to that many points allocates nothing. Not during a CPU
        graph capture (`NotImplementedError`, as in Warp): reserve before it."""
        from kernelc.runtime.context import get_runtime

        if self.device.is_cpu and get_runtime().extras.get("capture") is not None:
            raise NotImplementedError("HashGrid.reserve() cannot be called during CPU graph "
                                      "capture; reserve before capture")
        self._reserve(num_points, with_groups)

    def _reserve(self, num_points: int, with_groups: bool) -> None:
        n = operator.index(num_points)
        if n < 0:
            raise ValueError("num_points must be >= 0")
        if self._keys is None or self._keys.size < 2 * n:
            if self._marked:
                self._marked = None  # the sorted cells go with the old scratch
            self._keys = zeros(2 * max(n, 1), dtype=T.int32, device=self.device)
            self._values = zeros(2 * max(n, 1), dtype=T.int32, device=self.device)
        if with_groups and (self._group_keys is None or self._group_keys.size < 2 * n):
            self._group_keys = zeros(2 * max(n, 1), dtype=T.uint64, device=self.device)

    def build(self, points: array, radius: float, groups: array | None = None) -> None:
        """Rebuilds the grid for `points` (an array of `vec3h`/`vec3`/`vec3d`, as the grid's
        dtype) with cell width `radius`.

        Queries find every point whose cell lies in the block of cells overlapping the query
        sphere; for the fewest candidates, build with the radius the queries will use.
        `groups` (an int32 array, one id per point; any int32 is a valid id) lets
        `hash_grid_query(grid, p, r, group)` visit only the points of `group`.
        """
        from kernelc.runtime.launch import launch
        from kernelc.spatial import hash_grid_lang as lang
        from kernelc.utils import radix_sort_pairs

        vec = T.VectorType(3, self.dtype)
        if not isinstance(points, array) or points.dtype != vec:
            got = points.dtype if isinstance(points, array) else type(points).__name__
            raise TypeError(f"Hash grid points should have type {vec!r}, got {got!r}")
        radius = float(radius)
        if not radius > 0.0:
            raise ValueError(f"Hash grid cell width must be positive, got {radius}")
        if points.device != self.device:
            raise RuntimeError("points must live on the same device as this HashGrid")
        if groups is not None:
            _check_groups(groups, points, self.device)
            groups = groups.flatten() if groups.is_contiguous else groups.contiguous().flatten()
        if points.ndim > 1:
            points = points.flatten() if points.is_contiguous else points.contiguous().flatten()
        n = points.size
        self._reserve(n, groups is not None)
        self.num_points, self.cell_width, self.groups = n, radius, groups
        np_float = self.dtype.np_dtype.type
        inv = np_float(1) / np_float(radius)  # in the grid's precision, as the queries use it
        cells = self.dim_x * self.dim_y * self.dim_z
        cell_bits = max(1, (cells - 1).bit_length())
        dims = [self.dim_x, self.dim_y, self.dim_z]
        fast = self.device.is_cpu and groups is None
        self._clear_cells(cells, fast)
        if n and fast:
            from kernelc.spatial.hash_grid_sort import CellSort

            if self._cell_sort is None:
                self._cell_sort = CellSort(self.device)
            self._cell_sort.sort(points, inv, dims, cell_bits, n, self._keys, self._values)
            launch(lang.mark_cells, n, [self._keys, n, self.cell_starts, self.cell_ends],
                   device=self.device)
        elif n and groups is None:
            launch(lang.compute_cells, n, [points, inv, *dims, self._keys, self._values],
                   device=self.device)
            # Cells are in [0, cells): sorting on their low bits alone is enough.
            radix_sort_pairs(self._keys, self._values, n, end_bit=cell_bits)
            launch(lang.mark_cells, n, [self._keys, n, self.cell_starts, self.cell_ends],
                   device=self.device)
        elif n:
            launch(lang.compute_group_keys, n, [points, inv, groups, *dims, self._group_keys,
                                                self._values], device=self.device)
            radix_sort_pairs(self._group_keys, self._values, n, end_bit=32 + cell_bits)
            launch(lang.mark_group_cells, n, [self._group_keys, n, self.cell_starts,
                                              self.cell_ends], device=self.device)
        self.point_ids = self._values[:n] if n else None
        self._marked = n if fast else None
        self._write_descriptor(inv)

    def _clear_cells(self, cells: int, fast: bool) -> None:
        """Empties every cell before a build: on the CPU only the cells the last build
        marked where they are few (their sorted cells are still at the start of `_keys`);
        else, and for good once the grid was built in a graph capture, the whole table."""
        from kernelc.runtime.context import get_runtime
        from kernelc.runtime.launch import launch
        from kernelc.spatial.hash_grid_sort import clear_cells

        if get_runtime().extras.get("capture") is not None:
            self._captured = True
        marked = None if self._captured else self._marked
        if fast and marked is not None and marked < cells // 4:
            if marked:
                launch(clear_cells, marked, [self._keys, self.cell_starts, self.cell_ends],
                       device=self.device)
            return
        self.cell_starts.zero_()
        self.cell_ends.zero_()

    def _write_descriptor(self, inv: Any = 0.0) -> None:
        from kernelc.spatial import hash_grid_lang as lang

        raw = np.zeros(lang.DESCRIPTOR_SIZE, np.uint8)
        ids = self.point_ids.ptr if self.point_ids is not None else 0
        raw[lang.DESCRIPTOR_POINT_IDS:][:8].view(np.uint64)[0] = ids
        raw[lang.DESCRIPTOR_CELL_STARTS:][:8].view(np.uint64)[0] = self.cell_starts.ptr
        raw[lang.DESCRIPTOR_CELL_ENDS:][:8].view(np.uint64)[0] = self.cell_ends.ptr
        raw[lang.DESCRIPTOR_DIMS:][:12].view(np.int32)[:] = (self.dim_x, self.dim_y, self.dim_z)
        raw[lang.DESCRIPTOR_NUM_POINTS:][:4].view(np.int32)[0] = self.num_points
        raw[lang.DESCRIPTOR_INV_WIDTH_F32:][:4].view(np.float32)[0] = inv
        raw[lang.DESCRIPTOR_INV_WIDTH_F64:][:8].view(np.float64)[0] = inv
        raw[lang.DESCRIPTOR_INV_WIDTH_F16:][:2].view(np.float16)[0] = inv
        keys = self._group_keys.ptr if self.groups is not None and self.num_points else 0
        raw[lang.DESCRIPTOR_POINT_KEYS:][:8].view(np.uint64)[0] = keys
        self._descriptor.assign(raw)

    def __repr__(self) -> str:
        return (f"HashGrid({self.dim_x}, {self.dim_y}, {self.dim_z}, device={self.device}, "
                f"points={self.num_points})")


def _check_groups(groups: Any, points: array, device: Any) -> None:
    if not isinstance(groups, array) or groups.dtype != T.int32:
        raise RuntimeError("groups should be an array of type kc.int32")
    if groups.device != device:
        raise RuntimeError("groups must live on the same device as this HashGrid")
    if groups.size != points.size:
        raise RuntimeError("groups must have the same length as points")
