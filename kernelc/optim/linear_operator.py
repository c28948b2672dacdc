"""`LinearOperator`, `aslinearoperator` and `preconditioner` (Warp's `warp.optim.linear`).

A linear operator is a shape, an element type, a device and a generalised matrix-vector
product `matvec(x, y, z, alpha, beta)`: z = alpha * A x + beta * y. Dense matrices (2-d
arrays) and diagonal ones (1-d arrays) of float16, float32 or float64 scalars have built-in
products; anything else can be wrapped by giving its own `matvec`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kernelc as kc
from kernelc import types as T
from kernelc.optim import linear_kernels as K
from kernelc.runtime.array import array
from kernelc.runtime.device import Device

SCALAR_TYPES = (T.float16, T.float32, T.float64)

_NO_SPARSE = ("only kernelc's own sparse matrices (kernelc.sparse.BsrMatrix) are accepted, "
              "not Warp's warp.sparse.BsrMatrix; build it with kernelc.sparse, or pass a "
              "dense 2-d kc.array, a 1-d kc.array of diagonal values, or a LinearOperator "
              "with your own matvec")


class LinearOperator:
    """A linear operator, the left-hand side of the iterative solvers (Warp's
    `warp.optim.linear.LinearOperator`).

    `matvec(x, y, z, alpha, beta)` must store `alpha * (A @ x) + beta * y` in `z`, for 1-d
    arrays `x`, `y` and `z`; the solvers call it with `alpha` and `beta` as keyword
    arguments. `z` may be `y` itself (then `beta` is 0). If `matvec` does anything but
    launch kernels, pass `use_cuda_graph=False` to the solvers on CUDA devices.

    Args:
        shape: (rows, columns) of the operator.
        dtype: Type of the operator's elements (float16, float32 or float64 for the solvers).
        device: Device on which the products run.
        matvec: The generalised matrix-vector product.
        batch_offsets: Optional 1-d int32 array of B + 1 offsets that splits the scalar
            unknowns into B independent subproblems: subproblem k is
            `batch_offsets[k]:batch_offsets[k + 1]`. Unknowns at or past
            `batch_offsets[-1]` are inactive: the solvers leave them alone.
        max_batch_length: Optional upper bound on a subproblem's length (needs
            `batch_offsets`); it sizes the reductions on CUDA devices, and a solver object
            must keep it.

    Raises:
        ValueError: `max_batch_length` without `batch_offsets`, or negative; or
            `batch_offsets` is not 1-d with at least 2 entries.
        TypeError: `batch_offsets` is not an int32 `kc.array` with memory.
    """

    def __init__(self, shape: tuple[int, ...], dtype: Any, device: Any, matvec: Callable,
                 batch_offsets: array | None = None,
                 max_batch_length: int | None = None) -> None:
        if max_batch_length is not None:
            if batch_offsets is None:
                raise ValueError("max_batch_length requires batch_offsets")
            if max_batch_length < 0:
                raise ValueError("max_batch_length must be non-negative")
        if batch_offsets is not None:
            _check_offsets(batch_offsets)
        self._shape = tuple(shape)
        self._dtype = dtype
        self._device = device
        self._matvec = matvec
        self._batch_offsets = batch_offsets
        self._max_batch_length = max_batch_length

    @property
    def shape(self) -> tuple[int, ...]:
        """Number of rows and columns ((n,) for an operator made from diagonal values)."""
        return self._shape

    @property
    def dtype(self) -> Any:
        """Type of the operator's elements."""
        return self._dtype

    @property
    def device(self) -> Device:
        """Device on which the products run."""
        return self._device

    @property
    def matvec(self) -> Callable:
        """The product: `op.matvec(x, y, z, alpha, beta)` stores `alpha * A x + beta * y`
        in `z`."""
        return self._matvec

    @property
    def scalar_type(self) -> Any:
        """Scalar type of the elements (the element type itself for scalars)."""
        dtype = self._dtype
        return dtype.dtype if isinstance(dtype, (T.VectorType, T.MatrixType)) else dtype

    @property
    def batch_offsets(self) -> array | None:
        """The offsets splitting the scalar unknowns into subproblems, or None."""
        return self._batch_offsets

    @property
    def batch_count(self) -> int:
        """Number of independent subproblems (1 without `batch_offsets`)."""
        return 1 if self._batch_offsets is None else self._batch_offsets.shape[0] - 1

    @property
    def max_batch_length(self) -> int | None:
        """Upper bound on a subproblem's length, or None."""
        return self._max_batch_length

    def __repr__(self) -> str:
        batches = "" if self._batch_offsets is None else f", batch_count={self.batch_count}"
        return (f"LinearOperator(shape={self._shape}, dtype={self._dtype!r}, "
                f"device={self._device}{batches})")


