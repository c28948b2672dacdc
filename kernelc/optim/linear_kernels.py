"""The kernels behind `kernelc.optim.linear`: operators, dot products and solver updates.

Every kernel is generic over the scalar type (float32 or float64): a typed `zero` argument
fixes the type of accumulators and of the values that `kc.where` picks. Scalars that the
solvers keep on the device (squared norms, step coefficients, tolerances) are 1-element
arrays, so no value goes back to the host inside an iteration. The operations, and their
order, are those of Warp's CPU kernels, so that the iterates round as Warp's do.
"""

from __future__ import annotations

from typing import Any

import kernelc as kc

# Values per partial sum of a dot product: Warp's CPU reduction sums tiles of 512 products
# in order, then the tiles' sums in order; the same blocking gives the same rounding.
DOT_BLOCK = 512

# ---- operators --------------------------------------------------------------------------


@kc.kernel
def dense_mv_kernel(A: kc.array2d(dtype=Any), x: kc.array(dtype=Any), y: kc.array(dtype=Any),
                    z: kc.array(dtype=Any), alpha: Any, beta: Any, zero: Any):
    row = kc.tid()
    s = zero
    if alpha != zero:
        for col in range(A.shape[1]):
            s = s + A[row, col] * x[col]
    t = s * alpha
    if beta != zero:
        t = t + y[row] * beta
    z[row] = t


@kc.kernel
def diag_mv_kernel(A: kc.array(dtype=Any), x: kc.array(dtype=Any), y: kc.array(dtype=Any),
                   z: kc.array(dtype=Any), alpha: Any, beta: Any, zero: Any):
    i = kc.tid()
    s = zero
    if alpha != zero:
        s = s + alpha * (A[i] * x[i])
    if beta != zero:
        s = s + beta * y[i]
    z[i] = s


@kc.kernel
def inverse_diagonal_kernel(A: kc.array2d(dtype=Any), inv_diag: kc.array(dtype=Any),
                            use_abs: int, zero: Any, one: Any):
    # A zero diagonal coefficient gets 1, so that the preconditioner stays finite.
    i = kc.tid()
    c = A[i, i]
    d = c
    if use_abs != 0:
        d = kc.abs(c)
    inv_diag[i] = kc.where(c == zero, one, one / d)


# ---- reductions and copies --------------------------------------------------------------


@kc.kernel
def dot_blocks_kernel(a: kc.array2d(dtype=Any), b: kc.array2d(dtype=Any), n: int,
                      partials: kc.array2d(dtype=Any), zero: Any):
    column, block = kc.tid()
    start = block * DOT_BLOCK
    s = zero
    for i in range(start, min(start + DOT_BLOCK, n)):
        s = s + a[column, i] * b[column, i]
    partials[column, block] = s


@kc.kernel
def sum_blocks_kernel(values: kc.array2d(dtype=Any), n: int, partials: kc.array2d(dtype=Any),
                      zero: Any):
    column, block = kc.tid()
    start = block * DOT_BLOCK
    s = zero
    for i in range(start, min(start + DOT_BLOCK, n)):
        s = s + values[column, i]
    partials[column, block] = s


@kc.kernel
def copy_kernel(src: kc.array(dtype=Any), dest: kc.array(dtype=Any)):
    # Copies inside a solver iteration are launches, so that a graph capture records them.
    i = kc.tid()
    dest[i] = src[i]


@kc.kernel
def initialize_tolerance_kernel(rtol: Any, atol: Any, b_norm_sq: kc.array(dtype=Any),
                                atol_sq: kc.array(dtype=Any)):
    a = kc.max(rtol * kc.sqrt(b_norm_sq[0]), atol)
    atol_sq[0] = a * a


@kc.kernel
def update_condition_kernel(maxiter: int, cycle_size: int, cur_iter: kc.array(dtype=int),
                            r_norm_sq: kc.array(dtype=Any), atol_sq: kc.array(dtype=Any),
                            condition: kc.array(dtype=int)):
    cur_iter[0] = cur_iter[0] + cycle_size
    done = r_norm_sq[0] <= atol_sq[0] or cur_iter[0] >= maxiter
    condition[0] = kc.where(done, 0, 1)


# ---- CG and CR --------------------------------------------------------------------------


@kc.kernel
def ratio_step(tol: kc.array(dtype=Any), resid: kc.array(dtype=Any), num: kc.array(dtype=Any),
               den: kc.array(dtype=Any), x: kc.array(dtype=Any), r: kc.array(dtype=Any),
               dx: kc.array(dtype=Any), dr: kc.array(dtype=Any), zero: Any):
    """x += a dx and r -= a dr with a = num / den, or 0 once converged: the step of CG
    (and CR on its fast path) and both half-steps of BiCGSTAB."""
    i = kc.tid()
    a = kc.where(resid[0] > tol[0], num[0] / den[0], zero)
    x[i] = x[i] + a * dx[i]
    r[i] = r[i] - a * dr[i]


@kc.kernel
def cg_kernel_2(tol: kc.array(dtype=Any), resid_new: kc.array(dtype=Any),
                rz_old: kc.array(dtype=Any), rz_new: kc.array(dtype=Any),
                z: kc.array(dtype=Any), p: kc.array(dtype=Any), zero: Any):
    i = kc.tid()
    beta = kc.where(resid_new[0] > tol[0], rz_new[0] / rz_old[0], zero)
    p[i] = z[i] + beta * p[i]


