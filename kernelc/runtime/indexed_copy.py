"""Moving elements in and out of indexed arrays: gather, scatter, fill, `kc.copy`.

On the CPU these are NumPy fancy indexing over the data's memory, after checking that
every index array entry lies inside the data (a clear IndexError rather than a read past
it). On other devices they are kernelc kernels (`kernelc/lib/indexed_kernels.py`), which
read the elements as a kernel does. `kernels=True` runs the kernels on the CPU as well.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.runtime import memory
from kernelc.runtime.array import array, clone, empty_like
from kernelc.runtime.array_bf16 import element_storage
from kernelc.runtime.array_struct import struct_fill_value


def is_indexed(value: Any) -> bool:
    return isinstance(getattr(value, "_kc_type", None), T.IndexedArrayType)


def _host_keys(ia: Any) -> tuple[np.ndarray, ...]:
    """The `np.ix_` key selecting an indexed array's elements of its data (on the host)."""
    keys = []
    for axis in range(ia.ndim):
        index, n = ia.indices[axis], ia.data.shape[axis]
        if index is None:
            keys.append(np.arange(n))
            continue
        values = index.numpy()
        bad = (values < 0) | (values >= n)
        if bad.any():
            raise IndexError(f"index {int(values[bad][0])} in the index array of dimension "
                             f"{axis} is out of range for the data's size {n}")
        keys.append(values)
    return np.ix_(*keys)


def host_gather(src: Any) -> np.ndarray:
    """The elements of an indexed array on the CPU, as a new NumPy array."""
    return src.data.numpy()[_host_keys(src)]


def _uses_kernels(device: Any, kernels: bool | None) -> bool:
    return not device.is_cpu if kernels is None else kernels


def _launch(name: str, ndim: int, shape: tuple[int, ...], args: list[Any], device) -> None:
    from kernelc.lib import indexed_kernels
    from kernelc.runtime.launch import launch

    if 0 not in shape:
        kernel = getattr(indexed_kernels, f"{name}_{ndim}d")
        launch(kernel, dim=shape, inputs=args, device=device, record_tape=False)
        kernel.last_launch = None  # keeps no arrays alive


def gather(src: Any, dest: array, kernels: bool | None = None) -> None:
    """`dest[...] = src[...]`: the indexed array `src` into the array `dest` (same shape,
    dtype and device)."""
    if _uses_kernels(src.device, kernels):
        _launch("gather", src.ndim, src.shape, [src, dest], src.device)
    else:
        dest.numpy()[...] = host_gather(src)


def scatter(dest: Any, src: array, kernels: bool | None = None) -> None:
    """`dest[...] = src[...]`: the array `src` into the indexed array `dest` (same shape,
    dtype and device)."""
    if _uses_kernels(dest.device, kernels):
        _launch("scatter", dest.ndim, dest.shape, [dest, src], dest.device)
    else:
        # A copy first: `src` may view the memory being written.
        dest.data.numpy()[_host_keys(dest)] = np.array(src.numpy(), copy=True)


def fill_pattern(dtype: T.Type, value: Any) -> np.ndarray:
    """One element of `dtype` holding `value`: a scalar (for every component), a value of
    the element's shape (or its components flat), a struct instance, or 0 for a struct."""
    np_dtype, inner = memory.element_layout(dtype)
    if isinstance(dtype, T.StructType) and not hasattr(value, "_kc_type") \
            and isinstance(value, (int, float)) and value == 0:
        return np.zeros((), np_dtype)  # Warp's struct default: every field zero
    try:
        pattern = element_storage(struct_fill_value(dtype, value), dtype, np_dtype)
    except (TypeError, ValueError) as err:
        raise ValueError(f"cannot convert {value!r} to the indexed array's dtype "
                         f"{dtype!r}: {err}") from None
    if pattern.shape not in ((), inner):
        if pattern.size != int(np.prod(inner)) or not inner:
            raise ValueError(f"cannot fill an indexed array of {dtype!r} with a value of "
                             f"shape {pattern.shape}")
        pattern = pattern.reshape(inner)  # a matrix given as its components in a row
    return np.broadcast_to(pattern, inner) if inner else pattern


def fill(dest: Any, value: Any, kernels: bool | None = None) -> None:
    """Sets every element of the indexed array `dest` to `value` (see `fill_pattern`)."""
    pattern = fill_pattern(dest.dtype, value)
    if dest.size == 0:
        return
    if _uses_kernels(dest.device, kernels):
        one = array(np.array(pattern).reshape((1, *pattern.shape)), dtype=dest.dtype,
                    device=dest.device)
        _launch("fill", dest.ndim, dest.shape, [dest, one], dest.device)
    else:
        dest.data.numpy()[_host_keys(dest)] = pattern


def copy(dest: Any, src: Any) -> None:
    """Copies between arrays and indexed arrays of one shape and dtype, on any devices."""
    if is_indexed(src):
        if not is_indexed(dest) and dest.device == src.device:
            gather(src, dest)
            return
        staged = empty_like(src)  # contiguous, on the source's device
        gather(src, staged)
        if not is_indexed(dest):
            memory.copy_array(dest, staged)
            return
        src = staged
    if src.device != dest.device:
        src = clone(src, device=dest.device)
    scatter(dest, src)


def copy_checked(dest: Any, src: Any) -> None:
    """`copy` after checking that the arrays have one dtype and shape."""
    if dest.dtype != src.dtype:
        raise TypeError(f"cannot copy an array of {src.dtype!r} into one of {dest.dtype!r}")
    if dest.shape != src.shape:
        raise ValueError(f"cannot copy an array of shape {src.shape} into one of shape "
                         f"{dest.shape}")
    if src.size:
        copy(dest, src)


def kc_copy(dest: Any, src: Any, dest_offset: int, src_offset: int, count: int) -> None:
    """`kc.copy` where either side is an indexed array: whole arrays only, as in Warp."""
    for what, arr in (("destination", dest), ("source", src)):
        if not isinstance(arr, array) and not is_indexed(arr):
            raise TypeError(f"kc.copy: the {what} must be an array, got {type(arr).__name__}")
        arr._require_memory("kc.copy")
    if dest_offset or src_offset or (count and (count != src.size or count != dest.size)):
        raise memory.CopyError("kc.copy: dest_offset, src_offset and count are not supported "
                               "with indexed arrays (copy whole arrays of one shape)")
    copy_checked(dest, src)
