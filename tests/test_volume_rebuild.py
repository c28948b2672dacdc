"""Rebuildable volumes (`rebuildable=True`, `Volume.rebuild`): topology rebuilt in place,
the id kept, capacities and status flags as in Warp. NumPy references (the voxels of the
points), outputs poisoned first."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import poisoned


@kc.kernel
def lookup(volume: kc.uint64, ijk: kc.array(dtype=kc.vec3i), out: kc.array(dtype=int)):
    i = kc.tid()
    out[i] = kc.volume_lookup_index(volume, ijk[i][0], ijk[i][1], ijk[i][2])


@kc.kernel
def read_values(volume: kc.uint64, ijk: kc.array(dtype=kc.vec3i), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = kc.volume_lookup_f(volume, ijk[i][0], ijk[i][1], ijk[i][2])


@kc.kernel
def write_values(volume: kc.uint64, ijk: kc.array(dtype=kc.vec3i), value: float):
    i = kc.tid()
    kc.volume_store_f(volume, ijk[i][0], ijk[i][1], ijk[i][2], value)


def voxels_of(points: np.ndarray, size: float) -> np.ndarray:
    return np.unique(np.floor(points / np.float32(size) + 0.5).astype(np.int32), axis=0)


def lookups(volume, queries: np.ndarray) -> np.ndarray:
    out = poisoned(len(queries), np.int32)
    kc.launch(lookup, len(queries), [volume.id, kc.array(queries, dtype=kc.vec3i), out])
    return out.numpy()


def check_topology(volume, voxels: np.ndarray, queries: np.ndarray) -> None:
    """The volume's active voxels are `voxels`: each has its index, every other query -1."""
    stats = volume.get_active_stats()
    assert stats.voxel_count == len(voxels)
    assert stats.leaf_node_count == len(np.unique(voxels >> 3, axis=0))
    assert stats.lower_node_count == len(np.unique(voxels >> 7, axis=0))
    assert stats.upper_node_count == len(np.unique(voxels >> 12, axis=0))
    listed = volume.get_voxels().numpy()[:len(voxels)]
    assert sorted(map(tuple, listed)) == sorted(map(tuple, voxels))
    np.testing.assert_array_equal(lookups(volume, listed), np.arange(len(voxels)))
    active = {tuple(v) for v in voxels}
    outside = np.array([q for q in queries if tuple(q) not in active], np.int32)
    assert (lookups(volume, outside) == -1).all()


def test_rebuild_by_voxels_in_place(rng):
    points = rng.uniform(-3, 3, (200, 3)).astype(np.float32)
    queries = rng.integers(-12, 12, (400, 3)).astype(np.int32)
    status = kc.array(np.array([77], np.uint32))
    volume = kc.Volume.allocate_by_voxels(kc.array(points, dtype=kc.vec3), voxel_size=0.5,
                                          rebuildable=True, max_active_voxels=300,
                                          max_leaf_nodes=40, status=status)
    assert volume.is_rebuildable and status.numpy()[0] == kc.Volume.REBUILD_SUCCESS
    assert volume.get_rebuild_info() == ("voxels", 300, 40, 40, 40)
    assert volume.get_voxel_count() == 300 and volume.get_tile_count() == 40  # capacities
    check_topology(volume, voxels_of(points, 0.5), queries)
    # A launch recorded before the rebuild reads the new topology: the id is the same.
    before = volume.id
    out = poisoned(len(queries), np.int32)
    recorded = kc.launch(lookup, len(queries), [volume.id, kc.array(queries, dtype=kc.vec3i),
                                                out], record_cmd=True)
    moved = (points[:120] + np.float32(1.3)).astype(np.float32)
    keep = (np.arange(120) % 3 != 0).astype(np.int32)
    returned = volume.rebuild(kc.array(moved, dtype=kc.vec3), status=status,
                              point_mask=kc.array(keep))
    assert returned is status and status.numpy()[0] == kc.Volume.REBUILD_SUCCESS
    assert volume.id == before
    voxels = voxels_of(moved[keep == 1], 0.5)
    check_topology(volume, voxels, queries)
    recorded.launch()
    np.testing.assert_array_equal(out.numpy(), lookups(volume, queries))
    # Index-space points are voxels as they are.
    ints = rng.integers(-6, 6, (60, 3)).astype(np.int32)
    volume.rebuild(kc.array(ints, dtype=kc.vec3i), status=status)
    assert status.numpy()[0] == kc.Volume.REBUILD_SUCCESS
    check_topology(volume, np.unique(ints, axis=0), queries)


