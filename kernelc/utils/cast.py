"""`array_cast`: element-wise copy between arrays of different scalar types (Warp's
`wp.utils.array_cast`), e.g. a float64 solution into a float32 field."""

from __future__ import annotations

import operator
from typing import Any

import kernelc as kc
from kernelc import types as T
from kernelc.utils._common import (
    UtilsValueError,
    builtin,
    check_array,
    components,
    launch,
    rows,
    view,
)


@builtin
def array_cast_kernel(src: Any, dest: Any):
    i, c = kc.tid()
    dest[i, c] = dest.dtype(src[i, c])


def array_cast(in_array: Any, out_array: Any, count: int | None = None) -> None:
    """Copies `in_array` into `out_array`, converting each scalar component (Warp's
    `wp.utils.array_cast`).

    Arrays with the same number of dimensions and element shape (`vec2d` into `vec2`,
    `float64` into `float32`) are cast element by element; `count` elements (default all)
    of one-dimensional arrays, all of multi-dimensional ones, which then need the same shape
    unless the dtypes are equal. Otherwise (`vec2` into `float32`, a 1-d array into a 2-d
    one) both arrays are seen as flat runs of scalars, and `count` counts source elements:
    `count` times the source's component count scalars are converted.

    Args:
        in_array: The source (an array or an indexed array).
        out_array: The destination (an array or an indexed array), on the same device.
        count: How many source elements to convert (default: all of the source).

    Raises:
        UtilsValueError: Different devices, a partial cast of multi-dimensional arrays,
            shapes that differ, a count larger than either array, or arrays that are
            neither contiguous nor one-dimensional (a scalar-level cast needs contiguous
            ones). Warp raises RuntimeError for these; this is one.
    """
    from kernelc.runtime.indexedarray import indexedarray

    # Indexed arrays (Warp's examples cast into `indexedarray(field values, nodes)`) go
    # through contiguous copies.
    if isinstance(in_array, indexedarray):
        in_array = in_array.contiguous()
    if isinstance(out_array, indexedarray):
        staged = out_array.contiguous()
        array_cast(in_array, staged, count)
        out_array.assign(staged)
        return
    check_array(in_array, "in_array")
    check_array(out_array, "out_array")
    if in_array.device != out_array.device:
        raise UtilsValueError(f"Array storage devices do not match ({in_array.device} vs "
                              f"{out_array.device})")
    if count is not None:
        count = operator.index(count)
        if count < 0:
            raise UtilsValueError(f"Cast count must be non-negative, got {count}")
    _, n_in = components(in_array.dtype)
    _, n_out = components(out_array.dtype)
    if in_array.ndim != out_array.ndim or _shape(in_array.dtype) != _shape(out_array.dtype):
        total = in_array.size * n_in if count is None else count * n_in
        _check_count(total, in_array.size * n_in, out_array.size * n_out)
        src = _scalars(in_array, total, "in_array")
        dest = _scalars(out_array, total, "out_array")
    else:
        total = in_array.size if count is None else count
        if in_array.ndim > 1:
            if total < in_array.size:
                raise UtilsValueError("Partial cast is not supported for arrays with more "
                                      "than one dimension")
            if in_array.dtype != out_array.dtype and in_array.shape != out_array.shape:
                raise UtilsValueError(f"Array shapes do not match ({in_array.shape} vs "
                                      f"{out_array.shape})")
        _check_count(total, in_array.size, out_array.size)
        src = rows(in_array, total, "in_array")
        dest = rows(out_array, total, "out_array")
    launch(array_cast_kernel, (total, src.shape[1]), [src, dest], in_array.device)


def _shape(dtype: Any) -> tuple[int, ...]:
    """The shape of an element: () for scalars, (n,) for vectors, (r, c) for matrices."""
    if isinstance(dtype, T.VectorType):
        return (dtype.length,)
    if isinstance(dtype, T.MatrixType):
        return tuple(dtype.shape)
    return ()


def _check_count(count: int, in_size: int, out_size: int) -> None:
    if count > in_size or count > out_size:
        raise UtilsValueError(f"Cast count ({count}) exceeds the input size ({in_size}) or "
                              f"output size ({out_size})")


def _scalars(arr: Any, count: int, what: str) -> Any:
    """The first `count` scalar components of `arr`, as a (count, 1) view."""
    scalar, n = components(arr.dtype)
    dense = arr.is_contiguous or (arr.ndim == 1 and arr.strides[0] == arr.dtype.size)
    if not dense:
        raise UtilsValueError(f"Array cast between different element shapes or dimensions "
                              f"needs a contiguous {what}")
    return view(arr, scalar, (count, 1), (scalar.size, scalar.size))
