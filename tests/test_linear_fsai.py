"""FSAI, the factorized sparse approximate inverse preconditioner, against NumPy
references (local solves, exact inverses, greedy support selection)."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
import kernelc.sparse as sp
from kernelc.optim.linear import FSAI, cg, preconditioner
from tests.conftest import nonzero


def matrix(a, dtype=kc.float64, block=1):
    rows, cols = np.nonzero(a)
    A = sp.bsr_from_triplets(a.shape[0], a.shape[1], kc.array(rows.astype(np.int32)),
                             kc.array(cols.astype(np.int32)),
                             kc.array(a[rows, cols].astype(dtype.np_dtype), dtype=dtype))
    return sp.bsr_copy(A, block_shape=(block, block)) if block != 1 else A


def dense(A):
    out = np.zeros(A.shape)
    offsets, columns, values = A.offsets.numpy(), A.columns.numpy(), A.values.numpy()
    for row in range(A.nrow):
        out[row, columns[offsets[row]:offsets[row + 1]]] = values[offsets[row]:offsets[row + 1]]
    return out


def path(n):
    return 3 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)


def spd(rng, n, density=0.35):
    a = rng.normal(size=(n, n))
    a[rng.random(a.shape) > density] = 0
    a = a + a.T
    np.fill_diagonal(a, np.abs(a).sum(axis=1) + 1.0)
    return a


def check_local_solves(pre, a, tol):
    """Row i of G is z / sqrt(z_i) with A[S, S] z = e_i on its support S."""
    g = dense(pre.G)
    np.testing.assert_array_equal(dense(pre.GT), g.T)
    np.testing.assert_array_equal(g, np.tril(g))
    offsets, columns = pre.G.offsets.numpy(), pre.G.columns.numpy()
    for row in range(len(a)):
        support = columns[offsets[row]:offsets[row + 1]]
        assert support[-1] == row and np.all(np.diff(support) > 0)
        rhs = np.zeros(len(support))
        rhs[-1] = 1
        z = np.linalg.solve(a[np.ix_(support, support)], rhs)
        np.testing.assert_allclose(g[row, support], z / np.sqrt(z[-1]), rtol=tol, atol=tol)
    return g


@pytest.mark.parametrize("dtype", [kc.float32, kc.float64])
def test_full_pattern_is_exact_inverse(rng, dtype):
    r = rng.normal(size=(8, 8))
    a = r @ r.T + np.eye(8)
    tol = 2e-5 if dtype == kc.float32 else 1e-10
    for step in (1, 3):
        pre = FSAI(matrix(a, dtype), max_row_size=8, kap_tolerance=0, max_step_size=step)
        g = check_local_solves(pre, a, tol)
        np.testing.assert_allclose(g.T @ g, np.linalg.inv(a), rtol=tol, atol=tol)


@pytest.mark.parametrize("block", [1, 3])
def test_greedy_supports(rng, block):
    a = spd(rng, 18)
    scale = np.geomspace(0.01, 100, 18)
    a *= scale[:, None] * scale[None, :]
    eq = a / np.sqrt(np.outer(np.diag(a), np.diag(a)))
    for step, tolerance in ((1, 0.0), (3, 0.003), (1, 0.1)):
        g = dense(FSAI(matrix(a, block=block), max_row_size=6, kap_tolerance=tolerance,
                       max_step_size=step).G)
        for i in range(18):  # the same greedy search, in NumPy
            support, z = [i], np.ones(1)
            while len(support) < 6:
                frontier = sorted(set(np.flatnonzero(np.any(a[support] != 0, axis=0)))
                                  - set(support))
                ranked = sorted(((abs(eq[c, support] @ z), c) for c in frontier if c < i),
                                key=lambda t: (-t[0], t[1]))
                picked = [c for s, c in ranked if s > 0][:min(step, 6 - len(support))]
                if not picked:
                    break
                support += picked
                old = z[0]
                rhs = np.zeros(len(support))
                rhs[0] = 1
                z = np.linalg.solve(eq[np.ix_(support, support)], rhs)
                if tolerance > 0 and 1 - old / z[0] <= tolerance:
                    break
            expected = np.zeros(18)
            expected[support] = z / np.sqrt(z[0] * np.diag(a)[support])
            np.testing.assert_allclose(g[i], expected, rtol=1e-10, atol=1e-12)


def test_apply_with_aliases_and_vectors(rng):
    a = path(12)
    pre = FSAI(matrix(a, block=3), max_row_size=4)
    g = dense(pre.G)
    x, y = nonzero(rng, 12, np.float64), nonzero(rng, 12, np.float64)
    expected = 0.7 * g.T @ g @ x - 1.2 * y
    for alias in ("none", "xz", "yz"):
        xa = kc.array(x.reshape(4, 3), dtype=kc.vec3d)
        ya = kc.array(y.reshape(4, 3), dtype=kc.vec3d)
        za = {"xz": xa, "yz": ya}.get(alias, kc.array(np.full((4, 3), np.nan), dtype=kc.vec3d))
        pre.matvec(xa, ya, za, 0.7, -1.2)
        np.testing.assert_allclose(za.numpy().ravel(), expected, rtol=1e-12, atol=1e-12)


def test_pivot_floor_truncates_rows():
    a = np.array([[1.0, 1 - 1e-14, 0], [1 - 1e-14, 1.0, 0], [0, 0, 2.0]])
    pre = FSAI(matrix(a), max_row_size=2)
    assert pre.truncated_rows == 1
    np.testing.assert_allclose(dense(pre.G), np.diag(1 / np.sqrt(np.diag(a))))


@pytest.mark.parametrize("storage", [kc.float64, kc.float32])
def test_refit_and_rejected_updates(rng, storage):
    r = rng.normal(size=(9, 9))
    a = r @ r.T + 3 * np.eye(9)
    b = a + np.diag(np.arange(9.0))
    raw, updated = matrix(a, block=3), matrix(b, block=3)
    pre = FSAI(raw, max_row_size=5, reuse_pattern=True, factor_dtype=storage)
    assert pre.G.scalar_type == storage
    assert pre.update(updated) is pre
    tol = 1e-6 if storage == kc.float32 else 1e-10
    g = check_local_solves(pre, b, tol)
    zeros = sp.bsr_copy(updated)
    zeros.values.zero_()
    moved = sp.bsr_copy(updated)
    columns = moved.columns.numpy()
    columns[0] += 1
    moved.columns.assign(columns)
    for invalid, message in ((zeros, "positive diagonals"), (moved, "sparsity"),
                             (matrix(np.eye(3)), "shape, dtype"), (np.eye(9), "BSR")):
        with pytest.raises(ValueError, match=message):
            pre.update(invalid)
        np.testing.assert_array_equal(dense(pre.G), g)
        np.testing.assert_array_equal(dense(pre.GT), g.T)
    assert pre.source is updated


def test_regularized_refit_keeps_healthy_rows():
    healthy = np.array([[1.0, 0.5], [0.5, 1.0]])
    a = np.kron(np.eye(2), healthy)
    bad = a.copy()
    bad[:2, :2] = 1.0  # singular pair
    pre = FSAI(matrix(a), max_row_size=2, reuse_pattern=True, regularize_refit=True)
    pre.update(matrix(bad))
    np.testing.assert_array_equal(pre.update_status.numpy(), [0, 0, 0, 1])
    np.testing.assert_allclose(dense(pre.G)[2:, 2:], dense(FSAI(matrix(a), max_row_size=2).G)[2:, 2:])
    strict = FSAI(matrix(a), max_row_size=2, reuse_pattern=True)
    with pytest.raises(ValueError, match="SPD"):
        strict.update(matrix(bad))


def test_deferred_pattern_matches_construction():
    a = path(12)
    raw = matrix(a)
    values = raw.values.numpy().copy()
    raw.values.zero_()
    pre = FSAI(raw, max_row_size=5, reuse_pattern=True, defer_pattern=True)
    assert pre.truncated_rows is None and pre.pattern_ready.numpy()[0] == 0
    np.testing.assert_array_equal(dense(pre.G), np.eye(12))
    raw.values.assign(values)
    pre.update()
    assert pre.pattern_ready.numpy()[0] == 1
    reference = FSAI(matrix(a), max_row_size=5)
    np.testing.assert_array_equal(dense(pre.G), dense(reference.G))
    np.testing.assert_array_equal(dense(pre.GT), dense(reference.GT))


def test_cg_with_fsai(rng):
    a = spd(rng, 30, 0.2)
    b = nonzero(rng, 30, np.float64)
    x = kc.zeros(30, dtype=kc.float64)
    M = preconditioner(matrix(a), "fsai")
    assert isinstance(M, FSAI)
    iterations, _, _ = cg(matrix(a), kc.array(b), x, M=M, tol=1e-12, maxiter=100)
    assert iterations < 30
    np.testing.assert_allclose(a @ x.numpy(), b, atol=1e-9)


def test_invalid_arguments():
    raw = matrix(np.eye(3))
    for option, value in (("max_row_size", 0), ("max_row_size", 65), ("max_step_size", 1.5),
                          ("kap_tolerance", 1), ("pivot_floor", 0),
                          ("factor_dtype", kc.float16)):
        with pytest.raises(ValueError, match=option):
            FSAI(raw, **{option: value})
    with pytest.raises(ValueError, match="square"):
        FSAI(sp.bsr_zeros(2, 3, kc.float64))
    with pytest.raises(ValueError, match="reuse_pattern"):
        FSAI(raw).update()
    with pytest.raises(ValueError, match="defer_pattern"):
        FSAI(raw, defer_pattern=True)
    for diagonal in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="positive diagonals"):
            FSAI(matrix(np.diag([1.0, diagonal])))
    for magnitude in (1e-100, 1e100):
        with pytest.raises(ValueError, match="positive diagonal"):
            FSAI(matrix(np.eye(3) * magnitude), factor_dtype=kc.float32)


def test_float16_factor(rng):
    r = rng.normal(size=(6, 6))
    a = (r @ r.T + 4 * np.eye(6)).astype(np.float16).astype(np.float64)
    pre = FSAI(matrix(a, kc.float16, 3), max_row_size=6, kap_tolerance=0)
    assert pre.G.scalar_type == kc.float16 and pre.scalar_type == kc.float16
    g = check_local_solves(pre, a, 1e-2)
    inverse = np.linalg.inv(a)
    assert np.linalg.norm(g.T @ g - inverse) / np.linalg.norm(inverse) < 1e-2


def test_kernels_compile_for_cuda_without_a_gpu():
    pytest.importorskip("cuda.bindings.nvrtc", reason="needs the NVRTC bindings")
    from kernelc.optim import linear_fsai_kernels as F
    from kernelc.optim import linear_precond_kernels as P
    from kernelc.sparse import reblock

    def arr(t, ndim=1):
        return kc.types.ArrayType(t, ndim)

    f64, ints, blocks, vecs = kc.float64, arr(kc.int32), arr(kc.mat33d), arr(kc.vec3d)
    cases = [(P.qr_inverse_kernel, [blocks, f64, blocks]), (P.ldlt_kernel, [blocks, f64, blocks]),
             (P.cholesky_kernel, [blocks, f64, blocks]),
             (P.inverse_mv_kernel, [blocks, vecs, vecs, vecs, f64, f64]),
             (P.ldlt_mv_kernel, [blocks, vecs, vecs, vecs, f64, f64]),
             (P.cholesky_mv_kernel, [blocks, vecs, vecs, vecs, f64, f64]),
             (F.diagonal_scale_kernel, [ints, ints, arr(f64, 3), arr(f64), ints, kc.int32]),
             (F.select_kernel(f64, 4, 2), None), (F.refit_kernel(f64, kc.float32, 4, True), None),
             (F.factor_mv_kernel, [ints, ints, arr(kc.float32), arr(f64), arr(f64), arr(f64),
                                   f64, f64]),
             (F.commit_kernel, [arr(f64), ints, ints, arr(f64), arr(f64), kc.int32]),
             (reblock._copy_subblocks_kernel, [f64, ints, ints, kc.vec2i, kc.vec2i, arr(f64, 3),
                                               ints, ints, arr(f64, 3)])]
    for kernel, types in cases:
        compiled = kc.compile(kernel, target="cuda", arch=90,
                              arg_types=types or list(kernel.param_types))
        assert compiled.format == "cubin" and compiled.binary, kernel.__name__
