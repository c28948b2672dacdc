"""Kernels of the block-Jacobi preconditioners (`kernelc.optim.linear_precond`).

One thread handles one diagonal block, held in a fixed-size matrix value, so every scalar
type (float16 included) and every block size works with the same code. The operations and
their order are Warp 1.19's, so the QR inverse and the LDL^T factors round as Warp's do.
"""

from __future__ import annotations

from typing import Any

import kernelc as kc

# ---- dense block factorizations ---------------------------------------------------------


@kc.func
def householder_qr(A: Any):
    """(Q, R) with A = Q R, Q orthonormal, R upper triangular (Householder reflections)."""
    v = type(A[0])()
    Q = kc.identity(n=v.length, dtype=A.dtype)
    zero = v.dtype(0.0)
    two = v.dtype(2.0)
    for i in range(v.length):
        # The reflection that zeroes column i below the diagonal.
        for k in range(v.length):
            v[k] = kc.where(k < i, zero, A[k, i])
        norm = kc.length(v) * kc.sign(v[i])
        v[i] += norm
        factor = kc.where(norm == zero, zero, two / kc.length_sq(v))
        A -= kc.outer(factor * v, v * A)
        Q -= kc.outer(Q * v, factor * v)
    return Q, A


@kc.func
def back_substitute(R: Any, b: Any):
    """x with R x = b for an upper-triangular R; a zero pivot gives a zero component."""
    zero = b.dtype(0)
    x = type(b)(zero)
    for step in range(b.length):
        j = b.length - 1 - step
        r = b[j] - kc.dot(R[j], x)
        x[j] = kc.where(R[j, j] == zero, zero, r / R[j, j])
    return x


@kc.func
def max_abs_diagonal(A: Any):
    m = A.dtype(0.0)
    for j in range(A.shape[0]):
        m = kc.max(m, kc.abs(A[j, j]))
    return m


@kc.func
def qr_inverse(A: Any, rel_tol: Any):
    """A's inverse by QR, or the identity when a pivot of R is not finite or at most
    `rel_tol` times the largest one (a numerically singular block)."""
    Q, R = householder_qr(A)
    zero = A.dtype(0)
    one = A.dtype(1)
    largest = max_abs_diagonal(R)
    singular = kc.bool(False)
    for j in range(A.shape[0]):
        pivot = R[j, j]
        singular = singular or (not kc.isfinite(pivot)) or (kc.abs(pivot) <= rel_tol * largest)
    # Row i of inv^T solves R y = (row i of Q), i.e. column i of Q^T.
    inv_t = type(A)()
    for i in range(A.shape[0]):
        inv_t[i] = back_substitute(R, Q[i])
    inv = kc.transpose(inv_t)
    for i in range(A.shape[0]):
        for j in range(A.shape[0]):
            inv[i, j] = kc.where(singular, kc.where(i == j, one, zero), inv[i, j])
    return inv


@kc.func
def is_symmetric(A: Any, rel_tol: Any):
    """Whether |A[i, j] - A[j, i]| <= rel_tol * max |A[k, k]| for every pair."""
    bound = rel_tol * max_abs_diagonal(A)
    result = kc.bool(True)
    for j in range(A.shape[0]):
        for i in range(j + 1, A.shape[0]):
            if kc.abs(A[i, j] - A[j, i]) > bound:
                result = kc.bool(False)
    return result


@kc.func
def ldlt_packed(A: Any, rel_tol: Any):
    """A = L D L^T packed in one matrix (D on the diagonal, L's strict lower part below it),
    or the identity for a block that is not symmetric or whose pivots are not finite or at
    most `rel_tol` times its largest diagonal (not numerically SPD)."""
    zero = A.dtype(0.0)
    F = type(A)(zero)
    ok = is_symmetric(A, rel_tol)
    if ok:
        bound = rel_tol * max_abs_diagonal(A)
        for j in range(A.shape[0]):
            if ok:
                d = A[j, j]
                for k in range(j):
                    d -= F[j, k] * F[j, k] * F[k, k]
                if (not kc.isfinite(d)) or (d <= bound):
                    ok = False
                else:
                    F[j, j] = d
                    for i in range(j + 1, A.shape[0]):
                        t = A[i, j]
                        for k in range(j):
                            t -= F[i, k] * F[j, k] * F[k, k]
                        F[i, j] = t / d
    if not ok:
        F = kc.identity(n=A.shape[0], dtype=A.dtype)
    return F


