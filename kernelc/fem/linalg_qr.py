"""Orthogonal factorisations and symmetric eigenvalues of small dense matrices, as generic
kernel funcs (Warp's `warp.fem.linalg` device functions of the same names):

- `householder_qr_decomposition(A)` -> `(Q, R)` with `Q R = A`;
- `householder_make_hessenberg(A)` -> `(Q, H)` with `Q H Qᵀ = A`;
- `solve_triangular(R, b)`: back substitution on an upper triangular `R`;
- `inverse_qr(A)`: `R^-1 Qᵀ` from the QR decomposition;
- `tridiagonal_symmetric_eigenvalues_qr(D, L, Q, tol)` and `symmetric_eigenvalues_qr(A, tol)`
  -> `(eigenvalues, eigenvectors as rows)`, by the implicit-shift QR algorithm.

They take square matrices of any size and any float type (float16, bfloat16, float32,
float64). Each step is the one Warp takes, in the same order, so the factors, the order of
the eigenvalues and the signs of the eigenvectors agree with Warp's up to rounding; that is
why the iteration below is not free to change (a different shift or sweep order converges
too, but to a differently ordered result).
"""

from typing import Any

import kernelc as kc

_vector = kc.types.vector(Any, kc.Float)
_matrix = kc.types.matrix((Any, Any), kc.Float)
_SWEEPS_PER_ROW = 32  # QR sweeps allowed per eigenvalue; deflation usually takes 2 or 3


@kc.func
def _underflow_limit(value: kc.float16):
    # The square root of the smallest normal number: a length below it may have a squared
    # length that underflows, so it is rescaled first. (Decimal literals: in a kernel,
    # `2.0**-511` is a float32 power and would round to zero.)
    return kc.float16(0.0078125)  # 2^-7


@kc.func
def _underflow_limit(value: kc.bfloat16):  # noqa: F811
    return kc.bfloat16(1.0842021724855044e-19)  # 2^-63


@kc.func
def _underflow_limit(value: kc.float32):  # noqa: F811
    return kc.float32(1.0842021724855044e-19)  # 2^-63


@kc.func
def _underflow_limit(value: kc.float64):  # noqa: F811
    return kc.float64(1.4916681462400413e-154)  # 2^-511


@kc.func
def _epsilon(value: kc.float16):
    # The distance from 1 to the next representable number.
    return kc.float16(0.0009765625)  # 2^-10


@kc.func
def _epsilon(value: kc.bfloat16):  # noqa: F811
    return kc.bfloat16(0.0078125)  # 2^-7


@kc.func
def _epsilon(value: kc.float32):  # noqa: F811
    return kc.float32(1.1920928955078125e-07)  # 2^-23


@kc.func
def _epsilon(value: kc.float64):  # noqa: F811
    return kc.float64(2.220446049250313e-16)  # 2^-52


@kc.func
def _reflector(v: Any, pivot: int):
    """The Householder vector `u` and `2 / |u|²` of the reflection `I - (2 / |u|²) u uᵀ` that
    maps `v` onto its `pivot` axis, with `|v|` added to `v[pivot]` on the side of its sign
    (no cancellation). A zero `v` gives the scale 0: the identity."""
    norm = kc.length(v)
    if norm < _underflow_limit(norm):
        # Only the direction of u matters, so a tiny v is scaled up to unit components.
        largest = kc.max(kc.abs(v))
        if largest == v.dtype(0.0):
            return v, v.dtype(0.0)
        v = v / largest
        norm = kc.length(v)
    v[pivot] = v[pivot] + norm * kc.sign(v[pivot])
    return v, v.dtype(2.0) / kc.length_sq(v)


@kc.func
def _reflect_rows(M: Any, u: Any, scale: Any):
    """(I - scale u uᵀ) M."""
    return M - kc.outer(scale * u, u * M)


@kc.func
def _reflect_columns(M: Any, u: Any, scale: Any):
    """M (I - scale u uᵀ)."""
    return M - kc.outer(M * u, scale * u)


@kc.func
def _column_below(M: Any, column: int, first_row: int):
    """Column `column` of M with its entries above `first_row` set to zero."""
    v = type(M[0])()
    for row in range(type(v).length):
        v[row] = kc.where(first_row > row, v.dtype(0.0), M[row, column])
    return v


