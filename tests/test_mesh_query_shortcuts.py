"""The closest-point search and the three-ray sign of `kc.mesh_query_point` take shortcuts
that must not change a result: box distances kept on the traversal stack, the sliver test
run only for faces that would be closer, and the z ray cast only when the x and y rays
disagree. Checked bit for bit against the plain traversal (written out below in kernelc's
language) and against brute-force NumPy references, on closed and open meshes.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from kernelc.builtins import BUILTINS
from kernelc.spatial import bvh_lang as bvh
from kernelc.spatial import mesh_lang
from tests.conftest import poisoned
from tests.mesh_kernels import _bumpy_sphere, _closest, _corners, _make_mesh, _ray_hits, _soup

_load_i32 = BUILTINS["_load_int32"]
_load_u64 = BUILTINS["_load_uint64"]

# ---- the plain traversal: every popped node's box measured again, every face's sliver test
# first, all three rays ---------------------------------------------------------------------


@kc.func
def plain_closest_face(mesh: kc.uint64, point: kc.vec3, max_dist: kc.float32) -> kc.int32:
    bounds = _load_u64(mesh, bvh.DESCRIPTOR_BOUNDS // 8)
    info = _load_u64(mesh, bvh.DESCRIPTOR_INFO // 8)
    prims = _load_u64(mesh, bvh.DESCRIPTOR_PRIMS // 8)
    best = max_dist * max_dist
    face = -1
    stack = kc.zeros(shape=bvh.STACK_SIZE, dtype=kc.int32)
    count = 0
    if _load_i32(mesh, bvh.DESCRIPTOR_NUM_NODES // 4) > 0:
        count = 1
    while count > 0:
        count -= 1
        node = stack[count]
        if bvh.box_distance_sq(point, bvh.node_lower(bounds, node),
                               bvh.node_upper(bounds, node)) > best:
            continue
        items = bvh.node_int(info, node, 1)
        if items > 0:
            first = bvh.node_int(info, node, 0)
            for slot in range(first, first + items):
                f = _load_i32(prims, slot)
                a, b, c = mesh_lang.face_points(mesh, f)
                if mesh_lang.is_sliver(a, b, c):
                    continue
                v, w = mesh_lang.closest_point_triangle(a, b, c, point)
                u = 1.0 - v - w
                d2 = kc.length_sq(u * a + v * b + w * c - point)
                if d2 < best:
                    best = d2
                    face = f
        else:
            left = node + 1
            right = bvh.node_int(info, node, 0)
            dl = bvh.box_distance_sq(point, bvh.node_lower(bounds, left),
                                     bvh.node_upper(bounds, left))
            dr = bvh.box_distance_sq(point, bvh.node_lower(bounds, right),
                                     bvh.node_upper(bounds, right))
            near = right
            far = left
            d_near = dr
            d_far = dl
            if dl < dr:
                near = left
                far = right
                d_near = dl
                d_far = dr
            if d_far < best:
                stack[count] = far
                count += 1
            if d_near < best:
                stack[count] = near
                count += 1
    return face


@kc.func
def plain_votes(mesh: kc.uint64, p: kc.vec3) -> kc.int32:
    votes = 0
    for axis in range(3):
        d = kc.vec3(0.0, 0.0, 0.0)
        d[axis] = 1.0
        hit = mesh_lang.closest_hit(mesh, p, d, bvh.FLT_MAX, -1)
        if hit.result and hit.sign < 0.0:
            votes += 1
    return votes


@kc.kernel
def compare_queries(mesh: kc.uint64, points: kc.array(dtype=kc.vec3), max_dist: float,
                    faces: kc.array(dtype=int, ndim=2), uvs: kc.array(dtype=float, ndim=2),
                    signs: kc.array(dtype=float, ndim=2), votes: kc.array(dtype=int)):
    i = kc.tid()
    p = points[i]
    q = kc.mesh_query_point(mesh, p, max_dist)
    if q.result:
        faces[i, 0] = q.face
        uvs[i, 0] = q.u
        uvs[i, 1] = q.v
        signs[i, 0] = q.sign
    n = kc.mesh_query_point_no_sign(mesh, p, max_dist)
    if n.result:
        faces[i, 1] = n.face
        uvs[i, 2] = n.u
        uvs[i, 3] = n.v
    found, face, u, v = mesh_lang.closest_on_face(mesh, p, plain_closest_face(mesh, p, max_dist))
    if found:
        faces[i, 2] = face
        uvs[i, 4] = u
        uvs[i, 5] = v
    votes[i] = plain_votes(mesh, p)
    signs[i, 1] = 1.0
    if votes[i] >= 2:
        signs[i, 1] = -1.0


def _run(mesh, q, max_dist=1.0e6):
    n = len(q)
    faces, uvs = poisoned((n, 3), np.int32), poisoned((n, 6), np.float32)
    signs, votes = poisoned((n, 2), np.float32), poisoned(n, np.int32)
    kc.launch(compare_queries, n, [mesh.id, kc.array(q, dtype=kc.vec3), max_dist, faces, uvs,
                                   signs, votes])
    return faces.numpy(), uvs.numpy(), signs.numpy(), votes.numpy()


def _same_as_plain(faces, uvs, signs, found):
    """The queries' results equal the plain traversal's, bit for bit, where one was found."""
    np.testing.assert_array_equal(faces[found, 0], faces[found, 2])
    np.testing.assert_array_equal(faces[found, 1], faces[found, 2])
    for a, b in ((0, 4), (1, 5), (2, 4), (3, 5)):
        np.testing.assert_array_equal(uvs[found, a].view(np.int32), uvs[found, b].view(np.int32))
    np.testing.assert_array_equal(signs[found, 0], signs[found, 1])


# ---- meshes --------------------------------------------------------------------------------


def _cube(drop=()):
    """The cube [-1, 1]^3, faces counter-clockwise seen from outside, without the sides named
    in `drop` ("+x", "-y", ...)."""
    points = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float32)
    sides = {"-x": [0, 1, 3, 2], "+x": [4, 6, 7, 5], "-y": [0, 4, 5, 1], "+y": [2, 3, 7, 6],
             "-z": [0, 2, 6, 4], "+z": [1, 5, 7, 3]}
    faces = []
    for name, (a, b, c, d) in sides.items():
        if name not in drop:
            faces += [[a, b, c], [a, c, d]]
    return points, np.array(faces, np.int32)


def _ray_votes(q, points, faces):
    """Brute force, (3, n): whether the +x, +y, +z rays first meet a face from behind."""
    a, b, c = _corners(points, faces)
    normal = np.cross(b - a, c - a)
    votes = []
    for axis in range(3):
        d = np.zeros_like(q)
        d[:, axis] = 1.0
        t = _ray_hits(q, d, a, b, c)[0]
        hit = np.isfinite(t.min(1))
        votes.append(hit & (normal[t.argmin(1), axis] > 0))  # leaving through the face
    return np.array(votes, np.int32)


@pytest.mark.parametrize("drop", [(), ("+x",), ("+x", "+y"), ("-y", "+z")])
def test_three_ray_sign_on_open_cubes(rng, drop):
    points, faces = _cube(drop)
    mesh = _make_mesh(points, faces)
    q = rng.uniform(-1.6, 1.6, (400, 3)).astype(np.float32)
    got_faces, uvs, signs, votes = _run(mesh, q)
    found = got_faces[:, 2] >= 0
    assert found.all()
    _same_as_plain(got_faces, uvs, signs, found)
    expected = _ray_votes(q, points, faces)
    np.testing.assert_array_equal(votes, expected.sum(0))
    np.testing.assert_array_equal(signs[:, 0], np.where(expected.sum(0) >= 2, -1.0, 1.0))
    # both ways through the shortcut: the x and y rays agreeing, and the z ray deciding
    xy = expected[0] + expected[1]
    assert (xy != 1).any()
    if drop == ("+x",):  # inside, the x ray escapes and the z ray decides
        assert ((xy == 1) & (expected[2] == 1)).sum() > 50


@pytest.mark.parametrize("shape", ["sphere", "soup"])
def test_closest_points_match_the_plain_traversal(rng, shape):
    points, faces = _bumpy_sphere() if shape == "sphere" else _soup(rng)
    mesh = _make_mesh(points, faces)
    q = rng.uniform(-1.5, 1.5, (512, 3)).astype(np.float32)
    for max_dist in (1.0e6, 0.3):
        got_faces, uvs, signs, _ = _run(mesh, q, max_dist)
        found = got_faces[:, 2] >= 0
        assert found.any()
        np.testing.assert_array_equal(got_faces[:, 0] >= 0, found)  # the same ones found
        np.testing.assert_array_equal(got_faces[:, 1] >= 0, found)
        _same_as_plain(got_faces, uvs, signs, found)
        dist = _closest(q, *_corners(points, faces))[0]
        d_min = np.sqrt(dist.min(1))
        rows = np.flatnonzero(found)
        np.testing.assert_allclose(np.sqrt(dist[rows, got_faces[rows, 0]]), d_min[rows],
                                   atol=2e-6)  # a closest face (ties allowed)
        assert found[d_min < max_dist - 1e-5].all() and not found[d_min > max_dist + 1e-5].any()


def test_slivers_are_never_the_closest_face(rng):
    """Needle triangles closer to every query point than any proper face are passed over."""
    points, faces = _bumpy_sphere()
    n = 40
    base = rng.uniform(-0.5, 0.5, (n, 3))
    along = rng.normal(size=(n, 3))
    along /= np.linalg.norm(along, axis=1, keepdims=True)
    side = np.cross(along, rng.normal(size=(n, 3)))
    side /= np.linalg.norm(side, axis=1, keepdims=True)
    needles = np.stack([base, base + 0.4 * along, base + 0.2 * along + 1e-9 * side], 1)
    all_points = np.concatenate([points, needles.reshape(-1, 3)]).astype(np.float32)
    first = len(faces)
    all_faces = np.concatenate([faces, len(points) + np.arange(3 * n).reshape(-1, 3)])
    all_faces = all_faces.astype(np.int32)
    mesh = _make_mesh(all_points, all_faces)
    q = (base + 0.2 * along + 0.01 * rng.normal(size=(n, 3))).astype(np.float32)
    got_faces, uvs, signs, _ = _run(mesh, q)
    found = got_faces[:, 2] >= 0
    assert found.all()
    _same_as_plain(got_faces, uvs, signs, found)
    assert (got_faces[:, 0] < first).all()  # never a needle
    dist = _closest(q, *_corners(points, faces))[0]
    np.testing.assert_allclose(dist[np.arange(n), got_faces[:, 0]], dist.min(1), atol=2e-6)
    with np.errstate(divide="ignore", invalid="ignore"):  # the needles' planes are degenerate
        needle_d = _closest(q, *_corners(all_points, all_faces[first:]))[0].min(1)
    assert (needle_d < dist.min(1)).all()  # the needles were nearer
