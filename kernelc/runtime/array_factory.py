"""The array constructors: `kc.empty`, `zeros`, `ones`, `full`, their `_like` forms, `clone`."""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Any

from kernelc.runtime import memory
from kernelc.runtime.array import Devicelike, array
from kernelc.runtime.array_grad import copy_grads
from kernelc.runtime.device import Device, get_device
from kernelc.runtime.memory import Shapelike

__all__ = ["clone", "empty", "empty_like", "full", "full_like", "ones", "ones_like", "zeros",
           "zeros_like"]


def empty(shape: Shapelike | None = 0, dtype: Any = float, device: Devicelike = None,
          requires_grad: bool = False, pinned: bool = False, retain_grad: bool = False, *,
          n: int | None = None, strides: Sequence[int] | None = None) -> array:
    """A new array with uninitialised contents.

    Args:
        shape: An int or a tuple of up to 4 ints.
        dtype: The element type (float32 by default).
        device: Where to allocate (the current device by default).
        requires_grad: Also allocate a zero-filled `.grad` (see `kc.Tape`).
        pinned: Page-locked host memory.
        retain_grad: See `array.retain_grad`.
        n: Warp's older spelling of a 1-d `shape`.
        strides: Byte strides (default: contiguous); the memory spans that layout.

    Returns:
        The new array.
    """
    if n is not None:
        shape = (n,)
    return array(shape=0 if shape is None else shape, dtype=dtype, device=device,
                 strides=strides, requires_grad=requires_grad, pinned=pinned,
                 retain_grad=retain_grad)


def zeros(shape: Shapelike | None = 0, dtype: Any = float, device: Devicelike = None,
          requires_grad: bool = False, pinned: bool = False, retain_grad: bool = False, *,
          n: int | None = None, strides: Sequence[int] | None = None) -> array:
    """A new array of zeros (inside a kernel: a local fixed-size array). Args as `empty`."""
    result = empty(shape, dtype, device, requires_grad, pinned, retain_grad, n=n,
                   strides=strides)
    result.zero_()
    return result


zeros._kc_special = "zeros"  # type: ignore[attr-defined]


def ones(shape: Shapelike | None = 0, dtype: Any = float, device: Devicelike = None,
         requires_grad: bool = False, pinned: bool = False, retain_grad: bool = False, *,
         n: int | None = None, strides: Sequence[int] | None = None) -> array:
    """A new array of ones. Args as `empty`."""
    return full(shape, 1, dtype, device, requires_grad, pinned, retain_grad, n=n,
                strides=strides)


def full(shape: Shapelike | None = 0, value: Any = 0, dtype: Any = typing.Any,
         device: Devicelike = None, requires_grad: bool = False, pinned: bool = False,
         retain_grad: bool = False, *, n: int | None = None,
         strides: Sequence[int] | None = None) -> array:
    """A new array with every element set to `value`; other args as `empty`.

    Args:
        value: The fill value: a scalar, or a vector/matrix value of the element shape.
        dtype: The element type; by default inferred from `value` (int -> int32,
            float -> float32, bool -> bool, NumPy scalars keep their type).
    """
    elem = memory.fill_value_dtype(value) if dtype is typing.Any or dtype is None else dtype
    result = empty(shape, elem, device, requires_grad, pinned, retain_grad, n=n,
                   strides=strides)
    result.fill_(value)
    return result


def _like(src: array, device: Devicelike) -> tuple[Device, bool]:
    src._require_memory("a *_like constructor")
    return (src.device if device is None else get_device(device)), src.pinned


def empty_like(src: array, device: Devicelike = None, requires_grad: bool | None = None,
               pinned: bool | None = None, retain_grad: bool = False) -> array:
    """An uninitialised array with the shape and dtype of `src` (on its device by default);
    with a `.grad` if `requires_grad`, by default if `src` has one (as in Warp)."""
    dev, src_pinned = _like(src, device)
    return empty(src.shape, src.dtype, dev,
                 src.requires_grad if requires_grad is None else requires_grad,
                 src_pinned if pinned is None else pinned, retain_grad)


def zeros_like(src: array, device: Devicelike = None, requires_grad: bool | None = None,
               pinned: bool | None = None, retain_grad: bool = False) -> array:
    """An array of zeros with the shape and dtype of `src`."""
    result = empty_like(src, device, requires_grad, pinned, retain_grad)
    result.zero_()
    return result


def ones_like(src: array, device: Devicelike = None, requires_grad: bool | None = None,
              pinned: bool | None = None, retain_grad: bool = False) -> array:
    """An array of ones with the shape and dtype of `src`."""
    return full_like(src, 1, device, requires_grad, pinned, retain_grad)


def full_like(src: array, value: Any, device: Devicelike = None,
              requires_grad: bool | None = None, pinned: bool | None = None,
              retain_grad: bool = False) -> array:
    """An array with the shape and dtype of `src`, every element set to `value`."""
    result = empty_like(src, device, requires_grad, pinned, retain_grad)
    result.fill_(value)
    return result


def clone(src: array, device: Devicelike = None, requires_grad: bool | None = None,
          pinned: bool | None = None, retain_grad: bool = False) -> array:
    """A contiguous copy of `src` (on its device by default).

    As in Warp, the copy has a grad if `src` has one (unless `requires_grad=False`), the
    grad's values are copied too, and an active `kc.Tape` records the copy's adjoint.
    """
    result = empty_like(src, device, requires_grad, pinned, retain_grad)
    memory.copy_array(result, src)
    if result._grad is not None and src._grad is not None:
        copy_grads(result, src, 0, 0, src.size, None)
    return result
