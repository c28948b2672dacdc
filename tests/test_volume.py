"""kc.Volume (NanoVDB sparse volumes) and the `volume_*` kernel builtins.

Against Warp: the programs of `tests/volume_kernels.py` (rocks.nvdb, dense arrays, tiles of
all nine value types with stores, index grids, world-space allocation) run here and in one
Warp subprocess, and every result, grid buffers included, must agree bit for bit; so must
Warp's example_nvdb after a few frames. Against NumPy: trilinear sampling and gradients,
nearest voxels, lookups, the background outside active voxels, transforms, stores, voxel
indices, file round trips. Then host-side and in-kernel errors (with their positions), and
the kernels' CUDA-C, compiled by NVRTC and run through the host harness.
"""

from __future__ import annotations

import gc
import importlib.util
import inspect
import shutil
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

import kernelc as kc
from tests import volume_kernels as vk
from tests.conftest import run_warp

ROOT = Path(__file__).resolve().parents[1]


def _rocks_path() -> Path | None:
    spec = importlib.util.find_spec("warp")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "examples/assets/rocks.nvdb"
    return path if path.is_file() else None


def make_inputs(with_rocks: bool = True) -> dict[str, np.ndarray]:
    """Random inputs of the programs, with exact voxel and halfway points mixed in."""
    rng = np.random.default_rng(20261101)
    inputs = {}
    rocks = _rocks_path() if with_rocks else None
    if rocks is not None:
        inputs["rocks"] = np.frombuffer(rocks.read_bytes(), np.uint8)
        pts = rng.uniform([-100, -10, -82], [100, 62, 82], (4000, 3))
        pts[:200] = np.round(pts[:200])
        pts[200:400] = np.round(pts[200:400]) + 0.5
        inputs["rocks_points"] = pts.astype(np.float32)
    inputs["dense"] = rng.uniform(-1, 1, (13, 9, 17)).astype(np.float32)
    pts = rng.uniform(-2, 18, (3000, 3))
    pts[:300] = np.round(pts[:300] * 2) / 2
    inputs["dense_points"] = pts.astype(np.float32)
    inputs["dense_int"] = rng.integers(-50, 50, (5, 6, 7)).astype(np.int32)
    inputs["dense_vec"] = rng.uniform(-1, 1, (6, 5, 4, 3)).astype(np.float32)
    tiles = np.array([[0, 0, 0], [8, 0, 0], [-8, 5, 3], [4100, -9, 0], [0, 8, 8], [3, 3, 3]])
    inputs["tiles"] = tiles.astype(np.int32)
    origins = np.unique(tiles & ~7, axis=0)
    coords = origins[rng.integers(0, len(origins), 600)] + rng.integers(0, 8, (600, 3))
    coords = np.unique(np.concatenate([coords, rng.integers(-20, 20, (100, 3))]), axis=0)
    inputs["store_coords"] = coords.astype(np.int32)  # unique: no two threads store one voxel
    inputs["store_values"] = rng.uniform(0.5, 8.0, (len(coords), 4))
    centers = origins[rng.integers(0, len(origins), 2000)]
    inputs["tile_points"] = (centers + rng.uniform(-2, 10, (2000, 3))).astype(np.float32)
    voxels = rng.integers(-12, 12, (300, 3))
    voxels = np.concatenate([voxels, voxels[:50], [[5000, -3, 2]]])  # repeats, a far one
    inputs["voxels"] = voxels.astype(np.int32)
    near = voxels[rng.integers(0, len(voxels), 2000)] + rng.uniform(-1, 1.5, (2000, 3))
    inputs["voxel_points"] = near.astype(np.float32)
    inputs["world_points"] = rng.uniform(-6, 6, (300, 3)).astype(np.float32)
    c, s = np.cos(0.4), np.sin(0.4)
    rotation = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    inputs["transform"] = (rotation @ np.diag([0.3, 0.5, 0.7])).astype(np.float32)
    # tiles under 40 root keys, some at the edges of their 4096^3 regions
    cells = np.unique(rng.integers(-3, 3, (60, 3)), axis=0)[:40] * 4096
    roots = cells + rng.choice([0, 8, 2048, 4088], (len(cells), 3))
    inputs["root_tiles"] = np.concatenate([roots, roots[:10] + 8]).astype(np.int32)
    coords = roots[rng.integers(0, len(roots), 800)] + rng.integers(-4, 16, (800, 3))
    inputs["root_coords"] = np.unique(coords, axis=0).astype(np.int32)
    inputs["root_values"] = rng.uniform(-1, 1, len(inputs["root_coords"])).astype(np.float32)
    near = roots[rng.integers(0, len(roots), 3000)] + rng.uniform(-3, 12, (3000, 3))
    far = rng.uniform(-4 * 4096, 4 * 4096, (1000, 3))
    inputs["root_points"] = np.concatenate([near, far]).astype(np.float32)
    return inputs