@kc.func
def householder_qr_decomposition(A: _matrix):
    """`(Q, R)` with `Q R = A`, `Q` orthogonal and `R` upper triangular, by one Householder
    reflection per column, the last included; each makes its diagonal entry of `R` the
    opposite sign of the entry it replaces (a positive diagonal is not enforced), and a
    column that is already zero is left alone. `R`'s entries below the diagonal hold
    rounding residue, not exact zeros."""
    R = A
    Q = kc.identity(n=type(A[0]).length, dtype=A.dtype)
    for i in range(type(A[0]).length):
        u, scale = _reflector(_column_below(R, i, i), i)
        R = _reflect_rows(R, u, scale)
        Q = _reflect_columns(Q, u, scale)
    return Q, R


@kc.func
def householder_make_hessenberg(A: _matrix):
    """`(Q, H)` with `Q H Qᵀ = A`, `Q` orthogonal with the identity's first row and column,
    and `H` upper Hessenberg (zero, up to rounding residue, below its first lower diagonal),
    by Householder reflections applied on both sides; a symmetric `A` gives a tridiagonal
    `H`."""
    H = A
    Q = kc.identity(n=type(A[0]).length, dtype=A.dtype)
    for i in range(1, type(A[0]).length):
        u, scale = _reflector(_column_below(H, i - 1, i), i)
        H = _reflect_columns(_reflect_rows(H, u, scale), u, scale)
        Q = _reflect_columns(Q, u, scale)
    return Q, H


@kc.func
def solve_triangular(R: _matrix, b: _vector):
    """`x` with `R x = b` for an upper triangular `R` (its lower part is not read unless it
    holds NaN or infinity), by back substitution; a zero diagonal entry gives a zero
    component instead of a division by zero."""
    x = type(b)(b.dtype(0.0))
    for step in range(b.length):
        row = b.length - 1 - step
        # x is still zero at and before `row`, so the full-row dot product reads only the
        # entries right of the diagonal.
        residual = b[row] - kc.dot(R[row], x)
        pivot = R[row, row]
        x[row] = kc.where(pivot == b.dtype(0.0), b.dtype(0.0), residual / pivot)
    return x


@kc.func
def inverse_qr(A: _matrix):
    """The inverse of a square matrix, as R^-1 Q^T from `householder_qr_decomposition`
    (a zero pivot of R gives zero components, not infinities)."""
    Q, R = householder_qr_decomposition(A)
    rows = type(A)()
    for i in range(type(A[0]).length):
        rows[i] = solve_triangular(R, Q[i])  # row i of the inverse's transpose
    return kc.transpose(rows)


@kc.func
def _wilkinson_shift(a: Any, b: Any, c: Any):
    """The eigenvalue of the symmetric 2x2 matrix [[a, c], [c, b]] nearer to b."""
    if c == type(a)(0.0):
        return b
    half_gap = type(a)(0.5) * (a - b)
    radius = kc.sqrt(half_gap * half_gap + c * c)
    if radius < _underflow_limit(a):
        largest = kc.max(kc.abs(half_gap), kc.abs(c))
        g = half_gap / largest
        h = c / largest
        radius = largest * kc.sqrt(g * g + h * h)
    return b - c * (c / (half_gap + kc.copysign(radius, half_gap)))


@kc.func
def _givens(a: Any, b: Any):
    """`(cos, sin)` of the rotation [[cos, -sin], [sin, cos]] taking (a, b) to (r, 0):
    `sin a + cos b = 0`; b = 0 gives the identity."""
    if b == type(a)(0.0):
        return type(a)(1.0), type(a)(0.0)
    radius = kc.sqrt(a * a + b * b)
    if radius < _underflow_limit(a):
        largest = kc.max(kc.abs(a), kc.abs(b))
        a = a / largest
        b = b / largest
        radius = kc.sqrt(a * a + b * b)
    inverse = type(a)(1.0) / radius
    return a * inverse, -b * inverse


@kc.func
def _decoupled(e: Any, a: Any, b: Any, tol: Any, eps: Any):
    """Whether the coupling e between diagonal entries a and b may be dropped: below `tol`
    times |a| + |b|, or at machine precision below eps times their geometric mean (with a
    floor of eps² (|a| + |b|), so a coupling to an exact zero can still go)."""
    size = kc.abs(a) + kc.abs(b)
    coupling = kc.abs(e)
    if coupling <= tol * size:
        return True
    if coupling > eps * size:
        return False  # the test below cannot pass: skip its square roots
    mean = kc.sqrt(kc.abs(a)) * kc.sqrt(kc.abs(b))
    return coupling <= kc.max(eps * mean, eps * eps * size)


