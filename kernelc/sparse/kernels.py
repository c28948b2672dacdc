"""The kernels behind `kernelc.sparse`.

Every kernel sees block values as a 3-d scalar array `values[block, i, j]` (a scalar block
is a 1x1 matrix), so one kernel serves scalar and matrix blocks of float16, float32 or
float64. A typed `zero` argument fixes the type of accumulators. The operations and their order are
those of Warp 1.19's kernels, so that results round as Warp's do.
"""

from __future__ import annotations

from typing import Any

import kernelc as kc
from kernelc.utils._common import builtin

# ---- lookups ----------------------------------------------------------------------------


@kc.func
def _search_row(col: int, begin: int, end: int, columns: kc.array(dtype=int)) -> int:
    """Index of `col` among the sorted `columns[begin:end]`, or -1."""
    result = -1
    if begin < end:
        found = kc.lower_bound(columns, begin, end, col)  # at most end - 1
        if columns[found] == col:
            result = found
    return result


@kc.func
def bsr_block_index(row: int, col: int, bsr_offsets: kc.array(dtype=int),
                    bsr_columns: kc.array(dtype=int)) -> int:
    """Index of the block at block coordinates (row, col), or -1 where there is none
    (Warp's `bsr_block_index`)."""
    result = -1
    if row >= 0:
        result = _search_row(col, bsr_offsets[row], bsr_offsets[row + 1], bsr_columns)
    return result


@kc.func
def bsr_block_index(row: int, col: int, bsr_offsets: kc.array(dtype=int),  # noqa: F811
                    bsr_columns: kc.array(dtype=int),
                    bsr_row_counts: kc.array(dtype=int)) -> int:
    """The same, searching only the first `bsr_row_counts[row]` blocks of the row when
    row counts are given (Warp's capacity-aware form; kernelc's matrices have none)."""
    result = -1
    if row >= 0:
        begin = bsr_offsets[row]
        end = bsr_offsets[row + 1]
        if bsr_row_counts:
            end = begin + bsr_row_counts[row]
        result = _search_row(col, begin, end, bsr_columns)
    return result


@kc.func
def bsr_row_index(offsets: kc.array(dtype=int), row_count: int, block_index: int) -> int:
    """Row holding the block with index `block_index`, or -1 outside the stored blocks
    (Warp's `bsr_row_index`)."""
    result = -1
    if block_index < offsets[row_count]:
        # The last row r with offsets[r] <= block_index (empty rows share their offset);
        # a negative index finds row 0's offset, 0, and gives -1.
        result = kc.lower_bound(offsets, 0, row_count + 1, block_index + 1) - 1
    return result


@kc.func
def bsr_row_index(offsets: kc.array(dtype=int), row_count: int, block_index: int,  # noqa: F811
                  row_counts: kc.array(dtype=int)) -> int:
    """The same, with -1 for a block in a row's unused capacity when row counts are given."""
    row = bsr_row_index(offsets, row_count, block_index)
    if row_counts and row >= 0:
        if block_index >= offsets[row] + row_counts[row]:
            row = -1
    return row


# ---- construction -----------------------------------------------------------------------


@builtin
def accumulate_triplets_kernel(summed_offsets: kc.array(dtype=int),
                               summed_indices: kc.array(dtype=int),
                               triplet_values: kc.array3d(dtype=Any),
                               values: kc.array3d(dtype=Any)):
    # Block b sums triplets summed_indices[summed_offsets[b - 1]:summed_offsets[b]], in order.
    block, i, j = kc.tid()
    begin = 0
    if block > 0:
        begin = summed_offsets[block - 1]
    end = summed_offsets[block]
    v = triplet_values[summed_indices[begin], i, j]
    for k in range(begin + 1, end):
        v = v + triplet_values[summed_indices[k], i, j]
    values[block, i, j] = v


@builtin
def set_diag_kernel(nnz: int, offsets: kc.array(dtype=int), columns: kc.array(dtype=int)):
    row = kc.tid()
    offsets[row] = kc.min(row, nnz)
    if row < nnz:
        columns[row] = row


@builtin
def transpose_values_kernel(scale: Any, source_blocks: kc.array(dtype=int),
                            src: kc.array3d(dtype=Any), dest: kc.array3d(dtype=Any)):
    block, i, j = kc.tid()
    dest[block, i, j] = src[source_blocks[block], j, i] * scale


@builtin
def scale_kernel(alpha: Any, values: kc.array3d(dtype=Any)):
    block, i, j = kc.tid()
    values[block, i, j] = alpha * values[block, i, j]


@builtin
def scale_1d_kernel(alpha: Any, values: kc.array(dtype=Any)):
    i = kc.tid()
    values[i] = alpha * values[i]


@builtin
def get_diag_kernel(scale: Any, offsets: kc.array(dtype=int), columns: kc.array(dtype=int),
                    values: kc.array3d(dtype=Any), out: kc.array3d(dtype=Any)):
    row, i, j = kc.tid()
    diag = bsr_block_index(row, row, offsets, columns)
    if diag != -1:
        out[row, i, j] = scale * values[diag, i, j]


@builtin
def inverse_diagonal_kernel(diag: kc.array3d(dtype=Any), inv_diag: kc.array(dtype=Any),
                            use_abs: int, zero: Any, one: Any):
    # Warp's Jacobi rule: a zero coefficient is inverted to 1.
    row, k = kc.tid()
    c = diag[row, k, k]
    d = c
    if use_abs != 0:
        d = kc.abs(c)
    inv_diag[row * diag.shape[1] + k] = kc.where(c == zero, one, one / d)


