"""Sparse marching cubes (Warp's `sparse_marching_cubes`, `sparse_marching_cubes_from_cells`).

Marching cubes over a list of cells instead of a dense grid. The cells' corners are made
distinct by sorting their packed subscripts (`corner_codes`): a corner shared by several
cells is evaluated once and its edges' vertices are shared, so the mesh is welded. With
the cells of a Lipschitz octree (`sparse_octree.py`), only a shell around the surface is
ever evaluated, and the result is the dense extractor's surface on the same grid.

The output order is Warp's: vertices by (corner, axis) with corners in subscript order,
triangles cell by cell in the cells' order. The kernels are in `sparse_lang.py`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernelc as kc
from kernelc import types as T
from kernelc.geometry import sparse_lang as L
from kernelc.geometry import tables
from kernelc.geometry.iso_surface import device_table, resolve_bounds
from kernelc.geometry.sparse_octree import (
    as_float3,
    build_octree,
    compact,
    launch,
    make_evaluator,
    scan_total,
)
from kernelc.runtime.array import array


def _edge_code(edge: int) -> int:
    """Edge `edge` of a cell as lower corner | upper corner << 3 | axis << 6."""
    a, b = tables.EDGE_TO_CORNERS[edge]
    pa, pb = tables.CUBE_CORNER_OFFSETS[a], tables.CUBE_CORNER_OFFSETS[b]
    axis = next(i for i in range(3) if pa[i] != pb[i])
    lower, upper = (a, b) if pa[axis] < pb[axis] else (b, a)
    return lower | upper << 3 | axis << 6


# Each slot of TRI_LOCAL_INDICES as its edge's code, so a kernel reads one entry per index.
_SLOT_EDGES = tuple(_edge_code(e) for e in tables.TRI_LOCAL_INDICES)


class _Corners:
    """The distinct corners of a set of cells: `cell_corners` (cells x 8, into the
    distinct corners), their `positions` and, per distinct corner, the flat index
    (cell * 8 + corner) of its first occurrence, `source`."""

    def __init__(self, cells: array, offset: tuple[int, int, int], stride: int,
                 origin: np.ndarray, width: np.ndarray) -> None:
        if stride ** 3 >= 2 ** 63:
            raise ValueError(f"Cell subscript range spans {stride} nodes per axis, too large "
                             "to pack into 64-bit corner codes.")
        device = cells.device
        m = 8 * cells.shape[0]
        codes = kc.empty(2 * m, dtype=T.int64, device=device)  # the sort's scratch halves
        order = kc.empty(2 * m, dtype=T.int32, device=device)
        stride_x, stride_y = np.int64(stride * stride), np.int64(stride)
        launch(L.corner_codes, cells.shape[0],
               [cells, kc.vec3i(*offset), stride_x, stride_y, codes, order], device)
        kc.utils.radix_sort_pairs(codes, order, m, 0, int(stride ** 3).bit_length())
        codes, order = codes[:m], order[:m]
        first = kc.empty(m, dtype=T.int32, device=device)
        launch(L.first_of_run, m, [codes, first], device)
        rank, count = scan_total(first)
        inverse = kc.empty(m, dtype=T.int32, device=device)
        launch(L.scatter_rank, m, [order, rank, inverse], device)
        # The smallest corner's position, in float64 on the host (as Warp): the kernel
        # then adds only small relative subscripts in float32.
        base = [float(origin[a]) + float(width[a]) * offset[a] for a in range(3)]
        self.positions = kc.empty(count, dtype=T.vec3, device=device)
        self.source = kc.empty(count, dtype=T.int32, device=device)
        launch(L.unique_corners, m,
               [codes, order, first, rank, stride_x, stride_y, kc.vec3(*base),
                kc.vec3(*width.tolist()), self.positions, self.source], device)
        self.cell_corners = inverse.reshape((cells.shape[0], 8))


def _empty(device: Any, requires_grad: bool = False) -> tuple[array, array]:
    return (kc.empty(0, dtype=T.vec3, device=device, requires_grad=requires_grad),
            kc.empty(0, dtype=T.int32, device=device))


def _extract(corners: _Corners, values: array, threshold: float) -> tuple[array, array]:
    """Marching cubes over the cells of `corners`, with `values` at the distinct corners."""
    device = values.device
    cell_corners = corners.cell_corners
    n_cells = cell_corners.shape[0]
    threshold = np.float32(threshold)
    ranges = device_table(tables.CASE_TO_TRI_RANGE, device)
    slot_edges = device_table(_SLOT_EDGES, device)
    slots = 3 * values.shape[0]
    edge_active = kc.zeros(slots, dtype=T.int32, device=device)
    edge_upper = kc.empty(slots, dtype=T.int32, device=device)
    face_count = kc.empty(n_cells, dtype=T.int32, device=device)
    launch(L.mark_edges, n_cells, [cell_corners, values, threshold, ranges, slot_edges,
                                   edge_active, edge_upper, face_count], device)
    vertex_scan, n_verts = scan_total(edge_active)
    if n_verts == 0:
        return _empty(device, values.requires_grad)
    verts = kc.empty(n_verts, dtype=T.vec3, device=device, requires_grad=values.requires_grad)
    launch(L.edge_vertices, slots, [edge_active, vertex_scan, edge_upper, corners.positions,
                                    values, threshold, verts], device, taped=True)
    face_scan, n_faces = scan_total(face_count)
    indices = kc.empty(3 * n_faces, dtype=T.int32, device=device)
    if n_faces:
        launch(L.cell_faces, n_cells, [cell_corners, values, threshold, ranges, slot_edges,
                                       vertex_scan, face_count, face_scan, indices], device)
    return verts, indices


def _as_cells(cells: Any, device: Any) -> array:
    """Cell subscripts as a contiguous `vec3i` array on `device`."""
    if isinstance(cells, array):
        if cells.dtype == T.vec3i:
            cells = cells.to(device)
            flat = cells if cells.is_contiguous else cells.contiguous()
            return flat.flatten() if flat.ndim > 1 else flat
        cells = cells.numpy()
    data = np.ascontiguousarray(cells, dtype=np.int32)
    if data.size % 3:
        raise ValueError(f"cells must have shape (N, 3), got an array of shape {data.shape}.")
    return kc.array(data.reshape(-1, 3), dtype=T.vec3i, device=device)


def sparse_marching_cubes_from_cells(cells: Any, corner_values: Any, origin: Any = (0.0, 0.0, 0.0),
                                     cell_width: float = 1.0, threshold: float = 0.0,
                                     device: Any = None) -> tuple[array, array]:
    """Marching cubes over given cells, with the field's values at their corners.

    Neighbouring cells share their corners' vertices, so the mesh is welded; cells should
    be distinct (a repeated cell repeats its triangles). Inside a `kc.Tape`, the vertex
    positions are differentiable with respect to `corner_values` (when it has
    `requires_grad`); a corner shared by several cells takes its value, and its gradient,
    from its first occurrence (lowest `cell * 8 + corner`).

    Args:
        cells (array): `(N, 3)` integer minimum-corner subscripts: a `vec3i` array, an `int32` array of shape (N, 3), or anything NumPy converts; negative subscripts are fine.
        corner_values (array): `8 * N` float32 values, cell by cell, corners in `IsoSurfaceMarchingCubes.CUBE_CORNER_OFFSETS` order.
        origin (vec3): Position of subscript (0, 0, 0).
        cell_width (float): Side length of a cell.
        threshold (float): Level of the surface.
        device (Device): Device to run on; the current device if None.

    Returns:
        `(verts, indices)`: `vec3` vertices and a flat `int32` array, three per triangle.

    Raises:
        ValueError: `cell_width` is not positive, the value count is not `8 * N`, the
            values are not float32, or the subscripts span too much to pack in 64 bits.
    """
    device = kc.get_device(device)
    if cell_width <= 0.0:
        raise ValueError(f"cell_width must be positive, got {cell_width}.")
    cells = _as_cells(cells, device)
    n = cells.shape[0]
    values = corner_values
    if not isinstance(values, array):
        values = kc.array(np.ascontiguousarray(values, dtype=np.float32), device=device)
    values = values.to(device)
    if values.dtype != T.float32:
        raise ValueError(f"corner_values must be float32, got {values.dtype!r}.")
    if values.size != 8 * n:
        raise ValueError(f"corner_values must have {8 * n} entries for {n} cells, got "
                         f"{values.size}.")
    if n == 0:
        return _empty(device)
    if not values.is_contiguous:
        values = kc.clone(values)
    if values.ndim != 1:
        values = values.reshape((8 * n,))
    lo = kc.full(3, value=np.iinfo(np.int32).max, dtype=T.int32, device=device)
    hi = kc.full(3, value=np.iinfo(np.int32).min, dtype=T.int32, device=device)
    launch(L.cell_bounds, n, [cells, lo, hi], device)
    lo, hi = lo.numpy().astype(np.int64), hi.numpy().astype(np.int64)
    width = np.full(3, float(cell_width), np.float32)
    corners = _Corners(cells, tuple(int(v) for v in lo), int((hi - lo).max()) + 2,
                       as_float3(origin, "origin"), width)
    unique = kc.empty(corners.source.shape[0], dtype=T.float32, device=device,
                      requires_grad=values.requires_grad)
    launch(L.gather_values, unique.shape[0], [corners.source, values, unique], device,
           taped=True)
    return _extract(corners, unique, threshold)


def sparse_marching_cubes(field: Any, nx: int, ny: int, nz: int, *, lower: Any = None,
                          upper: Any = None, threshold: float = 0.0,
                          lipschitz_bound: float = 1.0, device: Any = None,
                          return_stats: bool = False) -> tuple:
    """Marching cubes on a grid of `nx * ny * nz` nodes, evaluating only near the surface.

    The grid is `IsoSurfaceMarchingCubes.extract`'s (node `(0, 0, 0)` at `lower`, the last
    at `upper`), and so is the surface; but instead of a dense field, `field` is a batched
    implicit function with Lipschitz bound `lipschitz_bound` (1 for a signed distance),
    evaluated at the centres of a `lipschitz_octree`'s cells and at the corners of its
    leaves only. A surface that leaves `[lower, upper]` is cut open there. Inside a
    `kc.Tape`, the vertices are differentiable with respect to the values `field`
    returned for the corners.

    Args:
        field (Callable): Batched implicit function: a `vec3` array of points in, a `float32` array of values (same length, same device) out.
        nx (int): Number of grid nodes along x (likewise `ny`, `nz`); at least 2.
        ny (int): Number of grid nodes along y.
        nz (int): Number of grid nodes along z.
        lower (vec3): Position of node (0, 0, 0); the origin if None.
        upper (vec3): Position of node (nx - 1, ny - 1, nz - 1); its indices if None.
        threshold (float): Level of the surface.
        lipschitz_bound (float): Upper bound of the field's Lipschitz constant.
        device (Device): Device to run on; the current device if None.
        return_stats (bool): Also return a dict of counts (leaf cells, distinct corners, field evaluations, octree resolution, requested cells, culled cells).

    Returns:
        `(verts, indices)`, or `(verts, indices, stats)` with `return_stats`.

    Raises:
        ValueError: A node count is below 2, or `lipschitz_bound` is negative.
        TypeError: `field` is not a batched callable.
    """
    if nx < 2 or ny < 2 or nz < 2:
        raise ValueError(f"nx, ny, nz must each be at least 2, got ({nx}, {ny}, {nz}).")
    if lipschitz_bound < 0.0:
        raise ValueError(f"lipschitz_bound must be non-negative, got {lipschitz_bound}.")
    device = kc.get_device(device)
    origin, delta = (np.array(v, dtype=np.float32) for v in resolve_bounds((nx, ny, nz),
                                                                           lower, upper))
    ncells = (nx - 1, ny - 1, nz - 1)
    max_depth = (max(ncells) - 1).bit_length()
    resolution = 1 << max_depth
    root_width = (delta * np.float32(resolution)).astype(np.float32)
    stats = {"leaf_cells": 0, "unique_corners": 0, "field_evaluations": 0,
             "resolution": resolution, "requested_ncells": ncells, "culled_cells": 0}
    evaluate = make_evaluator(field, device)

    def counted(points: array) -> array:
        stats["field_evaluations"] += points.shape[0]
        return evaluate(points)

    def finish(verts: array, indices: array) -> tuple:
        return (verts, indices, stats) if return_stats else (verts, indices)

    cells = build_octree(counted, origin, root_width, max_depth, threshold, lipschitz_bound,
                         device)
    if cells is None:
        return finish(*_empty(device))
    if ncells != (resolution,) * 3:  # the octree padded some axis up to a power of two
        n = cells.shape[0]
        keep = kc.empty(n, dtype=T.int32, device=device)
        launch(L.cull_keep, n, [cells, kc.vec3i(*ncells), keep], device)
        cells = compact(cells, keep)
        stats["culled_cells"] = n - cells.shape[0]
    if cells.shape[0] == 0:
        return finish(*_empty(device))
    stats["leaf_cells"] = cells.shape[0]
    width = (root_width * np.float32(1.0 / resolution)).astype(np.float32)
    corners = _Corners(cells, (0, 0, 0), resolution + 1, origin, width)
    stats["unique_corners"] = corners.positions.shape[0]
    values = counted(corners.positions)
    return finish(*_extract(corners, values, threshold))