def test_topologies_beyond_the_capacity_leave_the_volume_as_it_was(rng):
    points = rng.integers(0, 20, (30, 3)).astype(np.int32)  # one lower and upper node
    status = kc.zeros(1, dtype=kc.uint32)
    volume = kc.Volume.allocate_by_voxels(kc.array(points, dtype=kc.vec3i), voxel_size=1.0,
                                          max_active_voxels=40, max_leaf_nodes=30,
                                          max_lower_nodes=2, max_upper_nodes=1, status=status)
    assert status.numpy()[0] == kc.Volume.REBUILD_SUCCESS
    voxels = np.unique(points, axis=0)
    queries = rng.integers(-5, 25, (300, 3)).astype(np.int32)
    check_topology(volume, voxels, queries)
    # 40 voxels in 40 leaves and 5 lower nodes: too many leaves and lower nodes
    spread = np.arange(40, dtype=np.int32)[:, None] * np.int32([16, 0, 0])
    volume.rebuild(kc.array(spread, dtype=kc.vec3i), status=status)
    assert status.numpy()[0] == kc.Volume.REBUILD_LEAF_CAPACITY_EXCEEDED | \
        kc.Volume.REBUILD_LOWER_CAPACITY_EXCEEDED
    far = np.array([[0, 0, 0], [5000, 0, 0]], np.int32)  # two upper nodes
    volume.rebuild(kc.array(far, dtype=kc.vec3i), status=status)
    assert status.numpy()[0] == kc.Volume.REBUILD_UPPER_CAPACITY_EXCEEDED
    dense = np.stack(np.meshgrid(*[np.arange(4, dtype=np.int32)] * 3), -1).reshape(-1, 3)
    volume.rebuild(kc.array(dense, dtype=kc.vec3i), status=status)
    assert status.numpy()[0] == kc.Volume.REBUILD_VOXEL_CAPACITY_EXCEEDED
    check_topology(volume, voxels, queries)  # unchanged all along
    # Every point masked out: an empty grid (success); no points at all: invalid input.
    volume.rebuild(kc.array(points, dtype=kc.vec3i), status=status,
                   point_mask=kc.zeros(len(points), dtype=kc.int32))
    assert status.numpy()[0] == kc.Volume.REBUILD_SUCCESS
    assert volume.get_active_stats() == (0, 0, 0, 0)
    assert (lookups(volume, queries) == -1).all()
    volume.rebuild(kc.zeros((0, 3), dtype=kc.int32), status=status)
    assert status.numpy()[0] == kc.Volume.REBUILD_INVALID_INPUT
    # An allocation beyond its capacity gives an empty grid and the flags.
    small = kc.Volume.allocate_by_voxels(kc.array(points, dtype=kc.vec3i), voxel_size=1.0,
                                         max_active_voxels=5, status=status)
    assert status.numpy()[0] & kc.Volume.REBUILD_VOXEL_CAPACITY_EXCEEDED
    assert small.get_active_stats() == (0, 0, 0, 0)


