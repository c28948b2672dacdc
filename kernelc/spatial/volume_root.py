"""A volume's descriptor, and the hash table of its root, built on the host.

Kernels receive a volume as the address of a descriptor (the `DESCRIPTOR_*` fields below:
the grid's address and the byte layout of its nodes for the grid's value type). The root
hash table follows the descriptor in the same allocation: NanoVDB's root is an unordered
table of tiles, one per 4096^3 region, keyed by the top bits of a coordinate, which NanoVDB
searches linearly; a lookup that misses every node (empty space) would read the whole
table. The hash table maps a root key to its tile in about one probe instead: open
addressing with linear probing, at most a quarter full, its slots `(key, byte offset of
the tile from the root)`, the home slot the top bits of `key * HASH_MULTIPLIER`
(Fibonacci hashing).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from kernelc.spatial import nanovdb as nv

# Descriptor fields (bytes); int32 unless noted.
DESCRIPTOR_GRID = 0  # uint64: the grid's address
DESCRIPTOR_ROOT = 8  # uint64: the root node's address
DESCRIPTOR_LEAVES = 16  # uint64: the first leaf's address
DESCRIPTOR_GRID_TYPE = 24  # NanoVDB grid type code
DESCRIPTOR_KIND = 28  # KIND_* below
DESCRIPTOR_TILE_COUNT = 32  # tiles of the root table
DESCRIPTOR_BACKGROUND = 36  # offset of the background value in the root
DESCRIPTOR_TILES = 40  # offset of the root's tile table
DESCRIPTOR_TILE_SIZE = 44
DESCRIPTOR_TILE_VALUE = 48  # offset of the value in a tile
DESCRIPTOR_UPPER_TABLE = 52
DESCRIPTOR_LOWER_TABLE = 56
DESCRIPTOR_LEAF_TABLE = 60
DESCRIPTOR_TABLE_STRIDE = 64
DESCRIPTOR_VALUE_SIZE = 68  # bytes per leaf value
DESCRIPTOR_LEAF_SIZE = 72
DESCRIPTOR_VOXEL_COUNT = 76  # indexable voxels (volume_voxel_count)
DESCRIPTOR_HASH_SHIFT = 80  # 64 - log2(slots of the root hash table)
DESCRIPTOR_HASH_MASK = 84  # slots - 1
DESCRIPTOR_HASH_PROBES = 88  # the longest probe sequence of a key in the table
DESCRIPTOR_SIZE = 96  # the root hash table follows: uint64 pairs (key, tile offset)

KIND_UNSUPPORTED = -1  # leaves without plain values: nothing can be read
KIND_VALUES = 0
KIND_INDEX = 1  # every voxel of a leaf has an index
KIND_ON_INDEX = 2  # active voxels have an index

HASH_MULTIPLIER = 0x9E3779B97F4A7C15  # 2^64 / the golden ratio, odd
EMPTY_KEY = 2**64 - 1  # no coordinate has this key (keys are 62 bits): a free slot
MIN_SLOTS = 16
# Roots of at most this many tiles are searched linearly, as NanoVDB does: all threads of
# a vector read the same tiles there (one load each), where hash probes are gathers.
LINEAR_MAX = 8


class RootTable(NamedTuple):
    """The root hash table: `slots` rows of (key, tile byte offset from the root)."""

    slots: np.ndarray  # (n, 2) uint64
    shift: int  # home slot = (key * HASH_MULTIPLIER mod 2^64) >> shift
    probes: int  # every key lies within this many slots from its home


def home_slots(keys: np.ndarray, shift: int) -> np.ndarray:
    """The home slot of each key (uint64) in a table of `2**(64 - shift)` slots."""
    with np.errstate(over="ignore"):
        return (np.asarray(keys, np.uint64) * np.uint64(HASH_MULTIPLIER)) >> np.uint64(shift)


def build_root_table(keys: np.ndarray, offsets: np.ndarray) -> RootTable:
    """The hash table of root tiles with `keys` at byte `offsets` from the root (in table
    order). A repeated key keeps its first tile, the one NanoVDB's linear search finds; a
    key no coordinate has (`EMPTY_KEY`) is left out, since no lookup could find it."""
    count = max(MIN_SLOTS, 1 << max(0, 4 * len(keys) - 1).bit_length())
    shift = 64 - (count.bit_length() - 1)
    mask = count - 1
    table_keys = [EMPTY_KEY] * count
    table_offsets = [0] * count
    probes = 1
    for key, offset, slot in zip(np.asarray(keys, np.uint64).tolist(),
                                 np.asarray(offsets, np.uint64).tolist(),
                                 home_slots(keys, shift).tolist()):
        if key == EMPTY_KEY:
            continue
        length = 1
        while table_keys[slot] not in (EMPTY_KEY, key):
            slot = (slot + 1) & mask
            length += 1
        if table_keys[slot] == EMPTY_KEY:
            table_keys[slot], table_offsets[slot] = key, offset
            probes = max(probes, length)
    slots = np.stack([np.array(table_keys, np.uint64), np.array(table_offsets, np.uint64)], 1)
    return RootTable(slots, shift, probes)


def find_tile(table: RootTable, key: int) -> int:
    """The byte offset of the tile with `key` (0: none), as kernels look it up."""
    mask = len(table.slots) - 1
    slot = int(home_slots(np.array([key], np.uint64), table.shift)[0])
    for _ in range(table.probes):
        entry = int(table.slots[slot, 0])
        if entry == key:
            return int(table.slots[slot, 1])
        if entry == EMPTY_KEY:
            return 0
        slot = (slot + 1) & mask
    return 0


def root_tiles(host: np.ndarray, header: nv.GridHeader) -> tuple[np.ndarray, np.ndarray]:
    """(keys, byte offsets from the root) of the root's tiles, in table order; none for
    grids whose tile layout kernelc does not know."""
    lay = nv.layout(header.grid_type)
    root = nv.GRID_SIZE + header.node_offsets[3]
    if lay is None:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint64)
    count = int(host[root + nv.ROOT_TILE_COUNT:root + nv.ROOT_TILE_COUNT + 4].view(np.uint32)[0])
    start = root + lay.root_size
    tiles = host[start:start + count * lay.tile_size].view(np.uint64)  # tile sizes are 32k
    keys = tiles.reshape(count, lay.tile_size // 8)[:, 0].copy()
    return keys, lay.root_size + np.arange(count, dtype=np.uint64) * np.uint64(lay.tile_size)


def descriptor(host: np.ndarray, header: nv.GridHeader, grid: int) -> np.ndarray:
    """The descriptor bytes (root hash table included) of the grid at device address `grid`,
    whose bytes on the host are `host`."""
    lay = nv.layout(header.grid_type)
    keys, offsets = root_tiles(host, header)
    table = build_root_table(keys, offsets)
    raw = np.zeros(DESCRIPTOR_SIZE + table.slots.nbytes, np.uint8)
    raw[DESCRIPTOR_SIZE:] = table.slots.reshape(-1).view(np.uint8)
    u64, i32 = raw[:DESCRIPTOR_SIZE].view(np.uint64), raw[:DESCRIPTOR_SIZE].view(np.int32)
    u64[DESCRIPTOR_GRID // 8] = grid
    u64[DESCRIPTOR_ROOT // 8] = grid + nv.GRID_SIZE + header.node_offsets[3]
    u64[DESCRIPTOR_LEAVES // 8] = grid + nv.GRID_SIZE + header.node_offsets[0]
    fields = {DESCRIPTOR_GRID_TYPE: header.grid_type,
              DESCRIPTOR_VOXEL_COUNT: min(nv.indexable_voxel_count(header), 2**31 - 1),
              DESCRIPTOR_HASH_SHIFT: table.shift, DESCRIPTOR_HASH_MASK: len(table.slots) - 1,
              DESCRIPTOR_HASH_PROBES: table.probes if len(keys) > LINEAR_MAX else 0,
              DESCRIPTOR_TILE_COUNT: len(keys)}
    if lay is None:  # no tiles: every walk ends at the root, and nothing is read there
        fields[DESCRIPTOR_KIND] = KIND_UNSUPPORTED
    else:
        fields.update({
            DESCRIPTOR_KIND: nv.INDEX_TYPES.get(header.grid_type, KIND_VALUES),
            DESCRIPTOR_BACKGROUND: lay.root_background, DESCRIPTOR_TILES: lay.root_size,
            DESCRIPTOR_TILE_SIZE: lay.tile_size, DESCRIPTOR_TILE_VALUE: lay.tile_value,
            DESCRIPTOR_UPPER_TABLE: lay.upper_table, DESCRIPTOR_LOWER_TABLE: lay.lower_table,
            DESCRIPTOR_LEAF_TABLE: lay.leaf_table, DESCRIPTOR_TABLE_STRIDE: lay.table_stride,
            DESCRIPTOR_VALUE_SIZE: lay.value_size, DESCRIPTOR_LEAF_SIZE: lay.leaf_size})
    for offset, value in fields.items():
        i32[offset // 4] = value
    return raw
