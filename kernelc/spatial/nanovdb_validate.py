"""Checks that a NanoVDB grid buffer is one kernels can walk without leaving it.

A grid read from a file or handed in as bytes is untrusted: every offset and count in its
headers is checked before any node is read. For each node level the declared array must
start after the tree header on a 32-byte boundary and fit in the grid; the levels must be
stored in breadth-first order without overlapping (root and its tiles, upper, lower,
leaves, then the blind metadata); every child offset (root tiles, internal-node tables)
must land exactly on the first byte of a node of the next level. Blind-data (feature)
arrays must lie inside the grid and every name must end in a NUL within its 256 bytes.

Grids whose leaves do not hold plain values (masks, bools, quantised floats) are checked
the same way: only their leaf sizes differ, and FpN leaves are of variable size (a 96-byte
header and 512 values of 1, 2, 4, 8 or 16 bits, the width read from each leaf's flags).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from kernelc.spatial import nanovdb as nv
from kernelc.spatial.nanovdb import GridHeader

BAD = "Invalid NanoVDB grid structure"
UNSUPPORTED = "Unsupported NanoVDB tree layout (nodes are not breadth-first)"

GRID_TYPE_FPN = 16
# Grid types whose leaves do not hold plain values: code -> (root size, leaf size). Their
# other nodes have the sizes of a 4-byte type; FpN leaves vary (None).
_OPAQUE_SIZES = {8: (64, 96), 11: (64, 160), 12: (64, 2144), 13: (64, 352), 14: (64, 608),
                 15: (64, 1120), GRID_TYPE_FPN: (64, None), 23: (96, 1120)}
_FPN_LEAF_HEADER = 96
_LEAF_OFF_FLAGS = 12  # uint32: the leaf's bbox extent (3 bytes) and flags (1 byte)


@dataclass(frozen=True)
class _NodeSizes:
    root: int
    tile: int
    upper: int
    upper_table: int
    lower: int
    lower_table: int
    leaf: int | None  # None: variable (FpN)
    stride: int


def _node_sizes(grid_type: int) -> _NodeSizes:
    lay = nv.layout(grid_type)
    if lay is not None:
        return _NodeSizes(lay.root_size, lay.tile_size, lay.upper_size, lay.upper_table,
                          lay.lower_size, lay.lower_table, lay.leaf_size, lay.table_stride)
    like = nv.layout(1)  # float32: internal nodes of the opaque types are laid out alike
    root, leaf = _OPAQUE_SIZES[grid_type]
    return _NodeSizes(root, like.tile_size, like.upper_size, like.upper_table,
                      like.lower_size, like.lower_table, leaf, like.table_stride)


class FeatureInfo(NamedTuple):
    """One blind-data array, as validated: offsets are from the grid's first byte."""

    name: str
    offset: int
    value_size: int
    value_count: int
    grid_type: int


class _Level(NamedTuple):
    """A node level: its bytes [begin, end) in the grid and the first byte of each node
    (`starts` only for variable-size leaves; fixed sizes use `size`)."""

    begin: int
    end: int
    count: int
    size: int
    starts: np.ndarray | None = None

    def contains(self, positions: np.ndarray) -> bool:
        if self.starts is not None:
            return bool(np.isin(positions, self.starts).all())
        rel = positions - self.begin
        return not ((rel < 0).any() or (rel >= self.end - self.begin).any()
                    or (rel % self.size).any())


# ---- public -------------------------------------------------------------------------------


def validate(buf: np.ndarray, offset: int = 0) -> GridHeader:
    """The headers of the grid at `offset` of `buf` (uint8), once it is known to be sound.

    Raises:
        RuntimeError: "Invalid NanoVDB grid structure: ..." for a malformed grid,
            "Unsupported NanoVDB tree layout" for a tree not stored breadth first.
    """
    h, breadth_first = _check_grid(buf, offset)
    if not breadth_first:
        raise RuntimeError(UNSUPPORTED)
    return h


def split_grids(buf: np.ndarray) -> list[GridHeader]:
    """Validates each grid of a buffer holding grids back to back (a file's: their sizes
    are multiples of 32, so each grid is aligned) and returns their headers. A malformed
    grid anywhere wins over a tree layout kernelc cannot read."""
    headers, offset, unsupported = [], 0, False
    while offset < buf.size:
        h, breadth_first = _check_grid(buf, offset)
        if h.grid_size % 32:
            raise RuntimeError(f"{BAD}: grid size {h.grid_size} is not a multiple of 32")
        unsupported |= not breadth_first
        headers.append(h)
        offset += h.grid_size
    if not headers:
        raise RuntimeError(f"{BAD}: empty buffer")
    if unsupported:
        raise RuntimeError(UNSUPPORTED)
    return headers


