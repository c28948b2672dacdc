"""Loading untrusted NanoVDB data: every grid of a file is checked before use.

Grids here are built by kc.Volume (float grids from NumPy) or by hand (FpN grids, whose
leaves vary in size), then corrupted one field at a time; each corruption must raise
RuntimeError("Invalid NanoVDB grid structure ...") and each sound variant must load.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

import kernelc as kc

GRID, TREE = 672, 64
BAD = "Invalid NanoVDB grid structure"
UPPER_SIZE, LOWER_SIZE = 270400, 33856  # the internal nodes of 4-byte and quantised types
UPPER_MASK, UPPER_TABLE, LOWER_MASK, LOWER_TABLE = 4128, 8256, 544, 1088


def _file(*grids: bytes) -> bytes:
    """An uncompressed .nvdb file holding `grids`."""
    head = struct.pack("<QIHH", 0x304244566F6E614E, 32 << 21, len(grids), 0)
    metas = b""
    for g in grids:
        meta = bytearray(176)
        struct.pack_into("<QQ", meta, 0, len(g), len(g))
        struct.pack_into("<I", meta, 136, 1)
        metas += bytes(meta) + b"\0"
    return head + metas + b"".join(bytes(g) for g in grids)


def _float_grid(seed: int = 0) -> np.ndarray:
    values = np.random.default_rng(seed).uniform(0.5, 2.0, (8, 8, 16)).astype(np.float32)
    return kc.Volume.load_from_numpy(values, bg_value=-1.0).array().numpy().copy()


def _fpn_grid(bit_widths: tuple[int, ...]) -> bytearray:
    """One FpN grid: a root tile -> one upper -> one lower -> a leaf per bit width."""
    root, upper = TREE, TREE + 64 + 32  # root (64 bytes) and its one tile
    lower = upper + UPPER_SIZE
    leaf = lower + LOWER_SIZE
    sizes = [96 + 64 * w for w in bit_widths]
    size = GRID + leaf + sum(sizes)
    g = bytearray(size)
    struct.pack_into("<QQIIIIQ", g, 0, 0x304244566F6E614E, 0, 32 << 21, 1 << 5, 0, 1, size)
    struct.pack_into("<IIqI", g, 632, 0, 16, size, 0)  # class, type FpN, no blind data
    struct.pack_into("<4Q3I", g, GRID, leaf, lower, upper, root, len(sizes), 1, 1)
    struct.pack_into("<I", g, GRID + root + 24, 1)  # one root tile, child: the upper node
    struct.pack_into("<q", g, GRID + root + 64 + 8, upper - root)
    struct.pack_into("<I", g, GRID + upper + UPPER_MASK, 1)
    struct.pack_into("<q", g, GRID + upper + UPPER_TABLE, lower - upper)
    struct.pack_into("<I", g, GRID + lower + LOWER_MASK, (1 << len(sizes)) - 1)
    at = leaf
    for k, (width, leaf_size) in enumerate(zip(bit_widths, sizes)):
        struct.pack_into("<q", g, GRID + lower + LOWER_TABLE + 8 * k, at - lower)
        struct.pack_into("<I", g, GRID + at + 12, (width.bit_length() - 1) << 29)
        at += leaf_size
    return g


def _tree(g) -> tuple[int, ...]:
    return struct.unpack_from("<4Q", g, GRID)  # leaf, lower, upper, root offsets


def test_fpn_grids_with_variable_leaves():
    volume = kc.Volume.load_from_nvdb(_file(_fpn_grid((1, 2, 16))))
    assert volume.get_grid_info().type_str == "FloatN"
    truncated = _fpn_grid((16,))
    size = GRID + _tree(truncated)[0] + 96  # the leaf's header, without its values
    struct.pack_into("<Qq", truncated, 32, size, 0)
    struct.pack_into("<q", truncated, 640, size)
    with pytest.raises(RuntimeError, match=BAD):
        kc.Volume.load_from_nvdb(_file(truncated[:size]))
    wide = _fpn_grid((1,))
    struct.pack_into("<I", wide, GRID + _tree(wide)[0] + 12, 5 << 29)  # 32-bit values
    with pytest.raises(RuntimeError, match=BAD):
        kc.Volume.load_from_nvdb(_file(wide))


@pytest.mark.parametrize("count_at", [40, 36, 32])  # upper, lower, leaf counts
def test_children_of_an_empty_level(count_at):
    g = _fpn_grid((1,))
    struct.pack_into("<I", g, GRID + count_at, 0)
    with pytest.raises(RuntimeError, match=BAD):
        kc.Volume.load_from_nvdb(_file(g))


def test_overlapping_levels():
    source = _fpn_grid((1,))
    leaf, lower, upper, root = _tree(source)
    tiles = source.copy()  # a second root tile runs into the upper node
    struct.pack_into("<I", tiles, GRID + root + 24, 2)
    struct.pack_into("<q", tiles, GRID + upper + 8, 0)
    lowers = source.copy()  # the lower node starts inside the upper one
    struct.pack_into("<Q", lowers, GRID + 8, lower - 32)
    struct.pack_into("<q", lowers, GRID + upper + UPPER_TABLE, lower - 32 - upper)
    lowers[GRID + lower - 32 + LOWER_MASK:GRID + lower - 32 + LOWER_TABLE] = bytes(544)
    metadata = source.copy()  # the blind metadata starts inside the leaf
    struct.pack_into("<q", metadata, 640, len(source) - 32)
    for g in (tiles, lowers, metadata):
        with pytest.raises(RuntimeError, match=BAD):
            kc.Volume.load_from_nvdb(_file(g))


def test_node_levels_must_be_aligned_and_after_the_tree_header():
    source = _float_grid()
    leaf = _tree(source)[0]
    for where, value in ((GRID, leaf + 8), (GRID, 0), (GRID + 24, 32)):
        g = source.copy()
        struct.pack_into("<Q", g, where, value)
        with pytest.raises(RuntimeError, match=BAD):
            kc.Volume.load_from_nvdb(_file(g))


def test_every_grid_of_a_file_is_checked():
    first, second = _float_grid(1), _float_grid(2)
    np.testing.assert_array_equal(
        kc.Volume.load_from_nvdb(_file(first, second)).array().numpy(),
        np.concatenate([first, second]))  # array(): the whole buffer, as loaded
    broken = second.copy()
    struct.pack_into("<Q", broken, GRID + 24, len(broken))  # root past the grid
    with pytest.raises(RuntimeError, match=BAD):
        kc.Volume.load_from_nvdb(_file(first, broken))
    depth_first = first.copy()
    depth_first[20] &= np.uint8(0xFF ^ (1 << 5))  # the breadth-first flag
    with pytest.raises(RuntimeError, match=BAD):  # malformed wins over unsupported
        kc.Volume.load_from_nvdb(_file(depth_first, broken))
    with pytest.raises(RuntimeError, match="Unsupported NanoVDB tree layout"):
        kc.Volume.load_from_nvdb(_file(depth_first, second))


def test_feature_metadata_is_a_snapshot():
    grid = _float_grid()
    size = len(grid)
    meta = bytearray(288)
    struct.pack_into("<qQIIII", meta, 0, 288, 8, 4, 0, 0, 1)
    meta[32:37] = b"speed"
    values = np.random.default_rng(3).uniform(1, 2, 8).astype(np.float32)
    blob = np.concatenate([grid, np.frombuffer(bytes(meta), np.uint8), values.view(np.uint8)])
    struct.pack_into("<IIQ", blob, 24, 0, 1, len(blob))
    struct.pack_into("<qI", blob, 640, size, 1)
    data = kc.array(blob, dtype=kc.uint8)
    volume = kc.Volume(data, copy=False)
    before = volume.get_feature_array_info(0)
    changed = blob.copy()
    struct.pack_into("<qQI", changed, size, -size - 1, 1, 1)
    changed[size + 32:size + 288] = ord("A")
    data.assign(changed)
    assert volume.get_feature_array_info(0) == before
    assert before.name == "speed" and (before.value_size, before.value_count) == (4, 8)
