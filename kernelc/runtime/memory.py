"""Device memory behind one small interface: allocate, copy, fill, read back.

`kernelc.runtime.array` never touches memory itself; it calls the functions at the bottom
of this file, which pick the backend of the device doing the work and report the operation
to the activity recorder. The CPU backend is NumPy over 64-byte-aligned host buffers. A
CUDA backend plugs in by giving `kernelc.runtime.cuda` a `memory_backend()` function that
returns an object with the `MemoryBackend` methods.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, Callable, Protocol

import numpy as np

from kernelc.runtime.context import get_runtime
from kernelc.runtime.device import Device, cuda_runtime
from kernelc.timing.flags import TIMING_MEMCPY, TIMING_MEMSET

if TYPE_CHECKING:
    from kernelc.runtime.array import array

# Cache-line alignment: SIMD loads in generated CPU code never straddle a line at element 0.
ALIGNMENT = 64


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
        start = -raw.ctypes.data % ALIGNMENT
        buffer = raw[start:start + nbytes]
        return Allocation(buffer.ctypes.data, nbytes, device, buffer)

    def copy(self, dest: array, src: array) -> None:
        # copyto detects overlapping memory and goes through a temporary when needed.
        np.copyto(dest.numpy(), src.numpy(), casting="no")

    def copy_bytes(self, dest: Device, dest_ptr: int, src: Device, src_ptr: int,
                   nbytes: int) -> None:
        ctypes.memmove(dest_ptr, src_ptr, nbytes)

    def fill(self, dest: array, value: np.ndarray) -> None:
        dest.numpy()[...] = value

    def to_numpy(self, src: array) -> np.ndarray:
        return np.array(src.numpy(), copy=True)


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


def allocate(device: Device, nbytes: int, pinned: bool = False) -> Allocation:
    """New uninitialised memory of `nbytes` bytes on `device`."""
    return backend(device).alloc(device, nbytes, pinned)


def copy_array(dest: array, src: array) -> None:
    """Copies `src` into `dest` (same shape and dtype, any strides, any devices)."""
    worker, name = _copy_route(dest.device, src.device)
    timed(TIMING_MEMCPY, worker, name, backend(worker).copy, dest, src)


def copy_bytes(dest: Device, dest_ptr: int, src: Device, src_ptr: int, nbytes: int) -> None:
    """Copies `nbytes` contiguous bytes between two addresses."""
    worker, name = _copy_route(dest, src)
    timed(TIMING_MEMCPY, worker, name, backend(worker).copy_bytes,
          dest, dest_ptr, src, src_ptr, nbytes)


def fill_array(dest: array, value: np.ndarray) -> None:
    """Sets every element of `dest` to `value` (a NumPy array of one element's shape)."""
    device = dest.device
    timed(TIMING_MEMSET, device, "memset", backend(device).fill, dest, value)


def to_host(src: array) -> np.ndarray:
    """A host NumPy copy of a device array (device to host transfer)."""
    device = src.device
    return timed(TIMING_MEMCPY, device, "memcpy DtoH", backend(device).to_numpy, src)
