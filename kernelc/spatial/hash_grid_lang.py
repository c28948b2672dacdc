"""The hash grid's kernel side, written in kernelc's own language.

A built grid is a descriptor in device memory (`DESCRIPTOR_*` byte offsets below) that a
kernel receives as a `uint64` id. The query functions read it with the internal address
loads, and every backend compiles them like user code. The cell arithmetic is shared by
the build kernels and the queries, so a point is always looked up where it was stored.
"""

from __future__ import annotations

from typing import Any

import kernelc as kc
from kernelc.builtins import BUILTINS

# Descriptor layout (bytes). Address loads index in units of the loaded type.
DESCRIPTOR_POINT_IDS = 0  # uint64: int32[num_points], original point index by sorted slot
DESCRIPTOR_CELL_STARTS = 8  # uint64: int32[num_cells], first sorted slot of each cell
DESCRIPTOR_CELL_ENDS = 16  # uint64: int32[num_cells], one past the last slot (empty: 0, 0)
DESCRIPTOR_DIMS = 24  # int32 x 3
DESCRIPTOR_NUM_POINTS = 36  # int32
DESCRIPTOR_INV_WIDTH_F32 = 40  # float32: 1 / cell width
DESCRIPTOR_INV_WIDTH_F64 = 48  # float64: 1 / cell width
# uint64: grouped builds: uint64[num_points], the sorted keys (cell << 32 | uint32(group));
# 0 otherwise
DESCRIPTOR_POINT_KEYS = 56
DESCRIPTOR_INV_WIDTH_F16 = 64  # float16: 1 / cell width
DESCRIPTOR_SIZE = 72

_load_i32 = BUILTINS["_load_int32"]
_load_u64 = BUILTINS["_load_uint64"]
_load_f32 = BUILTINS["_load_float32"]
_load_f64 = BUILTINS["_load_float64"]
_load_f16 = BUILTINS["_load_float16"]

_INT_MAX_CELL = 2147483646  # cell coordinates saturate one below INT32_MAX


@kc.struct
class HashGridQuery:
    """The state of a neighbour query: the block of cells to visit and the position in it.

    `x`, `y`, `z` count through the block as in Warp; `cx`, `cy`, `cz` are the same cell's
    coordinates wrapped into the table, stepped alongside (no division per cell). `x` is the
    last cell of the run being visited: consecutive cells of a row whose points lie in one
    run of sorted slots are visited as that run (`by_run`).
    """

    point_ids: kc.uint64
    cell_starts: kc.uint64
    cell_ends: kc.uint64
    dim_x: kc.int32
    dim_y: kc.int32
    dim_z: kc.int32
    x_start: kc.int32
    y_start: kc.int32
    z_start: kc.int32
    x_end: kc.int32
    y_end: kc.int32
    z_end: kc.int32
    x: kc.int32
    y: kc.int32
    z: kc.int32
    cx_start: kc.int32
    cy_start: kc.int32
    cx: kc.int32
    cy: kc.int32
    cz: kc.int32
    cell_index: kc.int32
    cell_end: kc.int32
    point_keys: kc.uint64  # 0 unless the grid was built with groups
    group: kc.int32
    filter_by_group: kc.int32  # 1: only points of `group` (every int32 is a valid group)
    by_run: kc.int32  # 1: a row's consecutive cells are one run of slots (not group-filtered)


def _query_of(cls: type, dtype: Any) -> type:
    # `HashGridQuery[kc.float16]` in annotations, as in Warp: kernelc's query does not depend
    # on the points' precision, so every precision names the same struct
    if kc.types.as_type(dtype) not in (kc.float16, kc.float32, kc.float64):
        raise TypeError(f"Unsupported dtype {dtype!r} for HashGridQuery. Supported types: "
                        "float16, float32, float64")
    return cls


HashGridQuery.__class_getitem__ = classmethod(_query_of)


@kc.func
def cell_coord(v: Any) -> kc.int32:
    # floor, saturating (NaN -> 0), kept one below INT32_MAX so `end + 1` cannot overflow
    return kc.min(kc.int32(kc.floor(v)), _INT_MAX_CELL)


@kc.func
def wrap_coord(v: kc.int32, dim: kc.int32) -> kc.int32:
    # The grid repeats: a coordinate wraps around the table (`dim` > 0).
    c = v % dim
    if c < 0:
        c += dim
    return c


@kc.func
def cell_index(dim_x: kc.int32, dim_y: kc.int32, dim_z: kc.int32, x: kc.int32, y: kc.int32,
               z: kc.int32) -> kc.int32:
    return (wrap_coord(z, dim_z) * (dim_x * dim_y) + wrap_coord(y, dim_y) * dim_x
            + wrap_coord(x, dim_x))


