"""Grouped BVHs and meshes (`groups=`): each group's subtree, found with
`bvh_get_group_root` / `mesh_get_group_root`, holds exactly that group's items, and queries
started there see nothing else. Brute-force NumPy references, outputs poisoned first."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import poisoned
from tests.mesh_kernels import _corners, _ray_hits, _soup

CAPACITY = 64


@kc.kernel
def boxes_in_group(bvh: kc.uint64, groups: kc.array(dtype=int), lo: kc.vec3, hi: kc.vec3,
                   roots: kc.array(dtype=int), found: kc.array(dtype=int, ndim=2),
                   counts: kc.array(dtype=int)):
    i = kc.tid()
    root = kc.bvh_get_group_root(bvh, groups[i])
    roots[i] = root
    n = int(0)
    for item in kc.bvh_query_aabb(bvh, lo, hi, root):
        if n < CAPACITY:
            found[i, n] = item
        n += 1
    counts[i] = n


@kc.kernel
def rays_in_group(bvh: kc.uint64, groups: kc.array(dtype=int), start: kc.vec3,
                  dirs: kc.array(dtype=kc.vec3), counts: kc.array(dtype=int)):
    i = kc.tid()
    query = kc.bvh_query_ray(bvh, start, dirs[i], kc.bvh_get_group_root(bvh, groups[i]))
    item = int(0)
    n = int(0)
    while kc.bvh_query_next(query, item):
        n += 1
    counts[i] = n


@kc.kernel
def mesh_queries_in_group(mesh: kc.uint64, groups: kc.array(dtype=int),
                          points: kc.array(dtype=kc.vec3), dirs: kc.array(dtype=kc.vec3),
                          crossings: kc.array(dtype=int), hits: kc.array(dtype=int),
                          ts: kc.array(dtype=float)):
    i = kc.tid()
    root = kc.mesh_get_group_root(mesh, groups[i])
    crossings[i] = kc.mesh_query_ray_count_intersections(mesh, points[i], dirs[i], root)
    h = kc.mesh_query_ray(mesh, points[i], dirs[i], 1.0e6, root)
    if h.result:
        hits[i] = h.face
        ts[i] = h.t
    else:
        hits[i] = -1


def _boxes(rng, n):
    lowers = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    return lowers, lowers + rng.uniform(0.01, 0.2, (n, 3)).astype(np.float32)


@pytest.mark.parametrize("leaf_size", [1, 4])
@pytest.mark.parametrize("constructor", ["sah", "median"])
def test_each_group_has_its_own_subtree(rng, leaf_size, constructor):
    n = 300
    lowers, uppers = _boxes(rng, n)
    # Uneven groups, negative and sparse ids, one group of a single box.
    groups = rng.choice([-7, 0, 3, 4, 40], size=n, p=[0.1, 0.5, 0.2, 0.15, 0.05])
    groups[rng.integers(n)] = 11
    groups = groups.astype(np.int32)
    bvh = kc.Bvh(kc.array(lowers, dtype=kc.vec3), kc.array(uppers, dtype=kc.vec3),
                 constructor=constructor, groups=kc.array(groups), leaf_size=leaf_size)
    asked = np.array([-7, 0, 3, 4, 40, 11, 5, -1], np.int32)  # 5 and -1 have no boxes
    m = len(asked)
    roots, counts = poisoned(m, np.int32), poisoned(m, np.int32)
    found = poisoned((m, CAPACITY), np.int32)
    everything = (kc.vec3(-5.0, -5.0, -5.0), kc.vec3(5.0, 5.0, 5.0))
    kc.launch(boxes_in_group, m, [bvh.id, kc.array(asked), *everything, roots, found, counts])
    roots, counts, found = roots.numpy(), counts.numpy(), found.numpy()
    for k, group in enumerate(asked):
        members = np.flatnonzero(groups == group)
        if len(members) == 0:
            assert roots[k] == -1 and counts[k] == n  # the whole tree, as in Warp
            continue
        assert 0 <= roots[k] < bvh.num_nodes
        assert counts[k] == len(members)
        if counts[k] <= CAPACITY:
            assert sorted(found[k, :counts[k]]) == members.tolist()
    assert len(set(roots[:6])) == 6
    # Rays from the origin see only their group's boxes.
    dirs = rng.normal(size=(m, 3)).astype(np.float32)
    ray_counts = poisoned(m, np.int32)
    kc.launch(rays_in_group, m, [bvh.id, kc.array(asked), kc.vec3(0.0, 0.0, 0.0),
                                 kc.array(dirs, dtype=kc.vec3), ray_counts])
    for k, group in enumerate(asked):
        in_group = groups == group if (groups == group).any() else np.ones(n, bool)
        assert ray_counts.numpy()[k] == _ray_box_count(lowers[in_group], uppers[in_group],
                                                       dirs[k])


def _ray_box_count(lowers, uppers, d):
    with np.errstate(divide="ignore", invalid="ignore"):
        t0, t1 = lowers / d, uppers / d
    near = np.minimum(t0, t1).max(1)
    far = np.maximum(t0, t1).min(1)
    return int(((near <= far) & (far >= 0)).sum())


def test_rebuild_keeps_the_groups(rng):
    lowers, uppers = _boxes(rng, 40)
    groups = np.repeat(np.arange(4), 10).astype(np.int32)
    lo, hi = kc.array(lowers, dtype=kc.vec3), kc.array(uppers, dtype=kc.vec3)
    bvh = kc.Bvh(lo, hi, groups=kc.array(groups))
    lo.assign(lowers[::-1].copy())
    hi.assign(uppers[::-1].copy())
    bvh.rebuild()
    counts, roots = poisoned(4, np.int32), poisoned(4, np.int32)
    found = poisoned((4, CAPACITY), np.int32)
    kc.launch(boxes_in_group, 4, [bvh.id, kc.array(np.arange(4, dtype=np.int32)),
                                  kc.vec3(-5.0, -5.0, -5.0), kc.vec3(5.0, 5.0, 5.0), roots,
                                  found, counts])
    for g in range(4):
        assert sorted(found.numpy()[g, :10]) == list(range(10 * g, 10 * g + 10))


def test_mesh_groups_confine_ray_queries(rng):
    points, tris = _soup(rng, 400)
    face_groups = rng.integers(0, 3, len(tris)).astype(np.int32)
    mesh = kc.Mesh(kc.array(points, dtype=kc.vec3), kc.array(tris.ravel(), dtype=kc.int32),
                   groups=kc.array(face_groups))
    q = rng.uniform(-1.5, 1.5, (30, 3)).astype(np.float32)
    targets = points[tris[rng.integers(0, len(tris), 30)]].mean(1)  # aim at faces
    dirs = (targets - q).astype(np.float32)
    asked = rng.integers(0, 3, 30).astype(np.int32)
    crossings, hits = poisoned(30, np.int32), poisoned(30, np.int32)
    ts = poisoned(30, np.float32)
    kc.launch(mesh_queries_in_group, 30, [mesh.id, kc.array(asked), kc.array(q, dtype=kc.vec3),
                                          kc.array(dirs, dtype=kc.vec3), crossings, hits, ts])
    t_all = _ray_hits(q, dirs, *_corners(points, tris))[0]
    assert np.isfinite(t_all).sum() > 30  # the rays do cross faces of other groups
    for i, group in enumerate(asked):
        others = face_groups != group
        t = np.where(others, np.inf, t_all[i])
        assert crossings.numpy()[i] == np.isfinite(t).sum()
        if np.isfinite(t.min()):
            assert face_groups[hits.numpy()[i]] == group
            np.testing.assert_allclose(ts.numpy()[i], t.min(), rtol=1e-5)
        else:
            assert hits.numpy()[i] == -1


def test_group_queries_compile_with_nvrtc():
    pytest.importorskip("cuda.bindings.nvrtc")
    from kernelc.codegen import nvrtc
    from kernelc.codegen.cuda import CudaOptions, emit_cuda

    for kernel in (boxes_in_group, mesh_queries_in_group):
        source = emit_cuda(kernel.get_ir(kernel.param_types), CudaOptions())
        image, fmt = nvrtc.compile_cuda(source.text, 80, name=source.kernel)
        assert fmt == "cubin" and source.entry.encode() in image


def test_bad_groups_are_refused_as_in_warp():
    lowers = kc.zeros(4, dtype=kc.vec3)
    with pytest.raises(RuntimeError, match="int32"):
        kc.Bvh(lowers, lowers, groups=kc.zeros(4, dtype=kc.float32))
    with pytest.raises(RuntimeError, match="one entry per box"):
        kc.Bvh(lowers, lowers, groups=kc.zeros(3, dtype=kc.int32))
    points = kc.zeros(3, dtype=kc.vec3)
    with pytest.raises(RuntimeError, match="one entry per face"):
        kc.Mesh(points, kc.array([0, 1, 2], dtype=kc.int32), groups=kc.zeros(2, dtype=kc.int32))
    groups = kc.zeros(4, dtype=kc.int32)
    with pytest.raises(RuntimeError, match="Grouped BVHs are not supported"):
        kc.Bvh(lowers, lowers, constructor="cubql", groups=groups)
    bvh = kc.Bvh(lowers, lowers, groups=groups)
    with pytest.raises(RuntimeError, match="Grouped BVHs are not supported"):
        bvh.rebuild(constructor="cubql")
