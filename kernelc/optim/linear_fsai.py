"""`FSAI`: adaptive factorized sparse approximate inverse of an SPD sparse matrix (Warp's
`warp.optim.linear.FSAI`).

For every row i, a support S (columns <= i, i first) grows greedily on the graph of the
diagonally equilibrated matrix: each step adds the frontier columns c of largest
|A[c, S] z|, where A[S, S] z = e_i. Row i of the lower-triangular factor G is then
z / sqrt(z_i) (rescaled), so G^T G approximates A's inverse; the preconditioner applies it
as two sparse products. Everything numerical runs in kernels on the matrix's device (see
`linear_fsai_kernels`); the packing of G's rows into sorted CSR storage is done on the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernelc as kc
from kernelc import types as T
from kernelc.optim import linear_fsai_kernels as K
from kernelc.optim.linear_operator import LinearOperator
from kernelc.runtime.array import array

__all__ = ["FSAI"]

# Default smallest accepted pivot of the equilibrated local factorizations.
_PIVOT_FLOOR = {T.float16: 1.0e-3, T.float32: 1.0e-6, T.float64: 1.0e-12}


def _launch(kernel: Any, dim: Any, inputs: list, device: Any) -> None:
    if (dim if isinstance(dim, int) else min(dim)) > 0:
        kc.launch(kernel, dim=dim, inputs=inputs, device=device)


def _flat(v: array, scalar: T.ScalarType) -> array:
    """Contiguous `v` (scalars or vectors) seen as a 1-d array of scalars."""
    if v.dtype == scalar and v.ndim == 1:
        return v
    from kernelc.sparse.matrix import scalar_view

    return scalar_view(v, scalar, (v.size * getattr(v.dtype, "count", 1),))


def _check_options(A: Any, max_row_size: Any, kap_tolerance: float, pivot_floor: Any,
                   factor_dtype: Any, reuse_pattern: bool, max_step_size: Any,
                   defer_pattern: bool) -> tuple[float, Any]:
    from kernelc.sparse import BsrMatrix

    if (not isinstance(A, BsrMatrix) or A.shape[0] != A.shape[1]
            or A.block_shape[0] != A.block_shape[1]):
        raise ValueError("FSAI requires a square kernelc BSR matrix with square blocks")
    if A.scalar_type not in _PIVOT_FLOOR:
        raise TypeError(f"FSAI supports float16, float32 and float64, got {A.scalar_type!r}")
    for name, value in (("max_row_size", max_row_size), ("max_step_size", max_step_size)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 64:
            raise ValueError(f"{name} must be an integer in [1, 64], got {value!r}")
    if not 0 <= kap_tolerance < 1:
        raise ValueError(f"kap_tolerance must be in [0, 1), got {kap_tolerance!r}")
    if pivot_floor is None:
        pivot_floor = _PIVOT_FLOOR[A.scalar_type]
    if not 0 < pivot_floor < 1:
        raise ValueError(f"pivot_floor must be in (0, 1), got {pivot_floor!r}")
    factor_dtype = A.scalar_type if factor_dtype is None else T.as_type(factor_dtype)
    if factor_dtype != A.scalar_type and not (A.scalar_type == T.float64
                                              and factor_dtype == T.float32):
        raise ValueError("factor_dtype must be the matrix scalar type, or kc.float32 for a "
                         "float64 matrix")
    if reuse_pattern and A.row_counts is not None:
        raise ValueError("reuse_pattern requires compact BSR storage")
    if defer_pattern and not reuse_pattern:
        raise ValueError("defer_pattern requires reuse_pattern")
    return float(pivot_floor), factor_dtype


def _diagonal_scale(A: Any, status: array, counter: int) -> array:
    scale = kc.empty(A.shape[0], dtype=A.scalar_type, device=A.device)
    _launch(K.diagonal_scale_kernel, A.shape[0],
            [A.offsets, A.columns, A.scalar_values, scale, status, counter], A.device)
    return scale


def _select(A: Any, scale: array, width: int, step: int, tolerance: float,
            floor: float, status: array) -> tuple[Any, array]:
    """Grows every row's support; returns (G as a CSR matrix, each entry's growth rank)."""
    n, dtype, device = A.shape[0], A.scalar_type, A.device
    cols = kc.empty(n * width, dtype=kc.int32, device=device)
    vals = kc.empty(n * width, dtype=dtype, device=device)
    _launch(K.select_kernel(dtype, width, step), n,
            [A.offsets, A.columns, A.scalar_values, scale, dtype(tolerance), dtype(floor), cols,
             vals, status], device)
    return _pack(n, width, cols, vals)


def _pack(n: int, width: int, cols: array, vals: array) -> tuple[Any, array]:
    """Rows of `width` slots (column -1: unused) packed into a CSR matrix sorted by column."""
    from kernelc.sparse import bsr_zeros
    from kernelc.sparse.matrix import set_topology

    host_cols = cols.numpy().reshape(n, width) if n else np.zeros((0, width), np.int32)
    rows, slots = np.nonzero(host_cols >= 0)
    columns = host_cols[rows, slots]
    order = np.lexsort((columns, rows))
    G = bsr_zeros(n, n, vals.dtype, device=vals.device)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])
    set_topology(G, offsets, columns[order])
    flat = (rows * width + slots)[order].astype(np.int32)
    _launch(K.gather_kernel, G.nnz, [vals, kc.array(flat, dtype=kc.int32, device=vals.device),
                                     G.values], vals.device)
    growth_rank = kc.array(slots[order].astype(np.int32), dtype=kc.int32, device=vals.device)
    return G, growth_rank


def _transposed_slots(G: Any) -> tuple[Any, array]:
    """(G^T, the slot in G^T of each of G's entries)."""
    from kernelc.sparse import bsr_transposed
    from kernelc.sparse.build import triplet_topology
    from kernelc.sparse.matrix import host_rows_columns

    GT = bsr_transposed(G)
    rows, cols = host_rows_columns(G)
    _, _, order, _ = triplet_topology(G.ncol, G.nrow, cols, rows)
    slots = np.empty(len(order), np.int32)
    slots[order] = np.arange(len(order), dtype=np.int32)
    return GT, kc.array(slots, dtype=kc.int32, device=G.device)


class FSAI(LinearOperator):
    """Adaptive factorized sparse approximate inverse G^T G of an SPD sparse matrix (Warp's
    `warp.optim.linear.FSAI`); a `LinearOperator` to pass as `M` to `cg`, `cr`, ...

    Square blocks are expanded into scalars (scalar FSAI). Construction reads the matrix
    back (it synchronises); application is two sparse products and allocates nothing.

    Args:
        A: Square `kernelc.sparse.BsrMatrix` with square blocks of float16, float32 or
            float64, both triangles stored, columns sorted (as kernelc.sparse builds them).
            Symmetry and positive definiteness are not checked.
        max_row_size: Entries per row of G, its diagonal included, in [1, 64] (1: Jacobi).
        kap_tolerance: Relative local gain under which a row stops growing, in [0, 1)
            (0: grow to `max_row_size`).
        pivot_floor: Smallest accepted pivot of the equilibrated local Cholesky factors, in
            (0, 1) (None: 1e-3, 1e-6, 1e-12 for float16, float32, float64); a row stops
            growing before a smaller one.
        factor_dtype: Storage type of G: A's scalar type (None), or kc.float32 for a float64
            A. Products are summed in A's scalar type.
        reuse_pattern: Keep what `update` needs to refit G on its supports.
        max_step_size: Columns added per growth step, in [1, 64].
        regularize_refit: With `reuse_pattern`, `update` refits every row it can: a pivot
            at or under the floor is raised to it (the row is counted as regularized), a row
            that still fails becomes its scaled diagonal (counted as failed); only a
            topology change rejects the update.
        validate_topology: With `reuse_pattern`, `update` compares A's topology with the
            original one and rejects a change (False: skip the comparison).
        defer_pattern: Build from A's topology only: G is the identity until the first
            successful `update`, which selects the supports (needs `reuse_pattern`).

    Attributes:
        G, GT: The factor (CSR, positive diagonal, finite) and its transpose.
        truncated_rows: Rows stopped by the pivot floor (None with `defer_pattern`).
        source: The matrix of the last successful construction or update.
        update_status: With `reuse_pattern`, a 4-int array: topology mismatches, invalid
            diagonals, failed local factorizations, regularized rows of the last update.
        pattern_ready, pattern_status: With `defer_pattern`, 1-int array holding 1 once the
            supports are selected, and 3-int array whose [1] and [2] count the rows the
            selection truncated and the rows whose factor was invalid.

    Raises:
        TypeError: An unsupported scalar type.
        ValueError: A matrix that is not square, an option out of range, a diagonal that is
            not finite and positive, or a factor that is not finite with a positive diagonal
            (also after conversion to `factor_dtype`).
    """

    def __init__(self, A: Any, max_row_size: int = 8, kap_tolerance: float = 1.0e-3,
                 pivot_floor: float | None = None, factor_dtype: Any = None,
                 reuse_pattern: bool = False, max_step_size: int = 1,
                 regularize_refit: bool = False, validate_topology: bool = True,
                 defer_pattern: bool = False) -> None:
        floor, factor_dtype = _check_options(A, max_row_size, kap_tolerance, pivot_floor,
                                             factor_dtype, reuse_pattern, max_step_size,
                                             defer_pattern)
        if getattr(A, "row_counts", None) is not None:  # the kernels read compact rows
            from kernelc.sparse.padded import compacted

            A = compacted(A)
        self.max_row_size = max_row_size
        self.max_step_size = max_step_size
        self.factor_dtype = factor_dtype
        self.source = A
        self.pattern_ready = None
        self.pattern_status = None
        self.update_status = None
        self.truncated_rows = None
        self._refit = None
        n, dtype, device = A.shape[0], A.scalar_type, A.device
        self._tmp = kc.empty(n, dtype=dtype, device=device)
        super().__init__(A.shape, A.dtype, device, self._apply)
        options = (max_row_size, max_step_size, kap_tolerance, floor, regularize_refit,
                   validate_topology)
        if defer_pattern:
            from kernelc.optim.linear_fsai_refit import DeferredPlan

            self._refit = DeferredPlan(self, A, *options)
            self.update_status = self._refit.status
            self.pattern_ready = self._refit.ready
            self.pattern_status = self._refit.pattern_status
            return
        status = kc.zeros(3, dtype=kc.int32, device=device)
        scale = _diagonal_scale(A, status, 0)
        G, growth_rank = _select(A, scale, max_row_size, max_step_size, kap_tolerance, floor,
                                 status)
        invalid_diagonals, truncated, invalid_rows = (int(v) for v in status.numpy())
        if invalid_diagonals:
            raise ValueError(f"FSAI requires finite positive diagonals ({invalid_diagonals} "
                             f"invalid rows)")
        if invalid_rows:
            raise ValueError("FSAI factor lost finite entries or a positive diagonal")
        self.truncated_rows = truncated
        if factor_dtype != dtype:
            G = convert_factor(G, factor_dtype)
        self.G = G
        self.GT, transposed_slots = _transposed_slots(G)
        if reuse_pattern:
            from kernelc.optim.linear_fsai_refit import RefitPlan

            self._refit = RefitPlan(self, A, growth_rank, transposed_slots, *options)
            self.update_status = self._refit.status

    def update(self, A: Any = None) -> FSAI:
        """Refits G on its supports for new values of the matrix (same topology); with
        `defer_pattern`, the first successful update selects the supports.

        Args:
            A: The matrix with its new values (None: `source`).

        Returns:
            This preconditioner.

        Raises:
            ValueError: No `reuse_pattern`; another shape, dtype, device or storage; or
                (unless `regularize_refit` allows it) a changed topology, a diagonal that
                is not finite and positive, or a local factorization that fails. A
                rejected update leaves the factor as it was.
        """
        from kernelc.sparse import BsrMatrix

        if self._refit is None:
            raise ValueError("Construct FSAI with reuse_pattern=True before updating")
        A = self.source if A is None else A
        if not isinstance(A, BsrMatrix):
            raise ValueError(f"update requires a kernelc BSR matrix, got {type(A).__name__}")
        self._refit.update(self, A)
        self.source = A
        return self

    def _apply(self, x: array, y: array, z: array, alpha: float, beta: float) -> None:
        scalar = self.scalar_type
        x, y, z = (_flat(v, scalar) for v in (x, y, z))
        # G x goes to the scratch vector first, so x, y and z may alias.
        if alpha != 0.0:
            factor_mv(self.G, x, self._tmp, self._tmp, 1.0, 0.0)
        factor_mv(self.GT, self._tmp, y, z, alpha, beta)


def factor_mv(G: Any, x: array, y: array, z: array, alpha: float, beta: float) -> None:
    """z = alpha * G x + beta * y for a CSR factor, one thread per row."""
    scalar = x.dtype
    _launch(K.factor_mv_kernel, G.nrow,
            [G.offsets, G.columns, G.values, x, y, z, scalar(alpha), scalar(beta)], G.device)


def convert_factor(G: Any, storage: Any) -> Any:
    """G copied to `storage` scalars; raises ValueError if that loses finite entries or a
    positive diagonal."""
    from kernelc.sparse import bsr_copy

    converted = bsr_copy(G, scalar_type=storage)
    status = kc.zeros(1, dtype=kc.int32, device=G.device)
    _launch(K.check_factor_kernel, G.nrow,
            [converted.offsets, converted.columns, converted.values, status], G.device)
    if status.numpy()[0]:
        raise ValueError("factor_dtype conversion lost finite entries or a positive diagonal")
    return converted

