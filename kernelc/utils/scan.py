"""`array_scan`: inclusive and exclusive prefix sums, component-wise for vectors.

A scan of n values runs in three launches over blocks of consecutive values: the sum of
each block, the (exclusive, recursive) scan of those sums, then each block's own scan
started from its offset. Each launch has one thread per block and component, walking its
block in order, so the CPU's worker threads each stream through long runs of memory. The
block size depends only on n and the device kind, never on the thread count, so the
result (including float rounding) is the same however many threads run it.
"""

from __future__ import annotations

from typing import Any

import kernelc as kc
from kernelc import types as T
from kernelc.utils import _common as C
from kernelc.utils._common import builtin

SCAN_TYPES = (T.int32, T.int64, T.float32, T.float64)


def block_size(n: int, device: Any) -> int:
    """Values per block: on the CPU long sequential runs (at most 512 blocks); on CUDA
    short runs, so that the grid has many threads."""
    if device.is_cpu:
        return max(8192, C.cdiv(n, 512))
    return 64


# The loops below are kept in their simplest form on purpose: LLVM vectorises the integer
# block sums (it versions the loop for a unit stride), whereas hand-unrolled partial sums
# over runtime-strided arrays get turned into slow gathers by the SLP vectoriser.
@builtin
def array_scan_block_sums(x: Any, sums: Any, n: int, block: int, zero: Any):
    b, c = kc.tid()
    start = b * block
    end = min(start + block, n)
    s = zero
    for j in range(start, end):
        s = s + x[j, c]
    sums[b, c] = s


@kc.func
def scan_run(x: Any, y: Any, c: int, start: int, end: int, s: Any, inclusive: bool):
    if inclusive:
        for j in range(start, end):
            s = s + x[j, c]
            y[j, c] = s
    else:
        for j in range(start, end):
            v = x[j, c]
            y[j, c] = s
            s = s + v


@builtin
def array_scan_blocks(x: Any, y: Any, offsets: Any, n: int, block: int, inclusive: bool):
    b, c = kc.tid()
    start = b * block
    scan_run(x, y, c, start, min(start + block, n), offsets[b, c], inclusive)


@builtin
def array_scan_serial(x: Any, y: Any, n: int, inclusive: bool, zero: Any):
    c = kc.tid()
    scan_run(x, y, c, 0, n, zero, inclusive)


def scan_rows(x: Any, y: Any, inclusive: bool, device: Any) -> None:
    """Scans the (n, components) scalar view `x` into `y` (may be `x`) along axis 0."""
    n, width = x.shape
    scalar = x.dtype
    block = block_size(n, device)
    if n <= block:
        C.launch(array_scan_serial, width, [x, y, n, inclusive, C.zero(scalar)], device)
        return
    count = C.cdiv(n, block)
    sums = kc.empty((count, width), dtype=scalar, device=device)
    C.launch(array_scan_block_sums, (count, width), [x, sums, n, block, C.zero(scalar)], device)
    scan_rows(sums, sums, False, device)
    C.launch(array_scan_blocks, (count, width), [x, y, sums, n, block, inclusive], device)


def array_scan(in_array: Any, out_array: Any, inclusive: bool = True) -> None:
    """Prefix sum of an array (Warp's `wp.utils.array_scan`).

    `out_array[i]` is the sum of `in_array[0..i]` (inclusive) or `in_array[0..i-1]`
    (exclusive, `out_array[0]` = 0). Vectors and matrices are scanned component-wise.
    The sums accumulate in the array's own type. `in_array` and `out_array` may be the
    same array.

    Args:
        in_array: Values with scalar type int32, int64, float32 or float64 (also vectors
            and matrices of them); one-dimensional (any stride) or contiguous.
        out_array: Where the sums go: same device, size and dtype as `in_array`.
        inclusive: Inclusive (True) or exclusive (False) scan.

    Raises:
        RuntimeError: The devices or sizes of the arrays differ, or an array is neither
            one-dimensional nor contiguous (raised as `UtilsValueError`, also a
            ValueError); the dtypes differ or are not supported (`UtilsTypeError`, also a
            TypeError).
    """
    C.check_array(in_array, "in_array")
    C.check_array(out_array, "out_array")
    C.same_device(in_array, out_array, "In and out")
    if in_array.size != out_array.size:
        raise C.UtilsValueError(f"In and out array storage sizes do not match "
                                f"({in_array.size} vs {out_array.size})")
    if in_array.dtype != out_array.dtype:
        raise C.UtilsTypeError(f"In and out array data types do not match "
                               f"({in_array.dtype!r} vs {out_array.dtype!r})")
    C.scalar_type(in_array.dtype, SCAN_TYPES, "array_scan")
    n = in_array.size
    if n == 0:
        return
    C.check_count(n, "array_scan")
    x = C.rows(in_array, n, "Input")
    y = C.rows(out_array, n, "Output")
    scan_rows(x, y, bool(inclusive), in_array.device)