def test_rebuild_by_tiles_resets_values_to_the_background(rng):
    tiles = rng.integers(-30, 30, (10, 3)).astype(np.int32)
    status = kc.zeros(1, dtype=kc.uint32)
    volume = kc.Volume.allocate_by_tiles(kc.array(tiles, dtype=kc.vec3i), voxel_size=1.0,
                                         bg_value=2.5, rebuildable=True, max_tiles=12,
                                         status=status)
    assert volume.get_rebuild_info() == ("tiles", 12 * 512, 12, 12, 12)
    origins = np.unique(tiles & ~7, axis=0)
    assert volume.get_active_stats().leaf_node_count == len(origins)
    kc.launch(write_values, len(origins), [volume.id, kc.array(origins, dtype=kc.vec3i), 7.0])
    values = poisoned(len(origins), np.float32)
    kc.launch(read_values, len(origins), [volume.id, kc.array(origins, dtype=kc.vec3i), values])
    np.testing.assert_array_equal(values.numpy(), 7.0)
    moved = tiles + np.int32(3)
    volume.rebuild(kc.array(moved, dtype=kc.vec3i), status=status)
    assert status.numpy()[0] == kc.Volume.REBUILD_SUCCESS
    new_origins = np.unique(moved & ~7, axis=0)
    got = volume.get_tiles().numpy()
    assert len(got) == 12 and (got[len(new_origins):] == 0).all()
    assert sorted(map(tuple, got[:len(new_origins)])) == sorted(map(tuple, new_origins))
    kc.launch(read_values, len(new_origins), [volume.id, kc.array(new_origins, dtype=kc.vec3i),
                                              values])
    np.testing.assert_array_equal(values.numpy()[:len(new_origins)], 2.5)


def test_rebuild_errors():
    points = kc.array(np.zeros((4, 3), np.int32), dtype=kc.vec3i)
    exact = kc.Volume.allocate_by_voxels(points, voxel_size=1.0)
    assert not exact.is_rebuildable and exact.get_rebuild_info() == (None, 0, 0, 0, 0)
    with pytest.raises(RuntimeError, match="not rebuildable"):
        exact.rebuild(points)
    with pytest.raises(ValueError, match="max_active_voxels must be positive"):
        kc.Volume.allocate_by_voxels(points, voxel_size=1.0, max_active_voxels=0)
    with pytest.raises(ValueError, match="uint32"):
        kc.Volume.allocate_by_tiles(points, voxel_size=1.0, max_tiles=2**32)
    with pytest.raises(RuntimeError, match="dtype uint32"):
        kc.Volume.allocate_by_voxels(points, voxel_size=1.0, rebuildable=True,
                                     status=kc.zeros(1, dtype=kc.int32))
    volume = kc.Volume.allocate_by_voxels(points, voxel_size=1.0, rebuildable=True)
    with pytest.raises(RuntimeError, match="voxel_points must be contiguous"):
        volume.rebuild(kc.zeros(3, dtype=kc.vec2))
    with pytest.raises(ValueError, match="must be positive, got 0"):  # Warp's too
        kc.Volume.allocate_by_voxels(kc.zeros((0, 3), dtype=kc.int32), voxel_size=1.0,
                                     rebuildable=True)


def test_rows_past_the_current_topology(rng):
    """A rebuildable volume reports its capacity's worth of tiles: rows past the current
    ones are zero in a new array and untouched in `out` (as in Warp)."""
    tiles = (rng.integers(-4, 4, (3, 3)) * 8).astype(np.int32)
    tiles = np.unique(tiles, axis=0)
    volume = kc.Volume.allocate_by_tiles(kc.array(tiles, dtype=kc.int32), voxel_size=1.0,
                                         bg_value=None, rebuildable=True, max_tiles=6)
    got = volume.get_tiles().numpy()
    assert got.shape == (6, 3) and not got[len(tiles):].any()
    out = kc.full((6, 3), -999, dtype=kc.int32)
    volume.get_tiles(out=out)
    rows = out.numpy()
    np.testing.assert_array_equal(np.unique(rows[:len(tiles)], axis=0), tiles)
    assert (rows[len(tiles):] == -999).all()
    with pytest.raises(RuntimeError, match="at least 6 rows"):
        volume.get_tiles(out=kc.zeros((5, 3), dtype=kc.int32))
