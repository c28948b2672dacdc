"""DLPack for CUDA memory: `arr.__dlpack__()` of a CUDA array, and `kc.from_dlpack` of a
CUDA tensor (Torch, JAX, CuPy, another kernelc array) or of its capsule.

NumPy moves kernelc's CPU memory (array.py, array_interop.py) but knows no CUDA memory, so
this module reads and writes the DLPack structs itself (views in dlpack_capsule.py). Its
pure parts, `build_capsule`, `describe` and `parse_capsule`, touch no GPU and are tested
on the CPU; `export_array` and `import_array` add the CUDA streams and devices.

Export. A capsule's destructor and its tensor's deleter run wherever the last reference
goes: while an exception propagates, on a consumer's thread, at interpreter exit. As
ctypes callbacks they would run Python code with that exception pending, which CPython
turns into a SystemError that replaces the user's exception. So NumPy makes the capsule
(its destructor and deleter are C code that keeps the pending error and takes the GIL) of
a small host carrier whose buffer holds the exported array, and the tensor in it is then
rewritten to describe the CUDA memory: consumers read only the tensor, and NumPy's deleter
only frees its own block and drops the carrier, and with it the array. The carrier has the
exported tensor's number of dimensions and is not contiguous, so NumPy's tensor has room
for, and points at, a shape and strides of that length (DLPack requires strides there).

Streams follow the DLPack rules for CUDA: the consumer names the stream it will use
(`None` or 1: the legacy default stream, 2: the per-thread default stream, another int: a
CUstream handle, -1: no ordering), and the producer makes that stream wait for the work
queued so far on its own current stream.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernelc.runtime import dlpack_capsule as dl
from kernelc.runtime.memory import contiguous_strides, element_layout
from kernelc.types import StructType, bfloat16, from_numpy_dtype

KDL_CPU, KDL_CUDA, KDL_CUDA_MANAGED = 1, 2, 13  # DLPack device types
_INT, _UINT, _FLOAT, _BFLOAT, _COMPLEX, _BOOL = 0, 1, 2, 4, 5, 6  # DLPack type codes
_FLAG_COPIED = 2  # DLPACK_FLAG_BITMASK_IS_COPIED
_KINDS = {_INT: "i", _UINT: "u", _FLOAT: "f"}
_DL_VERSION = (1, 0)  # what we ask producers for, and the least that gets a versioned capsule


# ---- capsules (no GPU) ------------------------------------------------------------------


class _Carrier(bytearray):
    """The host bytes behind NumPy's capsule; they hold the exported array's owner."""

    __slots__ = ("owner",)


def build_capsule(ptr: int, shape: tuple[int, ...], byte_strides: tuple[int, ...],
                  dtype: tuple[int, int, int], device: tuple[int, int], owner: Any,
                  versioned: bool = False, copied: bool = False) -> Any:
    """A DLPack capsule ("dltensor", or "dltensor_versioned" where `versioned` and NumPy
    can) describing `shape` elements of `dtype` (code, bits, lanes) at `ptr` on `device`
    (type, id), with strides given in bytes; `owner` stays alive until the consumer calls
    the deleter, or the capsule dies unconsumed. `copied`: the memory is a copy made for
    this export (a flag of versioned capsules)."""
    ndim = len(shape)
    itemsize = dtype[1] * dtype[2] // 8
    if ndim < 1 or any(s % itemsize for s in byte_strides):
        raise BufferError(f"DLPack cannot describe {ndim} dimensions with byte strides "
                          f"{byte_strides} of {itemsize}-byte elements")
    carrier = _Carrier(2 ** ndim * 2)
    carrier.owner = owner
    # Shape (2, ..., 2) with every other byte of the last axis: non-contiguous, so NumPy's
    # tensor gets strides of our length. Its values are never read as ours.
    view = np.frombuffer(carrier, np.uint8).reshape((2,) * (ndim - 1) + (4,))[..., ::2]
    capsule = None
    if versioned:
        try:
            capsule = view.__dlpack__(max_version=_DL_VERSION)
        except TypeError:  # NumPy < 2.1 makes only the legacy capsule, as DLPack allows
            pass
    if capsule is None:
        capsule = view.__dlpack__()
    address, is_versioned = dl.managed_tensor(capsule)
    if is_versioned:
        dl.VersionedHead.from_address(address).flags = _FLAG_COPIED if copied else 0
    tensor = dl.tensor_of(capsule)
    if tensor.ndim != ndim or not tensor.strides:
        raise AssertionError("NumPy's DLPack tensor has no room for the exported layout")
    tensor.data = ptr
    tensor.device.device_type, tensor.device.device_id = device
    tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes = dtype
    tensor.byte_offset = 0
    for i in range(ndim):
        tensor.shape[i] = shape[i]
        tensor.strides[i] = byte_strides[i] // itemsize
    return capsule


def dl_dtype(scalar: Any) -> tuple[int, int, int]:
    """The DLPack (code, bits, lanes) of a kernelc scalar type."""
    if scalar == bfloat16:
        return _BFLOAT, 16, 1
    np_dtype = np.dtype(element_layout(scalar)[0])
    code = _BOOL if np_dtype.kind == "b" else {"i": _INT, "u": _UINT, "f": _FLOAT}.get(
        np_dtype.kind)
    if code is None:
        raise RuntimeError(f"No conversion from kernelc type {scalar!r} to a DLPack type")
    return code, 8 * np_dtype.itemsize, 1


def describe(arr: Any) -> tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, int, int]]:
    """The pointer, DLPack shape, byte strides and dtype of an array: vector and matrix
    elements become trailing dimensions of their scalars (as NumPy sees CPU arrays)."""
    if isinstance(arr.dtype, StructType):
        raise RuntimeError("Cannot convert arrays of structs to DLPack: DLPack has no "
                           "structured types")
    np_dtype, inner = element_layout(arr.dtype)
    scalar = getattr(arr.dtype, "dtype", arr.dtype)
    strides = arr.strides + contiguous_strides(inner, np.dtype(np_dtype).itemsize)
    return arr.ptr, arr.shape + inner, strides, dl_dtype(scalar)


@dataclass(frozen=True)
class TensorView:
    """What a capsule describes. `ptr` includes the byte offset; `strides` are in bytes
    (the dense ones where the tensor gives none); a dtype with lanes > 1 is a trailing
    dimension of its scalars here, so `dtype` always has one lane."""

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: tuple[int, int, int]
    device: tuple[int, int]
    managed: int
    deleter: int
    versioned: bool


def parse_capsule(capsule: Any) -> TensorView:
    """The tensor of an unconsumed capsule (the capsule is left as it is)."""
    managed, versioned = dl.managed_tensor(capsule)
    if versioned:
        head = dl.VersionedHead.from_address(managed)
        if head.major > _DL_VERSION[0]:
            raise BufferError(f"DLPack {head.major}.{head.minor} capsules are newer than "
                              f"kernelc reads (up to {_DL_VERSION[0]}.x)")
        deleter = head.deleter
    else:
        deleter = dl.ManagedTail.from_address(managed + ctypes.sizeof(dl.DLTensor)).deleter
    t = dl.tensor_of(capsule)
    code, bits, lanes = t.dtype.code, t.dtype.bits, t.dtype.lanes
    if bits % 8:
        raise RuntimeError(f"kernelc has no {bits}-bit DLPack types (bit-packed data)")
    scalar = bits // 8
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = tuple(t.strides[i] * scalar * lanes for i in range(t.ndim)) if t.strides \
        else contiguous_strides(shape, scalar * lanes)
    if lanes > 1:
        shape, strides = shape + (lanes,), strides + (scalar,)
    return TensorView(ptr=(t.data or 0) + t.byte_offset, shape=shape, strides=strides,
                      dtype=(code, bits, 1), device=(t.device.device_type, t.device.device_id),
                      managed=managed, deleter=deleter or 0, versioned=versioned)


def scalar_of(dtype: tuple[int, int, int]) -> tuple[np.dtype, bool]:
    """The NumPy scalar type of a DLPack dtype, and whether it is bfloat16 (then uint16,
    its bits); raises RuntimeError for types kernelc has not."""
    code, bits, _ = dtype
    if code == _BFLOAT and bits == 16:
        return np.dtype(np.uint16), True
    if code == _BOOL and bits == 8:
        return np.dtype(np.bool_), False
    if code == _COMPLEX:
        raise RuntimeError("kernelc has no complex types (DLPack complex data)")
    if code in _KINDS and bits in (8, 16, 32, 64) and (code, bits) != (_FLOAT, 8):
        return np.dtype(f"{_KINDS[code]}{bits // 8}"), False
    raise RuntimeError(f"Unknown DLPack data type: code {code}, {bits} bits")


def array_layout(view: TensorView, dtype: Any = None) -> tuple[Any, tuple[int, ...],
                                                                 tuple[int, ...]]:
    """The element type, shape and byte strides of an array over `view`'s memory: `dtype`
    (default: the tensor's scalar type), whose vector or matrix shape takes the trailing
    dimensions, which must then be dense. Raises RuntimeError where kernels cannot read
    the memory as it is."""
    from kernelc.runtime.array_interop import reinterpreted_scalar
    from kernelc.runtime.memory import resolve_dtype

    have, bf16 = scalar_of(view.dtype)
    if dtype is None:
        elem = bfloat16 if bf16 else from_numpy_dtype(have)
    else:
        elem = resolve_dtype(dtype)
        reinterpreted_scalar(have, elem, bf16)
    inner = element_layout(elem)[1]
    count, shape, strides = len(inner), view.shape, view.strides
    if count:
        if shape[len(shape) - count:] != inner or len(shape) < count:
            raise RuntimeError(f"Could not convert a DLPack tensor of shape {shape} to an "
                               f"array of {elem!r}: its trailing shape must be {inner}")
        if strides[len(shape) - count:] != contiguous_strides(inner, have.itemsize):
            raise RuntimeError(f"Could not convert a DLPack tensor of shape {shape} to an "
                               f"array of {elem!r}: its trailing dimensions are not dense "
                               f"(byte strides {strides})")
        shape, strides = shape[:len(shape) - count], strides[:len(strides) - count]
    if not shape:  # one element (a 0-d tensor, or a (3,) tensor as one vec3)
        shape, strides = (1,), (elem.size,)
    if any(s < 0 for s in strides):
        raise RuntimeError(f"kernelc arrays cannot have negative strides (DLPack byte "
                           f"strides {view.strides}); pass a contiguous copy")
    if view.ptr % have.itemsize:
        raise RuntimeError(f"DLPack data at 0x{view.ptr:x} is not aligned to its "
                           f"{have.itemsize}-byte scalars")
    return elem, shape, strides


class ForeignTensor:
    """Owns a consumed DLPack tensor: calls its producer's deleter once, when the arrays
    over its memory are gone (this is their allocation's owner)."""

    __slots__ = ("managed", "deleter")

    def __init__(self, view: TensorView) -> None:
        self.managed, self.deleter = view.managed, view.deleter

    def release(self) -> None:
        deleter, self.deleter = self.deleter, 0
        if deleter:
            # PYFUNCTYPE keeps the GIL: deleters that take it themselves (NumPy's, Torch's)
            # may, and one that forgets to (a ctypes callback's producer) is still safe.
            ctypes.PYFUNCTYPE(None, ctypes.c_void_p)(deleter)(self.managed)

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:  # interpreter shutdown: the producer may be gone already
            pass


def consume(capsule: Any, view: TensorView) -> ForeignTensor:
    """Takes `view`'s tensor from `capsule` (renamed "used_..."): the capsule no longer
    deletes it; the returned owner does."""
    owner = ForeignTensor(view)
    dl.mark_used(capsule, view.versioned)
    return owner


# ---- CUDA arrays ------------------------------------------------------------------------


def consumer_stream(stream: Any) -> int | None:
    """The CUstream handle a consumer passed to `__dlpack__` (None for -1: no ordering)."""
    if stream is None:
        return 1  # DLPack: None means the legacy default stream
    if isinstance(stream, bool) or not isinstance(stream, int) or stream < -1:
        raise TypeError(f"DLPack stream must be None or an integer >= -1 for a CUDA "
                        f"device, got {stream!r}")
    return None if stream == -1 else stream


def order_after_current(device: Any, consumer: int) -> None:
    """Makes the `consumer` stream wait for the work queued so far on `device`'s current
    kernelc stream (nothing to do when they are the same stream)."""
    from kernelc.runtime.context import get_runtime
    from kernelc.runtime.device import cuda_runtime
    from kernelc.runtime.streams import get_stream

    current = get_stream(device)
    if consumer == current.cuda_stream:
        return
    events = get_runtime().extras.setdefault("dlpack_events", {})
    event = events.get(device.ordinal)
    if event is None:  # one per device: a wait takes the event's state when it is queued
        event = events[device.ordinal] = cuda_runtime().make_event(device.ordinal, False,
                                                                    False)
    event.record(current)
    event.wait(consumer)


def export_array(arr: Any, stream: Any, max_version: tuple[int, int] | None,
                 dl_device: Any, copy: bool | None) -> Any:
    """`arr.__dlpack__(...)` for an array on a CUDA device."""
    ordinal = arr.device.ordinal
    consumer = consumer_stream(stream)
    if dl_device is not None and tuple(dl_device) != (KDL_CUDA, ordinal):
        raise BufferError(f"kernelc exports an array on {arr.device} only to that device "
                          f"({KDL_CUDA}, {ordinal}), not to DLPack device {dl_device}")
    if copy:  # queued on the current stream, which the consumer's then waits for
        from kernelc.runtime.array import array

        arr = array(arr, device=arr.device)
    ptr, shape, strides, dtype = describe(arr)
    if consumer is not None:
        order_after_current(arr.device, consumer)
    versioned = max_version is not None and tuple(max_version) >= _DL_VERSION
    return build_capsule(ptr, shape, strides, dtype, (KDL_CUDA, ordinal), arr,
                         versioned=versioned, copied=bool(copy))


def import_array(source: Any, capsule: Any, ordinal: int, dtype: Any = None) -> Any:
    """A kernelc array over the CUDA memory of `source` (an object with `__dlpack__`), or
    of `capsule` when `source` is None, sharing it until the array and its views are gone."""
    from kernelc.runtime.array import array
    from kernelc.runtime.device import get_device
    from kernelc.runtime.streams import get_stream

    device = get_device(f"cuda:{ordinal}")
    if source is not None:
        # Kernels will use the memory on kernelc's current stream (DLPack: 1 is the
        # legacy default stream, which kernelc's own streams never are).
        stream = get_stream(device).cuda_stream or 1
        try:
            capsule = source.__dlpack__(stream=stream, max_version=_DL_VERSION)
        except TypeError:  # a producer older than DLPack 1.0 takes no max_version
            capsule = source.__dlpack__(stream=stream)
        if not dl.is_capsule(capsule):
            raise TypeError(f"Expected a valid DLPack capsule, got {type(capsule).__name__} "
                            f"(from {type(source).__name__}.__dlpack__())")
    view = parse_capsule(capsule)
    if view.device[0] not in (KDL_CUDA, KDL_CUDA_MANAGED) or view.device[1] != ordinal:
        raise BufferError(f"the DLPack tensor is on device {view.device}, not on {device}")
    elem, shape, strides = array_layout(view, dtype)
    result = array(ptr=view.ptr, dtype=elem, shape=shape, strides=strides, device=device)
    result._alloc.owner = consume(capsule, view)  # only once nothing can fail any more
    return result
