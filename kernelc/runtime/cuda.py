"""The CUDA driver runtime: devices, contexts, memory, copies, modules and events.

Everything goes through `cuda.bindings.driver`; every driver call returns a tuple whose first
element is a `CUresult`, checked by `call`. `kernelc.runtime.device` imports this module on
first need and calls `enumerate_devices()`; when the driver library, a device or cuda-python
is missing, `unavailable_reason()` says which, and every CPU feature keeps working.

State lives on the runtime object (`rt.extras["cuda"]`), never in module globals:

- One primary context per device, retained on first use and made current per thread (a
  context is current per OS thread, so each thread checks its own cached ordinal).
- One created stream per device is its "null" stream: CUDA graph capture cannot use the
  legacy default stream, and a created stream keeps kernelc's work apart from other
  libraries' legacy-stream work. `Stream` objects (kernelc.runtime.streams) replace it as the
  device's current stream.
- A stream-ordered caching allocator: cuMemAllocAsync / cuMemFreeAsync on the device's
  default memory pool, whose release threshold is raised to "never" so freed blocks stay in
  the pool and are reused by later allocations without any synchronization. Devices without
  memory pools fall back to cuMemAlloc / cuMemFree.
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from typing import Any

import numpy as np

try:
    from cuda.bindings import driver as cu
except ImportError as err:  # reported by kernelc.runtime.device as the reason CUDA is off
    raise ModuleNotFoundError(
        f"cuda-python is not installed ({err}); install it with `pip install kernelc[cuda]`",
        name="cuda.bindings",
    ) from err

from kernelc.runtime.context import get_runtime
from kernelc.runtime.memory import Allocation, contiguous_strides, element_layout

_SUCCESS = cu.CUresult.CUDA_SUCCESS
_NOT_READY = cu.CUresult.CUDA_ERROR_NOT_READY
_ATTR = cu.CUdevice_attribute
_HOST = cu.CUmemorytype.CU_MEMORYTYPE_HOST
_DEVICE = cu.CUmemorytype.CU_MEMORYTYPE_DEVICE


class CudaError(RuntimeError):
    """A CUDA driver call failed; the message names the call and the driver's error."""


def error_text(result: Any) -> str:
    """`CUDA_ERROR_X: description` for a CUresult."""
    try:
        name = cu.cuGetErrorName(result)[1]
        text = cu.cuGetErrorString(result)[1]
        return f"{name.decode()}: {text.decode()}"
    except Exception:  # the driver may be unusable, which is often why we are here
        return str(result)


def call(function: Any, *args: Any) -> Any:
    """Calls a driver function and checks its CUresult.

    Returns:
        None, the one value after the CUresult, or a tuple of the values after it.

    Raises:
        CudaError: The call did not return CUDA_SUCCESS.
    """
    result = function(*args)
    if result[0] != _SUCCESS:
        raise CudaError(f"{function.__name__} failed with {error_text(result[0])}")
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


# ---- devices and contexts ------------------------------------------------------------------


