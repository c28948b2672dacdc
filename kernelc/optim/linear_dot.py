"""Dot products for the iterative solvers, computed on the device: `Dot` for one system,
`BatchedDot` for a batched operator's independent subproblems (one product per subproblem).

Both keep their results in a (columns, subproblems) array, so `col(k)` is column k's
products as a 1-d array (one element for an unbatched system) that the update kernels index
by subproblem.
"""

from __future__ import annotations

from typing import Any

import kernelc as kc
from kernelc import types as T
from kernelc.optim import linear_kernels as K
from kernelc.runtime.array import array

# ---- kernels ----------------------------------------------------------------------------


@kc.kernel
def batch_dot_kernel(a: kc.array2d(dtype=Any), b: kc.array2d(dtype=Any),
                     offsets: kc.array(dtype=int), out: kc.array2d(dtype=Any), zero: Any):
    # One thread per (column, subproblem), summing in order: Warp's CPU order.
    column, batch = kc.tid()
    s = zero
    for i in range(offsets[batch], offsets[batch + 1]):
        s = s + a[column, i] * b[column, i]
    out[column, batch] = s


@kc.kernel
def plan_chunks_kernel(offsets: kc.array(dtype=int), chunk: int,
                       chunk_offsets: kc.array(dtype=int)):
    # One thread: chunk_offsets[b] is the first chunk of subproblem b, which has
    # ceil(length / chunk) chunks (none when empty).
    count = offsets.shape[0] - 1
    total = 0
    for batch in range(count):
        chunk_offsets[batch] = total
        length = offsets[batch + 1] - offsets[batch]
        total = total + (length + chunk - 1) // chunk
    chunk_offsets[count] = total


@kc.kernel
def chunk_dot_kernel(a: kc.array2d(dtype=Any), b: kc.array2d(dtype=Any),
                     offsets: kc.array(dtype=int), chunk_offsets: kc.array(dtype=int),
                     chunk: int, partials: kc.array2d(dtype=Any), zero: Any):
    # One thread per (column, chunk of some subproblem); threads past the last chunk idle.
    column, g = kc.tid()
    batch = K.find_batch(g, chunk_offsets)
    if batch >= 0:
        start = offsets[batch] + (g - chunk_offsets[batch]) * chunk
        end = kc.min(start + chunk, offsets[batch + 1])
        s = zero
        for i in range(start, end):
            s = s + a[column, i] * b[column, i]
        partials[column, g] = s


@kc.kernel
def sum_chunks_kernel(partials: kc.array2d(dtype=Any), chunk_offsets: kc.array(dtype=int),
                      out: kc.array2d(dtype=Any), zero: Any):
    column, batch = kc.tid()
    s = zero
    for g in range(chunk_offsets[batch], chunk_offsets[batch + 1]):
        s = s + partials[column, g]
    out[column, batch] = s


# ---- helpers ----------------------------------------------------------------------------


def view(arr: array, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0) -> array:
    """An array over `arr`'s memory (sharing, and keeping alive, its allocation)."""
    return array._over(arr._alloc, arr.ptr + offset, shape, strides, arr.dtype, arr.pinned)


def as_rows(arr: array) -> array:
    """A 2-d (columns, n) view: 2-d arrays as they are, a 1-d array as one row."""
    if arr.ndim == 2:
        return arr
    return view(arr, (1, arr.shape[0]), (0, arr.strides[0]))


def launch(kernel: Any, dim: Any, inputs: list[Any], device: Any) -> None:
    kc.launch(kernel, dim=dim, inputs=inputs, device=device)


# ---- one system -------------------------------------------------------------------------


