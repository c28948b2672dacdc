"""Builds NanoVDB grids on the host, with NumPy, from a set of leaves (8^3 voxel tiles).

Leaves are stored in the order Warp's builder uses, so that voxel indices (the dense index
of `volume_lookup_index`, `get_voxels`) agree with Warp: upper nodes sorted by the signed
coordinates of their origin (x, then y, then z), and within one upper node, lower nodes and
leaves by their offset in the parent's table. Every level is stored contiguously, in that
order (breadth first). Node bounding boxes hold the active voxels; statistics (minimum,
maximum, average, deviation) are left zero, as in grids Warp builds.
"""

from __future__ import annotations

import struct

import numpy as np

from kernelc.spatial import nanovdb as nv


def _put(buf: np.ndarray, offset: int, fmt: str, *values) -> None:
    struct.pack_into("<" + fmt, buf, offset, *values)


def _sort_leaves(origins: np.ndarray) -> np.ndarray:
    """The permutation that puts leaves (origins, multiples of 8) in Warp's storage order."""
    upper = origins >> 12
    upper_offset = (origins & 4095) >> 7
    lower_offset = (origins & 127) >> 3
    keys = [lower_offset[:, 2], lower_offset[:, 1], lower_offset[:, 0], upper_offset[:, 2],
            upper_offset[:, 1], upper_offset[:, 0], upper[:, 2], upper[:, 1], upper[:, 0]]
    return np.lexsort(keys)


