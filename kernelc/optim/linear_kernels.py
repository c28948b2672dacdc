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


@kc.func
def find_batch(dof: int, offsets: kc.array(dtype=int)) -> int:
    """The subproblem holding scalar `dof` (the last b with offsets[b] <= dof, so empty
    subproblems are skipped), or -1 for an inactive dof (before offsets[0] or at or past
    offsets[-1]). Unbatched solvers pass [0, n]."""
    count = offsets.shape[0] - 1
    bid = -1
    if dof < offsets[count]:
        bid = kc.lower_bound(offsets, 0, count + 1, dof + 1) - 1
    return bid

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
    # One thread per subproblem: each is judged against its own right-hand side.
    k = kc.tid()
    a = kc.max(rtol * kc.sqrt(b_norm_sq[k]), atol)
    atol_sq[k] = a * a


@kc.kernel
def update_condition_kernel(maxiter: int, cycle_size: int, cur_iter: kc.array(dtype=int),
                            r_norm_sq: kc.array(dtype=Any), atol_sq: kc.array(dtype=Any),
                            condition: kc.array(dtype=int)):
    # One thread: the solve goes on while any subproblem is above its tolerance.
    cur_iter[0] = cur_iter[0] + cycle_size
    converged = 1
    for k in range(r_norm_sq.shape[0]):
        converged = kc.where(r_norm_sq[k] <= atol_sq[k], converged, 0)
    done = converged != 0 or cur_iter[0] >= maxiter
    condition[0] = kc.where(done, 0, 1)


# ---- CG and CR --------------------------------------------------------------------------
# Every update kernel looks up the subproblem of its dof, uses that subproblem's scalars,
# and leaves inactive dofs (find_batch -1) alone.


@kc.kernel
def ratio_step(tol: kc.array(dtype=Any), resid: kc.array(dtype=Any), num: kc.array(dtype=Any),
               den: kc.array(dtype=Any), x: kc.array(dtype=Any), r: kc.array(dtype=Any),
               dx: kc.array(dtype=Any), dr: kc.array(dtype=Any),
               offsets: kc.array(dtype=int), zero: Any):
    """x += a dx and r -= a dr with a = num / den, or 0 once converged: the step of CG
    (and CR on its fast path) and both half-steps of BiCGSTAB."""
    i = kc.tid()
    k = find_batch(i, offsets)
    if k >= 0:
        a = kc.where(resid[k] > tol[k], num[k] / den[k], zero)
        x[i] = x[i] + a * dx[i]
        r[i] = r[i] - a * dr[i]


@kc.kernel
def cg_kernel_2(tol: kc.array(dtype=Any), resid_new: kc.array(dtype=Any),
                rz_old: kc.array(dtype=Any), rz_new: kc.array(dtype=Any),
                z: kc.array(dtype=Any), p: kc.array(dtype=Any), offsets: kc.array(dtype=int),
                zero: Any):
    i = kc.tid()
    k = find_batch(i, offsets)
    if k >= 0:
        beta = kc.where(resid_new[k] > tol[k], rz_new[k] / rz_old[k], zero)
        p[i] = z[i] + beta * p[i]


@kc.kernel
def cr_kernel_1(tol: kc.array(dtype=Any), resid: kc.array(dtype=Any),
                zAz_old: kc.array(dtype=Any), y_Ap: kc.array(dtype=Any), x: kc.array(dtype=Any),
                r: kc.array(dtype=Any), z: kc.array(dtype=Any), p: kc.array(dtype=Any),
                Ap: kc.array(dtype=Any), y: kc.array(dtype=Any), offsets: kc.array(dtype=int),
                zero: Any):
    i = kc.tid()
    k = find_batch(i, offsets)
    if k >= 0:
        alpha = kc.where(resid[k] > tol[k] and y_Ap[k] > zero, zAz_old[k] / y_Ap[k], zero)
        x[i] = x[i] + alpha * p[i]
        r[i] = r[i] - alpha * Ap[i]
        z[i] = z[i] - alpha * y[i]


@kc.kernel
def cr_kernel_2(tol: kc.array(dtype=Any), resid: kc.array(dtype=Any),
                zAz_old: kc.array(dtype=Any), zAz_new: kc.array(dtype=Any),
                z: kc.array(dtype=Any), p: kc.array(dtype=Any), Az: kc.array(dtype=Any),
                Ap: kc.array(dtype=Any), offsets: kc.array(dtype=int), zero: Any):
    i = kc.tid()
    k = find_batch(i, offsets)
    if k >= 0:
        beta = kc.where(resid[k] > tol[k] and zAz_old[k] > zero, zAz_new[k] / zAz_old[k], zero)
        p[i] = z[i] + beta * p[i]
        Ap[i] = Az[i] + beta * Ap[i]