@kc.func
def _block_end(L: Any, start: int, m: int):
    """The last row of the unreduced block that starts at `start` (whose L[start] != 0)."""
    end = start + 1
    while end + 1 < m:
        if L[end] == L.dtype(0.0):
            break
        end = end + 1
    return end


@kc.func
def tridiagonal_symmetric_eigenvalues_qr(D: _vector, L: _vector, Q: _matrix, tol: kc.Scalar):
    """Eigen-decomposition of a symmetric tridiagonal matrix by the QR algorithm with an
    implicit Wilkinson shift (Arbenz, *Numerical Methods for Solving Large Scale Eigenvalue
    Problems*, ch. 4).

    Args:
        D: The diagonal.
        L: The lower diagonal, `L[i] = A[i + 1, i]`: of the length of `D` (as Warp's callers
            pass it; the last entry is not part of the matrix, keep it zero) or one shorter.
        Q: The rows the rotations are applied to: the identity for eigenvectors of the
            tridiagonal matrix itself, or the transpose of a previous orthogonal transform.
        tol: Couplings below `tol` times the sum of their two diagonal neighbours count as
            zero; below machine epsilon, the tightest test the precision allows is used.
            Converted to D's scalar type (Warp requires that type).

    Returns:
        `(eigenvalues, P)`, unsorted, with `P` = (the eigenvectors of the tridiagonal `T`
        as rows) `Q`, so that `Qᵀ T Q = Pᵀ diag(eigenvalues) P`.
    """
    zero = D.dtype(0.0)
    m = D.length
    eps = _epsilon(zero)
    threshold = D.dtype(tol)
    # Work on values of magnitude at most one, so the rotations of small blocks do not
    # underflow; the floor keeps 1 / norm finite for subnormal input.
    norm = kc.max(kc.max(kc.abs(D)), kc.max(kc.abs(L)))
    if norm == zero:
        return D, Q
    norm = kc.max(norm, _underflow_limit(zero) * _underflow_limit(zero))
    D = D * (D.dtype(1.0) / norm)
    L = L * (D.dtype(1.0) / norm)
    start = 0
    x = zero  # the entry the next rotation keeps
    y = zero  # the entry it zeroes: the bulge below the lower diagonal
    for _sweep in range(_SWEEPS_PER_ROW * m):
        # Drop negligible couplings; the rotations stay inside their blocks, so a dropped
        # coupling stays zero.
        done = True
        for k in range(m - 1):
            if _decoupled(L[k], D[k], D[k + 1], threshold, eps):
                L[k] = zero
            else:
                done = False
        if done:
            break
        # One implicit-shift QR step on each unreduced block, chasing the bulge down.
        end = -1
        for k in range(m - 1):
            if k >= end:
                if k == end or L[k] == zero:
                    continue  # not the first row of a block
                start = k
                end = _block_end(L, start, m)
                shift = _wilkinson_shift(D[end - 1], D[end], L[end - 1])
                x = D[start] - shift
                y = L[start]
            c, s = _givens(x, y)
            gap = D[k] - D[k + 1]
            moved = (D.dtype(2.0) * c * L[k] + gap * s) * s
            D[k] = D[k] - moved
            D[k + 1] = D[k + 1] + moved
            L[k] = gap * c * s + (c * c - s * s) * L[k]
            if k > start:
                L[k - 1] = c * x - s * y
            x = L[k]
            if k + 1 < L.length:  # an L one shorter than D has no entry after the last
                y = -s * L[k + 1]
                L[k + 1] = L[k + 1] * c
            row = Q[k]
            Q[k] = c * row - s * Q[k + 1]
            Q[k + 1] = c * Q[k + 1] + s * row
    return D * norm, Q


@kc.func
def symmetric_eigenvalues_qr(A: _matrix, tol: kc.Scalar):
    """Eigen-decomposition of a symmetric matrix: a Householder reduction to tridiagonal
    form, then `tridiagonal_symmetric_eigenvalues_qr` (see there for `tol`).

    Returns:
        `(eigenvalues, P)`, unsorted, with the eigenvectors as the rows of `P`:
        `A = Pᵀ diag(eigenvalues) P`.
    """
    Q, H = householder_make_hessenberg(A)
    diagonal = kc.get_diag(H)
    lower = type(diagonal)(A.dtype(0.0))
    for i in range(1, diagonal.length):
        lower[i - 1] = H[i, i - 1]
    return tridiagonal_symmetric_eigenvalues_qr(diagonal, lower, kc.transpose(Q), tol)
