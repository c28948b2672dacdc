"""`array_sum` and `array_inner`: sums and inner products, whole-array or along one axis.

Every reduction is seen as a 4-d scalar view `x[o, j, i, c]` of a contiguous array: `j` runs
along the reduced axis (the whole flattened array when `axis` is None), `o` and `i` over the
axes before and after it, `c` over an element's scalar components. Two launches: partial
sums over blocks of consecutive `j` (one thread per block, walking it in order), then one
thread per output adding up its blocks' partial sums in block order. The block size depends
only on the reduced length and the device kind, so the rounding of a float sum does not
depend on the number of CPU threads.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

import kernelc as kc
from kernelc import types as T
from kernelc.runtime.context import get_runtime
from kernelc.utils import _common as C
from kernelc.utils._common import builtin

REDUCE_TYPES = (T.float32, T.float64)


@builtin
def array_sum_blocks(x: Any, partials: Any, m: int, block: int, zero: Any):
    o, i, b, c = kc.tid()
    start = b * block
    s = zero
    for j in range(start, min(start + block, m)):
        s = s + x[o, j, i, c]
    partials[o, i, b, c] = s


@builtin
def array_sum_total(partials: Any, out: Any, blocks: int, zero: Any):
    o, i, c = kc.tid()
    s = zero
    for b in range(blocks):
        s = s + partials[o, i, b, c]
    out[o, i, c] = s


@builtin
def array_inner_blocks(x: Any, y: Any, partials: Any, m: int, width: int, block: int,
                       zero: Any):
    o, i, b = kc.tid()
    start = b * block
    s = zero
    for j in range(start, min(start + block, m)):
        for c in range(width):
            s = s + x[o, j, i, c] * y[o, j, i, c]
    partials[o, i, b, 0] = s


def block_size(m: int, device: Any) -> int:
    """Values per block along the reduced axis (CPU: at most 512 long runs)."""
    if device.is_cpu:
        return max(8192, C.cdiv(m, 512))
    return 256


def _axis(name: str, axis: Any, ndim: int) -> int | None:
    if axis is None:
        return None
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise IndexError(f"{name}() axis {axis} is out of bounds for an array with {ndim} "
                         f"dimensions")
    return axis % ndim


def _layout(arr: Any, axis: int | None, count: int) -> Any:
    """The (O, count, I, components) scalar view of the values taking part."""
    scalar, width = C.components(arr.dtype)
    if not arr.is_contiguous:
        arr = arr.contiguous()
    if axis is None:
        outer, length, inner = 1, arr.size, 1
    else:
        outer = int(np.prod(arr.shape[:axis]))
        length = arr.shape[axis]
        inner = int(np.prod(arr.shape[axis + 1:]))
    s = scalar.size
    strides = (length * inner * width * s, inner * width * s, width * s, s)
    return C.view(arr, scalar, (outer, count, inner, width), strides)


def _count(name: str, count: Any, limit: int) -> int:
    n = limit if count is None else operator.index(count)
    if not 0 <= n <= limit:
        raise C.UtilsValueError(f"{name}() count {n} is out of range: the array has {limit} "
                                f"values to reduce")
    C.check_count(n, name)
    return n


def _output(name: str, out: Any, like: Any, dtype: T.Type, shape: tuple[int, ...]) -> Any:
    if out is None:
        return kc.empty(shape, dtype=dtype, device=like.device)
    C.check_array(out, "out")
    if out.device != like.device:
        raise C.UtilsValueError("out storage device should match values array")
    if out.dtype != dtype:
        raise C.UtilsTypeError(f"out array should have type {dtype!r}")
    if tuple(out.shape) != shape:
        raise C.UtilsValueError(f"out array should have shape {shape}")
    return out


def _reduce(x: Any, y: Any, result: Any) -> None:
    """Sums (y is None) or inner products of the 4-d views into `result` (contiguous,
    one output per (o, i), of x's element type or of its scalar type)."""
    device = result.device
    outer, m, inner, width = x.shape
    scalar = x.dtype
    lanes = 1 if y is not None else width
    block = block_size(m, device)
    blocks = C.cdiv(m, block)
    zero = C.zero(scalar)
    if y is not None:
        partials = kc.empty((outer, inner, blocks, 1), dtype=scalar, device=device)
        C.launch(array_inner_blocks, (outer, inner, blocks),
                 [x, y, partials, m, width, block, zero], device)
    else:
        partials = kc.empty((outer, inner, blocks, width), dtype=scalar, device=device)
        C.launch(array_sum_blocks, (outer, inner, blocks, width),
                 [x, partials, m, block, zero], device)
    s = scalar.size
    target = result if result.is_contiguous else kc.empty(result.shape, dtype=result.dtype,
                                                           device=device)
    view = C.view(target, scalar, (outer, inner, lanes), (inner * lanes * s, lanes * s, s))
    C.launch(array_sum_total, (outer, inner, lanes), [partials, view, blocks, zero], device)
    if target is not result:
        result.assign(target)


def _host_value(out: Any) -> Any:
    value = out.numpy()[0]
    return value.copy() if isinstance(value, np.ndarray) else value


def _check_capture(name: str, device: Any, out: Any) -> None:
    if out is None and device.is_cpu and get_runtime().extras.get("capture") is not None:
        raise NotImplementedError(f"{name}() inside a graph capture needs an explicit out "
                                  f"array (a value returned to the host would be read at "
                                  f"capture time)")


def array_sum(values: Any, out: Any = None, value_count: int | None = None,
              axis: int | None = None) -> Any:
    """Sum of array elements, of the whole array or along one axis (Warp's
    `wp.utils.array_sum`).

    Args:
        values: The array; its scalar type must be float32 or float64 (vectors and
            matrices are summed component-wise).
        out: Where the result goes: shape (1,) without `axis`, else `values.shape` with
            the axis set to 1; `values`' dtype and device. None: a new array.
        value_count: How many values to sum (of the flattened array, or along `axis`);
            None: all.
        axis: The axis to sum along (negative counts from the end); None: everything.

    Returns:
        With `axis` and `out` both None, the sum as a host value (a NumPy scalar, or a
        NumPy array for vector and matrix elements); otherwise the `out` array.

    Raises:
        IndexError: `axis` is out of range.
        RuntimeError: `out` does not fit, the dtype is unsupported, or `value_count` is
            out of range (as `UtilsValueError` / `UtilsTypeError`).
    """
    C.check_array(values, "values")
    axis = _axis("array_sum", axis, values.ndim)
    C.scalar_type(values.dtype, REDUCE_TYPES, "array_sum")
    limit = values.size if axis is None else values.shape[axis]
    count = _count("array_sum", value_count, limit)
    shape = (1,) if axis is None else tuple(1 if k == axis else n
                                            for k, n in enumerate(values.shape))
    host = out is None and axis is None
    if count:
        _check_capture("array_sum", values.device, out)
    out = _output("array_sum", out, values, values.dtype, shape)
    if count == 0 or out.size == 0:
        out.zero_()
    else:
        _reduce(_layout(values, axis, count), None, out)
    return _host_value(out) if host else out


def array_inner(a: Any, b: Any, out: Any = None, count: int | None = None,
                axis: int | None = None) -> Any:
    """Inner product of two arrays of one shape, whole or along one axis (Warp's
    `wp.utils.array_inner`): the sum of `a * b` over every scalar component (dot products
    for vectors, Frobenius products for matrices).

    Args:
        a: The first array; its scalar type must be float32 or float64.
        b: The second array: same shape, dtype and device.
        out: Where the result goes: shape (1,) without `axis`, else `a.shape` with the axis
            set to 1; dtype the scalar type of `a`. None: a new array.
        count: How many elements take part (of the flattened arrays, or along `axis`).
        axis: The axis to reduce along (negative counts from the end); None: everything.

    Returns:
        With `axis` and `out` both None, the inner product as a host value (a NumPy scalar;
        0.0 when `count` is 0, as in Warp); otherwise the `out` array.

    Raises:
        ValueError: `a` and `b` have different shapes.
        IndexError: `axis` is out of range.
        RuntimeError: Devices or dtypes differ, `out` does not fit, the dtype is
            unsupported, or `count` is out of range (as `UtilsValueError` /
            `UtilsTypeError`).
    """
    C.check_array(a, "a")
    C.check_array(b, "b")
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"array_inner() arguments must have the same shape, got {a.shape} "
                         f"and {b.shape}")
    C.same_device(a, b, "A and b")
    if a.dtype != b.dtype:
        raise C.UtilsTypeError(f"A and b array data types do not match ({a.dtype!r} vs "
                               f"{b.dtype!r})")
    axis = _axis("array_inner", axis, a.ndim)
    scalar = C.scalar_type(a.dtype, REDUCE_TYPES, "array_inner")
    limit = a.size if axis is None else a.shape[axis]
    n = _count("array_inner", count, limit)
    shape = (1,) if axis is None else tuple(1 if k == axis else d
                                            for k, d in enumerate(a.shape))
    host = out is None and axis is None
    if n == 0 and host:
        return 0.0
    _check_capture("array_inner", a.device, out)
    out = _output("array_inner", out, a, scalar, shape)
    if n == 0 or out.size == 0:
        out.zero_()
    else:
        _reduce(_layout(a, axis, n), _layout(b, axis, n), out)
    return _host_value(out) if host else out
