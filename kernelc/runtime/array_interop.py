"""Arrays and other libraries' data: NumPy copies and DLPack exchange.

`kc.from_numpy` copies a NumPy array; `kc.from_dlpack` shares the memory of any object
with `__dlpack__` (NumPy, a tensor) where its layout allows, and `kc.to_dlpack` hands an
array's memory to another library's `from_dlpack`.
"""

from __future__ import annotations

import sys
import typing
from typing import Any

import numpy as np

from kernelc.runtime.array import Devicelike, array
from kernelc.runtime.device import get_device
from kernelc.runtime.memory import Shapelike


def from_numpy(arr: np.ndarray, dtype: Any = None, shape: Shapelike | None = None,
               device: Devicelike = None, requires_grad: bool = False) -> array:
    """A new array holding a copy of `arr`, as `kc.array(arr, dtype, shape, device)`.

    Without `dtype` the element type is the scalar type of `arr.dtype`; give a vector or
    matrix type (`kc.vec3`) to turn trailing axes into elements.
    """
    return array(arr, dtype=typing.Any if dtype is None else dtype, shape=shape,
                 device=device, requires_grad=requires_grad)


def from_dlpack(obj: Any, dtype: Any = None) -> array:
    """An array sharing the memory of an object with `__dlpack__` (NumPy, a tensor).

    `dtype` (e.g. `kc.vec3`) turns trailing axes into elements. The memory is shared when
    its layout allows (see `copy=False` of `kc.array`).
    """
    kind, ordinal = obj.__dlpack_device__()
    if kind not in (1, 3):  # kDLCPU, kDLCUDAHost
        device = get_device(f"cuda:{ordinal}") if kind == 2 else None
        raise RuntimeError(f"DLPack import from {device or f'device type {kind}'} "
                           f"is not supported yet")
    return array(np.from_dlpack(obj), dtype=typing.Any if dtype is None else dtype,
                 device="cpu", copy=False)


def to_dlpack(arr: array) -> Any:
    """A DLPack capsule sharing `arr`'s memory (Warp's `wp.to_dlpack`; same as
    `arr.__dlpack__()`), for `from_dlpack` functions of other libraries."""
    if not isinstance(arr, array):
        raise TypeError(f"to_dlpack() needs a kernelc array, got {type(arr).__name__}")
    return arr.__dlpack__()


def is_torch_tensor(value: Any) -> bool:
    """Whether `value` is a torch.Tensor (without importing torch: if it was never
    imported, nothing can be a tensor)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)
