"""Shared pieces of the kc.Mesh / kc.Bvh tests (`tests/test_mesh_queries.py`,
`tests/test_mesh.py`): the point, ray and list query kernels with their launchers
(`_run_points`, `_run_rays`, `_run_lists`), the test meshes (a closed bumpy sphere, a
triangle soup) and the brute-force NumPy references (closest points, winding numbers,
ray hits, box overlaps).
"""

from __future__ import annotations

import numpy as np

import kernelc as kc
from tests.conftest import poisoned

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


# ---- meshes and brute-force references ------------------------------------------------------


@kc.kernel
def query_gradients(mesh: kc.uint64, starts: kc.array(dtype=kc.vec3),
                    dirs: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
    """A function of the ray hit, the closest and the furthest point of each query,
    continuous in the starts and directions (what `test_query_gradients_*` differentiate)."""
    i = kc.tid()
    q = kc.mesh_query_ray(mesh, starts[i], dirs[i], 1.0e6)
    p = kc.mesh_query_point_no_sign(mesh, starts[i], 1.0e6)
    f = kc.mesh_query_furthest_point_no_sign(mesh, starts[i], 0.0)
    # Positions rather than (u, v), which jump where the closest face changes.
    w = kc.vec3(0.3, -0.5, 0.7)
    v = float(0.0)
    if q.result:
        v += q.t + kc.dot(w, kc.mesh_eval_position(mesh, q.face, q.u, q.v))
    if p.result:
        v += kc.length_sq(kc.mesh_eval_position(mesh, p.face, p.u, p.v) - starts[i])
    if f.result:
        v += kc.dot(w, kc.mesh_eval_position(mesh, f.face, f.u, f.v))
    out[i] = v


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


def sphere_mesh():
    """The bumpy sphere's points and faces, and a kc.Mesh of it with winding-number support
    (what the tests' `sphere` fixture holds)."""
    points, faces = _bumpy_sphere()
    return points, faces, _make_mesh(points, faces, support_winding_number=True)


# ---- launchers: poisoned outputs, results as NumPy arrays ----------------------------------


def _run_points(mesh, q, max_dist):
    n = len(q)
    faces, signs = poisoned((n, 7), np.int32), poisoned((n, 7), np.float32)
    bary = kc.array(np.full((n, 7, 2), np.nan, np.float32), dtype=kc.vec2)
    kc.launch(point_queries, n, [mesh.id, kc.array(q, dtype=kc.vec3), max_dist, faces, bary,
                                 signs])
    return faces.numpy(), bary.numpy(), signs.numpy()


def _run_rays(mesh, starts, dirs, max_t):
    n = len(starts)
    ints, floats, normals = poisoned((n, 4), np.int32), poisoned((n, 5), np.float32), \
        poisoned((n, 3), np.float32)
    normals = kc.array(normals.numpy(), dtype=kc.vec3)
    kc.launch(ray_queries, n, [mesh.id, kc.array(starts, dtype=kc.vec3),
                               kc.array(dirs, dtype=kc.vec3), max_t, ints, floats, normals])
    return ints.numpy(), floats.numpy(), normals.numpy()


def _run_lists(mesh, bvh, lowers, uppers, radius, max_dist=1.0e30, kinds=(0, 1, 2, 3)):
    n = len(lowers)
    found, counts = poisoned((n, 4, K), np.int32), poisoned((n, 4), np.int32)
    kc.launch(list_queries, n, [mesh.id, bvh.id, kc.array(lowers, dtype=kc.vec3),
                                kc.array(uppers, dtype=kc.vec3), radius, max_dist, found, counts])
    counts = counts.numpy()
    assert (counts[:, kinds] < K).all()
    return found.numpy(), counts
