"""Copying a BSR matrix into blocks of another shape (`bsr_copy(A, block_shape=...)`).

Each dimension of the new block shape must divide or be a multiple of the old one's. A new
block exists wherever an old block overlaps it (so zero coefficients of an old block stay
stored, as in Warp); the topology is computed on the host, the values copied by a kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.sparse.build import bsr_zeros, triplet_topology
from kernelc.sparse.kernels import bsr_block_index
from kernelc.sparse.matrix import (
    BsrMatrix,
    block_type_for,
    host_rows_columns,
    set_topology,
    zero_values,
)


@kc.kernel
def _copy_subblocks_kernel(scale: Any, src_rows: kc.array(dtype=int),
                           src_cols: kc.array(dtype=int), src_sub: kc.vec2i,
                           dest_sub: kc.vec2i, src: kc.array3d(dtype=Any),
                           dest_offsets: kc.array(dtype=int), dest_columns: kc.array(dtype=int),
                           dest: kc.array3d(dtype=Any)):
    # Sub-block (subrow, subcol) of source block `block` into its place in a dest block.
    block, subrow, subcol = kc.tid()
    rows = src.shape[1] // src_sub[0]
    cols = src.shape[2] // src_sub[1]
    dest_subrow = src_rows[block] * src_sub[0] + subrow
    dest_subcol = src_cols[block] * src_sub[1] + subcol
    dest_row = dest_subrow // dest_sub[0]
    dest_col = dest_subcol // dest_sub[1]
    slot = bsr_block_index(dest_row, dest_col, dest_offsets, dest_columns)
    if slot != -1:
        base_i = (dest_subrow - dest_sub[0] * dest_row) * rows
        base_j = (dest_subcol - dest_sub[1] * dest_col) * cols
        for i in range(rows):
            for j in range(cols):
                dest[slot, base_i + i, base_j + j] = scale * src[block, subrow * rows + i,
                                                                 subcol * cols + j]


def _ratio(src: int, dest: int, what: str) -> tuple[int, int]:
    """(source sub-blocks per block, dest sub-blocks per block) along one dimension."""
    if src >= dest:
        if src % dest:
            raise ValueError(f"Incompatible dest and src block shapes; block {what} must evenly "
                             f"divide one another (Got {dest}, {src})")
        return src // dest, 1
    if dest % src:
        raise ValueError(f"Incompatible dest and src block shapes; block {what} must evenly "
                         f"divide one another (Got {dest}, {src})")
    return 1, dest // src


def reblocked_copy(src: BsrMatrix, scale: Any, block_shape: tuple[int, int]) -> BsrMatrix:
    """A copy of `scale * src` with blocks of `block_shape` (same scalar type).

    Raises:
        ValueError: Block shapes that do not divide one another, or a block shape that does
            not divide the matrix.
    """
    src_subrows, dest_subrows = _ratio(src.block_shape[0], block_shape[0], "rows")
    src_subcols, dest_subcols = _ratio(src.block_shape[1], block_shape[1], "columns")
    nrow = src.nrow * src_subrows // dest_subrows
    ncol = src.ncol * src_subcols // dest_subcols
    if nrow * dest_subrows != src.nrow * src_subrows or ncol * dest_subcols != src.ncol * src_subcols:
        raise ValueError(f"The requested block shape {tuple(block_shape)} does not evenly divide "
                         f"the source matrix of total size {src.shape}")
    dest = bsr_zeros(nrow, ncol, block_type_for(src.scalar_type, tuple(block_shape)),
                     device=src.device)
    dest.values.requires_grad = src.requires_grad
    rows, cols = host_rows_columns(src)
    sub_r = np.arange(src_subrows)
    sub_c = np.arange(src_subcols)
    all_rows = ((rows[:, None, None] * src_subrows + sub_r[None, :, None]) // dest_subrows
                + 0 * sub_c[None, None, :]).ravel()
    all_cols = ((cols[:, None, None] * src_subcols + sub_c[None, None, :]) // dest_subcols
                + 0 * sub_r[None, :, None]).ravel()
    offsets, columns, _, _ = triplet_topology(nrow, ncol, all_rows.astype(np.int32),
                                              all_cols.astype(np.int32))
    set_topology(dest, offsets, columns)
    if dest.nnz:
        zero_values(dest.values)
        device = src.device
        kc.launch(_copy_subblocks_kernel, dim=(src.nnz, src_subrows, src_subcols), device=device,
                  inputs=[src.scalar_type(scale), kc.array(rows, dtype=kc.int32, device=device),
                          kc.array(cols, dtype=kc.int32, device=device),
                          kc.vec2i(src_subrows, src_subcols),
                          kc.vec2i(dest_subrows, dest_subcols), src.scalar_values,
                          dest.offsets, dest.columns, dest.scalar_values])
    return dest