@pytest.fixture(scope="module")
def inputs():
    return make_inputs()


@pytest.fixture(scope="module")
def ours(inputs):
    return vk.programs(inputs)


_WARP_DRIVER = f"""
import os
import sys
sys.path.insert(0, {str(ROOT)!r})
os.environ["KERNELC_VOLUME_MODULE"] = "warp"
wp.set_device("cpu")
from tests import volume_kernels as vk
for key, value in vk.programs(inputs).items():
    results["programs/" + key] = value
for key, value in vk.run_example("warp", {{folder!r}}, 3).items():
    results["example/" + key] = value
"""


@pytest.fixture(scope="module")
def warp_results(inputs, tmp_path_factory):
    """The programs and example_nvdb under Warp 1.19 (one subprocess)."""
    if _rocks_path() is None:
        pytest.skip("warp-lang with its example assets is not installed")
    folder = tmp_path_factory.mktemp("warp_volume")
    return run_warp(_WARP_DRIVER.format(folder=str(folder)), folder, **inputs)


def _same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "f":
        return a == b
    bits = f"u{a.dtype.itemsize}"
    return (a.view(bits) == b.view(bits)) | (np.isnan(a) & np.isnan(b))


GROUPS = ["rocks", "dense", "typed_", "suffixed", "on_index", "index", "world", "box", "roots"]  # not "grad"


@pytest.mark.parametrize("group", GROUPS)
def test_programs_match_warp_bit_for_bit(group, ours, warp_results):
    keys = [k for k in ours if k.split("/")[0] == group or
            (group.endswith("_") and k.startswith(group))]
    assert keys
    for key in keys:
        theirs = warp_results["programs/" + key]
        mine = ours[key]
        assert mine.shape == theirs.shape and mine.dtype == theirs.dtype, key
        same = _same_bits(mine, theirs)
        assert same.all(), f"{key}: {int((~same).sum())} of {same.size} differ, first at " \
                           f"{np.argwhere(~same)[0].tolist()}"


def test_gradients_match_warp(ours, warp_results):
    # Warp's adjoints are written by hand, kernelc's derived from the sampling code: the
    # same derivatives, rounded differently
    theirs = warp_results["programs/grad/points"]
    np.testing.assert_allclose(ours["grad/points"], theirs, rtol=1e-5,
                               atol=1e-6 * np.abs(theirs).max())


def test_example_nvdb_matches_warp(warp_results, tmp_path):
    got = vk.run_example("kernelc", str(tmp_path), 3)
    for key in ("positions", "velocities"):
        assert _same_bits(got[key], warp_results["example/" + key]).all(), key


# ---- against NumPy -------------------------------------------------------------------------


def _dense_value(dense, bg, ijk):
    ijk = np.asarray(ijk)
    inside = ((ijk >= 0) & (ijk < dense.shape)).all(axis=-1)
    clipped = np.clip(ijk, 0, np.array(dense.shape) - 1)
    return np.where(inside, dense[clipped[..., 0], clipped[..., 1], clipped[..., 2]], bg)


