"""`kc.HashGrid`: a uniform hash grid of points for neighbour queries inside kernels.

`build(points, radius)` buckets the points into cubic cells of width `radius` (the grid
wraps around, so it covers all of space with `dim_x * dim_y * dim_z` cells) with three
passes of kernels: the cell of every point, a stable sort of (cell, point) pairs, and the
first and last slot of every cell. Kernels receive `grid.id` (a `uint64`) and iterate with
`kc.hash_grid_query` / `kc.hash_grid_query_next`.
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
        dtype: `kc.float32` (points are `vec3`) or `kc.float64` (`vec3d`).
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
            raise ValueError(f"HashGrid dimensions must be positive, got {dims}")
        cells = dims[0] * dims[1] * dims[2]
        if cells > _MAX_CELLS:
            raise ValueError(f"HashGrid has too many cells: {dims[0]} * {dims[1]} * {dims[2]} "
                             f"= {cells} > {_MAX_CELLS}")
        scalar = T.float32 if dtype is None else T.as_type(dtype)
        if scalar not in (T.float32, T.float64):
            raise TypeError(f"HashGrid points must be float32 or float64, got {dtype!r}")
        self.dim_x, self.dim_y, self.dim_z = dims
        self.dtype = scalar
        self.device = get_device(device)
        self.num_points = 0
        self.cell_width = 0.0
        self.cell_starts = zeros(cells, dtype=T.int32, device=self.device)
        self.cell_ends = zeros(cells, dtype=T.int32, device=self.device)
        self._keys: array | None = None  # 2n int32: cells, then sort scratch
        self._values: array | None = None  # 2n int32: point indices, then sort scratch
        self.point_ids: array | None = None
        from kernelc.spatial.hash_grid_lang import DESCRIPTOR_SIZE

        self._descriptor = zeros(DESCRIPTOR_SIZE, dtype=T.uint8, device=self.device)
        self._write_descriptor()
        self.id = self._descriptor.ptr

    def reserve(self, num_points: int) -> None:
        """Allocates room for `num_points` points, so a later `build` allocates nothing."""
        n = operator.index(num_points)
        if n < 0:
            raise ValueError("num_points must be >= 0")
        if self._keys is None or self._keys.size < 2 * n:
            self._keys = zeros(2 * max(n, 1), dtype=T.int32, device=self.device)
            self._values = zeros(2 * max(n, 1), dtype=T.int32, device=self.device)

    def build(self, points: array, radius: float) -> None:
        """Rebuilds the grid for `points` (a 1-d array of `vec3`/`vec3d`) with cell width `radius`.

        Queries find every point whose cell lies in the block of cells overlapping the query
        sphere; for the fewest candidates, build with the radius the queries will use.
        """
        from kernelc.runtime.launch import launch
        from kernelc.spatial import hash_grid_lang as lang
        from kernelc.utils import radix_sort_pairs

        vec = T.VectorType(3, self.dtype)
        if not isinstance(points, array) or points.dtype != vec:
            got = points.dtype if isinstance(points, array) else type(points).__name__
            raise TypeError(f"HashGrid points must be an array of {vec!r}, got {got!r}")
        if points.device != self.device:
            raise ValueError(f"points are on {points.device}, the HashGrid on {self.device}")
        radius = float(radius)
        if not radius > 0.0:
            raise ValueError(f"HashGrid cell width must be positive, got {radius}")
        if points.ndim > 1:
            points = points.flatten()
        n = points.size
        self.reserve(n)
        self.num_points, self.cell_width = n, radius
        np_float = np.float32 if self.dtype == T.float32 else np.float64
        inv = np_float(1) / np_float(radius)
        self.cell_starts.zero_()
        self.cell_ends.zero_()
        if n:
            launch(lang.compute_cells, n, [points, inv, self.dim_x, self.dim_y, self.dim_z,
                                           self._keys, self._values], device=self.device)
            # Cells are in [0, cells): sorting on their low bits alone is enough.
            cells = self.dim_x * self.dim_y * self.dim_z
            radix_sort_pairs(self._keys, self._values, n, end_bit=max(1, (cells - 1).bit_length()))
            launch(lang.mark_cells, n, [self._keys, n, self.cell_starts, self.cell_ends],
                   device=self.device)
        self.point_ids = self._values[:n] if n else None
        self._write_descriptor(float(inv))

    def _write_descriptor(self, inv: float = 0.0) -> None:
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
        self._descriptor.assign(raw)

    def __repr__(self) -> str:
        return (f"HashGrid({self.dim_x}, {self.dim_y}, {self.dim_z}, device={self.device}, "
                f"points={self.num_points})")
