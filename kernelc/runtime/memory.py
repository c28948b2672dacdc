"""Device memory behind one small interface: allocate, copy, fill, read back.

`kernelc.runtime.array` never touches memory itself; it calls the functions at the bottom
of this file, which pick the backend of the device doing the work and report the operation
to the activity recorder. The CPU backend is NumPy over 64-byte-aligned host buffers. A
CUDA backend plugs in by giving `kernelc.runtime.cuda` a `memory_backend()` function that
returns an object with the `MemoryBackend` methods.

The layout arithmetic shared by arrays and backends (element layout, strides) lives here
too, so that backends need nothing from the array module.
"""

from __future__ import annotations

import ctypes
import operator
import typing
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from kernelc import types as T
from kernelc.runtime.context import get_runtime
from kernelc.runtime.device import Device, cuda_runtime
from kernelc.timing.flags import TIMING_MEMCPY, TIMING_MEMSET
from kernelc.types import contiguous_strides

if TYPE_CHECKING:
    from kernelc.runtime.array import array

# Cache-line alignment: SIMD loads in generated CPU code never straddle a line at element 0.
ALIGNMENT = 64


# ---- layout ------------------------------------------------------------------------------

MAX_DIMS = 4

Shapelike = int | Sequence[int]


def resolve_dtype(dtype: Any) -> T.Type | None:
    """The element type `dtype` denotes, or None for `typing.Any` (infer / generic)."""
    if dtype is typing.Any:
        return None
    if isinstance(dtype, str):
        try:
            dtype = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"unknown dtype {dtype!r}") from None
    resolved = T.as_type(dtype)
    if getattr(resolved, "kinds", None) is not None:  # kc.Float / kc.Int / kc.Scalar
        return resolved  # a generic annotation's dtype; allocating one raises (no size)
    if not isinstance(resolved, (T.ScalarType, T.VectorType, T.MatrixType, T.StructType)):
        raise TypeError(f"arrays hold scalars, vectors, matrices or structs, not {dtype!r}")
    return resolved


def fill_value_dtype(value: Any) -> T.Type:
    """The element type `kc.full` picks for a fill value when no dtype is given (Warp's
    rule): int32, float32 or bool for Python scalars, a NumPy scalar's or a kernelc value's
    own type, and for other sequences a vector (1-d) or matrix (2-d) of NumPy's dtype."""
    if isinstance(value, T.HostScalar):  # `kc.bfloat16(x)` is not a float32
        return T.number_type(value)
    if isinstance(value, np.generic):  # before float: numpy.float64 subclasses float
        return resolve_dtype(value.dtype)  # type: ignore[return-value]
    for python_type, kc_type in ((bool, T.bool_), (int, T.int32), (float, T.float32)):
        if isinstance(value, python_type):
            return kc_type
    known = getattr(value, "_kc_type", None) or T.as_type(type(value))
    if isinstance(known, (T.ScalarType, T.VectorType, T.MatrixType, T.StructType)):
        return known
    if hasattr(value, "__len__"):
        from kernelc.types_vec import matrix, vector

        values = np.asarray(value)
        if values.ndim in (1, 2) and values.dtype.kind in "biuf":
            scalar = T.from_numpy_dtype(values.dtype)
            return vector(values.size, scalar) if values.ndim == 1 else matrix(
                values.shape, scalar)  # type: ignore[arg-type]
    raise TypeError(f"cannot infer an element type from the fill value {value!r} (a scalar, "
                    f"vector, matrix, struct, or a 1-d or 2-d sequence of numbers); pass dtype=")


def normalize_shape(shape: Shapelike) -> tuple[int, ...]:
    """`shape` as a tuple of 1 to 4 non-negative ints; raises ValueError/TypeError if not."""
    # (A 1-d NumPy array of ints is a shape too, as in Warp.)
    dims = tuple(shape) if isinstance(shape, (Sequence, np.ndarray)) else (shape,)
    try:
        dims = tuple(operator.index(n) for n in dims)
    except TypeError:
        raise TypeError(f"a shape is an int or a tuple of ints, got {shape!r}") from None
    if not 1 <= len(dims) <= MAX_DIMS:
        raise ValueError(f"arrays have 1 to {MAX_DIMS} dimensions, got shape {dims}")
    for axis, n in enumerate(dims):
        if n < 0:
            raise ValueError(f"Array shapes must be non-negative, got {n} in dimension {axis}")
    return dims