@kc.func
def _query_end(start: kc.int32, end: kc.int32, dim: kc.int32) -> kc.int32:
    # Never visit more than `dim` cells along an axis: farther ones wrap onto the same cells.
    if kc.int64(end) - kc.int64(start) >= kc.int64(dim):
        return start + (dim - 1)
    return end


@kc.func
def group_key(cell: kc.int32, group: kc.int32) -> kc.uint64:
    # the cell in the high bits, the group's bit pattern in the low ones: a cell's points
    # sort by group, each group's points contiguous
    return (kc.uint64(cell) << kc.uint64(32)) | kc.uint64(kc.uint32(group))


@kc.func
def _lower_bound(keys: kc.uint64, start: kc.int32, end: kc.int32, key: kc.uint64) -> kc.int32:
    lo = start
    hi = end
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if _load_u64(keys, mid) < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@kc.func
def _set_cell(q: HashGridQuery) -> HashGridQuery:
    cell = q.cz * (q.dim_x * q.dim_y) + q.cy * q.dim_x + q.cx
    start = _load_i32(q.cell_starts, cell)
    end = _load_i32(q.cell_ends, cell)
    if q.by_run != 0:
        if q.x < q.x_end:
            # The row's next cells up to the block's end or the table's edge have the next
            # cell indices, so their points follow in slot order (cells are sorted): visit
            # them as one run, in the same order as cell by cell. Empty cells are (0, 0).
            more = kc.min(q.x_end - q.x, q.dim_x - 1 - q.cx)
            for j in range(1, more + 1):
                s = _load_i32(q.cell_starts, cell + j)
                e = _load_i32(q.cell_ends, cell + j)
                if s < e:
                    if start >= end:
                        start = s
                    end = e
            q.x += more
            q.cx += more
    else:
        # the group's run of the cell; key + 1 cannot pass the cell's end (group bits wrap
        # into the next cell, which lies after `end`)
        key = group_key(cell, q.group)
        start = _lower_bound(q.point_keys, start, end, key)
        end = _lower_bound(q.point_keys, start, end, key + kc.uint64(1))
    q.cell_index = start
    q.cell_end = end
    return q


