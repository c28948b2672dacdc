"""The root lookup of `kc.Volume`: the hash table of root tiles (`kernelc.spatial.volume_root`).

On the host: every key is found, keys that are not in the table are not, for empty, one-tile
and many-tile roots, repeated keys and keys that collide. In kernels: voxel indices of grids
whose tiles lie under many root keys, looked up through the hash table and through the linear
search (both agree with a Python dictionary of the tiles), samples through both paths agree
bit for bit, and the hashed lookup's CUDA-C runs in the host harness with the CPU's results.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import kernelc as kc
from kernelc.spatial import volume_root as vr
from tests import volume_kernels as vk


def _keys(coords: np.ndarray) -> np.ndarray:
    """NanoVDB's root keys of int32 coordinates."""
    u = (np.asarray(coords, np.int64) & 0xFFFFFFFF).astype(np.uint64) >> np.uint64(12)
    return u[:, 2] | (u[:, 1] << np.uint64(21)) | (u[:, 0] << np.uint64(42))


def _random_keys(rng, n: int) -> np.ndarray:
    return np.unique(_keys(rng.integers(-2**31, 2**31, (n, 3))))


@pytest.mark.parametrize("count", [0, 1, 2, 7, 100, 3000])
def test_every_key_found_and_misses_not(count):
    rng = np.random.default_rng(count)
    keys = _random_keys(rng, count)[:count]
    offsets = 64 + 32 * np.arange(len(keys), dtype=np.uint64)
    table = vr.build_root_table(keys, offsets)
    slots = len(table.slots)
    assert slots >= max(vr.MIN_SLOTS, 4 * len(keys)) and slots & (slots - 1) == 0
    assert table.shift == 64 - (slots.bit_length() - 1) and table.probes >= 1
    for key, offset in zip(keys.tolist(), offsets.tolist()):
        assert vr.find_tile(table, key) == offset
    present = set(keys.tolist())
    for key in _random_keys(rng, 500).tolist():
        if key not in present:
            assert vr.find_tile(table, key) == 0


def test_colliding_keys_probe_on():
    # keys that share one home slot: each is found, one slot further than the one before
    rng = np.random.default_rng(5)
    candidates = _random_keys(rng, 200000)
    shift = vr.build_root_table(candidates[:20], np.zeros(20, np.uint64)).shift
    homes = vr.home_slots(candidates, shift)
    same = candidates[homes == np.bincount(homes.astype(np.int64)).argmax()][:20]
    assert len(same) >= 5
    offsets = 100 + np.arange(len(same), dtype=np.uint64)
    table = vr.build_root_table(same, offsets)
    assert table.shift == shift and table.probes == len(same)
    for key, offset in zip(same.tolist(), offsets.tolist()):
        assert vr.find_tile(table, key) == offset
    missing = candidates[(homes == vr.home_slots(same[:1], shift)[0])][len(same):]
    for key in missing.tolist():
        assert vr.find_tile(table, key) == 0


def test_repeated_and_impossible_keys():
    keys = np.array([5, 9, 5, vr.EMPTY_KEY], np.uint64)
    table = vr.build_root_table(keys, np.array([10, 20, 30, 40], np.uint64))
    assert vr.find_tile(table, 5) == 10  # the first, as a linear search finds it
    assert vr.find_tile(table, 9) == 20
    assert int((table.slots[:, 0] != np.uint64(vr.EMPTY_KEY)).sum()) == 2


@kc.kernel
def lookup_indices(volume: kc.uint64, coords: kc.array(dtype=kc.vec3i), out: kc.array(dtype=int)):
    i = kc.tid()
    c = coords[i]
    out[i] = kc.volume_lookup_index(volume, c[0], c[1], c[2])


def _index_volume(origins: np.ndarray, linear_max: int, monkeypatch) -> kc.Volume:
    monkeypatch.setattr(vr, "LINEAR_MAX", linear_max)
    return kc.Volume.allocate_by_tiles(kc.array(origins, dtype=kc.vec3i), voxel_size=1.0,
                                       bg_value=None)


def _probe_coords(rng, origins: np.ndarray) -> np.ndarray:
    near = origins[rng.integers(0, len(origins), 3000)] + rng.integers(-2, 10, (3000, 3))
    far = rng.integers(-2**31, 2**31, (1000, 3))
    return np.concatenate([near, far]).astype(np.int32)