def feature_infos(buf: np.ndarray, h: GridHeader, offset: int = 0) -> tuple[FeatureInfo, ...]:
    """The blind-data arrays of a validated grid (a snapshot: later writes to the buffer
    do not change what a volume reports)."""
    infos = []
    for k in range(h.blind_count):
        meta = h.blind_offset + k * nv.BLIND_METADATA_SIZE
        data_offset, count, value_size = nv._u("qQI", buf, offset + meta)
        grid_type = nv._u("I", buf, offset + meta + 28)[0]
        raw = bytes(buf[offset + meta + 32:offset + meta + 32 + nv.NAME_SIZE])
        name = raw.split(b"\0", 1)[0].decode("ascii", "replace")
        infos.append(FeatureInfo(name, meta + data_offset, value_size, count, grid_type))
    return tuple(infos)


# ---- one grid -----------------------------------------------------------------------------


def _check_grid(buf: np.ndarray, offset: int) -> tuple[GridHeader, bool]:
    """(headers, whether the tree is breadth first); raises for a malformed grid."""
    available = buf.size - offset
    if available < nv.GRID_SIZE + nv.TREE_SIZE:
        raise RuntimeError(f"{BAD}: {available} bytes is too small for a grid")
    h = nv.read_header(buf, offset)
    if h.magic not in (nv.MAGIC_NUMBER, nv.MAGIC_GRID):
        raise RuntimeError("NanoVDB signature not found on grid")
    if h.version >> 21 != nv.MAJOR_VERSION:
        raise RuntimeError(f"unsupported NanoVDB grid version {h.version >> 21}")
    if not nv.GRID_SIZE + nv.TREE_SIZE <= h.grid_size <= available:
        raise RuntimeError(f"{BAD}: grid size {h.grid_size} does not fit the {available} "
                           "bytes given")
    if h.grid_type not in nv.GRID_TYPES:
        raise RuntimeError(f"{BAD}: unknown grid type {h.grid_type}")
    _check_names_and_blind_data(buf, offset, h)
    if not h.flags & nv.FLAG_BREADTH_FIRST:
        return h, False
    _check_tree(buf[offset:offset + h.grid_size], h)
    return h, True


