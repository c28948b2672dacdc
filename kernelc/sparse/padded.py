"""Padded and masked storage: Warp's `topology=` policies.

A padded matrix reserves a capacity per row: row r owns the slots
`offsets[r]:offsets[r + 1]`, of which the first `row_counts[r]` hold its blocks, sorted by
column; the other slots are free (their columns and values mean nothing). `nnz` is then
the total capacity, `offsets[nrow]`.

Every operation computes its result in compact form first (on the host for the topology,
by kernels for the values), then stores it in the destination by one of three policies:

- `"compact"`: the destination takes the result's topology (`row_counts` becomes None);
- `"padded"`: each row of the result is written into the destination's existing row
  capacity; a row that does not fit is left empty and the matrix's status becomes
  `BSR_STATUS_ROW_CAPACITY_EXCEEDED` (sticky, read by `status_sync()`);
- `"masked"`: the destination keeps its blocks; each takes the result's block at the same
  place, or zero where the result has none; the result's other blocks are dropped.

Operations read padded operands through `compacted`, a compact copy of their blocks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernelc as kc
from kernelc.runtime.array import array
from kernelc.sparse import kernels as K
from kernelc.sparse.matrix import BsrMatrix, host_active_blocks, host_rows_columns, set_topology

TOPOLOGIES = ("compact", "masked", "padded")
STATUS_ROW_CAPACITY_EXCEEDED = 1


def check_topology(topology: str | None, allowed: tuple[str, ...] = TOPOLOGIES) -> str:
    """The policy (None is `"compact"`).

    Raises:
        ValueError: A policy outside `allowed` (Warp's message).
    """
    if topology is None:
        return "compact"
    if topology not in allowed:
        raise ValueError(f"Unsupported topology policy: {topology}")
    return topology


def int_array(values: np.ndarray, device: Any) -> array:
    """`values` as an int32 array on `device`."""
    return kc.array(np.ascontiguousarray(values, dtype=np.int32), dtype=kc.int32, device=device)


def move_blocks(src: BsrMatrix, src_slots: np.ndarray, dest: BsrMatrix,
                dest_slots: np.ndarray) -> None:
    """dest.values[dest_slots[k]] = src.values[src_slots[k]] (zero where src_slots[k] < 0)."""
    if len(dest_slots) == 0:
        return
    device = dest.device
    kc.launch(K.move_blocks_kernel, dim=(len(dest_slots), *dest.block_shape), device=device,
              inputs=[int_array(src_slots, device), int_array(dest_slots, device),
                      src.scalar_values, dest.scalar_values, dest.scalar_type(0)])


def compacted(A: BsrMatrix) -> BsrMatrix:
    """A itself if compact, else a new compact matrix holding A's blocks."""
    if A.row_counts is None:
        return A
    rows, cols, slots = host_active_blocks(A)
    compact = BsrMatrix(A.nrow, A.ncol, A.values.dtype, device=A.device)
    compact.values.requires_grad = A.requires_grad
    counts = np.bincount(rows, minlength=A.nrow) if A.nrow else np.zeros(0, np.int64)
    set_topology(compact, np.concatenate([[0], np.cumsum(counts)]), cols)
    move_blocks(A, slots, compact, np.arange(len(slots)))
    return compact


def ensure_row_counts(A: BsrMatrix) -> None:
    """Makes A padded, if it is not: every row's capacity is its current block count."""
    if A.row_counts is None or A.row_counts.shape[0] < A.nrow:
        counts = np.diff(A.offsets.numpy()[: A.nrow + 1])
        A.row_counts = int_array(counts, A.device)
    A._ensure_status()


def _check_row_capacity(A: BsrMatrix, row_capacity: Any) -> np.ndarray:
    if isinstance(row_capacity, array):
        if row_capacity.ndim != 1 or row_capacity.shape[0] != A.nrow:
            raise ValueError(f"row_capacity array must have shape ({A.nrow},), got "
                             f"{row_capacity.shape}")
        if row_capacity.dtype != kc.int32:
            raise TypeError("row_capacity array must have dtype int32")
        if row_capacity.device != A.device:
            raise ValueError(f"row_capacity array must reside on the destination matrix device, "
                             f"got {row_capacity.device} and {A.device}")
        return row_capacity.numpy().astype(np.int64)
    capacity = int(row_capacity)
    if capacity < 0:
        raise ValueError("row_capacity must be nonnegative")
    return np.full(A.nrow, capacity, np.int64)


def _set_offsets(A: BsrMatrix, offsets: np.ndarray) -> None:
    if A.offsets.shape[0] == len(offsets):
        kc.copy(A.offsets, int_array(offsets, A.device))  # callers may hold the array
    else:
        A.offsets = int_array(offsets, A.device)


def set_zero_topology(A: BsrMatrix, topology: str, row_capacity: Any,
                      nnz_capacity: int | None, old_offsets: np.ndarray | None) -> None:
    """Empties A (`bsr_zeros`, `bsr_set_zero`). Padded: rows get `row_capacity` (an int or a
    per-row array), or keep the capacities of `old_offsets` (rows beyond them get none)."""
    if nnz_capacity is not None and int(nnz_capacity) < 0:
        raise ValueError("nnz_capacity must be nonnegative")
    if row_capacity is not None and topology != "padded":
        raise ValueError("row_capacity requires topology='padded'")
    if topology != "padded":
        _set_offsets(A, np.zeros(A.nrow + 1, np.int64))
        A.row_counts = None
        A.notify_nnz_changed(0, nnz_capacity)
        return
    nnz = None
    if row_capacity is not None:
        capacities = _check_row_capacity(A, row_capacity)
        if isinstance(row_capacity, array) and nnz_capacity is not None:
            nnz = int(nnz_capacity)  # Warp's slot bound: it does not read the sum back
    elif old_offsets is not None:
        capacities = np.diff(old_offsets)[: A.nrow]
        capacities = np.concatenate([capacities, np.zeros(A.nrow - len(capacities), np.int64)])
    else:
        capacities = np.zeros(A.nrow, np.int64)
    offsets = np.concatenate([[0], np.cumsum(capacities)])
    _set_offsets(A, offsets)
    A.row_counts = kc.zeros(A.nrow, dtype=kc.int32, device=A.device)
    A._ensure_status()
    if nnz is None:
        nnz = int(offsets[-1])
        if row_capacity is None and old_offsets is not None:
            nnz = max(nnz, A.nnz)  # Warp keeps its slot bound
    A.notify_nnz_changed(nnz, nnz_capacity)


def store(dest: BsrMatrix, result: BsrMatrix, topology: str,
          structure_only: bool = False) -> None:
    """Stores the compact `result` in `dest` by `topology` (see the module's docstring).
    `result` must have dest's block type; for "padded" and "masked", its size too."""
    if topology == "compact":
        dest.nrow, dest.ncol = result.nrow, result.ncol
        if dest.offsets.shape[0] != result.nrow + 1:
            dest.offsets = kc.zeros(result.nrow + 1, dtype=kc.int32, device=dest.device)
        dest.row_counts = None
        set_topology(dest, result.offsets.numpy()[: result.nrow + 1],
                     host_rows_columns(result)[1])
        if dest.nnz and not structure_only:
            kc.copy(dest.values, result.values, count=dest.nnz)
        return
    if topology == "masked":
        if not structure_only:
            _store_masked(dest, result)
        return
    _store_padded(dest, result, structure_only)


def _store_masked(dest: BsrMatrix, result: BsrMatrix) -> None:
    rows, cols, slots = host_active_blocks(dest)
    result_rows, result_cols = host_rows_columns(result)
    ncol = max(dest.ncol, 1)
    result_keys = result_rows.astype(np.int64) * ncol + result_cols
    keys = rows.astype(np.int64) * ncol + cols
    found = np.searchsorted(result_keys, keys)
    found_ok = found < len(result_keys)
    found_ok[found_ok] = result_keys[found[found_ok]] == keys[found_ok]
    move_blocks(result, np.where(found_ok, found, -1), dest, slots)


def _store_padded(dest: BsrMatrix, result: BsrMatrix, structure_only: bool) -> None:
    ensure_row_counts(dest)
    offsets = dest.offsets.numpy()[: dest.nrow + 1].astype(np.int64)
    result_offsets = result.offsets.numpy()[: result.nrow + 1].astype(np.int64)
    counts = np.diff(result_offsets)
    fits = counts <= np.diff(offsets)
    if not fits.all():
        status = dest._ensure_status()
        status.fill_(max(dest.status_sync(), STATUS_ROW_CAPACITY_EXCEEDED))
    counts = np.where(fits, counts, 0)
    kc.copy(dest.row_counts, int_array(counts, dest.device), count=dest.nrow)
    rows = np.repeat(np.arange(dest.nrow), counts)
    local = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    src_slots = result_offsets[rows] + local
    dest_slots = offsets[rows] + local
    if len(rows):
        columns = dest.columns.numpy().copy()
        columns[dest_slots] = host_rows_columns(result)[1][src_slots]
        kc.copy(dest.columns, int_array(columns, dest.device))
        if not structure_only:
            move_blocks(result, src_slots, dest, dest_slots)
