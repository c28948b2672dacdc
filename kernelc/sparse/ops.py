"""Arithmetic on BSR matrices: copy, scale, diagonal, sum, matrix-vector and matrix-matrix
products. Values are computed by kernels on the matrices' device; where the topology
changes (`bsr_axpy`, `bsr_mm`), it is computed on the host, as in `kernelc.sparse.build`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernelc as kc
from kernelc import types as T
from kernelc.runtime.array import array
from kernelc.sparse import kernels as K
from kernelc.sparse.build import bsr_zeros, triplet_topology
from kernelc.sparse.matrix import (
    BsrMatrix,
    block_type_for,
    host_rows_columns,
    matrix_and_scale,
    scalar_view,
    set_topology,
    zero_values,
)
from kernelc.sparse.padded import (
    check_topology,
    compacted,
    int_array,
    set_zero_topology,
    store,
)


def bsr_copy(A: Any, scalar_type: Any = None, block_shape: tuple[int, int] | None = None,
             structure_only: bool = False, topology: str = "compact") -> BsrMatrix:
    """A copy of `A` (a matrix or a scaled one), optionally with another scalar type or
    block shape (Warp's `warp.sparse.bsr_copy`).

    Args:
        A: The matrix to copy; a scaled matrix `alpha * B` is copied with its scale applied.
        scalar_type: float16, float32 or float64 for the copy (default: A's). Values are
            converted on the host when it differs.
        block_shape: Block shape of the copy (default: A's). Each dimension must divide or
            be a multiple of A's; a new block exists wherever one of A's overlaps it.
        structure_only: Copy the topology only (values left uninitialised).
        topology: `"compact"`, or `"padded"`: the copy keeps A's row capacities (with
            another block shape, each new row gets the capacity its blocks need).

    Returns:
        A new matrix.

    Raises:
        ValueError: An unknown `topology`, or block shapes that do not divide.
    """
    topology = check_topology(topology, ("compact", "padded"))
    src, scale = matrix_and_scale(A, "bsr_copy")
    padded_src = src
    src = compacted(src)
    if block_shape is not None and tuple(block_shape) != src.block_shape:
        from kernelc.sparse.reblock import reblocked_copy

        src, scale = reblocked_copy(src, scale, tuple(block_shape)), 1.0
    scalar = src.scalar_type if scalar_type is None else T.as_type(scalar_type)
    copy = bsr_zeros(src.nrow, src.ncol, block_type_for(scalar, src.block_shape),
                     device=src.device)
    copy.values.requires_grad = src.requires_grad
    rows, cols = host_rows_columns(src)
    set_topology(copy, src.offsets.numpy()[: src.nrow + 1], cols)
    if copy.nnz and not structure_only:
        if scalar == src.scalar_type:
            kc.copy(copy.values, src.values, count=copy.nnz)
        else:
            with np.errstate(over="ignore"):  # out-of-range values become infinities
                host = src.values.numpy()[: copy.nnz].astype(scalar.np_dtype)
            kc.copy(copy.values, kc.array(host, dtype=copy.values.dtype, device=copy.device),
                    count=copy.nnz)
        if scale != 1.0:
            bsr_scale(copy, scale)
    if topology == "padded":
        padded = bsr_zeros(copy.nrow, copy.ncol, copy.values.dtype, device=copy.device)
        padded.values.requires_grad = copy.requires_grad
        same_rows = padded_src.row_counts is not None and padded_src.nrow == copy.nrow
        capacity_from = padded_src if same_rows else copy
        set_zero_topology(padded, "padded", int_array(
            np.diff(capacity_from.offsets.numpy()[: copy.nrow + 1]), copy.device), None, None)
        store(padded, copy, "padded", structure_only)
        return padded
    return copy


def bsr_scale(x: Any, alpha: Any) -> BsrMatrix:
    """`x := alpha * x` in place (Warp's `warp.sparse.bsr_scale`); returns `x`.

    A scaled matrix `s * B` scales B by `s * alpha`. Scaling by 0 sets the values to zero
    and keeps the blocks.
    """
    x, scale = matrix_and_scale(x, "bsr_scale")
    alpha = alpha * scale
    if alpha != 1.0 and x.nnz > 0:
        if alpha == 0.0:
            zero_values(x.values)
        else:
            kc.launch(K.scale_kernel, dim=(x.nnz, *x.block_shape), device=x.device,
                      inputs=[x.scalar_type(alpha), x.scalar_values])
    return x


def bsr_get_diag(A: Any, out: array | None = None) -> array:
    """The diagonal blocks of `A` (Warp's `warp.sparse.bsr_get_diag`): `min(nrow, ncol)`
    blocks, zero where A stores none.

    Args:
        A: A matrix or a scaled one.
        out: Optional array of A's block type and at least `min(nrow, ncol)` elements.

    Raises:
        ValueError: `out` of another type, device or too short.
    """
    A, scale = matrix_and_scale(A, "bsr_get_diag")
    A = compacted(A)
    dim = min(A.nrow, A.ncol)
    if out is None:
        out = kc.zeros(dim, dtype=A.values.dtype, device=A.device,
                       requires_grad=A.requires_grad)
    else:
        if out.dtype != A.values.dtype:
            raise ValueError(f"Output array must have type {A.values.dtype!r}, got {out.dtype!r}")
        if out.device != A.device:
            raise ValueError(f"Output array must reside on device {A.device}, got {out.device}")
        if out.shape[0] < dim:
            raise ValueError(f"Output array must be of length at least {dim}, got "
                             f"{out.shape[0]}")
        zero_values(out)
    if dim:
        kc.launch(K.get_diag_kernel, dim=(dim, *A.block_shape), device=A.device,
                  inputs=[A.scalar_type(scale), A.offsets, A.columns, A.scalar_values,
                          scalar_view(out, A.scalar_type, (out.shape[0], *A.block_shape))])
    return out


def _check_same_kind(x: BsrMatrix, y: BsrMatrix) -> None:
    if x.device != y.device:
        raise ValueError(f"All arguments must reside on the same device, got {x.device} and "
                         f"{y.device}")
    if x.scalar_type != y.scalar_type or x.block_shape != y.block_shape:
        raise ValueError(f"Matrices must have the same block type, got ({x.block_shape}, "
                         f"{x.scalar_type!r}) and ({y.block_shape}, {y.scalar_type!r})")
    if x.nrow != y.nrow or x.ncol != y.ncol:
        raise ValueError(f"Matrices must have the same number of rows and columns, got "
                         f"({x.nrow}, {x.ncol}) and ({y.nrow}, {y.ncol})")


def _assign(dest: BsrMatrix, src: BsrMatrix) -> None:
    dest.nrow, dest.ncol = src.nrow, src.ncol
    if dest.offsets.shape[0] != src.nrow + 1:
        dest.offsets = kc.zeros(src.nrow + 1, dtype=kc.int32, device=dest.device)
    set_topology(dest, src.offsets.numpy()[: src.nrow + 1], host_rows_columns(src)[1])
    if dest.nnz:
        kc.copy(dest.values, src.values, count=dest.nnz)


def _add_blocks(dest: BsrMatrix, start: int, scale: Any, rows: array, cols: array,
                src: array, count: int) -> None:
    """dest[(rows[k], cols[k])] += scale * src[k - start] for k in [start, start + count)."""
    if count:
        kc.launch(K.add_blocks_kernel, dim=(count, *dest.block_shape), device=dest.device,
                  inputs=[start, dest.scalar_type(scale), rows, cols, dest.offsets,
                          dest.columns, scalar_view(src, dest.scalar_type,
                                                    (src.shape[0], *dest.block_shape)),
                          dest.scalar_values])


def bsr_axpy(x: Any, y: BsrMatrix | None = None, alpha: Any = 1.0, beta: Any = 1.0,
             work_arrays: Any = None, topology: str | None = None) -> BsrMatrix:
    """`y := alpha * x + beta * y` (Warp's `warp.sparse.bsr_axpy`); returns `y`.

    y's blocks become the union of x's and y's (no zero is pruned). `x` and `y` may be the
    same matrix. The union topology is computed on the host.

    Args:
        x: A matrix or a scaled one.
        y: The matrix to update; None: a new one, treated as zero.
        alpha: Scale of `x`.
        beta: Scale of `y`.
        work_arrays: A `bsr_axpy_work_arrays` (accepted for Warp compatibility; kernelc
            computes topologies on the host and needs no persistent scratch).
        topology: `"compact"` (default), `"padded"` (the union is written into y's row
            capacity) or `"masked"` (y keeps its blocks; x's others are dropped).

    Raises:
        ValueError: Devices, block types or shapes that differ; an unknown `topology`;
            `y=None` with `"padded"` or `"masked"`.
    """
    topology = check_topology(topology)
    x_matrix, x_scale = matrix_and_scale(x, "bsr_axpy")
    if y is None and topology != "compact":
        raise ValueError("Left-hand-side 'y' matrix must be provided for this topology policy")
    if topology == "compact" and x_matrix.row_counts is None and (y is None or
                                                                   y.row_counts is None):
        return _axpy_compact(x, y, alpha, beta)
    _check_same_kind(x_matrix, y)
    y_copy = bsr_copy(y)
    x_copy = y_copy if x_matrix is y else compacted(x_matrix)
    result = _axpy_compact(x_copy, y_copy, alpha * x_scale, beta)
    store(y, result, topology)
    return y


def _axpy_compact(x: Any, y: BsrMatrix | None, alpha: Any, beta: Any) -> BsrMatrix:
    x, x_scale = matrix_and_scale(x, "bsr_axpy")
    alpha = alpha * x_scale
    if y is None:
        y = bsr_zeros(x.nrow, x.ncol, x.values.dtype, device=x.device)
        y.values.requires_grad = x.requires_grad
        beta = 0.0
    _check_same_kind(x, y)
    if beta == 0.0 or y.nnz == 0:
        _assign(y, x)
        return bsr_scale(y, alpha)
    if alpha == 0.0 or x.nnz == 0:
        return bsr_scale(y, beta)
    if x is y:
        return bsr_scale(y, alpha + beta)
    y_rows, y_cols = host_rows_columns(y)
    x_rows, x_cols = host_rows_columns(x)
    rows = np.concatenate([y_rows, x_rows])
    cols = np.concatenate([y_cols, x_cols])
    old_nnz = y.nnz
    old_values = kc.empty(old_nnz, dtype=y.values.dtype, device=y.device,
                          requires_grad=y.requires_grad)
    kc.copy(old_values, y.values, count=old_nnz)
    offsets, columns, _, _ = triplet_topology(y.nrow, y.ncol, rows, cols)
    set_topology(y, offsets, columns)
    zero_values(y.values)
    device_rows = kc.array(rows, dtype=kc.int32, device=y.device)
    device_cols = kc.array(cols, dtype=kc.int32, device=y.device)
    _add_blocks(y, 0, beta, device_rows, device_cols, old_values, old_nnz)
    _add_blocks(y, old_nnz, alpha, device_rows, device_cols, x.values, x.nnz)
    return y


def _scalar_vector(v: array, scalar: T.ScalarType, count: int, what: str) -> array:
    """`v` (scalars, or vectors of a block's size) seen as `count` scalars."""
    if not isinstance(v, array) or v.ptr is None:
        raise TypeError(f"bsr_mv: '{what}' must be a kc.array with memory, got {v!r}")
    element_scalar = v.dtype.dtype if isinstance(v.dtype, (T.VectorType,
                                                           T.MatrixType)) else v.dtype
    components = getattr(v.dtype, "count", 1)
    if element_scalar != scalar:
        raise ValueError(f"Incompatible '{what}' vector for bsr_mv: its scalar type is "
                         f"{element_scalar!r}, the matrix's {scalar!r}")
    if v.size * components != count:
        raise ValueError(f"Incompatible '{what}' vector for bsr_mv: expected {count} scalars, "
                         f"got {v.size * components} (shape {v.shape}, {v.dtype!r})")
    if v.ndim > 2 or not v.is_contiguous:
        raise ValueError(f"Incompatible '{what}' vector for bsr_mv: it must be a contiguous "
                         f"1-d or 2-d array")
    if v.ndim == 1 and v.dtype == scalar:  # (a vector of length 1 still needs the view)
        return v
    return scalar_view(v, scalar, (count,))


def bsr_mv(A: Any, x: array, y: array | None = None, alpha: Any = 1.0, beta: Any = 0.0,
           transpose: bool = False, work_buffer: array | None = None) -> array:
    """`y := alpha * A x + beta * y` (Warp's `warp.sparse.bsr_mv`); returns `y`.

    Vectors hold scalars or vectors of the block size (`x` may also be 2-d, e.g. (n, 3)).
    Each scalar row is one thread that sums its blocks in order, as Warp does. With
    `transpose`, A's transpose is used: products are added atomically, so on CUDA the
    result's rounding is not deterministic (on the CPU it is).

    Args:
        A: A matrix or a scaled one.
        x: The vector multiplied (`A.shape[1]` scalars; `A.shape[0]` with `transpose`).
        y: The vector updated; None: a new one (scalars for scalar blocks, else vectors
            of the block's row count), treated as zero.
        alpha: Scale of the product; if zero, `x` is not read.
        beta: Scale of `y`; if zero, `y` is not read.
        transpose: Multiply by A's transpose.
        work_buffer: Scratch copy of `x` when `x` and `y` are the same array (default:
            allocated).

    Raises:
        ValueError: Vectors of the wrong size or scalar type, or on another device.
        TypeError: `x` or `y` is not an array.
    """
    A, scale = matrix_and_scale(A, "bsr_mv")
    A = compacted(A)
    alpha = alpha * scale
    block_shape = A.block_shape[::-1] if transpose else A.block_shape
    nrow, ncol = (A.ncol, A.nrow) if transpose else (A.nrow, A.ncol)
    scalar = A.scalar_type
    if not isinstance(x, array):
        raise TypeError(f"bsr_mv: 'x' must be a kc.array, got {type(x).__name__}")
    if y is None:
        dtype = scalar if block_shape[0] == 1 else kc.types.vector(block_shape[0], scalar)
        y = kc.empty(nrow, dtype=dtype, device=A.device,
                     requires_grad=x.requires_grad or A.requires_grad)
        beta = 0.0
    if A.device != x.device or A.device != y.device:
        raise ValueError(f"A, x, and y must reside on the same device, got {A.device}, "
                         f"{x.device} and {y.device}")
    if x.ptr == y.ptr:
        if work_buffer is None:
            work_buffer = kc.empty_like(y)
        elif work_buffer.size < y.size or work_buffer.dtype != y.dtype:
            raise ValueError(f"Work buffer must hold at least {y.size} elements of "
                             f"{y.dtype!r}")
        kc.copy(work_buffer, y, count=y.size)
        x = work_buffer
    x_view = _scalar_vector(x, scalar, ncol * block_shape[1], "x")
    y_view = _scalar_vector(y, scalar, nrow * block_shape[0], "y")
    alpha, beta, zero = scalar(alpha), scalar(beta), scalar(0)
    if not transpose:
        if nrow:
            kc.launch(K.mv_kernel, dim=(nrow, block_shape[0]), device=A.device,
                      inputs=[alpha, A.offsets, A.columns, A.scalar_values, x_view, beta,
                              y_view, zero])
        return y
    if beta == 0.0:
        zero_values(y)
    elif beta != 1.0 and y_view.shape[0]:
        kc.launch(K.scale_1d_kernel, dim=y_view.shape[0], device=A.device,
                  inputs=[beta, y_view])
    if alpha != 0.0 and A.nnz:
        kc.launch(K.mv_transpose_kernel, dim=(A.nnz, block_shape[0]), device=A.device,
                  inputs=[alpha, A.nrow, A.offsets, A.columns, A.scalar_values, x_view,
                          y_view, zero])
    return y


def _product_topology(x: BsrMatrix, y: BsrMatrix) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of every product term x[r, k] y[k, c], on the host. As in Warp, a row
    with more terms than columns in its [first, last] column range gets that whole range
    (so it may hold blocks that are structurally zero)."""
    x_rows, x_cols = host_rows_columns(x)
    y_offsets = y.offsets.numpy()[: y.nrow + 1].astype(np.int64)
    y_cols = host_rows_columns(y)[1]
    counts = y_offsets[x_cols + 1] - y_offsets[x_cols]
    row_terms = np.bincount(x_rows, weights=counts, minlength=x.nrow)
    min_col, max_col = np.full(x.nrow, y.ncol), np.zeros(x.nrow, dtype=np.int64)
    some = counts > 0
    np.minimum.at(min_col, x_rows[some], y_cols[y_offsets[x_cols[some]]])
    np.maximum.at(max_col, x_rows[some], y_cols[y_offsets[x_cols[some] + 1] - 1])
    col_range = np.maximum(0, max_col - min_col + 1)
    ranged = row_terms > col_range
    listed = ~ranged[x_rows]
    counts = np.where(listed, counts, 0)
    rows = np.repeat(x_rows, counts)
    first = np.repeat(y_offsets[x_cols] - np.cumsum(counts) + counts, counts)
    cols = y_cols[np.arange(len(rows)) + first] if len(rows) else y_cols[:0]
    ranged_rows = np.flatnonzero(ranged)
    range_rows = np.repeat(ranged_rows, col_range[ranged_rows])
    range_cols = np.concatenate([np.arange(min_col[r], max_col[r] + 1) for r in ranged_rows]
                                + [np.zeros(0, np.int64)])
    return np.concatenate([rows, range_rows]), np.concatenate([cols, range_cols])


def bsr_mm(x: Any, y: Any, z: BsrMatrix | None = None, alpha: Any = 1.0,
           beta: Any = 0.0, work_arrays: Any = None, reuse_topology: bool = False,
           tile_size: int = 0, max_new_nnz: int | None = None,
           topology: str | None = None) -> BsrMatrix:
    """`z := alpha * x @ y + beta * z` (Warp's `warp.sparse.bsr_mm`, compact topology);
    returns `z`.

    z's blocks become those of the product's structure (every (r, c) with blocks x[r, k]
    and y[k, c], even if they cancel; like Warp, a row with more product terms than
    columns between its first and last one gets every column in that range) plus, when
    `beta` is not zero, z's own. Each block
    sums the block products x[r, k] @ y[k, c] in increasing k, as Warp's CPU kernel does.
    The topology is computed on the host. x, y and z may alias.

    Args:
        x: Left operand (a matrix or a scaled one).
        y: Right operand (a matrix or a scaled one).
        z: The matrix updated; None: a new one, treated as zero.
        alpha: Scale of the product.
        beta: Scale of `z`.
        work_arrays: A `bsr_mm_work_arrays` (accepted for Warp compatibility; kernelc
            keeps no scratch between calls).
        reuse_topology: Accepted for Warp compatibility (compact topology only); the
            topology is recomputed, with the same result.
        tile_size: Accepted for Warp compatibility; no effect.
        max_new_nnz: At most this many product blocks (z's own not counted): beyond it, a
            line on stdout says the bound was exceeded, and only the first ones (in row,
            column order) are kept.
        topology: `"compact"` (default), `"padded"` (the result is written into z's row
            capacity) or `"masked"` (z keeps its blocks; the product's others are
            dropped).

    Raises:
        ValueError: Devices, scalar types, block shapes or sizes that do not fit; an
            unknown `topology`; `reuse_topology` with another topology.
    """
    topology = check_topology(topology)
    if reuse_topology and topology != "compact":
        raise ValueError('reuse_topology is only supported with topology="compact"')
    if z is None and topology != "compact":
        raise ValueError("Result matrix 'z' must be provided for this topology policy")
    x_matrix, _ = matrix_and_scale(x, "bsr_mm")
    y_matrix, _ = matrix_and_scale(y, "bsr_mm")
    if topology == "compact" and all(m is None or m.row_counts is None
                                     for m in (x_matrix, y_matrix, z)):
        return _mm_compact(x, y, z, alpha, beta, max_new_nnz)
    result = _mm_compact(x, y, bsr_copy(z) if z is not None else None, alpha, beta,
                         max_new_nnz)
    if z is None:
        return result
    store(z, result, topology)
    return z


def _mm_compact(x: Any, y: Any, z: BsrMatrix | None, alpha: Any, beta: Any,
                max_new_nnz: int | None) -> BsrMatrix:
    x, x_scale = matrix_and_scale(x, "bsr_mm")
    y, y_scale = matrix_and_scale(y, "bsr_mm")
    alpha = alpha * x_scale * y_scale
    if z is None:
        z = bsr_zeros(x.nrow, y.ncol, block_type_for(x.scalar_type, (x.block_shape[0],
                                                                     y.block_shape[1])),
                      device=x.device)
        z.values.requires_grad = x.requires_grad or y.requires_grad
        beta = 0.0
    if not (x.device == y.device == z.device):
        raise ValueError(f"All arguments must reside on the same device, got {x.device}, "
                         f"{y.device} and {z.device}")
    if not (x.scalar_type == y.scalar_type == z.scalar_type):
        raise ValueError(f"All arguments must have the same scalar type, got "
                         f"{x.scalar_type!r}, {y.scalar_type!r} and {z.scalar_type!r}")
    if (x.block_shape[0] != z.block_shape[0] or y.block_shape[1] != z.block_shape[1]
            or x.block_shape[1] != y.block_shape[0]):
        raise ValueError(f"Incompatible block sizes for matrix multiplication, got "
                         f"({x.block_shape}, {y.block_shape}) and ({z.block_shape})")
    if x.nrow != z.nrow or z.ncol != y.ncol or x.ncol != y.nrow:
        raise ValueError(f"Incompatible number of rows/columns for matrix multiplication, "
                         f"got ({x.nrow}, {x.ncol}) and ({y.nrow}, {y.ncol})")
    if alpha == 0.0 or x.nnz == 0 or y.nnz == 0:
        return bsr_scale(z, beta)
    # Snapshots, so that z may alias x or y.
    x, y = (bsr_copy(m) if m is z else compacted(m) for m in (x, y))
    mm_rows, mm_cols = _product_topology(x, y)
    if max_new_nnz is not None:
        mm_rows, mm_cols = _limit_new_blocks(z.nrow, z.ncol, mm_rows, mm_cols, max_new_nnz)
    copied = z.nnz if beta != 0.0 else 0
    z_rows, z_cols = host_rows_columns(z)
    rows = np.concatenate([z_rows[:copied], mm_rows]).astype(np.int32)
    cols = np.concatenate([z_cols[:copied], mm_cols]).astype(np.int32)
    old_values = kc.empty(copied, dtype=z.values.dtype, device=z.device,
                          requires_grad=z.requires_grad)
    if copied:
        kc.copy(old_values, z.values, count=copied)
    offsets, columns, _, _ = triplet_topology(z.nrow, z.ncol, rows, cols)
    set_topology(z, offsets, columns)
    zero_values(z.values)
    _add_blocks(z, 0, beta, kc.array(rows, dtype=kc.int32, device=z.device),
                kc.array(cols, dtype=kc.int32, device=z.device), old_values, copied)
    if z.nnz:
        kc.launch(K.mm_kernel, dim=(z.nnz, *z.block_shape), device=z.device,
                  inputs=[z.scalar_type(alpha), x.offsets, x.columns, x.scalar_values,
                          y.offsets, y.columns, y.scalar_values, z.nrow, z.offsets,
                          z.columns, z.scalar_values, z.scalar_type(0)])
    return z


def _limit_new_blocks(nrow: int, ncol: int, rows: np.ndarray, cols: np.ndarray,
                      max_new_nnz: int) -> tuple[np.ndarray, np.ndarray]:
    """The first `max_new_nnz` distinct product blocks (with a message on stdout if there
    are more)."""
    keys = np.unique(rows.astype(np.int64) * max(ncol, 1) + cols)
    if len(keys) <= max_new_nnz:
        return rows, cols
    # Printed to stdout, not warned: Warp reports this from its kernel with printf, so
    # programs (and their tests) see it there.
    print(f"bsr_mm: the product has {len(keys)} potential blocks, max_new_nnz "
          f"({max_new_nnz}) exceeded; the last ones are dropped", flush=True)
    keys = keys[: max(int(max_new_nnz), 0)]
    return (keys // max(ncol, 1)).astype(np.int32), (keys % max(ncol, 1)).astype(np.int32)


def inverse_diagonal(A: Any, use_abs: bool) -> array:
    """The inverses of A's diagonal coefficients (of its absolute values with `use_abs`; a
    zero coefficient gives 1), as `A.shape[0]` scalars: Warp's Jacobi preconditioner for a
    BSR matrix. Used by `kernelc.optim.linear.preconditioner`.

    Raises:
        ValueError: A is not square or its blocks are not.
    """
    matrix, _ = matrix_and_scale(A, "preconditioner")
    rows, cols = matrix.block_shape
    if rows != cols or matrix.nrow != matrix.ncol:
        raise ValueError(f"preconditioner: the sparse matrix and its blocks must be square, "
                         f"got {matrix.nrow}x{matrix.ncol} blocks of shape {matrix.block_shape}")
    diag = bsr_get_diag(A)
    scalar = matrix.scalar_type
    inv_diag = kc.empty(matrix.shape[0], dtype=scalar, device=matrix.device)
    if matrix.nrow:
        kc.launch(K.inverse_diagonal_kernel, dim=(matrix.nrow, rows), device=matrix.device,
                  inputs=[scalar_view(diag, scalar, (matrix.nrow, rows, cols)), inv_diag,
                          int(use_abs), scalar(0), scalar(1)])
    return inv_diag
