"""Quaternions (x, y, z, w) and transforms (p, q): identities and NumPy references."""

from __future__ import annotations

import typing

import numpy as np
import pytest

import kernelc as kc

Any = typing.Any
DTYPES = [(kc.float32, np.float32, 2e-5), (kc.float64, np.float64, 1e-12)]


def random_unit_quats(rng, n, np_dtype):
    q = rng.standard_normal((n, 4))
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np_dtype)


def rotation_matrix(q: np.ndarray) -> np.ndarray:
    """Reference rotation matrices of unit quaternions (x, y, z, w)."""
    x, y, z, w = (q[:, i].astype(np.float64) for i in range(4))
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], 1)


def hamilton(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    av, aw, bv, bw = a[:, :3], a[:, 3:], b[:, :3], b[:, 3:]
    v = aw * bv + bw * av + np.cross(av, bv)
    w = aw * bw - (av * bv).sum(1, keepdims=True)
    return np.concatenate([v, w], 1)


@kc.kernel
def k_quat(q: kc.array(dtype=Any), r: kc.array(dtype=Any), v: kc.array(dtype=Any),
           rotated: kc.array(dtype=Any), back: kc.array(dtype=Any), mats: kc.array(dtype=Any),
           prods: kc.array(dtype=Any), from_mat: kc.array(dtype=Any)):
    i = kc.tid()
    rotated[i] = kc.quat_rotate(q[i], v[i])
    back[i] = kc.quat_rotate_inv(q[i], rotated[i]) - kc.quat_rotate(kc.quat_inverse(q[i]),
                                                                      rotated[i])
    mats[i] = kc.quat_to_matrix(q[i])
    prods[i] = q[i] * r[i] + kc.mul(q[i], r[i])
    from_mat[i] = kc.quat_from_matrix(kc.quat_to_matrix(q[i]))


@pytest.mark.parametrize("scalar,np_dtype,tol", DTYPES)
def test_quaternion_identities(rng, scalar, np_dtype, tol):
    n = 32
    quat = kc.types.quaternion(scalar)
    vec = kc.types.vector(3, scalar)
    q, r = random_unit_quats(rng, n, np_dtype), random_unit_quats(rng, n, np_dtype)
    v = rng.uniform(-3, 3, (n, 3)).astype(np_dtype)
    outs = [kc.array(np.full(s, np.nan, np_dtype), dtype=t) for s, t in (
        ((n, 3), vec), ((n, 3), vec), ((n, 3, 3), kc.types.matrix((3, 3), scalar)),
        ((n, 4), quat), ((n, 4), quat))]
    kc.launch(k_quat, n, inputs=[kc.array(q, dtype=quat), kc.array(r, dtype=quat),
                                 kc.array(v, dtype=vec), *outs])
    rotated, back, mats, prods, from_mat = (o.numpy() for o in outs)
    ref = rotation_matrix(q)
    np.testing.assert_allclose(rotated, np.einsum("nij,nj->ni", ref, v), atol=tol * 100)
    np.testing.assert_allclose(mats, ref, atol=tol * 10)
    np.testing.assert_allclose(back, 0 * v, atol=tol * 100)
    np.testing.assert_allclose(prods, 2 * hamilton(q, r), atol=tol * 10)
    # q and -q are the same rotation
    sign = np.sign((from_mat * q).sum(1, keepdims=True))
    np.testing.assert_allclose(from_mat * sign, q, atol=tol * 100)


def test_axis_angle_slerp_identity():
    @kc.kernel
    def k(out: kc.array(dtype=kc.quat)):
        q = kc.quat_from_axis_angle(kc.vec3(0.0, 0.0, 1.0), 0.5)
        out[0] = q
        out[1] = kc.quat_slerp(kc.quat_identity(), q, 0.5)
        out[2] = kc.normalize(kc.quat(0.0, 0.0, 0.0, 0.0))
        out[3] = kc.quat(1.0, 2.0, 3.0, 4.0) * 2.0

    out = kc.array(np.full((4, 4), np.nan, np.float32), dtype=kc.quat)
    kc.launch(k, 1, inputs=[out])
    o = out.numpy()
    np.testing.assert_allclose(o[0], [0, 0, np.sin(0.25), np.cos(0.25)], rtol=1e-6)
    np.testing.assert_allclose(o[1], [0, 0, np.sin(0.125), np.cos(0.125)], rtol=1e-6)
    np.testing.assert_array_equal(o[2], [0, 0, 0, 1])  # Warp's normalize of a zero quat
    np.testing.assert_array_equal(o[3], [2, 4, 6, 8])


@kc.kernel
def k_transform(t: kc.array(dtype=Any), u: kc.array(dtype=Any), p: kc.array(dtype=Any),
                points: kc.array(dtype=Any), vectors: kc.array(dtype=Any),
                composed: kc.array(dtype=Any), ident: kc.array(dtype=Any)):
    i = kc.tid()
    points[i] = kc.transform_point(t[i], p[i])
    vectors[i] = kc.transform_vector(t[i], p[i])
    composed[i] = kc.transform_point(kc.transform_multiply(t[i], u[i]), p[i]) - \
        kc.transform_point(t[i], kc.transform_point(u[i], p[i]))
    ident[i] = kc.transform_multiply(t[i], kc.transform_inverse(t[i])) * 1.0


@pytest.mark.parametrize("scalar,np_dtype,tol", DTYPES)
def test_transform_identities(rng, scalar, np_dtype, tol):
    n = 32
    tf, vec = kc.types.transformation(scalar), kc.types.vector(3, scalar)
    t = np.concatenate([rng.uniform(-2, 2, (n, 3)), random_unit_quats(rng, n, np.float64)],
                       1).astype(np_dtype)
    u = np.concatenate([rng.uniform(-2, 2, (n, 3)), random_unit_quats(rng, n, np.float64)],
                       1).astype(np_dtype)
    p = rng.uniform(-2, 2, (n, 3)).astype(np_dtype)
    outs = [kc.array(np.full(s, np.nan, np_dtype), dtype=ty) for s, ty in (
        ((n, 3), vec), ((n, 3), vec), ((n, 3), vec), ((n, 7), tf))]
    kc.launch(k_transform, n, inputs=[kc.array(t, dtype=tf), kc.array(u, dtype=tf),
                                      kc.array(p, dtype=vec), *outs])
    points, vectors, composed, ident = (o.numpy() for o in outs)
    rot = rotation_matrix(t[:, 3:])
    np.testing.assert_allclose(vectors, np.einsum("nij,nj->ni", rot, p), atol=tol * 100)
    np.testing.assert_allclose(points, np.einsum("nij,nj->ni", rot, p) + t[:, :3],
                               atol=tol * 100)
    np.testing.assert_allclose(composed, 0 * p, atol=tol * 100)
    expected = np.tile(np.array([0, 0, 0, 0, 0, 0, 1], np_dtype), (n, 1))
    np.testing.assert_allclose(np.abs(ident), expected, atol=tol * 100)


def test_transform_construction_and_parts():
    @kc.kernel
    def k(t: kc.transform, out: kc.array(dtype=float)):
        x = kc.transform(kc.vec3(1.0, 2.0, 3.0), kc.quat_identity())
        x.p = t.p
        y = kc.transform_identity()
        out[0] = x.p[0] + x.q.w * 10.0 + x[6] * 100.0
        out[1] = kc.transform_get_translation(t)[2] + kc.transform_get_rotation(t)[3]
        out[2] = y[6] + y[0]

    out = kc.zeros(3)
    host = kc.transform(kc.vec3(5, 6, 7), kc.quat(0, 0, 0, 1))
    assert host.p.tolist() == [5, 6, 7] and host.q.tolist() == [0, 0, 0, 1]
    kc.launch(k, 1, inputs=[host, out])
    assert out.numpy().tolist() == [115.0, 8.0, 1.0]