@kc.func
def ldlt_solve(F: Any, x: Any):
    """z with (L D L^T) z = x, from `ldlt_packed`'s F."""
    zero = x.dtype(0)
    y = type(x)(zero)
    for i in range(x.length):  # L y = x, L unit lower triangular
        r = x[i]
        for j in range(i):
            r -= F[i, j] * y[j]
        y[i] = r
    z = type(x)(zero)
    for step in range(x.length):  # L^T z = D^-1 y
        i = x.length - 1 - step
        r = y[i] / F[i, i]
        for j in range(i + 1, x.length):
            r -= F[j, i] * z[j]
        z[i] = r
    return z


@kc.func
def cholesky_or_identity(A: Any, symmetric: bool):
    """A's lower Cholesky factor (read from its lower triangle); the identity for a block
    flagged not symmetric. A block that is not positive definite gives non-finite values."""
    zero = A.dtype(0.0)
    L = type(A)(zero)
    if not symmetric:
        L = kc.identity(n=A.shape[0], dtype=A.dtype)
    else:
        for j in range(A.shape[0]):
            d = A[j, j]
            for k in range(j):
                d -= L[j, k] * L[j, k]
            d = kc.sqrt(d)
            L[j, j] = d
            for i in range(j + 1, A.shape[0]):
                t = A[i, j]
                for k in range(j):
                    t -= L[i, k] * L[j, k]
                L[i, j] = t / d
    return L


@kc.func
def cholesky_solve(L: Any, x: Any):
    """z with (L L^T) z = x."""
    zero = x.dtype(0)
    y = type(x)(zero)
    for i in range(x.length):
        r = x[i]
        for j in range(i):
            r -= L[i, j] * y[j]
        y[i] = r / L[i, i]
    z = type(x)(zero)
    for step in range(x.length):
        i = x.length - 1 - step
        r = y[i]
        for j in range(i + 1, x.length):
            r -= L[j, i] * z[j]
        z[i] = r / L[i, i]
    return z


# ---- setup kernels ----------------------------------------------------------------------


@kc.kernel(enable_backward=False)
def qr_inverse_kernel(diag: kc.array(dtype=Any), rel_tol: Any, out: kc.array(dtype=Any)):
    i = kc.tid()
    out[i] = qr_inverse(diag[i], rel_tol)


@kc.kernel(enable_backward=False)
def ldlt_kernel(diag: kc.array(dtype=Any), rel_tol: Any, out: kc.array(dtype=Any)):
    i = kc.tid()
    out[i] = ldlt_packed(diag[i], rel_tol)


@kc.kernel(enable_backward=False)
def cholesky_kernel(diag: kc.array(dtype=Any), rel_tol: Any, out: kc.array(dtype=Any)):
    i = kc.tid()
    block = diag[i]
    out[i] = cholesky_or_identity(block, is_symmetric(block, rel_tol))


# ---- products: z = alpha * blockdiag^-1 x + beta * y, one block per thread ---------------


@kc.kernel(enable_backward=False)
def inverse_mv_kernel(inv: kc.array(dtype=Any), x: kc.array(dtype=Any), y: kc.array(dtype=Any),
                      z: kc.array(dtype=Any), alpha: Any, beta: Any):
    i = kc.tid()
    zero = type(alpha)(0)
    s = z.dtype(zero)
    if alpha != zero:
        s = alpha * (inv[i] * x[i])
    if beta != zero:
        s += beta * y[i]
    z[i] = s


@kc.kernel(enable_backward=False)
def ldlt_mv_kernel(factors: kc.array(dtype=Any), x: kc.array(dtype=Any),
                   y: kc.array(dtype=Any), z: kc.array(dtype=Any), alpha: Any, beta: Any):
    i = kc.tid()
    zero = type(alpha)(0)
    s = z.dtype(zero)
    if alpha != zero:
        s = alpha * ldlt_solve(factors[i], x[i])
    if beta != zero:
        s += beta * y[i]
    z[i] = s


@kc.kernel(enable_backward=False)
def cholesky_mv_kernel(factors: kc.array(dtype=Any), x: kc.array(dtype=Any),
                       y: kc.array(dtype=Any), z: kc.array(dtype=Any), alpha: Any, beta: Any):
    i = kc.tid()
    zero = type(alpha)(0)
    s = z.dtype(zero)
    if alpha != zero:
        s = cholesky_solve(factors[i], x[i]) * alpha
    if beta != zero:
        s += y[i] * beta
    z[i] = s