class DeviceInfo:
    """One CUDA device: its properties, and its context and streams once used."""

    def __init__(self, ordinal: int) -> None:
        self.ordinal = ordinal
        self.handle = call(cu.cuDeviceGet, ordinal)
        raw = call(cu.cuDeviceGetName, 256, self.handle)
        self.name = raw.split(b"\0", 1)[0].decode(errors="replace")
        major = self.attribute(_ATTR.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        minor = self.attribute(_ATTR.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        self.arch = major * 10 + minor
        self.sm_count = self.attribute(_ATTR.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        self.max_threads_per_sm = self.attribute(
            _ATTR.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
        self.total_memory = int(call(cu.cuDeviceTotalMem, self.handle))
        self.pools_supported = bool(
            self.attribute(_ATTR.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED))
        self.pools_enabled = self.pools_supported  # kc.set_mempool_enabled switches it
        self.context: Any = None
        self.null_stream: Any = None  # kernelc's own stream, the default current stream
        self.current_stream: Any = None  # a kernelc Stream object, or None for null_stream
        self.capturing = 0  # open graph captures on this device
        # (ptr, pooled), or a custom allocator's release callable, freed in a capture
        self.deferred_frees: list[Any] = []
        self.capture_refs: list[Any] = []  # launches captured into the open graph
        self.pending: list[tuple[Any, Any]] = []  # (event, host object) of async transfers

    def attribute(self, attribute: Any) -> int:
        return int(call(cu.cuDeviceGetAttribute, attribute, self.handle))

    def as_dict(self) -> dict[str, Any]:
        return {"ordinal": self.ordinal, "name": self.name, "arch": self.arch,
                "sm_count": self.sm_count, "total_memory": self.total_memory,
                "max_threads_per_sm": self.max_threads_per_sm,
                "pools_supported": self.pools_supported}


class CudaState:
    """The CUDA runtime's state, `rt.extras["cuda"]`."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.devices: list[DeviceInfo] = []
        self.reason = ""
        self.driver_version = 0
        self.local = threading.local()  # .ordinal: the device whose context is current
        self.modules: list[Any] = []  # loaded CUmodules stay loaded for the process
        self.registered: dict[int, int] = {}  # id(Allocation) -> registered host address
        self._discover()

    def _discover(self) -> None:
        try:
            (result,) = cu.cuInit(0)
        except Exception as err:  # the bindings raise when libcuda.so cannot be loaded
            self.reason = f"no NVIDIA driver found (libcuda could not be loaded: {err})"
            return
        if result == cu.CUresult.CUDA_ERROR_NO_DEVICE:
            self.reason = "the NVIDIA driver found no CUDA device"
            return
        if result != _SUCCESS:
            self.reason = f"cuInit failed with {error_text(result)}"
            return
        self.driver_version = int(call(cu.cuDriverGetVersion))
        count = int(call(cu.cuDeviceGetCount))
        if count == 0:
            self.reason = "the NVIDIA driver found no CUDA device"
        self.devices = [DeviceInfo(i) for i in range(count)]


def state() -> CudaState:
    """The CUDA state on the runtime object, created (and the driver initialised) once."""
    rt = get_runtime()
    found = rt.extras.get("cuda")
    if found is None:
        with rt.lock:
            found = rt.extras.get("cuda")
            if found is None:
                found = rt.extras["cuda"] = CudaState()
                if found.devices:
                    rt.extras["cuda_event_factory"] = make_event
    return found


def enumerate_devices() -> list[dict[str, Any]]:
    """The CUDA devices, as dicts (ordinal, name, arch, sm_count, total_memory, ...)."""
    return [info.as_dict() for info in state().devices]


def unavailable_reason() -> str:
    """Why no CUDA device can be used ("" when one can)."""
    return state().reason


def device_info(device: Any) -> DeviceInfo:
    """The DeviceInfo of a Device object or ordinal, with its context current on this thread."""
    ordinal = device if isinstance(device, int) else device.ordinal
    cuda = state()
    info = cuda.devices[ordinal]
    if getattr(cuda.local, "ordinal", None) != ordinal or info.context is None:
        _make_current(cuda, info)
    return info


def _make_current(cuda: CudaState, info: DeviceInfo) -> None:
    if info.context is None:
        with cuda.lock:
            if info.context is None:
                context = call(cu.cuDevicePrimaryCtxRetain, info.handle)
                call(cu.cuCtxSetCurrent, context)
                info.null_stream = call(cu.cuStreamCreate,
                                        int(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))
                if info.pools_supported:
                    pool = call(cu.cuDeviceGetDefaultMemPool, info.handle)
                    # Keep freed blocks in the pool: without this, the pool gives memory back
                    # to the OS at every synchronization and later allocations pay again.
                    call(cu.cuMemPoolSetAttribute, pool,
                         cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                         cu.cuuint64_t(2**64 - 1))
                info.context = context
    call(cu.cuCtxSetCurrent, info.context)
    cuda.local.ordinal = info.ordinal


def stream_handle(info: DeviceInfo, stream: Any = None) -> Any:
    """The CUstream for `stream` (a kernelc Stream, a CUstream, or None: the current one)."""
    if stream is None:
        stream = info.current_stream
        if stream is None:
            return info.null_stream
    handle = getattr(stream, "handle", stream)
    return handle if isinstance(handle, cu.CUstream) else cu.CUstream(int(handle))


def synchronize(ordinal: int) -> None:
    """Waits for all work on device `ordinal`, then releases what waited on that work."""
    info = state().devices[ordinal]
    if info.context is None:
        return  # never used: nothing can be outstanding
    device_info(ordinal)
    call(cu.cuCtxSynchronize)
    info.pending.clear()
    _flush_deferred_frees(info)


# ---- the caching allocator -----------------------------------------------------------------


class DeviceBlock:
    """Owns one device allocation; freeing is stream-ordered when the device has a pool."""

    __slots__ = ("ptr", "ordinal", "pooled", "__weakref__")

    def __init__(self, ptr: int, ordinal: int, pooled: bool) -> None:
        self.ptr = ptr
        self.ordinal = ordinal
        self.pooled = pooled

    def __del__(self) -> None:
        try:
            info = state().devices[self.ordinal]
            if info.capturing:
                # A free issued on a capturing stream would become a node of the graph.
                info.deferred_frees.append((self.ptr, self.pooled))
                return
            _free(info, self.ptr, self.pooled)
        except Exception:  # interpreter shutdown: the driver may already be gone
            pass


def _free(info: DeviceInfo, ptr: int, pooled: bool) -> None:
    device_info(info.ordinal)
    if pooled:
        # Stream-ordered on the current stream: the block returns to the pool once the work
        # queued before it has run, and the next allocation on that stream reuses it at once.
        call(cu.cuMemFreeAsync, ptr, stream_handle(info))
    else:
        call(cu.cuMemFree, ptr)


def _flush_deferred_frees(info: DeviceInfo) -> None:
    while info.deferred_frees and not info.capturing:
        entry = info.deferred_frees.pop()
        if callable(entry):  # memory of a custom allocator: its own release function
            entry()
        else:
            _free(info, *entry)


def end_capture(info: DeviceInfo) -> None:
    """Called by graph capture when a capture on `info` ends: issues the deferred frees."""
    info.capturing -= 1
    _flush_deferred_frees(info)


def _keep_alive(info: DeviceInfo, stream: Any, obj: Any) -> None:
    """Keeps host memory alive until an asynchronous transfer queued on `stream` has run."""
    if info.capturing:
        # Events recorded in a capture cannot be queried; hold on until the next synchronize.
        info.pending.append((None, obj))
        return
    event = make_event(info.ordinal, False, False)
    event.record(stream)
    info.pending = [(e, o) for e, o in info.pending if e is None or not e.query()]
    info.pending.append((event, obj))


def _host_address(arr: Any) -> tuple[int, bool]:
    """(address, page-locked) of a host array; pinned arrays are registered on first use."""
    if not getattr(arr, "pinned", False):
        return arr.ptr, False
    alloc = arr._alloc
    cuda = state()
    if id(alloc) not in cuda.registered and alloc.nbytes:
        # Registration makes the NumPy-owned memory page-locked, so copies are true DMA.
        call(cu.cuMemHostRegister, alloc.ptr, alloc.nbytes, 0)
        cuda.registered[id(alloc)] = alloc.ptr
        weakref.finalize(alloc, _unregister, cuda, id(alloc), alloc.ptr)
    return arr.ptr, True


def _unregister(cuda: CudaState, key: int, ptr: int) -> None:
    cuda.registered.pop(key, None)
    cu.cuMemHostUnregister(ptr)  # result ignored: may run during shutdown


class CudaBackend:
    """The `MemoryBackend` of CUDA devices (see kernelc.runtime.memory)."""

    def alloc(self, device: Any, nbytes: int, pinned: bool) -> Allocation:
        if nbytes == 0:
            return Allocation(0, 0, device, None)
        info = device_info(device)
        if info.capturing:
            raise RuntimeError(
                f"cannot allocate memory on {device} during a graph capture: allocate the "
                "arrays before the capture begins")
        pooled = info.pools_enabled
        if pooled:
            ptr = int(call(cu.cuMemAllocAsync, nbytes, stream_handle(info)))
        else:
            ptr = int(call(cu.cuMemAlloc, nbytes))
        return Allocation(ptr, nbytes, device, DeviceBlock(ptr, info.ordinal, pooled))

    def copy(self, dest: Any, src: Any) -> None:
        if dest.size == 0:
            return
        worker = dest.device if dest.device.is_cuda else src.device
        info = device_info(worker)
        stream = stream_handle(info)
        dest_ptr, dest_locked = (dest.ptr, True) if dest.device.is_cuda else _host_address(dest)
        src_ptr, src_locked = (src.ptr, True) if src.device.is_cuda else _host_address(src)
        if dest.is_contiguous and src.is_contiguous:
            _copy_linear(stream, dest.device.is_cuda, dest_ptr, src.device.is_cuda, src_ptr,
                         dest.size * dest.dtype.size)
        else:
            copy_strided(stream, (dest.device.is_cuda, dest_ptr, dest.strides),
                         (src.device.is_cuda, src_ptr, src.strides), dest.shape,
                         dest.dtype.size)
        self._finish(info, stream, dest, dest_locked, src, src_locked)

    @staticmethod
    def _finish(info: DeviceInfo, stream: Any, dest: Any, dest_locked: bool, src: Any,
                src_locked: bool) -> None:
        if dest.device.is_cpu and not dest_locked:
            call(cu.cuStreamSynchronize, stream)  # pageable host data is read right away
        elif dest.device.is_cpu:
            _keep_alive(info, stream, dest._alloc)  # pinned: asynchronous, as in Warp
        elif src.device.is_cpu and src_locked:
            _keep_alive(info, stream, src._alloc)

    def copy_bytes(self, dest: Any, dest_ptr: int, src: Any, src_ptr: int, nbytes: int) -> None:
        if nbytes == 0:
            return
        info = device_info(dest if dest.is_cuda else src)
        stream = stream_handle(info)
        _copy_linear(stream, dest.is_cuda, dest_ptr, src.is_cuda, src_ptr, nbytes)
        if dest.is_cpu:
            # No array to tell pinned memory apart here: wait, so the bytes are there.
            call(cu.cuStreamSynchronize, stream)

    def fill(self, dest: Any, value: np.ndarray) -> None:
        if dest.size == 0:
            return
        info = device_info(dest.device)
        stream = stream_handle(info)
        pattern = np.ascontiguousarray(value).tobytes()
        if dest.is_contiguous:
            fill_linear(stream, dest.ptr, pattern, dest.size)
            return
        # A strided view: fill a dense scratch block, then scatter it with a strided copy.
        scratch = self.alloc(dest.device, dest.size * len(pattern), False)
        fill_linear(stream, scratch.ptr, pattern, dest.size)
        dense = contiguous_strides(dest.shape, len(pattern))
        copy_strided(stream, (True, dest.ptr, dest.strides), (True, scratch.ptr, dense),
                     dest.shape, len(pattern))

    def to_numpy(self, src: Any) -> np.ndarray:
        np_dtype, inner = element_layout(src.dtype)
        out = np.empty(src.shape + inner, dtype=np_dtype)
        if src.size:
            info = device_info(src.device)
            stream = stream_handle(info)
            if src.is_contiguous:
                _copy_linear(stream, False, out.ctypes.data, True, src.ptr, out.nbytes)
            else:
                copy_strided(stream, (False, out.ctypes.data,
                                      contiguous_strides(src.shape, src.dtype.size)),
                             (True, src.ptr, src.strides), src.shape, src.dtype.size)
            call(cu.cuStreamSynchronize, stream)
        return out


def memory_backend() -> CudaBackend:
    """The CUDA memory backend (one per process, kept on the CUDA state)."""
    cuda = state()
    backend = getattr(cuda, "backend", None)
    if backend is None:
        backend = cuda.backend = CudaBackend()
    return backend


def _copy_linear(stream: Any, dest_is_device: bool, dest: int, src_is_device: bool, src: int,
                 nbytes: int) -> None:
    if dest_is_device and src_is_device:
        call(cu.cuMemcpyDtoDAsync, dest, src, nbytes, stream)
    elif dest_is_device:
        call(cu.cuMemcpyHtoDAsync, dest, src, nbytes, stream)
    elif src_is_device:
        call(cu.cuMemcpyDtoHAsync, dest, src, nbytes, stream)
    else:
        ctypes.memmove(dest, src, nbytes)


def plan_strided(shape: tuple[int, ...], dest_strides: tuple[int, ...],
                 src_strides: tuple[int, ...], itemsize: int) -> tuple[int, int, int, int, int]:
    """How a strided copy maps onto 2-D copies: (width, height, dest pitch, src pitch, axes).

    Rows are whole innermost extents when both sides store them densely, else single
    elements; `axes` is how many trailing axes one 2-D copy covers (the rest loop on the
    host). Raises ValueError for layouts no 2-D copy can express (overlapping rows).
    """
    if len(shape) >= 2 and dest_strides[-1] == src_strides[-1] == itemsize:
        width = shape[-1] * itemsize
        plan = (width, shape[-2], dest_strides[-2], src_strides[-2], 2)
    else:
        plan = (itemsize, shape[-1], dest_strides[-1], src_strides[-1], 1)
    width, height, dest_pitch, src_pitch, axes = plan
    if height > 1 and (dest_pitch < width or src_pitch < width):
        if axes == 2:  # e.g. a transposed view: fall back to element rows
            return (itemsize, shape[-1], dest_strides[-1], src_strides[-1], 1) if min(
                dest_strides[-1], src_strides[-1]) >= itemsize else _bad_layout(shape)
        _bad_layout(shape)
    return plan


def _bad_layout(shape: tuple[int, ...]) -> Any:
    raise ValueError(f"cannot copy an array of shape {shape} whose elements overlap")


def copy_strided(stream: Any, dest: tuple[bool, int, tuple[int, ...]],
                 src: tuple[bool, int, tuple[int, ...]], shape: tuple[int, ...],
                 itemsize: int) -> None:
    """Copies between two strided layouts with cuMemcpy2DAsync, one call per outer index.

    Args:
        stream: The CUstream.
        dest: (is device memory, address of element 0, byte strides).
        src: The same for the source.
        shape: The common shape.
        itemsize: Bytes per element.
    """
    width, height, dest_pitch, src_pitch, axes = plan_strided(shape, dest[2], src[2], itemsize)
    params = cu.CUDA_MEMCPY2D()
    params.WidthInBytes = width
    params.Height = height
    params.dstPitch = max(dest_pitch, width) if height == 1 else dest_pitch
    params.srcPitch = max(src_pitch, width) if height == 1 else src_pitch
    params.dstMemoryType = _DEVICE if dest[0] else _HOST
    params.srcMemoryType = _DEVICE if src[0] else _HOST
    outer = shape[:len(shape) - axes]
    for index in np.ndindex(*outer) if outer else [()]:
        dest_ptr = dest[1] + sum(i * s for i, s in zip(index, dest[2]))
        src_ptr = src[1] + sum(i * s for i, s in zip(index, src[2]))
        if dest[0]:
            params.dstDevice = dest_ptr
        else:
            params.dstHost = dest_ptr
        if src[0]:
            params.srcDevice = src_ptr
        else:
            params.srcHost = src_ptr
        call(cu.cuMemcpy2DAsync, params, stream)


def fill_linear(stream: Any, ptr: int, pattern: bytes, count: int) -> None:
    """Sets `count` consecutive elements at `ptr` to `pattern` (one element's bytes).

    One memset when the pattern is a repeated byte, 16-bit or 32-bit word; otherwise the
    element is copied in once and then doubled with device-to-device copies (log2(count)
    copies, and no host buffer the size of the array).
    """
    size = len(pattern)
    nbytes = size * count
    if pattern == pattern[:1] * size:
        call(cu.cuMemsetD8Async, ptr, pattern[0], nbytes, stream)
    elif size % 4 == 0 and ptr % 4 == 0 and pattern == pattern[:4] * (size // 4):
        call(cu.cuMemsetD32Async, ptr, int.from_bytes(pattern[:4], "little"), nbytes // 4,
             stream)
    elif size % 2 == 0 and ptr % 2 == 0 and pattern == pattern[:2] * (size // 2):
        call(cu.cuMemsetD16Async, ptr, int.from_bytes(pattern[:2], "little"), nbytes // 2,
             stream)
    else:
        seed = np.frombuffer(pattern, dtype=np.uint8).copy()
        call(cu.cuMemcpyHtoDAsync, ptr, seed.ctypes.data, size, stream)
        # The driver stages pageable memory before returning, so `seed` may go now.
        done = size
        while done < nbytes:
            step = min(done, nbytes - done)
            call(cu.cuMemcpyDtoDAsync, ptr + done, ptr, step, stream)
            done += step


# ---- events --------------------------------------------------------------------------------


class CudaEventImpl:
    """A CUDA event, following kernelc.timing.events.EventImpl."""

    __slots__ = ("info", "handle", "timing", "__weakref__")

    def __init__(self, info: DeviceInfo, enable_timing: bool, interprocess: bool) -> None:
        flags = 0 if enable_timing else int(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        if interprocess:
            flags |= int(cu.CUevent_flags.CU_EVENT_INTERPROCESS)
        self.info = info
        self.timing = enable_timing
        self.handle = call(cu.cuEventCreate, flags)

    def record(self, stream: Any = None) -> None:
        device_info(self.info.ordinal)
        handle = stream_handle(self.info, stream)
        if self.timing and self.info.capturing:
            # Captured as a node that records the event at each replay, so that a timing
            # event recorded in a capture times the graph's launches (a plain record would
            # only order the capture's streams).
            call(cu.cuEventRecordWithFlags, self.handle, handle,
                 int(cu.CUevent_record_flags.CU_EVENT_RECORD_EXTERNAL))
            return
        call(cu.cuEventRecord, self.handle, handle)

    def query(self) -> bool:
        (result,) = cu.cuEventQuery(self.handle)
        if result == _NOT_READY:
            return False
        if result != _SUCCESS:
            raise CudaError(f"cuEventQuery failed with {error_text(result)}")
        return True

    def synchronize(self) -> None:
        call(cu.cuEventSynchronize, self.handle)  # the bindings release the GIL

    def wait(self, stream: Any = None) -> None:
        device_info(self.info.ordinal)
        call(cu.cuStreamWaitEvent, stream_handle(self.info, stream), self.handle, 0)

    def elapsed_time(self, end: Any) -> float:
        if not isinstance(end, CudaEventImpl):
            raise ValueError("cannot time between a CUDA event and an event on another device")
        return float(call(cu.cuEventElapsedTime, self.handle, end.handle))

    def __del__(self) -> None:
        try:
            cu.cuEventDestroy(self.handle)
        except Exception:  # interpreter shutdown
            pass


def make_event(device: Any, enable_timing: bool, interprocess: bool) -> CudaEventImpl:
    """The event factory registered as `rt.extras["cuda_event_factory"]`."""
    if isinstance(device, str):  # an alias such as "cuda:1" ("cuda": the first device)
        ordinal = int(device.partition(":")[2] or 0)
    else:
        ordinal = device if isinstance(device, int) else device.ordinal
    return CudaEventImpl(device_info(ordinal), enable_timing, interprocess)
