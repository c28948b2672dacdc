"""The CPU build's sort of points by cell: a stable counting sort on two levels.

`HashGrid.build` needs the points ordered by cell index, stably (equal cells keep the
points' order, as a stable radix sort leaves them). On the CPU that sort is done here in
five launches instead of the general `kc.utils.radix_sort_pairs`:

1. `cell_keys`: the cell of every point (one thread per point);
2. `top_histograms`: each of `BLOCKS` blocks of consecutive points counts the top bits of
   its cells (its "buckets", at most `TOP` of them);
3. `scan_top`: one thread turns the counts, bucket-major, into each (bucket, block)'s
   first output slot;
4. `scatter_top`: each block moves its points to their buckets, in order;
5. `sort_buckets`: `BLOCKS` threads sort the buckets by the remaining low bits, each
   bucket least significant digit first, in passes of at most `LOW_BITS` bits (one pass
   for tables of up to 2^21 cells). A bucket is a small contiguous range, so its passes
   run in the cache.

Keys and point indices ping-pong between the two halves of the grid's scratch arrays
(2n each); the first level writes to the half that leaves the result in the first. Reads
of the scratch go through raw addresses: they carry no alias promise, and they keep the
loops scalar (each thread walks its own range; as SIMD lanes every access would be a
gather or scatter).
"""

from __future__ import annotations

from typing import Any

import kernelc as kc
from kernelc.builtins import BUILTINS
from kernelc.spatial import hash_grid_lang as lang

_load_i32 = BUILTINS["_load_int32"]

TOP = 1024  # the most buckets of the first level
BLOCKS = 64  # blocks of points of the first level: enough for a parallel launch
LOW_BITS = 11  # the most bits one pass of the second level sorts by
LOW = 1 << LOW_BITS


@kc.kernel
def cell_keys(points: kc.array(dtype=Any), inv: Any, dim_x: kc.int32, dim_y: kc.int32,
              dim_z: kc.int32, keys: kc.array(dtype=kc.int32), dst: kc.int32):
    # `inv` has the points' scalar type: the product rounds as the queries' products do.
    i = kc.tid()
    p = points[i]
    keys[dst + i] = lang.cell_index(dim_x, dim_y, dim_z, lang.cell_coord(p[0] * inv),
                                    lang.cell_coord(p[1] * inv), lang.cell_coord(p[2] * inv))


@kc.func
def _block_range(b: kc.int32, n: kc.int32):
    step = (n + (BLOCKS - 1)) // BLOCKS
    start = kc.min(b * step, n)
    return start, kc.min(start + step, n)


@kc.kernel
def top_histograms(keys: kc.uint64, src: kc.int32, n: kc.int32, shift: kc.int32,
                   top: kc.int32, hist: kc.array(dtype=kc.int32)):
    # block b counts into hist[b * top:][:top] (its own cache lines)
    b = kc.tid()
    base = b * top
    for d in range(top):
        hist[base + d] = 0
    start, end = _block_range(b, n)
    for i in range(start, end):
        slot = base + ((_load_i32(keys, src + i) >> shift) & (top - 1))
        hist[slot] = hist[slot] + 1


@kc.kernel
def scan_top(top: kc.int32, hist: kc.array(dtype=kc.int32), next_slot: kc.array(dtype=kc.int32)):
    # Bucket-major: all blocks' points of bucket 0 first, each block's in block order. The
    # counts are walked block by block (in memory order), not bucket by bucket.
    for d in range(top):
        next_slot[d] = 0
    for b in range(BLOCKS):
        for d in range(top):
            next_slot[d] = next_slot[d] + hist[b * top + d]
    total = kc.int32(0)
    for d in range(top):
        count = next_slot[d]
        next_slot[d] = total
        total += count
    for b in range(BLOCKS):
        for d in range(top):
            count = hist[b * top + d]
            hist[b * top + d] = next_slot[d]
            next_slot[d] = next_slot[d] + count


@kc.kernel
def scatter_top(keys: kc.array(dtype=kc.int32), keys_at: kc.uint64,
                values: kc.array(dtype=kc.int32), n: kc.int32, src: kc.int32, dst: kc.int32,
                shift: kc.int32, top: kc.int32, hist: kc.array(dtype=kc.int32)):
    # afterwards the last block's slot of each bucket is the bucket's end
    b = kc.tid()
    base = b * top
    start, end = _block_range(b, n)
    for i in range(start, end):
        k = _load_i32(keys_at, src + i)
        slot = base + ((k >> shift) & (top - 1))
        o = hist[slot]
        hist[slot] = o + 1
        keys[dst + o] = k
        values[dst + o] = i


