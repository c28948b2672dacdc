"""Rebuildable volumes: storage reserved once, topology rebuilt in place (Warp's
`Volume.allocate_by_voxels(..., rebuildable=True)` and `Volume.rebuild`).

A rebuildable volume reserves a grid buffer and a descriptor (`volume_root`) sized for its
capacities: most active voxels, leaves, lower and upper nodes. A rebuild builds the new
grid on the host, as an allocation does, and copies it into the reserved buffer and its
descriptor into the reserved descriptor, so `volume.id` and the buffer's address never
change and kernels (or structs, or captured graphs) holding them stay valid. A topology
that does not fit leaves the volume as it was and reports why in `status`, as Warp does.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from kernelc import types as T
from kernelc.spatial import nanovdb as nv
from kernelc.spatial import volume_root
from kernelc.spatial.voxel_sets import unique_rows

SUCCESS = 0
LEAF_CAPACITY_EXCEEDED = 1 << 0
LOWER_CAPACITY_EXCEEDED = 1 << 1
UPPER_CAPACITY_EXCEEDED = 1 << 2
VOXEL_CAPACITY_EXCEEDED = 1 << 3
INVALID_INPUT = 1 << 4


class Spec(NamedTuple):
    """What every grid of a volume shares: rebuilds keep it."""

    kind: str  # "voxels" (an OnIndex grid of active voxels) or "tiles"
    grid_type: int
    background: bytes
    matrix: np.ndarray
    translation: np.ndarray


def host_grid(spec: Spec, coords: np.ndarray) -> np.ndarray:
    """The grid (uint8 buffer) with the voxels (`"voxels"`, unique) or the tiles around
    the voxels (`"tiles"`) at `coords` ((n, 3) int32)."""
    from kernelc.spatial.nanovdb_build import build_grid

    # No coordinates give an empty grid (the background everywhere).
    if spec.kind == "voxels":
        origins, leaf_of = unique_rows(coords & np.int32(~7), return_inverse=True)
        active = np.zeros((len(origins), nv.LEAF_TABLE), bool)
        local = coords & 7
        active[leaf_of.reshape(-1), (local[:, 0] << 6) | (local[:, 1] << 3) | local[:, 2]] = True
        values = None
    else:
        origins = unique_rows(coords & np.int32(~7))
        active = np.ones((len(origins), nv.LEAF_TABLE), bool)
        values = None if spec.grid_type in nv.INDEX_TYPES else np.tile(
            np.frombuffer(spec.background, np.uint8), (len(origins), nv.LEAF_TABLE))
    return build_grid(origins, spec.grid_type, spec.background, values, active, spec.matrix,
                      spec.translation)


class Capacity(NamedTuple):
    """What a rebuildable volume reserves (Warp's `Volume.RebuildInfo` fields)."""

    kind: str  # "voxels" or "tiles": what later rebuilds take
    voxels: int
    leaves: int
    lowers: int
    uppers: int


def capacity_value(value: Any, default: int, name: str) -> int:
    """A capacity argument, or `default` when None; positive and within uint32, as Warp
    requires (TypeError / ValueError otherwise)."""
    value = default if value is None else value
    try:
        value = int(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an integer") from None
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    if value >= 2**32:
        raise ValueError(f"{name} must fit in uint32, got {value}")
    return value


def voxel_capacity(points: int, max_active_voxels: Any, max_leaf_nodes: Any,
                   max_lower_nodes: Any, max_upper_nodes: Any) -> Capacity:
    """Capacities of an `allocate_by_voxels` volume: each defaults to the one before it
    (the point count first), since any point may land in a node of its own."""
    voxels = capacity_value(max_active_voxels, points, "max_active_voxels")
    leaves = capacity_value(max_leaf_nodes, voxels, "max_leaf_nodes")
    lowers = capacity_value(max_lower_nodes, leaves, "max_lower_nodes")
    return Capacity("voxels", voxels, leaves, lowers,
                    capacity_value(max_upper_nodes, lowers, "max_upper_nodes"))


def tile_capacity(points: int, max_tiles: Any, max_lower_nodes: Any,
                  max_upper_nodes: Any) -> Capacity:
    """Capacities of an `allocate_by_tiles` volume (512 voxels per tile)."""
    leaves = capacity_value(max_tiles, points, "max_tiles")
    lowers = capacity_value(max_lower_nodes, leaves, "max_lower_nodes")
    return Capacity("tiles", leaves * nv.LEAF_TABLE, leaves, lowers,
                    capacity_value(max_upper_nodes, lowers, "max_upper_nodes"))


def grid_bytes(grid_type: int, leaves: int, lowers: int, uppers: int) -> int:
    """The size of a grid of `grid_type` with these node counts (as `build_grid` lays it)."""
    lay = nv.layout(grid_type)
    return (nv.GRID_SIZE + nv.TREE_SIZE + lay.root_size + uppers * lay.tile_size
            + uppers * lay.upper_size + lowers * lay.lower_size + leaves * lay.leaf_size)


def descriptor_bytes(uppers: int) -> int:
    """The size of a descriptor whose root has `uppers` tiles (its hash table grows with
    them, see `volume_root.build_root_table`)."""
    slots = max(volume_root.MIN_SLOTS, 1 << max(0, 4 * uppers - 1).bit_length())
    return volume_root.DESCRIPTOR_SIZE + 16 * slots


def overflow(counts: tuple[int, int, int, int], capacity: Capacity) -> int:
    """The status flags of a topology of (voxels, leaves, lowers, uppers) in `capacity`."""
    voxels, leaves, lowers, uppers = counts
    flags = SUCCESS
    if leaves > capacity.leaves:
        flags |= LEAF_CAPACITY_EXCEEDED
    if lowers > capacity.lowers:
        flags |= LOWER_CAPACITY_EXCEEDED
    if uppers > capacity.uppers:
        flags |= UPPER_CAPACITY_EXCEEDED
    if voxels > capacity.voxels:
        flags |= VOXEL_CAPACITY_EXCEEDED
    return flags


def topology_counts(coords: np.ndarray, kind: str) -> tuple[int, int, int, int]:
    """(voxels, leaves, lower nodes, upper nodes) of the grid the voxel coordinates
    `coords` ((n, 3) int32, unique for "voxels") would make."""
    leaves = len(unique_rows(coords >> 3))
    voxels = len(coords) if kind == "voxels" else leaves * nv.LEAF_TABLE
    return (voxels, leaves, len(unique_rows(coords >> 7)),
            len(unique_rows(coords >> 12)))


def checked_status(status: Any, device: Any) -> Any:
    """`status` if it is a uint32 array of at least one element on `device` (RuntimeError
    otherwise, as Warp); None stays None."""
    if status is None:
        return None
    if getattr(status, "dtype", None) != T.uint32 or getattr(status, "size", 0) < 1:
        raise RuntimeError("status must be a kernelc array with dtype uint32 and at least "
                           "one element")
    if status.device != device:
        raise RuntimeError(f"status must be on device {device}")
    return status


def report(status: Any, flags: int) -> Any:
    """Writes `flags` into `status[0]` (if there is a status array); returns `status`."""
    if status is not None:
        status.flatten()[:1].assign(np.array([flags], np.uint32))
    return status
