"""Zero-copy exchange of arrays, devices, dtypes and streams with PyTorch (Warp's names).

`from_torch` wraps a tensor's memory in a `kc.array` and `to_torch` a `kc.array`'s memory in
a tensor: nothing is copied, and writes through either side show up in the other. Each side
keeps the other's memory alive for as long as it exists. Gradients travel along: an array
made from a tensor that requires grad has a `.grad` over the tensor's `.grad`, and a tensor
made from an array that requires grad gets a `.grad` over the array's.

PyTorch is imported inside the functions, so `import kernelc` never loads it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from kernelc import types as T
from kernelc.runtime.array import array
from kernelc.runtime.device import Device, get_device
from kernelc.runtime.streams import Stream, get_stream

if TYPE_CHECKING:
    import torch

__all__ = [
    "device_from_torch",
    "device_to_torch",
    "dtype_from_torch",
    "dtype_to_torch",
    "from_torch",
    "stream_from_torch",
    "stream_to_torch",
    "to_torch",
]

# kernelc scalar -> the name of the torch dtype `dtype_to_torch` gives. Torch's unsigned
# types beyond uint8 lack most operators, so Warp maps uint16/32/64 to the signed types.
_TO_TORCH = {
    T.bool_: "bool", T.int8: "int8", T.int16: "int16", T.int32: "int32", T.int64: "int64",
    T.uint8: "uint8", T.uint16: "int16", T.uint32: "int32", T.uint64: "int64",
    T.float16: "float16", T.bfloat16: "bfloat16", T.float32: "float32", T.float64: "float64",
}
# torch dtype name -> (the kernelc scalar it means, the scalars a tensor of it may be
# viewed as). Integers of one width alias as signed or unsigned, bools as bytes (Warp's
# rule). torch.uint16/32/64, which `to_torch` of CPU arrays produces, map back too.
_FROM_TORCH = {
    "bool": (T.bool_, (T.bool_, T.uint8, T.int8)),
    "int8": (T.int8, (T.int8, T.uint8)),
    "uint8": (T.uint8, (T.uint8, T.int8)),
    "int16": (T.int16, (T.int16, T.uint16)),
    "int32": (T.int32, (T.int32, T.uint32)),
    "int64": (T.int64, (T.int64, T.uint64)),
    "uint16": (T.uint16, (T.uint16, T.int16)),
    "uint32": (T.uint32, (T.uint32, T.int32)),
    "uint64": (T.uint64, (T.uint64, T.int64)),
    "float16": (T.float16, (T.float16,)),
    "bfloat16": (T.bfloat16, (T.bfloat16,)),
    "float32": (T.float32, (T.float32,)),
    "float64": (T.float64, (T.float64,)),
}
_DEVICE_NAME = re.compile(r"cpu|cuda(:\d+)?")


@functools.cache
def _torch_tables() -> dict[Any, tuple[T.ScalarType, tuple[T.ScalarType, ...]]]:
    """`_FROM_TORCH` keyed by torch dtype objects (built on first use: it imports torch)."""
    import torch

    return {getattr(torch, name): entry for name, entry in _FROM_TORCH.items()
            if hasattr(torch, name)}


# ---- devices, dtypes, streams -------------------------------------------------------------


def device_from_torch(torch_device: torch.device | str) -> Device:
    """The kernelc device of a Torch device (`"cpu"`, `"cuda"`, `"cuda:1"` or a
    `torch.device`).

    Args:
        torch_device (torch.device | str): A Torch device or its name.

    Raises:
        RuntimeError: The device has no kernelc counterpart (`"meta"`, `"mps"`, ...), or
            it is a GPU and kernelc's CUDA runtime is not available.
        ValueError: `torch_device` is neither a string nor a `torch.device`.
    """
    if isinstance(torch_device, str):
        if not _DEVICE_NAME.fullmatch(torch_device):
            raise RuntimeError(f"Unsupported Torch device {torch_device}")
        return get_device(torch_device)
    import torch

    if not isinstance(torch_device, torch.device):
        raise ValueError(f"Argument must be a torch.device object or a string, got "
                         f"{type(torch_device).__name__}")
    if torch_device.type == "cpu":
        return get_device("cpu")
    if torch_device.type == "cuda":
        index = torch_device.index
        return get_device("cuda" if index is None else f"cuda:{index}")
    raise RuntimeError(f"Unsupported Torch device type {torch_device.type}")


def device_to_torch(device: Device | str | None) -> str:
    """The Torch device name of a kernelc device (`"cpu"` or `"cuda:N"`; None: the
    current device). kernelc works in each GPU's primary context, which Torch shares.

    Args:
        device (Device | str | None): A kernelc device or its name.
    """
    dev = get_device(device)
    return "cpu" if dev.is_cpu else f"cuda:{dev.ordinal}"


def dtype_from_torch(torch_dtype: torch.dtype) -> T.ScalarType:
    """The kernelc scalar type of a Torch dtype (`torch.float32` -> `kc.float32`).

    Args:
        torch_dtype (torch.dtype): A Torch dtype.

    Raises:
        TypeError: kernelc has no such type (complex types, 8-bit floats, ...).
    """
    entry = _torch_tables().get(torch_dtype)
    if entry is None:
        raise TypeError(f"Cannot convert {torch_dtype} to a kernelc type")
    return entry[0]


def dtype_to_torch(dtype: Any) -> torch.dtype:
    """The Torch dtype of a kernelc scalar type (`kc.float32` -> `torch.float32`).

    As in Warp, `kc.uint16`, `kc.uint32` and `kc.uint64` map to the signed Torch types of
    the same width, which have Torch's full set of operators.

    Args:
        dtype (Any): A kernelc scalar type (or `float`, `int`, `bool`, a NumPy scalar type).

    Raises:
        TypeError: `dtype` is not a scalar type (Torch has no vector or matrix dtypes).
    """
    import torch

    name = _TO_TORCH.get(T.as_type(dtype))  # type: ignore[arg-type]
    if name is None:
        raise TypeError(f"Cannot convert {dtype!r} to a Torch type")
    return getattr(torch, name)


def stream_from_torch(stream_or_device: Any = None) -> Stream:
    """A kernelc stream over a Torch CUDA stream (the stream itself, not a copy); given a
    device, or None for the current CUDA device, that device's current Torch stream.

    Args:
        stream_or_device (Any): A `torch.cuda.Stream`, or a Torch device (None: current).

    Raises:
        RuntimeError: Torch has no CUDA (PyTorch has no streams on the CPU).
    """
    import torch

    if isinstance(stream_or_device, torch.cuda.Stream):
        torch_stream = stream_or_device
    else:
        if not torch.cuda.is_available():
            raise RuntimeError("stream_from_torch() needs CUDA, and this PyTorch has no "
                               "usable CUDA device (PyTorch has no streams on the CPU)")
        torch_stream = torch.cuda.current_stream(stream_or_device)
    stream = Stream(device_from_torch(torch_stream.device),
                    cuda_stream=torch_stream.cuda_stream)
    stream._torch_stream = torch_stream  # Torch must not destroy it while this is used
    return stream


def stream_to_torch(stream_or_device: Any = None) -> Any:
    """A `torch.cuda.ExternalStream` over a kernelc CUDA stream; given a device, or None
    for the current device, over that device's current kernelc stream.

    Args:
        stream_or_device (Any): A `kc.Stream`, or a kernelc device (None: the current one).

    Raises:
        RuntimeError: The stream or device is the CPU's (PyTorch has no CPU streams).
    """
    import torch

    stream = stream_or_device if isinstance(stream_or_device, Stream) else \
        get_stream(stream_or_device)
    if not stream.device.is_cuda:
        raise RuntimeError(f"Device {stream.device.alias} is not a CUDA device: PyTorch "
                           f"has streams on CUDA devices only")
    torch_stream = torch.cuda.ExternalStream(stream.cuda_stream,
                                             device=device_to_torch(stream.device))
    torch_stream._kc_stream = stream  # keeps a stream kernelc created alive
    return torch_stream


# ---- arrays -------------------------------------------------------------------------------


def _element_type(tensor: torch.Tensor, dtype: Any) -> T.Type:
    """The element type of an array over `tensor`: `dtype`, checked to be made of
    `tensor`'s scalars, or the scalar type of `tensor.dtype` when `dtype` is None."""
    if dtype is None:
        return dtype_from_torch(tensor.dtype)
    elem = T.as_type(dtype)
    scalar = elem.dtype if isinstance(elem, (T.VectorType, T.MatrixType)) else elem
    entry = _torch_tables().get(tensor.dtype)
    if entry is None or scalar not in entry[1]:
        raise RuntimeError(f"Cannot convert Torch type {tensor.dtype} to kernelc type "
                           f"{dtype!r} (the memory is shared, so the scalar types must "
                           f"match)")
    return elem


