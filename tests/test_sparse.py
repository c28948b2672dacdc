"""kernelc.sparse: BSR matrices against dense NumPy references and against Warp 1.19."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
import kernelc.sparse as sp
from kernelc.optim import linear
from tests.conftest import nonzero, poisoned, run_warp


def dense(A) -> np.ndarray:
    """The dense NumPy matrix of a BsrMatrix, from its offsets, columns and values."""
    br, bc = A.block_shape
    out = np.zeros(A.shape, dtype=A.scalar_type.np_dtype)
    offsets = A.offsets.numpy()
    values = A.values.numpy().reshape(-1, br, bc)
    columns = A.columns.numpy()
    for row in range(A.nrow):
        for block in range(offsets[row], offsets[row + 1]):
            col = columns[block]
            out[row * br:(row + 1) * br, col * bc:(col + 1) * bc] = values[block]
    return out


def reference(nrow, ncol, rows, cols, values, block=(1, 1)) -> np.ndarray:
    """Dense sum of in-range triplets (zero blocks contribute nothing anyway)."""
    br, bc = block
    out = np.zeros((nrow * br, ncol * bc), dtype=values.dtype)
    for r, c, v in zip(rows, cols, values.reshape(-1, br, bc)):
        if 0 <= r < nrow and 0 <= c < ncol:
            out[r * br:(r + 1) * br, c * bc:(c + 1) * bc] += v
    return out


def check_structure(A) -> None:
    offsets = A.offsets.numpy()
    assert offsets[0] == 0 and offsets[-1] == A.nnz and np.all(np.diff(offsets) >= 0)
    columns = A.columns.numpy()[: A.nnz]
    for row in range(A.nrow):
        row_cols = columns[offsets[row]:offsets[row + 1]]
        assert np.all(np.diff(row_cols) > 0), "columns sorted and unique within a row"


def random_triplets(rng, nrow, ncol, n, dtype=np.float32, block=(1, 1)):
    rows = rng.integers(0, nrow, n).astype(np.int32)
    cols = rng.integers(0, ncol, n).astype(np.int32)
    values = nonzero(rng, n * block[0] * block[1], dtype).reshape(n, *block)
    return rows, cols, values.reshape(n) if block == (1, 1) else values


def test_from_triplets_duplicates_invalid_and_zeros():
    rows = np.array([0, 2, 1, 0, 2, 0, 5, -1, 2, 3], np.int32)
    cols = np.array([1, 0, 2, 1, 2, 0, 0, 1, 2, 9], np.int32)
    vals = np.array([1, 2, 3, 4, 5, 0, 7, 8, -5, 1], np.float32)
    A = sp.bsr_from_triplets(4, 3, kc.array(rows), kc.array(cols), kc.array(vals))
    assert (A.nrow, A.ncol, A.shape, A.block_shape, A.block_size) == (4, 3, (4, 3), (1, 1), 1)
    assert A.scalar_type == kc.float32 and A.dtype == kc.float32 and A.device == kc.get_device()
    assert A.nnz_sync() == 4
    # (0, 0) = 0 pruned; (2, 2) = 5 - 5 kept as an explicit zero; rows 3 and out-of-range ones.
    np.testing.assert_array_equal(A.offsets.numpy(), [0, 1, 2, 4, 4])
    np.testing.assert_array_equal(A.columns.numpy()[:4], [1, 2, 0, 2])
    np.testing.assert_array_equal(A.values.numpy()[:4], [5, 3, 2, 0])
    B = sp.bsr_from_triplets(4, 3, kc.array(rows), kc.array(cols), kc.array(vals),
                             prune_numerical_zeros=False)
    np.testing.assert_array_equal(B.columns.numpy()[: B.nnz], [0, 1, 2, 0, 2])
    # -0.0 is a zero too; values=None keeps only the topology.
    C = sp.bsr_zeros(2, 2, kc.float64)
    sp.bsr_set_from_triplets(C, kc.array(np.array([0, 1], np.int32)),
                             kc.array(np.array([1, 1], np.int32)),
                             kc.array(np.array([-0.0, 2.0])))
    np.testing.assert_array_equal(C.offsets.numpy(), [0, 0, 1])
    sp.bsr_set_from_triplets(C, kc.array(rows), kc.array(cols), count=kc.array(
        np.array([3], np.int32)))
    # count=3: (0, 1) is kept, (2, 0) and (1, 2) are out of C's 2 x 2 blocks.
    np.testing.assert_array_equal(C.offsets.numpy(), [0, 1, 1])
    np.testing.assert_array_equal(C.columns.numpy()[: C.nnz], [1])


@pytest.mark.parametrize("block,dtype", [((1, 1), np.float32), ((1, 1), np.float64),
                                         ((2, 2), np.float64), ((2, 3), np.float32),
                                         ((3, 1), np.float32)])
def test_from_triplets_random(rng, block, dtype):
    nrow, ncol = 7, 5
    rows, cols, values = random_triplets(rng, nrow, ncol, 40, dtype, block)
    scalar = kc.types.from_numpy_dtype(dtype)
    block_type = scalar if block == (1, 1) else kc.types.matrix(shape=block, dtype=scalar)
    vals = kc.array(values if block != (1, 1) else values.reshape(-1), dtype=block_type)
    A = sp.bsr_from_triplets(nrow, ncol, kc.array(rows), kc.array(cols), vals)
    check_structure(A)
    want = reference(nrow, ncol, rows, cols, values, block)
    np.testing.assert_allclose(dense(A), want, rtol=1e-5)
    # 3-d scalar values give the same matrix.
    B = sp.bsr_from_triplets(nrow, ncol, kc.array(rows), kc.array(cols),
                             kc.array(values.reshape(-1, *block), dtype=scalar))
    assert B.block_shape == A.block_shape and B.scalar_type == A.scalar_type
    np.testing.assert_array_equal(dense(B), dense(A))


@pytest.mark.parametrize("block", [(1, 1), (2, 3)])
def test_mv(rng, block):
    nrow, ncol = 6, 4
    rows, cols, values = random_triplets(rng, nrow, ncol, 15, np.float64, block)
    rows[rows == 2] = 3  # an empty row
    A = sp.bsr_from_triplets(nrow, ncol, kc.array(rows), kc.array(cols),
                             kc.array(values, dtype=kc.float64))
    M = reference(nrow, ncol, rows, cols, values, block)
    x = nonzero(rng, M.shape[1], np.float64)
    y0 = nonzero(rng, M.shape[0], np.float64)
    y = poisoned(M.shape[0], np.float64)
    sp.bsr_mv(A, kc.array(x), y)  # beta = 0: y is not read
    np.testing.assert_allclose(y.numpy(), M @ x, rtol=1e-12)
    y = kc.array(y0)
    sp.bsr_mv(A, kc.array(x), y, alpha=2.0, beta=-0.5)
    np.testing.assert_allclose(y.numpy(), 2.0 * (M @ x) - 0.5 * y0, rtol=1e-12)
    # transpose, operators, a vector-typed result and scaled matrices
    xt = nonzero(rng, M.shape[0], np.float64)
    yt = poisoned(M.shape[1], np.float64)
    sp.bsr_mv(A, kc.array(xt), yt, transpose=True)
    np.testing.assert_allclose(yt.numpy(), M.T @ xt, rtol=1e-12)
    np.testing.assert_allclose((kc.array(xt) @ A).numpy().reshape(-1), M.T @ xt, rtol=1e-12)
    z = A @ kc.array(x)
    if block[0] > 1:
        assert z.dtype == kc.types.vector(block[0], kc.float64) and z.shape == (nrow,)
    np.testing.assert_allclose(z.numpy().reshape(-1), M @ x, rtol=1e-12)
    np.testing.assert_allclose(((3 * A) @ kc.array(x)).numpy().reshape(-1), 3 * M @ x,
                               rtol=1e-12)
    np.testing.assert_allclose(((-A) @ kc.array(x)).numpy().reshape(-1), -M @ x, rtol=1e-12)


def test_copy_transpose_scale_diag(rng):
    rows, cols, values = random_triplets(rng, 5, 4, 12, np.float32, (2, 3))
    A = sp.bsr_from_triplets(5, 4, kc.array(rows), kc.array(cols),
                             kc.array(values, dtype=kc.float32))
    M = dense(A)
    T = sp.bsr_transposed(A)
    check_structure(T)
    assert T.block_shape == (3, 2) and (T.nrow, T.ncol) == (4, 5)
    np.testing.assert_array_equal(dense(T), M.T)
    np.testing.assert_array_equal(dense((2 * A).transpose().eval()), 2 * M.T)
    C = sp.bsr_copy(A)
    assert C.values.ptr != A.values.ptr
    np.testing.assert_array_equal(dense(C), M)
    D = sp.bsr_copy(A * 0.5, scalar_type=kc.float64)
    assert D.scalar_type == kc.float64
    np.testing.assert_allclose(dense(D), 0.5 * M.astype(np.float64))
    sp.bsr_scale(C, 3.0)
    np.testing.assert_allclose(dense(C), 3 * M, rtol=1e-6)
    C *= 0.0
    assert C.nnz == A.nnz and not dense(C).any()
    # square blocks for the diagonal
    rows, cols, values = random_triplets(rng, 4, 4, 10, np.float64, (2, 2))
    S = sp.bsr_from_triplets(4, 4, kc.array(rows), kc.array(cols),
                             kc.array(values, dtype=kc.float64))
    out = poisoned((4, 2, 2), np.float64)
    out = kc.array(out.numpy(), dtype=kc.types.matrix((2, 2), kc.float64))
    diag = sp.bsr_get_diag(S, out=out)
    MS = dense(S)
    for i in range(4):
        np.testing.assert_array_equal(diag.numpy()[i], MS[2 * i:2 * i + 2, 2 * i:2 * i + 2])


def test_diag_identity():
    I3 = sp.bsr_identity(3, kc.mat33)
    np.testing.assert_array_equal(dense(I3), np.eye(9))
    d = kc.array(np.array([1.5, -2.0, 3.0]), dtype=kc.float64)
    D = sp.bsr_diag(d)
    np.testing.assert_array_equal(dense(D), np.diag([1.5, -2.0, 3.0]))
    R = sp.bsr_diag(kc.float32(2.0), rows_of_blocks=2, cols_of_blocks=3)
    np.testing.assert_array_equal(dense(R), [[2, 0, 0], [0, 2, 0]])
    B = sp.bsr_diag(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), rows_of_blocks=2)
    assert B.block_shape == (2, 2) and B.scalar_type == kc.float32
    np.testing.assert_array_equal(dense(B)[2:, 2:], [[1, 2], [3, 4]])


def test_axpy_and_operators(rng):
    r1, c1, v1 = random_triplets(rng, 6, 6, 14, np.float64)
    r2, c2, v2 = random_triplets(rng, 6, 6, 14, np.float64)
    A = sp.bsr_from_triplets(6, 6, kc.array(r1), kc.array(c1), kc.array(v1))
    B = sp.bsr_from_triplets(6, 6, kc.array(r2), kc.array(c2), kc.array(v2))
    MA, MB = dense(A), dense(B)
    S = A + B
    check_structure(S)
    np.testing.assert_allclose(dense(S), MA + MB, rtol=1e-12)
    np.testing.assert_allclose(dense(A - 2 * B), MA - 2 * MB, rtol=1e-12)
    np.testing.assert_allclose(dense(sp.bsr_axpy(A, sp.bsr_copy(B), alpha=0.5, beta=-1.0)),
                               0.5 * MA - MB, rtol=1e-12)
    np.testing.assert_allclose(dense(sp.bsr_axpy(A)), MA)
    C = sp.bsr_copy(A)
    C += C
    np.testing.assert_allclose(dense(C), 2 * MA)
    C -= B
    np.testing.assert_allclose(dense(C), 2 * MA - MB, rtol=1e-12)
    np.testing.assert_allclose(dense((A / 4).eval()), MA / 4)


@pytest.mark.parametrize("shapes", [((1, 1), (1, 1)), ((2, 3), (3, 2))])
def test_mm(rng, shapes):
    bx, by = shapes
    r1, c1, v1 = random_triplets(rng, 5, 4, 9, np.float64, bx)
    r2, c2, v2 = random_triplets(rng, 4, 6, 9, np.float64, by)
    X = sp.bsr_from_triplets(5, 4, kc.array(r1), kc.array(c1), kc.array(v1, dtype=kc.float64))
    Y = sp.bsr_from_triplets(4, 6, kc.array(r2), kc.array(c2), kc.array(v2, dtype=kc.float64))
    Z = X @ Y
    check_structure(Z)
    np.testing.assert_allclose(dense(Z), dense(X) @ dense(Y), rtol=1e-12, atol=1e-12)
    W = sp.bsr_copy(Z)
    sp.bsr_mm(X, Y, W, alpha=2.0, beta=-1.0)
    np.testing.assert_allclose(dense(W), dense(X) @ dense(Y), rtol=1e-12, atol=1e-12)
    if bx == (1, 1):
        Q = sp.bsr_from_triplets(4, 4, kc.array(r2 % 4), kc.array(c2 % 4), kc.array(v2))
        MQ = dense(Q)
        sp.bsr_mm(Q, Q, Q, beta=1.0)  # aliasing
        np.testing.assert_allclose(dense(Q), MQ @ MQ + MQ, rtol=1e-12)


def test_errors():
    A = sp.bsr_zeros(3, 2, kc.mat22)
    with pytest.raises(ValueError, match=r"Incompatible 'x' vector for bsr_mv: expected 4"):
        sp.bsr_mv(A, kc.zeros(3))
    with pytest.raises(ValueError, match=r"'y' vector.*expected 6"):
        sp.bsr_mv(A, kc.zeros(4), kc.zeros(5))
    with pytest.raises(ValueError, match="scalar type is float64"):
        sp.bsr_mv(A, kc.zeros(4, dtype=kc.float64))
    with pytest.raises(ValueError, match="block type must be either a matrix type.*got vec3"):
        sp.bsr_zeros(2, 2, kc.vec3)
    with pytest.raises(ValueError, match="block type must be either"):
        sp.bsr_diag(kc.vec3(1.0, 2.0, 3.0), rows_of_blocks=2)
    with pytest.raises(TypeError, match="float32 and float64"):
        sp.bsr_zeros(2, 2, kc.int32)
    rows = kc.array(np.array([0, 1], np.int32))
    with pytest.raises(TypeError, match="int32"):
        sp.bsr_set_from_triplets(A, kc.array(np.array([0, 1], np.int64)), rows)
    with pytest.raises(ValueError, match="Values array type"):
        sp.bsr_set_from_triplets(A, rows, rows, kc.zeros(2))
    with pytest.raises(ValueError, match="block shape"):
        sp.bsr_set_from_triplets(A, rows, rows, kc.zeros((2, 3, 3)))
    with pytest.raises(ValueError, match="same block type"):
        sp.bsr_axpy(A, sp.bsr_zeros(3, 2, kc.mat33))
    with pytest.raises(ValueError, match="rows/columns"):
        sp.bsr_mm(A, A)
    with pytest.raises(ValueError, match="interpreted as a BsrMatrix"):
        sp.bsr_mv(np.eye(2), kc.zeros(2))


def laplacian_triplets(n: int):
    """The 5-point 2-D Laplacian on an n x n grid, as (rows, cols, values) triplets."""
    rows, cols, vals = [], [], []
    for i in range(n):
        for j in range(n):
            k = i * n + j
            rows.append(k), cols.append(k), vals.append(4.0)
            for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                if 0 <= i + di < n and 0 <= j + dj < n:
                    rows.append(k), cols.append((i + di) * n + j + dj), vals.append(-1.0)
    return np.array(rows, np.int32), np.array(cols, np.int32), np.array(vals)


def solve_laplacian(n, b, solver, dtype=kc.float64):
    rows, cols, vals = laplacian_triplets(n)
    A = sp.bsr_from_triplets(n * n, n * n, kc.array(rows), kc.array(cols),
                             kc.array(vals, dtype=dtype))
    x = kc.zeros(n * n, dtype=dtype)
    M = linear.preconditioner(A, "diag")
    result = getattr(linear, solver)(A, kc.array(b, dtype=dtype), x, tol=1e-8, M=M)
    return result, x.numpy(), dense(A)


@pytest.mark.parametrize("solver", ["cg", "bicgstab"])
def test_iterative_solvers_on_sparse_laplacian(rng, solver):
    b = nonzero(rng, 100, np.float64)
    (iterations, residual, atol), x, M = solve_laplacian(10, b, solver)
    assert 0 < iterations < 100 and residual <= atol
    np.testing.assert_allclose(M @ x, b, atol=1e-6)
    op = linear.aslinearoperator(sp.bsr_identity(3, kc.float32))
    assert op.shape == (3, 3) and op.dtype == kc.float32
    blocked = sp.bsr_identity(2, kc.mat22) * 4.0
    inv = linear.preconditioner(blocked, "diag")
    y = kc.zeros(4)
    inv.matvec(kc.array(np.ones(4, np.float32)), y, y, alpha=1.0, beta=0.0)
    np.testing.assert_array_equal(y.numpy(), np.full(4, 0.25))  # the scale is applied


_WARP_SCRIPT = """
import warp.sparse as sp
import warp.optim.linear as linear
I = inputs
def arr(name, dtype=None):
    return wp.array(I[name], dtype=dtype) if dtype else wp.array(I[name])