@builtin
def add_blocks_kernel(src_offset: int, scale: Any, rows: kc.array(dtype=int),
                      cols: kc.array(dtype=int), offsets: kc.array(dtype=int),
                      columns: kc.array(dtype=int), src: kc.array3d(dtype=Any),
                      dest: kc.array3d(dtype=Any)):
    # dest[(rows[k], cols[k])] += scale * src[k - src_offset] (atomically, as in Warp).
    k, i, j = kc.tid()
    row = rows[k + src_offset]
    col = cols[k + src_offset]
    block = bsr_block_index(row, col, offsets, columns)
    if block != -1:
        kc.atomic_add(dest, block, i, j, scale * src[k, i, j])


# ---- products ---------------------------------------------------------------------------


@builtin
def mv_kernel(alpha: Any, offsets: kc.array(dtype=int), columns: kc.array(dtype=int),
              values: kc.array3d(dtype=Any), x: kc.array(dtype=Any), beta: Any,
              y: kc.array(dtype=Any), zero: Any):
    row, subrow = kc.tid()
    block_rows = values.shape[1]
    block_cols = values.shape[2]
    yi = row * block_rows + subrow
    v = zero
    if alpha != zero:
        for block in range(offsets[row], offsets[row + 1]):
            xs = columns[block] * block_cols
            for col in range(block_cols):
                v = v + values[block, subrow, col] * x[xs + col]
        v = v * alpha
    if beta != zero:
        v = v + beta * y[yi]
    y[yi] = v


@builtin
def mv_transpose_kernel(alpha: Any, row_count: int, offsets: kc.array(dtype=int),
                        columns: kc.array(dtype=int), values: kc.array3d(dtype=Any),
                        x: kc.array(dtype=Any), y: kc.array(dtype=Any), zero: Any):
    block, subcol = kc.tid()
    row = bsr_row_index(offsets, row_count, block)
    if row != -1:
        block_rows = values.shape[1]
        block_cols = values.shape[2]
        col_sum = zero
        for subrow in range(block_rows):
            col_sum = col_sum + values[block, subrow, subcol] * x[row * block_rows + subrow]
        kc.atomic_add(y, columns[block] * block_cols + subcol, alpha * col_sum)


@builtin
def mm_kernel(alpha: Any, x_offsets: kc.array(dtype=int), x_columns: kc.array(dtype=int),
              x_values: kc.array3d(dtype=Any), y_offsets: kc.array(dtype=int),
              y_columns: kc.array(dtype=int), y_values: kc.array3d(dtype=Any),
              z_row_count: int, z_offsets: kc.array(dtype=int),
              z_columns: kc.array(dtype=int), z_values: kc.array3d(dtype=Any), zero: Any):
    # One block of z: z += alpha * sum over k of x[row, k] @ y[k, col], k increasing.
    block, i, j = kc.tid()
    row = bsr_row_index(z_offsets, z_row_count, block)
    col = z_columns[block]
    v = zero
    for x_block in range(x_offsets[row], x_offsets[row + 1]):
        y_block = bsr_block_index(x_columns[x_block], col, y_offsets, y_columns)
        if y_block != -1:
            # The block product first, then its sum into v: Warp's matrix arithmetic.
            p = zero
            for k in range(x_values.shape[2]):
                p = p + x_values[x_block, i, k] * y_values[y_block, k, j]
            v = v + p
    z_values[block, i, j] = z_values[block, i, j] + alpha * v


# ---- padded and masked storage ----------------------------------------------------------


@builtin
def move_blocks_kernel(src_slots: kc.array(dtype=int), dest_slots: kc.array(dtype=int),
                       src: kc.array3d(dtype=Any), dest: kc.array3d(dtype=Any), zero: Any):
    # dest[dest_slots[k]] = src[src_slots[k]], or zero where src_slots[k] is -1.
    k, i, j = kc.tid()
    src_slot = src_slots[k]
    v = zero
    if src_slot >= 0:
        v = src[src_slot, i, j]
    dest[dest_slots[k], i, j] = v


@builtin
def sum_blocks_kernel(block_ends: kc.array(dtype=int), indices: kc.array(dtype=int),
                      src: kc.array3d(dtype=Any), dest_slots: kc.array(dtype=int),
                      dest: kc.array3d(dtype=Any), zero: Any, from_zero: int):
    # dest[dest_slots[b]] = sum of src[indices[k]] for k in block b's range, in order;
    # the sum starts from zero (`from_zero`) or from its first term.
    block, i, j = kc.tid()
    begin = 0
    if block > 0:
        begin = block_ends[block - 1]
    end = block_ends[block]
    v = zero
    if from_zero == 0:
        v = src[indices[begin], i, j]
        begin = begin + 1
    for k in range(begin, end):
        v = v + src[indices[k], i, j]
    dest[dest_slots[block], i, j] = v


@builtin
def atomic_add_blocks_kernel(blocks: kc.array(dtype=int), src: kc.array3d(dtype=Any),
                             dest: kc.array3d(dtype=Any)):
    # dest[blocks[k]] += src[k] where blocks[k] is not -1.
    k, i, j = kc.tid()
    block = blocks[k]
    if block >= 0:
        kc.atomic_add(dest, block, i, j, src[k, i, j])
