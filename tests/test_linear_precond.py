"""Block-Jacobi preconditioners of sparse matrices, float16 sparse systems, and re-blocked
sparse copies, against NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
import kernelc.sparse as sp
from kernelc.optim.linear import cg, cr, preconditioner
from tests.conftest import nonzero, poisoned

BLOCK_TYPES = ("block_jacobi_direct", "block_jacobi_sequential", "block_jacobi_tile")


def block_system(rng, nblocks, bs, dtype, coupling=0.05):
    """A block-tridiagonal SPD BSR matrix, its diagonal blocks and its dense form."""
    diag = []
    for _ in range(nblocks):
        c = rng.uniform(-1, 1, (bs, bs))
        diag.append(c @ c.T + bs * np.eye(bs))
    rows, cols, vals = [], [], []
    for i in range(nblocks):
        rows.append(i), cols.append(i), vals.append(diag[i])
        if i + 1 < nblocks:
            off = coupling * rng.uniform(-1, 1, (bs, bs))
            rows += [i, i + 1]
            cols += [i + 1, i]
            vals += [off, off.T]
    A = sp.bsr_from_triplets(nblocks, nblocks, kc.array(np.array(rows, np.int32)),
                             kc.array(np.array(cols, np.int32)),
                             kc.array(np.stack(vals).astype(dtype.np_dtype), dtype=dtype))
    dense = np.zeros(A.shape)
    for r, c, v in zip(rows, cols, vals):
        dense[r * bs:(r + 1) * bs, c * bs:(c + 1) * bs] = v.astype(dtype.np_dtype)
    return A, [d.astype(dtype.np_dtype).astype(np.float64) for d in diag], dense


def single_block(block, dtype):
    mat = kc.types.matrix(shape=block.shape, dtype=dtype)
    A = sp.bsr_zeros(1, 1, mat)
    one = kc.array(np.zeros(1, np.int32))
    sp.bsr_set_from_triplets(A, one, one, kc.array(block[None].astype(dtype.np_dtype), dtype=mat))
    return A


def apply(M, x, alpha=1.0, beta=0.0, y=None, dtype=kc.float64):
    z = poisoned(len(x), dtype.np_dtype)
    y = z if y is None else kc.array(y.astype(dtype.np_dtype), dtype=dtype)
    M.matvec(kc.array(x.astype(dtype.np_dtype), dtype=dtype), y, z, alpha=alpha, beta=beta)
    return z.numpy().astype(np.float64)


@pytest.mark.parametrize("ptype", BLOCK_TYPES)
@pytest.mark.parametrize("dtype", [kc.float32, kc.float64])
def test_block_jacobi_solves_diagonal_blocks(rng, ptype, dtype):
    A, diag, _ = block_system(rng, 5, 4, dtype)
    M = preconditioner(A, ptype)
    assert M.shape == (20, 20)
    x, y = nonzero(rng, 20, np.float64), nonzero(rng, 20, np.float64)
    expected = np.concatenate([np.linalg.solve(d, x[4 * i:4 * i + 4]) for i, d in enumerate(diag)])
    tol = 1e-4 if dtype == kc.float32 else 1e-11
    np.testing.assert_allclose(apply(M, x, dtype=dtype), expected, rtol=tol, atol=tol)
    got = apply(M, x, alpha=0.5, beta=-2.0, y=y, dtype=dtype)
    np.testing.assert_allclose(got, 0.5 * expected - 2.0 * y.astype(dtype.np_dtype), rtol=tol,
                               atol=tol)


def test_block_jacobi_vector_unknowns_and_cg(rng):
    A, _, dense = block_system(rng, 8, 3, kc.float64, coupling=0.2)
    b = nonzero(rng, 24, np.float64)
    for ptype in (*BLOCK_TYPES, "diag"):
        x = kc.zeros(8, dtype=kc.vec3d)
        iterations, _, _ = cg(A, kc.array(b.reshape(8, 3), dtype=kc.vec3d), x,
                              M=preconditioner(A, ptype), tol=1e-10, maxiter=200)
        assert iterations < 200
        np.testing.assert_allclose(dense @ x.numpy().ravel(), b, atol=1e-8)


def test_block_jacobi_unusable_blocks_become_identity():
    x = np.array([1.0, 2.0])
    for ptype in ("block_jacobi_direct", "block_jacobi_sequential"):
        for block in (np.zeros((2, 2)), np.array([[1.0, 2.0], [2.0, 4.0]])):  # singular
            np.testing.assert_array_equal(apply(preconditioner(single_block(block, kc.float64),
                                                               ptype), x), x)
    negative = single_block(-np.eye(2), kc.float64)
    np.testing.assert_array_equal(apply(preconditioner(negative, "block_jacobi_sequential"), x), x)
    asymmetric = np.array([[4.0, 1.0], [0.1, 3.0]])
    A = single_block(asymmetric, kc.float64)
    for ptype in ("block_jacobi_sequential", "block_jacobi_tile"):
        np.testing.assert_array_equal(apply(preconditioner(A, ptype), x), x)
    np.testing.assert_allclose(apply(preconditioner(A, "block_jacobi_direct"), x),
                               np.linalg.solve(asymmetric, x), rtol=1e-12)
    # A small but well-conditioned block is inverted, not taken for singular.
    scaled = single_block(np.diag([1.0, 1e-4]), kc.float32)
    for ptype in ("block_jacobi_direct", "block_jacobi_sequential"):
        np.testing.assert_allclose(apply(preconditioner(scaled, ptype), x, dtype=kc.float32),
                                   [1.0, 2.0e4], rtol=1e-5)


def test_block_jacobi_float16_and_csr_fallback(rng):
    A, diag, _ = block_system(rng, 4, 3, kc.float16)
    x = nonzero(rng, 12, np.float64, 0.5, 1.0)
    expected = np.concatenate([np.linalg.solve(d, x[3 * i:3 * i + 3]) for i, d in enumerate(diag)])
    for ptype in ("block_jacobi_direct", "block_jacobi_sequential"):
        got = apply(preconditioner(A, ptype), x, dtype=kc.float16)
        np.testing.assert_allclose(got, expected, rtol=2e-2, atol=2e-3)
    with pytest.raises(ValueError, match="float32 or float64"):
        preconditioner(A, "block_jacobi_tile")
    csr, _, dense = block_system(rng, 6, 1, kc.float32)
    x = nonzero(rng, 6, np.float64)
    for ptype in BLOCK_TYPES:
        np.testing.assert_allclose(apply(preconditioner(csr, ptype), x, dtype=kc.float32),
                                   x.astype(np.float32) / np.diag(dense).astype(np.float32),
                                   rtol=1e-6)


def test_block_jacobi_errors():
    with pytest.raises(ValueError, match="BsrMatrix"):
        preconditioner(kc.zeros((4, 4)), "block_jacobi_direct")
    with pytest.raises(ValueError, match="square matrix blocks"):
        preconditioner(sp.bsr_zeros(2, 3, kc.types.matrix((3, 2), kc.float64)),
                       "block_jacobi_tile")
    with pytest.raises(ValueError, match="block columns"):
        preconditioner(sp.bsr_zeros(3, 5, kc.mat33d), "block_jacobi_sequential")
    with pytest.raises(ValueError, match="Unsupported preconditioner type"):
        preconditioner(sp.bsr_zeros(3, 3, kc.mat33d), "block_jacobi_bogus")


@pytest.mark.parametrize("solver", [cg, cr])
def test_float16_sparse_solve(rng, solver):
    A, _, dense = block_system(rng, 4, 3, kc.float16)
    b = nonzero(rng, 12, np.float16, 0.5, 1.0)
    for ptype in ("diag", "block_jacobi_direct", "fsai"):
        x = kc.zeros(12, dtype=kc.float16)
        iterations, error, tolerance = solver(A, kc.array(b, dtype=kc.float16), x,
                                              M=preconditioner(A, ptype), tol=1e-2, maxiter=100)
        assert iterations < 100 and error <= tolerance
        residual = dense @ x.numpy().astype(np.float64) - b
        assert np.linalg.norm(residual) / np.linalg.norm(b) < 1.5e-2


def test_float16_sparse_products(rng):
    n, bs = 5, 2
    rows = np.repeat(np.arange(n), 2).astype(np.int32)
    cols = ((rows + np.tile([0, 2], n)) % n).astype(np.int32)
    vals = nonzero(rng, 2 * n * bs * bs, np.float16, -1, 1).reshape(-1, bs, bs)
    A = sp.bsr_from_triplets(n, n, kc.array(rows), kc.array(cols), kc.array(vals, dtype=kc.float16))
    assert A.scalar_type == kc.float16
    dense = np.zeros((n * bs, n * bs))
    for r, c, v in zip(rows, cols, vals):
        dense[r * bs:(r + 1) * bs, c * bs:(c + 1) * bs] = v
    x = nonzero(rng, n * bs, np.float16, -1, 1)
    y = poisoned(n * bs, np.float16)
    sp.bsr_mv(A, kc.array(x, dtype=kc.float16), y)
    np.testing.assert_allclose(y.numpy(), dense @ x, rtol=1e-2, atol=1e-2)
    np.testing.assert_array_equal(_dense(sp.bsr_transposed(A)), dense.T)
    np.testing.assert_allclose(_dense(sp.bsr_mm(A, A)), dense @ dense, rtol=2e-2, atol=2e-2)


def _dense(A):
    br, bc = A.block_shape
    out = np.zeros(A.shape)
    offsets, columns = A.offsets.numpy(), A.columns.numpy()
    values = A.values.numpy().reshape(-1, br, bc)
    for row in range(A.nrow):
        for e in range(offsets[row], offsets[row + 1]):
            out[row * br:(row + 1) * br, columns[e] * bc:(columns[e] + 1) * bc] = values[e]
    return out


@pytest.mark.parametrize("shapes", [((1, 1), (3, 3)), ((3, 3), (1, 1)), ((2, 4), (4, 2))])
def test_copy_reblocks(rng, shapes):
    src_shape, dest_shape = shapes
    n = 12
    a = rng.normal(size=(n, n))
    a[rng.random(a.shape) < 0.7] = 0
    r, c = np.nonzero(a)
    A = sp.bsr_copy(sp.bsr_from_triplets(n, n, kc.array(r.astype(np.int32)),
                                         kc.array(c.astype(np.int32)), kc.array(a[r, c])),
                    block_shape=src_shape)
    B = sp.bsr_copy(-2.0 * A, block_shape=dest_shape)
    assert B.block_shape == dest_shape and B.shape == (n, n)
    np.testing.assert_array_equal(_dense(B), -2.0 * a)
    # A new block exists wherever an old one overlaps it.
    src_blocks = np.zeros((n, n), bool)
    offsets, columns = A.offsets.numpy(), A.columns.numpy()
    for row in range(A.nrow):
        for e in range(offsets[row], offsets[row + 1]):
            src_blocks[row * src_shape[0]:(row + 1) * src_shape[0],
                       columns[e] * src_shape[1]:(columns[e] + 1) * src_shape[1]] = True
    expected_blocks = src_blocks.reshape(n // dest_shape[0], dest_shape[0], n // dest_shape[1],
                                         dest_shape[1]).any(axis=(1, 3))
    assert B.nnz == expected_blocks.sum()
    with pytest.raises(ValueError, match="evenly divide"):
        sp.bsr_copy(A, block_shape=(5, 5))


def test_status_codes():
    assert (sp.BSR_STATUS_SUCCESS, sp.BSR_STATUS_ROW_CAPACITY_EXCEEDED) == (0, 1)
