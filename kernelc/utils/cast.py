"""`array_cast`: element-wise copy between arrays of different scalar types (Warp's
`wp.utils.array_cast`), e.g. a float64 solution into a float32 field."""

from __future__ import annotations

from typing import Any

import kernelc as kc
from kernelc.utils._common import (
    UtilsTypeError,
    UtilsValueError,
    builtin,
    check_array,
    components,
    launch,
    rows,
    same_device,
)


@builtin
def array_cast_kernel(src: Any, dest: Any):
    i, c = kc.tid()
    dest[i, c] = dest.dtype(src[i, c])


def array_cast(in_array: Any, out_array: Any, count: int | None = None) -> None:
    """Copies `in_array` into `out_array`, converting each scalar component (Warp's
    `wp.utils.array_cast`).

    Args:
        in_array: The source (an array or an indexed array).
        out_array: The destination (an array or an indexed array): as many scalar components per element as the source
            (a `vec2d` array into a `vec2` one, a `float64` one into `float32`), same device.
        count: How many elements to copy (default: all of the source).

    Raises:
        UtilsTypeError: The element types have different component counts.
        UtilsValueError: Different devices, too short a destination, or arrays that are
            neither contiguous nor one-dimensional.
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
    same_device(in_array, out_array, "Input and output")
    _, n_in = components(in_array.dtype)
    _, n_out = components(out_array.dtype)
    if n_in != n_out:
        raise UtilsTypeError(f"Array cast needs elements of the same size, got "
                             f"{in_array.dtype!r} and {out_array.dtype!r}")
    total = in_array.size if count is None else int(count)
    if total > out_array.size or total > in_array.size:
        raise UtilsValueError(f"Array cast of {total} elements between arrays of "
                              f"{in_array.size} and {out_array.size}")
    if in_array.ndim != 1 or out_array.ndim != 1:
        if not (in_array.is_contiguous and out_array.is_contiguous):
            raise UtilsValueError("Array cast needs contiguous or one-dimensional arrays")
    src = rows(in_array, total, "in_array")
    dest = rows(out_array, total, "out_array")
    launch(array_cast_kernel, (total, n_in), [src, dest], in_array.device)
