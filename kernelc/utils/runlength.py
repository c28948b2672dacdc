"""`runlength_encode`: the runs of equal consecutive values, as (value, length) pairs.

Three launches over blocks of consecutive values (one thread per block, walking it in
order, as `array_scan` does) and a scan of one count per block. A value *heads* a run when
it is the first one or differs from its predecessor.
1. `runlength_block_heads`: each block counts its heads;
2. an exclusive scan of the counts gives each block the number of its first run;
3. `runlength_block_starts`: each block writes the value of each of its runs, and the run's
   first index into the run's length slot;
4. `runlength_block_lengths`: each head turns the previous run's first index into that
   run's length (its own index minus it); the last block also ends the last run at n and
   writes the run count.
In the last step each length slot is read and written by one thread only, so nothing
races, and no scratch memory of the values' size is needed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import kernelc as kc
from kernelc import types as T
from kernelc.runtime.context import get_runtime
from kernelc.utils import _common as C
from kernelc.utils import scan
from kernelc.utils._common import builtin


@builtin
def runlength_block_heads(values: Any, n: int, block: int, counts: Any):
    b = kc.tid()
    start = b * block
    prev = values[max(start - 1, 0), 0]
    count = 0
    if start == 0:
        count = 1  # the first value heads the first run
    for j in range(max(start, 1), min(start + block, n)):
        v = values[j, 0]
        if v != prev:
            count = count + 1
        prev = v
    counts[b, 0] = count


@builtin
def runlength_block_starts(values: Any, n: int, block: int, offsets: Any, run_values: Any,
                           run_lengths: Any):
    b = kc.tid()
    start = b * block
    run = offsets[b, 0]
    prev = values[max(start - 1, 0), 0]
    if start == 0:
        run_values[0, 0] = prev
        run_lengths[0, 0] = 0
        run = 1
    for j in range(max(start, 1), min(start + block, n)):
        v = values[j, 0]
        if v != prev:
            run_values[run, 0] = v
            run_lengths[run, 0] = j
            run = run + 1
        prev = v


@builtin
def runlength_block_lengths(values: Any, n: int, block: int, offsets: Any, run_lengths: Any,
                            run_count: Any):
    b = kc.tid()
    start = b * block
    end = min(start + block, n)
    run = offsets[b, 0]
    prev = values[max(start - 1, 0), 0]
    if start == 0:
        run = 1
    for j in range(max(start, 1), end):
        v = values[j, 0]
        if v != prev:
            run_lengths[run - 1, 0] = j - run_lengths[run - 1, 0]
            run = run + 1
        prev = v
    if end == n:
        run_lengths[run - 1, 0] = n - run_lengths[run - 1, 0]
        run_count[0] = run


def runlength_encode(values: Any, run_values: Any, run_lengths: Any, run_count: Any = None,
                     value_count: int | None = None) -> Any:
    """Run-length encodes the first `value_count` values (Warp's
    `wp.utils.runlength_encode`): `[1, 1, 1, 2, 2, 3]` gives the run values `[1, 2, 3]` and
    the run lengths `[3, 2, 1]`.

    Only the first (run count) elements of `run_values` and `run_lengths` are written.

    Args:
        values: The int32 values (one-dimensional of any stride, or contiguous).
        run_values: Where the value of each run goes: int32, at least `value_count` long.
        run_lengths: Where the length of each run goes: int32, at least `value_count` long.
        run_count: An int32 array whose first element receives the number of runs, or None
            to return that number.
        value_count: How many values to encode; None means all of `values`.

    Returns:
        The number of runs (an int) when `run_count` is None, else `run_count`.

    Raises:
        RuntimeError: The devices differ, an output is too short, `value_count` is
            negative or more than `values` holds (as `UtilsValueError`, also a
            ValueError), or a dtype is not supported (`UtilsTypeError`, also a TypeError).
        NotImplementedError: `run_count` is None inside a CPU graph capture (the count would
            be read at capture time).
    """
    for name, arr in (("values", values), ("run_values", run_values),
                      ("run_lengths", run_lengths)):
        C.check_array(arr, name)
    if run_values.device != values.device or run_lengths.device != values.device:
        raise C.UtilsValueError("run_values, run_lengths and values storage devices do not "
                                "match")
    n = _value_count(values, value_count)
    if run_values.size < n or run_lengths.size < n:
        raise C.UtilsValueError(f"Output array storage sizes must be at least equal to "
                                f"value_count ({n})")
    if run_values.dtype != values.dtype:
        raise C.UtilsTypeError(f"values and run_values data types do not match "
                               f"({values.dtype!r} vs {run_values.dtype!r})")
    if run_lengths.dtype != T.int32:
        raise C.UtilsTypeError("run_lengths array must be of type int32")
    device = values.device
    if run_count is None:
        if n == 0:
            return 0
        if device.is_cpu and get_runtime().extras.get("capture") is not None:
            raise NotImplementedError("runlength_encode() inside a graph capture needs an "
                                      "explicit run_count array (a returned count would be "
                                      "read at capture time)")
        count_out = kc.empty(1, dtype=kc.int32, device=device)
    else:
        _check_run_count(run_count, device)
        if n == 0:
            run_count.zero_()
            return run_count
        count_out = C.view(run_count, T.int32, (1,), (4,))  # its first element
    if values.dtype != T.int32:
        raise C.UtilsTypeError(f"Unsupported data type: {values.dtype!r}")
    C.check_count(n, "runlength_encode")
    x = C.rows(values, n, "values")
    out_values = C.rows(run_values, n, "run_values")
    out_lengths = C.rows(run_lengths, n, "run_lengths")
    block = scan.block_size(n, device)
    blocks = C.cdiv(n, block)
    offsets = kc.empty((blocks, 1), dtype=kc.int32, device=device)
    C.launch(runlength_block_heads, blocks, [x, n, block, offsets], device)
    scan.scan_rows(offsets, offsets, False, device)
    C.launch(runlength_block_starts, blocks, [x, n, block, offsets, out_values, out_lengths],
             device)
    C.launch(runlength_block_lengths, blocks, [x, n, block, offsets, out_lengths, count_out],
             device)
    if run_count is None:
        return int(count_out.numpy()[0])
    return run_count


def _value_count(values: Any, value_count: Any) -> int:
    if value_count is None:
        return values.size
    if isinstance(value_count, bool) or not isinstance(value_count, (int, np.integer)):
        raise TypeError(f"value_count must be an int, got {type(value_count).__name__}")
    n = int(value_count)
    if n < 0:
        raise C.UtilsValueError(f"value_count must be non-negative, got {n}")
    if n > values.size:
        raise C.UtilsValueError(f"value_count ({n}) is more than the {values.size} values "
                                f"of the values array")
    return n


def _check_run_count(run_count: Any, device: Any) -> None:
    C.check_array(run_count, "run_count")
    if run_count.device != device:
        raise C.UtilsValueError("run_count storage device does not match other arrays")
    if run_count.dtype != T.int32:
        raise C.UtilsTypeError("run_count array must be of type int32")
    if run_count.size < 1:
        raise C.UtilsValueError("run_count array must hold at least one element")