@kc.func
def _query_from(grid: kc.uint64, x0: kc.int32, y0: kc.int32, z0: kc.int32, x1: kc.int32,
                y1: kc.int32, z1: kc.int32, group: kc.int32, filter_by_group: kc.int32
                ) -> HashGridQuery:
    q = HashGridQuery()
    q.point_keys = _load_u64(grid, DESCRIPTOR_POINT_KEYS // 8)
    q.group = group
    q.filter_by_group = filter_by_group
    q.by_run = 1
    if filter_by_group != 0 and q.point_keys != kc.uint64(0):
        q.by_run = 0
    q.point_ids = _load_u64(grid, DESCRIPTOR_POINT_IDS // 8)
    q.cell_starts = _load_u64(grid, DESCRIPTOR_CELL_STARTS // 8)
    q.cell_ends = _load_u64(grid, DESCRIPTOR_CELL_ENDS // 8)
    q.dim_x = _load_i32(grid, DESCRIPTOR_DIMS // 4)
    q.dim_y = _load_i32(grid, DESCRIPTOR_DIMS // 4 + 1)
    q.dim_z = _load_i32(grid, DESCRIPTOR_DIMS // 4 + 2)
    q.x_start = x0
    q.y_start = y0
    q.z_start = z0
    q.x_end = _query_end(x0, x1, q.dim_x)
    q.y_end = _query_end(y0, y1, q.dim_y)
    q.z_end = _query_end(z0, z1, q.dim_z)
    q.x = x0
    q.y = y0
    q.z = z0
    q.cx_start = wrap_coord(x0, q.dim_x)
    q.cy_start = wrap_coord(y0, q.dim_y)
    q.cx = q.cx_start
    q.cy = q.cy_start
    q.cz = wrap_coord(z0, q.dim_z)
    q.cell_index = 0
    q.cell_end = 0
    if q.point_ids != kc.uint64(0):
        q = _set_cell(q)
    return q


@kc.func
def _query_at(grid: kc.uint64, pos: Any, radius: Any, inv: Any, group: kc.int32,
              filter_by_group: kc.int32) -> HashGridQuery:
    return _query_from(grid, cell_coord((pos[0] - radius) * inv),
                       cell_coord((pos[1] - radius) * inv),
                       cell_coord((pos[2] - radius) * inv),
                       cell_coord((pos[0] + radius) * inv),
                       cell_coord((pos[1] + radius) * inv),
                       cell_coord((pos[2] + radius) * inv), group, filter_by_group)


@kc.func
def query_f16(grid: kc.uint64, pos: kc.vec3h, radius: kc.float16, group: kc.int32,
              filter_by_group: kc.int32) -> HashGridQuery:
    inv = _load_f16(grid, DESCRIPTOR_INV_WIDTH_F16 // 2)
    return _query_at(grid, pos, radius, inv, group, filter_by_group)


@kc.func
def query_f32(grid: kc.uint64, pos: kc.vec3f, radius: kc.float32, group: kc.int32,
              filter_by_group: kc.int32) -> HashGridQuery:
    inv = _load_f32(grid, DESCRIPTOR_INV_WIDTH_F32 // 4)
    return _query_at(grid, pos, radius, inv, group, filter_by_group)


@kc.func
def query_f64(grid: kc.uint64, pos: kc.vec3d, radius: kc.float64, group: kc.int32,
              filter_by_group: kc.int32) -> HashGridQuery:
    inv = _load_f64(grid, DESCRIPTOR_INV_WIDTH_F64 // 8)
    return _query_at(grid, pos, radius, inv, group, filter_by_group)


@kc.func
def query_next(q: HashGridQuery, index: kc.int32):
    """(found, advanced query, the next point's index); cells are visited x fastest."""
    if q.point_ids == kc.uint64(0):
        return False, q, index
    while True:
        if q.cell_index < q.cell_end:
            found = _load_i32(q.point_ids, q.cell_index)
            q.cell_index += 1
            return True, q, found
        # the next cell after the run just visited; the wrapped coordinates follow along
        q.x += 1
        q.cx += 1
        if q.cx == q.dim_x:
            q.cx = 0
        if q.x > q.x_end:
            q.x = q.x_start
            q.cx = q.cx_start
            q.y += 1
            q.cy += 1
            if q.cy == q.dim_y:
                q.cy = 0
        if q.y > q.y_end:
            q.y = q.y_start
            q.cy = q.cy_start
            q.z += 1
            q.cz += 1
            if q.cz == q.dim_z:
                q.cz = 0
        if q.z > q.z_end:
            return False, q, index
        q = _set_cell(q)
    return False, q, index


@kc.func
def point_id(grid: kc.uint64, index: kc.int32) -> kc.int32:
    ids = _load_u64(grid, DESCRIPTOR_POINT_IDS // 8)
    if ids == kc.uint64(0):
        return -1
    return _load_i32(ids, index)


# ---- build ---------------------------------------------------------------------------------


@kc.kernel
def compute_cells(points: kc.array(dtype=Any), inv: Any, dim_x: kc.int32, dim_y: kc.int32,
                  dim_z: kc.int32, keys: kc.array(dtype=kc.int32),
                  values: kc.array(dtype=kc.int32)):
    # `inv` has the points' scalar type: the product rounds as the queries' products do.
    i = kc.tid()
    p = points[i]
    keys[i] = cell_index(dim_x, dim_y, dim_z, cell_coord(p[0] * inv), cell_coord(p[1] * inv),
                         cell_coord(p[2] * inv))
    values[i] = i


@kc.kernel
def mark_cells(sorted_cells: kc.array(dtype=kc.int32), n: kc.int32,
               cell_starts: kc.array(dtype=kc.int32), cell_ends: kc.array(dtype=kc.int32)):
    i = kc.tid()
    c = sorted_cells[i]
    if i == 0 or sorted_cells[i - 1] != c:
        cell_starts[c] = i
    if i == n - 1 or sorted_cells[i + 1] != c:
        cell_ends[c] = i + 1


@kc.kernel
def compute_group_keys(points: kc.array(dtype=Any), inv: Any, groups: kc.array(dtype=kc.int32),
                       dim_x: kc.int32, dim_y: kc.int32, dim_z: kc.int32,
                       keys: kc.array(dtype=kc.uint64), values: kc.array(dtype=kc.int32)):
    i = kc.tid()
    p = points[i]
    cell = cell_index(dim_x, dim_y, dim_z, cell_coord(p[0] * inv), cell_coord(p[1] * inv),
                      cell_coord(p[2] * inv))
    keys[i] = group_key(cell, groups[i])
    values[i] = i


@kc.kernel
def mark_group_cells(sorted_keys: kc.array(dtype=kc.uint64), n: kc.int32,
                     cell_starts: kc.array(dtype=kc.int32), cell_ends: kc.array(dtype=kc.int32)):
    i = kc.tid()
    c = kc.int32(sorted_keys[i] >> kc.uint64(32))
    if i == 0 or kc.int32(sorted_keys[i - 1] >> kc.uint64(32)) != c:
        cell_starts[c] = i
    if i == n - 1 or kc.int32(sorted_keys[i + 1] >> kc.uint64(32)) != c:
        cell_ends[c] = i + 1


# A build is library work: its launches report as TIMING_KERNEL_BUILTIN activities.
for _kernel in (compute_cells, mark_cells, compute_group_keys, mark_group_cells):
    _kernel.is_builtin = True
