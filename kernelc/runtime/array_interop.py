"""Arrays and other libraries' data: NumPy copies and DLPack exchange.

`kc.from_numpy` copies a NumPy array; `kc.from_dlpack` shares the memory of any object
with `__dlpack__` (NumPy, a tensor) where its layout allows, and `kc.to_dlpack` hands an
array's memory to another library's `from_dlpack`.
"""

from __future__ import annotations

import math
import sys
import typing
from typing import Any

import numpy as np

from kernelc.runtime.array import Devicelike, array
from kernelc.runtime.device import get_device
from kernelc.runtime.memory import (
    MAX_DIMS,
    Allocation,
    Shapelike,
    aliasable,
    element_layout,
    resolve_dtype,
)
from kernelc.types import bfloat16, from_numpy_dtype


def from_numpy(arr: np.ndarray, dtype: Any = None, shape: Shapelike | None = None,
               device: Devicelike = None, requires_grad: bool = False) -> array:
    """A new array holding a copy of `arr`, as `kc.array(arr, dtype, shape, device)`.

    Without `dtype` the element type is the scalar type of `arr.dtype`; give a vector or
    matrix type (`kc.vec3`) to turn trailing axes into elements.
    """
    return array(arr, dtype=typing.Any if dtype is None else dtype, shape=shape,
                 device=device, requires_grad=requires_grad)


def from_dlpack(obj: Any, dtype: Any = None) -> array:
    """An array sharing the memory of an object with `__dlpack__` (NumPy, a tensor, a JAX
    array) or of a DLPack capsule (`torch.utils.dlpack.to_dlpack(t)`), as Warp's.

    `dtype` (e.g. `kc.vec3`) turns trailing axes into elements. The memory is shared
    whenever its layout allows (packed elements, non-negative strides), even where the
    producer marks it read-only (JAX): as in Warp, kernels then must not write it.

    CUDA memory (also managed memory) is always shared, as an array on `cuda:N`; the
    producer orders its pending work before kernelc's current stream on that device (a
    bare capsule cannot be asked to: synchronize first). A layout kernels cannot read
    (negative strides, a vector dtype over non-dense trailing axes) raises RuntimeError.
    """
    from kernelc.runtime.dlpack_capsule import CapsuleSource, is_capsule, take_bfloat16

    source = CapsuleSource(obj) if is_capsule(obj) else obj
    kind, ordinal = source.__dlpack_device__()
    if kind in (2, 13):  # kDLCUDA, kDLCUDAManaged
        from kernelc.runtime.dlpack_cuda import import_array

        if source is obj:
            return import_array(obj, None, ordinal, dtype)
        return import_array(None, obj, ordinal, dtype)  # a capsule takes no stream
    if kind not in (1, 3):  # kDLCPU, kDLCUDAHost
        raise TypeError(f"Unsupported source device for DLPack: device_type={kind}, "
                        f"device_id={ordinal}")
    capsule = source.__dlpack__()
    if not is_capsule(capsule):
        raise TypeError(f"Expected a valid DLPack capsule, got {type(capsule).__name__} "
                        f"(from {type(source).__name__}.__dlpack__())")
    bf16 = take_bfloat16(capsule)
    host = np.from_dlpack(CapsuleSource(capsule))  # holds the producer's buffer
    if dtype is not None:
        host = _reinterpreted(host, resolve_dtype(dtype), bf16)
    elif bf16:
        dtype = bfloat16
    shared = over_host_memory(host, dtype)
    if shared is not None:
        return shared
    return array(host, dtype=typing.Any if dtype is None else dtype, device="cpu", copy=False)


def _reinterpreted(host: np.ndarray, elem: Any, bf16: bool = False) -> np.ndarray:
    """`host` seen as the scalars of `elem`, which must be of the same size (bools as
    8-bit ints, signed ints as unsigned), as Warp allows; other types raise. `bf16`: the
    source holds bfloat16 values (here as their uint16 bits), which only bfloat16 takes."""
    want = reinterpreted_scalar(host.dtype, elem, bf16)
    return host if host.dtype == want else host.view(want)


def reinterpreted_scalar(have: np.dtype, elem: Any, bf16: bool = False) -> np.dtype:
    """The NumPy scalar type of `elem` (a scalar, vector or matrix type) if memory of
    `have` scalars (bfloat16 bits where `bf16`) may be read as it, as `_reinterpreted`
    allows; raises RuntimeError otherwise."""
    scalar = getattr(elem, "dtype", elem)
    want = np.dtype(element_layout(scalar)[0])
    same_bits = want.itemsize == have.itemsize
    if bf16 or scalar == bfloat16:
        fits = bf16 and scalar == bfloat16
    else:
        fits = (have.kind == "b" and same_bits and want.kind in "biu") or \
            (have.kind in "iu" and same_bits and want.kind in "iu") or have == want
    if not fits:
        name = "bfloat16" if bf16 else f"bool{8 * have.itemsize}" if have.kind == "b" \
            else have.name
        raise RuntimeError(f"Incompatible data types: DLPack {name} and kernelc {scalar!r}")
    return want


def over_host_memory(host: np.ndarray, dtype: Any = None) -> array | None:
    """An array over `host`'s own memory (kept alive through it), or None where its layout
    does not fit `dtype` (default: its scalar type) as kernels read it."""
    elem = from_numpy_dtype(host.dtype) if dtype is None else resolve_dtype(dtype)
    np_dtype, inner = element_layout(elem)
    outer = host.ndim - len(inner)
    if not 1 <= outer <= MAX_DIMS or host.shape[outer:] != inner or \
            not aliasable(host, np_dtype, inner, writeable=False):
        return None
    memory = Allocation(host.ctypes.data, host.nbytes, get_device("cpu"), owner=host)
    shape = host.shape[:outer]
    strides = host.strides[:outer] if math.prod(shape) else (elem.size,) * outer
    return array._over(memory, memory.ptr, shape, strides, elem)


def to_dlpack(arr: array) -> Any:
    """A DLPack capsule sharing `arr`'s memory (Warp's `wp.to_dlpack`; same as
    `arr.__dlpack__()`), for `from_dlpack` functions of other libraries. For a CUDA array,
    the legacy default stream is made to wait for the work queued on kernelc's current
    stream, as DLPack's `stream=None` asks."""
    if not isinstance(arr, array):
        raise TypeError(f"to_dlpack() needs a kernelc array, got {type(arr).__name__}")
    return arr.__dlpack__()


def is_torch_tensor(value: Any) -> bool:
    """Whether `value` is a torch.Tensor (without importing torch: if it was never
    imported, nothing can be a tensor)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)
