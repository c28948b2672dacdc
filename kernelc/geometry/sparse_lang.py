"""The kernels of the sparse extractors (`sparse_marching_cubes` and friends), in kernelc's
language.

The pipeline is a sequence of data-parallel passes joined by scans on the host side
(`sparse_marching_cubes.py`), each one thread per item:

1. Lipschitz octree, level by level: the centres of the level's cells (`octree_centers`),
   which cells may hold the level set (`octree_keep`), a compaction (`compact_cells`) and
   the eight children of each survivor (`subdivide_cells`), in child order x, y, z bits.
2. Corners: each cell's eight corner subscripts packed into one int64 code
   (`corner_codes`); a stable sort of the codes, runs of equal codes (`first_of_run`), and
   per cell corner the rank of its code among the distinct ones (`scatter_rank`), and per
   distinct corner its position and first source (`unique_corners`).
3. Marching cubes over the cells: the crossing edges (`mark_edges`), one per (lower
   corner, axis) slot, whose inclusive scan numbers the vertices (`edge_vertices`), and
   each cell's triangles at the scan of the cells' counts (`cell_faces`).

The numbering is Warp's: vertices by slot, which is (corner code, axis) order; triangles
by cell in octree order, then table order.
"""

from __future__ import annotations

import kernelc as kc

# ---- Lipschitz octree ---------------------------------------------------------------------


