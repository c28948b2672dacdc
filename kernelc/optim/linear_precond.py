"""Block-Jacobi preconditioners of sparse block matrices (Warp's `"block_jacobi_*"`
preconditioner types of `warp.optim.linear.preconditioner`).

Each one inverts the diagonal blocks of a square `kernelc.sparse.BsrMatrix` with square
blocks, one block per thread:

- `"block_jacobi_direct"`: Householder QR inverse; a numerically singular block becomes
  the identity.
- `"block_jacobi_sequential"`: LDL^T factors; a block that is not symmetric or not
  numerically positive definite becomes the identity.
- `"block_jacobi_tile"`: Cholesky factors (float32 and float64 only); a block that is not
  symmetric becomes the identity, one that is not positive definite gives non-finite values.

A matrix of 1x1 blocks (CSR) gets the scalar Jacobi preconditioner instead.
"""

from __future__ import annotations

from typing import Any

import kernelc as kc
from kernelc import types as T
from kernelc.optim import linear_precond_kernels as K
from kernelc.optim.linear_operator import LinearOperator
from kernelc.runtime.array import array

BLOCK_JACOBI_TYPES = ("block_jacobi_direct", "block_jacobi_sequential", "block_jacobi_tile")

# Relative pivot tolerance under which a block counts as singular (about eps ** 0.75; for
# float16 already about one ulp), Warp's values.
PIVOT_REL_TOL = {T.float16: 1.0e-3, T.float32: 1.0e-6, T.float64: 1.0e-12}


def vector_view(v: array, scalar: T.ScalarType, block_size: int) -> array:
    """Contiguous `v` (scalars, or vectors of any length) seen as vectors of `block_size`
    scalars; raises ValueError for a non-contiguous `v` or a size that does not divide."""
    components = getattr(v.dtype, "count", 1)
    count = v.size * components
    if not v.is_contiguous:
        raise ValueError("block-Jacobi preconditioner: vectors must be contiguous")
    if count % block_size:
        raise ValueError(f"block-Jacobi preconditioner: {count} scalars do not make whole "
                         f"blocks of {block_size}")
    from kernelc.sparse.matrix import scalar_view

    return scalar_view(v, kc.types.vector(block_size, scalar), (count // block_size,))


def _check_matrix(A: Any) -> None:
    from kernelc.sparse import BsrMatrix

    if not isinstance(A, BsrMatrix):
        raise ValueError(f"Block-Jacobi preconditioner requires a kernelc.sparse.BsrMatrix "
                         f"input, got {type(A).__name__}")
    rows, cols = A.block_shape
    if rows != cols:
        raise ValueError(f"Block-Jacobi preconditioner requires square matrix blocks, got "
                         f"shape {A.block_shape}")
    if A.nrow != A.ncol:
        raise ValueError(f"Block-Jacobi preconditioner requires as many block rows as block "
                         f"columns, got {A.nrow} block rows and {A.ncol} block columns "
                         f"(overall shape {A.shape})")


def block_jacobi(A: Any, ptype: str, scalar_jacobi: Any) -> LinearOperator:
    """The `ptype` block-Jacobi preconditioner of `A` (`scalar_jacobi(A)` for 1x1 blocks).

    Raises:
        ValueError: `A` is not a BsrMatrix, or it or its blocks are not square; or
            `"block_jacobi_tile"` on scalars other than float32 and float64.
    """
    _check_matrix(A)
    block_size = A.block_shape[0]
    if block_size == 1:
        return scalar_jacobi(A)
    scalar = A.scalar_type
    if ptype == "block_jacobi_tile" and scalar not in (T.float32, T.float64):
        raise ValueError(f"'block_jacobi_tile' preconditioner requires a float32 or float64 "
                         f"scalar type, got {scalar!r}")
    from kernelc.sparse import bsr_get_diag

    setup, apply = {
        "block_jacobi_direct": (K.qr_inverse_kernel, K.inverse_mv_kernel),
        "block_jacobi_sequential": (K.ldlt_kernel, K.ldlt_mv_kernel),
        "block_jacobi_tile": (K.cholesky_kernel, K.cholesky_mv_kernel),
    }[ptype]
    device = A.device
    diag = bsr_get_diag(A)
    count = diag.shape[0]
    factors = kc.empty_like(diag)
    rel_tol = scalar(PIVOT_REL_TOL.get(scalar, 1.0e-6))
    if count:
        kc.launch(setup, dim=count, device=device, inputs=[diag, rel_tol, factors])

    def matvec(x: array, y: array, z: array, alpha: float, beta: float) -> None:
        views = [vector_view(v, scalar, block_size) for v in (x, y, z)]
        if count:
            kc.launch(apply, dim=count, device=device,
                      inputs=[factors, *views, scalar(alpha), scalar(beta)])

    size = count * block_size
    return LinearOperator((size, size), A.dtype, device, matvec=matvec)