def dump(prefix, A):
    nnz = A.nnz_sync()
    results[prefix + "_offsets"] = A.offsets.numpy()
    results[prefix + "_columns"] = A.columns.numpy()[:nnz]
    results[prefix + "_values"] = A.values.numpy()[:nnz]
A = sp.bsr_from_triplets(9, 7, arr("rows"), arr("cols"), arr("vals"))
dump("A", A)
B = sp.bsr_from_triplets(9, 7, arr("rows"), arr("cols"), arr("vals"), prune_numerical_zeros=False)
dump("B", B)
mat23 = wp.types.matrix(shape=(2, 3), dtype=wp.float32)
Q = sp.bsr_from_triplets(9, 7, arr("rows"), arr("cols"), arr("bvals", mat23))
dump("Q", Q)
y = wp.array(I["y"])
sp.bsr_mv(A, arr("x"), y, alpha=1.5, beta=-0.25)
results["mv"] = y.numpy()
results["mvq"] = sp.bsr_mv(Q, arr("xq")).numpy()
results["mvt"] = sp.bsr_mv(Q, arr("yq"), transpose=True).numpy()
dump("T", sp.bsr_transposed(Q))
dump("S", A + 2.0 * B.transpose().transpose())
dump("P", A @ sp.bsr_transposed(A))
dump("D", sp.bsr_diag(arr("diag")))
n = int(I["n"])
L = sp.bsr_from_triplets(n * n, n * n, arr("lrows"), arr("lcols"), arr("lvals"))
for solver in ("cg", "bicgstab"):
    x = wp.zeros(n * n, dtype=wp.float64)
    it, res, atol = getattr(linear, solver)(L, arr("lb"), x, tol=1e-8, M=linear.preconditioner(L, "diag"))
    results[solver + "_it"] = np.array(it)
    results[solver + "_x"] = x.numpy()
