"""What the utilities share: the built-in kernel marker, argument checks and scalar views.

Every utility works on *scalar views*: arrays over the caller's memory whose elements are
the scalar components of the caller's elements (a `vec3` array of n elements is seen as an
(n, 3) float32 array). The kernels therefore only ever deal with scalars, and one kernel
serves every vector and matrix type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kernelc as kc
from kernelc import types as T
from kernelc.frontend.decorators import Kernel
from kernelc.runtime.array import array


class UtilsTypeError(RuntimeError, TypeError):
    """An unsupported element type. Warp raises RuntimeError here; this is both."""


class UtilsValueError(RuntimeError, ValueError):
    """Arrays that do not fit (size, device, layout). Warp raises RuntimeError here; this
    is both a RuntimeError and a ValueError."""


def builtin(fn: Callable) -> Kernel:
    """`@kc.kernel`, marked as one of kernelc's built-in kernels: its launches are reported
    as `TIMING_KERNEL_BUILTIN` activities ("builtin kernel NAME") and as `type: "builtin"`
    entries of `kc.kernel_history()`."""
    kernel = kc.kernel(fn)
    kernel.is_builtin = True
    return kernel


def check_array(arr: Any, what: str) -> array:
    if not isinstance(arr, array) or arr.ptr is None:
        raise TypeError(f"{what} must be a kc.array with memory, got {type(arr).__name__}")
    return arr


def same_device(a: array, b: array, what: str) -> None:
    if a.device != b.device:
        raise UtilsValueError(f"{what} array storage devices do not match "
                              f"({a.device} vs {b.device})")


def components(dtype: T.Type) -> tuple[T.ScalarType, int]:
    """The scalar type and the number of scalar components of an element type."""
    if isinstance(dtype, T.ScalarType):
        return dtype, 1
    if isinstance(dtype, (T.VectorType, T.MatrixType)):
        return dtype.dtype, dtype.count
    raise UtilsTypeError(f"Unsupported data type: {dtype!r}")


def scalar_type(dtype: T.Type, allowed: tuple[T.ScalarType, ...], what: str) -> T.ScalarType:
    """The scalar type of `dtype`, which must be one of `allowed` (raises UtilsTypeError)."""
    scalar = dtype.dtype if isinstance(dtype, (T.VectorType, T.MatrixType)) else dtype
    if scalar not in allowed:
        names = ", ".join(t.name for t in allowed)
        raise UtilsTypeError(f"{what} takes scalar types {names}. Unsupported data type: "
                             f"{dtype!r}")
    return scalar


# Kernels index with 32-bit ints (as Warp's utilities count with C ints).
MAX_COUNT = 2**31 - 1


def check_count(n: int, what: str) -> None:
    if n > MAX_COUNT:
        raise UtilsValueError(f"{what}: {n} elements are more than the {MAX_COUNT} the "
                              f"utilities index")


def view(arr: array, dtype: T.ScalarType, shape: tuple[int, ...],
         strides: tuple[int, ...]) -> array:
    """An array of `dtype` over `arr`'s memory (sharing, and keeping alive, its allocation)."""
    return array._over(arr._alloc, arr.ptr, shape, strides, dtype, arr.pinned)


def rows(arr: array, count: int, what: str) -> array:
    """The first `count` elements of a 1-d or contiguous array as an (count, components)
    scalar view."""
    scalar, n = components(arr.dtype)
    if arr.ndim == 1:
        step = arr.strides[0] if arr.shape[0] > 1 else arr.dtype.size
    elif arr.is_contiguous:
        step = arr.dtype.size
    else:
        raise UtilsValueError(f"{what} array must be contiguous or one-dimensional")
    return view(arr, scalar, (count, n), (step, scalar.size))


def zero(scalar: T.ScalarType) -> Any:
    """A typed zero: as a kernel argument it fixes a generic accumulator's type."""
    return scalar.np_dtype.type(0)


def launch(kernel: Kernel, dim: Any, args: list[Any], device: Any) -> None:
    """Launches a utility kernel (every launch of the utilities goes through here)."""
    if (dim if isinstance(dim, int) else min(dim)) > 0:
        kc.launch(kernel, dim=dim, inputs=args, device=device)
        # kc.launch memoises the last arguments for a quick relaunch with the same objects;
        # the utilities never relaunch with the same views, so do not keep them alive.
        kernel.last_launch = None


def cdiv(a: int, b: int) -> int:
    return -(-a // b)