def _check_offsets(offsets: Any) -> None:
    if not isinstance(offsets, array) or offsets.ptr is None:
        raise TypeError(f"batch_offsets must be a kc.array of int32 with memory, got "
                        f"{type(offsets).__name__}")
    if offsets.dtype != T.int32:
        raise TypeError(f"batch_offsets must hold int32 offsets, got {offsets.dtype!r}")
    if offsets.ndim != 1 or offsets.shape[0] < 2:
        raise ValueError(f"batch_offsets must be a 1-d array of B + 1 offsets (B >= 1), got "
                         f"shape {offsets.shape}")


def scalar_rows(op: LinearOperator) -> int:
    """Number of scalar rows: a diagonal operator of vectors has `length` per entry."""
    dtype = op.dtype
    if len(op.shape) == 1 and isinstance(dtype, T.VectorType):
        return op.shape[0] * dtype.length
    return op.shape[0]


def is_sparse_matrix(A: Any) -> bool:
    """Whether `A` looks like a sparse matrix (kernelc's, or Warp's, which it cannot take)."""
    module = type(A).__module__ or ""
    return type(A).__name__ == "BsrMatrix" or (module.startswith("warp") and "sparse" in module)


def _check_matrix_array(A: array, what: str) -> None:
    if A.ptr is None:
        raise TypeError(f"{what}: the matrix must be a kc.array with memory, not a type "
                        f"annotation")
    if A.ndim == 1 and isinstance(A.dtype, T.VectorType) and A.dtype.dtype in SCALAR_TYPES:
        return  # the diagonal of a block-diagonal operator, as vectors
    if A.dtype not in SCALAR_TYPES:
        raise TypeError(f"{what}: the matrix must hold float16, float32 or float64 scalars, got "
                        f"{A.dtype!r}")
    if A.ndim not in (1, 2):
        raise ValueError(f"{what}: the matrix must be a 2-d array (dense) or a 1-d array "
                         f"(diagonal), got {A.ndim} dimensions")


def _dense_matvec(A: array) -> Callable:
    def dense_mv(x: array, y: array, z: array, alpha: float, beta: float) -> None:
        scalar = A.dtype
        kc.launch(K.dense_mv_kernel, dim=A.shape[0], device=A.device,
                  inputs=[A, x, y, z, scalar(alpha), scalar(beta), scalar(0)])

    return dense_mv


def _diag_matvec(A: array) -> Callable:
    diag = A
    if isinstance(A.dtype, T.VectorType):  # vector diagonals act on their scalar views
        from kernelc.sparse.matrix import scalar_view

        diag = scalar_view(A, A.dtype.dtype, (A.shape[0] * A.dtype.length,))

    def diag_mv(x: array, y: array, z: array, alpha: float, beta: float) -> None:
        scalar, count = diag.dtype, diag.shape[0]
        x, y, z = (_scalars(v, scalar, count) for v in (x, y, z))
        kc.launch(K.diag_mv_kernel, dim=count, device=A.device,
                  inputs=[diag, x, y, z, scalar(alpha), scalar(beta), scalar(0)])

    return diag_mv


def _scalars(v: array, scalar: T.ScalarType, count: int) -> array:
    """A contiguous array of vectors (a block system's unknowns) seen as `count` scalars."""
    if v.dtype == scalar or not v.is_contiguous or v.size * v.dtype.size != count * scalar.size:
        return v
    from kernelc.sparse.matrix import scalar_view

    return scalar_view(v, scalar, (count,))


def _is_kernelc_sparse(A: Any) -> bool:
    from kernelc.sparse import BsrMatrix, BsrScalingExpression

    return isinstance(A, (BsrMatrix, BsrScalingExpression))


def _sparse_matvec(A: Any) -> Callable:
    from kernelc.sparse import bsr_mv

    def sparse_mv(x: array, y: array, z: array, alpha: float, beta: float) -> None:
        # Warp's: z takes y's values, then bsr_mv updates z in place.
        if z.ptr != y.ptr and beta != 0.0:
            kc.copy(z, y)
        bsr_mv(A, x, z, alpha, beta)

    return sparse_mv