def element_layout(dtype: T.Type) -> tuple[np.dtype, tuple[int, ...]]:
    """The NumPy scalar dtype and the trailing NumPy axes of one array element."""
    if isinstance(dtype, T.ScalarType):
        return dtype.np_dtype, ()
    if isinstance(dtype, T.VectorType):
        return dtype.dtype.np_dtype, (dtype.length,)
    if isinstance(dtype, T.MatrixType):
        return dtype.dtype.np_dtype, tuple(dtype.shape)
    if isinstance(dtype, T.StructType):
        return struct_np_dtype(dtype), ()
    raise TypeError(f"arrays hold scalars, vectors, matrices or structs, not {dtype!r}")


def struct_np_dtype(struct: T.StructType) -> np.dtype:
    """The NumPy structured dtype with the struct's C layout (field offsets and size)."""
    formats: list[Any] = []
    for _, field in struct.fields:
        if isinstance(field, (T.ArrayType, T.IndexedArrayType)):
            # Pointers, shapes and strides: opaque bytes to NumPy (as `Cls.numpy_dtype()`).
            formats.append(np.dtype((np.void, field.size)))
            continue
        np_dtype, inner = element_layout(field)
        formats.append((np_dtype, inner) if inner else np_dtype)
    return np.dtype({"names": [name for name, _ in struct.fields], "formats": formats,
                     "offsets": list(struct.offsets), "itemsize": struct.size})