def _offset_in(origins: np.ndarray, dim: int, child: int) -> np.ndarray:
    """The index of each child origin in its parent's table (x slowest)."""
    local = (origins & (dim - 1)) // child
    bits = (dim // child).bit_length() - 1
    return (local[:, 0] << (2 * bits)) | (local[:, 1] << bits) | local[:, 2]


def _unique_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First row of each run of equal rows (keys sorted), and each row's run number."""
    change = np.ones(len(keys), bool)
    change[1:] = (keys[1:] != keys[:-1]).any(axis=1)
    return np.flatnonzero(change), np.cumsum(change) - 1


def _bboxes(lo: np.ndarray, hi: np.ndarray, parent: np.ndarray, count: int):
    """Per parent, the union of its children's boxes."""
    out_lo = np.full((count, 3), np.iinfo(np.int32).max, np.int32)
    out_hi = np.full((count, 3), np.iinfo(np.int32).min, np.int32)
    np.minimum.at(out_lo, parent, lo)
    np.maximum.at(out_hi, parent, hi)
    return out_lo, out_hi


def _coord_key(origins: np.ndarray) -> np.ndarray:
    """The root table's key of each coordinate (its top 20 bits per axis, unsigned)."""
    u = (origins.astype(np.int64) & 0xFFFFFFFF) >> 12
    return (u[:, 2] | (u[:, 1] << 21) | (u[:, 0] << 42)).astype(np.uint64)


def inverse(matrix: np.ndarray) -> np.ndarray:
    """The inverse of a 3x3 float64 matrix, rounded as Warp's builder rounds it: the
    builtin `inverse` of the transpose, transposed back."""
    from kernelc import inverse as builtin_inverse
    from kernelc.types_vec import TYPES

    transpose = TYPES["mat33d"](*np.asarray(matrix, np.float64).T.ravel())
    return np.asarray(builtin_inverse(transpose), np.float64).T


def _write_map(buf: np.ndarray, matrix: np.ndarray, translation: np.ndarray) -> None:
    mat = np.asarray(matrix, np.float64).reshape(3, 3)
    inv = inverse(mat)
    m = nv.GRID_OFF_MAP
    _put(buf, m + nv.MAP_OFF_MATF, "9f", *mat.astype(np.float32).ravel())
    _put(buf, m + nv.MAP_OFF_INVMATF, "9f", *inv.astype(np.float32).ravel())
    _put(buf, m + nv.MAP_OFF_VECF, "3f", *translation)
    _put(buf, m + nv.MAP_OFF_TAPERF, "f", 1.0)
    _put(buf, m + nv.MAP_OFF_MATD, "9d", *mat.ravel())
    _put(buf, m + nv.MAP_OFF_INVMATD, "9d", *inv.ravel())
    _put(buf, m + nv.MAP_OFF_VECD, "3d", *translation.astype(np.float64))
    _put(buf, m + nv.MAP_OFF_TAPERD, "d", 1.0)


def _world_bbox(matrix: np.ndarray, translation: np.ndarray, lo: np.ndarray,
                hi: np.ndarray) -> np.ndarray:
    """The world box of the index box [lo, hi + 1] (its eight corners mapped)."""
    corners = np.array([[a[0], b[1], c[2]] for a in (lo, hi + 1) for b in (lo, hi + 1)
                        for c in (lo, hi + 1)], np.float64)
    world = corners @ np.asarray(matrix, np.float64).reshape(3, 3).T + translation
    return np.concatenate([world.min(0), world.max(0)])


def _onindex_words(active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per leaf: its number of active voxels, and the packed prefix sums of active counts
    of its 64-bit mask words (nine bits per word after the first)."""
    words = np.packbits(active, axis=1, bitorder="little").reshape(len(active), 8, 8)
    counts = np.unpackbits(words, axis=2).sum(axis=2).astype(np.uint64)  # per word
    sums = np.cumsum(counts, axis=1)
    prefix = np.zeros(len(active), np.uint64)
    for w in range(7):
        prefix |= sums[:, w] << np.uint64(9 * w)
    return sums[:, 7], prefix


def build_grid(origins: np.ndarray, grid_type: int, background: bytes, values: np.ndarray | None,
               active: np.ndarray, matrix: np.ndarray, translation: np.ndarray,
               grid_class: int | None = None) -> np.ndarray:
    """A NanoVDB grid (uint8 buffer) with a leaf at each of `origins` ((n, 3) int32, unique
    multiples of 8).

    Args:
        origins: Leaf origins; any order (the grid stores them sorted).
        grid_type: NanoVDB grid type code (a value type, or 19/20 for index grids).
        background: The background value's bytes (empty for index grids).
        values: (n, 512 * value size) uint8: each leaf's values, slots in x-major order.
        active: (n, 512) bool: each leaf's active voxels.
        matrix: 3x3 index-to-world linear transform (row-major).
        translation: Index-to-world translation (3 floats).
        grid_class: NanoVDB grid class code (None: an index grid's for index types, else
            unknown).
    """
    if grid_class is None:
        grid_class = nv.CLASS_INDEX_GRID if grid_type in nv.INDEX_TYPES else nv.CLASS_UNKNOWN
    lay = nv.layout(grid_type)
    origins = np.asarray(origins, np.int32).reshape(-1, 3)
    order = _sort_leaves(origins)
    origins, active = origins[order], np.asarray(active, bool)[order]
    if values is not None:
        values = values[order]
    n_leaf = len(origins)
    upper_first, upper_of_leaf = _unique_rows(origins >> 12)
    lower_first, lower_of_leaf = _unique_rows(origins >> 7)
    n_upper, n_lower = len(upper_first), len(lower_first)
    upper_of_lower = upper_of_leaf[lower_first]

    root = nv.GRID_SIZE + nv.TREE_SIZE
    upper = root + lay.root_size + n_upper * lay.tile_size
    lower = upper + n_upper * lay.upper_size
    leaf = lower + n_lower * lay.lower_size
    size = leaf + n_leaf * lay.leaf_size
    buf = np.zeros(size, np.uint8)
    translation = np.asarray(translation, np.float32).reshape(3)
    matrix = np.asarray(matrix, np.float32).reshape(3, 3)

    leaf_lo, leaf_hi = _leaf_boxes(active, origins)
    lower_lo, lower_hi = _bboxes(leaf_lo, leaf_hi, lower_of_leaf, n_lower)
    upper_lo, upper_hi = _bboxes(lower_lo, lower_hi, upper_of_lower, n_upper)
    if n_leaf:
        root_lo, root_hi = upper_lo.min(0), upper_hi.max(0)
    else:  # an empty grid (a rebuildable volume's): NanoVDB's empty box, min above max
        root_lo = np.full(3, 2**31 - 1, np.int32)
        root_hi = np.full(3, -2**31, np.int32)

    voxel_count = int(active.sum())
    _write_headers(buf, grid_type, grid_class, matrix, translation, root_lo, root_hi,
                   voxel_count, (leaf, lower, upper, root), (n_leaf, n_lower, n_upper))

    # root and its tiles (one per upper node)
    _put(buf, root, "6iI", *root_lo, *root_hi, n_upper)
    buf[root + lay.root_background:root + lay.root_background + len(background)] = \
        np.frombuffer(background, np.uint8)
    tiles = buf[root + lay.root_size:upper].reshape(n_upper, lay.tile_size)
    upper_origins = origins[upper_first] & np.int32(~4095)
    tiles[:, 0:8] = _coord_key(upper_origins).view(np.uint8).reshape(-1, 8)
    child = upper - root + np.arange(n_upper, dtype=np.int64) * lay.upper_size
    tiles[:, 8:16] = child.view(np.uint8).reshape(-1, 8)

    _fill_internal(buf, upper, lay.upper_size, lay.upper_table, nv.UPPER_TABLE, lay, background,
                   upper_origins, upper_lo, upper_hi, nv.UPPER_CHILD_MASK,
                   upper_of_lower, _offset_in(origins[lower_first], 4096, 128),
                   lower, lay.lower_size)
    _fill_internal(buf, lower, lay.lower_size, lay.lower_table, nv.LOWER_TABLE, lay, background,
                   origins[lower_first] & np.int32(~127), lower_lo, lower_hi,
                   nv.LOWER_CHILD_MASK, lower_of_leaf, _offset_in(origins, 128, 8), leaf,
                   lay.leaf_size)

    _fill_leaves(buf[leaf:size].reshape(n_leaf, lay.leaf_size), lay, grid_type, leaf_lo, leaf_hi,
                 active, values)
    return buf


def _fill_internal(buf: np.ndarray, start: int, node_size: int, table_at: int, entries: int,
                   lay: nv.Layout, background: bytes, node_origins: np.ndarray,
                   lo: np.ndarray, hi: np.ndarray, mask_at: int, parent_of_child: np.ndarray,
                   slot_of_child: np.ndarray, child_start: int, child_size: int) -> None:
    """Boxes, child masks and tables of one level of internal nodes."""
    count = len(node_origins)
    nodes = buf[start:start + count * node_size].reshape(count, node_size)
    nodes[:, 0:12] = lo.view(np.uint8).reshape(-1, 12)
    nodes[:, 12:24] = hi.view(np.uint8).reshape(-1, 12)
    table = nodes[:, table_at:table_at + entries * lay.table_stride].reshape(
        count, entries, lay.table_stride)
    if background:
        table[:, :, :len(background)] = np.frombuffer(background, np.uint8)
    masks = np.zeros((count, entries), bool)
    masks[parent_of_child, slot_of_child] = True
    nodes[:, mask_at:mask_at + entries // 8] = np.packbits(masks, axis=1, bitorder="little")
    parent_start = start + parent_of_child.astype(np.int64) * node_size
    offsets = child_start + np.arange(len(parent_of_child), dtype=np.int64) * child_size
    # a child's offset replaces the first 8 bytes of the background value in its entry
    table[parent_of_child, slot_of_child, :8] = \
        (offsets - parent_start).view(np.uint8).reshape(-1, 8)


def _leaf_boxes(active: np.ndarray, origins: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per leaf, the box of its active voxels (its whole tile when none is active)."""
    if active.all():
        return origins.astype(np.int32), (origins + 7).astype(np.int32)
    local = nv.leaf_offsets_to_coords()
    any_active = active.any(axis=1)
    lo = np.where(active[:, :, None], local[None], np.int32(8)).min(axis=1)
    hi = np.where(active[:, :, None], local[None], -1).max(axis=1)
    lo = np.where(any_active[:, None], lo, 0) + origins
    hi = np.where(any_active[:, None], hi, 7) + origins
    return lo.astype(np.int32), hi.astype(np.int32)


def _write_headers(buf: np.ndarray, grid_type: int, grid_class: int, matrix: np.ndarray,
                   translation: np.ndarray, root_lo: np.ndarray, root_hi: np.ndarray,
                   voxel_count: int, starts: tuple[int, ...], counts: tuple[int, ...]) -> None:
    """The grid header (map, boxes, type) and the tree header (node offsets and counts)."""
    size = buf.size
    _put(buf, 0, "QQIIIIQ", nv.MAGIC_GRID, 0xFFFFFFFFFFFFFFFF, nv.VERSION,
         nv.FLAG_HAS_BBOX | nv.FLAG_BREADTH_FIRST, 0, 1, size)
    _write_map(buf, matrix, translation)
    _put(buf, nv.GRID_OFF_WORLD_BBOX, "6d",
         *_world_bbox(matrix, translation.astype(np.float64), root_lo, root_hi))
    # NanoVDB's voxel size: the map of (1, 1, 1) minus that of the origin
    ones = matrix.astype(np.float64).sum(axis=1) + translation - translation.astype(np.float64)
    _put(buf, nv.GRID_OFF_VOXEL_SIZE, "3d", *ones)
    _put(buf, nv.GRID_OFF_CLASS, "IIqI", grid_class, grid_type, size, 0)
    indexed = grid_type in nv.INDEX_TYPES  # the number of indices, background included
    _put(buf, nv.GRID_OFF_DATA1, "Q", voxel_count + 1 if indexed else 0)
    tree = nv.GRID_SIZE
    _put(buf, tree, "4Q", *(start - tree for start in starts))
    _put(buf, tree + 32, "6IQ", *counts, *counts, voxel_count)


def _fill_leaves(nodes: np.ndarray, lay: nv.Layout, grid_type: int, lo: np.ndarray,
                 hi: np.ndarray, active: np.ndarray, values: np.ndarray | None) -> None:
    """Boxes, active masks and values (or voxel index offsets) of the leaves."""
    nodes[:, 0:12] = lo.view(np.uint8).reshape(-1, 12)
    dif = (hi - lo).astype(np.uint32)
    flags = dif[:, 0] | (dif[:, 1] << 8) | (dif[:, 2] << 16) | np.uint32(2 << 24)
    nodes[:, 12:16] = flags.view(np.uint8).reshape(-1, 4)
    nodes[:, 16:80] = np.packbits(active, axis=1, bitorder="little")
    kind = nv.INDEX_TYPES.get(grid_type, 0)
    if kind == 1:  # every voxel: leaf number * 512, one-based
        offsets = np.arange(len(nodes), dtype=np.uint64) * np.uint64(nv.LEAF_TABLE) + np.uint64(1)
        nodes[:, 80:88] = offsets.view(np.uint8).reshape(-1, 8)
    elif kind == 2:  # active voxels, counted across the leaves in storage order
        per_leaf, prefix = _onindex_words(active)
        first = np.concatenate([[0], np.cumsum(per_leaf)[:-1]]).astype(np.uint64) + 1
        nodes[:, 80:88] = first.view(np.uint8).reshape(-1, 8)
        nodes[:, 88:96] = prefix.view(np.uint8).reshape(-1, 8)
    else:
        nodes[:, lay.leaf_table:] = values