def _check_names_and_blind_data(buf: np.ndarray, offset: int, h: GridHeader) -> None:
    """The grid's name and every blind array's name end in a NUL within their 256 bytes;
    the blind metadata table and every blind array lie in the grid."""
    if 0 not in buf[offset + nv.GRID_OFF_NAME:offset + nv.GRID_OFF_NAME + nv.NAME_SIZE]:
        raise RuntimeError(f"{BAD}: the grid name is not NUL-terminated")
    if not 0 <= h.blind_offset <= h.grid_size or (
            h.blind_count > (h.grid_size - h.blind_offset) // nv.BLIND_METADATA_SIZE):
        raise RuntimeError(f"{BAD}: blind metadata outside the grid")
    for k in range(h.blind_count):
        meta = h.blind_offset + k * nv.BLIND_METADATA_SIZE  # from the grid's start
        data_offset, count, value_size = nv._u("qQI", buf, offset + meta)
        start = meta + data_offset
        if not 0 <= start <= h.grid_size or (
                value_size and count > (h.grid_size - start) // value_size):
            raise RuntimeError(f"{BAD}: feature array {k} lies outside the grid")
        name = buf[offset + meta + 32:offset + meta + 32 + nv.NAME_SIZE]
        if 0 not in name:
            raise RuntimeError(f"{BAD}: the name of feature array {k} is not NUL-terminated")


def _check_tree(grid: np.ndarray, h: GridHeader) -> None:
    sizes = _node_sizes(h.grid_type)
    leaf_off, lower_off, upper_off, root_off = h.node_offsets
    n_leaf, n_lower, n_upper = h.node_counts
    root = _level(root_off, 1, sizes.root, h.grid_size)
    upper = _level(upper_off, n_upper, sizes.upper, h.grid_size)
    lower = _level(lower_off, n_lower, sizes.lower, h.grid_size)
    if sizes.leaf is None:
        leaf = _fpn_leaves(grid, leaf_off, n_leaf, h.grid_size)
    else:
        leaf = _level(leaf_off, n_leaf, sizes.leaf, h.grid_size)
    tiles = int(nv._u("I", grid, root.begin + nv.ROOT_TILE_COUNT)[0])
    if tiles > (h.grid_size - root.end) // sizes.tile:
        raise RuntimeError(f"{BAD}: root table outside the grid")
    # Breadth-first order, without overlaps; a level without nodes may point anywhere.
    # The tree ends before the blind metadata (a grid without any may leave its offset 0).
    occupied = root.end + tiles * sizes.tile
    for level in (upper, lower, leaf):
        if level.count:
            if level.begin < occupied:
                raise RuntimeError(f"{BAD}: node levels overlap")
            occupied = level.end
    boundary = h.grid_size if h.blind_count == 0 and h.blind_offset == 0 else h.blind_offset
    if occupied > boundary:
        raise RuntimeError(f"{BAD}: nodes overlap the blind metadata")
    if tiles:
        table = grid[root.end:root.end + tiles * sizes.tile].reshape(tiles, sizes.tile)
        child = np.ascontiguousarray(table[:, 8:16]).view(np.int64)[:, 0]
        _check_children(root.begin + child[child != 0], upper)
    _check_children(_child_positions(grid, upper, nv.UPPER_CHILD_MASK, sizes.upper_table,
                                     nv.UPPER_TABLE, sizes.stride), lower)
    _check_children(_child_positions(grid, lower, nv.LOWER_CHILD_MASK, sizes.lower_table,
                                     nv.LOWER_TABLE, sizes.stride), leaf)


def _level(relative: int, count: int, size: int, grid_size: int) -> _Level:
    """A fixed-size node level `relative` bytes after the tree header's start."""
    if count == 0:
        return _Level(0, 0, 0, size)
    begin = _node_begin(relative, grid_size)
    if count > (grid_size - begin) // size:
        raise RuntimeError(f"{BAD}: nodes outside the grid")
    return _Level(begin, begin + count * size, count, size)


def _node_begin(relative: int, grid_size: int) -> int:
    if not nv.TREE_SIZE <= relative <= grid_size - nv.GRID_SIZE or relative % 32:
        raise RuntimeError(f"{BAD}: nodes outside the grid")
    return nv.GRID_SIZE + relative


def _fpn_leaves(grid: np.ndarray, relative: int, count: int, grid_size: int) -> _Level:
    """FpN leaves, one after another, each as long as its bit width makes it."""
    if count == 0:
        return _Level(0, 0, 0, _FPN_LEAF_HEADER, np.zeros(0, np.int64))
    begin = _node_begin(relative, grid_size)
    if count > (grid_size - begin) // (_FPN_LEAF_HEADER + 64):
        raise RuntimeError(f"{BAD}: leaves outside the grid")
    starts = np.empty(count, np.int64)
    position = begin
    for k in range(count):
        if position + _FPN_LEAF_HEADER > grid_size:
            raise RuntimeError(f"{BAD}: leaves outside the grid")
        log_bits = int(nv._u("I", grid, position + _LEAF_OFF_FLAGS)[0]) >> 29
        if log_bits > 4:
            raise RuntimeError(f"{BAD}: a leaf of {1 << log_bits}-bit values")
        size = _FPN_LEAF_HEADER + (64 << log_bits)
        if position + size > grid_size:
            raise RuntimeError(f"{BAD}: leaves outside the grid")
        starts[k] = position
        position += size
    return _Level(begin, position, count, _FPN_LEAF_HEADER, starts)


def _child_positions(grid: np.ndarray, level: _Level, mask_at: int, table_at: int,
                     entries: int, stride: int) -> np.ndarray:
    """Byte positions of the children of an internal-node level (its child-mask bits)."""
    if level.count == 0:
        return np.zeros(0, np.int64)
    nodes = grid[level.begin:level.end].reshape(level.count, level.size)
    masks = np.unpackbits(np.ascontiguousarray(nodes[:, mask_at:mask_at + entries // 8]),
                          axis=1, bitorder="little").astype(bool)
    table = nodes[:, table_at:table_at + entries * stride].reshape(level.count, entries, stride)
    offsets = np.ascontiguousarray(table[:, :, :8]).view(np.int64)[:, :, 0]
    starts = level.begin + np.arange(level.count, dtype=np.int64)[:, None] * level.size
    return (starts + offsets)[masks]


def _check_children(positions: np.ndarray, level: _Level) -> None:
    if positions.size and (level.count == 0 or not level.contains(positions)):
        raise RuntimeError(f"{BAD}: a child offset does not point at a node")
