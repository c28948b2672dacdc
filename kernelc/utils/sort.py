"""`radix_sort_pairs`: a stable least-significant-digit radix sort of key/value pairs.

Keys are handled as their bit patterns (unsigned integers of the key's width), mapped to
an order-preserving unsigned "radix key": signed integers get their sign bit flipped,
floats get their sign bit flipped if positive and every bit flipped if negative (so that
-inf < -1 < -0 < +0 < 1 < inf, NaNs at the ends by sign). Signed and float keys are
encoded so in place before the passes and decoded after them. Values are moved as raw 4- or
8-byte patterns, so any value type of those sizes works.

Each pass sorts by one RADIX_BITS-bit digit in three steps over blocks of consecutive
pairs, one thread per block:
1. each block counts its digits (a histogram in a thread-local array);
2. an exclusive scan of the counts, laid out digit-major (all blocks' counts of digit 0,
   then of digit 1, ...), gives each (digit, block) its first output position;
3. each block walks its pairs in order and writes each one at its digit's next position.
Stability follows from the layout: pairs with equal digits keep block order, and within a
block their original order. Passes ping-pong between the two halves of `keys`/`values`
(Warp's contract: both have room for 2*count). On the CPU a pass whose digit is the same
for every key is skipped (common for keys of a small range).
"""

from __future__ import annotations

from typing import Any

import kernelc as kc
from kernelc import types as T
from kernelc.runtime.context import get_runtime
from kernelc.utils import _common as C
from kernelc.utils._common import builtin
from kernelc.utils.scan import scan_rows

RADIX_BITS = 8
RADIX = 1 << RADIX_BITS

# key dtype -> (its bits as, flip for a negative pattern, flip for a non-negative one)
KEY_FLIPS = {
    T.int32: (T.uint32, 0x80000000, 0x80000000),
    T.uint32: (T.uint32, 0, 0),
    T.float32: (T.uint32, 0xFFFFFFFF, 0x80000000),
    T.int64: (T.uint64, 1 << 63, 1 << 63),
    T.uint64: (T.uint64, 0, 0),
    T.float64: (T.uint64, (1 << 64) - 1, 1 << 63),
}
_VALUE_BITS = {4: T.uint32, 8: T.uint64}


@builtin
def radix_sort_flip(keys: Any, top: Any, if_set: Any, if_clear: Any):
    # Encodes keys into radix keys in place (if_set, if_clear = the flips for a negative and
    # a non-negative pattern), or decodes them (the same flips swapped).
    i = kc.tid()
    k = keys[i]
    keys[i] = k ^ kc.where((k >> top) != 0, if_set, if_clear)


@kc.func
def radix_digit(k: Any, shift: Any, mask: Any) -> int:
    # The last `& (RADIX - 1)` tells the compiler the digit indexes a RADIX-long array.
    return int((k >> shift) & mask) & (RADIX - 1)


@builtin
def radix_sort_histogram(keys: Any, n: int, src: int, block: int, blocks: int, shift: Any,
                         mask: Any, counts: kc.array(dtype=int)):
    b = kc.tid()
    hist = kc.zeros(shape=RADIX, dtype=int)
    start = b * block
    for j in range(start, min(start + block, n)):
        d = radix_digit(keys[src + j], shift, mask)
        hist[d] = hist[d] + 1
    for d in range(RADIX):
        counts[d * blocks + b] = hist[d]


@builtin
def radix_sort_scatter(keys: Any, values: Any, n: int, src: int, dst: int, block: int,
                       blocks: int, shift: Any, mask: Any, offsets: kc.array(dtype=int)):
    b = kc.tid()
    pos = kc.zeros(shape=RADIX, dtype=int)
    for d in range(RADIX):
        pos[d] = offsets[d * blocks + b]
    start = b * block
    for j in range(start, min(start + block, n)):
        k = keys[src + j]
        d = radix_digit(k, shift, mask)
        p = pos[d]
        pos[d] = p + 1
        keys[dst + p] = k
        values[dst + p] = values[src + j]


@builtin
def radix_sort_copy_back(keys: Any, values: Any, src: int):
    i = kc.tid()
    keys[i] = keys[src + i]
    values[i] = values[src + i]


def block_size(n: int, device: Any) -> int:
    """Pairs per block: on the CPU long runs (at most 256 blocks); on CUDA shorter ones."""
    if device.is_cpu:
        return max(8192, C.cdiv(n, 256))
    return max(1024, C.cdiv(n, 16384))


