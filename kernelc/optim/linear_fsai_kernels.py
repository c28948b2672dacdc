"""Kernels of `FSAI`, the factorized sparse approximate inverse (`kernelc.optim.linear_fsai`).

The matrix is read in place through its 3-d scalar view `values[block, i, j]`, so scalar
and block storage share one code path: scalar entry (r, c) lives in block
(r // bs, c // bs) at (r % bs, c % bs). One thread builds one row of the factor G in
fixed-size local vectors and matrices of the row-size budget `width`, which is why the
selection and refit kernels are made per (scalar type, width, ...). The operations and
their order are Warp 1.19's, so that supports and factors agree with Warp's bit for bit.
"""


from functools import lru_cache
from typing import Any

import kernelc as kc
from kernelc.sparse.kernels import bsr_block_index


@kc.func
def scalar_entry(offsets: kc.array(dtype=int), columns: kc.array(dtype=int),
                 values: kc.array3d(dtype=Any), r: int, c: int, zero: Any):
    """Scalar coefficient (r, c) of the matrix (`zero` where no block is stored)."""
    bs = values.shape[1]
    slot = bsr_block_index(r // bs, c // bs, offsets, columns)
    result = zero
    if slot >= 0:
        result = values[slot, r % bs, c % bs]
    return result


@kc.kernel(enable_backward=False)
def diagonal_scale_kernel(offsets: kc.array(dtype=int), columns: kc.array(dtype=int),
                          values: kc.array3d(dtype=Any), scale: kc.array(dtype=Any),
                          status: kc.array(dtype=int), counter: int):
    # Equilibration: scale[i] = 1 / sqrt(a_ii); an unusable diagonal gives 0 and is counted.
    i = kc.tid()
    zero = scale.dtype(0)
    d = scalar_entry(offsets, columns, values, i, i, zero)
    if d > zero and kc.isfinite(d):
        scale[i] = scale.dtype(1) / kc.sqrt(d)
    else:
        scale[i] = zero
        kc.atomic_add(status, counter, 1)


@lru_cache(None)
def select_kernel(dtype: Any, width: int, step: int) -> Any:
    """The kernel that grows the support of every row of G and solves its local system."""
    ivec = kc.types.vector(length=width, dtype=kc.int32)
    vec = kc.types.vector(length=width, dtype=dtype)
    mat = kc.types.matrix(shape=(width, width), dtype=dtype)
    step_ivec = kc.types.vector(length=step, dtype=kc.int32)
    step_vec = kc.types.vector(length=step, dtype=dtype)

    @kc.kernel(enable_backward=False, module="unique")
    def fsai_select(offsets: kc.array(dtype=int), columns: kc.array(dtype=int),
                    values: kc.array3d(dtype=dtype), scale: kc.array(dtype=dtype),
                    tolerance: dtype, pivot_floor: dtype, cols_out: kc.array(dtype=int),
                    vals_out: kc.array(dtype=dtype), status: kc.array(dtype=int)):
        i = kc.tid()
        zero = dtype(0)
        one = dtype(1)
        bs = values.shape[1]
        support = ivec(-1)  # in growth order; support[0] = i
        L = mat(zero)  # Cholesky factor of the equilibrated A[support, support]
        z = vec(zero)  # A[S, S] z = e_0
        v = vec(zero)  # L v = e_0
        support[0] = i
        L[0, 0] = one
        z[0] = one
        v[0] = one
        size = 1
        while size < kc.static(width):
            # The `step` frontier columns (< i) of largest |A[c, S] z|, ties to the lowest.
            picks = step_ivec(-1)
            scores = step_vec(zero)
            for p in range(size):
                brow = support[p] // bs
                for e in range(offsets[brow], offsets[brow + 1]):
                    for k in range(bs):
                        c = columns[e] * bs + k
                        taken = bool(c >= i)
                        for q in range(size):
                            if support[q] == c:
                                taken = True
                        for q in range(kc.static(step)):
                            if picks[q] == c:
                                taken = True
                        if not taken:
                            residual = zero
                            for q in range(size):
                                j = support[q]
                                residual += (scalar_entry(offsets, columns, values, c, j, zero)
                                             * scale[c] * scale[j] * z[q])
                            score = kc.abs(residual)
                            for rank in range(kc.static(step)):
                                if score > scores[rank] or (score == scores[rank]
                                                            and c < picks[rank]):
                                    for back in range(kc.static(step - 1)):
                                        dest = kc.static(step - 1) - back
                                        if dest > rank:
                                            picks[dest] = picks[dest - 1]
                                            scores[dest] = scores[dest - 1]
                                    picks[rank] = c
                                    scores[rank] = score
                                    break
            if picks[0] < 0:
                break
            previous_z0 = z[0]
            stopped = False
            for rank in range(kc.static(step)):
                c = picks[rank]
                if c < 0 or size == kc.static(width):
                    break
                # Border L with the new row: L[size, :size] = w, L[size, size] = sqrt(pivot).
                w = vec(zero)
                pivot = one
                for p in range(size):
                    a = (scalar_entry(offsets, columns, values, c, support[p], zero)
                         * scale[c] * scale[support[p]])
                    for q in range(p):
                        a -= L[p, q] * w[q]
                    w[p] = a / L[p, p]
                    pivot -= w[p] * w[p]
                if pivot <= pivot_floor or not kc.isfinite(pivot):
                    kc.atomic_add(status, 1, 1)
                    stopped = True
                    break
                support[size] = c
                for p in range(size):
                    L[size, p] = w[p]
                L[size, size] = kc.sqrt(pivot)
                rhs = zero
                for p in range(size):
                    rhs -= w[p] * v[p]
                v[size] = rhs / L[size, size]
                size += 1
            for back in range(size):  # L^T z = v
                p = size - 1 - back
                a = v[p]
                for q in range(p + 1, size):
                    a -= L[q, p] * z[q]
                z[p] = a / L[p, p]
            # 1 - old z0 / new z0 is the relative gain of this growth step.
            if stopped or (tolerance > zero and one - previous_z0 / z[0] <= tolerance):
                break
        norm = kc.sqrt(z[0])
        valid = True
        for p in range(kc.static(width)):
            e = i * kc.static(width) + p
            cols_out[e] = -1
            vals_out[e] = zero
            if p < size:
                cols_out[e] = support[p]
                vals_out[e] = z[p] / norm * scale[support[p]]
                if not kc.isfinite(vals_out[e]):
                    valid = False
                if p == 0 and vals_out[e] <= zero:
                    valid = False
        if not valid:
            kc.atomic_add(status, 2, 1)

    return fsai_select


@lru_cache(None)
def refit_kernel(dtype: Any, storage: Any, width: int, regularize: bool) -> Any:
    """The kernel that recomputes every row of G on its fixed support (in growth order)."""
    ivec = kc.types.vector(length=width, dtype=kc.int32)
    vec = kc.types.vector(length=width, dtype=dtype)
    mat = kc.types.matrix(shape=(width, width), dtype=dtype)

    @kc.kernel(enable_backward=False, module="unique")
    def fsai_refit(offsets: kc.array(dtype=int), columns: kc.array(dtype=int),
                   values: kc.array3d(dtype=dtype), g_offsets: kc.array(dtype=int),
                   g_columns: kc.array(dtype=int), growth_rank: kc.array(dtype=int),
                   scale: kc.array(dtype=dtype), floor: dtype, out: kc.array(dtype=storage),
                   status: kc.array(dtype=int)):
        i = kc.tid()
        zero = dtype(0)
        one = dtype(1)
        start = g_offsets[i]
        size = g_offsets[i + 1] - start
        position = ivec(0)  # growth position -> storage position
        for p in range(size):
            position[growth_rank[start + p]] = p
        local = ivec(-1)
        for k in range(size):
            local[k] = g_columns[start + position[k]]
        # Cholesky of the equilibrated local matrix, padded with identity rows to `width`.
        L = mat(zero)
        valid = True
        regularized = False
        for k in range(kc.static(width)):
            r = local[k]
            for m in range(k + 1):
                c = local[m]
                a = zero
                if k < size:
                    if r == c:
                        a = one  # equilibrated diagonals are exactly one
                    else:
                        a = scalar_entry(offsets, columns, values, r, c, zero) * scale[r] * scale[c]
                elif k == m:
                    a = one
                for t in range(m):
                    a -= L[k, t] * L[m, t]
                if k == m:
                    if not kc.isfinite(a):
                        valid = False
                        a = one
                    elif a <= floor:
                        if kc.static(regularize):
                            regularized = True
                            a = floor
                        else:
                            valid = False
                            a = one
                    L[k, m] = kc.sqrt(a)
                else:
                    L[k, m] = a / L[m, m]
        z = vec(zero)
        for k in range(kc.static(width)):
            a = zero
            if k == 0:
                a = one
            for t in range(k):
                a -= L[k, t] * z[t]
            z[k] = a / L[k, k]
        for back in range(kc.static(width)):
            k = kc.static(width) - 1 - back
            a = z[k]
            for t in range(k + 1, kc.static(width)):
                a -= L[t, k] * z[t]
            z[k] = a / L[k, k]
        norm = kc.sqrt(z[0])
        for p in range(size):
            value = storage(z[growth_rank[start + p]] / norm * scale[g_columns[start + p]])
            out[start + p] = value
            if not kc.isfinite(value):
                valid = False
            if p == size - 1 and value <= storage(0):  # sorted rows end on the diagonal
                valid = False
        if kc.static(regularize):
            # A failed row becomes its scaled diagonal (Jacobi), or 1.
            if not valid:
                fallback = storage(scale[i])
                if not (scale[i] > zero and kc.isfinite(fallback) and fallback > storage(0)):
                    fallback = storage(1)
                for p in range(size):
                    out[start + p] = storage(0)
                out[start + size - 1] = fallback
        if not valid:
            kc.atomic_add(status, 2, 1)
        elif regularized:
            kc.atomic_add(status, 3, 1)

    return fsai_refit


@kc.kernel(enable_backward=False)
def gather_kernel(source: kc.array(dtype=Any), order: kc.array(dtype=int),
                  dest: kc.array(dtype=Any)):
    e = kc.tid()
    dest[e] = source[order[e]]


@kc.kernel(enable_backward=False)
def check_factor_kernel(offsets: kc.array(dtype=int), columns: kc.array(dtype=int),
                        values: kc.array(dtype=Any), status: kc.array(dtype=int)):
    # Counts rows with a non-finite entry or a diagonal that is not positive.
    row = kc.tid()
    bad = False
    for e in range(offsets[row], offsets[row + 1]):
        if not kc.isfinite(values[e]):
            bad = True
        if columns[e] == row and values[e] <= values.dtype(0):
            bad = True
    if bad:
        kc.atomic_add(status, 0, 1)


@kc.kernel(enable_backward=False)
def compare_kernel(a: kc.array(dtype=int), b: kc.array(dtype=int), status: kc.array(dtype=int)):
    i = kc.tid()
    if a[i] != b[i]:
        kc.atomic_add(status, 0, 1)


@kc.kernel(enable_backward=False)
def commit_kernel(candidate: kc.array(dtype=Any), status: kc.array(dtype=int),
                  transposed_slot: kc.array(dtype=int), values: kc.array(dtype=Any),
                  transposed: kc.array(dtype=Any), regularize: int):
    # Publishes a refit unless it was rejected (the old factor then stays).
    e = kc.tid()
    accepted = status[0] == 0
    if regularize == 0:
        accepted = accepted and status[1] == 0 and status[2] == 0
    if accepted:
        values[e] = candidate[e]
        transposed[transposed_slot[e]] = candidate[e]


@kc.kernel(enable_backward=False)
def factor_mv_kernel(offsets: kc.array(dtype=int), columns: kc.array(dtype=int),
                     values: kc.array(dtype=Any), x: kc.array(dtype=Any),
                     y: kc.array(dtype=Any), z: kc.array(dtype=Any), alpha: Any, beta: Any):
    # z = alpha * G x + beta * y for a CSR factor, summed in the vectors' scalar type.
    row = kc.tid()
    zero = type(alpha)(0)
    result = zero
    if alpha != zero:
        for e in range(offsets[row], offsets[row + 1]):
            result += type(alpha)(values[e]) * x[columns[e]]
        result *= alpha
    if beta != zero:
        result += beta * y[row]
    z[row] = result
