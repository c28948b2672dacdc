"""Assigning one matrix to another (`bsr_assign`), compressing a matrix's storage
(`bsr_compress`), and Warp's work-array objects (`bsr_axpy_work_arrays`,
`bsr_mm_work_arrays`), which kernelc accepts but does not need.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.sparse import kernels as K
from kernelc.sparse.build import _ZERO_MASKS
from kernelc.sparse.matrix import (
    BsrMatrix,
    host_active_blocks,
    matrix_and_scale,
    scalar_view,
    set_topology,
)
from kernelc.sparse.ops import bsr_copy, bsr_scale
from kernelc.sparse.padded import check_topology, ensure_row_counts, int_array, store


class bsr_axpy_work_arrays:  # noqa: N801 (Warp's name)
    """Scratch storage that Warp's `bsr_axpy` reuses across calls. kernelc computes
    topologies on the host and keeps nothing between calls: pass one or not, the result is
    the same."""

    def __init__(self) -> None:
        self.device = None


class bsr_mm_work_arrays:  # noqa: N801 (Warp's name)
    """Scratch storage that Warp's `bsr_mm` reuses across calls (and reads back with
    `reuse_topology=True`). kernelc recomputes the product topology every time, with the
    same result; pass one or not."""

    def __init__(self) -> None:
        self.device = None


def bsr_assign(dest: BsrMatrix, src: Any, structure_only: bool = False,
               topology: str | None = None) -> None:
    """Copies `src` (a matrix or a scaled one) into `dest`, converting to dest's scalar type
    and block shape (Warp's `warp.sparse.bsr_assign`).

    Args:
        dest: The matrix overwritten.
        src: The matrix copied. Each dimension of dest's block shape must divide or be a
            multiple of src's.
        structure_only: Copy the topology only (values left uninitialised).
        topology: `"compact"` (default): dest takes src's topology (and size);
            `"padded"`: each row goes into dest's row capacity (a row that does not fit is
            left empty and `dest.status_sync()` reports it); `"masked"`: dest keeps its
            blocks, which take src's values there (zero where src has none).

    Raises:
        ValueError: Another device, block shapes that do not divide, an unknown
            `topology`, or (padded, masked) a dest of another size.
    """
    src_matrix, scale = matrix_and_scale(src, "bsr_assign")
    if dest.device != src_matrix.device:
        raise ValueError("Source and destination matrices must reside on the same device")
    topology = check_topology(topology)
    result = bsr_copy(src, scalar_type=dest.scalar_type, block_shape=dest.block_shape,
                      structure_only=structure_only)
    if topology != "compact" and (result.nrow, result.ncol) != (dest.nrow, dest.ncol):
        raise ValueError(f"Incompatible destination matrix size, expected "
                         f"({result.nrow}, {result.ncol}), got ({dest.nrow}, {dest.ncol})")
    if dest is src_matrix and topology != "masked":
        if not structure_only and scale != 1.0:
            bsr_scale(dest, scale)
        return
    store(dest, result, topology, structure_only)


def bsr_compress(src: BsrMatrix, prune_numerical_zeros: bool = True, inplace: bool = False,
                 topology: str | None = None, structure_only: bool = False) -> BsrMatrix:
    """Sorts and merges the blocks of each row of `src`, in place (Warp's
    `warp.sparse.bsr_compress`); returns `src`.

    Blocks outside a row's active range (padded storage) and blocks with a column outside
    `[0, ncol)` are dropped; with `prune_numerical_zeros`, so are all-zero blocks (before
    merging: blocks that sum to zero stay). Blocks of a row with the same column are summed,
    from zero, in storage order.

    Args:
        src: The matrix to compress (not a scaled one).
        prune_numerical_zeros: Drop all-zero blocks.
        inplace: Accepted for Warp compatibility (kernelc always works through scratch
            copies; the result is the same).
        topology: `"compact"` (default): packed storage, `row_counts` becomes None;
            `"padded"`: each row keeps its capacity, its blocks first.
        structure_only: Sort and merge the columns only; values are not read or moved.

    Raises:
        ValueError: `src` is not a `BsrMatrix`; an unknown `topology`.
    """
    if not isinstance(src, BsrMatrix):
        raise ValueError("bsr_compress() requires a concrete BsrMatrix")
    topology = check_topology(topology, ("compact", "padded"))
    rows, cols, slots = host_active_blocks(src)
    keep = (cols >= 0) & (cols < src.ncol)
    if prune_numerical_zeros and not structure_only and len(slots):
        bits_type, mask = _ZERO_MASKS[src.scalar_type]
        bits = np.ascontiguousarray(src.values.numpy()[slots]).view(bits_type)
        keep &= np.any(bits.reshape(len(slots), -1) & bits_type(mask), axis=1)
    kept = np.flatnonzero(keep)
    key = rows[kept].astype(np.int64) * max(src.ncol, 1) + cols[kept]
    order = kept[np.argsort(key, kind="stable")]
    key = rows[order].astype(np.int64) * max(src.ncol, 1) + cols[order]
    new_block = np.ones(len(order), bool)
    new_block[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(new_block)
    block_ends = np.append(starts[1:], len(order))
    new_rows, new_cols = rows[order][starts], cols[order][starts]
    counts = np.bincount(new_rows, minlength=src.nrow) if src.nrow else np.zeros(0, np.int64)
    old_values = None
    if not structure_only and len(starts):
        # A differentiable snapshot: the sums below overwrite src.values.
        old_values = kc.empty(src.values.shape[0], dtype=src.values.dtype, device=src.device,
                              requires_grad=src.requires_grad)
        kc.copy(old_values, src.values)
    if topology == "compact":
        src.row_counts = None
        set_topology(src, np.concatenate([[0], np.cumsum(counts)]), new_cols)
        dest_slots = np.arange(len(starts))
    else:
        ensure_row_counts(src)
        offsets = src.offsets.numpy()[: src.nrow + 1].astype(np.int64)
        kc.copy(src.row_counts, int_array(counts, src.device), count=src.nrow)
        local = np.arange(len(starts)) - np.repeat(np.cumsum(counts) - counts, counts)
        dest_slots = offsets[new_rows] + local
        if len(starts):
            columns = src.columns.numpy().copy()
            columns[dest_slots] = new_cols
            kc.copy(src.columns, int_array(columns, src.device))
    if old_values is not None:
        device = src.device
        old_3d = scalar_view(old_values, src.scalar_type,
                             (old_values.shape[0], *src.block_shape))
        kc.launch(K.sum_blocks_kernel, dim=(len(starts), *src.block_shape), device=device,
                  inputs=[int_array(block_ends, device), int_array(slots[order], device),
                          old_3d, int_array(dest_slots, device), src.scalar_values,
                          src.scalar_type(0), 1])
    return src