def _trilinear(dense, bg, p):
    """float64 trilinear interpolation and its gradient, the background outside."""
    p = p.astype(np.float64)
    base = np.floor(p)
    f = p - base
    value, grad = np.zeros(len(p)), np.zeros((len(p), 3))
    for c in range(8):
        d = np.array([(c >> 2) & 1, (c >> 1) & 1, c & 1])
        w3 = np.where(d == 1, f, 1 - f)
        v = _dense_value(dense, bg, base.astype(int) + d)
        value += w3.prod(axis=1) * v
        for a in range(3):
            others = np.delete(w3, a, axis=1).prod(axis=1)
            grad[:, a] += (2 * d[a] - 1) * others * v
    return value, grad


def test_dense_sampling_against_numpy(inputs, ours):
    dense, p = inputs["dense"], inputs["dense_points"]
    samples, grads = ours["dense/samples"], ours["dense/grads"]
    value, grad = _trilinear(dense, -3.0, p)
    np.testing.assert_allclose(samples[:, 0], value, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(samples[:, 2], value, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads, grad, rtol=1e-4, atol=1e-5)
    nearest = np.trunc(p.astype(np.float64) + np.copysign(0.5, p)).astype(int)  # half away
    np.testing.assert_array_equal(samples[:, 1], _dense_value(dense, -3.0, nearest))
    floor = np.floor(p).astype(int)
    np.testing.assert_array_equal(samples[:, 3], _dense_value(dense, -3.0, floor))
    np.testing.assert_array_equal(samples[:, 4], 0.0)  # neither CLOSEST nor LINEAR
    tiled = np.array([16, 16, 24])  # the tiles covering the 13 x 9 x 17 array
    outside = ~((floor >= 0) & (floor < tiled)).all(axis=1)
    assert outside.any() and (samples[outside, 3] == -3.0).all()  # background, no tile
    assert (ours["dense/ints"][:, 2] == 0).all() and (ours["dense/vecs"] == 0).all()


def test_dense_transforms_against_numpy(inputs, ours):
    p = inputs["dense_points"].astype(np.float64)
    sizes, shift = np.array([0.5, 0.25, 1.0]), np.array([1.0, -2.0, 0.25])
    out = ours["dense/transforms"].astype(np.float64)
    np.testing.assert_allclose(out[:, 0], p * sizes + shift, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out[:, 1], (p - shift) / sizes, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(out[:, 2], p * sizes, rtol=1e-6)
    np.testing.assert_allclose(out[:, 3], p / sizes, rtol=1e-6)
    np.testing.assert_allclose(ours["dense/transforms_d"][:, 0], p * 1.000001 * sizes + shift,
                               rtol=1e-12)


def test_round_trips_and_metadata(inputs, tmp_path):
    dense = inputs["dense"]
    volume = kc.Volume.load_from_numpy(dense, voxel_size=0.5, bg_value=-1.0)
    voxels = volume.get_voxels().numpy()
    assert volume.get_voxel_count() == len(voxels) == volume.get_tile_count() * 512
    assert volume.dtype == kc.float32 and not volume.is_index
    assert volume.get_voxel_size() == (0.5, 0.5, 0.5)
    info = volume.get_grid_info()
    assert (info.grid_index, info.grid_count, info.type_str) == (0, 1, "float")
    values = _lookup_all(volume, voxels)
    np.testing.assert_array_equal(values, _dense_value(dense, -1.0, voxels))
    for codec in ("none", "zip"):
        path = tmp_path / f"dense_{codec}.nvdb"
        volume.save_to_nvdb(str(path), codec=codec)
        with open(path, "rb") as f:
            again = kc.Volume.load_from_nvdb(f)
        np.testing.assert_array_equal(again.array().numpy(), volume.array().numpy())
    same = kc.Volume(volume.array())  # a copy of the buffer
    assert same.id != volume.id
    np.testing.assert_array_equal(_lookup_all(same, voxels), values)


@kc.kernel
def lookup_all(volume: kc.uint64, coords: kc.array(dtype=kc.vec3i), out: kc.array(dtype=float)):
    i = kc.tid()
    c = coords[i]
    out[i] = kc.volume_lookup_f(volume, c[0], c[1], c[2])


def _lookup_all(volume, coords):
    out = kc.full(len(coords), np.nan, dtype=float)
    kc.launch(lookup_all, len(coords), [volume.id, kc.array(coords, dtype=kc.vec3i), out])
    return out.numpy()


def test_rocks_file():
    path = _rocks_path()
    if path is None:
        pytest.skip("warp-lang's example assets are not installed")
    with open(path, "rb") as f:
        rocks = kc.Volume.load_from_nvdb(f)
    info = rocks.get_grid_info()
    assert (info.name, info.type_str, info.size_in_bytes) == ("surface", "float", 5636096)
    assert rocks.get_tile_count() == 1493 and rocks.get_voxel_count() == 1493 * 512
    assert rocks.get_active_stats() == (1493 * 512, 1493, 8, 8)
    assert rocks.get_voxel_size() == (np.float32(0.2),) * 3
    assert rocks.get_feature_array_count() == 0 and rocks.load_next_grid() is None
    tiles = rocks.get_tiles().numpy()
    assert (tiles % 8 == 0).all() and len(np.unique(tiles, axis=0)) == 1493


def test_stores_and_index_grids(rng):
    tiles = kc.array([[0, 0, 0], [16, 8, 0]], dtype=kc.vec3i)
    volume = kc.Volume.allocate_by_tiles(tiles, voxel_size=1.0, bg_value=2.5)
    coords = np.array([[1, 2, 3], [17, 9, 7], [40, 0, 0], [-1, 0, 0]], np.int32)
    kc.launch(vk.store_values, 4, [kc.uint64(volume.id), kc.array(coords, dtype=kc.vec3i),
                                   kc.array([1.0, 2.0, 3.0, 4.0], dtype=float)])
    np.testing.assert_array_equal(_lookup_all(volume, coords), [1.0, 2.0, 2.5, 2.5])
    other = kc.Volume.allocate_by_tiles(tiles, voxel_size=1.0, bg_value=7)  # int32: ignored
    kc.launch(vk.store_values, 1, [kc.uint64(other.id), kc.array(coords[:1], dtype=kc.vec3i),
                                   kc.array([9.0], dtype=float)])
    assert _lookup_all(other, coords[:1])[0] == 0.0  # lookup_f of an int32 grid: zero
    points = rng.integers(-20, 20, (200, 3)).astype(np.int32)
    index = kc.Volume.allocate_by_voxels(kc.array(points, dtype=kc.vec3i), voxel_size=1.0)
    voxels = index.get_voxels().numpy()
    assert index.is_index and index.dtype is None
    assert len(voxels) == index.get_voxel_count() == len(np.unique(points, axis=0))
    probe = np.concatenate([voxels, rng.integers(-25, 25, (300, 3)).astype(np.int32)])
    out = kc.zeros(len(probe), dtype=int)
    kc.launch(lookup_indices, len(probe), [index.id, kc.array(probe, dtype=kc.vec3i), out])
    got = out.numpy()
    np.testing.assert_array_equal(got[:len(voxels)], np.arange(len(voxels)))
    known = {tuple(v) for v in voxels}
    for c, i in zip(probe[len(voxels):], got[len(voxels):]):
        assert (i == -1) == (tuple(c) not in known) and (i < 0 or tuple(voxels[i]) == tuple(c))


def test_grid_sequences_and_blind_data(tmp_path):
    grids = [kc.Volume.load_from_numpy(np.full((8, 8, 8), v, np.float32), bg_value=0.0)
             for v in (1.0, 2.0)]
    raw = [g.array().numpy().copy() for g in grids]
    for index, r in enumerate(raw):  # two grids of one sequence, back to back
        struct.pack_into("<II", r, 24, index, 2)
    first = kc.Volume(kc.array(np.concatenate(raw), dtype=kc.uint8))
    second = first.load_next_grid()
    assert second.get_grid_info()[2:4] == (1, 2) and second.load_next_grid() is None
    coords = np.array([[3, 4, 5]], np.int32)
    assert _lookup_all(first, coords)[0] == 1.0 and _lookup_all(second, coords)[0] == 2.0
    first.save_to_nvdb(str(tmp_path / "two.nvdb"), codec="zip")
    again = kc.Volume.load_from_nvdb((tmp_path / "two.nvdb").read_bytes())
    assert _lookup_all(again.load_next_grid(), coords)[0] == 2.0
    with pytest.raises(RuntimeError, match="aliased"):
        second.save_to_nvdb(str(tmp_path / "no.nvdb"))
    # one blind-data array after the grid: its metadata, then 10 floats (padded to 32 bytes)
    grid, values = raw[0].copy(), np.arange(10, dtype=np.float32)
    size = len(grid)
    meta = bytearray(288)
    struct.pack_into("<qQIIII", meta, 0, 288, 10, 4, 0, 0, 1)
    meta[32:39] = b"density"
    blob = np.concatenate([grid, np.frombuffer(bytes(meta), np.uint8),
                           values.view(np.uint8), np.zeros(24, np.uint8)])
    struct.pack_into("<IIQ", blob, 24, 0, 1, len(blob))
    struct.pack_into("<qI", blob, 640, size, 1)
    volume = kc.Volume(kc.array(blob, dtype=kc.uint8))
    info = volume.get_feature_array_info(0)
    assert volume.get_feature_array_count() == 1
    assert (info.name, info.value_size, info.value_count, info.type_str) == ("density", 4, 10,
                                                                             "float")
    np.testing.assert_array_equal(volume.feature_array(0).numpy(), values)
    assert volume.feature_array(0, dtype=kc.uint8).shape == (40,)
    with pytest.raises(RuntimeError, match="Invalid feature array"):
        volume.get_feature_array_info(1)
    # A feature array must lie in its grid, and its name end in a NUL (checked on load).
    for offset, count, value_size in ((-(1 << 63), 1, 1), (-size - 1, 1, 1),
                                      (len(blob) - size, 1, 1), (288, 1 << 63, 3)):
        bad = blob.copy()
        struct.pack_into("<qQI", bad, size, offset, count, value_size)
        with pytest.raises(RuntimeError, match="feature array 0 lies outside the grid"):
            kc.Volume(kc.array(bad, dtype=kc.uint8))
    struct.pack_into("<qQI", bad, size, -size, 8, 1)  # in the grid, before its metadata
    features = kc.Volume(kc.array(bad, dtype=kc.uint8)).feature_array(0, dtype=kc.uint8)
    gc.collect()  # the volume is gone: its feature array keeps the buffer alive
    scratch = [kc.full(len(bad), 7, dtype=kc.uint8) for _ in range(4)]  # noqa: F841
    np.testing.assert_array_equal(features.numpy(), blob[:8])
    bad[size + 32:size + 32 + 256] = ord("A")
    with pytest.raises(RuntimeError, match="feature array 0 is not NUL-terminated"):
        kc.Volume(kc.array(bad, dtype=kc.uint8))


@kc.kernel
def lookup_indices(volume: kc.uint64, coords: kc.array(dtype=kc.vec3i),
                   out: kc.array(dtype=int)):
    i = kc.tid()
    c = coords[i]
    out[i] = kc.volume_lookup_index(volume, c[0], c[1], c[2])


def test_gradient_of_sampling_through_the_tape(inputs):
    dense = inputs["dense"]
    volume = kc.Volume.load_from_numpy(dense, voxel_size=1.0, bg_value=0.0)
    p = inputs["dense_points"][:500]
    points = kc.array(p, dtype=kc.vec3, requires_grad=True)
    out = kc.zeros(len(p), dtype=float, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch(sample_linear, len(p), [volume.id, points, out])
    tape.backward(grads={out: kc.ones(len(p), dtype=float)})
    np.testing.assert_allclose(points.grad.numpy(), _trilinear(dense, 0.0, p)[1], rtol=1e-4,
                               atol=1e-5)


@kc.kernel
def sample_linear(volume: kc.uint64, points: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = kc.volume_sample_f(volume, points[i], kc.Volume.LINEAR)


# ---- errors --------------------------------------------------------------------------------


def _grid_file(codec: int, payload: bytes) -> bytes:
    head = struct.pack("<QIHH", 0x304244566F6E614E, 32 << 21, 1, codec)
    meta = bytearray(176)
    struct.pack_into("<QQ", meta, 0, len(payload), len(payload))
    struct.pack_into("<I", meta, 136, 1)
    return head + bytes(meta) + b"\0" + payload


def test_bad_files_and_buffers():
    grid = kc.Volume.load_from_numpy(np.ones((8, 8, 8), np.float32)).array().numpy().copy()
    with pytest.raises(RuntimeError, match="signature"):
        kc.Volume.load_from_nvdb(b"not a NanoVDB file at all")
    with pytest.raises(RuntimeError, match="truncated"):
        kc.Volume.load_from_nvdb(_grid_file(0, grid.tobytes())[:-100])
    with pytest.raises(RuntimeError, match="corrupt compressed"):
        kc.Volume.load_from_nvdb(_grid_file(1, b"\x10" * 8 + b"garbage!"))
    packed = zlib.compress(grid.tobytes())
    zipped = _grid_file(1, struct.pack("<Q", len(packed)) + packed)
    zipped = zipped[:16] + struct.pack("<Q", len(packed) + 8) + zipped[24:]
    assert kc.Volume.load_from_nvdb(zipped).get_tile_count() == 1
    if importlib.util.find_spec("blosc") is None:
        with pytest.raises(RuntimeError, match="blosc"):
            kc.Volume.load_from_nvdb(_grid_file(2, b"\0" * 16))
    broken = grid.copy()
    lower_table = 672 + struct.unpack_from("<Q", grid, 672 + 8)[0] + 1088
    broken[lower_table:lower_table + 8] = np.frombuffer(struct.pack("<q", 1 << 40), np.uint8)
    with pytest.raises(RuntimeError, match="Invalid NanoVDB grid structure"):
        kc.Volume(kc.array(broken, dtype=kc.uint8))
    with pytest.raises(RuntimeError, match="too small"):
        kc.Volume(kc.zeros(64, dtype=kc.uint8))
    unnamed = grid.copy()
    unnamed[40:40 + 256] = ord("A")  # the grid name, without its NUL
    with pytest.raises(RuntimeError, match="grid name is not NUL-terminated"):
        kc.Volume(kc.array(unnamed, dtype=kc.uint8))
    # One byte more than a multiple of 32: fine for one grid given directly (as in Warp),
    # not in a file, whose next grid would be misaligned.
    odd = np.append(grid, np.uint8(0))
    odd[32:40] = np.frombuffer(struct.pack("<Q", len(odd)), np.uint8)  # the grid size
    assert kc.Volume(kc.array(odd, dtype=kc.uint8)).get_tile_count() == 1
    with pytest.raises(RuntimeError, match="not a multiple of 32"):
        kc.Volume.load_from_nvdb(_grid_file(0, odd.tobytes()))


def test_allocation_errors():
    tiles = kc.array([[0, 0, 0]], dtype=kc.vec3i)
    with pytest.raises(TypeError, match="Unsupported bg_value type"):
        kc.Volume.allocate_by_tiles(tiles, voxel_size=1.0, bg_value=True)
    with pytest.raises(ValueError, match="finite and positive"):
        kc.Volume.allocate_by_tiles(tiles, voxel_size=-1.0)
    with pytest.raises(ValueError, match="Only one of"):
        kc.Volume.allocate_by_tiles(tiles, voxel_size=1.0, transform=np.eye(3))
    with pytest.raises(RuntimeError, match="tile_points must be contiguous"):
        kc.Volume.allocate_by_tiles(kc.zeros(3, dtype=kc.vec2), voxel_size=1.0)
    with pytest.raises(ValueError, match="shape"):
        kc.Volume.load_from_numpy(np.zeros((4, 4)))
    with pytest.raises(RuntimeError, match="inside a kernel"):
        kc.volume_sample_f(0, kc.vec3(), 0)
    # no points at all is an error; points all masked out give an empty grid (as in Warp)
    with pytest.raises(RuntimeError, match="no voxel_points to allocate"):
        kc.Volume.allocate_by_voxels(kc.zeros((0, 3), dtype=kc.int32), voxel_size=1.0)
    empty = kc.Volume.allocate_by_voxels(kc.array([[0, 0, 0], [3, 1, 2]], dtype=kc.int32),
                                         voxel_size=1.0, point_mask=kc.zeros(2, dtype=kc.int32))
    assert empty.get_voxel_count() == 0 and empty.get_voxels().numpy().shape == (0, 3)


@kc.kernel
def bad_dtype(volume: kc.uint64, p: kc.vec3):
    kc.volume_sample(volume, p, kc.Volume.LINEAR, dtype=kc.vec2)  # error: kc.vec2


@kc.kernel
def bad_count(volume: kc.uint64, p: kc.vec3):
    kc.volume_sample_f(volume, p)  # error: kc


@kc.kernel
def bad_id(volume: float, p: kc.vec3):
    kc.volume_lookup_f(volume, 1, 2, 3)  # error: volume


@kc.kernel
def bad_uvw(volume: kc.uint64, p: kc.vec3d):
    kc.volume_sample_f(volume, p, kc.Volume.LINEAR)  # error: p


@kc.kernel
def bad_grad(volume: kc.uint64, p: kc.vec3):
    g = kc.vec3d()
    kc.volume_sample_grad_f(volume, p, kc.Volume.LINEAR, g)  # error: g


@kc.kernel
def bad_keyword(volume: kc.uint64, p: kc.vec3):
    kc.volume_sample_f(volume, p, mode=0)  # error: kc


@kc.kernel
def bad_store(volume: kc.uint64, p: kc.vec3):
    kc.volume_store(volume, 1, 2, 3, kc.vec2(1.0, 2.0))  # error: kc.vec2


@kc.kernel
def bad_background(volume: kc.uint64, p: kc.vec3, data: kc.array(dtype=float)):
    kc.volume_sample_index(volume, p, kc.Volume.LINEAR, data, kc.int64(0))  # error: kc.int64


@pytest.mark.parametrize("kernel, message", [
    (bad_dtype, "unsupported volume type vec2 for volume_sample()"),
    (bad_count, "volume_sample_f(id, uvw, sampling_mode) is missing argument 'sampling_mode'"),
    (bad_id, "volume_lookup_f() takes the volume as its uint64 id"),
    (bad_uvw, "'uvw' of volume_sample_f() must be a vec3 (float32)"),
    (bad_grad, "Incompatible gradient type, expected vec3f, got vec3d"),
    (bad_keyword, "volume_sample_f() got an unexpected keyword argument 'mode'"),
    (bad_store, "unsupported volume type vec2 for volume_store()"),
    (bad_background, "must have the same dtype"),
])
def test_kernel_errors_point_at_the_argument(kernel, message):
    lines, first = inspect.getsourcelines(kernel.func)
    line = next(first + k for k, text in enumerate(lines) if "# error:" in text)
    code, marker = lines[line - first].split("# error: ")
    column = code.rindex(marker.strip()) + 1
    args = [t(1) if isinstance(t, kc.types.ScalarType) else t() for t in kernel.param_types[:2]]
    args += [kc.zeros(1, dtype=float)] * (len(kernel.param_types) - 2)
    with pytest.raises(kc.KernelError) as err:
        kc.launch(kernel, 1, args)
    text = str(err.value)
    assert message in text
    assert f"test_volume.py:{line}:{column}" in text and "^" in text


# ---- CUDA-C --------------------------------------------------------------------------------


def _cuda_source(kernel, arg_types=None):
    from kernelc.codegen.cuda import CudaOptions, emit_cuda

    return emit_cuda(kernel.get_ir(arg_types or kernel.param_types), CudaOptions())


def _typed_args(dtype, grad_type):
    return (kc.uint64, kc.array(dtype=kc.vec3), kc.array(dtype=kc.vec3i),
            kc.array2d(dtype=dtype), kc.array(dtype=grad_type))


@pytest.mark.parametrize("kernel, arg_types", [
    (vk.sample_float, None), (vk.transforms, None), (vk.store_suffixed, None),
    (vk.read_suffixed, None), (vk.sample_index, None),
    (vk.read_values, _typed_args(kc.vec4d, vk.mat43d)),
    (vk.store_values, (kc.uint64, kc.array(dtype=kc.vec3i), kc.array(dtype=kc.vec3d))),
])
def test_kernels_compile_with_nvrtc(kernel, arg_types):
    pytest.importorskip("cuda.bindings.nvrtc")
    from kernelc.codegen import nvrtc

    source = _cuda_source(kernel, arg_types and tuple(kc.types.as_type(t) for t in arg_types))
    image, fmt = nvrtc.compile_cuda(source.text, 80, name=source.kernel)
    assert fmt == "cubin" and source.entry.encode() in image


def test_cuda_c_runs_in_host_harness(inputs):
    import cuda_harness

    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    from kernelc.codegen.cuda_layout import ArrayArg

    volume = kc.Volume.load_from_numpy(inputs["dense"], voxel_size=0.5, bg_value=-3.0)
    p = inputs["dense_points"]
    n = len(p)
    arrays = {"out": np.full((n, 5), np.nan, np.float32), "grads": np.zeros((n, 3), np.float32),
              "ints": np.zeros((n, 3), np.int32), "vecs": np.zeros((n, 3), np.float32)}
    host = cuda_harness.build(_cuda_source(vk.sample_float))
    args = [volume.id, ArrayArg(p.ctypes.data, (n,), (12,))]
    for name, a in arrays.items():
        shape = (n,) if name in ("grads", "vecs") else a.shape
        strides = (12,) if name in ("grads", "vecs") else a.strides
        args.append(ArrayArg(a.ctypes.data, shape, strides))
    host.launch(n, args, workers=2)
    cpu = vk.run_sample_float(volume, p)
    for name, a in arrays.items():
        assert _same_bits(a.reshape(cpu[name].shape), cpu[name]).all(), name


@pytest.mark.cuda
def test_gpu_volumes_match_the_cpu(inputs):
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    p = inputs["dense_points"]
    coords = inputs["store_coords"]
    results = []
    for device in ("cpu", "cuda:0"):
        volume = kc.Volume.load_from_numpy(inputs["dense"], voxel_size=0.5, bg_value=-3.0,
                                           device=device)
        kc.launch(vk.store_values, len(coords),
                  [kc.uint64(volume.id), kc.array(coords, dtype=kc.vec3i, device=device),
                   kc.array(np.arange(len(coords), dtype=np.float32), device=device)],
                  device=device)
        out = kc.full(len(p), np.nan, dtype=float, device=device)
        kc.launch(sample_linear, len(p), [volume.id, kc.array(p, dtype=kc.vec3, device=device),
                                          out], device=device)
        results.append((out.numpy(), volume.array().numpy(), volume.get_voxels().numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6, atol=1e-6)
    for a, b in zip(results[0][1:], results[1][1:]):
        np.testing.assert_array_equal(a, b)
