"""kc.Mesh, kc.Bvh and their in-kernel queries, against brute-force NumPy and against Warp."""

from __future__ import annotations

import inspect
import shutil

import numpy as np
import pytest

import kernelc as kc
from kernelc.spatial.bvh import build_topology
from tests.conftest import poisoned, run_warp

K = 96  # capacity of the per-query result lists


# ---- kernels -------------------------------------------------------------------------------


@kc.kernel
def point_queries(mesh: kc.uint64, points: kc.array(dtype=kc.vec3), max_dist: float,
                  faces: kc.array(dtype=int, ndim=2), bary: kc.array(dtype=kc.vec2, ndim=2),
                  signs: kc.array(dtype=float, ndim=2)):
    i = kc.tid()
    p = points[i]
    for method in range(6):
        r = kc.mesh_query_point_no_sign(mesh, p, max_dist)
        if method == 1:
            r = kc.mesh_query_point(mesh, p, max_dist)
        elif method == 2:
            r = kc.mesh_query_point_sign_normal(mesh, p, max_dist)
        elif method == 3:
            r = kc.mesh_query_point_sign_winding_number(mesh, p, max_dist, accuracy=2.0)
        elif method == 4:
            r = kc.mesh_query_point_sign_parity(mesh, p, max_dist, 3)
        elif method == 5:
            r = kc.mesh_query_furthest_point_no_sign(mesh, p, max_dist * 0.0)
        if r.result:
            faces[i, method] = r.face
            bary[i, method] = kc.vec2(r.u, r.v)
            signs[i, method] = r.sign
    inside = float(0.0)
    face = int(0)
    u = float(0.0)
    v = float(0.0)
    if kc.mesh_query_point(mesh, p, max_dist, inside, face, u, v):  # Warp's older overload
        faces[i, 6] = face
        bary[i, 6] = kc.vec2(u, v)
        signs[i, 6] = inside


