"""Kernels and programs of the volume tests (`tests/test_volume.py`), written as Warp programs.

The same source runs twice: here with `wp` = kernelc, and in a Warp subprocess that imports
this module with KERNELC_VOLUME_MODULE=warp. `programs(inputs)` builds the volumes (from
rocks.nvdb, dense arrays, tiles and voxels), runs every kernel on them, and returns named
result arrays that must agree bit for bit between the two.
"""

# No `from __future__ import annotations`: Warp reads kernel annotations as objects.

import importlib
import os
import typing

import numpy as np

wp = importlib.import_module(os.environ.get("KERNELC_VOLUME_MODULE", "kernelc"))
Any = typing.Any
mat43 = wp.types.matrix((4, 3), wp.float32)
mat43d = wp.types.matrix((4, 3), wp.float64)

# ---- kernels -------------------------------------------------------------------------------


@wp.kernel
def sample_float(volume: wp.uint64, points: wp.array(dtype=wp.vec3),
                 out: wp.array2d(dtype=float), grads: wp.array(dtype=wp.vec3),
                 ints: wp.array2d(dtype=int), vecs: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    p = points[i]
    out[i, 0] = wp.volume_sample_f(volume, p, wp.Volume.LINEAR)
    out[i, 1] = wp.volume_sample(volume, p, wp.Volume.CLOSEST, dtype=float)
    g = wp.vec3()
    out[i, 2] = wp.volume_sample_grad_f(volume, p, wp.Volume.LINEAR, g)
    grads[i] = g
    c = wp.vec3i(int(wp.floor(p[0])), int(wp.floor(p[1])), int(wp.floor(p[2])))
    out[i, 3] = wp.volume_lookup_f(volume, c[0], c[1], c[2])
    out[i, 4] = wp.volume_sample_f(volume, p, 2)  # neither mode: zero
    ints[i, 0] = wp.volume_lookup_index(volume, c[0], c[1], c[2])
    ints[i, 1] = wp.volume_voxel_count(volume)
    ints[i, 2] = wp.volume_lookup_i(volume, c[0], c[1], c[2])  # another type: zero
    vecs[i] = wp.volume_sample_v(volume, p, wp.Volume.LINEAR)  # another type: zero


@wp.kernel
def transforms(volume: wp.uint64, points: wp.array(dtype=wp.vec3),
               points_d: wp.array(dtype=wp.vec3d), out: wp.array2d(dtype=wp.vec3),
               out_d: wp.array2d(dtype=wp.vec3d)):
    i = wp.tid()
    p = points[i]
    q = points_d[i]
    out[i, 0] = wp.volume_index_to_world(volume, p)
    out[i, 1] = wp.volume_world_to_index(volume, p)
    out[i, 2] = wp.volume_index_to_world_dir(volume, p)
    out[i, 3] = wp.volume_world_to_index_dir(volume, p)
    out_d[i, 0] = wp.volume_index_to_world(volume, q)
    out_d[i, 1] = wp.volume_world_to_index(volume, q)
    out_d[i, 2] = wp.volume_index_to_world_dir(volume, q)
    out_d[i, 3] = wp.volume_world_to_index_dir(volume, q)


@wp.kernel
def store_values(volume: wp.uint64, coords: wp.array(dtype=wp.vec3i),
                 values: wp.array(dtype=Any)):
    t = wp.tid()
    c = coords[t]
    wp.volume_store(volume, c[0], c[1], c[2], values[t])


@wp.kernel
def read_values(volume: wp.uint64, points: wp.array(dtype=wp.vec3),
                coords: wp.array(dtype=wp.vec3i), out: wp.array2d(dtype=Any),
                grads: wp.array(dtype=Any)):
    i = wp.tid()
    p = points[i]
    c = coords[i]
    out[i, 0] = wp.volume_sample(volume, p, wp.Volume.LINEAR, dtype=out.dtype)
    out[i, 1] = wp.volume_sample(volume, p, wp.Volume.CLOSEST, dtype=out.dtype)
    out[i, 2] = wp.volume_lookup(volume, c[0], c[1], c[2], dtype=out.dtype)
    g = grads[i]
    out[i, 3] = wp.volume_sample_grad(volume, p, wp.Volume.LINEAR, g, dtype=out.dtype)
    grads[i] = g


@wp.kernel
def store_suffixed(volume_f: wp.uint64, volume_v: wp.uint64, volume_i: wp.uint64,
                   coords: wp.array(dtype=wp.vec3i)):
    t = wp.tid()
    c = coords[t]
    wp.volume_store_f(volume_f, c[0], c[1], c[2], float(t) * 0.5)
    wp.volume_store_v(volume_v, c[0], c[1], c[2], wp.vec3(float(t), 1.0, -2.0))
    wp.volume_store_i(volume_i, c[0], c[1], c[2], t * 3)


@wp.kernel
def read_suffixed(volume_f: wp.uint64, volume_v: wp.uint64, volume_i: wp.uint64,
                  points: wp.array(dtype=wp.vec3), coords: wp.array(dtype=wp.vec3i),
                  out: wp.array2d(dtype=float), vecs: wp.array2d(dtype=wp.vec3),
                  ints: wp.array2d(dtype=int)):
    i = wp.tid()
    p = points[i]
    c = coords[i]
    out[i, 0] = wp.volume_lookup_f(volume_f, c[0], c[1], c[2])
    out[i, 1] = wp.volume_sample_f(volume_f, p, wp.Volume.LINEAR)
    vecs[i, 0] = wp.volume_lookup_v(volume_v, c[0], c[1], c[2])
    vecs[i, 1] = wp.volume_sample_v(volume_v, p, wp.Volume.LINEAR)
    vecs[i, 2] = wp.volume_sample_v(volume_v, p, wp.Volume.CLOSEST)
    ints[i, 0] = wp.volume_lookup_i(volume_i, c[0], c[1], c[2])
    ints[i, 1] = wp.volume_sample_i(volume_i, p)


@wp.kernel
def sample_index(volume: wp.uint64, points: wp.array(dtype=wp.vec3),
                 data: wp.array(dtype=float), out: wp.array2d(dtype=float),
                 grads: wp.array(dtype=wp.vec3), ints: wp.array2d(dtype=int)):
    i = wp.tid()
    p = points[i]
    out[i, 0] = wp.volume_sample_index(volume, p, wp.Volume.LINEAR, data, -1.5)
    out[i, 1] = wp.volume_sample_index(volume, p, wp.Volume.CLOSEST, data, -1.5)
    g = wp.vec3()
    out[i, 2] = wp.volume_sample_grad_index(volume, p, wp.Volume.LINEAR, data, -1.5, g)
    grads[i] = g
    ints[i, 0] = wp.volume_lookup_index(volume, int(wp.floor(p[0])), int(wp.floor(p[1])),
                                        int(wp.floor(p[2])))
    ints[i, 1] = wp.volume_voxel_count(volume)


@wp.kernel
def sample_loss(volume: wp.uint64, points: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.volume_world_to_index(volume, points[i])
    g = wp.vec3()
    d = wp.volume_sample_grad_f(volume, q, wp.Volume.LINEAR, g)
    linear = wp.volume_sample_f(volume, q, wp.Volume.LINEAR)
    out[i] = 2.0 * linear + d * g[0] + wp.volume_sample(volume, q, wp.Volume.CLOSEST, dtype=float)


# ---- programs ------------------------------------------------------------------------------

# NumPy value types of the nine value types, and a background value of each.
TYPES = {
    "float32": (wp.float32, np.float32, 1, wp.vec3, lambda: wp.float32(-0.25)),
    "float64": (wp.float64, np.float64, 1, wp.vec3d, lambda: wp.float64(0.125)),
    "int32": (wp.int32, np.int32, 1, wp.vec3i, lambda: wp.int32(-7)),
    "int64": (wp.int64, np.int64, 1, wp.types.vector(3, wp.int64), lambda: wp.int64(11)),
    "uint32": (wp.uint32, np.uint32, 1, wp.types.vector(3, wp.uint32), lambda: wp.uint32(9)),
    "vec3f": (wp.vec3f, np.float32, 3, wp.mat33f, lambda: wp.vec3f(1.0, -2.0, 0.5)),
    "vec3d": (wp.vec3d, np.float64, 3, wp.mat33d, lambda: wp.vec3d(0.5, 0.25, -1.0)),
    "vec4f": (wp.vec4f, np.float32, 4, mat43, lambda: wp.vec4f(1.0, 2.0, 3.0, 4.0)),
    "vec4d": (wp.vec4d, np.float64, 4, mat43d, lambda: wp.vec4d(-1.0, 0.0, 1.0, 2.0)),
}


def _array(data, dtype):
    return wp.array(data, dtype=dtype, device="cpu")


def run_sample_float(volume, points) -> dict:
    """`sample_float` at `points`: its four outputs by name."""
    n = len(points)
    out = {"out": wp.zeros((n, 5), dtype=float, device="cpu"),
           "grads": wp.zeros(n, dtype=wp.vec3, device="cpu"),
           "ints": wp.zeros((n, 3), dtype=int, device="cpu"),
           "vecs": wp.zeros(n, dtype=wp.vec3, device="cpu")}
    wp.launch(sample_float, n, [volume.id, _array(points, wp.vec3), *out.values()],
              device="cpu")
    return {name: a.numpy() for name, a in out.items()}


def run_gradients(volume, points) -> np.ndarray:
    """The gradient of `sample_loss` w.r.t. the world-space points, through a tape."""
    n = len(points)
    p = wp.array(points, dtype=wp.vec3, device="cpu", requires_grad=True)
    out = wp.zeros(n, dtype=float, device="cpu", requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(sample_loss, n, [volume.id, p, out], device="cpu")
    tape.backward(grads={out: wp.ones(n, dtype=float, device="cpu")})
    return p.grad.numpy()


def _run_float(results, key, volume, points):
    arrays = run_sample_float(volume, points)
    for name, column in (("samples", "out"), ("grads", "grads"), ("ints", "ints"),
                         ("vecs", "vecs")):
        results[f"{key}/{name}"] = arrays[column]


def _run_transforms(results, key, volume, points):
    n = len(points)
    out = wp.zeros((n, 4), dtype=wp.vec3, device="cpu")
    out_d = wp.zeros((n, 4), dtype=wp.vec3d, device="cpu")
    wp.launch(transforms, n, [volume.id, _array(points, wp.vec3),
                              _array(points.astype(np.float64) * 1.000001, wp.vec3d), out,
                              out_d], device="cpu")
    results[f"{key}/transforms"] = out.numpy()
    results[f"{key}/transforms_d"] = out_d.numpy()


def _metadata(results, key, volume):
    info = volume.get_grid_info()
    results[f"{key}/tiles"] = volume.get_tiles().numpy()
    results[f"{key}/voxels"] = volume.get_voxels().numpy()
    results[f"{key}/counts"] = np.array([volume.get_voxel_count(), volume.get_tile_count(),
                                         info.grid_index, info.grid_count, info.size_in_bytes])
    results[f"{key}/transform"] = np.concatenate([np.asarray(info.translation).ravel(),
                                                  np.asarray(info.transform_matrix).ravel(),
                                                  volume.get_voxel_size()])
    results[f"{key}/type"] = np.array(info.type_str)


def _typed(results, name, inputs):
    dtype, np_type, comps, grad_type, bg = TYPES[name]
    tiles = inputs["tiles"]
    volume = wp.Volume.allocate_by_tiles(_array(tiles, wp.vec3i), voxel_size=0.5,
                                         bg_value=bg(), translation=(1.0, -2.0, 0.5),
                                         device="cpu")
    coords, raw = inputs["store_coords"], inputs["store_values"][:, :comps]
    values = raw.astype(np_type) if comps > 1 else raw[:, 0].astype(np_type)
    wp.launch(store_values, len(coords), [wp.uint64(volume.id), _array(coords, wp.vec3i),
                                          _array(values, dtype)], device="cpu")
    points = inputs["tile_points"]
    n = len(points)
    out = wp.zeros((n, 4), dtype=dtype, device="cpu")
    grads = wp.zeros(n, dtype=grad_type, device="cpu")
    wp.launch(read_values, n, [wp.uint64(volume.id), _array(points, wp.vec3),
                               _array(np.floor(points).astype(np.int32), wp.vec3i), out, grads],
              device="cpu")
    results[f"typed_{name}/values"] = out.numpy()
    results[f"typed_{name}/grads"] = grads.numpy()
    results[f"typed_{name}/grid"] = volume.array().numpy().copy()


def _suffixed(results, inputs):
    tiles = _array(inputs["tiles"], wp.vec3i)
    vf = wp.Volume.allocate_by_tiles(tiles, voxel_size=1.0, bg_value=0.75, device="cpu")
    vv = wp.Volume.allocate_by_tiles(tiles, voxel_size=1.0, bg_value=(0.0, 1.0, 2.0),
                                     device="cpu")
    vi = wp.Volume.allocate_by_tiles(tiles, voxel_size=1.0, bg_value=5, device="cpu")
    coords = inputs["store_coords"]
    ids = [vf.id, vv.id, vi.id]
    wp.launch(store_suffixed, len(coords), [*ids, _array(coords, wp.vec3i)], device="cpu")
    points = inputs["tile_points"]
    n = len(points)
    out = wp.zeros((n, 2), dtype=float, device="cpu")
    vecs = wp.zeros((n, 3), dtype=wp.vec3, device="cpu")
    ints = wp.zeros((n, 2), dtype=int, device="cpu")
    wp.launch(read_suffixed, n, [*ids, _array(points, wp.vec3),
                                 _array(np.floor(points).astype(np.int32), wp.vec3i), out, vecs,
                                 ints], device="cpu")
    for name, a in (("floats", out), ("vecs", vecs), ("ints", ints)):
        results[f"suffixed/{name}"] = a.numpy()


def _index(results, key, volume, points, seed):
    data = np.random.default_rng(seed).uniform(-1, 1, volume.get_voxel_count())
    n = len(points)
    out = wp.zeros((n, 3), dtype=float, device="cpu")
    grads = wp.zeros(n, dtype=wp.vec3, device="cpu")
    ints = wp.zeros((n, 2), dtype=int, device="cpu")
    wp.launch(sample_index, n, [volume.id, _array(points, wp.vec3),
                                _array(data.astype(np.float32), float), out, grads, ints],
              device="cpu")
    for name, a in (("samples", out), ("grads", grads), ("ints", ints)):
        results[f"{key}/{name}"] = a.numpy()
    results[f"{key}/grid"] = volume.array().numpy().copy()
    _metadata(results, key, volume)


def declare_overloads() -> None:
    """Every specialisation of the generic kernels, declared before the first launch (Warp
    then builds its module once)."""
    for dtype, _np_type, _comps, grad_type, _bg in TYPES.values():
        wp.overload(store_values, [wp.uint64, wp.array(dtype=wp.vec3i), wp.array(dtype=dtype)])
        wp.overload(read_values, [wp.uint64, wp.array(dtype=wp.vec3), wp.array(dtype=wp.vec3i),
                                  wp.array2d(dtype=dtype), wp.array(dtype=grad_type)])


def programs(inputs: dict) -> dict:
    """Every volume program on `inputs` (see `make_inputs` in tests/test_volume.py)."""
    declare_overloads()
    results = {}
    if "rocks" in inputs:  # the .nvdb file's bytes
        rocks = wp.Volume.load_from_nvdb(inputs["rocks"].tobytes(), device="cpu")
        _run_float(results, "rocks", rocks, inputs["rocks_points"])
        _run_transforms(results, "rocks", rocks, inputs["rocks_points"])
        _metadata(results, "rocks", rocks)
    dense = wp.Volume.load_from_numpy(inputs["dense"], min_world=(1.0, -2.0, 0.25),
                                      voxel_size=(0.5, 0.25, 1.0), bg_value=-3.0, device="cpu")
    _run_float(results, "dense", dense, inputs["dense_points"])
    _run_transforms(results, "dense", dense, inputs["dense_points"])
    _metadata(results, "dense", dense)
    results["dense/grid"] = dense.array().numpy().copy()
    for key, data, bg in (("dense_i", inputs["dense_int"], 4),
                          ("dense_v", inputs["dense_vec"], (1.0, 0.0, -1.0))):
        volume = wp.Volume.load_from_numpy(data, voxel_size=2.0, bg_value=bg, device="cpu")
        results[f"{key}/grid"] = volume.array().numpy().copy()
    for name in TYPES:
        _typed(results, name, inputs)
    _suffixed(results, inputs)
    voxels = wp.Volume.allocate_by_voxels(_array(inputs["voxels"], wp.vec3i), voxel_size=0.5,
                                          device="cpu")
    _index(results, "on_index", voxels, inputs["voxel_points"], 1)
    tiles = wp.Volume.allocate_by_tiles(_array(inputs["tiles"], wp.vec3i), voxel_size=1.0,
                                        bg_value=None, device="cpu")
    _index(results, "index", tiles, inputs["tile_points"], 2)
    world = wp.Volume.allocate_by_tiles(_array(inputs["world_points"], wp.vec3),
                                        transform=inputs["transform"],
                                        translation=(0.5, -1.0, 2.0), bg_value=1.5, device="cpu")
    results["world/tiles"] = world.get_tiles().numpy()
    _run_transforms(results, "world", world, inputs["world_points"])
    results["grad/points"] = run_gradients(dense, inputs["dense_points"][:1000])
    box = wp.Volume.allocate((-3.2, 0.1, 5.0), (4.4, 9.9, 7.0), voxel_size=0.4,
                             bg_value=wp.float64(2.0), translation=(0.1, 0.2, 0.3),
                             points_in_world_space=True, device="cpu")
    results["box/grid"] = box.array().numpy().copy()
    _roots(results, inputs)
    return results


def _roots(results, inputs):
    """Tiles under many root keys (hashed root lookups), sampled in and between them."""
    volume = wp.Volume.allocate_by_tiles(_array(inputs["root_tiles"], wp.vec3i), voxel_size=1.0,
                                         bg_value=-0.5, device="cpu")
    coords = inputs["root_coords"]
    wp.launch(store_values, len(coords), [wp.uint64(volume.id), _array(coords, wp.vec3i),
                                          _array(inputs["root_values"], float)], device="cpu")
    _run_float(results, "roots", volume, inputs["root_points"])
    results["roots/grid"] = volume.array().numpy().copy()


def run_example(module: str, folder: str, frames: int) -> dict:
    """Warp's example_nvdb (no stage) for `frames` frames with `module` as `wp`; returns the
    particles' positions and velocities."""
    import importlib.util
    import re
    import sys
    from pathlib import Path

    from tests.warp_examples import examples_dir

    text = (examples_dir() / "example_nvdb.py").read_text()
    if module != "warp":
        text = text.replace("import warp as wp\n", f"import {module} as wp\n")
        text = re.sub(r"^import warp\.render\n", "", text, flags=re.M)
    path = Path(folder) / f"{module}_example_nvdb.py"  # kernels are read from their file
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    example_module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = example_module
    spec.loader.exec_module(example_module)
    example = example_module.Example(stage_path=None)
    for _ in range(frames):
        example.step()
    return {"positions": example.positions.numpy(), "velocities": example.velocities.numpy()}