def index_layout(ptr: int, shape: tuple[int, ...], strides: tuple[int, ...],
                 key: Any) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """The (ptr, shape, strides) of `view[key]` for ints, slices with step > 0 and `...`."""
    key = key if isinstance(key, tuple) else (key,)
    for index in key:
        if isinstance(index, (bool, np.bool_)) or not (
                index is Ellipsis or isinstance(index, (slice, int, np.integer))):
            raise TypeError(f"arrays are indexed with ints and slices, not {index!r}")
    if key.count(Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key = key[:at] + (slice(None),) * (len(shape) - len(key) + 1) + key[at + 1:]
    if len(key) > len(shape):
        raise IndexError(f"too many indices ({len(key)}) for a {len(shape)}-d array")
    new_shape, new_strides = [], []
    for axis, index in enumerate(key):
        n, stride = shape[axis], strides[axis]
        if isinstance(index, slice):
            start, stop, step = index.indices(n)
            if step <= 0:
                raise ValueError("array slices need a positive step")
            length = len(range(start, stop, step))
            ptr += start * stride if length else 0
            new_shape.append(length)
            new_strides.append(stride * step)
            continue
        i = int(index)
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of range for axis {axis} with size {n}")
        ptr += (i + n if i < 0 else i) * stride
    new_shape.extend(shape[len(key):])
    new_strides.extend(strides[len(key):])
    return ptr, tuple(new_shape), tuple(new_strides)


def span(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> int:
    """Bytes from element 0 to the end of the last element."""
    if 0 in shape:
        return 0
    return sum((n - 1) * s for n, s in zip(shape, strides)) + itemsize


def aliasable(data: np.ndarray, np_dtype: np.dtype, inner: tuple[int, ...],
              writeable: bool = True) -> bool:
    """Whether kernels may use a NumPy array's memory as is (`copy=False`); `writeable`
    False accepts read-only memory too (DLPack imports share it, as in Warp)."""
    if data.dtype != np_dtype or not data.flags.aligned or (
            writeable and not data.flags.writeable):
        return False
    if any(s < 0 for s in data.strides):
        return False
    # A vector or matrix element must be packed: kernels read it as one block.
    count = len(inner)
    inner_strides = data.strides[data.ndim - count:] if count else ()
    return inner_strides == contiguous_strides(inner, np_dtype.itemsize)


def array_interface(arr: array) -> dict[str, Any]:
    """NumPy's `__array_interface__` (version 3) for an array's memory."""
    np_dtype, inner = element_layout(arr.dtype)
    interface = {
        "data": (arr.ptr, False),
        "shape": arr.shape + inner,
        "strides": arr.strides + contiguous_strides(inner, np_dtype.itemsize),
        "typestr": np_dtype.str,
        "version": 3,
    }
    if np_dtype.fields:  # structs: the typestr alone ("|V32") would lose the fields
        interface["descr"] = np_dtype.descr
    return interface


class _HostMemory:
    """Hands an array interface to NumPy, which keeps this (and so the memory) alive."""

    def __init__(self, interface: dict[str, Any], owner: Any) -> None:
        self.__array_interface__ = interface
        self.owner = owner


def host_view(arr: array) -> np.ndarray:
    """A zero-copy NumPy view of an array whose memory the host can address."""
    view = np.asarray(_HostMemory(array_interface(arr), arr._alloc))
    np_dtype = element_layout(arr.dtype)[0]
    # NumPy names the padding fields of a struct's descr, so restore the exact dtype.
    return view.view(np_dtype) if np_dtype.fields else view


# ---- backends ----------------------------------------------------------------------------


class Allocation:
    """A block of device memory; the memory lives as long as this object does.

    Attributes:
        ptr: The address of the first byte.
        nbytes: The size in bytes.
        device: The device the memory is on.
        owner: Whatever keeps the memory alive (a NumPy buffer on the CPU), or None for
            foreign memory that kernelc does not manage.
    """

    __slots__ = ("ptr", "nbytes", "device", "owner", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, device: Device, owner: Any = None) -> None:
        self.ptr = ptr
        self.nbytes = nbytes
        self.device = device
        self.owner = owner


class MemoryBackend(Protocol):
    """What a device kind implements. Arrays passed in always have memory and equal shapes."""

    def alloc(self, device: Device, nbytes: int, pinned: bool) -> Allocation: ...

    def copy(self, dest: array, src: array) -> None:
        """Copies element by element between arrays of any strides (devices may differ)."""

    def copy_bytes(self, dest: Device, dest_ptr: int, src: Device, src_ptr: int,
                   nbytes: int) -> None: ...

    def fill(self, dest: array, value: np.ndarray) -> None:
        """Sets every element of `dest` to `value` (one element, as a NumPy array)."""

    def to_numpy(self, src: array) -> np.ndarray:
        """A new host NumPy array holding a copy of `src`."""


class CpuBackend:
    """Host memory: aligned NumPy byte buffers, copies and fills through NumPy."""

    def alloc(self, device: Device, nbytes: int, pinned: bool) -> Allocation:
        # Page-locking only matters for transfers to a GPU; it is the CUDA backend's job.
        raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
        base = raw.ctypes.data  # (each .ctypes access costs about a microsecond)
        start = -base % ALIGNMENT
        return Allocation(base + start, nbytes, device, raw[start:start + nbytes])

    def copy(self, dest: array, src: array) -> None:
        # copyto detects overlapping memory and goes through a temporary when needed.
        np.copyto(host_view(dest), host_view(src), casting="no")

    def copy_bytes(self, dest: Device, dest_ptr: int, src: Device, src_ptr: int,
                   nbytes: int) -> None:
        ctypes.memmove(dest_ptr, src_ptr, nbytes)

    def fill(self, dest: array, value: np.ndarray) -> None:
        host_view(dest)[...] = value

    def to_numpy(self, src: array) -> np.ndarray:
        return np.array(host_view(src), copy=True)


_CPU_BACKEND = CpuBackend()


def backend(device: Device) -> MemoryBackend:
    """The memory backend for `device`; raises RuntimeError if its kind has none yet."""
    if device.is_cpu:
        return _CPU_BACKEND
    module = cuda_runtime()
    make = getattr(module, "memory_backend", None)
    if make is None:
        raise RuntimeError("kernelc's CUDA runtime is not available: it cannot allocate "
                           "or copy array memory yet")
    return make()


# ---- operations, with activity reporting -------------------------------------------------


def timed(kind: int, device: Device, name: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Runs `fn(*args)`, reported as one activity to the recorder when one is listening.

    Args:
        kind: `TIMING_MEMCPY` or `TIMING_MEMSET`.
        device: The device doing the work.
        name: The activity name ("memcpy HtoD", "memset", ...).
        fn: The operation.
        *args: Its arguments.

    Returns:
        Whatever `fn` returns.
    """
    recorder = get_runtime().recorder
    if recorder is None or not recorder.wants(kind):
        return fn(*args)
    token = recorder.begin(device, name, kind)
    try:
        return fn(*args)
    finally:
        recorder.end(token)


_COPY_NAMES = {
    (False, False): "memcpy HtoH",
    (False, True): "memcpy HtoD",
    (True, False): "memcpy DtoH",
    (True, True): "memcpy DtoD",
}


def _copy_route(dest: Device, src: Device) -> tuple[Device, str]:
    # The GPU side does any copy that involves one (as with cudaMemcpyAsync on its stream).
    worker = dest if dest.is_cuda else src
    return worker, _COPY_NAMES[src.is_cuda, dest.is_cuda]


def allocate(device: Device, nbytes: int, pinned: bool = False, dtype: Any = None,
             shape: tuple[int, ...] | None = None) -> Allocation:
    """New uninitialised memory of `nbytes` bytes on `device`, from the device's custom
    allocator if one is set (`kc.set_device_allocator`), recorded by the allocation tracker
    while tracking is on (`dtype` and `shape` describe the array for its report)."""
    custom = device._custom_allocator
    if custom is None or nbytes == 0 or (pinned and device.is_cpu):
        alloc = backend(device).alloc(device, nbytes, pinned)
    else:
        from kernelc.runtime.allocators import allocate_custom

        alloc = allocate_custom(custom, device, nbytes)
    tracker = get_runtime().alloc_tracker
    if tracker is not None and nbytes:
        tracker.record(alloc, pinned, dtype, shape)
    return alloc


class _HostOperation:
    """A host copy or memset recorded by a CPU graph capture, run when a replay reaches it."""

    __slots__ = ("args", "keep")

    def __init__(self, args: tuple[Any, ...], keep: Any) -> None:
        self.args = args
        self.keep = keep  # the arrays behind raw addresses, alive as long as the graph

    def launch(self) -> None:
        timed(*self.args)


def _timed_or_captured(kind: int, device: Device, name: str, fn: Callable[..., Any],
                       *args: Any, keep: Any = None) -> None:
    """`timed`, except that an open CPU capture records host copies and memsets instead
    (as Warp's CPU graphs do, even for the copy that fills an array made in the capture)."""
    if device.is_cpu:
        capture = get_runtime().extras.get("capture")
        if capture is not None and capture.intercept(
                _HostOperation((kind, device, name, fn, *args), keep)):
            return
    timed(kind, device, name, fn, *args)


def copy_array(dest: array, src: array) -> None:
    """Copies `src` into `dest` (same shape and dtype, any strides, any devices)."""
    if isinstance(dest._kc_type, T.IndexedArrayType) or isinstance(src._kc_type,
                                                                   T.IndexedArrayType):
        from kernelc.runtime.indexed_copy import copy as copy_indexed

        return copy_indexed(dest, src)
    worker, name = _copy_route(dest.device, src.device)
    _timed_or_captured(TIMING_MEMCPY, worker, name, backend(worker).copy, dest, src)


def copy_bytes(dest: Device, dest_ptr: int, src: Device, src_ptr: int, nbytes: int,
               keep: Any = None) -> None:
    """Copies `nbytes` contiguous bytes between two addresses (`keep`: the arrays that own
    them, held by a graph that records the copy)."""
    worker, name = _copy_route(dest, src)
    _timed_or_captured(TIMING_MEMCPY, worker, name, backend(worker).copy_bytes,
                       dest, dest_ptr, src, src_ptr, nbytes, keep=keep)


class CopyError(ValueError, RuntimeError):
    """A `kc.copy` range or layout that cannot be copied: a ValueError, and a RuntimeError
    as the same mistake is in Warp (so `except RuntimeError` in a Warp program catches it)."""


class CopyTypeError(TypeError, RuntimeError):
    """`kc.copy` between arrays of incompatible dtypes (a RuntimeError too, as in Warp)."""


def _gradless(arr: array) -> array:
    """A view of all of `arr` without its grad (parts of it must not copy grads)."""
    return arr._view(arr.ptr, arr.shape, arr.strides)


def copy_elements(dest: array, src: array, dest_offset: int, src_offset: int, count: int) -> None:
    """Copies `count` elements between the arrays (the ranges already checked), by Warp's
    rules: contiguous arrays by flat offsets; otherwise element by element, where offsets
    need 1-d arrays and the (sliced) shapes must be equal."""
    if dest.is_contiguous and src.is_contiguous:
        if dest_offset == src_offset == 0 and dest.shape == src.shape and count == src.size:
            copy_array(dest, src)
            return
        size = dest.dtype.size
        copy_bytes(dest.device, dest.ptr + dest_offset * size,
                   src.device, src.ptr + src_offset * size, count * size, keep=(dest, src))
        return
    if dest_offset or src_offset or count != src.size or count != dest.size:
        if src.ndim != 1 or dest.ndim != 1:
            raise CopyError(f"kc.copy: dest_offset, src_offset and count are only supported "
                            f"for 1-D non-contiguous arrays (destination shape={dest.shape}, "
                            f"source shape={src.shape}); copy through a contiguous array")
        src = _gradless(src)[src_offset:src_offset + count]
        dest = _gradless(dest)[dest_offset:dest_offset + count]
    if src.shape != dest.shape:
        # Element-by-element copies keep the shape, as in Warp (no implicit reshape).
        raise CopyError(f"kc.copy: Incompatible array shapes for a non-contiguous copy: "
                        f"destination shape={dest.shape}, source shape={src.shape}")
    copy_array(dest, src)


def fill_array(dest: array, value: np.ndarray) -> None:
    """Sets every element of `dest` to `value` (a NumPy array of one element's shape)."""
    device = dest.device
    _timed_or_captured(TIMING_MEMSET, device, "memset", backend(device).fill, dest, value)


def to_host(src: array) -> np.ndarray:
    """A host NumPy copy of a device array (device to host transfer)."""
    device = src.device
    return timed(TIMING_MEMCPY, device, "memcpy DtoH", backend(device).to_numpy, src)


def _copy_range(dest: Any, src: Any, dest_offset: Any, src_offset: Any,
                count: Any) -> tuple[int, int, int]:
    """`kc.copy`'s arguments checked in Warp's order, with Warp's wording: arrays, then
    integer offsets and count, then each non-negative."""
    for what, arr in (("destination", dest), ("source", src)):
        if not isinstance(getattr(arr, "_kc_type", None), (T.ArrayType, T.IndexedArrayType)):
            raise CopyTypeError(f"kc.copy: the {what} must be an array, got "
                                f"{type(arr).__name__}")
    try:
        numbers = tuple(operator.index(v) for v in (dest_offset, src_offset, count))
    except TypeError:
        raise CopyTypeError(f"kc.copy: src_offset, dest_offset and count must be integers, "
                            f"got src_offset={src_offset!r}, dest_offset={dest_offset!r}, "
                            f"count={count!r}") from None
    for name, label, value in zip(("dest_offset", "src_offset", "count"),
                                  ("Destination offset", "Source offset", "Copy count"),
                                  numbers):
        if value < 0:
            raise CopyError(f"{label} must be non-negative in kc.copy, got {name}={value}")
    return numbers  # type: ignore[return-value]


def copy(dest: array, src: array, dest_offset: int = 0, src_offset: int = 0, count: int = 0,
         stream: Any = None) -> None:
    """Copies elements from `src` to `dest`, across devices if need be.

    Offsets and count are in elements of the flattened arrays, as in Warp.

    Args:
        dest: The destination array.
        src: The source array (same dtype).
        dest_offset: First element written in `dest`.
        src_offset: First element read in `src`.
        count: How many elements; 0 means `src.size`.
        stream: Reserved for CUDA stream ordering; unused on the CPU.

    When both arrays have a `.grad`, the same elements of the grads are copied too and an
    active `kc.Tape` records the copy's adjoint (Warp's behaviour).

    Contiguous arrays are copied by flat offsets. If either array is not contiguous, the
    elements are copied one by one, as in Warp: offsets and a partial count need both
    arrays to be 1-d, and the arrays (or their 1-d parts) must have one shape.

    Raises:
        ValueError: An offset or the count is negative, the range falls outside either
            array, offsets or a partial count are used with a multi-dimensional
            non-contiguous array, or non-contiguous arrays differ in shape (a `CopyError`,
            also a RuntimeError as in Warp).
        TypeError: An argument is not an array or an offset not an int, or the element
            sizes differ (dtypes of one byte size, e.g. float32 and int32, are copied byte
            for byte, as in Warp); also a RuntimeError.

    Indexed arrays (`kc.indexedarray`) are copied whole, as in Warp: with them the offsets
    must be 0 and the count 0 or the size of both.
    """
    dest_offset, src_offset, count = _copy_range(dest, src, dest_offset, src_offset, count)
    if isinstance(dest._kc_type, T.IndexedArrayType) or isinstance(src._kc_type,
                                                                   T.IndexedArrayType):
        from kernelc.runtime.indexed_copy import kc_copy

        return kc_copy(dest, src, dest_offset, src_offset, count)
    dest._require_memory("kc.copy")
    src._require_memory("kc.copy")
    data_src = src
    if dest.dtype != src.dtype:
        if dest.dtype.size != src.dtype.size:
            raise CopyTypeError(f"kc.copy needs arrays of one dtype or of one element size, "
                                f"got destination dtype={dest.dtype!r}, source dtype="
                                f"{src.dtype!r} ({dest.dtype.size} and {src.dtype.size} "
                                f"bytes)")
        # Elements of one byte size are copied as they are (float32 bits into an int32
        # array, a vec4 into a mat22), as Warp does.
        data_src = src.view(dest.dtype)
    n = count or src.size
    for what, arr, offset in (("source", src, src_offset), ("destination", dest, dest_offset)):
        if offset + n > arr.size:
            raise CopyError(f"kc.copy: {what} elements [{offset}, {offset + n}) are out of "
                            f"range for an array of {arr.size} elements (the range exceeds "
                            f"the {what} size)")
    if n == 0:
        return
    copy_elements(dest, data_src, dest_offset, src_offset, n)
    if dest.grad is not None and src.grad is not None:
        from kernelc.runtime.array_grad import copy_grads

        copy_grads(dest, src, dest_offset, src_offset, n, stream)


def view_layout(shape: tuple[int, ...], strides: tuple[int, ...], source: T.Type,
                dtype: T.Type) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shape and strides of an array of `source` elements seen as `dtype` elements
    (see `array.view`)."""
    if dtype.size == source.size:
        return shape, strides
    if isinstance(dtype, T.ScalarType) and isinstance(source, (T.VectorType, T.MatrixType)):
        if dtype.size != source.dtype.size:
            raise TypeError(f"{_cannot_view(source, dtype)}: source scalar dtype "
                            f"{source.dtype.__name__} has size {source.dtype.size} bytes, but "
                            f"target dtype has size {dtype.size} bytes")
        inner = element_layout(source)[1]
        return (*shape, *inner), (*strides, *contiguous_strides(inner, dtype.size))
    if isinstance(source, T.ScalarType) and isinstance(dtype, (T.VectorType, T.MatrixType)):
        if source.size != dtype.dtype.size:
            raise TypeError(f"{_cannot_view(source, dtype)}: source dtype has size "
                            f"{source.size} bytes, but target scalar dtype "
                            f"{dtype.dtype.__name__} has size {dtype.dtype.size} bytes")
        inner = element_layout(dtype)[1]
        if shape[-len(inner):] != inner or len(shape) < len(inner):
            raise ValueError(f"cannot view an array of shape {shape} as {dtype!r}: its "
                             f"trailing dimensions must be {inner}")
        if strides[-len(inner):] != contiguous_strides(inner, source.size):
            raise ValueError(f"cannot view an array with strides {strides} as {dtype!r}: "
                             "its trailing dimensions must be contiguous")
        # A single element would give a 0-d array, which arrays cannot be: keep one axis.
        return shape[:-len(inner)] or (1,), strides[:-len(inner)] or (dtype.size,)
    raise TypeError(f"{_cannot_view(source, dtype)}: source dtype has size {source.size} "
                    f"bytes, but target dtype has size {dtype.size} bytes")


def _cannot_view(source: T.Type, dtype: T.Type) -> str:
    return (f"cannot create an array view with dtype {dtype.__name__} from source dtype "
            f"{source.__name__}")
