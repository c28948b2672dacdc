"""Gradients of svd3, svd2, qr3 and eig3 in backward kernels: against NumPy's closed forms
and central finite differences of the forward kernels (float64), gradients poisoned first."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc


@kc.kernel
def eigenvalue_losses(a: kc.array(dtype=kc.mat33d), mode: int, out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    q, d = kc.eig3(a[i])
    if mode == 1:
        out[i] = kc.dot(d, d)
    else:
        out[i] = d[0] + d[1] + d[2]


@kc.kernel
def eigenvalue_sum_in_place(a: kc.array(dtype=kc.mat33f), out: kc.array(dtype=float)):
    i = kc.tid()
    q = kc.mat33f()
    d = kc.vec3f()
    kc.eig3(a[i], q, d)
    out[i] = d[0] + d[1] + d[2]


@kc.kernel
def matrix_cube(a: kc.array(dtype=kc.mat33d), w: kc.array(dtype=kc.mat33d),
                out: kc.array(dtype=kc.float64)):
    # tr(Wᵀ Q diag(d³) Qᵀ) = tr(Wᵀ A³): the eigenvectors' gradient matters, and the loss does
    # not depend on their signs or order.
    i = kc.tid()
    q, d = kc.eig3(a[i])
    cubes = kc.vec3d(d[0] * d[0] * d[0], d[1] * d[1] * d[1], d[2] * d[2] * d[2])
    out[i] = kc.ddot(w[i], q * kc.diag(cubes) * kc.transpose(q))


@kc.kernel
def svd3_loss(a: kc.array(dtype=kc.mat33d), w: kc.array(dtype=kc.mat33d),
              out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    u, s, v = kc.svd3(a[i])
    sq = kc.vec3d(s[0] * s[0], s[1] * s[1] * kc.float64(2.0), s[2])
    out[i] = kc.ddot(w[i], u * kc.diag(sq) * kc.transpose(v)) + s[0]


@kc.kernel
def svd2_loss(a: kc.array(dtype=kc.mat22d), w: kc.array(dtype=kc.mat22d),
              out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    u, s, v = kc.svd2(a[i])
    sq = kc.vec2d(s[0] * s[0] * kc.float64(3.0), s[1] * s[1])
    out[i] = kc.ddot(w[i], u * kc.diag(sq) * kc.transpose(v)) + s[1]


@kc.kernel
def qr3_loss(a: kc.array(dtype=kc.mat33d), w: kc.array(dtype=kc.mat33d),
             out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    q, r = kc.qr3(a[i])
    out[i] = kc.ddot(w[i], q) + kc.ddot(kc.transpose(w[i]), r * r)


def gradient(kernel, a: np.ndarray, dtype, *extra) -> np.ndarray:
    """The gradient of the sum of `kernel`'s outputs with respect to `a`."""
    scalar = kc.float64 if dtype in (kc.mat33d, kc.mat22d) else kc.float32
    arr = kc.array(a, dtype=dtype, requires_grad=True)
    arr.grad.fill_(np.nan)  # poisoned: every entry must be written
    arr.grad.zero_()
    out = kc.array(np.full(len(a), np.nan), dtype=scalar, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(kernel, len(a), inputs=[arr, *extra, out])
    tape.backward(grads={out: kc.ones(len(a), dtype=scalar)})
    return arr.grad.numpy()


def finite_differences(kernel, a: np.ndarray, dtype, w: np.ndarray, h: float = 1e-6):
    def losses(x):
        out = kc.zeros(len(x), dtype=kc.float64)
        kc.launch(kernel, len(x), inputs=[kc.array(x, dtype=dtype), kc.array(w, dtype=dtype),
                                          out])
        return out.numpy()

    grad = np.zeros_like(a)
    for r in range(a.shape[1]):
        for c in range(a.shape[2]):
            step = np.zeros_like(a)
            step[:, r, c] = h
            grad[:, r, c] = (losses(a + step) - losses(a - step)) / (2 * h)
    return grad


ROTATION = np.array(((1.0, 2.0, 2.0), (2.0, 1.0, -2.0), (-2.0, 2.0, -1.0))) / 3.0


def symmetric_cases(rng) -> np.ndarray:
    random = rng.normal(size=(6, 3, 3))
    return np.array([np.diag([2.0, 2.0, 3.0]), np.eye(3), np.zeros((3, 3)),
                     ROTATION @ np.diag([2.0, 2.0, 3.0]) @ ROTATION.T,
                     np.diag([2.0, 2.0 + 1e-5, 3.0]),
                     *(random + random.transpose(0, 2, 1))])


def test_eigenvalue_losses_have_closed_form_gradients_even_at_repeated_eigenvalues(rng):
    a = symmetric_cases(rng)
    # d0 + d1 + d2 = tr(A) and |d|² = tr(A²) = |A|², whatever the eigenvectors do.
    np.testing.assert_allclose(gradient(eigenvalue_losses, a, kc.mat33d, 0),
                               np.broadcast_to(np.eye(3), a.shape), atol=1e-12)
    np.testing.assert_allclose(gradient(eigenvalue_losses, a, kc.mat33d, 1), 2 * a,
                               atol=1e-10)
    a32 = a.astype(np.float32)
    np.testing.assert_allclose(gradient(eigenvalue_sum_in_place, a32, kc.mat33f),
                               np.broadcast_to(np.eye(3), a.shape), atol=1e-5)


def test_eig3_gradient_through_eigenvectors_matches_finite_differences(rng):
    x = rng.normal(size=(12, 3, 3))
    a = x + x.transpose(0, 2, 1)
    w = rng.normal(size=(12, 3, 3))
    got = gradient(matrix_cube, a, kc.mat33d, kc.array(w, dtype=kc.mat33d))
    # The gradient of tr(Wᵀ A³) over all matrices: one term per place A appears.
    want = np.stack([(ak @ ak @ wk + ak @ wk @ ak + wk @ ak @ ak).T for ak, wk in zip(a, w)])
    # eig3 decomposes symmetric matrices, so only the symmetric part is defined (the
    # derivative along E_ij + E_ji is G_ij + G_ji).
    def symmetric(g):
        return g + g.transpose(0, 2, 1)

    np.testing.assert_allclose(symmetric(got), symmetric(want), rtol=1e-8,
                               atol=1e-8 * np.abs(want).max())


@pytest.mark.parametrize("kernel, size", [(svd3_loss, 3), (qr3_loss, 3), (svd2_loss, 2)],
                         ids=["svd3", "qr3", "svd2"])
def test_decomposition_gradients_match_finite_differences(rng, kernel, size):
    a = rng.normal(size=(10, size, size)) + 2.0 * np.eye(size)
    w = rng.normal(size=(10, size, size))
    dtype = kc.mat33d if size == 3 else kc.mat22d
    got = gradient(kernel, a, dtype, kc.array(w, dtype=dtype))
    want = finite_differences(kernel, a, dtype, w)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