@kc.kernel
def cr_kernel_1(tol: kc.array(dtype=Any), resid: kc.array(dtype=Any),
                zAz_old: kc.array(dtype=Any), y_Ap: kc.array(dtype=Any), x: kc.array(dtype=Any),
                r: kc.array(dtype=Any), z: kc.array(dtype=Any), p: kc.array(dtype=Any),
                Ap: kc.array(dtype=Any), y: kc.array(dtype=Any), zero: Any):
    i = kc.tid()
    alpha = kc.where(resid[0] > tol[0] and y_Ap[0] > zero, zAz_old[0] / y_Ap[0], zero)
    x[i] = x[i] + alpha * p[i]
    r[i] = r[i] - alpha * Ap[i]
    z[i] = z[i] - alpha * y[i]


@kc.kernel
def cr_kernel_2(tol: kc.array(dtype=Any), resid: kc.array(dtype=Any),
                zAz_old: kc.array(dtype=Any), zAz_new: kc.array(dtype=Any),
                z: kc.array(dtype=Any), p: kc.array(dtype=Any), Az: kc.array(dtype=Any),
                Ap: kc.array(dtype=Any), zero: Any):
    i = kc.tid()
    beta = kc.where(resid[0] > tol[0] and zAz_old[0] > zero, zAz_new[0] / zAz_old[0], zero)
    p[i] = z[i] + beta * p[i]
    Ap[i] = Az[i] + beta * Ap[i]


# ---- BiCGSTAB ---------------------------------------------------------------------------


@kc.kernel
def bicgstab_kernel_3(tol: kc.array(dtype=Any), resid: kc.array(dtype=Any),
                      rho_new: kc.array(dtype=Any), r0v: kc.array(dtype=Any),
                      st: kc.array(dtype=Any), tt: kc.array(dtype=Any), p: kc.array(dtype=Any),
                      r: kc.array(dtype=Any), v: kc.array(dtype=Any), zero: Any):
    i = kc.tid()
    beta = kc.where(resid[0] > tol[0], rho_new[0] * tt[0] / (r0v[0] * st[0]), zero)
    beta_omega = kc.where(resid[0] > tol[0], rho_new[0] / r0v[0], zero)
    p[i] = r[i] + beta * p[i] - beta_omega * v[i]


# ---- GMRES ------------------------------------------------------------------------------


@kc.kernel
def gmres_normalize_kernel(x: kc.array(dtype=Any), y: kc.array(dtype=Any),
                           alpha: kc.array(dtype=Any), norm_out: kc.array2d(dtype=Any),
                           row: int, col: int, zero: Any):
    # y = x / sqrt(alpha) (x itself when alpha is 0); the norm goes to norm_out[row, col].
    i = kc.tid()
    a = alpha[0]
    norm = kc.sqrt(a)
    y[i] = kc.where(a == zero, x[i], x[i] / norm)
    if i == 0:
        norm_out[row, col] = norm


@kc.kernel
def gmres_arnoldi_axpy_kernel(j: int, V: kc.array2d(dtype=Any), w: kc.array(dtype=Any),
                              H: kc.array2d(dtype=Any), zero: Any):
    # Classical Gram-Schmidt: w -= sum_k H[k, j] V[k].
    i = kc.tid()
    s = zero
    for k in range(j + 1):
        s = s + H[k, j] * V[k, i]
    w[i] = w[i] - s


@kc.kernel
def gmres_least_squares_kernel(k: int, pivot_tolerance: Any, beta: kc.array2d(dtype=Any),
                               H: kc.array2d(dtype=Any), y: kc.array(dtype=Any), zero: Any):
    # Solves min |beta e0 - H y| for the (k+1, k) Hessenberg H: Givens rotations make H
    # upper triangular (in place), then a back substitution. One thread.
    rhs = beta[0, 0]
    max_k = k
    for i in range(k):
        a = H[i, i]
        b = H[i + 1, i]
        abn_sq = a * a + b * b
        if abn_sq < pivot_tolerance:
            # The Arnoldi iteration ended early: the basis spans an invariant subspace.
            max_k = i
            break
        abn = kc.sqrt(abn_sq)
        c = a / abn
        s = b / abn
        for jj in range(i, k):
            ha = H[i, jj]
            hb = H[i + 1, jj]
            H[i, jj] = c * ha + s * hb
            H[i + 1, jj] = c * hb - s * ha
        y[i] = c * rhs
        rhs = -s * rhs
    for i in range(max_k, k):
        y[i] = zero
    for ii in range(max_k, 0, -1):
        i = ii - 1
        yi = y[i]
        for jj in range(ii, max_k):
            yi = yi - H[i, jj] * y[jj]
        y[i] = yi / H[i, i]


@kc.kernel
def gmres_update_x_kernel(k: int, scale: Any, y: kc.array(dtype=Any),
                          V: kc.array2d(dtype=Any), x: kc.array(dtype=Any)):
    i = kc.tid()
    xi = scale * x[i]
    for j in range(k):
        xi = xi + V[j, i] * y[j]
    x[i] = xi


@kc.kernel
def add_kernel(update: kc.array(dtype=Any), x: kc.array(dtype=Any)):
    i = kc.tid()
    x[i] = x[i] + update[i]
