"""Gathers, scatters, random tiles, per-lane writes, tile stacks, `t[indices, :]` and the
block-wide BVH and mesh queries: one program under Warp 1.19 and under kernelc, compared
bit for bit (one lane per block on both)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import run_warp

PROGRAM = '''
N = 8


@wp.kernel
def gather_scatter(a: wp.array2d(dtype=float), idx: wp.array(dtype=int),
                   out: wp.array2d(dtype=float), acc: wp.array2d(dtype=float),
                   old: wp.array2d(dtype=float)):
    i = wp.tid()
    it = wp.tile_load(idx, shape=N)
    t = wp.tile_load_indexed(a, it, shape=(N, 4), offset=(0, i * 4), axis=0)
    wp.tile_store_indexed(out, it, t * 2.0, offset=(0, i * 4), axis=0)
    o = wp.tile_atomic_add_indexed(acc, it, t, offset=(0, i * 4), axis=0)
    wp.tile_store(old, o, offset=(0, i * 4))
    f = wp.tile_from_thread(shape=(2,), value=float(wp.block_dim()), thread_idx=0)
    wp.tile_store(out, wp.tile_reshape(f, shape=(1, 2)), offset=(N + 1, i * 4))


@wp.kernel
def random_tiles(out: wp.array2d(dtype=float), outi: wp.array2d(dtype=int),
                 s: wp.array2d(dtype=float), seed: int):
    i = wp.tid()
    rng = wp.rand_init(seed, i)
    a = wp.tile_randf(shape=(2, 3), rng=rng)
    b = wp.tile_randf((2, 3), rng, -2.0, 5.0)
    c = wp.tile_randi(shape=(2, 3), rng=rng, min=-7, max=100)
    d = wp.tile_randi((2, 3), rng)
    wp.tile_store(out, a + b, offset=(2 * i, 0))
    wp.tile_store(outi, c + d, offset=(2 * i, 0))
    t = wp.tile_zeros(shape=(2, 3), dtype=float)
    wp.tile_scatter_add(t, 1, 2, 4.0, True)
    wp.tile_scatter_add(t, 1, 2, 1.5, i == 1)
    wp.tile_scatter_masked(t, 0, 1, 9.0, i > 0)
    wp.tile_store(s, t, offset=(2 * i, 0))


CAP = wp.constant(8)


@wp.kernel
def compact(data: wp.array(dtype=int), out: wp.array(dtype=int), num: wp.array(dtype=int)):
    _i, lane = wp.tid()
    s = wp.tile_stack(capacity=CAP, dtype=int)
    for base in range(0, 10, wp.block_dim()):
        i = base + lane
        value = int(-1)
        keep = False
        if i < 10:
            value = data[i]
            keep = value > 5
        wp.tile_stack_push(s, value, keep)
    num[0] = wp.tile_stack_count(s)
    while wp.tile_stack_count(s) > 0:
        value, slot = wp.tile_stack_pop(s)
        if slot >= 0:
            out[slot] = value
    wp.tile_stack_clear(s)
    num[1] = wp.tile_stack_count(s)
    v, empty = wp.tile_stack_pop(s)
    num[2] = empty


@wp.kernel
def gather_tile(a: wp.array2d(dtype=float), idx: wp.array(dtype=int),
                rows: wp.array2d(dtype=float), cols: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(4, 4))
    i = wp.tile_load(idx, shape=3)
    wp.tile_store(rows, t[i, :])
    wp.tile_store(cols, t[:, i])


@wp.kernel
def bvh_boxes(bvh_id: wp.uint64, lo: wp.vec3, hi: wp.vec3, counts: wp.array(dtype=wp.int32)):
    query = wp.tile_bvh_query_aabb(bvh_id, lo, hi)
    while wp.tile_query_valid(query):
        bound = wp.untile(wp.tile_bvh_query_next(query))
        if bound >= 0:
            wp.atomic_add(counts, bound, 1)


@wp.kernel
def bvh_ray(bvh_id: wp.uint64, start: wp.vec3, d: wp.vec3, counts: wp.array(dtype=wp.int32)):
    query = wp.tile_bvh_query_ray(bvh_id, start, d)
    while wp.tile_query_valid(query):
        bound = wp.untile(wp.tile_bvh_query_next(query))
        if bound >= 0:
            wp.atomic_add(counts, bound, 1)


@wp.kernel
def mesh_faces(mesh_id: wp.uint64, lo: wp.vec3, hi: wp.vec3, counts: wp.array(dtype=wp.int32)):
    query = wp.tile_mesh_query_aabb(mesh_id, lo, hi)
    while wp.tile_query_valid(query):
        face = wp.untile(wp.tile_mesh_query_aabb_next(query))
        if face >= 0:
            wp.atomic_add(counts, face, 1)


@wp.kernel
def old_names(bvh_id: wp.uint64, mesh_id: wp.uint64, lo: wp.vec3, hi: wp.vec3,
              boxes: wp.array(dtype=wp.int32), faces: wp.array(dtype=wp.int32)):
    # Warp's names before 1.18 (deprecated aliases)
    query = wp.bvh_query_aabb_tiled(bvh_id, lo, hi)
    while wp.tile_query_valid(query):
        bound = wp.untile(wp.bvh_query_next_tiled(query))
        if bound >= 0:
            wp.atomic_add(boxes, bound, 1)
    mesh_query = wp.mesh_query_aabb_tiled(mesh_id, lo, hi)
    while wp.tile_query_valid(mesh_query):
        face = wp.untile(wp.mesh_query_aabb_next_tiled(mesh_query))
        if face >= 0:
            wp.atomic_add(faces, face, 1)


def run_queries(inputs):
    lo, hi = inputs["box_lo"], inputs["box_hi"]
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3), wp.array(hi, dtype=wp.vec3))
    boxes, ray = wp.zeros(len(lo), dtype=wp.int32), wp.zeros(len(lo), dtype=wp.int32)
    wp.launch_tiled(bvh_boxes, dim=3, inputs=[bvh.id, wp.vec3(2.0, 2.0, 2.0),
                                              wp.vec3(6.0, 6.0, 6.0), boxes],
                    block_dim=1, device="cpu")
    wp.launch_tiled(bvh_ray, dim=2, inputs=[bvh.id, wp.vec3(6.4, 3.1, -1.0),
                                            wp.vec3(0.02, 0.01, 1.0), ray],
                    block_dim=1, device="cpu")
    mesh = wp.Mesh(points=wp.array(inputs["points"], dtype=wp.vec3),
                   indices=wp.array(inputs["faces"], dtype=int))
    faces = wp.zeros(len(inputs["faces"]) // 3, dtype=wp.int32)
    wp.launch_tiled(mesh_faces, dim=1, inputs=[mesh.id, wp.vec3(1.0, 1.0, 1.0),
                                               wp.vec3(2.5, 2.5, 2.5), faces],
                    block_dim=1, device="cpu")
    old_boxes, old_faces = wp.zeros_like(boxes), wp.zeros_like(faces)
    wp.launch_tiled(old_names, dim=1, inputs=[bvh.id, mesh.id, wp.vec3(1.0, 1.0, 1.0),
                                              wp.vec3(6.0, 6.0, 6.0), old_boxes, old_faces],
                    block_dim=1, device="cpu")
    return {"boxes": boxes.numpy(), "ray": ray.numpy(), "faces": faces.numpy(),
            "old_boxes": old_boxes.numpy(), "old_faces": old_faces.numpy()}


def run_all(inputs):
    a = wp.array(inputs["a"], dtype=float)
    idx = wp.array(inputs["idx"], dtype=int)
    out = wp.full((11, 8), -5.0, dtype=float)
    acc = wp.array(inputs["acc"], dtype=float)
    old = wp.full((8, 8), 7.0, dtype=float)
    wp.launch_tiled(gather_scatter, dim=2, inputs=[a, idx, out, acc, old], block_dim=1,
                    device="cpu")
    r, ri, s = (wp.zeros((6, 3), dtype=float), wp.zeros((6, 3), dtype=int),
                wp.zeros((6, 3), dtype=float))
    wp.launch_tiled(random_tiles, dim=3, inputs=[r, ri, s, 42], block_dim=1, device="cpu")
    kept, num = wp.zeros(10, dtype=int), wp.zeros(3, dtype=int)
    # more values above 5 (9) than the stack holds (8): the last is dropped
    data = wp.array([1, 8, 3, 7, 12, 9, 6, 10, 11, 13], dtype=int)
    wp.launch_tiled(compact, dim=1, inputs=[data], outputs=[kept, num], block_dim=1,
                    device="cpu")
    rows, cols = wp.zeros((3, 4), dtype=float), wp.zeros((4, 3), dtype=float)
    picks = wp.array([2, 0, -1], dtype=int)
    wp.launch_tiled(gather_tile, dim=1, inputs=[a, picks, rows, cols], block_dim=1,
                    device="cpu")
    return {"out": out.numpy(), "acc": acc.numpy(), "old": old.numpy(), "rand": r.numpy(),
            "randi": ri.numpy(), "scatter": s.numpy(), "stack": kept.numpy(),
            "stack_counts": num.numpy(), "rows": rows.numpy(), "cols": cols.numpy(),
            **run_queries(inputs)}
'''


def test_indexed_random_and_scatter_forms_match_warp(tmp_path):
    rng = np.random.default_rng(5)
    inputs = {"a": rng.uniform(-2, 2, (10, 8)).astype(np.float32),
              # -1, 9 and 12 fall outside the 10 rows; 3 appears twice
              "idx": np.array([3, -1, 0, 9, 12, 3, 5, 7], dtype=np.int32),
              "acc": rng.uniform(-2, 2, (10, 8)).astype(np.float32)}
    box_lo = np.random.default_rng(0).uniform(0, 10, (50, 3)).astype(np.float32)
    inputs.update(box_lo=box_lo, box_hi=box_lo + rng.uniform(0.1, 2, (50, 3)).astype(np.float32),
                  points=rng.uniform(0, 4, (30, 3)).astype(np.float32),
                  faces=rng.integers(0, 30, 120).astype(np.int32))
    theirs = run_warp(PROGRAM + "\nresults.update(run_all(inputs))\n", tmp_path, **inputs)
    path = tmp_path / "tile_indexed_kernelc.py"  # kernels are read back from their file
    path.write_text("import numpy as np\nimport kernelc as wp\n" + PROGRAM)
    spec = importlib.util.spec_from_file_location("tile_indexed_kernelc", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ours = module.run_all(inputs)
    assert set(ours) == set(theirs)
    for key, want in theirs.items():
        np.testing.assert_array_equal(ours[key], want, err_msg=key)
    assert ours["scatter"][3, 2] == 5.5 and ours["scatter"][2, 1] == 9.0  # block 1's writes
    assert list(ours["stack_counts"]) == [8, 0, -1]
    assert ours["boxes"].any() and ours["ray"].any() and ours["faces"].any()
    assert ours["old_boxes"].any() and ours["old_faces"].any()


@kc.kernel
def slice_range(a: kc.array2d(dtype=float), idx: kc.array(dtype=int),
                out: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=(4, 4))
    i = kc.tile_load(idx, shape=2)
    kc.tile_store(out, t[i, 1:3])


@kc.kernel
def two_index_tiles(a: kc.array2d(dtype=float), idx: kc.array(dtype=int),
                    out: kc.array2d(dtype=float)):
    t = kc.tile_load(a, shape=(4, 4))
    i = kc.tile_load(idx, shape=2)
    kc.tile_store(out, t[i, i])


@kc.kernel
def push_wrong_type(out: kc.array(dtype=int)):
    s = kc.tile_stack(capacity=4, dtype=int)
    out[0] = kc.tile_stack_push(s, kc.float32(1.5), True)


@pytest.mark.parametrize("kernel, message", [
    (slice_range, "requires ':' on all other axes"),
    (two_index_tiles, "exactly one 1-d integer index tile"),
    (push_wrong_type, r"tile_stack_push\(\): a float32 onto a stack of int32"),
])
def test_tile_indexing_and_stack_mistakes(kernel, message):
    with pytest.raises(kc.KernelError, match=message) as info:
        kc.compile(kernel)
    assert "test_tile_warp_indexed.py" in str(info.value) and "^" in str(info.value)