def aslinearoperator(A: Any, batch_offsets: array | None = None,
                     max_batch_length: int | None = None) -> LinearOperator | None:
    """Wraps a matrix as a `LinearOperator` (Warp's `warp.optim.linear.aslinearoperator`).

    `A` may be a 2-d `kc.array` (a dense matrix), a 1-d `kc.array` (the diagonal of a
    diagonal matrix, of scalars or of vectors), of float16, float32 or float64, a
    `kernelc.sparse.BsrMatrix` (or a scaled one, `alpha * A`; its products use `bsr_mv`),
    or a `LinearOperator` (returned as it is, batch arguments ignored, as is None).

    Args:
        A: The matrix.
        batch_offsets: Optional offsets splitting the unknowns into independent
            subproblems (see `LinearOperator`).
        max_batch_length: Optional bound on a subproblem's length (needs `batch_offsets`).

    Returns:
        The operator (None for None).

    Raises:
        NotImplementedError: `A` is a Warp `warp.sparse.BsrMatrix` (not a kernelc one).
        TypeError: The array's dtype is not float16, float32 or float64 (or vectors of them), or
            `batch_offsets` is not a 1-d int32 array.
        ValueError: `A` is of another kind, or `max_batch_length` is given without
            `batch_offsets` or is negative.
    """
    if A is None or isinstance(A, LinearOperator):
        return A
    if isinstance(A, array):
        _check_matrix_array(A, "aslinearoperator")
        matvec = _dense_matvec(A) if A.ndim == 2 else _diag_matvec(A)
        return LinearOperator(A.shape, A.dtype, A.device, matvec, batch_offsets=batch_offsets,
                              max_batch_length=max_batch_length)
    if _is_kernelc_sparse(A):
        return LinearOperator(A.shape, A.dtype, A.device, _sparse_matvec(A),
                              batch_offsets=batch_offsets, max_batch_length=max_batch_length)
    if is_sparse_matrix(A):
        raise NotImplementedError(f"aslinearoperator: {_NO_SPARSE}")
    raise ValueError(f"Unable to create LinearOperator from {A!r} (expected a 2-d or 1-d "
                     f"kc.array or a LinearOperator)")


def _jacobi(A: Any, use_abs: bool) -> LinearOperator:
    if _is_kernelc_sparse(A):
        from kernelc.sparse.ops import inverse_diagonal

        return aslinearoperator(inverse_diagonal(A, use_abs))
    if not isinstance(A, array) or A.ndim != 2:
        if is_sparse_matrix(A):
            raise NotImplementedError(f"preconditioner: {_NO_SPARSE}")
        raise ValueError(f"Unsupported source matrix type for building diagonal preconditioner: "
                         f"{A!r} (expected a dense 2-d kc.array)")
    _check_matrix_array(A, "preconditioner")
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"preconditioner: the matrix must be square, got shape {A.shape}")
    scalar = A.dtype
    inv_diag = kc.empty(A.shape[0], dtype=scalar, device=A.device)
    kc.launch(K.inverse_diagonal_kernel, dim=A.shape[0], device=A.device,
              inputs=[A, inv_diag, int(use_abs), scalar(0), scalar(1)])
    return aslinearoperator(inv_diag)


def preconditioner(A: Any, ptype: str = "diag") -> LinearOperator | None:
    """A preconditioner for a dense or sparse matrix (Warp's
    `warp.optim.linear.preconditioner`).

    Args:
        A: A square 2-d `kc.array` of float16, float32 or float64, or a square
            `kernelc.sparse.BsrMatrix` with square blocks (its Jacobi preconditioner inverts
            the diagonal coefficients of its diagonal blocks, as Warp's does).
        ptype: `"diag"`: Jacobi, the inverse of A's diagonal; `"diag_abs"`: the inverse of
            the absolute values of A's diagonal (a zero diagonal coefficient is inverted
            to 1); `"block_jacobi_direct"`, `"block_jacobi_sequential"`,
            `"block_jacobi_tile"`: the inverse of A's diagonal blocks, for a sparse A (see
            `kernelc.optim.linear_precond`); `"fsai"`: `FSAI(A)`, a factorized sparse
            approximate inverse of an SPD sparse A; `"id"`: no preconditioner (None).

    Returns:
        A `LinearOperator`, or None for `"id"`.

    Raises:
        ValueError: Unknown `ptype` (None included, as in Warp), or `A` does not fit it
            (not square, blocks not square, not sparse for the block types, ...).
        TypeError: `"fsai"` with an unsupported scalar type.
        NotImplementedError: A Warp (not kernelc) sparse `A`.
    """
    if ptype == "id":
        return None
    if ptype in ("diag", "diag_abs"):
        return _jacobi(A, use_abs=ptype == "diag_abs")
    if ptype == "fsai":
        from kernelc.optim.linear_fsai import FSAI

        return FSAI(A)
    from kernelc.optim.linear_precond import BLOCK_JACOBI_TYPES, block_jacobi

    if ptype in BLOCK_JACOBI_TYPES:
        if is_sparse_matrix(A) and not _is_kernelc_sparse(A):
            raise NotImplementedError(f"preconditioner: {_NO_SPARSE}")
        return block_jacobi(A, ptype, lambda m: _jacobi(m, use_abs=False))
    raise ValueError(f"Unsupported preconditioner type '{ptype}' (kernelc supports 'diag', "
                     f"'diag_abs', 'block_jacobi_direct', 'block_jacobi_sequential', "
                     f"'block_jacobi_tile', 'fsai' and 'id')")