@kc.kernel(enable_backward=False)
def octree_centers(cells: kc.array(dtype=kc.vec3i), origin: kc.vec3, width: kc.vec3,
                   centers: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    c = cells[i]
    mid = kc.vec3(float(c[0]) + 0.5, float(c[1]) + 0.5, float(c[2]) + 0.5)
    centers[i] = origin + kc.cw_mul(width, mid)


@kc.kernel(enable_backward=False)
def octree_keep(values: kc.array(dtype=kc.float32), threshold: kc.float32,
                band: kc.float32, keep: kc.array(dtype=kc.int32)):
    # A field with Lipschitz bound L changes by at most `band` = L * half the cell's
    # diagonal between the centre and any point of the cell.
    i = kc.tid()
    keep[i] = kc.where(kc.abs(values[i] - threshold) <= band, 1, 0)


@kc.kernel(enable_backward=False)
def cull_keep(cells: kc.array(dtype=kc.vec3i), ncells: kc.vec3i, keep: kc.array(dtype=kc.int32)):
    # The octree pads the grid to a power of two per axis; cells past the grid go.
    i = kc.tid()
    c = cells[i]
    keep[i] = kc.where(c[0] < ncells[0] and c[1] < ncells[1] and c[2] < ncells[2], 1, 0)


@kc.kernel(enable_backward=False)
def compact_cells(cells: kc.array(dtype=kc.vec3i), keep: kc.array(dtype=kc.int32),
                  scan: kc.array(dtype=kc.int32), out: kc.array(dtype=kc.vec3i)):
    i = kc.tid()
    if keep[i] != 0:
        out[scan[i] - 1] = cells[i]


@kc.kernel(enable_backward=False)
def subdivide_cells(cells: kc.array(dtype=kc.vec3i), out: kc.array(dtype=kc.vec3i)):
    i = kc.tid()
    c = cells[i] * 2
    for child in range(8):
        out[8 * i + child] = c + kc.vec3i(child & 1, (child >> 1) & 1, (child >> 2) & 1)


# ---- distinct corners ---------------------------------------------------------------------


@kc.kernel(enable_backward=False)
def cell_bounds(cells: kc.array(dtype=kc.vec3i), lo: kc.array(dtype=kc.int32),
                hi: kc.array(dtype=kc.int32)):
    i = kc.tid()
    c = cells[i]
    for axis in range(3):
        kc.atomic_min(lo, axis, c[axis])
        kc.atomic_max(hi, axis, c[axis])


@kc.kernel(enable_backward=False)
def corner_codes(cells: kc.array(dtype=kc.vec3i), offset: kc.vec3i, stride_x: kc.int64,
                 stride_y: kc.int64, codes: kc.array(dtype=kc.int64),
                 order: kc.array(dtype=kc.int32)):
    # Corner c of a cell at offset (c & 1, (c >> 1) & 1, (c >> 2) & 1) ^ (0, c & 1, 0):
    # CUBE_CORNER_OFFSETS (corners 2 and 3, 6 and 7 swap x). `order` gets the iota that
    # the sort carries along.
    i = kc.tid()
    c = cells[i] - offset
    for corner in range(8):
        dy = (corner >> 1) & 1
        dx = (corner & 1) ^ dy
        dz = (corner >> 2) & 1
        code = (kc.int64(c[0] + dx) * stride_x + kc.int64(c[1] + dy) * stride_y
                + kc.int64(c[2] + dz))
        codes[8 * i + corner] = code
        order[8 * i + corner] = 8 * i + corner


@kc.kernel(enable_backward=False)
def first_of_run(codes: kc.array(dtype=kc.int64), first: kc.array(dtype=kc.int32)):
    i = kc.tid()
    flag = 1
    if i > 0:
        flag = kc.where(codes[i] != codes[i - 1], 1, 0)
    first[i] = flag


@kc.kernel(enable_backward=False)
def scatter_rank(order: kc.array(dtype=kc.int32), rank: kc.array(dtype=kc.int32),
                 cell_corners: kc.array(dtype=kc.int32)):
    # Each cell corner learns the number of its distinct corner (the sort is a
    # permutation, so every entry is written once).
    i = kc.tid()
    cell_corners[order[i]] = rank[i] - 1


@kc.kernel(enable_backward=False)
def unique_corners(codes: kc.array(dtype=kc.int64), order: kc.array(dtype=kc.int32),
                   first: kc.array(dtype=kc.int32), rank: kc.array(dtype=kc.int32),
                   stride_x: kc.int64, stride_y: kc.int64, base: kc.vec3, width: kc.vec3,
                   positions: kc.array(dtype=kc.vec3), source: kc.array(dtype=kc.int32)):
    # The position is decoded from subscripts relative to the smallest corner (`base` is
    # its position) so that float32 sees small integers only. `source` is the first cell
    # corner with this code in the stable sort: the lowest flat index (cell * 8 + corner).
    i = kc.tid()
    if first[i] == 0:
        return
    code = codes[i]
    ci = code / stride_x
    rest = code - ci * stride_x
    cj = rest / stride_y
    ck = rest - cj * stride_y
    u = rank[i] - 1
    sub = kc.vec3(float(kc.int32(ci)), float(kc.int32(cj)), float(kc.int32(ck)))
    positions[u] = base + kc.cw_mul(width, sub)
    source[u] = order[i]


@kc.kernel
def gather_values(source: kc.array(dtype=kc.int32), values: kc.array(dtype=kc.float32),
                  out: kc.array(dtype=kc.float32)):
    # One-to-one, so that the gradient goes back to exactly one cell corner each.
    i = kc.tid()
    out[i] = values[source[i]]


# ---- marching cubes over the cells --------------------------------------------------------


@kc.func
def cell_case(cell_corners: kc.array2d(dtype=kc.int32), values: kc.array(dtype=kc.float32),
              threshold: kc.float32, cell: int) -> int:
    case = 0
    for corner in range(8):
        if values[cell_corners[cell, corner]] >= threshold:
            case = case | (1 << corner)
    return case


@kc.kernel(enable_backward=False)
def mark_edges(cell_corners: kc.array2d(dtype=kc.int32), values: kc.array(dtype=kc.float32),
               threshold: kc.float32, case_ranges: kc.array(dtype=kc.int32),
               slot_edges: kc.array(dtype=kc.int32), edge_active: kc.array(dtype=kc.int32),
               edge_upper: kc.array(dtype=kc.int32), face_count: kc.array(dtype=kc.int32)):
    # An edge is slot 3 * (its lower corner) + axis. Cells sharing an edge write the same
    # values to its slot, so the races are benign. `slot_edges` packs each triangle slot's
    # edge as lower corner (bits 0-2), upper corner (3-5) and axis (6-7).
    cell = kc.tid()
    case = cell_case(cell_corners, values, threshold, cell)
    start = case_ranges[case]
    end = case_ranges[case + 1]
    for slot in range(start, end):
        edge = slot_edges[slot]
        lower = cell_corners[cell, edge & 7]
        index = 3 * lower + (edge >> 6)
        edge_active[index] = 1
        edge_upper[index] = cell_corners[cell, (edge >> 3) & 7]
    face_count[cell] = (end - start) // 3


@kc.kernel
def edge_vertices(edge_active: kc.array(dtype=kc.int32), vertex_scan: kc.array(dtype=kc.int32),
                  edge_upper: kc.array(dtype=kc.int32), positions: kc.array(dtype=kc.vec3),
                  values: kc.array(dtype=kc.float32), threshold: kc.float32,
                  verts: kc.array(dtype=kc.vec3)):
    # The one differentiable step: the vertex moves with its two corners' values.
    slot = kc.tid()
    if edge_active[slot] == 0:
        return
    lower = slot / 3
    upper = edge_upper[slot]
    a = values[lower]
    t = kc.clamp((threshold - a) / (values[upper] - a), 0.0, 1.0)
    verts[vertex_scan[slot] - 1] = kc.lerp(positions[lower], positions[upper], t)


@kc.kernel(enable_backward=False)
def cell_faces(cell_corners: kc.array2d(dtype=kc.int32), values: kc.array(dtype=kc.float32),
               threshold: kc.float32, case_ranges: kc.array(dtype=kc.int32),
               slot_edges: kc.array(dtype=kc.int32), vertex_scan: kc.array(dtype=kc.int32),
               face_count: kc.array(dtype=kc.int32), face_scan: kc.array(dtype=kc.int32),
               indices: kc.array(dtype=kc.int32)):
    cell = kc.tid()
    count = face_count[cell]
    if count == 0:
        return
    case = cell_case(cell_corners, values, threshold, cell)
    out = 3 * (face_scan[cell] - count)
    for slot in range(case_ranges[case], case_ranges[case + 1]):
        edge = slot_edges[slot]
        index = 3 * cell_corners[cell, edge & 7] + (edge >> 6)
        indices[out] = vertex_scan[index] - 1
        out += 1