@kc.kernel
def ray_queries(mesh: kc.uint64, starts: kc.array(dtype=kc.vec3), dirs: kc.array(dtype=kc.vec3),
                max_t: float, ints: kc.array(dtype=int, ndim=2),
                floats: kc.array(dtype=float, ndim=2), normals: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    s = starts[i]
    d = dirs[i]
    h = kc.mesh_query_ray(mesh, s, d, max_t)
    if h.result:
        ints[i, 0] = h.face
        floats[i, 0] = h.t
        floats[i, 1] = h.u
        floats[i, 2] = h.v
        floats[i, 3] = h.sign
        normals[i] = h.normal
    t = float(0.0)
    u = float(0.0)
    v = float(0.0)
    sign = float(0.0)
    n = kc.vec3()
    face = int(0)
    if kc.mesh_query_ray(mesh, s, d, max_t, t, u, v, sign, n, face):
        ints[i, 1] = face
        floats[i, 4] = t
    ints[i, 2] = kc.where(kc.mesh_query_ray_anyhit(mesh, s, d, max_t), 1, 0)
    ints[i, 3] = kc.mesh_query_ray_count_intersections(mesh, s, d)


@kc.kernel
def list_queries(mesh: kc.uint64, bvh: kc.uint64, lowers: kc.array(dtype=kc.vec3),
                 uppers: kc.array(dtype=kc.vec3), radius: float, max_dist: float,
                 found: kc.array(dtype=int, ndim=3), counts: kc.array(dtype=int, ndim=2)):
    # Query kinds, each listing its results: mesh faces in a box, mesh faces in a sphere,
    # BVH items in a box, BVH items along a ray (start lowers[i], direction uppers[i]).
    i = kc.tid()
    lo = lowers[i]
    hi = uppers[i]
    for kind in range(4):
        c = int(0)
        index = int(0)
        if kind < 2:
            q = kc.mesh_query_aabb(mesh, lo, hi)
            if kind == 1:
                q = kc.mesh_query_sphere(mesh, lo, radius)
            while kc.mesh_query_aabb_next(q, index):
                if c < K:
                    found[i, kind, c] = index
                c += 1
        else:
            b = kc.bvh_query_aabb(bvh, lo, hi)
            if kind == 3:
                b = kc.bvh_query_ray(bvh, lo, hi)
            while kc.bvh_query_next(b, index, max_dist):
                if c < K:
                    found[i, kind, c] = index
                c += 1
        counts[i, kind] = c


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


@kc.kernel
def eval_queries(mesh: kc.uint64, faces: kc.array(dtype=int), bary: kc.array(dtype=kc.vec2),
                 vecs: kc.array(dtype=kc.vec3, ndim=2), ints: kc.array(dtype=int, ndim=2)):
    i = kc.tid()
    f = faces[i]
    vecs[i, 0] = kc.mesh_eval_position(mesh, f, bary[i][0], bary[i][1])
    vecs[i, 1] = kc.mesh_eval_velocity(mesh, f, bary[i][0], bary[i][1])
    vecs[i, 2] = kc.mesh_eval_face_normal(mesh, f)
    vecs[i, 3] = kc.mesh_get_point(mesh, 3 * f + 1)
    vecs[i, 4] = kc.mesh_get_velocity(mesh, 3 * f + 2)
    ints[i, 0] = kc.mesh_get_index(mesh, 3 * f)


# ---- meshes and brute-force references ------------------------------------------------------


def _bumpy_sphere(n_lat=14, n_lon=22):
    """A closed mesh of radius 1 +- 0.2, faces counter-clockwise seen from outside."""
    theta = np.pi * np.arange(1, n_lat) / n_lat
    phi = 2 * np.pi * np.arange(n_lon) / n_lon
    th, ph = np.meshgrid(theta, phi, indexing="ij")
    r = 1.0 + 0.2 * np.sin(3 * th) * np.cos(2 * ph)
    ring = np.stack([r * np.sin(th) * np.cos(ph), r * np.sin(th) * np.sin(ph), r * np.cos(th)], -1)
    points = np.concatenate([[[0, 0, 1.0], [0, 0, -1.0]], ring.reshape(-1, 3)])

    def v(i, j):
        return 2 + (i - 1) * n_lon + j % n_lon

    faces = []
    for j in range(n_lon):
        faces += [[0, v(1, j), v(1, j + 1)], [1, v(n_lat - 1, j + 1), v(n_lat - 1, j)]]
        for i in range(1, n_lat - 1):
            faces += [[v(i, j), v(i + 1, j), v(i + 1, j + 1)], [v(i, j), v(i + 1, j + 1), v(i, j + 1)]]
    points, faces = points.astype(np.float32), np.array(faces, np.int32)
    a, b, c = (points[faces[:, k]].astype(np.float64) for k in range(3))
    assert np.einsum("ij,ij->i", a, np.cross(b, c)).sum() > 0  # outward winding
    return points, faces


def _soup(rng, n=300):
    centres = rng.uniform(-1, 1, (n, 1, 3))
    points = (centres + 0.15 * rng.normal(size=(n, 3, 3))).reshape(-1, 3).astype(np.float32)
    return points, np.arange(3 * n, dtype=np.int32).reshape(-1, 3)


def _make_mesh(points, faces, **kwargs):
    return kc.Mesh(kc.array(points, dtype=kc.vec3), kc.array(faces.ravel(), dtype=kc.int32),
                   **kwargs)


def _corners(points, faces):
    return [points[faces[:, k]].astype(np.float64) for k in range(3)]


def _dot(x, y):
    return (x * y).sum(-1)


def _closest(q, a, b, c):
    """Squared distances (Q, F) from each point to each triangle, and the closest points."""
    q = q.astype(np.float64)[:, None, :]
    ab, ac = b - a, c - a
    n = np.cross(ab, ac)
    proj = q - (_dot(q - a, n) / _dot(n, n))[..., None] * n
    w = proj - a
    d00, d01, d11 = _dot(ab, ab), _dot(ab, ac), _dot(ac, ac)
    den = d00 * d11 - d01 * d01
    wb = (d11 * _dot(w, ab) - d01 * _dot(w, ac)) / den
    wc = (d00 * _dot(w, ac) - d01 * _dot(w, ab)) / den
    inside = (wb >= 0) & (wc >= 0) & (wb + wc <= 1)
    best = np.where(inside[..., None], proj, np.nan)
    best_d = np.where(inside, _dot(proj - q, proj - q), np.inf)
    for p0, p1 in ((a, b), (b, c), (c, a)):
        e = p1 - p0
        s = np.clip(_dot(q - p0, e) / _dot(e, e), 0, 1)[..., None]
        pt = p0 + s * e
        d = _dot(pt - q, pt - q)
        closer = d < best_d
        best = np.where(closer[..., None], pt, best)
        best_d = np.where(closer, d, best_d)
    return best_d, best


def _winding(q, a, b, c):
    pa, pb, pc = (x - q.astype(np.float64)[:, None, :] for x in (a, b, c))
    la, lb, lc = (np.linalg.norm(x, axis=-1) for x in (pa, pb, pc))
    num = _dot(pa, np.cross(pb, pc))
    den = la * lb * lc + _dot(pa, pb) * lc + _dot(pa, pc) * lb + _dot(pb, pc) * la
    return (2 * np.arctan2(num, den)).sum(1) / (4 * np.pi)


def _ray_hits(s, d, a, b, c):
    """(t, weight of b, weight of c) of every ray against every triangle (Moller-Trumbore,
    float64); t = inf where the ray misses."""
    s, d = s.astype(np.float64)[:, None, :], d.astype(np.float64)[:, None, :]
    e1, e2 = b - a, c - a
    pvec = np.cross(d, e2)
    det = _dot(e1, pvec)
    tvec = s - a
    qvec = np.cross(tvec, e1)
    with np.errstate(divide="ignore", invalid="ignore"):  # rays parallel to a face
        u = _dot(tvec, pvec) / det
        v = _dot(d, qvec) / det
        t = _dot(e2, qvec) / det
        hit = (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= 0)
    return np.where(hit, t, np.inf), u, v


def _box_overlap(lo, hi, qlo, qhi):
    return ~((lo[None] > qhi[:, None]).any(-1) | (hi[None] < qlo[:, None]).any(-1))


def _found_sets(found, counts, kind):
    return [set(found[i, kind, :counts[i, kind]].tolist()) for i in range(len(counts))]


# ---- point queries -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sphere():
    points, faces = _bumpy_sphere()
    return points, faces, _make_mesh(points, faces, support_winding_number=True)


def _run_points(mesh, q, max_dist):
    n = len(q)
    faces, signs = poisoned((n, 7), np.int32), poisoned((n, 7), np.float32)
    bary = kc.array(np.full((n, 7, 2), np.nan, np.float32), dtype=kc.vec2)
    kc.launch(point_queries, n, [mesh.id, kc.array(q, dtype=kc.vec3), max_dist, faces, bary,
                                 signs])
    return faces.numpy(), bary.numpy(), signs.numpy()


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


def _run_rays(mesh, starts, dirs, max_t):
    n = len(starts)
    ints, floats, normals = poisoned((n, 4), np.int32), poisoned((n, 5), np.float32), \
        poisoned((n, 3), np.float32)
    normals = kc.array(normals.numpy(), dtype=kc.vec3)
    kc.launch(ray_queries, n, [mesh.id, kc.array(starts, dtype=kc.vec3),
                               kc.array(dirs, dtype=kc.vec3), max_t, ints, floats, normals])
    return ints.numpy(), floats.numpy(), normals.numpy()


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


def _run_lists(mesh, bvh, lowers, uppers, radius, max_dist=1.0e30, kinds=(0, 1, 2, 3)):
    n = len(lowers)
    found, counts = poisoned((n, 4, K), np.int32), poisoned((n, 4), np.int32)
    kc.launch(list_queries, n, [mesh.id, bvh.id, kc.array(lowers, dtype=kc.vec3),
                                kc.array(uppers, dtype=kc.vec3), radius, max_dist, found, counts])
    counts = counts.numpy()
    assert (counts[:, kinds] < K).all()
    return found.numpy(), counts


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


# ---- refit, evaluation, empty meshes --------------------------------------------------------


def test_refit_and_new_points_follow_the_geometry(rng, sphere):
    points, tris = _bumpy_sphere()
    mesh = _make_mesh(points, tris)
    q = rng.uniform(-2, 2, (128, 3)).astype(np.float32)
    for step in range(2):
        moved = (points * np.float32(1.5) + np.float32([0.3, -0.2, 0.1])).astype(np.float32)
        if step == 0:
            mesh.points.assign(moved)  # in place, then refit
            mesh.refit()
        else:
            mesh.points = kc.array(moved[:, [1, 0, 2]], dtype=kc.vec3)  # the setter refits
            moved = moved[:, [1, 0, 2]]
        faces, bary, signs = _run_points(mesh, q, 1.0e6)
        dist = _closest(q, *_corners(moved, tris))[0]
        np.testing.assert_allclose(dist[np.arange(128), faces[:, 0]], dist.min(1), atol=1e-5)
        ints, floats, _ = _run_rays(mesh, q, -q, 1.0e6)
        t_all = _ray_hits(q, -q, *_corners(moved, tris))[0]
        np.testing.assert_allclose(floats[:, 0], t_all.min(1), rtol=1e-5)


def test_eval_and_get(rng):
    points, tris = _soup(rng, 50)
    velocities = rng.normal(size=points.shape).astype(np.float32)
    faces = rng.integers(0, 50, 40).astype(np.int32)
    bary = rng.uniform(0, 0.5, (40, 2)).astype(np.float32)
    a, b, c = _corners(points, tris)
    va, vb, vc = _corners(velocities, tris)
    for with_velocities in (True, False):
        mesh = _make_mesh(points, tris, velocities=kc.array(velocities, dtype=kc.vec3)
                          if with_velocities else None)
        vecs, ints = poisoned((40, 5, 3), np.float32), poisoned((40, 1), np.int32)
        vecs = kc.array(vecs.numpy(), dtype=kc.vec3)
        kc.launch(eval_queries, 40, [mesh.id, kc.array(faces), kc.array(bary, dtype=kc.vec2),
                                     vecs, ints])
        out, f, (u, v) = vecs.numpy(), faces, bary.T[:, :, None]
        np.testing.assert_allclose(out[:, 0], u * a[f] + v * b[f] + (1 - u - v) * c[f], atol=1e-5)
        n = np.cross(b[f] - a[f], c[f] - a[f])
        np.testing.assert_allclose(out[:, 2], n / np.linalg.norm(n, axis=1)[:, None], atol=1e-5)
        np.testing.assert_allclose(out[:, 3], b[f], atol=0)
        np.testing.assert_array_equal(ints.numpy()[:, 0], tris[f, 0])
        if with_velocities:
            np.testing.assert_allclose(out[:, 1], u * va[f] + v * vb[f] + (1 - u - v) * vc[f],
                                       atol=1e-5)
            np.testing.assert_allclose(out[:, 4], vc[f], atol=0)
        else:
            assert (out[:, [1, 4]] == 0).all()


def test_empty_mesh_and_bvh_find_nothing(rng):
    mesh = kc.Mesh(kc.zeros(3, dtype=kc.vec3), kc.zeros(0, dtype=kc.int32))
    bvh = kc.Bvh(kc.zeros(0, dtype=kc.vec3), kc.zeros(0, dtype=kc.vec3))
    q = rng.uniform(-1, 1, (8, 3)).astype(np.float32)
    faces, _, _ = _run_points(mesh, q, 1.0e6)
    assert (faces == np.iinfo(np.int32).min + 3).all()
    ints, _, _ = _run_rays(mesh, q, q, 1.0e6)
    assert (ints[:, 2:] == 0).all()
    _, counts = _run_lists(mesh, bvh, q - 1, q + 1, 1.0)
    assert (counts == 0).all()


@pytest.mark.parametrize("kind", ["uniform", "clustered", "identical"])
@pytest.mark.parametrize("leaf_size", [1, 4])
def test_topology_is_depth_first_and_bounded(rng, kind, leaf_size):
    n = 5000
    if kind == "uniform":
        centres = rng.uniform(-1, 1, (n, 3))
    elif kind == "clustered":  # ever denser clusters: Morton splits alone would go deep
        centres = np.cumprod(np.full((n, 3), 0.5), axis=0) * rng.uniform(0.5, 1, (n, 3))
    else:
        centres = np.zeros((n, 3))
    top = build_topology(centres - 1e-3, centres + 1e-3, leaf_size)
    info, count = top.info, top.info[:, 1]
    assert top.depth <= 62 and info[:, 3].max() == top.depth
    assert info[0, 2] == len(info) and (count <= leaf_size).all()
    slots = np.concatenate([np.arange(s, s + c) for s, c in info[count > 0, :2]])
    np.testing.assert_array_equal(np.sort(slots), np.arange(n))
    assert sorted(top.prims) == list(range(n))
    inner = np.flatnonzero(count == 0)
    np.testing.assert_array_equal(info[inner + 1, 2], info[inner, 0])  # left subtree ends at right
    np.testing.assert_array_equal(info[info[inner, 0], 2], info[inner, 2])


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


# ---- CUDA-C: compiled by NVRTC and run through the host harness ----------------------------


@kc.kernel
def signed_distance(mesh: kc.uint64, points: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
    i = kc.tid()
    r = kc.mesh_query_point_sign_normal(mesh, points[i], 1.0e6)
    if r.result:
        out[i] = r.sign * kc.length(kc.mesh_eval_position(mesh, r.face, r.u, r.v) - points[i])


def _cuda_source(kernel):
    from kernelc.codegen.cuda import CudaOptions, emit_cuda

    return emit_cuda(kernel.get_ir(kernel.param_types), CudaOptions())


@pytest.mark.parametrize("kernel", [signed_distance, ray_queries, list_queries, eval_queries])
def test_query_kernels_compile_with_nvrtc(kernel):
    pytest.importorskip("cuda.bindings.nvrtc")
    from kernelc.codegen import nvrtc

    source = _cuda_source(kernel)
    image, fmt = nvrtc.compile_cuda(source.text, 80, name=source.kernel)
    assert fmt == "cubin" and source.entry.encode() in image


def test_query_cuda_c_runs_in_host_harness(rng, sphere):
    import cuda_harness

    if shutil.which(cuda_harness.CXX) is None:
        pytest.skip("needs g++")
    from kernelc.codegen.cuda_layout import ArrayArg

    points, tris, mesh = sphere  # a CPU mesh: host pointers the harness reads
    q = rng.uniform(-1.5, 1.5, (200, 3)).astype(np.float32)
    out = np.full(200, np.nan, np.float32)
    host = cuda_harness.build(_cuda_source(signed_distance))
    host.launch(200, [mesh.id, ArrayArg(q.ctypes.data, (200,), (12,)), out], workers=2)
    dist = np.sqrt(_closest(q, *_corners(points, tris))[0].min(1))
    inside = _winding(q, *_corners(points, tris)) > 0.5
    np.testing.assert_allclose(out, np.where(inside, -dist, dist), atol=1e-5)
    cpu = poisoned(200, np.float32)
    kc.launch(signed_distance, 200, [mesh.id, kc.array(q, dtype=kc.vec3), cpu])
    np.testing.assert_array_equal(out, cpu.numpy())


@pytest.mark.cuda
def test_gpu_queries_match_the_cpu(rng):
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    points, tris = _bumpy_sphere()
    q = rng.uniform(-1.5, 1.5, (4096, 3)).astype(np.float32)
    results = []
    for device in ("cpu", "cuda:0"):
        mesh = kc.Mesh(kc.array(points, dtype=kc.vec3, device=device),
                       kc.array(tris.ravel(), dtype=kc.int32, device=device))
        out = kc.full(4096, np.nan, dtype=float, device=device)
        kc.launch(signed_distance, 4096, [mesh.id, kc.array(q, dtype=kc.vec3, device=device),
                                          out], device=device)
        results.append(out.numpy())
    np.testing.assert_allclose(results[0], results[1], atol=1e-6)


# ---- errors --------------------------------------------------------------------------------


def test_host_side_errors():
    pts = kc.zeros(4, dtype=kc.vec3)
    idx = kc.array([0, 1, 2], dtype=kc.int32)
    with pytest.raises(TypeError, match="array of kc.vec3"):
        kc.Mesh(kc.zeros(4, dtype=kc.vec3d), idx)
    with pytest.raises(TypeError, match="kc.int32"):
        kc.Mesh(pts, kc.array([0, 1, 2], dtype=kc.int64))
    with pytest.raises(ValueError, match="three per face"):
        kc.Mesh(pts, kc.array([0, 1], dtype=kc.int32))
    with pytest.raises(ValueError, match=r"lie in \[0, 4\)"):
        kc.Mesh(pts, kc.array([0, 1, 4], dtype=kc.int32))
    with pytest.raises(ValueError, match="one per point"):
        kc.Mesh(pts, idx, velocities=kc.zeros(3, dtype=kc.vec3))
    with pytest.raises(NotImplementedError, match="grouped"):
        kc.Mesh(pts, idx, groups=kc.zeros(1, dtype=kc.int32))
    with pytest.raises(ValueError, match="unknown BVH constructor"):
        kc.Mesh(pts, idx, bvh_constructor="octree")
    mesh = kc.Mesh(pts, idx)
    with pytest.raises(ValueError, match="shape"):
        mesh.points = kc.zeros(5, dtype=kc.vec3)
    with pytest.raises(ValueError, match="as many lowers as uppers"):
        kc.Bvh(pts, kc.zeros(3, dtype=kc.vec3))
    with pytest.raises(ValueError, match="leaf_size"):
        kc.Bvh(pts, pts, leaf_size=0)
    with pytest.raises(RuntimeError, match="inside a kernel"):
        kc.mesh_query_point(mesh.id, kc.vec3(), 1.0)


@kc.kernel
def bad_id(mesh: float, p: kc.vec3):
    kc.mesh_query_point(mesh, p, 1.0)  # error: mesh


@kc.kernel
def bad_point(mesh: kc.uint64, p: kc.vec3d):
    kc.mesh_query_ray(mesh, p, kc.vec3(1.0, 0.0, 0.0), 1.0)  # error: p


@kc.kernel
def bad_out_type(mesh: kc.uint64, p: kc.vec3):
    inside = int(0)
    face = int(0)
    u = float(0.0)
    v = float(0.0)
    kc.mesh_query_point(mesh, p, 1.0, inside, face, u, v)  # error: inside


@kc.kernel
def bad_out_expr(mesh: kc.uint64, p: kc.vec3):
    u = float(0.0)
    v = float(0.0)
    kc.mesh_query_point_no_sign(mesh, p, 1.0, int(0), u, v)  # error: int(0)


@kc.kernel
def bad_query(mesh: kc.uint64, p: kc.vec3):
    q = kc.bvh_query_aabb(mesh, p, p)
    index = int(0)
    while kc.mesh_query_aabb_next(q, index):  # error: q
        pass


@kc.kernel
def bad_count(mesh: kc.uint64, p: kc.vec3):
    kc.mesh_query_aabb(mesh, p)  # error: kc


@kc.kernel
def bad_keyword(mesh: kc.uint64, p: kc.vec3):
    kc.mesh_query_ray(mesh, p, p, 1.0, rot=0)  # error: 0


@pytest.mark.parametrize("kernel, message", [
    (bad_id, "takes the mesh or BVH as its uint64 id"),
    (bad_point, "'start' of mesh_query_ray() must be a vec3"),
    (bad_out_type, "'inside' of mesh_query_point() must be a float32 variable"),
    (bad_out_expr, "pass a variable"),
    (bad_query, "mesh_query_aabb_next() needs a query from mesh_query_aabb/sphere()"),
    (bad_count, "mesh_query_aabb() takes mesh_query_aabb(id, low, high)"),
    (bad_keyword, "unexpected argument 'rot'"),
])
def test_kernel_errors_point_at_the_argument(kernel, message):
    lines, first = inspect.getsourcelines(kernel.func)
    line = next(first + k for k, text in enumerate(lines) if "# error:" in text)
    code, marker = lines[line - first].split("# error: ")
    column = code.rindex(marker.strip()) + 1
    with pytest.raises(kc.KernelError) as err:
        kc.launch(kernel, 1, [1, kernel.param_types[1]()])
    text = str(err.value)
    assert message in text
    assert f"test_mesh.py:{line}:{column}" in text and "^" in text
