"""`segmented_sort_pairs`: a stable sort of key/value pairs within each of several segments.

The segments become one radix sort of 64-bit composite keys: the high 32 bits are the
first index of the pair's segment, the low 32 bits the order-preserving radix key of the
pair's key (see sort.py). A pair outside every segment gets its own index as the high
part. Sorting by that composite key, stably, leaves every pair outside the segments where it
was and sorts each segment within its own range: all pairs before a segment's first index
have a smaller high part, and segments do not overlap. The sort needs only the high bits up
to the count's bit length (on the CPU, passes whose digit is the same for every pair are
skipped as well).

1. `segmented_sort_mark`, one thread per segment: adds `start + 1` at the segment's start
   and subtracts it at its end in a count+1 long array (atomics: one segment's end can be
   the next one's start). An inclusive scan turns it into `start + 1` inside each segment
   and 0 outside. Invalid ranges are skipped (treated as empty), as Warp does on CUDA.
2. `segmented_sort_compose` builds the composite keys; `sort.sort_passes` sorts them with
   the values (the second half of `values` is the scratch half, Warp's 2*count contract);
   `segmented_sort_decompose` writes the keys back from the low 32 bits.

On the CPU the ranges are checked on the host first (ValueError, nothing modified); in a
CPU graph capture that check is recorded and runs at each replay.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

import kernelc as kc
from kernelc import types as T
from kernelc.runtime.context import get_runtime
from kernelc.utils import _common as C
from kernelc.utils import sort
from kernelc.utils._common import builtin
from kernelc.utils.scan import scan_rows

_KEY_TYPES = (T.int32, T.float32)


@builtin
def segmented_sort_mark(starts: Any, ends: Any, n: int, marks: Any):
    s = kc.tid()
    start = starts[s]
    end = ends[s]
    if start >= 0 and start < end and end <= n:
        kc.atomic_add(marks, start, start + 1)
        kc.atomic_sub(marks, end, start + 1)


@builtin
def segmented_sort_compose(keys: Any, marks: Any, top: Any, if_set: Any, if_clear: Any,
                           composite: Any):
    i = kc.tid()
    k = keys[i]
    k = k ^ kc.where((k >> top) != kc.uint32(0), if_set, if_clear)
    mark = marks[i, 0]
    first = i
    if mark > 0:
        first = mark - 1
    composite[i] = (kc.uint64(first) << kc.uint64(32)) | kc.uint64(k)


@builtin
def segmented_sort_decompose(composite: Any, top: Any, if_set: Any, if_clear: Any,
                             keys: Any):
    i = kc.tid()
    k = kc.uint32(composite[i] & kc.uint64(0xFFFFFFFF))
    keys[i] = k ^ kc.where((k >> top) != kc.uint32(0), if_set, if_clear)


class SegmentCheck:
    """The host check of the segment ranges; recorded by a CPU graph capture (it has the
    `launch()` of a recorded operation), so that a replay checks the replay's ranges."""

    def __init__(self, starts: Any, ends: Any, count: int) -> None:
        self.starts = starts
        self.ends = ends
        self.count = count

    def launch(self) -> None:
        starts = self.starts.numpy()
        ends = self.ends.numpy()
        bad = ~((starts >= 0) & (starts <= ends) & (ends <= self.count))
        if bad.any():
            i = int(np.argmax(bad))
            raise C.UtilsValueError(f"Invalid segment range at index {i}: [{starts[i]}, "
                                    f"{ends[i]}) for count {self.count}")