@kc.func
def _sort_bucket(keys: kc.array(dtype=kc.int32), keys_at: kc.uint64,
                 values: kc.array(dtype=kc.int32), values_at: kc.uint64, n: kc.int32,
                 src: kc.int32, passes: kc.int32, bits: kc.int32, start: kc.int32,
                 end: kc.int32, base: kc.int32, counts: kc.array(dtype=kc.int32)):
    radix = 1 << bits
    mask = radix - 1
    at = src
    if end - start > 1:
        for p in range(passes):
            shift = p * bits
            for d in range(base, base + radix):
                counts[d] = 0
            for i in range(start, end):
                slot = base + ((_load_i32(keys_at, at + i) >> shift) & mask)
                counts[slot] = counts[slot] + 1
            total = start
            for d in range(base, base + radix):
                c = counts[d]
                counts[d] = total
                total += c
            to = n - at
            for i in range(start, end):
                k = _load_i32(keys_at, at + i)
                slot = base + ((k >> shift) & mask)
                o = counts[slot]
                counts[slot] = o + 1
                keys[to + o] = k
                values[to + o] = _load_i32(values_at, at + i)
            at = to
    elif at != 0:  # a bucket of one point: it was written to the second half
        for i in range(start, end):
            keys[i] = _load_i32(keys_at, at + i)
            values[i] = _load_i32(values_at, at + i)


@kc.kernel
def sort_buckets(keys: kc.array(dtype=kc.int32), keys_at: kc.uint64,
                 values: kc.array(dtype=kc.int32), values_at: kc.uint64, n: kc.int32,
                 src: kc.int32, passes: kc.int32, bits: kc.int32, top: kc.int32,
                 hist: kc.array(dtype=kc.int32), counts: kc.array(dtype=kc.int32)):
    # Thread t sorts buckets t, t + BLOCKS, ...: points often fill a run of buckets, and
    # the launch hands out runs of consecutive threads.
    t = kc.tid()
    last = (BLOCKS - 1) * top
    for bucket in range(t, top, BLOCKS):
        end = hist[last + bucket]
        start = kc.int32(0)
        if bucket > 0:
            start = hist[last + bucket - 1]
        _sort_bucket(keys, keys_at, values, values_at, n, src, passes, bits, start, end,
                     t * LOW, counts)


@kc.kernel
def clear_cells(sorted_cells: kc.array(dtype=kc.int32), cell_starts: kc.array(dtype=kc.int32),
                cell_ends: kc.array(dtype=kc.int32)):
    # Empties the cells a build marked (its sorted cells, still in the first half): far
    # fewer writes than zeroing every cell of a large, sparsely filled table.
    i = kc.tid()
    c = sorted_cells[i]
    if i == 0 or sorted_cells[i - 1] != c:
        cell_starts[c] = 0
        cell_ends[c] = 0


for _kernel in (cell_keys, top_histograms, scan_top, scatter_top, sort_buckets, clear_cells):
    _kernel.is_builtin = True


class CellSort:
    """The scratch of the first and second level of the sort (per grid, reused)."""

    def __init__(self, device: Any) -> None:
        self.hist = kc.empty(BLOCKS * TOP, dtype=kc.int32, device=device)
        self.counts = kc.empty(BLOCKS * LOW, dtype=kc.int32, device=device)
        self.next_slot = kc.empty(TOP, dtype=kc.int32, device=device)

    def sort(self, points: Any, inv: Any, dims: list[int], cell_bits: int, n: int,
             keys: Any, values: Any) -> None:
        """Writes the cells of `points` to `keys[:n]`, sorted, and the points' indices in
        that order to `values[:n]`; both arrays are 2n long."""
        from kernelc.runtime.launch import launch

        device = keys.device
        # the low bits in one pass where the buckets stay at most TOP
        top_bits = min(cell_bits, max(8, min(TOP.bit_length() - 1, cell_bits - LOW_BITS)))
        top = 1 << top_bits
        low_bits = cell_bits - top_bits  # sorted within the buckets
        passes = -(-low_bits // LOW_BITS)
        bits = -(-low_bits // passes) if passes else 0
        # the first level writes to half `mid`, and each pass flips the half
        mid = n * (passes % 2)
        first = n - mid
        launch(cell_keys, n, [points, inv, *dims, keys, first], device=device)
        launch(top_histograms, BLOCKS, [keys.ptr, first, n, low_bits, top, self.hist],
               device=device)
        launch(scan_top, 1, [top, self.hist, self.next_slot], device=device)
        launch(scatter_top, BLOCKS, [keys, keys.ptr, values, n, first, mid, low_bits,
                                     top, self.hist], device=device)
        if passes:
            launch(sort_buckets, BLOCKS, [keys, keys.ptr, values, values.ptr, n, mid, passes,
                                          bits, top, self.hist, self.counts], device=device)
