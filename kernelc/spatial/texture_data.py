"""Texture data on the host: formats, the shape of source arrays, mip chains and the buffer
layout that `kernelc.spatial.texture_lang` reads.

A texture's buffer holds a table of byte offsets (one uint64 per possible mip level) and
then each level's texels, row-major (depth, height, width, channel), every level starting
on a 16-byte boundary.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kernelc import types as T
from kernelc.spatial import texture_lang as lang

# Storage types and their format codes in kernels.
FORMATS: dict[T.ScalarType, int] = {
    T.float32: lang.FLOAT32, T.float16: lang.FLOAT16, T.uint8: lang.UINT8, T.int8: lang.INT8,
    T.uint16: lang.UINT16, T.int16: lang.INT16, T.uint32: lang.UINT32, T.int32: lang.INT32,
}
SUPPORTED = "uint8, uint16, uint32, int8, int16, int32, float16, float32"
_ALIGN = 16

Shape = tuple[int, int, int]  # (width, height, depth); 1 for the axes a texture lacks


def storage_type(dtype: Any) -> T.ScalarType:
    """The storage type `dtype` names (`float` is float32, `int` int32).

    Raises:
        ValueError: Not one of the eight texel types.
    """
    t = T.as_type(dtype)
    if t not in FORMATS:
        raise ValueError(f"unsupported texture dtype {dtype!r}: use one of {SUPPORTED}")
    return t  # type: ignore[return-value]


def describe(data: Any, ndim: int) -> tuple[Shape, int, T.ScalarType, Any]:
    """The base size, channel count and storage type of texture data, and the data as a
    kernelc array (NumPy data is wrapped, not copied).

    Raises:
        ValueError: The data is not an array, or its dtype or number of dimensions does not
            fit a texture of `ndim` axes.
    """
    from kernelc.runtime.array import array

    if isinstance(data, np.ndarray):
        try:
            element = T.from_numpy_dtype(data.dtype)
        except TypeError:
            element = None
        if element not in FORMATS:
            raise ValueError(f"unsupported texture dtype {data.dtype}: use one of {SUPPORTED}")
        data = array(np.ascontiguousarray(data), dtype=element, device="cpu", copy=False)
    if not isinstance(data, array) or data.ptr is None:
        raise ValueError(f"texture data must be a kc.array or a NumPy array, got "
                         f"{type(data).__name__}")
    element = data.dtype
    if isinstance(element, T.VectorType):
        channels, scalar = element.length, element.dtype
        if data.ndim != ndim:
            raise ValueError(f"{ndim}-d texture data of vector dtype {element!r} must be a "
                             f"{ndim}-d array, got {data.ndim} dimensions")
        axes = data.shape
    else:
        scalar = element
        if data.ndim == ndim:
            channels, axes = 1, data.shape
        elif data.ndim == ndim + 1:
            channels, axes = data.shape[-1], data.shape[:-1]
        else:
            raise ValueError(f"{ndim}-d texture data must have {ndim} or {ndim + 1} "
                             f"dimensions (the last one channels), got {data.ndim}")
    if scalar not in FORMATS:
        raise ValueError(f"unsupported texture dtype {scalar!r}: use one of {SUPPORTED}")
    width, height, depth = (*reversed(axes), 1, 1)[:3]
    return (int(width), int(height), int(depth)), int(channels), scalar, data


def array_shape(size: Shape, ndim: int, channels: int) -> tuple[int, ...]:
    """The NumPy shape of a texture's texels: (depth, height, width)[-ndim:] and channels."""
    axes = tuple(reversed(size[:ndim]))
    return axes if channels == 1 else (*axes, channels)


def mip_shapes(size: Shape, ndim: int, levels: int) -> list[Shape]:
    """The size of every mip level (each axis halved, rounding down, never below 1);
    `levels` 0 means the whole chain down to one texel.

    Raises:
        ValueError: `levels` is negative, or more than the chain or kernelc allows.
    """
    if levels < 0:
        raise ValueError(f"num_mip_levels must be >= 0, got {levels}")
    full = int(math.floor(math.log2(max(max(size[:ndim]), 1)))) + 1
    if levels == 0:
        levels = full
    if levels > full:
        raise ValueError(f"num_mip_levels ({levels}) is more than a texture of size "
                         f"{size[:ndim]} has ({full})")
    if levels > lang.MAX_LEVELS:
        raise ValueError(f"num_mip_levels ({levels}) is more than the {lang.MAX_LEVELS} "
                         f"levels textures support")
    shapes, current = [], size
    for _ in range(levels):
        shapes.append(current)
        current = tuple(max(1, n // 2) if axis < ndim else 1
                        for axis, n in enumerate(current))  # type: ignore[assignment]
    return shapes


def _halve(data: np.ndarray, axis: int, size: int) -> np.ndarray:
    """Pairs of neighbours along `axis` averaged (float64; an odd last texel pairs with
    itself)."""
    even = np.arange(size) * 2
    odd = np.minimum(even + 1, data.shape[axis] - 1)
    return (np.take(data, even, axis=axis) + np.take(data, odd, axis=axis)) * 0.5


def mip_chain(base: np.ndarray, shapes: list[Shape], ndim: int) -> list[np.ndarray]:
    """Every level from the base level by a 2x box filter (width first, then height, then
    depth), averaged in float64; integer texels are rounded to nearest and clipped."""
    levels = [base]
    for previous, shape in zip(shapes, shapes[1:]):
        current = levels[-1].astype(np.float64)
        for axis in range(ndim):  # NumPy axis of texture axis `axis` (x is the last)
            if previous[axis] != shape[axis]:
                current = _halve(current, ndim - 1 - axis, shape[axis])
        if np.issubdtype(base.dtype, np.integer):
            info = np.iinfo(base.dtype)
            current = np.clip(np.rint(current), info.min, info.max)
        levels.append(current.astype(base.dtype))
    return levels


def layout(shapes: list[Shape], channels: int, scalar: T.ScalarType) -> tuple[list[int], int]:
    """Byte offsets of the levels in the buffer, and its size."""
    offsets, end = [], lang.HEADER_BYTES
    for w, h, d in shapes:
        end = -(-end // _ALIGN) * _ALIGN
        offsets.append(end)
        end += w * h * d * channels * scalar.size
    return offsets, -(-end // _ALIGN) * _ALIGN


def host_buffer(offsets: list[int], nbytes: int, levels: list[np.ndarray] | None) -> np.ndarray:
    """The buffer's bytes: the offset table, then the levels' texels (zero without data)."""
    out = np.zeros(nbytes, dtype=np.uint8)
    out[:8 * len(offsets)] = np.asarray(offsets, dtype=np.uint64).view(np.uint8)
    for offset, level in zip(offsets, levels or ()):
        raw = np.ascontiguousarray(level).view(np.uint8).reshape(-1)
        out[offset:offset + raw.size] = raw
    return out
