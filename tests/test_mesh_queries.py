"""In-kernel queries of kc.Mesh and kc.Bvh: closest points with every sign method, rays,
AABB / sphere / capsule / ray iterators and `for` loops over queries, against brute-force
NumPy references and against Warp. The shared kernels, meshes and references are in
`tests/mesh_kernels.py`; construction, refit, evaluation, CUDA-C and errors are in
`tests/test_mesh.py`.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from tests.conftest import poisoned, run_warp
from tests.mesh_kernels import (
    K,
    _box_overlap,
    _bumpy_sphere,
    _closest,
    _corners,
    _dot,
    _found_sets,
    _make_mesh,
    _ray_hits,
    _run_lists,
    _run_points,
    _run_rays,
    _soup,
    _winding,
    query_gradients,
    sphere_mesh,
)

# ---- kernels -------------------------------------------------------------------------------


@kc.kernel
def capsule_queries(bvh: kc.uint64, p0: kc.array(dtype=kc.vec3), p1: kc.array(dtype=kc.vec3),
                    radius: float, found: kc.array(dtype=int, ndim=2),
                    counts: kc.array(dtype=int)):
    i = kc.tid()
    root = kc.bvh_get_group_root(bvh, 1)  # no groups: -1, the whole tree
    c = int(0)
    q = kc.bvh_query_capsule(bvh, p0[i], p1[i] - p0[i], radius, root)
    item = int(0)
    while kc.bvh_query_next(q, item, 1.0):  # the segment p0 to p1
        if c < K:
            found[i, c] = item
        c += 1
    counts[i] = c


@kc.kernel
def loop_queries(mesh: kc.uint64, lowers: kc.array(dtype=kc.vec3),
                 uppers: kc.array(dtype=kc.vec3), counts: kc.array(dtype=int, ndim=2)):
    i = kc.tid()
    c = int(0)
    for face in kc.mesh_query_aabb(mesh, lowers[i], uppers[i]):
        if face % 2 == 1:
            continue  # `continue` advances the query
        c += 1
    counts[i, 0] = c
    q = kc.bvh_query_aabb(kc.mesh_get_bvh(mesh), lowers[i], uppers[i])
    c = int(0)
    for _item in q:
        c += 1
    counts[i, 1] = c
    c = int(0)
    for _item in q:  # the loop above exhausted the query
        c += 1
    counts[i, 2] = c


@pytest.fixture(scope="module")
def sphere():
    return sphere_mesh()


# ---- point queries -------------------------------------------------------------------------


def test_closest_points_and_signs_match_brute_force(rng, sphere):
    points, tris, mesh = sphere
    q = rng.uniform(-1.5, 1.5, (256, 3)).astype(np.float32)
    faces, bary, signs = _run_points(mesh, q, 1.0e6)
    a, b, c = _corners(points, tris)
    dist, best = _closest(q, a, b, c)
    d_min = dist.min(1)
    rows = np.arange(len(q))
    for method in (0, 1, 2, 3, 4, 6):
        f, (u, v) = faces[:, method], bary[:, method].T
        assert (f >= 0).all()
        assert np.allclose(dist[rows, f], d_min, atol=2e-6)  # a closest face (ties allowed)
        cp = u[:, None] * a[f] + v[:, None] * b[f] + (1 - u - v)[:, None] * c[f]
        np.testing.assert_allclose(cp, best[rows, f], atol=2e-5)
    unique = np.sort(dist, axis=1)[:, 1] > d_min + 1e-5
    assert unique.mean() > 0.3  # the rest lie closest to an edge or vertex
    np.testing.assert_array_equal(faces[unique, 0], dist.argmin(1)[unique])
    inside = _winding(q, a, b, c) > 0.5
    clear = np.sqrt(d_min) > 1e-3
    for method in (1, 2, 3, 4, 6):
        np.testing.assert_array_equal(signs[clear, method] < 0, inside[clear], err_msg=str(method))
    assert (signs[:, 0] == 0).all()
    # furthest point: a vertex at the largest distance
    f, (u, v) = faces[:, 5], bary[:, 5].T
    fp = u[:, None] * a[f] + v[:, None] * b[f] + (1 - u - v)[:, None] * c[f]
    far = np.linalg.norm(q[:, None] - points[None].astype(np.float64), axis=-1).max(1)
    np.testing.assert_allclose(np.linalg.norm(fp - q, axis=1), far, rtol=1e-5)


def test_max_dist_and_winding_fallback(rng, sphere):
    points, tris, mesh = sphere
    q = rng.uniform(-3, 3, (200, 3)).astype(np.float32)
    faces, bary, signs = _run_points(mesh, q, 0.5)
    d_min = np.sqrt(_closest(q, *_corners(points, tris))[0].min(1))
    near = d_min < 0.5 - 1e-5
    far = d_min > 0.5 + 1e-5
    assert near.any() and far.any()
    for method in (0, 1, 2, 3, 4, 6):
        assert (faces[near, method] >= 0).all()
        assert (faces[far, method] == np.iinfo(np.int32).min + 3).all()  # untouched
        assert np.isnan(bary[far, method]).all()
    plain = _make_mesh(points, tris)  # no winding support: the three-ray sign
    f2, _, s2 = _run_points(plain, q, 0.5)
    np.testing.assert_array_equal(s2[near, 3], s2[near, 1])


# ---- rays ----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["sphere", "soup"])
def test_rays_match_brute_force(rng, shape):
    points, tris = _bumpy_sphere() if shape == "sphere" else _soup(rng)
    mesh = _make_mesh(points, tris)
    starts = rng.uniform(-1.5, 1.5, (300, 3)).astype(np.float32)
    dirs = rng.normal(size=(300, 3)).astype(np.float32)
    dirs[:20] = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 20)]  # axis-aligned too
    max_t = 2.5
    ints, floats, normals = _run_rays(mesh, starts, dirs, max_t)
    a, b, c = _corners(points, tris)
    t_all, wb, wc = _ray_hits(starts, dirs, a, b, c)
    t_in = np.where(t_all < max_t, t_all, np.inf)
    hit = np.isfinite(t_in).any(1)
    assert hit.mean() > 0.2 and not hit.all()
    np.testing.assert_array_equal(ints[:, 2], hit)
    np.testing.assert_array_equal(ints[:, 3], np.isfinite(t_all).sum(1))
    assert (ints[~hit, :2] == np.iinfo(np.int32).min + 3).all() and np.isnan(floats[~hit]).all()
    rows = np.flatnonzero(hit)
    f = ints[rows, 0]
    np.testing.assert_array_equal(ints[rows, 1], f)
    np.testing.assert_allclose(floats[rows, 0], t_in[rows].min(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(floats[rows, 4], floats[rows, 0])
    nearest = np.sort(t_in[rows], axis=1)
    unique = nearest[:, 1] > nearest[:, 0] * (1 + 1e-5) + 1e-6
    np.testing.assert_array_equal(f[unique], t_in[rows].argmin(1)[unique])
    u, v = floats[rows, 1], floats[rows, 2]
    np.testing.assert_allclose(u, 1 - wb[rows, f] - wc[rows, f], atol=2e-5)
    np.testing.assert_allclose(v, wb[rows, f], atol=2e-5)
    n = np.cross(b[f] - a[f], c[f] - a[f])
    np.testing.assert_allclose(normals[rows], n / np.linalg.norm(n, axis=1)[:, None], atol=1e-5)
    front = _dot(n, dirs[rows].astype(np.float64)) < 0
    np.testing.assert_array_equal(floats[rows, 3] > 0, front)


# ---- AABB, sphere and BVH queries ----------------------------------------------------------


def test_box_sphere_and_bvh_queries_list_every_candidate_once(rng):
    points, tris = _soup(rng, 400)
    mesh = _make_mesh(points, tris)
    box_c = rng.uniform(-1, 1, (3000, 3)).astype(np.float32)
    box_lo = box_c - rng.uniform(0.005, 0.05, (3000, 3)).astype(np.float32)
    box_hi = box_c + rng.uniform(0.005, 0.05, (3000, 3)).astype(np.float32)
    bvh = kc.Bvh(kc.array(box_lo, dtype=kc.vec3), kc.array(box_hi, dtype=kc.vec3))
    qc = rng.uniform(-1.2, 1.2, (64, 3)).astype(np.float32)
    qlo, qhi = qc - 0.1, qc + 0.1
    found, counts = _run_lists(mesh, bvh, qlo, qhi, 0.15)
    a, b, c = _corners(points, tris)
    face_lo, face_hi = np.minimum(np.minimum(a, b), c), np.maximum(np.maximum(a, b), c)
    for kind, lo, hi in ((0, face_lo, face_hi), (2, box_lo, box_hi)):
        assert (counts[:, kind] == [len(s) for s in _found_sets(found, counts, kind)]).all()
        expected = _box_overlap(lo, hi, qlo, qhi)
        assert [set(np.flatnonzero(e)) for e in expected] == _found_sets(found, counts, kind)
    near = np.sqrt(_closest(qlo, a, b, c)[0])
    spheres = _found_sets(found, counts, 1)
    for i in range(len(qlo)):
        assert set(np.flatnonzero(near[i] < 0.15 - 1e-5)) <= spheres[i]
        assert spheres[i] <= set(np.flatnonzero(near[i] <= 0.15 + 1e-5))
    assert counts[:, 0].sum() > 30 and counts[:, 2].sum() > 30


def _ray_box_entry(s, d, lo, hi, pad):
    s, d = s[:, None].astype(np.float64), d[:, None].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (lo - pad - s) / d, (hi + pad - s) / d
    t_lo = np.nanmax(np.minimum(t1, t2), axis=-1)
    t_hi = np.nanmin(np.maximum(t1, t2), axis=-1)
    return np.where((t_hi >= 0) & (t_hi >= t_lo), t_lo, np.inf)


@pytest.mark.parametrize("max_dist", [1.0e30, 0.8])
def test_bvh_ray_query(rng, max_dist):
    centres = rng.uniform(-1, 1, (2000, 3)).astype(np.float32)
    lo, hi = centres - 0.03, centres + 0.03
    bvh = kc.Bvh(kc.array(lo, dtype=kc.vec3), kc.array(hi, dtype=kc.vec3), leaf_size=2)
    mesh = _make_mesh(*_soup(rng, 10))
    starts = rng.uniform(-1.5, 1.5, (64, 3)).astype(np.float32)
    dirs = rng.normal(size=(64, 3)).astype(np.float32)
    found, counts = _run_lists(mesh, bvh, starts, dirs, 0.1, max_dist, kinds=(3,))
    sure = _ray_box_entry(starts, dirs, lo, hi, -1e-4) < max_dist * 0.9999
    maybe = _ray_box_entry(starts, dirs, lo, hi, 1e-4) < max_dist * 1.0001
    for i, items in enumerate(_found_sets(found, counts, 3)):
        assert set(np.flatnonzero(sure[i])) <= items <= set(np.flatnonzero(maybe[i]))
    assert sure.sum() > 20


def test_bvh_capsule_query(rng):
    centres = rng.uniform(-1, 1, (2000, 3)).astype(np.float32)
    lo, hi = centres - 0.02, centres + 0.02
    bvh = kc.Bvh(kc.array(lo, dtype=kc.vec3), kc.array(hi, dtype=kc.vec3))
    p0 = rng.uniform(-1, 1, (64, 3)).astype(np.float32)
    p1 = (p0 + rng.normal(scale=0.3, size=(64, 3))).astype(np.float32)
    found, counts = poisoned((64, K), np.int32), poisoned(64, np.int32)
    kc.launch(capsule_queries, 64, [bvh.id, kc.array(p0, dtype=kc.vec3),
                                    kc.array(p1, dtype=kc.vec3), 0.05, found, counts])
    found, counts = found.numpy(), counts.numpy()
    assert (counts < K).all() and counts.sum() > 20
    # the segment (t in [0, 1]) against each box grown by the radius
    sure = _ray_box_entry(p0, p1 - p0, lo - 0.05, hi + 0.05, -1e-4)
    maybe = _ray_box_entry(p0, p1 - p0, lo - 0.05, hi + 0.05, 1e-4)
    for i in range(64):
        items = set(found[i, :counts[i]].tolist())
        assert set(np.flatnonzero(sure[i] <= 0.9999)) <= items
        assert items <= set(np.flatnonzero(maybe[i] <= 1.0001))


def test_for_loops_over_queries(rng):
    points, tris = _soup(rng, 400)
    mesh = _make_mesh(points, tris)
    qc = rng.uniform(-1.2, 1.2, (64, 3)).astype(np.float32)
    counts = poisoned((64, 3), np.int32)
    kc.launch(loop_queries, 64, [mesh.id, kc.array(qc - 0.1, dtype=kc.vec3),
                                 kc.array(qc + 0.1, dtype=kc.vec3), counts])
    a, b, c = _corners(points, tris)
    overlap = _box_overlap(np.minimum(np.minimum(a, b), c), np.maximum(np.maximum(a, b), c),
                           qc - 0.1, qc + 0.1)
    even = (np.arange(len(tris)) % 2 == 0)
    np.testing.assert_array_equal(counts.numpy(), np.stack(
        [(overlap & even).sum(1), overlap.sum(1), np.zeros(64, int)], 1))


# ---- against Warp --------------------------------------------------------------------------

_WARP_SCRIPT = """
@wp.kernel
def points_k(mesh: wp.uint64, pts: wp.array(dtype=wp.vec3), faces: wp.array(dtype=int, ndim=2),
             bary: wp.array(dtype=wp.vec2, ndim=2), signs: wp.array(dtype=float, ndim=2)):
    i = wp.tid()
    p = pts[i]
    for method in range(4):
        r = wp.mesh_query_point(mesh, p, 1.0e6)
        if method == 1:
            r = wp.mesh_query_point_sign_normal(mesh, p, 1.0e6)
        elif method == 2:
            r = wp.mesh_query_point_sign_winding_number(mesh, p, 1.0e6)
        elif method == 3:
            r = wp.mesh_query_furthest_point_no_sign(mesh, p, 0.0)
        faces[i, method] = r.face
        bary[i, method] = wp.vec2(r.u, r.v)
        signs[i, method] = r.sign

