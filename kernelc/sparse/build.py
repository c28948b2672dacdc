"""Building BSR matrices: empty, from COO triplets, diagonal, identity, transposed.

Topologies (which blocks exist, `offsets` and `columns`) are computed on the host with
NumPy, then copied to the matrix's device; block values are computed by kernels on the
device. The host work reproduces Warp 1.19's rules exactly: out-of-range triplets are
dropped, zero blocks are pruned by bit pattern (so -0.0 counts as zero), blocks are sorted
by (row, column) and duplicates summed in the order of the sorted triplets.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernelc as kc
from kernelc import types as T
from kernelc.runtime.array import array
from kernelc.sparse import kernels as K
from kernelc.sparse.mapped import (
    BsrTripletMap,
    resolve_mapping,
    set_masked_from_triplets,
    triplet_values_3d,
)
from kernelc.sparse.matrix import (
    BsrMatrix,
    block_type_for,
    ensure_fits,
    host_rows_columns,
    matrix_and_scale,
    set_topology,
    zero_values,
)
from kernelc.sparse.padded import check_topology, compacted, set_zero_topology, store

# Bits that make a scalar non-zero: everything but the sign (Warp's zero masks).
_ZERO_MASKS = {T.float16: (np.uint16, 0x7FFF), T.float32: (np.uint32, 0x7FFFFFFF),
               T.float64: (np.uint64, 0x7FFFFFFFFFFFFFFF)}


def bsr_zeros(rows_of_blocks: int, cols_of_blocks: int, block_type: Any,
              device: Any = None, *, topology: str | None = None, row_capacity: Any = None,
              nnz_capacity: int | None = None) -> BsrMatrix:
    """An empty (all-zero) BSR matrix (Warp's `warp.sparse.bsr_zeros`).

    Args:
        rows_of_blocks: Number of rows of blocks.
        cols_of_blocks: Number of columns of blocks.
        block_type: `kc.float16` / `kc.float32` / `kc.float64` (a CSR matrix) or a matrix
            type such as `kc.mat33` or `kc.types.matrix(shape=(2, 3), dtype=kc.float64)`.
        device: Device of the matrix's arrays (default: the current device).
        topology: `"compact"` or `"padded"` (default: padded when `row_capacity` is given).
        row_capacity: Padded storage: the block capacity of every row (an int), or of each
            row (an int32 array of `rows_of_blocks` elements).
        nnz_capacity: Slots to allocate in `columns` and `values` (default: the total row
            capacity).

    Returns:
        A matrix with no stored blocks.

    Raises:
        ValueError: `block_type` is neither a scalar nor a matrix type; an unknown
            `topology`; a negative or misshapen capacity.
        TypeError: Scalars other than float16, float32 and float64; a `row_capacity`
            array that is not int32.
    """
    if topology is None:
        topology = "padded" if row_capacity is not None else "compact"
    topology = check_topology(topology, ("compact", "padded"))
    A = BsrMatrix(rows_of_blocks, cols_of_blocks, block_type, device)
    if topology == "padded" or nnz_capacity is not None:
        set_zero_topology(A, topology, row_capacity, nnz_capacity, None)
    return A


def bsr_set_zero(bsr: BsrMatrix, rows_of_blocks: int | None = None,
                 cols_of_blocks: int | None = None, *, topology: str = "compact",
                 row_capacity: Any = None, nnz_capacity: int | None = None) -> None:
    """Removes every block of `bsr`, optionally resizing it (Warp's `bsr_set_zero`).

    Args:
        bsr: The matrix to clear.
        rows_of_blocks: New number of rows of blocks (None: unchanged).
        cols_of_blocks: New number of columns of blocks (None: unchanged).
        topology: `"compact"` drops all storage; `"padded"` empties every row but keeps
            (or sets, with `row_capacity`) the row capacities; `"masked"` keeps the blocks
            and sets their values to zero.
        row_capacity: Padded: new capacity of every row (an int) or of each row (an array).
            Without it, kept rows keep their capacity and new rows get none.
        nnz_capacity: Slots to allocate in `columns` and `values`.

    Raises:
        ValueError: An unknown `topology`; `row_capacity` without `"padded"`; resizing with
            `"masked"`.
    """
    topology = check_topology(topology)
    if row_capacity is not None and topology != "padded":
        raise ValueError("row_capacity requires topology='padded'")
    if topology == "masked":
        if rows_of_blocks is not None or cols_of_blocks is not None:
            raise ValueError("Cannot resize a matrix with topology='masked'")
        zero_values(bsr.values)
        return
    old_offsets = bsr.offsets.numpy()[: bsr.nrow + 1].astype(np.int64)
    if cols_of_blocks is not None:
        bsr.ncol = int(cols_of_blocks)
    if rows_of_blocks is not None:
        bsr.nrow = int(rows_of_blocks)
    set_zero_topology(bsr, topology, row_capacity, nnz_capacity, old_offsets)


def resize(bsr: BsrMatrix, rows_of_blocks: int | None, cols_of_blocks: int | None) -> None:
    if cols_of_blocks is not None:
        bsr.ncol = int(cols_of_blocks)
    if rows_of_blocks is not None and int(rows_of_blocks) != bsr.nrow:
        bsr.nrow = int(rows_of_blocks)
        bsr.offsets = kc.zeros(bsr.nrow + 1, dtype=kc.int32, device=bsr.device)
        bsr.nnz = 0


def triplet_topology(nrow: int, ncol: int, rows: np.ndarray, cols: np.ndarray,
                     keep: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """Warp's triplet-to-BSR topology, on the host.

    Returns:
        (offsets, columns, order, block_ends): row offsets and block columns of the
        matrix; `order`, the kept triplets sorted by (row, column); `block_ends[b]`, the end
        of block b's triplets in `order` (its start is `block_ends[b - 1]`, or 0).
    """
    valid = (rows >= 0) & (rows < nrow) & (cols >= 0) & (cols < ncol)
    if keep is not None:
        valid &= keep
    kept = np.flatnonzero(valid)
    # One stable sort of row * ncol + col: the order lexsort((cols, rows)) gives, about
    # twice as fast as lexsort's two passes.
    key = rows[kept].astype(np.int64) * max(ncol, 1) + cols[kept]
    order = kept[np.argsort(key, kind="stable")].astype(np.int32)
    sorted_rows, sorted_cols = rows[order], cols[order]
    new_block = np.ones(len(order), dtype=bool)
    new_block[1:] = (sorted_rows[1:] != sorted_rows[:-1]) | (sorted_cols[1:] != sorted_cols[:-1])
    starts = np.flatnonzero(new_block)
    block_ends = np.append(starts[1:], len(order)).astype(np.int32)
    counts = np.bincount(sorted_rows[starts], minlength=nrow) if nrow else np.zeros(0, int)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return offsets, sorted_cols[starts].astype(np.int32), order, block_ends


def _nonzero_blocks(values: array, block_size: int, scalar: T.ScalarType) -> np.ndarray:
    bits_type, mask = _ZERO_MASKS[scalar]
    bits = np.ascontiguousarray(values.numpy()).view(bits_type).reshape(-1, block_size)
    return np.any(bits & bits_type(mask), axis=1)


def _check_triplets(dest: BsrMatrix, rows: array, columns: array, values: array | None,
                    count: array | None) -> None:
    if rows.device != columns.device or rows.device != dest.device:
        raise ValueError(f"Rows and columns must reside on the destination matrix device, got "
                         f"{rows.device}, {columns.device} and {dest.device}")
    if rows.shape[0] != columns.shape[0]:
        raise ValueError(f"Rows and columns arrays must have the same length, got "
                         f"{rows.shape[0]} and {columns.shape[0]}")
    if rows.dtype != kc.int32 or columns.dtype != kc.int32:
        raise TypeError("Rows and columns arrays must be of type int32")
    if count is not None and (count.shape != (1,) or count.dtype != kc.int32):
        raise ValueError(f"Count array must be a single-element int32 array, got shape "
                         f"{count.shape} and {count.dtype!r}")
    if values is None:
        return
    if values.device != rows.device:
        raise ValueError(f"Values and rows must reside on the same device, got "
                         f"{values.device} and {rows.device}")
    if values.shape[0] != rows.shape[0]:
        raise ValueError(f"Values and rows arrays must have the same length, got "
                         f"{values.shape[0]} and {rows.shape[0]}")
    if values.ndim == 1:
        if values.dtype != dest.values.dtype:
            raise ValueError(f"Values array type must correspond to that of the dest matrix, "
                             f"got {values.dtype!r} and {dest.values.dtype!r}")
    elif values.ndim == 3:
        if tuple(values.shape[1:]) != dest.block_shape:
            raise ValueError(f"Last two dimensions in values array ({values.shape[1:]}) should "
                             f"correspond to matrix block shape {dest.block_shape}")
        if values.dtype != dest.scalar_type:
            raise ValueError(f"Scalar type of values array ({values.dtype!r}) should "
                             f"correspond to that of matrix ({dest.scalar_type!r})")
    else:
        raise ValueError(f"Number of dimension for values array should be 1 or 3, got "
                         f"{values.ndim}")
    if not values.is_contiguous:
        raise ValueError("Values array must be contiguous")


def bsr_set_from_triplets(dest: BsrMatrix, rows: array, columns: array,
                          values: array | None = None, count: array | None = None,
                          prune_numerical_zeros: bool = True, topology: str | None = None,
                          build_mapping: Any = None) -> BsrTripletMap | None:
    """Fills `dest` from coordinate (COO) triplets, discarding its blocks (Warp's
    `warp.sparse.bsr_set_from_triplets`).

    Triplets with a row or column out of range are ignored; with `prune_numerical_zeros`,
    so are blocks whose coefficients are all (+ or -) zero. Duplicates are summed (in
    increasing triplet index; Warp's CPU sort may order them differently, which can change
    the last bit of a sum). Columns end up sorted within each row. Duplicates that sum to
    zero stay as stored zero blocks. The topology is computed on the host; the values are
    summed by a kernel on `dest`'s device.

    Args:
        dest: The matrix to fill.
        rows: Block row of each triplet (int32).
        columns: Block column of each triplet (int32).
        values: Block of each triplet: a 1-d array of `dest`'s block type, or a contiguous
            (n, block rows, block columns) array of its scalar type. None: the values are
            left uninitialised.
        count: Optional 1-element int32 array: use only the first `count[0]` triplets.
        prune_numerical_zeros: Drop triplets whose block is zero.
        topology: `"compact"` (default) rebuilds dest's storage; `"padded"` writes the
            rows into dest's row capacity (see `bsr_zeros(row_capacity=...)`);
            `"masked"` keeps dest's blocks and sums into them only the triplets that land
            on one (in triplet order, from zero).
        build_mapping: True, or a `BsrTripletMap` to rebuild: also record the
            triplet-to-block mapping, for `bsr_set_from_mapped_values` (compact topology
            and `prune_numerical_zeros=False` only).

    Returns:
        The map when `build_mapping` is given, else None.

    Raises:
        TypeError: `rows` or `columns` is not int32; `build_mapping` of another type.
        ValueError: Lengths, devices, value types or block shapes that do not match; an
            unknown `topology`; `build_mapping` with another topology or with pruning.
    """
    topology = check_topology(topology)
    mapping = resolve_mapping(build_mapping, dest, topology, prune_numerical_zeros)
    _check_triplets(dest, rows, columns, values, count)
    if rows.shape[0] == 0:
        bsr_set_zero(dest, topology=topology)
        if mapping is not None:
            mapping.bind(dest, 0, np.zeros(0, np.int32), np.zeros(0, np.int32))
        return mapping
    n = rows.shape[0] if count is None else min(int(count.numpy()[0]), rows.shape[0])
    host_rows = rows.numpy()[:n].astype(np.int32)
    host_cols = columns.numpy()[:n].astype(np.int32)
    if topology == "masked":
        set_masked_from_triplets(dest, host_rows, host_cols, values)
        return None
    keep = None
    if values is not None and prune_numerical_zeros and n:
        keep = _nonzero_blocks(values, dest.block_size, dest.scalar_type)[:n]
    offsets, block_columns, order, block_ends = triplet_topology(
        dest.nrow, dest.ncol, host_rows, host_cols, keep)
    target = dest
    if topology == "padded":
        target = BsrMatrix(dest.nrow, dest.ncol, dest.values.dtype, device=dest.device)
        target.values.requires_grad = dest.requires_grad  # differentiable through store()
    else:
        dest.row_counts = None
        ensure_fits(dest, rows.shape[0])  # Warp's storage: one slot per triplet
    set_topology(target, offsets, block_columns)
    if values is not None and target.nnz:
        device = dest.device
        kc.launch(K.accumulate_triplets_kernel, dim=(target.nnz, *dest.block_shape),
                  device=device,
                  inputs=[kc.array(block_ends, dtype=kc.int32, device=device),
                          kc.array(order, dtype=kc.int32, device=device),
                          triplet_values_3d(values, dest), target.scalar_values])
    if topology == "padded":
        if values is not None:
            zero_values(dest.values)
        store(dest, target, "padded", structure_only=values is None)
    if mapping is not None:
        mapping.bind(dest, rows.shape[0], order, block_ends)
    return mapping


def bsr_from_triplets(rows_of_blocks: int, cols_of_blocks: int, rows: array, columns: array,
                      values: array, prune_numerical_zeros: bool = True) -> BsrMatrix:
    """A new BSR matrix from COO triplets (Warp's `warp.sparse.bsr_from_triplets`).

    The block type is `values.dtype` for a 1-d `values`, or a matrix of the last two
    dimensions of a 3-d one. See `bsr_set_from_triplets` for the rules.

    Args:
        rows_of_blocks: Number of rows of blocks.
        cols_of_blocks: Number of columns of blocks.
        rows: Block row of each triplet (int32).
        columns: Block column of each triplet (int32).
        values: Block of each triplet.
        prune_numerical_zeros: Drop triplets whose block is zero.

    Returns:
        The matrix, on `values`'s device.
    """
    if values.ndim == 3:
        block_type = kc.types.matrix(shape=tuple(values.shape[1:]), dtype=values.dtype)
    else:
        block_type = values.dtype
    A = bsr_zeros(rows_of_blocks, cols_of_blocks, block_type, device=values.device)
    A.values.requires_grad = values.requires_grad
    bsr_set_from_triplets(A, rows, columns, values, prune_numerical_zeros=prune_numerical_zeros)
    return A


def bsr_set_diag(A: BsrMatrix, diag: Any, rows_of_blocks: int | None = None,
                 cols_of_blocks: int | None = None) -> None:
    """Makes `A` block-diagonal (Warp's `warp.sparse.bsr_set_diag`).

    The shape is `rows_of_blocks` x `cols_of_blocks` if given (one given means both),
    else `len(diag)` squared for an array `diag`, else A's. The first
    `min(nrow, ncol)` diagonal blocks are stored, zero or not.

    Args:
        A: The matrix to overwrite.
        diag: A 1-d array of A's block type (one block per row), one block value for
            every diagonal block, or None (values left uninitialised).
        rows_of_blocks: New number of rows of blocks.
        cols_of_blocks: New number of columns of blocks.
    """
    if rows_of_blocks is None and cols_of_blocks is not None:
        rows_of_blocks = cols_of_blocks
    if cols_of_blocks is None and rows_of_blocks is not None:
        cols_of_blocks = rows_of_blocks
    if isinstance(diag, array) and rows_of_blocks is None:
        rows_of_blocks = cols_of_blocks = diag.shape[0]
    resize(A, rows_of_blocks, cols_of_blocks)
    A.row_counts = None
    nnz = min(A.nrow, A.ncol)
    ensure_fits(A, nnz)
    kc.launch(K.set_diag_kernel, dim=A.nrow + 1, device=A.device,
              inputs=[nnz, A.offsets, A.columns])
    A.nnz = nnz
    if isinstance(diag, array):
        if diag.dtype != A.values.dtype:
            raise ValueError(f"bsr_set_diag: diag holds {diag.dtype!r}, the matrix "
                             f"{A.values.dtype!r}")
        if nnz:
            kc.copy(A.values, diag, count=nnz)
    elif diag is not None:
        A.values.fill_(diag)


def bsr_diag(diag: Any = None, rows_of_blocks: int | None = None,
             cols_of_blocks: int | None = None, block_type: Any = None,
             device: Any = None) -> BsrMatrix:
    """A new block-diagonal matrix (Warp's `warp.sparse.bsr_diag`).

    Args:
        diag: A 1-d array of blocks (its dtype and device are the matrix's), or one block
            value (a number, or a NumPy array / kc matrix value of the block's shape) for
            every diagonal block.
        rows_of_blocks: Number of rows of blocks (needed unless `diag` is an array).
        cols_of_blocks: Number of columns of blocks (default: `rows_of_blocks`).
        block_type: Block type when `diag` is not an array (default: deduced from `diag`:
            `type(diag)`, or a matrix of `diag`'s shape and dtype).
        device: Device when `diag` is not an array.

    Raises:
        ValueError: No size or no type can be deduced.
    """
    if rows_of_blocks is None and cols_of_blocks is not None:
        rows_of_blocks = cols_of_blocks
    if cols_of_blocks is None and rows_of_blocks is not None:
        cols_of_blocks = rows_of_blocks
    if isinstance(diag, array):
        if rows_of_blocks is None:
            rows_of_blocks = cols_of_blocks = diag.shape[0]
        block_type, device = diag.dtype, diag.device
    elif rows_of_blocks is None:
        raise ValueError("rows_of_blocks and/or cols_of_blocks must be provided for "
                         "constructing a diagonal matrix with uniform diagonal")
    if block_type is None:
        if diag is None:
            raise ValueError("Either `diag` or `block_type` needs to be provided")
        shape = getattr(diag, "shape", ())
        if len(shape) == 2:
            block_type = kc.types.matrix(shape=tuple(shape), dtype=T.as_type(diag.dtype))
        else:
            block_type = T.as_type(type(diag))
    A = bsr_zeros(rows_of_blocks, cols_of_blocks, block_type, device=device)
    if isinstance(diag, array):
        A.values.requires_grad = diag.requires_grad
    bsr_set_diag(A, diag)
    return A


def bsr_set_identity(A: BsrMatrix, rows_of_blocks: int | None = None) -> None:
    """Makes `A` the identity (Warp's `bsr_set_identity`); square blocks only.

    Args:
        A: The matrix to overwrite.
        rows_of_blocks: If given, A becomes square with this many rows of blocks.
    """
    rows, cols = A.block_shape
    if rows != cols:
        raise ValueError(f"bsr_set_identity: blocks must be square, got {A.block_shape}")
    one = A.scalar_type(1.0) if rows == 1 else np.eye(rows)
    bsr_set_diag(A, one, rows_of_blocks=rows_of_blocks, cols_of_blocks=rows_of_blocks)


def bsr_identity(rows_of_blocks: int, block_type: Any, device: Any = None) -> BsrMatrix:
    """A new square identity matrix (Warp's `warp.sparse.bsr_identity`).

    Args:
        rows_of_blocks: Number of rows and columns of blocks.
        block_type: A scalar type or a square matrix type.
        device: Device of the arrays.
    """
    A = bsr_zeros(rows_of_blocks, rows_of_blocks, block_type, device=device)
    bsr_set_identity(A)
    return A


def bsr_set_transpose(dest: BsrMatrix, src: Any, topology: str | None = None) -> None:
    """Stores the transpose of `src` (a matrix or a scaled one) in `dest` (Warp's
    `warp.sparse.bsr_set_transpose`). The topology is computed on the host.

    Args:
        dest: The matrix to overwrite.
        src: The matrix transposed.
        topology: `"compact"` (default), `"padded"` (into dest's row capacity) or
            `"masked"` (dest keeps its blocks); see docs/sparse.md.

    Raises:
        ValueError: Devices, scalar types or block shapes that do not fit; an unknown
            `topology`.
    """
    src, scale = matrix_and_scale(src, "bsr_set_transpose")
    topology = check_topology(topology)
    if dest.device != src.device:
        raise ValueError(f"All arguments must reside on the same device, got {dest.device} "
                         f"and {src.device}")
    if dest.scalar_type != src.scalar_type:
        raise ValueError(f"All arguments must have the same scalar type, got "
                         f"{dest.scalar_type!r} and {src.scalar_type!r}")
    transposed_shape = src.block_shape[::-1]
    if dest.block_shape != transposed_shape:
        raise ValueError(f"Destination block shape must be {transposed_shape}, got "
                         f"{dest.block_shape}")
    if topology != "compact":
        if (dest.nrow, dest.ncol) != (src.ncol, src.nrow):
            raise ValueError(f"Incompatible destination matrix size, expected "
                             f"({src.ncol}, {src.nrow}), got ({dest.nrow}, {dest.ncol})")
        result = BsrMatrix(src.ncol, src.nrow, dest.values.dtype, device=dest.device)
        result.values.requires_grad = src.requires_grad or dest.requires_grad
        bsr_set_transpose(result, scale * src if scale != 1.0 else src)
        store(dest, result, topology)
        return
    src = compacted(src)
    rows, cols = host_rows_columns(src)
    resize(dest, src.ncol, src.nrow)
    dest.row_counts = None
    offsets, columns, order, _ = triplet_topology(dest.nrow, dest.ncol, cols, rows)
    set_topology(dest, offsets, columns)
    if dest.nnz:
        kc.launch(K.transpose_values_kernel, dim=(dest.nnz, *dest.block_shape),
                  device=dest.device,
                  inputs=[dest.scalar_type(scale), kc.array(order, dtype=kc.int32,
                                                            device=dest.device),
                          src.scalar_values, dest.scalar_values])


def bsr_transposed(A: Any) -> BsrMatrix:
    """A new matrix, the transpose of `A` (Warp's `warp.sparse.bsr_transposed`).

    Block (r, c) of A becomes block (c, r), transposed; columns stay sorted.
    """
    src, _ = matrix_and_scale(A, "bsr_transposed")
    transposed = bsr_zeros(src.ncol, src.nrow, block_type_for(src.scalar_type,
                                                              src.block_shape[::-1]),
                           device=src.device)
    transposed.values.requires_grad = src.requires_grad
    bsr_set_transpose(transposed, A)
    return transposed