def segmented_sort_pairs(keys: Any, values: Any, count: int, segment_start_indices: Any,
                         segment_end_indices: Any = None) -> None:
    """Sorts key/value pairs in place within each segment, stably, by ascending key (Warp's
    `wp.utils.segmented_sort_pairs`).

    Segment i is the half-open range `[segment_start_indices[i], segment_end_indices[i])`;
    without `segment_end_indices`, consecutive start indices bound the segments (n start
    indices make n - 1 segments). Every range must satisfy `0 <= start <= end <= count`,
    and segments must not overlap (overlapping segments give unspecified results). Pairs in
    `[0, count)` outside every segment are left as they are. `keys` and `values` need room
    for 2*count elements: the second half of `values` is scratch space.

    Args:
        keys: Contiguous int32 or float32 keys (floats in bit-pattern order, as
            `radix_sort_pairs`: -0.0 before +0.0, NaNs at the ends by sign).
        values: Contiguous int32 values, on the same device.
        count: How many pairs the segments may cover, `0 <= count <= 2**31 - 1`.
        segment_start_indices: Contiguous one-dimensional int32 start indices.
        segment_end_indices: Contiguous one-dimensional int32 end indices, as many as
            start indices, or None.

    Raises:
        TypeError: `count` is not an integer.
        ValueError: `count` is out of range, or (on the CPU) a segment range is invalid,
            in which case nothing is modified.
        RuntimeError: The devices differ, `keys` or `values` is too short or an array is
            not contiguous, a segment array is not one-dimensional or their sizes differ
            (as `UtilsValueError`, also a ValueError), or a dtype is not supported
            (`UtilsTypeError`, also a TypeError). On CUDA invalid ranges are not reported:
            they are skipped, as in Warp. A CPU graph replay reports them as a
            `UtilsValueError`.
    """
    count = _count(count)
    for name, arr in (("keys", keys), ("values", values),
                      ("segment_start_indices", segment_start_indices)):
        C.check_array(arr, name)
    if segment_end_indices is not None:
        C.check_array(segment_end_indices, "segment_end_indices")
    device = keys.device
    if values.device != device or any(
            s is not None and s.device != device
            for s in (segment_start_indices, segment_end_indices)):
        raise C.UtilsValueError("Keys, values, and segment index array storage devices must "
                                "match")
    if count == 0:
        return
    if keys.size < 2 * count or values.size < 2 * count:
        raise C.UtilsValueError("Array storage must be large enough to contain 2*count "
                                "elements")
    for name, arr in (("keys", keys), ("values", values)):
        if not arr.is_contiguous:
            raise C.UtilsValueError(f"segmented_sort_pairs() requires a contiguous {name} "
                                    f"array")
    starts, ends = _segments(segment_start_indices, segment_end_indices)
    if starts.size == 0:
        return
    if keys.dtype not in _KEY_TYPES:
        raise C.UtilsTypeError(f"Unsupported data type: {keys.dtype!r}")
    if values.dtype != T.int32:
        raise C.UtilsTypeError(f"segmented_sort_pairs() sorts int32 values only, got "
                               f"{values.dtype!r} values. Unsupported data type: "
                               f"{keys.dtype!r}")
    if device.is_cpu:
        check = SegmentCheck(starts, ends, count)
        capture = get_runtime().extras.get("capture")
        if capture is None or not capture.intercept(check):
            check.launch()
    _sort_segments(keys, values, count, starts, ends, device)


def _count(count: Any) -> int:
    if isinstance(count, bool):
        raise TypeError("count must be an integer, got bool")
    try:
        n = operator.index(count)
    except TypeError:
        raise TypeError(f"count must be an integer, got {type(count).__name__}") from None
    if n < 0:
        raise ValueError(f"count must be non-negative, got {n}")
    if n > C.MAX_COUNT:
        raise ValueError(f"count must not exceed {C.MAX_COUNT}, got {n}")
    return n


def _check_segment_array(arr: Any, name: str) -> None:
    if arr.dtype != T.int32:
        raise C.UtilsTypeError(f"{name} array must be of type int32")
    if arr.ndim != 1:
        raise C.UtilsValueError(f"{name} must be one-dimensional")
    if not arr.is_contiguous:
        raise C.UtilsValueError(f"segmented_sort_pairs() requires a contiguous {name} array")


def _segments(starts: Any, ends: Any) -> tuple[Any, Any]:
    """The start and end indices as two equally long int32 arrays (views)."""
    _check_segment_array(starts, "segment_start_indices")
    if ends is None:
        n = max(0, starts.size - 1)
        return starts[:n], starts[1:]
    _check_segment_array(ends, "segment_end_indices")
    if starts.size != ends.size:
        raise C.UtilsValueError(f"segment_start_indices and segment_end_indices must have "
                                f"the same size ({starts.size} vs {ends.size})")
    return starts, ends


def _sort_segments(keys: Any, values: Any, count: int, starts: Any, ends: Any,
                   device: Any) -> None:
    marks = kc.zeros((count + 1, 1), dtype=kc.int32, device=device)
    C.launch(segmented_sort_mark, starts.size,
             [starts, ends, count, C.view(marks, T.int32, (count + 1,), (4,))], device)
    scan_rows(marks, marks, True, device)
    bits, neg_flip, pos_flip = sort.KEY_FLIPS[keys.dtype]
    top = bits(bits.bits - 1)
    key_bits = C.view(keys, bits, (count,), (bits.size,))
    composite = kc.empty(2 * count, dtype=kc.uint64, device=device)
    C.launch(segmented_sort_compose, count,
             [key_bits, marks, top, bits(neg_flip), bits(pos_flip), composite], device)
    value_bits = C.view(values, T.uint32, (2 * count,), (4,))
    end_bit = 32 + (count - 1).bit_length()  # the first indices are below count
    sort.sort_passes(composite, value_bits, count, range(0, end_bit, sort.RADIX_BITS),
                     end_bit, device)
    C.launch(segmented_sort_decompose, count,
             [composite, top, bits(pos_flip), bits(neg_flip), key_bits], device)
