"""The NanoVDB format, on the host: node layouts, grid headers, `.nvdb` files, validation.

A NanoVDB grid is one contiguous buffer: the grid header (672 bytes: name, transform, type),
the tree header (64 bytes: byte offsets and counts of each node level), the root (a table
of tiles, one per upper node or constant tile, found by a key of the coordinate's top
bits), then the upper nodes (32^3 children each), the lower nodes (16^3) and the leaves
(8^3 voxels), each level stored contiguously (breadth first). An internal node holds a
child mask and a table whose entries are either a value or the byte offset of a child.
Every structure is aligned to 32 bytes, so where each field lies follows from the size and
alignment of the value type: `layout()` derives it, for every type with plain values.

Checking that a grid is sound is `nanovdb_validate`'s job.

The `.nvdb` file wraps one or more grids: a 16-byte header (magic, version, grid count,
codec), 176 bytes of metadata and the name per grid, then the grids, each compressed on
its own (zlib or blosc, with a uint64 size before each) unless the codec is 0.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

MAGIC_NUMBER = 0x304244566F6E614E  # "NanoVDB0", little-endian
MAGIC_GRID = 0x314244566F6E614E  # "NanoVDB1"
MAGIC_FILE = 0x324244566F6E614E  # "NanoVDB2"
MAJOR_VERSION = 32
VERSION = (32 << 21) | (8 << 10)  # 32.8.0, the version Warp 1.19 writes

GRID_SIZE = 672
TREE_SIZE = 64
NAME_SIZE = 256
BLIND_METADATA_SIZE = 288
FILE_HEADER_SIZE = 16
FILE_METADATA_SIZE = 176

# Grid header fields (bytes).
GRID_OFF_NAME = 40
GRID_OFF_MAP = 296  # float32 mat[9], invmat[9], vec[3], taper; float64 the same
GRID_OFF_WORLD_BBOX = 560
GRID_OFF_VOXEL_SIZE = 608
GRID_OFF_CLASS = 632
GRID_OFF_TYPE = 636
GRID_OFF_BLIND_OFFSET = 640
GRID_OFF_BLIND_COUNT = 648
GRID_OFF_DATA1 = 656  # index grids: the number of indexed values (+1 for the background)
MAP_OFF_MATF, MAP_OFF_INVMATF, MAP_OFF_VECF, MAP_OFF_TAPERF = 0, 36, 72, 84
MAP_OFF_MATD, MAP_OFF_INVMATD, MAP_OFF_VECD, MAP_OFF_TAPERD = 88, 160, 232, 256

FLAG_HAS_BBOX = 1 << 1
FLAG_BREADTH_FIRST = 1 << 5

ROOT_TILE_COUNT = 24  # the root's uint32 number of tiles, after its int32 bbox[6]
UPPER_TABLE, LOWER_TABLE, LEAF_TABLE = 32768, 4096, 512
UPPER_CHILD_MASK, LOWER_CHILD_MASK = 4128, 544
LEAF_VALUE_MASK = 16

# Grid types: code -> (NanoVDB's name, value size, value alignment, statistics size).
# Sizes are None for types whose leaves are not plain values (bits, quantised floats).
GRID_TYPES: dict[int, tuple[str, int | None, int, int]] = {
    1: ("float", 4, 4, 4), 2: ("double", 8, 8, 8), 3: ("int16", 2, 2, 4),
    4: ("int32", 4, 4, 4), 5: ("int64", 8, 8, 8), 6: ("Vec3f", 12, 4, 4),
    7: ("Vec3d", 24, 8, 8), 8: ("Mask", None, 0, 0), 9: ("Half", 2, 2, 4),
    10: ("uint32", 4, 4, 4), 11: ("bool", None, 0, 0), 12: ("RGBA8", None, 0, 0),
    13: ("Float4", None, 0, 0), 14: ("Float8", None, 0, 0), 15: ("Float16", None, 0, 0),
    16: ("FloatN", None, 0, 0), 17: ("Vec4f", 16, 4, 4), 18: ("Vec4d", 32, 8, 8),
    19: ("Index", 8, 8, 8), 20: ("OnIndex", 8, 8, 8), 21: ("IndexMask", 8, 8, 8),
    22: ("OnIndexMask", 8, 8, 8), 23: ("PointIndex", None, 0, 0), 24: ("Vec3u8", 3, 1, 4),
    25: ("Vec3u16", 6, 2, 4), 26: ("uint8", 1, 1, 4),
}
INDEX_TYPES = {19: 1, 20: 2, 21: 1, 22: 2}  # code -> 1: every voxel indexed, 2: active ones
CLASS_UNKNOWN, CLASS_INDEX_GRID = 0, 8


def _align(offset: int, alignment: int) -> int:
    return -(-offset // alignment) * alignment if alignment else offset


@dataclass(frozen=True)
class Layout:
    """Byte offsets and sizes of the nodes of one grid type (the same for every grid of it)."""

    root_background: int
    root_size: int  # where the tile table starts
    tile_value: int
    tile_size: int
    upper_table: int
    upper_size: int
    lower_table: int
    lower_size: int
    leaf_table: int
    leaf_size: int
    table_stride: int  # bytes per internal-node table entry (a value or a child offset)
    value_size: int  # bytes per leaf value; 0 for index grids


def layout(grid_type: int) -> Layout | None:
    """The node layout of `grid_type`, or None when its leaves do not hold plain values."""
    size, align, stat = GRID_TYPES.get(grid_type, (None, None, 0, 0))[1:]
    if size is None:
        return None

    def after_stats(values_end: int) -> int:
        # minimum and maximum end at `values_end`; average and deviation follow, then the
        # table (or the tiles) at the next 32-byte boundary
        return _align(_align(values_end, stat) + 2 * stat, 32)

    root_background = _align(28, align)
    root_size = after_stats(root_background + 3 * size)  # background, minimum, maximum
    tile_value = _align(20, align)
    stride = _align(max(size, 8), max(align, 8))

    def internal(base: int, count: int) -> tuple[int, int]:
        table = after_stats(base + 2 * size)
        return table, table + count * stride

    upper_table, upper_size = internal(8224, UPPER_TABLE)
    lower_table, lower_size = internal(1056, LOWER_TABLE)
    if grid_type in INDEX_TYPES:  # a uint64 offset and a uint64 prefix sum (plus a mask)
        leaf_table, value_size = 80, 0
        leaf_size = 96 if grid_type in (19, 20) else 160
    else:
        leaf_table, value_size = after_stats(80 + 2 * size), size
        leaf_size = leaf_table + LEAF_TABLE * size
    return Layout(root_background, root_size, tile_value, _align(tile_value + size, 32),
                  upper_table, upper_size, lower_table, lower_size, leaf_table, leaf_size,
                  stride, value_size)


# ---- grid headers -------------------------------------------------------------------------


def _u(fmt: str, data: Any, offset: int) -> tuple:
    return struct.unpack_from("<" + fmt, data, offset)


@dataclass(frozen=True)
class GridHeader:
    """The grid and tree headers of one grid (what the host needs to know about it)."""

    magic: int
    version: int
    flags: int
    grid_index: int
    grid_count: int
    grid_size: int
    name: str
    matf: tuple[float, ...]
    vecf: tuple[float, ...]
    voxel_size: tuple[float, float, float]
    grid_class: int
    grid_type: int
    blind_offset: int
    blind_count: int
    node_offsets: tuple[int, int, int, int]  # leaf, lower, upper, root (from the tree)
    node_counts: tuple[int, int, int]  # leaf, lower, upper
    voxel_count: int

    @property
    def type_str(self) -> str:
        return GRID_TYPES.get(self.grid_type, ("?",))[0]


def read_header(data: Any, offset: int = 0) -> GridHeader:
    """The headers of the grid starting `offset` bytes into `data` (bytes-like)."""
    magic, _checksum, version, flags, index, count, size = _u("QQIIIIQ", data, offset)
    raw_name = bytes(data[offset + GRID_OFF_NAME:offset + GRID_OFF_NAME + NAME_SIZE])
    name = raw_name.split(b"\0", 1)[0].decode("ascii", "replace")
    m = offset + GRID_OFF_MAP
    tree = offset + GRID_SIZE
    return GridHeader(
        magic, version, flags, index, count, size, name, _u("9f", data, m + MAP_OFF_MATF),
        _u("3f", data, m + MAP_OFF_VECF), _u("3d", data, offset + GRID_OFF_VOXEL_SIZE),
        *_u("II", data, offset + GRID_OFF_CLASS), *_u("qI", data, offset + GRID_OFF_BLIND_OFFSET),
        _u("4Q", data, tree), _u("3I", data, tree + 32), _u("Q", data, tree + 56)[0])


# ---- .nvdb files --------------------------------------------------------------------------

CODECS = {"none": 0, "zip": 1, "blosc": 2}


def _blosc(codec_use: str):
    try:
        import blosc  # noqa: PLC0415  (optional: only blosc-compressed files need it)
    except ImportError as err:
        raise RuntimeError(f"the NanoVDB data is blosc-compressed ({codec_use}), but the "
                           f"Python module 'blosc' could not be imported: {err}") from err
    return blosc


def read_nvdb(data: bytes) -> bytes:
    """The grid buffer (every grid of the file's first segment, uncompressed and
    concatenated) of a serialized `.nvdb` file, or of a bare grid buffer."""
    if len(data) < FILE_HEADER_SIZE:
        raise RuntimeError("NanoVDB signature not found: the data is too short")
    magic, version, grid_count, codec = _u("QIHH", data, 0)
    if magic not in (MAGIC_NUMBER, MAGIC_FILE, MAGIC_GRID):
        raise RuntimeError("NanoVDB signature not found")
    if magic == MAGIC_GRID:  # a grid buffer without a file header
        return bytes(data)
    if version >> 21 != MAJOR_VERSION:
        raise RuntimeError(f"unsupported NanoVDB version {version >> 21}.{(version >> 10) & 2047}"
                           f" (kernelc reads version {MAJOR_VERSION} files)")
    offset, total = FILE_HEADER_SIZE, 0
    for _ in range(grid_count):
        if offset + FILE_METADATA_SIZE > len(data):
            raise RuntimeError("truncated NanoVDB file: grid metadata missing")
        total += _u("Q", data, offset + 8)[0]  # the grid's size in the file
        offset += FILE_METADATA_SIZE + _u("I", data, offset + 136)[0]  # + its name
    end = offset + total
    if end > len(data):
        raise RuntimeError(f"truncated NanoVDB file: {end} bytes expected, {len(data)} found")
    if codec == 0:
        return bytes(data[offset:end])
    if codec not in (1, 2):
        raise RuntimeError(f"unsupported NanoVDB codec {codec}")
    decompress = zlib.decompress if codec == 1 else _blosc("codec 2").decompress
    out = bytearray()
    while offset < end:
        (chunk,) = _u("Q", data, offset)
        offset += 8
        try:
            out += decompress(bytes(data[offset:offset + chunk]))
        except Exception as err:
            raise RuntimeError(f"corrupt compressed NanoVDB grid: {err}") from None
        offset += chunk
    return bytes(out)


def write_nvdb(buffer: np.ndarray, codec: str = "none") -> bytes:
    """A `.nvdb` file holding the grids of `buffer` (one or more grids, back to back)."""
    if codec not in CODECS:
        raise RuntimeError(f"unsupported codec requested: {codec!r} (use 'none', 'zip' or "
                           "'blosc')")
    compress = {"none": bytes, "zip": zlib.compress}.get(codec) or _blosc("blosc").compress
    raw = np.ascontiguousarray(buffer, dtype=np.uint8).tobytes()
    headers, payloads, offset = [], [], 0
    while offset < len(raw):
        h = read_header(raw, offset)
        payload = compress(raw[offset:offset + h.grid_size])
        name = h.name.encode("ascii") + b"\0"
        world = _u("6d", raw, offset + GRID_OFF_WORLD_BBOX)
        meta = struct.pack("<QQQQII6d6i3dI4I3IHHI", h.grid_size, len(payload), 0, h.voxel_count,
                           h.grid_type, h.grid_class, *world, *_index_bbox(raw, offset, h),
                           *h.voxel_size, len(name), *h.node_counts, 1, 0, 0, 0,
                           CODECS[codec], 0, VERSION)
        headers.append(meta + name)
        payloads.append(payload if codec == "none" else struct.pack("<Q", len(payload)) + payload)
        offset += h.grid_size
    head = struct.pack("<QIHH", MAGIC_NUMBER, VERSION, len(headers), CODECS[codec])
    return head + b"".join(headers) + b"".join(payloads)


def _index_bbox(raw: bytes, offset: int, h: GridHeader) -> tuple[int, ...]:
    return _u("6i", raw, offset + GRID_SIZE + h.node_offsets[3])


# ---- inspection ---------------------------------------------------------------------------


def leaf_origins(buf: np.ndarray, h: GridHeader) -> np.ndarray:
    """The (n, 3) int32 origins of the leaves, in the order they are stored."""
    lay = layout(h.grid_type)
    n = h.node_counts[0]
    if lay is None or n == 0:
        return np.zeros((0, 3), np.int32)
    start = GRID_SIZE + h.node_offsets[0]
    nodes = buf[start:start + n * lay.leaf_size].reshape(n, lay.leaf_size)
    return np.ascontiguousarray(nodes[:, :12]).view(np.int32) & np.int32(~7)


def leaf_offsets_to_coords() -> np.ndarray:
    """(512, 3) int32: the coordinate inside a leaf of each value slot (x slowest)."""
    n = np.arange(LEAF_TABLE, dtype=np.int32)
    return np.stack([n >> 6, (n >> 3) & 7, n & 7], axis=1)


def active_masks(buf: np.ndarray, h: GridHeader) -> np.ndarray:
    """(leaves, 512) bool: the active state of each leaf value slot."""
    lay = layout(h.grid_type)
    n = h.node_counts[0]
    start = GRID_SIZE + h.node_offsets[0]
    nodes = buf[start:start + n * lay.leaf_size].reshape(n, lay.leaf_size)
    words = np.ascontiguousarray(nodes[:, LEAF_VALUE_MASK:LEAF_VALUE_MASK + 64])
    return np.unpackbits(words, axis=1, bitorder="little").astype(bool)


def indexable_voxel_count(h: GridHeader) -> int:
    """What Warp calls a volume's voxel count: active voxels of an OnIndex grid, else every
    value slot of every leaf."""
    if INDEX_TYPES.get(h.grid_type) == 2:
        return h.voxel_count
    return h.node_counts[0] * LEAF_TABLE