"""


def test_matches_warp(rng, tmp_path):
    n_tpl = 60
    rows = rng.integers(-1, 10, n_tpl).astype(np.int32)  # some out of range
    cols = rng.integers(0, 7, n_tpl).astype(np.int32)
    vals = (rng.integers(-16, 17, n_tpl) / 8.0).astype(np.float32)  # zeros, exact sums
    bvals = (rng.integers(-16, 17, (n_tpl, 2, 3)) / 8.0).astype(np.float32)
    bvals[::7] = 0.0
    n = 12
    lrows, lcols, lvals = laplacian_triplets(n)
    inputs = dict(rows=rows, cols=cols, vals=vals, bvals=bvals,
                  x=nonzero(rng, 7, np.float32), y=nonzero(rng, 9, np.float32),
                  xq=nonzero(rng, 21, np.float32), yq=nonzero(rng, 18, np.float32),
                  diag=nonzero(rng, 5, np.float64), n=np.array(n), lrows=lrows, lcols=lcols,
                  lvals=lvals, lb=nonzero(rng, n * n, np.float64))
    want = run_warp(_WARP_SCRIPT, tmp_path, **inputs)
    got = {}

    def dump(prefix, A):
        nnz = A.nnz_sync()
        got[prefix + "_offsets"] = A.offsets.numpy()
        got[prefix + "_columns"] = A.columns.numpy()[:nnz]
        got[prefix + "_values"] = A.values.numpy()[:nnz]

    def arr(name, dtype=None):
        return kc.array(inputs[name], dtype=dtype) if dtype else kc.array(inputs[name])

    A = sp.bsr_from_triplets(9, 7, arr("rows"), arr("cols"), arr("vals"))
    dump("A", A)
    B = sp.bsr_from_triplets(9, 7, arr("rows"), arr("cols"), arr("vals"),
                             prune_numerical_zeros=False)
    dump("B", B)
    Q = sp.bsr_from_triplets(9, 7, arr("rows"), arr("cols"),
                             arr("bvals", kc.types.matrix((2, 3), kc.float32)))
    dump("Q", Q)
    y = arr("y")
    sp.bsr_mv(A, arr("x"), y, alpha=1.5, beta=-0.25)
    got["mv"] = y.numpy()
    got["mvq"] = sp.bsr_mv(Q, arr("xq")).numpy()
    got["mvt"] = sp.bsr_mv(Q, arr("yq"), transpose=True).numpy()
    dump("T", sp.bsr_transposed(Q))
    dump("S", A + 2.0 * B.transpose().transpose())
    dump("P", A @ sp.bsr_transposed(A))
    dump("D", sp.bsr_diag(arr("diag")))
    for solver in ("cg", "bicgstab"):
        (it, _, _), x, _ = solve_laplacian(n, inputs["lb"], solver)
        got[solver + "_it"], got[solver + "_x"] = np.array(it), x
    for key, value in want.items():
        if key.endswith(("_offsets", "_columns", "_values", "_it")):
            np.testing.assert_array_equal(got[key], value, err_msg=key)
        else:
            np.testing.assert_allclose(got[key], value, rtol=1e-6, atol=1e-6, err_msg=key)


# ---- the lookups kernels call -------------------------------------------------------------


@kc.kernel
def lookups(offsets: kc.array(dtype=int), columns: kc.array(dtype=int), row_count: int,
            query_rows: kc.array(dtype=int), query_cols: kc.array(dtype=int),
            found: kc.array(dtype=int), rows: kc.array(dtype=int)):
    i = kc.tid()
    found[i] = sp.bsr_block_index(query_rows[i], query_cols[i], offsets, columns)
    rows[i] = sp.bsr_row_index(offsets, row_count, i - 2)


@kc.kernel
def lookups_with_row_counts(offsets: kc.array(dtype=int), columns: kc.array(dtype=int),
                            row_counts: kc.array(dtype=int), row_count: int,
                            query_rows: kc.array(dtype=int), query_cols: kc.array(dtype=int),
                            found: kc.array(dtype=int), rows: kc.array(dtype=int)):
    i = kc.tid()
    found[i] = sp.bsr_block_index(query_rows[i], query_cols[i], offsets, columns, row_counts)
    rows[i] = sp.bsr_row_index(offsets, row_count, i - 2, row_counts)


def expected_lookups(offsets, columns, row_counts, query_rows, query_cols, count):
    ends = offsets[1:] if row_counts is None else offsets[:-1] + row_counts
    found = [next((b for b in range(offsets[r], ends[r]) if columns[b] == c), -1) if r >= 0
             else -1 for r, c in zip(query_rows, query_cols)]
    rows = []
    for block in range(-2, count - 2):
        row = -1
        for r in range(len(offsets) - 1):
            if offsets[r] <= block < ends[r]:
                row = r
        rows.append(row)
    return found, rows


def test_block_and_row_lookups_in_kernels(rng):
    A = sp.bsr_from_triplets(7, 9, *map(kc.array, random_triplets(rng, 7, 9, 30)))
    offsets, columns = A.offsets.numpy(), A.columns.numpy()[: A.nnz]
    n = 64
    query_rows = rng.integers(-1, 7, n).astype(np.int32)
    query_cols = rng.integers(0, 9, n).astype(np.int32)
    found, rows = poisoned(n, np.int32), poisoned(n, np.int32)
    kc.launch(lookups, n, inputs=[A.offsets, A.columns, A.nrow, kc.array(query_rows),
                                  kc.array(query_cols), found, rows])
    want_found, want_rows = expected_lookups(offsets, columns, None, query_rows, query_cols, n)
    assert found.numpy().tolist() == want_found and max(want_found) >= 0
    assert rows.numpy().tolist() == want_rows

    # The capacity-aware forms: a null `row_counts` means compact storage; given, only each
    # row's first row_counts[r] blocks count (the rest of the row is unused capacity).
    for row_counts in (None, np.maximum(np.diff(offsets) - 1, 0).astype(np.int32)):
        found, rows = poisoned(n, np.int32), poisoned(n, np.int32)
        kc.launch(lookups_with_row_counts, n, inputs=[
            A.offsets, A.columns, None if row_counts is None else kc.array(row_counts), A.nrow,
            kc.array(query_rows), kc.array(query_cols), found, rows])
        want = expected_lookups(offsets, columns, row_counts, query_rows, query_cols, n)
        assert (found.numpy().tolist(), rows.numpy().tolist()) == want


@pytest.mark.parametrize("kernel", [lookups, lookups_with_row_counts], ids=lambda k: k.key)
def test_nvrtc_compiles_the_lookups(kernel):
    pytest.importorskip("cuda.bindings.nvrtc")
    assert kc.compile(kernel, target="cuda", arch=80).binary
