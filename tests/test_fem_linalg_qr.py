"""`fem.linalg`'s Householder QR, Hessenberg reduction, triangular solve and QR-algorithm
eigen-decompositions against NumPy references, on random and degenerate matrices.

Warp's conventions, pinned here: every column gets a reflection, the last one included, so
`R`'s diagonal follows LAPACK's (`np.linalg.qr`) except that the last entry changes sign;
`householder_make_hessenberg` leaves the first row and column of `Q` as the identity's; the
eigen-decompositions return eigenvectors as rows and do not sort the eigenvalues.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import kernelc as kc
import kernelc.fem as fem

SIZES = (2, 3, 4)
DTYPES = (np.float32, np.float64)
SCALAR = {np.float16: kc.float16, np.float32: kc.float32, np.float64: kc.float64}
TOL = {np.float16: 3e-2, np.float32: 2e-5, np.float64: 1e-12}  # relative to the data's size
EIGEN_TOL = {np.float16: 1e-3, np.float32: 1e-7, np.float64: 1e-14}  # the funcs' `tol`
TINY = {np.float32: 1e-30, np.float64: 1e-160}  # squares underflow: the rescaling paths


@kc.kernel
def qr_kernel(a: kc.array(dtype=Any), q: kc.array(dtype=Any), r: kc.array(dtype=Any)):
    i = kc.tid()
    Q, R = fem.linalg.householder_qr_decomposition(a[i])
    q[i] = Q
    r[i] = R


@kc.kernel
def hessenberg_kernel(a: kc.array(dtype=Any), q: kc.array(dtype=Any), h: kc.array(dtype=Any)):
    i = kc.tid()
    Q, H = fem.linalg.householder_make_hessenberg(a[i])
    q[i] = Q
    h[i] = H


@kc.kernel
def solve_kernel(r: kc.array(dtype=Any), b: kc.array(dtype=Any), x: kc.array(dtype=Any)):
    i = kc.tid()
    x[i] = fem.linalg.solve_triangular(r[i], b[i])


@kc.kernel
def eigen_kernel(a: kc.array(dtype=Any), tol: Any, ev: kc.array(dtype=Any),
                 p: kc.array(dtype=Any)):
    i = kc.tid()
    values, vectors = fem.linalg.symmetric_eigenvalues_qr(a[i], tol)
    ev[i] = values
    p[i] = vectors


@kc.kernel
def tridiagonal_kernel(d: kc.array(dtype=Any), lower: kc.array(dtype=Any),
                       q: kc.array(dtype=Any), tol: Any, ev: kc.array(dtype=Any),
                       p: kc.array(dtype=Any)):
    i = kc.tid()
    values, vectors = fem.linalg.tridiagonal_symmetric_eigenvalues_qr(d[i], lower[i], q[i], tol)
    ev[i] = values
    p[i] = vectors


def _types(n: int, dtype: type) -> tuple[Any, Any]:
    return kc.types.matrix((n, n), SCALAR[dtype]), kc.types.vector(n, SCALAR[dtype])


def _run(kernel: Any, inputs: list, outputs: list[Any]) -> list[np.ndarray]:
    """Launches `kernel` over the rows of `inputs` ((NumPy data, kernelc value type) pairs;
    scalars pass as they are) and returns its NaN-poisoned `outputs` (one kernelc value
    type each) as float64 NumPy arrays."""
    count = next(x[0].shape[0] for x in inputs if isinstance(x, tuple))
    args = [kc.array(x[0], dtype=x[1]) if isinstance(x, tuple) else x for x in inputs]
    outs = [kc.full(count, np.nan, dtype=t) for t in outputs]
    kc.launch(kernel, count, args + outs)
    return [o.numpy().astype(np.float64) for o in outs]


def _random_orthogonal(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.linalg.qr(rng.normal(size=(n, n)))[0]


def _tridiagonal(d: np.ndarray, lower: np.ndarray) -> np.ndarray:
    n = d.shape[-1]
    t = np.zeros(d.shape + (n,))
    idx = np.arange(n)
    t[..., idx, idx] = d
    t[..., idx[1:], idx[:-1]] = lower[..., : n - 1]
    t[..., idx[:-1], idx[1:]] = lower[..., : n - 1]
    return t


def _assert_orthogonal(q: np.ndarray, tol: float) -> None:
    eye = np.eye(q.shape[-1])
    np.testing.assert_allclose(q @ q.transpose(0, 2, 1), np.broadcast_to(eye, q.shape),
                               atol=tol)


def _assert_eigen(a: np.ndarray, ev: np.ndarray, p: np.ndarray, tol: float) -> None:
    """`ev` are a's eigenvalues (any order), `p`'s rows the matching orthonormal vectors."""
    scale = max(1.0, np.abs(a).max())
    np.testing.assert_allclose(np.sort(ev, axis=1), np.linalg.eigvalsh(a), atol=tol * scale)
    _assert_orthogonal(p, tol)
    np.testing.assert_allclose(p.transpose(0, 2, 1) @ (ev[:, :, None] * p), a,
                               atol=tol * scale)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_householder_qr_matches_numpy(rng, n, dtype):
    M, _ = _types(n, dtype)
    a = rng.uniform(-2.0, 2.0, (24, n, n)).astype(dtype)
    q, r = _run(qr_kernel, [(a, M)], [M, M])
    q_np, r_np = np.linalg.qr(a.astype(np.float64))
    # LAPACK reflects the first n - 1 columns the same way and leaves the last entry alone.
    flip = np.ones(n)
    flip[-1] = -1.0
    tol = TOL[dtype]
    np.testing.assert_allclose(r, flip[:, None] * r_np, atol=2 * tol)
    np.testing.assert_allclose(q, q_np * flip, atol=2 * tol)
    np.testing.assert_allclose(q @ r, a, atol=tol)
    np.testing.assert_allclose(np.tril(r, -1), 0.0, atol=tol)
    _assert_orthogonal(q, tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_householder_qr_of_degenerate_matrices(rng, dtype):
    n = 4
    M, _ = _types(n, dtype)
    base = rng.uniform(-2.0, 2.0, (n, n))
    a = np.stack([np.zeros((n, n)), base, base, np.outer(base[0], base[1]), np.eye(n),
                  base * TINY[dtype], base]).astype(dtype)
    a[1][:, 0] = 0.0  # a zero first column
    a[2][:, 2] = 0.0  # a zero middle column
    q, r = _run(qr_kernel, [(a, M)], [M, M])
    tol = TOL[dtype]
    np.testing.assert_array_equal(q[0], np.eye(n))  # nothing to reflect
    np.testing.assert_array_equal(r[0], 0.0)
    np.testing.assert_array_equal(r[1][:, 0], 0.0)  # the zero column is skipped
    for k in range(1, 5):
        _assert_orthogonal(q[k : k + 1], tol)
        np.testing.assert_allclose(q[k] @ r[k], a[k], atol=tol * 4)
        np.testing.assert_allclose(np.tril(r[k], -1), 0.0, atol=tol * 4)
    # R(c A) = c R(A) and Q(c A) = Q(A) for c > 0, also where |A|² underflows.
    np.testing.assert_allclose(q[5], q[6], atol=tol)
    np.testing.assert_allclose(r[5] / TINY[dtype], r[6], atol=tol * 4)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_hessenberg_matches_the_krylov_basis(rng, n, dtype):
    M, _ = _types(n, dtype)
    a = rng.uniform(-2.0, 2.0, (24, n, n)).astype(dtype)
    a[12:] = a[12:] + a[12:].transpose(0, 2, 1)  # symmetric: H is tridiagonal
    q, h = _run(hessenberg_kernel, [(a, M)], [M, M])
    tol = 10 * TOL[dtype]
    a64 = a.astype(np.float64)
    np.testing.assert_array_equal(q[:, 0, :], np.broadcast_to(np.eye(n)[0], (24, n)))
    np.testing.assert_array_equal(q[:, :, 0], np.broadcast_to(np.eye(n)[0], (24, n)))
    _assert_orthogonal(q, tol)
    np.testing.assert_allclose(q @ h @ q.transpose(0, 2, 1), a64, atol=tol)
    np.testing.assert_allclose(np.tril(h, -2), 0.0, atol=tol)
    np.testing.assert_allclose(np.triu(h[12:], 2), 0.0, atol=tol)
    # With Q e0 = e0, Q's columns are (up to sign) the orthonormalised Krylov vectors
    # e0, A e0, A² e0, ..., and H is A in that basis.
    krylov = np.zeros_like(a64)
    krylov[:, 0, 0] = 1.0
    for k in range(1, n):
        krylov[:, :, k] = np.einsum("nij,nj->ni", a64, krylov[:, :, k - 1])
    basis = np.linalg.qr(krylov)[0]
    signs = np.sign(np.einsum("nij,nij->nj", basis, q))
    basis = basis * signs[:, None, :]
    np.testing.assert_allclose(q, basis, atol=tol)
    np.testing.assert_allclose(h, basis.transpose(0, 2, 1) @ a64 @ basis, atol=tol)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_triangular_matches_numpy(rng, n, dtype):
    M, V = _types(n, dtype)
    r = rng.uniform(-2.0, 2.0, (24, n, n))
    diag = rng.uniform(0.5, 2.0, (24, n)) * rng.choice([-1.0, 1.0], (24, n))
    r[:, np.arange(n), np.arange(n)] = diag  # the strictly lower part is not read
    b = rng.uniform(-2.0, 2.0, (24, n))
    r[0] = 0.0  # all pivots zero: x = 0
    r[1][n // 2, n // 2] = 0.0  # one zero pivot
    r, b = r.astype(dtype), b.astype(dtype)
    (x,) = _run(solve_kernel, [(r, M), (b, V)], [V])
    upper = np.triu(r.astype(np.float64))
    expected = np.linalg.solve(upper[2:], b[2:, :, None].astype(np.float64))[..., 0]
    np.testing.assert_allclose(x[2:], expected, rtol=10 * TOL[dtype], atol=10 * TOL[dtype])
    np.testing.assert_array_equal(x[0], 0.0)
    # A zero pivot gives a zero component; the other rows are solved as if its row and
    # column were not there.
    j = n // 2
    keep = [k for k in range(n) if k != j]
    reduced = np.linalg.solve(upper[1][np.ix_(keep, keep)], b[1][keep].astype(np.float64))
    assert x[1][j] == 0.0
    np.testing.assert_allclose(x[1][keep], reduced, rtol=10 * TOL[dtype], atol=10 * TOL[dtype])


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_symmetric_eigenvalues_qr_matches_numpy(rng, n, dtype):
    M, V = _types(n, dtype)
    a = rng.uniform(-2.0, 2.0, (32, n, n))
    a = (a + a.transpose(0, 2, 1)).astype(dtype)
    ev, p = _run(eigen_kernel, [(a, M), SCALAR[dtype](EIGEN_TOL[dtype])], [V, M])
    _assert_eigen(a.astype(np.float64), ev, p, 10 * TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_symmetric_eigenvalues_qr_of_degenerate_matrices(rng, dtype):
    n = 4
    M, V = _types(n, dtype)
    base = rng.uniform(-2.0, 2.0, (n, n))
    base = base + base.T
    rotation = _random_orthogonal(rng, n)
    diagonal = np.array([0.5, -1.5, 2.0, 0.25])
    a = np.stack([np.zeros((n, n)), np.diag(diagonal), 3.0 * np.eye(n),
                  rotation @ np.diag([1.0, 1.0, 4.0, 4.0]) @ rotation.T,
                  rotation @ np.diag([-2.0, 1.0, 1.0, 1.0]) @ rotation.T,
                  np.ones((n, n)), base * TINY[dtype], base]).astype(dtype)
    ev, p = _run(eigen_kernel, [(a, M), SCALAR[dtype](EIGEN_TOL[dtype])], [V, M])
    tol = 10 * TOL[dtype]
    np.testing.assert_array_equal(ev[0], 0.0)
    np.testing.assert_array_equal(p[0], np.eye(n))
    # Already diagonal: nothing to rotate, the diagonal comes back in its order (through a
    # division by and product with its largest magnitude).
    np.testing.assert_array_equal(p[1], np.eye(n))
    np.testing.assert_allclose(ev[1], diagonal, rtol=4 * np.finfo(dtype).eps)
    np.testing.assert_array_equal(p[2], np.eye(n))
    np.testing.assert_allclose(ev[2], 3.0, rtol=4 * np.finfo(dtype).eps)
    _assert_eigen(a[3:6].astype(np.float64), ev[3:6], p[3:6], tol)
    np.testing.assert_allclose(ev[6] / TINY[dtype], ev[7], rtol=tol, atol=tol)
    _assert_orthogonal(p[6:7], tol)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_tridiagonal_symmetric_eigenvalues_qr_matches_numpy(rng, n, dtype):
    M, V = _types(n, dtype)
    count = 32
    d = rng.uniform(-2.0, 2.0, (count, n))
    lower = rng.uniform(-2.0, 2.0, (count, n))
    lower[:, -1] = 0.0  # not part of the matrix
    if n > 2:
        lower[1, 1] = 0.0  # two independent blocks
    lower[2] = 0.0  # already diagonal
    d[3] = 1.0  # repeated diagonal entries
    q0 = np.stack([np.eye(n)] * (count // 2) + [_random_orthogonal(rng, n)
                                                 for _ in range(count // 2)])
    d, lower, q0 = d.astype(dtype), lower.astype(dtype), q0.astype(dtype)
    ev, p = _run(tridiagonal_kernel, [(d, V), (lower, V), (q0, M),
                                      SCALAR[dtype](EIGEN_TOL[dtype])], [V, M])
    t = _tridiagonal(d.astype(np.float64), lower.astype(np.float64))
    # The rotations act on Q's rows: P = (eigenvectors of T as rows) Q0.
    q64 = q0.astype(np.float64)
    tol = 10 * TOL[dtype]
    _assert_eigen(q64.transpose(0, 2, 1) @ t @ q64, ev, p, tol)
    np.testing.assert_allclose(ev[2], d[2], rtol=4 * np.finfo(dtype).eps)
    np.testing.assert_array_equal(p[2], np.eye(n))


@pytest.mark.parametrize("dtype", DTYPES)
def test_tridiagonal_tolerance_and_short_lower_diagonal(rng, dtype):
    n = 4
    M, V = _types(n, dtype)
    W = kc.types.vector(n - 1, SCALAR[dtype])
    d = rng.uniform(1.0, 2.0, (8, n)).astype(dtype)
    lower = rng.uniform(-1.0, 1.0, (8, n)).astype(dtype)
    lower[:, -1] = 0.0
    q0 = np.broadcast_to(np.eye(n), (8, n, n)).astype(dtype)
    ev, p = _run(tridiagonal_kernel, [(d, V), (lower, V), (q0, M), SCALAR[dtype](1.0)], [V, M])
    # Every coupling is below tol = 1 times its diagonal neighbours' sum: all deflate at once.
    np.testing.assert_allclose(ev, d, rtol=4 * np.finfo(dtype).eps)
    np.testing.assert_array_equal(p, q0)
    tol = SCALAR[dtype](EIGEN_TOL[dtype])
    full = _run(tridiagonal_kernel, [(d, V), (lower, V), (q0, M), tol], [V, M])
    short = _run(tridiagonal_kernel, [(d, V), (lower[:, :-1].copy(), W), (q0, M), tol], [V, M])
    for expected, got in zip(full, short):
        np.testing.assert_array_equal(got, expected)
    _assert_eigen(_tridiagonal(d.astype(np.float64), lower.astype(np.float64)), *full,
                  10 * TOL[dtype])


def test_float16_matrices(rng):
    n = 3
    M, V = _types(n, np.float16)
    a = rng.uniform(-2.0, 2.0, (16, n, n)).astype(np.float16)
    q, r = _run(qr_kernel, [(a, M)], [M, M])
    np.testing.assert_allclose(q @ r, a, atol=TOL[np.float16])
    s = (a + a.transpose(0, 2, 1)).astype(np.float16)
    ev, p = _run(eigen_kernel, [(s, M), kc.float16(EIGEN_TOL[np.float16])], [V, M])
    _assert_eigen(s.astype(np.float64), ev, p, 2 * TOL[np.float16])


@kc.kernel
def qr_of_a_vector(v: kc.array(dtype=kc.vec3), out: kc.array(dtype=kc.mat33)):
    Q, R = fem.linalg.householder_qr_decomposition(v[0])
    out[0] = Q


def test_a_vector_argument_is_a_kernel_error():
    with pytest.raises(kc.KernelError) as info:
        kc.launch(qr_of_a_vector, 1, [kc.zeros(1, dtype=kc.vec3), kc.zeros(1, dtype=kc.mat33)])
    line = inspect.getsourcelines(qr_of_a_vector.func)[1] + 2
    message = str(info.value)
    assert f"test_fem_linalg_qr.py:{line}:12" in message
    assert "householder_qr_decomposition" in message and "vec3" in message