def _layout(tensor: torch.Tensor, elem: T.Type) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shape and byte strides of an array of `elem` over `tensor`: a vector or matrix
    element takes the trailing dimension(s), which must match its shape and be dense."""
    shape = tuple(tensor.shape)
    scalar_size = tensor.element_size()
    strides = tuple(s * scalar_size for s in tensor.stride())
    if isinstance(elem, T.VectorType):
        inner = (elem.length,)
    elif isinstance(elem, T.MatrixType):
        inner = tuple(elem.shape)
    else:
        if not shape:
            raise ValueError("a 0-d tensor cannot be an array: kernelc arrays have 1 to 4 "
                             "dimensions (use t.reshape(1))")
        return shape, strides
    count = len(inner)
    if count > len(shape) or shape[-count:] != inner:
        raise RuntimeError(f"Could not convert a Torch tensor of shape {shape} to an array "
                           f"of {elem!r}: its trailing shape must be {inner}")
    dense = [scalar_size, scalar_size * inner[-1]]
    if any(n != 1 and s != want for n, s, want
           in zip(reversed(shape[-count:]), reversed(strides[-count:]), dense)):
        raise RuntimeError(f"Could not convert a Torch tensor of shape {shape} to an array "
                           f"of {elem!r}: its trailing dimensions are not contiguous "
                           f"(strides {tensor.stride()}); pass t.contiguous()")
    # A single element (a tensor of shape (3,) as one vec3) is an array of length 1.
    return shape[:-count] or (1,), strides[:-count] or (elem.size,)


def from_torch(t: torch.Tensor, dtype: Any = None, requires_grad: bool | None = None,
               grad: Any = None, return_ctype: bool = False,
               retain_grad: bool = False) -> array:
    """A `kc.array` over a tensor's memory, without copying (Warp's `wp.from_torch`).

    The array keeps the tensor's shape and strides (views and transposes included); a
    vector or matrix `dtype` takes the trailing dimension(s), which must be dense:
    `from_torch(torch.zeros(n, 3), dtype=kc.vec3)` is an array of n vec3. The tensor's
    memory stays alive as long as the array (or any view of it) does.

    A `dtype` must be made of the tensor's scalar type, except that integers may switch
    sign and bools may be viewed as bytes. With `requires_grad` (by default when the
    tensor requires grad), the array's `.grad` is an array over `t.grad`, which is first
    set to zeros if it is None. With `return_ctype`, the result is Warp's low-level
    descriptor instead: an object with the `data` and `grad` addresses (0: none), `ndim`,
    `shape` and byte `strides`, which launches take like the array.

    Args:
        t (torch.Tensor): The tensor, on the CPU or a CUDA device.
        dtype (Any): The element type, made of `t`'s scalars (default: `t`'s scalar type).
        requires_grad (bool | None): Give the array a `.grad` over `t.grad` (default: as `t`).
        grad (Any): The gradient to use instead: a `kc.array` or a tensor.
        return_ctype (bool): Return the descriptor (`data`, `grad`, `ndim`, `shape`,
            `strides`) instead of the array.
        retain_grad (bool): See `kc.array`'s `retain_grad`.

    Returns:
        The array sharing `t`'s memory (its descriptor with `return_ctype`).

    Raises:
        TypeError: `t` is not a tensor, or its dtype has no kernelc type.
        RuntimeError: `dtype` does not fit `t` (other scalars, a trailing shape that is
            not the element's, trailing dimensions that are not contiguous), or `t` is
            on a device kernelc does not have.
        ValueError: The gradient does not match the array (shape, dtype or device).
    """
    import torch

    if not isinstance(t, torch.Tensor):
        raise TypeError(f"from_torch() needs a torch.Tensor, got {type(t).__name__}")
    elem = _element_type(t, dtype)
    shape, strides = _layout(t, elem)
    device = device_from_torch(t.device)
    requires_grad = t.requires_grad if requires_grad is None else requires_grad
    grad_array = None
    if grad is not None:
        grad_array = grad if isinstance(grad, array) else from_torch(grad, elem,
                                                                      requires_grad=False)
    elif requires_grad:
        if t.grad is None:
            # Torch allocates it, so that Torch owns it like any gradient it made.
            t.grad = torch.zeros_like(t)
        grad_array = from_torch(t.grad, elem, requires_grad=False)
    ptr = t.data_ptr()
    storage = t.untyped_storage()
    # The memory from `ptr` to the end of the storage (a view starts inside it).
    capacity = storage.nbytes() - (ptr - storage.data_ptr()) if ptr else None
    result = array(ptr=ptr, dtype=elem, shape=shape, strides=strides, capacity=capacity,
                   device=device, grad=grad_array, requires_grad=requires_grad,
                   retain_grad=retain_grad)
    # Views, NumPy views and tensors made by to_torch hold on to the allocation. The
    # storage too: `t.data = other` would otherwise free the memory the array points at.
    result._alloc.owner = (t, storage)
    if return_ctype:
        from kernelc.interop.array_descriptor import ArrayDescriptor

        return ArrayDescriptor(result)  # type: ignore[return-value]
    return result


def to_torch(a: array, requires_grad: bool | None = None) -> torch.Tensor:
    """A tensor over a `kc.array`'s memory, without copying (Warp's `wp.to_torch`).

    The tensor has the array's shape and strides, with vector and matrix elements as
    trailing dimensions (n vec3 -> a tensor of shape (n, 3)). It keeps the array's memory
    alive. kernelc's unsigned types become Torch's (`torch.uint32`, ...). With
    `requires_grad`, the tensor's `.grad` is a tensor over the array's `.grad` (if any).

    Args:
        a (array): The array, on the CPU or a CUDA device.
        requires_grad (bool | None): The tensor's `requires_grad` (default: the array's).

    Returns:
        The tensor sharing `a`'s memory.

    Raises:
        TypeError: `a` is not a kernelc array with memory.
        RuntimeError: `a` holds structs, which Torch cannot represent.
    """
    import torch

    if not isinstance(a, array):
        raise TypeError(f"to_torch() needs a kernelc array, got {type(a).__name__}")
    a._require_memory("to_torch()")
    if isinstance(a.dtype, T.StructType):
        raise RuntimeError("Cannot convert arrays of structs to Torch tensors")
    if requires_grad is None:
        requires_grad = a.requires_grad
    tensor = _tensor_over(torch, a)
    tensor.requires_grad = requires_grad
    if requires_grad and a.grad is not None:
        tensor.grad = _tensor_over(torch, a.grad)
    return tensor


def _tensor_over(torch: Any, a: array) -> torch.Tensor:
    scalar = getattr(a.dtype, "dtype", a.dtype)
    if a.device.is_cpu:
        # Through a NumPy view: it holds the array's allocation, and Torch holds the view.
        if scalar == T.bfloat16:  # NumPy holds the bits; Torch reinterprets them
            return torch.as_tensor(a._values().view(np.int16)).view(torch.bfloat16)
        return torch.as_tensor(a.numpy())
    # `__cuda_array_interface__`; Torch keeps a reference to the array.
    tensor = torch.as_tensor(a, device=device_to_torch(a.device))
    return tensor.view(torch.bfloat16) if scalar == T.bfloat16 else tensor


# ---- tensors as launch arguments (see kernelc.runtime.launch) -----------------------------


def tensor_arg_type(want: T.ArrayType, tensor: torch.Tensor, device: Device,
                    fail: Callable[[str], Exception]) -> T.ArrayType:
    """The array type a tensor has as the launch argument of an array parameter `want`;
    raises `fail(message)` when it cannot be one (Warp takes tensors directly too)."""
    if tensor.requires_grad:
        raise fail("a tensor that requires grad cannot be passed directly (Warp refuses "
                   "it too); pass kc.from_torch(t), whose .grad is t.grad, or t.detach()")
    try:
        tensor_device = device_from_torch(tensor.device)
    except (RuntimeError, ValueError) as err:
        raise fail(str(err)) from None
    if tensor_device != device:
        raise fail(f"tensor is on device '{tensor_device}' but the launch is on '{device}'")
    generic = want.dtype is None or getattr(want.dtype, "kinds", None) is not None
    try:
        elem = _element_type(tensor, None if generic else want.dtype)
        shape, _ = _layout(tensor, elem)
    except (TypeError, RuntimeError, ValueError) as err:
        raise fail(str(err)) from None
    if generic and want.dtype is not None and want.dtype != elem:
        raise fail(f"expected an array of {want.dtype!r}, got a tensor of {tensor.dtype}")
    if len(shape) != want.ndim:
        raise fail(f"expected a {want.ndim}-d array of {elem!r}, got a tensor of shape "
                   f"{tuple(tensor.shape)}")
    return T.ArrayType(elem, want.ndim)


def tensor_as_array(tensor: torch.Tensor, dtype: T.Type) -> array:
    """The array a launch passes for a tensor checked by `tensor_arg_type` (no gradient)."""
    return from_torch(tensor, dtype, requires_grad=False)