@pytest.mark.parametrize("roots", [1, 8, 9, 300])
@pytest.mark.parametrize("linear_max", [0, 10**9])  # hashed, searched linearly
def test_kernel_lookups_under_many_root_keys(roots, linear_max, monkeypatch):
    rng = np.random.default_rng(roots)
    cells = np.unique(rng.integers(-2**19, 2**19, (roots, 3)), axis=0) * 4096
    origins = np.concatenate([cells + rng.integers(0, 4096, cells.shape) // 8 * 8
                              for _ in range(3)]).astype(np.int32)
    volume = _index_volume(origins, linear_max, monkeypatch)
    header = vr.root_tiles(volume._host(), volume._header)
    assert len(header[0]) == len(cells)
    tiles = {tuple(t): n for n, t in enumerate(volume.get_tiles().numpy().tolist())}
    coords = _probe_coords(rng, origins)
    out = kc.zeros(len(coords), dtype=int)
    kc.launch(lookup_indices, len(coords), [volume.id, kc.array(coords, dtype=kc.vec3i), out])
    local = coords & 7
    expect = [tiles[tuple(o)] * 512 + (a << 6 | b << 3 | c) if tuple(o) in tiles else -1
              for o, (a, b, c) in zip((coords & ~7).tolist(), local.tolist())]
    np.testing.assert_array_equal(out.numpy(), expect)
    assert 500 < (out.numpy() >= 0).sum() < 3500


def test_hashed_and_linear_sampling_agree(monkeypatch):
    inputs = _root_inputs()
    results = []
    for linear_max in (0, 10**9):
        monkeypatch.setattr(vr, "LINEAR_MAX", linear_max)
        volume = _root_volume(inputs)
        results.append(vk.run_sample_float(volume, inputs["points"]))
    for name in results[0]:
        a, b = results[0][name], results[1][name]
        assert (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}")).all(), name


def _root_inputs() -> dict:
    rng = np.random.default_rng(11)
    cells = np.unique(rng.integers(-4, 4, (40, 3)), axis=0) * 4096
    origins = cells + rng.choice([0, 8, 4088], cells.shape)
    coords = np.unique(origins[rng.integers(0, len(origins), 600)]
                       + rng.integers(-4, 16, (600, 3)), axis=0)
    near = origins[rng.integers(0, len(origins), 2000)] + rng.uniform(-3, 12, (2000, 3))
    return {"origins": origins.astype(np.int32), "coords": coords.astype(np.int32),
            "values": rng.uniform(-1, 1, len(coords)).astype(np.float32),
            "points": np.concatenate([near, rng.uniform(-5e4, 5e4, (500, 3))]).astype(np.float32)}


def _root_volume(inputs: dict) -> kc.Volume:
    volume = kc.Volume.allocate_by_tiles(kc.array(inputs["origins"], dtype=kc.vec3i), 1.0,
                                         bg_value=-0.5)
    coords = inputs["coords"]
    kc.launch(vk.store_values, len(coords), [kc.uint64(volume.id),
                                            kc.array(coords, dtype=kc.vec3i),
                                            kc.array(inputs["values"], dtype=float)])
    return volume


def test_hashed_lookup_cuda_c_runs_in_host_harness(monkeypatch):
    import cuda_harness

    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    pytest.importorskip("cuda.bindings.nvrtc")
    from kernelc.codegen.cuda import CudaOptions, emit_cuda
    from kernelc.codegen.cuda_layout import ArrayArg

    monkeypatch.setattr(vr, "LINEAR_MAX", 0)
    inputs = _root_inputs()
    volume = _root_volume(inputs)
    p = inputs["points"]
    n = len(p)
    arrays = {"out": np.full((n, 5), np.nan, np.float32), "grads": np.zeros((n, 3), np.float32),
              "ints": np.zeros((n, 3), np.int32), "vecs": np.zeros((n, 3), np.float32)}
    kernel = vk.sample_float
    host = cuda_harness.build(emit_cuda(kernel.get_ir(kernel.param_types), CudaOptions()))
    args = [volume.id, ArrayArg(p.ctypes.data, (n,), (12,))]
    for name, a in arrays.items():
        vec = name in ("grads", "vecs")
        args.append(ArrayArg(a.ctypes.data, (n,) if vec else a.shape, (12,) if vec else a.strides))
    host.launch(n, args, workers=2)
    cpu = vk.run_sample_float(volume, p)
    for name, a in arrays.items():
        got, want = a.reshape(cpu[name].shape), cpu[name]
        assert (got.view(f"u{got.itemsize}") == want.view(f"u{want.itemsize}")).all(), name
