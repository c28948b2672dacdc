"""`fem.linalg`'s generalized products and tensor parts against NumPy, and
`Element.X.prototype`."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem


@kc.kernel
def products(v: kc.array(dtype=kc.vec3), m: kc.array(dtype=kc.mat33), q: kc.array(dtype=kc.quat),
             s: kc.array(dtype=float), scalars: kc.array2d(dtype=float),
             vectors: kc.array2d(dtype=kc.vec3), matrices: kc.array2d(dtype=kc.mat33),
             quat_outer: kc.array(dtype=kc.types.matrix((4, 3), float))):
    i = kc.tid()
    a, b = v[2 * i], v[2 * i + 1]
    A, B = m[2 * i], m[2 * i + 1]
    scalars[i, 0] = fem.linalg.generalized_inner(a, b)
    scalars[i, 1] = fem.linalg.generalized_inner(s[i], s[i + 1])
    scalars[i, 2] = fem.linalg.generalized_inner(A, B)
    vectors[i, 0] = fem.linalg.generalized_inner(A, b)
    vectors[i, 1] = fem.linalg.generalized_inner(a, B)
    vectors[i, 2] = fem.linalg.generalized_outer(s[i], b)
    vectors[i, 3] = fem.linalg.generalized_outer(a, s[i])
    vectors[i, 4] = fem.linalg.skew_part(A)
    matrices[i, 0] = fem.linalg.generalized_outer(a, b)
    matrices[i, 1] = fem.linalg.symmetric_part(A)
    matrices[i, 2] = fem.linalg.spherical_part(A)
    quat_outer[i] = fem.linalg.generalized_outer(q[i], a)


@kc.kernel
def parts_2d(m: kc.array(dtype=kc.mat22), angle: kc.array(dtype=float),
             spherical: kc.array(dtype=kc.mat22), symmetric: kc.array(dtype=kc.mat22)):
    i = kc.tid()
    angle[i] = fem.linalg.skew_part(m[i])
    spherical[i] = fem.linalg.spherical_part(m[i])
    symmetric[i] = fem.linalg.symmetric_part(m[i])


def test_generalized_products_and_parts_match_numpy():
    rng = np.random.default_rng(4)
    n = 16
    v = rng.uniform(-2, 2, (2 * n, 3)).astype(np.float32)
    m = rng.uniform(-2, 2, (2 * n, 3, 3)).astype(np.float32)
    q = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    s = rng.uniform(-2, 2, n + 1).astype(np.float32)
    scalars = kc.full((n, 3), np.nan, dtype=float)
    vectors = kc.full((n, 5), np.nan, dtype=kc.vec3)
    matrices = kc.full((n, 3), np.nan, dtype=kc.mat33)
    quat_outer = kc.full(n, np.nan, dtype=kc.types.matrix((4, 3), float))
    kc.launch(products, n, [kc.array(v, dtype=kc.vec3), kc.array(m, dtype=kc.mat33),
                            kc.array(q, dtype=kc.quat), kc.array(s, dtype=float), scalars,
                            vectors, matrices, quat_outer])
    a, b, A, B = v[0::2], v[1::2], m[0::2], m[1::2]
    tol = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(scalars.numpy()[:, 0], np.einsum("ij,ij->i", a, b), **tol)
    np.testing.assert_allclose(scalars.numpy()[:, 1], s[:-1] * s[1:], **tol)
    np.testing.assert_allclose(scalars.numpy()[:, 2], np.einsum("ijk,ijk->i", A, B), **tol)
    got = vectors.numpy()
    np.testing.assert_allclose(got[:, 0], np.einsum("ij,ijk->ik", b, A), **tol)
    np.testing.assert_allclose(got[:, 1], np.einsum("ij,ijk->ik", a, B), **tol)
    np.testing.assert_allclose(got[:, 2], s[:-1, None] * b, **tol)
    np.testing.assert_allclose(got[:, 3], a * s[:-1, None], **tol)
    skew = 0.5 * np.stack([A[:, 2, 1] - A[:, 1, 2], A[:, 0, 2] - A[:, 2, 0],
                           A[:, 1, 0] - A[:, 0, 1]], axis=1)
    np.testing.assert_allclose(got[:, 4], skew, **tol)
    got = matrices.numpy()
    np.testing.assert_allclose(got[:, 0], np.einsum("ij,ik->ijk", a, b), **tol)
    np.testing.assert_allclose(got[:, 1], 0.5 * (A + A.transpose(0, 2, 1)), **tol)
    trace = np.trace(A, axis1=1, axis2=2) / 3.0
    np.testing.assert_allclose(got[:, 2], trace[:, None, None] * np.eye(3), **tol)
    np.testing.assert_allclose(quat_outer.numpy(), np.einsum("ij,ik->ijk", q, a), **tol)

    m2 = rng.uniform(-2, 2, (n, 2, 2)).astype(np.float32)
    angle = kc.full(n, np.nan, dtype=float)
    spherical = kc.full(n, np.nan, dtype=kc.mat22)
    symmetric = kc.full(n, np.nan, dtype=kc.mat22)
    kc.launch(parts_2d, n, [kc.array(m2, dtype=kc.mat22), angle, spherical, symmetric])
    np.testing.assert_allclose(angle.numpy(), 0.5 * (m2[:, 1, 0] - m2[:, 0, 1]), **tol)
    half_trace = 0.5 * np.trace(m2, axis1=1, axis2=2)
    np.testing.assert_allclose(spherical.numpy(), half_trace[:, None, None] * np.eye(2), **tol)
    np.testing.assert_allclose(symmetric.numpy(), 0.5 * (m2 + m2.transpose(0, 2, 1)), **tol)


@kc.kernel
def wrong_inner(v: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
    out[0] = fem.linalg.generalized_inner(v[0], 1.0)


def test_generalized_inner_of_a_vector_and_a_scalar_is_an_error():
    with pytest.raises(kc.KernelError, match="generalized_inner"):
        kc.launch(wrong_inner, 1, [kc.zeros(1, dtype=kc.vec3), kc.zeros(1, dtype=float)])


def test_element_prototypes():
    assert fem.Element.SQUARE.prototype.measure() == 1.0
    assert fem.Element.TRIANGLE.prototype.measure() == 0.5
    assert fem.Element.TETRAHEDRON.prototype.measure() == pytest.approx(1.0 / 6.0)
    assert fem.Element.CUBE.prototype.center() == (0.5, 0.5, 0.5)
    assert fem.Element.LINE_SEGMENT.prototype.dimension == 1


def test_array_axpy_gradients_on_a_tape():
    rng = np.random.default_rng(1)
    x0 = rng.uniform(1.0, 2.0, 10).astype(np.float32)
    y0 = rng.uniform(-1.0, 1.0, 10)
    x = kc.array(x0, dtype=float, requires_grad=True)
    y = kc.array(y0, dtype=kc.float64, requires_grad=True)
    tape = kc.Tape()
    with tape:
        fem.linalg.array_axpy(x=x, y=y, alpha=0.5, beta=4.0)
    np.testing.assert_allclose(y.numpy(), 0.5 * x0 + 4.0 * y0, rtol=1e-6)
    seed = rng.uniform(0.5, 1.5, 10)
    y.grad = kc.array(seed, dtype=kc.float64)
    tape.backward()
    np.testing.assert_allclose(x.grad.numpy(), 0.5 * seed, rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), 4.0 * seed, rtol=1e-6)