def radix_sort_pairs(keys: Any, values: Any, count: int, begin_bit: int = 0,
                     end_bit: int | None = None) -> None:
    """Sorts the first `count` (key, value) pairs by key, stably (Warp's
    `wp.utils.radix_sort_pairs`).

    Both arrays need room for 2*count elements: the second half is scratch space, and its
    contents afterwards are unspecified.

    Args:
        keys: Contiguous keys of int32, uint32, float32, int64, uint64 or float64.
        values: Contiguous values of any 4- or 8-byte type, on the same device.
        count: How many pairs to sort.
        begin_bit: The lowest bit of the (order-preserving) radix key to sort by.
        end_bit: One past the highest such bit; None means the key's width.

    Raises:
        RuntimeError: The devices differ, an array is too short or not contiguous (as
            `UtilsValueError`, also a ValueError), a dtype is not supported
            (`UtilsTypeError`, also a TypeError), or the bit range is invalid.
    """
    C.check_array(keys, "keys")
    C.check_array(values, "values")
    C.same_device(keys, values, "Keys and values")
    count = _count(count)
    if count == 0:
        return
    C.check_count(2 * count, "radix_sort_pairs")
    if keys.size < 2 * count or values.size < 2 * count:
        raise C.UtilsValueError(f"radix_sort_pairs() of {count} pairs got {keys.size} keys "
                                f"and {values.size} values. Keys and values array storage "
                                f"must be large enough to contain 2*count elements")
    dtypes = f"{keys.dtype!r}, {values.dtype!r}"
    if keys.dtype not in KEY_FLIPS or values.dtype.size not in _VALUE_BITS:
        raise C.UtilsTypeError(f"radix_sort_pairs() takes keys of int32, uint32, float32, "
                               f"int64, uint64 or float64 and values of any 4- or 8-byte "
                               f"type. Unsupported keys and values data types: {dtypes}")
    for name, arr in (("keys", keys), ("values", values)):
        if not arr.is_contiguous:
            raise C.UtilsValueError(f"radix_sort_pairs() requires a contiguous {name} "
                                    f"array, got non-contiguous {name} with data types: "
                                    f"{dtypes}")
    bits, neg_flip, pos_flip = KEY_FLIPS[keys.dtype]
    width = bits.bits
    end_bit = width if end_bit is None else end_bit
    if not isinstance(begin_bit, int) or not isinstance(end_bit, int):
        raise C.UtilsTypeError("begin_bit and end_bit must be integers")
    if not 0 <= begin_bit <= end_bit <= width:
        raise C.UtilsValueError(f"Invalid radix sort bit range [{begin_bit}, {end_bit}) "
                                f"for {width}-bit keys")
    value_bits = _VALUE_BITS[values.dtype.size]
    k = C.view(keys, bits, (2 * count,), (bits.size,))
    v = C.view(values, value_bits, (2 * count,), (value_bits.size,))
    device = keys.device
    top = bits(width - 1)
    if neg_flip:  # signed and float keys: sorted as order-preserving unsigned radix keys
        C.launch(radix_sort_flip, count, [k, top, bits(neg_flip), bits(pos_flip)], device)
    sort_passes(k, v, count, range(begin_bit, end_bit, RADIX_BITS), end_bit, device)
    if neg_flip:
        C.launch(radix_sort_flip, count, [k, top, bits(pos_flip), bits(neg_flip)], device)


def _count(count: Any) -> int:
    try:
        n = int(count)
    except (TypeError, ValueError):
        raise TypeError(f"count must be an int, got {type(count).__name__}") from None
    if n != count or n < 0:
        raise C.UtilsValueError(f"count must be a non-negative int, got {count!r}")
    return n


def sort_passes(keys: Any, values: Any, n: int, shifts: range, end_bit: int,
                device: Any) -> None:
    """Sorts the first `n` pairs of the unsigned radix keys `keys` (2n long, as `values`)
    stably by the digits at `shifts` (below `end_bit`); the result is in the first half."""
    bits = keys.dtype
    block = block_size(n, device)
    blocks = C.cdiv(n, block)
    counts = kc.empty(RADIX * blocks, dtype=kc.int32, device=device)
    scan_view = C.view(counts, T.int32, (RADIX * blocks, 1), (4, 4))
    # On the CPU the counts can be read at once (and, outside a graph capture, they are
    # real): a pass that would move nothing is skipped.
    skip_check = device.is_cpu and get_runtime().extras.get("capture") is None
    src, dst = 0, n
    for shift in shifts:
        digit = (bits(shift), bits((1 << min(RADIX_BITS, end_bit - shift)) - 1))
        C.launch(radix_sort_histogram, blocks, [keys, n, src, block, blocks, *digit, counts],
                 device)
        if skip_check and counts.numpy().reshape(RADIX, blocks).sum(axis=1).max() == n:
            continue
        scan_rows(scan_view, scan_view, False, device)
        C.launch(radix_sort_scatter, blocks,
                 [keys, values, n, src, dst, block, blocks, *digit, counts], device)
        src, dst = dst, src
    if src != 0:
        C.launch(radix_sort_copy_back, n, [keys, values, src], device)