# ---- BiCGSTAB ---------------------------------------------------------------------------


@kc.kernel
def bicgstab_kernel_3(tol: kc.array(dtype=Any), resid: kc.array(dtype=Any),
                      rho_new: kc.array(dtype=Any), r0v: kc.array(dtype=Any),
                      st: kc.array(dtype=Any), tt: kc.array(dtype=Any), p: kc.array(dtype=Any),
                      r: kc.array(dtype=Any), v: kc.array(dtype=Any),
                      offsets: kc.array(dtype=int), zero: Any):
    i = kc.tid()
    k = find_batch(i, offsets)
    if k >= 0:
        beta = kc.where(resid[k] > tol[k], rho_new[k] * tt[k] / (r0v[k] * st[k]), zero)
        beta_omega = kc.where(resid[k] > tol[k], rho_new[k] / r0v[k], zero)
        p[i] = r[i] + beta * p[i] - beta_omega * v[i]


# ---- GMRES ------------------------------------------------------------------------------
# H is (restart + 1, restart, subproblems), y (subproblems, restart + 1).


@kc.kernel
def gmres_normalize_kernel(x: kc.array(dtype=Any), y: kc.array(dtype=Any),
                           alpha: kc.array(dtype=Any), norm_out: kc.array(dtype=Any),
                           offsets: kc.array(dtype=int), zero: Any):
    # y = x / sqrt(alpha) (x itself when alpha is 0), per subproblem; the first dof of each
    # subproblem stores its norm in norm_out.
    i = kc.tid()
    k = find_batch(i, offsets)
    if k >= 0:
        a = alpha[k]
        norm = kc.sqrt(a)
        y[i] = kc.where(a == zero, x[i], x[i] / norm)
        if i == offsets[k]:
            norm_out[k] = norm


@kc.kernel
def gmres_arnoldi_axpy_kernel(j: int, V: kc.array2d(dtype=Any), w: kc.array(dtype=Any),
                              H: kc.array3d(dtype=Any), offsets: kc.array(dtype=int),
                              zero: Any):
    # Classical Gram-Schmidt: w -= sum_k H[k, j] V[k].
    i = kc.tid()
    b = find_batch(i, offsets)
    if b >= 0:
        s = zero
        for k in range(j + 1):
            s = s + H[k, j, b] * V[k, i]
        w[i] = w[i] - s


@kc.kernel
def gmres_least_squares_kernel(k: int, pivot_tolerance: Any, beta: kc.array(dtype=Any),
                               H: kc.array3d(dtype=Any), y: kc.array2d(dtype=Any), zero: Any):
    # Solves min |beta e0 - H y| for one subproblem's (k+1, k) Hessenberg H: Givens
    # rotations make H upper triangular (in place), then a back substitution.
    b = kc.tid()
    rhs = beta[b]
    max_k = k
    for i in range(k):
        ha_i = H[i, i, b]
        hb_i = H[i + 1, i, b]
        abn_sq = ha_i * ha_i + hb_i * hb_i
        if abn_sq < pivot_tolerance:
            # The Arnoldi iteration ended early: the basis spans an invariant subspace.
            max_k = i
            break
        abn = kc.sqrt(abn_sq)
        c = ha_i / abn
        s = hb_i / abn
        for jj in range(i, k):
            ha = H[i, jj, b]
            hb = H[i + 1, jj, b]
            H[i, jj, b] = c * ha + s * hb
            H[i + 1, jj, b] = c * hb - s * ha
        y[b, i] = c * rhs
        rhs = -s * rhs
    for i in range(max_k, k):
        y[b, i] = zero
    for ii in range(max_k, 0, -1):
        i = ii - 1
        yi = y[b, i]
        for jj in range(ii, max_k):
            yi = yi - H[i, jj, b] * y[b, jj]
        y[b, i] = yi / H[i, i, b]


@kc.kernel
def gmres_update_x_kernel(k: int, scale: Any, y: kc.array2d(dtype=Any),
                          V: kc.array2d(dtype=Any), x: kc.array(dtype=Any),
                          offsets: kc.array(dtype=int)):
    i = kc.tid()
    b = find_batch(i, offsets)
    if b >= 0:
        xi = scale * x[i]
        for j in range(k):
            xi = xi + V[j, i] * y[b, j]
        x[i] = xi


@kc.kernel
def add_kernel(update: kc.array(dtype=Any), x: kc.array(dtype=Any),
               offsets: kc.array(dtype=int)):
    i = kc.tid()
    if find_batch(i, offsets) >= 0:
        x[i] = x[i] + update[i]
