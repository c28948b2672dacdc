"""`BsrMatrix`, its scaled form (`alpha * A`), and the helpers every sparse function shares.

A BSR matrix of `nrow` x `ncol` blocks stores its non-zero blocks row after row: the blocks
of row r are `values[offsets[r]:offsets[r + 1]]`, at block columns
`columns[offsets[r]:offsets[r + 1]]`, sorted increasingly. A CSR matrix is the case of
scalar (1x1) blocks. That is compact storage; padded storage (Warp's `topology="padded"`)
reserves a capacity per row: row r owns slots `offsets[r]:offsets[r + 1]`, of which the first
`row_counts[r]` hold its blocks (see kernelc/sparse/padded.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernelc as kc
from kernelc import types as T
from kernelc.runtime.array import array
from kernelc.runtime.device import Device

SCALAR_TYPES = (T.float16, T.float32, T.float64)


def resolve_block_type(block_type: Any) -> T.Type:
    """The kernelc block type of `block_type`: float16, float32 or float64, or a matrix of
    those.

    Raises:
        ValueError: Neither a scalar nor a matrix type (Warp's error).
        TypeError: A scalar type other than float16, float32 and float64.
    """
    resolved = T.as_type(block_type)
    if isinstance(resolved, T.MatrixType):
        scalar = resolved.dtype
    elif isinstance(resolved, T.ScalarType):
        scalar = resolved
    else:
        raise ValueError(f"BsrMatrix block type must be either a matrix type "
                         f"(kc.types.matrix(shape, dtype)) or a scalar type; got {block_type!r}")
    if scalar not in SCALAR_TYPES:
        raise TypeError(f"kernelc.sparse supports float16, float32 and float64 blocks; got "
                        f"{resolved!r}")
    return resolved


def block_type_for(scalar: T.ScalarType, block_shape: tuple[int, int]) -> T.Type:
    """A scalar for 1x1 blocks, else a matrix type of that shape."""
    if tuple(block_shape) == (1, 1):
        return scalar
    return kc.types.matrix(shape=tuple(block_shape), dtype=scalar)


def scalar_view(arr: array, scalar: T.ScalarType, shape: tuple[int, ...]) -> array:
    """An array of `scalar` elements with `shape` over the memory of contiguous `arr`."""
    view = array(ptr=arr.ptr, dtype=scalar, shape=shape, device=arr.device,
                 capacity=max(arr.capacity, 1))
    view._sparse_owner = arr  # keeps the memory alive as long as the view
    if arr.grad is not None:
        # The same view of the gradient, so that kernels reading or writing the view are
        # differentiated into `arr.grad` (kc.Tape).
        view.grad = scalar_view(arr.grad, scalar, shape)
    return view


def zero_values(arr: array) -> None:
    """`arr.zero_()`, differentiably: while a `kc.Tape` records and `arr` has a grad, the
    backward pass zeroes that grad at this point (the overwritten values get no gradient,
    and later writes into `arr`, such as atomic additions, do not consume it)."""
    arr.zero_()
    if arr.grad is None:
        return
    from kernelc.runtime.array_grad import active_tape

    tape = active_tape()
    if tape is not None:
        tape.record_func(arr.grad.zero_, [arr])


class BsrMatrix:
    """A block sparse row (BSR) matrix (Warp's `warp.sparse.BsrMatrix`); with scalar blocks,
    a CSR matrix.

    Make one with `bsr_zeros`, `bsr_from_triplets`, `bsr_diag`, `bsr_identity`,
    `bsr_copy` or `bsr_transposed`, not directly.

    Operators follow Warp: `A @ x` (an array: `bsr_mv`; a matrix: `bsr_mm`), `x @ A` (an
    array: the transposed product), `A + B`, `A - B`, `A += B`, `A -= B` (`bsr_axpy` into a
    copy or in place), `alpha * A`, `A * alpha`, `A / alpha`, `-A` (lazy scaled matrices
    that every function accepts), `A *= alpha` (`bsr_scale`).

    Attributes:
        nrow (int): Number of rows of blocks.
        ncol (int): Number of columns of blocks.
        nnz (int): Number of stored block slots, `offsets[nrow]`: the exact block count
            of a compact matrix (kernelc computes topologies on the host), the total row
            capacity of a padded one.
        offsets (kc.array): `nrow + 1` ints: the blocks of row r are
            `offsets[r]:offsets[r + 1]`.
        columns (kc.array): Block column of each stored block (at least `nnz` ints).
        values (kc.array): Value of each stored block (at least `nnz` blocks).
        row_counts (kc.array | None): Padded storage: the number of blocks in each row
            (stored in the row's first slots); None for compact storage.
    """

    def __init__(self, nrow: int, ncol: int, block_type: Any, device: Any = None) -> None:
        self._block_type = resolve_block_type(block_type)
        self.nrow = int(nrow)
        self.ncol = int(ncol)
        if self.nrow < 0 or self.ncol < 0:
            raise ValueError(f"a BsrMatrix needs non-negative block counts, got "
                             f"({self.nrow}, {self.ncol})")
        self.nnz = 0
        self.row_counts = None
        self._status = None  # 1-element int32 array once a padded operation ran
        self.offsets = kc.zeros(self.nrow + 1, dtype=kc.int32, device=device)
        self.columns = kc.empty(0, dtype=kc.int32, device=device)
        self.values = kc.empty(0, dtype=self._block_type, device=device)

    # ---- Warp's properties ------------------------------------------------------------

    @property
    def scalar_type(self) -> T.ScalarType:
        """Scalar type of the block coefficients (the block type itself for CSR)."""
        block = self.values.dtype
        return block.dtype if isinstance(block, T.MatrixType) else block

    @property
    def block_shape(self) -> tuple[int, int]:
        """Shape of one block ((1, 1) for scalar blocks)."""
        block = self.values.dtype
        return tuple(block.shape) if isinstance(block, T.MatrixType) else (1, 1)

    @property
    def block_size(self) -> int:
        """Number of scalars in one block."""
        rows, cols = self.block_shape
        return rows * cols

    @property
    def shape(self) -> tuple[int, int]:
        """Shape in scalars: (nrow * block rows, ncol * block columns)."""
        rows, cols = self.block_shape
        return (self.nrow * rows, self.ncol * cols)

    @property
    def dtype(self) -> T.Type:
        """Type of one block (`values.dtype`)."""
        return self.values.dtype

    @property
    def device(self) -> Device:
        """Device on which the arrays live."""
        return self.offsets.device

    @property
    def requires_grad(self) -> bool:
        """Whether the block values track gradients (`values.requires_grad`): operations
        whose values are computed by kernels are then recorded by an active `kc.Tape`."""
        return self.values.requires_grad

    @property
    def scalar_values(self) -> array:
        """The values as a (capacity, block rows, block columns) array of scalars (a view)."""
        return scalar_view(self.values, self.scalar_type, (self.values.shape[0],
                                                           *self.block_shape))

    def nnz_sync(self) -> int:
        """Reads `offsets[nrow]` back from the device into `nnz` and returns it."""
        self.nnz = int(self.offsets.numpy()[self.nrow])
        return self.nnz

    def copy_nnz_async(self) -> None:
        """Deprecated (as in Warp): `nnz` is always current in kernelc, whose topologies are
        computed on the host, so there is no transfer to start. Warns with a
        DeprecationWarning; call `nnz_sync()` instead."""
        from kernelc.logger import log_warning

        log_warning("BsrMatrix.copy_nnz_async() is deprecated; call nnz_sync() to read the "
                    "block count", DeprecationWarning, stacklevel=2)

    def notify_nnz_changed(self, nnz: int | None = None, nnz_capacity: int | None = None) -> None:
        """Tells the matrix that `offsets` was changed outside `kernelc.sparse`.

        Args:
            nnz: The new number of block slots; None reads it from `offsets[nrow]` (or
                takes `nnz_capacity` when given).
            nnz_capacity: Slots to allocate in `columns` and `values` (default: `nnz`).
                They grow, keeping their contents, if too short.
        """
        if nnz is None:
            nnz = self.nnz_sync() if nnz_capacity is None else nnz_capacity
        self.nnz = int(nnz)
        capacity = self.nnz if nnz_capacity is None else int(nnz_capacity)
        if capacity < self.nnz:
            raise ValueError(f"capacity must be at least nnz, got {capacity} and {self.nnz}")
        ensure_fits(self, capacity, keep=True)

    def status_sync(self) -> int:
        """The status of padded operations: `BSR_STATUS_SUCCESS` (0) or
        `BSR_STATUS_ROW_CAPACITY_EXCEEDED` (1). Sticky: operations set it, never clear it."""
        return 0 if self._status is None else int(self._status.numpy()[0])

    def status_message(self) -> str:
        """`status_sync()` in words."""
        status = self.status_sync()
        if status == 0:
            return "success"
        if status == 1:
            return "padded row capacity exceeded"
        return f"unknown sparse status {status}"

    def clear_status(self) -> None:
        """Resets the status to `BSR_STATUS_SUCCESS`."""
        if self._status is not None:
            self._status.zero_()

    def _ensure_status(self) -> array:
        if self._status is None or self._status.device != self.device:
            self._status = kc.zeros(1, dtype=kc.int32, device=self.device)
        return self._status

    def uncompress_rows(self, out: array | None = None) -> array:
        """The row of each block slot (`nnz` ints; -1 for unused padded slots; computed on
        the host).

        Args:
            out: Optional int32 array of at least `nnz` elements to fill (and return).
        """
        rows = np.full(self.nnz, -1, np.int32)
        active_rows, _, slots = host_active_blocks(self)
        rows[slots[slots < self.nnz]] = active_rows[slots < self.nnz]
        if out is None:
            return kc.array(rows, dtype=kc.int32, device=self.device)
        kc.copy(out, kc.array(rows, dtype=kc.int32, device=self.device), count=self.nnz)
        return out

    # ---- operators (Warp's) -----------------------------------------------------------

    def __add__(self, y: Any) -> BsrMatrix:
        from kernelc.sparse.ops import bsr_axpy, bsr_copy

        return bsr_axpy(y, bsr_copy(self))

    def __radd__(self, x: Any) -> BsrMatrix:
        from kernelc.sparse.ops import bsr_axpy, bsr_copy

        return bsr_axpy(x, bsr_copy(self))

    def __iadd__(self, y: Any) -> BsrMatrix:
        from kernelc.sparse.ops import bsr_axpy

        return bsr_axpy(y, self)

    def __sub__(self, y: Any) -> BsrMatrix:
        from kernelc.sparse.ops import bsr_axpy, bsr_copy

        return bsr_axpy(y, bsr_copy(self), alpha=-1.0)

    def __rsub__(self, x: Any) -> BsrMatrix:
        from kernelc.sparse.ops import bsr_axpy, bsr_copy

        return bsr_axpy(x, bsr_copy(self), beta=-1.0)

    def __isub__(self, y: Any) -> BsrMatrix:
        from kernelc.sparse.ops import bsr_axpy

        return bsr_axpy(y, self, alpha=-1.0)

    def __mul__(self, y: Any) -> BsrScalingExpression:
        return BsrScalingExpression(self, y)

    def __rmul__(self, x: Any) -> BsrScalingExpression:
        return BsrScalingExpression(self, x)

    def __imul__(self, y: Any) -> BsrMatrix:
        from kernelc.sparse.ops import bsr_scale

        return bsr_scale(self, y)

    def __truediv__(self, y: Any) -> BsrScalingExpression:
        return BsrScalingExpression(self, 1.0 / y)

    def __neg__(self) -> BsrScalingExpression:
        return BsrScalingExpression(self, -1.0)

    def __matmul__(self, y: Any) -> Any:
        from kernelc.sparse.ops import bsr_mm, bsr_mv

        return bsr_mv(self, y) if isinstance(y, array) else bsr_mm(self, y)

    def __rmatmul__(self, x: Any) -> Any:
        from kernelc.sparse.ops import bsr_mm, bsr_mv

        return bsr_mv(self, x, transpose=True) if isinstance(x, array) else bsr_mm(x, self)

    def transpose(self) -> BsrMatrix:
        """A transposed copy (`bsr_transposed`)."""
        from kernelc.sparse.build import bsr_transposed

        return bsr_transposed(self)

    def __repr__(self) -> str:
        return (f"BsrMatrix(nrow={self.nrow}, ncol={self.ncol}, nnz={self.nnz}, "
                f"block_type={self.dtype!r}, device={self.device})")


class BsrScalingExpression:
    """`alpha * A` for a `BsrMatrix` A, evaluated lazily (Warp's `_BsrScalingExpression`).

    It has A's read-only properties; the sparse functions apply the scale as they read A
    (`bsr_mv(2 * A, x)` is `bsr_mv(A, x, alpha=2)`); `eval()` makes a scaled copy.
    """

    def __init__(self, mat: BsrMatrix, scale: Any) -> None:
        self.mat = mat
        self.scale = scale

    def eval(self) -> BsrMatrix:
        """A new matrix holding the scaled values (`bsr_copy`)."""
        from kernelc.sparse.ops import bsr_copy

        return bsr_copy(self)

    nrow = property(lambda self: self.mat.nrow, doc="Number of rows of blocks.")
    ncol = property(lambda self: self.mat.ncol, doc="Number of columns of blocks.")
    nnz = property(lambda self: self.mat.nnz, doc="Number of stored blocks.")
    offsets = property(lambda self: self.mat.offsets, doc="The matrix's row offsets.")
    columns = property(lambda self: self.mat.columns, doc="The matrix's block columns.")
    row_counts = property(lambda self: self.mat.row_counts, doc="The matrix's row counts.")
    scalar_type = property(lambda self: self.mat.scalar_type, doc="Scalar type.")
    block_shape = property(lambda self: self.mat.block_shape, doc="Shape of one block.")
    block_size = property(lambda self: self.mat.block_size, doc="Scalars per block.")
    shape = property(lambda self: self.mat.shape, doc="Shape in scalars.")
    dtype = property(lambda self: self.mat.dtype, doc="Type of one block.")
    device = property(lambda self: self.mat.device, doc="Device of the arrays.")
    requires_grad = property(lambda self: self.mat.requires_grad,
                             doc="Whether the values track gradients.")

    def __add__(self, y: Any) -> BsrMatrix:
        from kernelc.sparse.ops import bsr_axpy, bsr_copy

        return bsr_axpy(y, bsr_copy(self))

    def __radd__(self, x: Any) -> BsrMatrix:
        from kernelc.sparse.ops import bsr_axpy, bsr_copy

        return bsr_axpy(x, bsr_copy(self))

    def __sub__(self, y: Any) -> BsrMatrix:
        from kernelc.sparse.ops import bsr_axpy, bsr_copy

        return bsr_axpy(y, bsr_copy(self), alpha=-1.0)

    def __rsub__(self, x: Any) -> BsrMatrix:
        from kernelc.sparse.ops import bsr_axpy, bsr_copy

        return bsr_axpy(x, bsr_copy(self), beta=-1.0)

    def __mul__(self, y: Any) -> BsrScalingExpression:
        return BsrScalingExpression(self.mat, y * self.scale)

    def __rmul__(self, x: Any) -> BsrScalingExpression:
        return BsrScalingExpression(self.mat, x * self.scale)

    def __truediv__(self, y: Any) -> BsrScalingExpression:
        return BsrScalingExpression(self.mat, self.scale / y)

    def __neg__(self) -> BsrScalingExpression:
        return BsrScalingExpression(self.mat, -self.scale)

    def __matmul__(self, y: Any) -> Any:
        from kernelc.sparse.ops import bsr_mm, bsr_mv

        return bsr_mv(self, y) if isinstance(y, array) else bsr_mm(self, y)

    def __rmatmul__(self, x: Any) -> Any:
        from kernelc.sparse.ops import bsr_mm, bsr_mv

        return bsr_mv(self, x, transpose=True) if isinstance(x, array) else bsr_mm(x, self)

    def transpose(self) -> BsrScalingExpression:
        """The scaled transpose (the transpose is copied, the scale stays lazy)."""
        return BsrScalingExpression(self.mat.transpose(), self.scale)


def matrix_and_scale(A: Any, what: str) -> tuple[BsrMatrix, Any]:
    """The matrix and the scale of a `BsrMatrix` or a scaled one."""
    if isinstance(A, BsrMatrix):
        return A, 1.0
    if isinstance(A, BsrScalingExpression):
        return A.mat, A.scale
    raise ValueError(f"{what}: argument cannot be interpreted as a BsrMatrix: {A!r}")


def ensure_fits(A: BsrMatrix, nnz: int, keep: bool = False) -> None:
    """Grows `columns` and `values` to hold `nnz` blocks (copying the old ones if `keep`)."""
    if A.columns.shape[0] < nnz:
        columns = kc.empty(nnz, dtype=kc.int32, device=A.device)
        if keep and A.columns.shape[0]:
            kc.copy(columns, A.columns, count=A.columns.shape[0])
        A.columns = columns
    if A.values.shape[0] < nnz:
        values = kc.empty(nnz, dtype=A.values.dtype, device=A.device,
                          requires_grad=A.values.requires_grad)
        if keep and A.values.shape[0]:
            kc.copy(values, A.values, count=A.values.shape[0])
        A.values = values


def set_topology(A: BsrMatrix, offsets: np.ndarray, columns: np.ndarray) -> None:
    """Stores host-computed `offsets` (nrow + 1) and `columns` (nnz) in A (sets `nnz`)."""
    nnz = int(offsets[-1])
    ensure_fits(A, nnz)
    host_offsets = kc.array(offsets.astype(np.int32), dtype=kc.int32, device=A.device)
    if A.offsets.shape[0] == len(offsets):
        kc.copy(A.offsets, host_offsets)  # callers may hold the offsets array
    else:
        A.offsets = host_offsets
    if nnz:
        kc.copy(A.columns, kc.array(columns.astype(np.int32), dtype=kc.int32, device=A.device),
                count=nnz)
    A.nnz = nnz


def host_active_blocks(A: BsrMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, slot) of each of A's blocks, compact or padded, on the host."""
    offsets = A.offsets.numpy()[: A.nrow + 1].astype(np.int64)
    if A.row_counts is None:
        rows, cols = host_rows_columns(A)
        return rows, cols, np.arange(len(rows), dtype=np.int64)
    counts = A.row_counts.numpy()[: A.nrow].astype(np.int64)
    rows = np.repeat(np.arange(A.nrow, dtype=np.int32), counts)
    first = np.repeat(offsets[:-1] - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    slots = np.arange(len(rows), dtype=np.int64) + first
    return rows, A.columns.numpy()[slots].astype(np.int32), slots


def host_rows_columns(A: BsrMatrix) -> tuple[np.ndarray, np.ndarray]:
    """The (row, column) of each of compact A's `nnz` blocks, on the host."""
    offsets = A.offsets.numpy()[: A.nrow + 1].astype(np.int64)
    nnz = int(offsets[-1]) if len(offsets) else 0
    rows = np.repeat(np.arange(A.nrow, dtype=np.int32), np.diff(offsets))
    return rows, A.columns.numpy()[:nnz].astype(np.int32)