class Dot:
    """Dot products of up to `columns` pairs of vectors of length `n`.

    Products are summed in order by blocks of `DOT_BLOCK`, then the blocks' sums likewise,
    level by level: Warp's CPU order, so float32 results agree with Warp's bit for bit,
    and the same on every device and for any number of CPU threads.

    Attributes:
        out: (columns, 1) results; `col(k)` is column k's as a 1-element array.
    """

    def __init__(self, n: int, scalar: T.ScalarType, device: Any, columns: int) -> None:
        self.n = n
        self.zero = scalar(0)
        self.device = device
        counts = []
        blocks = -(-n // K.DOT_BLOCK)
        while blocks > 1:
            counts.append(blocks)
            blocks = -(-blocks // K.DOT_BLOCK)
        self.counts = counts
        self.levels = [kc.empty((columns, count), dtype=scalar, device=device)
                       for count in counts]
        self.out = kc.zeros((columns, 1), dtype=scalar, device=device)
        self._cols = [self.out[k] for k in range(columns)]

    def col(self, k: int = 0) -> array:
        """Column k's result, a 1-element array."""
        return self._cols[k]

    def compute(self, a: array, b: array, col_offset: int = 0, out: array | None = None) -> None:
        """Row-wise dot products of `a` and `b` (1-d, or 2-d with one pair per row) into
        columns `col_offset`... of `out`, or into `out` itself when given ((rows, 1))."""
        a, b = as_rows(a), as_rows(b)
        rows = a.shape[0]
        if out is None:
            out = self.out[col_offset:col_offset + rows]
        targets = [level[:rows] for level in self.levels] + [out]
        counts = [*self.counts, 1]
        launch(K.dot_blocks_kernel, (rows, counts[0]), [a, b, self.n, targets[0], self.zero],
               self.device)
        for level in range(len(self.counts)):
            launch(K.sum_blocks_kernel, (rows, counts[level + 1]),
                   [targets[level], counts[level], targets[level + 1], self.zero], self.device)


# ---- independent subproblems -------------------------------------------------------------


class BatchedDot:
    """One dot product per subproblem of a batched operator, for up to `columns` pairs of
    vectors of length `n`; dofs outside `offsets[0]:offsets[-1]` take no part.

    On the CPU each subproblem's products are summed in order, as Warp's CPU reduction
    does, so results agree with Warp's bit for bit. On CUDA devices, subproblems longer
    than `DOT_BLOCK` (by `max_batch_length`, or by `n` when it is not given) are split into
    chunks of `DOT_BLOCK` summed by separate threads, then each subproblem's chunks in
    order; the chunk layout is planned on the device once, so no offset is read back.
    `chunked` forces one reduction or the other (None: as just said).

    Attributes:
        out: (columns, subproblems) results; `col(k)` is column k's, one per subproblem.
    """

    def __init__(self, n: int, scalar: T.ScalarType, device: Any, columns: int,
                 offsets: array, max_batch_length: int | None,
                 chunked: bool | None = None) -> None:
        self.zero = scalar(0)
        self.device = device
        self.offsets = offsets
        self.batch_count = count = offsets.shape[0] - 1
        self.out = kc.zeros((columns, count), dtype=scalar, device=device)
        self._cols = [self.out[k] for k in range(columns)]
        bound = n if max_batch_length is None else min(n, max_batch_length)
        self.chunks = 0
        if device.is_cuda and bound > K.DOT_BLOCK if chunked is None else chunked:
            chunk = K.DOT_BLOCK
            # Each subproblem has at most one partial chunk: a bound that holds even when
            # max_batch_length understates a length.
            self.chunks = -(-n // chunk) + count
            self.chunk_offsets = kc.empty(count + 1, dtype=int, device=device)
            launch(plan_chunks_kernel, 1, [offsets, chunk, self.chunk_offsets], device)
            self.partials = kc.empty((columns, self.chunks), dtype=scalar, device=device)

    def col(self, k: int = 0) -> array:
        """Column k's results, one per subproblem."""
        return self._cols[k]

    def compute(self, a: array, b: array, col_offset: int = 0, out: array | None = None) -> None:
        """Per-subproblem dot products of the rows of `a` and `b` (1-d, or 2-d with one
        pair per row) into rows `col_offset`... of `out` ((columns, subproblems)), or into
        `out` itself when given ((rows, subproblems))."""
        a, b = as_rows(a), as_rows(b)
        rows = a.shape[0]
        if out is None:
            out = self.out[col_offset:col_offset + rows]
        if self.chunks == 0:
            launch(batch_dot_kernel, (rows, self.batch_count),
                   [a, b, self.offsets, out, self.zero], self.device)
            return
        partials = self.partials[:rows]
        launch(chunk_dot_kernel, (rows, self.chunks),
               [a, b, self.offsets, self.chunk_offsets, K.DOT_BLOCK, partials, self.zero],
               self.device)
        launch(sum_chunks_kernel, (rows, self.batch_count),
               [partials, self.chunk_offsets, out, self.zero], self.device)


def make_dot(n: int, scalar: T.ScalarType, device: Any, columns: int, offsets: array | None,
             max_batch_length: int | None) -> Dot | BatchedDot:
    """A `Dot`, or a `BatchedDot` for a batched operator (`offsets` given)."""
    if offsets is None:
        return Dot(n, scalar, device, columns)
    return BatchedDot(n, scalar, device, columns, offsets, max_batch_length)