@wp.kernel
def rays_k(mesh: wp.uint64, starts: wp.array(dtype=wp.vec3), dirs: wp.array(dtype=wp.vec3),
           ints: wp.array(dtype=int, ndim=2), floats: wp.array(dtype=float, ndim=2),
           normals: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    h = wp.mesh_query_ray(mesh, starts[i], dirs[i], 2.5)
    ints[i, 0] = wp.where(h.result, 1, 0)
    ints[i, 1] = h.face
    ints[i, 2] = wp.mesh_query_ray_count_intersections(mesh, starts[i], dirs[i])
    floats[i, 0] = h.t
    floats[i, 1] = h.u
    floats[i, 2] = h.v
    floats[i, 3] = h.sign
    normals[i] = h.normal

@wp.kernel
def boxes_k(mesh: wp.uint64, bvh: wp.uint64, lowers: wp.array(dtype=wp.vec3),
            uppers: wp.array(dtype=wp.vec3), sums: wp.array(dtype=wp.int64, ndim=2)):
    i = wp.tid()
    q = wp.mesh_query_aabb(mesh, lowers[i], uppers[i])
    f = int(0)
    while wp.mesh_query_aabb_next(q, f):
        sums[i, 0] += wp.int64(1)
        sums[i, 1] += wp.int64(f) * wp.int64(f + 7)
    b = wp.bvh_query_aabb(bvh, lowers[i], uppers[i])
    while wp.bvh_query_next(b, f):
        sums[i, 2] += wp.int64(1)
        sums[i, 3] += wp.int64(f) * wp.int64(f + 7)

d = "cpu"
mesh = wp.Mesh(wp.array(inputs["points"], dtype=wp.vec3, device=d),
               wp.array(inputs["faces"].ravel(), dtype=wp.int32, device=d),
               support_winding_number=True)
n = len(inputs["q"])
faces = wp.zeros((n, 4), dtype=int, device=d)
bary = wp.zeros((n, 4), dtype=wp.vec2, device=d)
signs = wp.zeros((n, 4), dtype=float, device=d)
wp.launch(points_k, n, [mesh.id, wp.array(inputs["q"], dtype=wp.vec3, device=d), faces, bary,
                        signs], device=d)
ints = wp.zeros((n, 3), dtype=int, device=d)
floats = wp.zeros((n, 4), dtype=float, device=d)
normals = wp.zeros(n, dtype=wp.vec3, device=d)
wp.launch(rays_k, n, [mesh.id, wp.array(inputs["q"], dtype=wp.vec3, device=d),
                      wp.array(inputs["dirs"], dtype=wp.vec3, device=d), ints, floats, normals],
          device=d)
bvh = wp.Bvh(wp.array(inputs["box_lo"], dtype=wp.vec3, device=d),
             wp.array(inputs["box_hi"], dtype=wp.vec3, device=d))
sums = wp.zeros((n, 4), dtype=wp.int64, device=d)
wp.launch(boxes_k, n, [mesh.id, bvh.id, wp.array(inputs["q"] - 0.3, dtype=wp.vec3, device=d),
                       wp.array(inputs["q"] + 0.3, dtype=wp.vec3, device=d), sums], device=d)
results.update(faces=faces.numpy(), bary=bary.numpy(), signs=signs.numpy(), ints=ints.numpy(),
               floats=floats.numpy(), normals=normals.numpy(), sums=sums.numpy())
"""


def test_results_match_warp(rng, sphere, tmp_path):
    points, tris, mesh = sphere
    q = rng.uniform(-1.5, 1.5, (128, 3)).astype(np.float32)
    dirs = rng.normal(size=(128, 3)).astype(np.float32)
    box_c = rng.uniform(-1, 1, (500, 3)).astype(np.float32)
    box_lo, box_hi = box_c - np.float32(0.05), box_c + np.float32(0.05)
    ref = run_warp(_WARP_SCRIPT, tmp_path, points=points, faces=tris, q=q, dirs=dirs,
                   box_lo=box_lo, box_hi=box_hi)
    faces, bary, signs = _run_points(mesh, q, 1.0e6)
    a, b, c = _corners(points, tris)
    dist = _closest(q, a, b, c)[0]
    unique = np.sort(dist, axis=1)[:, 1] > dist.min(1) + 1e-5
    for ours, theirs in ((1, 0), (2, 1), (3, 2)):  # three rays, pseudo-normal, winding number
        np.testing.assert_array_equal(faces[unique, ours], ref["faces"][unique, theirs])
        np.testing.assert_allclose(bary[unique, ours], ref["bary"][unique, theirs], atol=1e-5)
        clear = np.sqrt(dist.min(1)) > 1e-3
        np.testing.assert_array_equal(signs[clear, ours], ref["signs"][clear, theirs])
    far = [u[:, None] * a[f] + v[:, None] * b[f] + (1 - u - v)[:, None] * c[f]
           for f, (u, v) in ((faces[:, 5], bary[:, 5].T), (ref["faces"][:, 3], ref["bary"][:, 3].T))]
    np.testing.assert_allclose(far[0], far[1], atol=1e-6)  # ties between faces at one vertex
    ints, floats, normals = _run_rays(mesh, q, dirs, 2.5)
    hit = ref["ints"][:, 0] == 1
    np.testing.assert_array_equal(ints[:, 2] >= 0, np.ones(128, bool))
    np.testing.assert_array_equal(ints[:, 0] >= 0, hit)
    np.testing.assert_array_equal(ints[:, 3], ref["ints"][:, 2])
    np.testing.assert_array_equal(ints[hit, 0], ref["ints"][hit, 1])
    np.testing.assert_allclose(floats[hit, :3], ref["floats"][hit, :3], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(floats[hit, 3], ref["floats"][hit, 3], rtol=1e-4)  # det, unscaled
    np.testing.assert_allclose(normals[hit], ref["normals"][hit], atol=1e-6)
    bvh = kc.Bvh(kc.array(box_lo, dtype=kc.vec3), kc.array(box_hi, dtype=kc.vec3))
    found, counts = _run_lists(mesh, bvh, q - np.float32(0.3), q + np.float32(0.3), 0.1,
                               kinds=(0, 2))
    for kind, column in ((0, 0), (2, 2)):
        sets = _found_sets(found, counts, kind)
        np.testing.assert_array_equal(counts[:, kind], ref["sums"][:, column])
        np.testing.assert_array_equal([sum(f * (f + 7) for f in s) for s in sets],
                                      ref["sums"][:, column + 1])


# ---- gradients -----------------------------------------------------------------------------


def _gradient_inputs(rng, n=64):
    """Points outside the bumpy sphere with rays aimed near its centre."""
    starts = rng.normal(size=(n, 3))
    starts = (2.5 * starts / np.linalg.norm(starts, axis=1, keepdims=True)).astype(np.float32)
    dirs = (-starts + 0.3 * rng.normal(size=(n, 3))).astype(np.float32)
    return starts, dirs


def test_query_gradients_match_finite_differences(rng, sphere):
    """Tape gradients of ray, closest-point and furthest-point results against central
    differences of the forward kernel (away from the rare kinks where the face changes)."""
    mesh = sphere[2]
    starts, dirs = _gradient_inputs(rng)
    n = len(starts)
    s = kc.array(starts, dtype=kc.vec3, requires_grad=True)
    d = kc.array(dirs, dtype=kc.vec3, requires_grad=True)
    out = kc.zeros(n, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(query_gradients, n, [mesh.id, s, d, out])
    tape.backward(grads={out: kc.ones(n, dtype=float)})
    got = np.concatenate([s.grad.numpy(), d.grad.numpy()], axis=1)

    def forward(st, di):
        o = kc.full(n, np.nan, dtype=float)
        kc.launch(query_gradients, n, [mesh.id, kc.array(st, dtype=kc.vec3),
                                                    kc.array(di, dtype=kc.vec3), o])
        return o.numpy().astype(np.float64)

    eps = 1e-3
    fd = np.zeros((n, 6))
    for k in range(6):
        step = np.zeros((n, 3), np.float32)
        step[:, k % 3] = eps
        plus = forward(starts + step, dirs) if k < 3 else forward(starts, dirs + step)
        minus = forward(starts - step, dirs) if k < 3 else forward(starts, dirs - step)
        fd[:, k] = (plus - minus) / (2 * eps)
    assert np.abs(got).max() > 0.1
    close = np.isclose(got, fd, rtol=2e-2, atol=2e-2).all(axis=1)
    assert close.mean() >= 0.95, np.abs(got - fd).max(axis=1)


def test_backward_pass_does_not_differentiate_the_traversals():
    """The BVH searches return only a face: the backward kernel replays each search once
    and differentiates the geometry of the face found, so no adjoint func holds a loop and
    no search runs a second time inside an adjoint."""
    from kernelc.autodiff.adjoint import adjoint_module
    from kernelc.ir import nodes as ir

    module = adjoint_module(query_gradients.get_ir())

    def calls(fn, prefix):
        return sum(isinstance(s, ir.Op) and s.opcode is ir.OpCode.CALL_FUNC
                   and s.attr.startswith(prefix) for s in ir.walk(fn.body))

    adjoints = [f for f in module.funcs if f.name.endswith("_adjoint")]
    assert any(f.name.startswith("hit_on_face") for f in adjoints)
    for f in adjoints:
        assert not [s for s in ir.walk(f.body) if isinstance(s, (ir.While, ir.For))], f.name
    for search in ("first_hit_face", "closest_face_index", "furthest_face_index"):
        assert calls(module.kernel, search) == 1, search
        assert not any(calls(f, search) for f in adjoints), search
