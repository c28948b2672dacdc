"""Small dense linear algebra on matrix values, as kernelc funcs usable in kernels (the
device functions of Warp's `warp.fem.linalg`): `symmetric_eigen` (cyclic Jacobi), which the
Dirichlet projection uses to normalise matrix-block projectors (`inverse_qr` and the QR
funcs are in `linalg_qr.py`).

kernelc funcs cannot build a value of their argument's type (`type(A)(...)`), so each is
generated per square matrix type and the variants are registered as overloads of one func.
"""

from typing import Any

import kernelc as kc
from kernelc.fem.types import mat_type, vec_type

_SIZES = (1, 2, 3, 4)
_SCALARS = (kc.float32, kc.float64)
_JACOBI_SWEEPS = 10  # cyclic sweeps; 2x2 to 4x4 blocks converge in far fewer


def _identity_func(M: Any, n: int, scalar: Any) -> Any:
    @kc.func
    def identity():
        eye = M(scalar(0.0))
        for i in range(n):
            eye[i, i] = scalar(1.0)
        return eye

    return identity


def _make_symmetric_eigen(n: int, scalar: Any) -> Any:
    M, V = mat_type(n, n, scalar), vec_type(n, scalar)
    identity = _identity_func(M, n, scalar)
    zero, one, two = scalar(0.0), scalar(1.0), scalar(2.0)

    @kc.func
    def symmetric_eigen(A: M):
        # Cyclic Jacobi rotations; off-diagonal zeros are skipped, so diagonal matrices come
        # back exactly (eigenvalues = diagonal, eigenvectors = identity).
        D = A
        E = identity()
        for _sweep in range(_JACOBI_SWEEPS):
            for p in range(n):
                for q in range(p + 1, n):
                    apq = D[p, q]
                    if apq != zero:
                        theta = (D[q, q] - D[p, p]) / (two * apq)
                        t = one / (kc.abs(theta) + kc.sqrt(theta * theta + one))
                        t = kc.where(theta < zero, -t, t)
                        c = one / kc.sqrt(t * t + one)
                        s = t * c
                        J = identity()
                        J[p, p] = c
                        J[q, q] = c
                        J[p, q] = s
                        J[q, p] = -s
                        D = kc.transpose(J) * D * J
                        E = E * J
        values = V(zero)
        for i in range(n):
            values[i] = D[i, i]
        return values, kc.transpose(E)  # eigenvectors as rows

    return symmetric_eigen


def _make_normalize(n: int, scalar: Any) -> Any:
    M, V = mat_type(n, n, scalar), vec_type(n, scalar)
    eigen = symmetric_eigen

    @kc.func
    def normalize_projector_block(P: M, b: V):
        # Keep the modes above 1e-6 of the trace as an orthogonal projection, and scale the
        # value's components along them by the inverse eigenvalues.
        eps = kc.trace(P) * scalar(1.0e-6)
        values, vectors = eigen(P)
        unit = M(scalar(0.0))
        scaled = V(scalar(0.0))
        for k in range(n):
            if values[k] > eps:
                v = vectors[k]
                unit = unit + kc.outer(v, v)
                scaled = scaled + (kc.dot(v, b) / values[k]) * v
        return unit, scaled

    return normalize_projector_block


def _overloads(make: Any) -> Any:
    first = None
    for scalar in _SCALARS:
        for n in _SIZES:
            func = make(n, scalar)
            if first is None:
                first = func
            else:
                first.add_variant(func)
    return first


symmetric_eigen = _overloads(_make_symmetric_eigen)
symmetric_eigen.__doc__ = ("(eigenvalues, eigenvectors as rows) of a symmetric matrix, by "
                           "cyclic Jacobi rotations.")
normalize_projector_block = _overloads(_make_normalize)
