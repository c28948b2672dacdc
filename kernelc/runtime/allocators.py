"""Custom memory allocators (Warp's allocator protocol) and the built-in allocator objects.

An allocator is any object with `allocate(size_in_bytes) -> int` (the address of new memory)
and `deallocate(ptr, size_in_bytes)`. `set_device_allocator` / `ScopedAllocator` install one
per device; `kernelc.runtime.memory.allocate` then calls it for every new array on that
device, and the array's memory goes back through the same allocator's `deallocate` when
the last view of it is gone, even if another allocator has been installed meanwhile.

The built-in allocators (`Device.default_allocator`, ...) are objects of this protocol too,
so a custom allocator can wrap one. Arrays allocated without a custom allocator do not go
through them: the memory backends allocate directly, which keeps that path as fast as before.
Warp allows custom allocators on CUDA devices only; kernelc also accepts them on the CPU
(for ordinary host memory; pinned arrays keep the built-in pinned allocator).
"""

from __future__ import annotations

import operator
import sys
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from kernelc.runtime.device import Device, cuda_runtime, get_cuda_devices, get_device
from kernelc.runtime.memory_kind import MemoryKind

if TYPE_CHECKING:
    from kernelc.runtime.memory import Allocation

Devicelike = Device | str | None


@runtime_checkable
class Allocator(Protocol):
    """What an allocator implements (Warp's `wp.Allocator`).

    Any object with these two methods can be installed with `kc.set_device_allocator`,
    `kc.set_cuda_allocator` or `kc.ScopedAllocator`.
    """

    def allocate(self, size_in_bytes: int) -> int:
        """Allocates `size_in_bytes` bytes (never 0) and returns their address as an int."""
        ...

    def deallocate(self, ptr: int, size_in_bytes: int) -> None:
        """Frees memory that `allocate` returned; `size_in_bytes` is the size asked for."""
        ...


def validate_allocator(allocator: Any) -> None:
    """Raises TypeError unless `allocator` is None or implements the allocator protocol."""
    if allocator is None:
        return
    if isinstance(allocator, type):
        raise TypeError(f"expected an allocator object, got the class {allocator.__name__}; "
                        f"pass an instance, e.g. {allocator.__name__}(...)")
    missing = [f"{name}()" for name in ("allocate", "deallocate")
               if not callable(getattr(allocator, name, None))]
    if missing:
        raise TypeError(
            f"{type(allocator).__name__} object is not an allocator: {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} missing or not callable (an allocator "
            f"has allocate(size_in_bytes) -> int and deallocate(ptr, size_in_bytes) -> None)")


# ---- the built-in allocators ---------------------------------------------------------------


class CpuDefaultAllocator:
    """Ordinary host memory, 64-byte aligned (what CPU arrays use by default)."""

    def __init__(self, device: Device) -> None:
        if not device.is_cpu:
            raise ValueError(f"CpuDefaultAllocator needs the CPU device, got {device}")
        self.device = device
        self._blocks: dict[int, Any] = {}  # address -> the NumPy buffer that owns it

    def allocate(self, size_in_bytes: int) -> int:
        from kernelc.runtime.memory import _CPU_BACKEND

        block = _CPU_BACKEND.alloc(self.device, _size(size_in_bytes), False)
        self._blocks[block.ptr] = block.owner
        return block.ptr

    def deallocate(self, ptr: int, size_in_bytes: int) -> None:
        if self._blocks.pop(int(ptr), None) is None:
            raise ValueError(f"0x{int(ptr):x} was not allocated by this allocator, or was "
                             f"freed already")


class CpuPinnedAllocator(CpuDefaultAllocator):
    """Host memory for pinned arrays. kernelc page-locks it (cuMemHostRegister) when an
    array over it is first copied to or from a GPU; without a GPU it is ordinary memory."""


class CudaDefaultAllocator:
    """Device memory from `cuMemAlloc` / `cuMemFree` (no memory pool)."""

    def __init__(self, device: Device) -> None:
        if not device.is_cuda:
            raise ValueError(f"CudaDefaultAllocator needs a CUDA device, got {device}")
        self.device = device

    def allocate(self, size_in_bytes: int) -> int:
        cuda = cuda_runtime()
        cuda.device_info(self.device)  # its context current on this thread
        return int(cuda.call(cuda.cu.cuMemAlloc, _size(size_in_bytes)))

    def deallocate(self, ptr: int, size_in_bytes: int) -> None:
        cuda = cuda_runtime()
        cuda.device_info(self.device)
        cuda.call(cuda.cu.cuMemFree, int(ptr))


class CudaMempoolAllocator:
    """Device memory from the device's memory pool, ordered on the current stream
    (`cuMemAllocAsync` / `cuMemFreeAsync`)."""

    def __init__(self, device: Device) -> None:
        if not device.is_cuda:
            raise ValueError(f"CudaMempoolAllocator needs a CUDA device, got {device}")
        self.device = device

    def allocate(self, size_in_bytes: int) -> int:
        cuda = cuda_runtime()
        info = cuda.device_info(self.device)
        return int(cuda.call(cuda.cu.cuMemAllocAsync, _size(size_in_bytes),
                             cuda.stream_handle(info)))

    def deallocate(self, ptr: int, size_in_bytes: int) -> None:
        cuda = cuda_runtime()
        info = cuda.device_info(self.device)
        cuda.call(cuda.cu.cuMemFreeAsync, int(ptr), cuda.stream_handle(info))


class CudaManagedAllocator:
    """CUDA managed (unified) memory from `cuMemAllocManaged`, for any CUDA device.

    Not bound to one device: kernelc makes the array's device current before calling
    `allocate`, which allocates in the current CUDA context. Install it with
    `kc.set_device_allocator("cuda:0", kc.CudaManagedAllocator())` or `kc.ScopedAllocator`.
    As with any custom allocator, allocate the arrays before a graph capture begins.
    """

    memory_kind = MemoryKind.CUDA_MANAGED

    def allocate(self, size_in_bytes: int) -> int:
        """Allocates managed memory in the current CUDA context and returns its address.

        Raises:
            RuntimeError: CUDA is unavailable, no CUDA context is current, or the device
                cannot allocate managed memory.
        """
        cuda = cuda_runtime()
        size = _size(size_in_bytes)
        if not int(cuda.call(cuda.cu.cuCtxGetCurrent)):
            raise RuntimeError("CudaManagedAllocator.allocate() needs a current CUDA context: "
                               "install it on a device with kc.set_device_allocator or "
                               "kc.ScopedAllocator and allocate arrays there")
        ordinal = int(cuda.call(cuda.cu.cuCtxGetDevice))
        info = cuda.device_info(ordinal)
        if not info.attribute(cuda.cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY):
            raise RuntimeError(f"CudaManagedAllocator: device cuda:{ordinal} cannot allocate "
                               f"CUDA managed memory")
        flags = int(cuda.cu.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL)
        return int(cuda.call(cuda.cu.cuMemAllocManaged, size, flags))

    def deallocate(self, ptr: int, size_in_bytes: int) -> None:
        """Frees memory from `allocate` (cuMemFree waits for work using it first)."""
        if not ptr:
            return
        cuda = cuda_runtime()
        cuda.call(cuda.cu.cuMemFree, int(ptr))


def _size(size_in_bytes: int) -> int:
    size = operator.index(size_in_bytes)
    if size < 0:
        raise ValueError(f"cannot allocate a negative number of bytes ({size})")
    return size


def builtin_allocator(device: Device, which: str) -> Any:
    """The device's built-in allocator `which` ("default", "pinned" or "mempool"), created
    once per device; None for "mempool" on a device without memory pools."""
    table = device._allocators
    if table is None:
        table = device._allocators = {}
    found = table.get(which)
    if found is None and which not in table:
        if device.is_cpu:
            found = {"default": CpuDefaultAllocator, "pinned": CpuPinnedAllocator}[which](device)
        elif which == "mempool":
            pools = cuda_runtime().device_info(device).pools_supported
            found = CudaMempoolAllocator(device) if pools else None
        else:
            found = CudaDefaultAllocator(device)  # pinned= is ignored on CUDA, as in Warp
        table[which] = found
    return found


def device_allocator(device: Device, pinned: bool = False) -> Any:
    """`Device.get_allocator`: the custom allocator if one is set, else the built-in one
    that the device's arrays use now."""
    if device.is_cpu:
        if pinned:
            return builtin_allocator(device, "pinned")
        custom = device._custom_allocator
        return builtin_allocator(device, "default") if custom is None else custom
    if device._custom_allocator is not None:
        return device._custom_allocator
    pools = cuda_runtime().device_info(device).pools_enabled
    return builtin_allocator(device, "mempool" if pools else "default")


# ---- arrays from a custom allocator --------------------------------------------------------


class CustomBlock:
    """Owns memory from a custom allocator; gives it back through that allocator's
    `deallocate` when the allocation (and so every array view of it) is gone."""

    __slots__ = ("deallocate", "ptr", "nbytes", "device")

    def __init__(self, deallocate: Any, ptr: int, nbytes: int, device: Device) -> None:
        self.deallocate = deallocate
        self.ptr = ptr
        self.nbytes = nbytes
        self.device = device

    def release(self) -> None:
        if self.device.is_cuda:
            cuda_runtime().device_info(self.device)  # the allocator may expect its context
        self.deallocate(self.ptr, self.nbytes)

    def __del__(self) -> None:
        if sys.is_finalizing():
            return  # interpreter shutdown: the allocator (or the driver) may be gone already
        if self.device.is_cuda:
            try:
                info = cuda_runtime().device_info(self.device)
            except Exception:  # interpreter shutdown: the driver may be gone already
                return
            if info.capturing:
                # A free during a graph capture would become part of the graph: wait.
                info.deferred_frees.append(self.release)
                return
        self.release()


def _address(ptr: Any) -> int | None:
    """`ptr` as an int: ints, NumPy integers, and handles with `__int__` such as
    cuda-python's `CUdeviceptr`; None for anything else (a float or a string is a bug)."""
    try:
        return operator.index(ptr)
    except TypeError:
        if isinstance(ptr, (float, complex, str, bytes)) or not hasattr(type(ptr), "__int__"):
            return None
        return int(ptr)


def allocate_custom(allocator: Any, device: Device, nbytes: int) -> Allocation:
    """New memory of `nbytes` (> 0) bytes on `device` from a custom `allocator`."""
    from kernelc.runtime.memory import Allocation

    name = type(allocator).__name__
    # Looked up first, so a broken deallocate cannot leak the memory allocate returns.
    deallocate = allocator.deallocate
    if device.is_cuda and cuda_runtime().device_info(device).capturing:
        raise RuntimeError(f"cannot allocate memory on {device} during a graph capture: "
                           f"allocate the arrays before the capture begins")
    ptr = allocator.allocate(nbytes)
    address = _address(ptr)
    if address is None:
        raise TypeError(f"{name}.allocate({nbytes}) returned {ptr!r}; an allocator must "
                        f"return the address of the new memory as an int")
    if address <= 0:
        raise RuntimeError(f"{name}.allocate({nbytes}) returned the null or invalid address "
                           f"{address} on {device}")
    return Allocation(address, nbytes, device, CustomBlock(deallocate, address, nbytes, device))


# ---- the public functions ------------------------------------------------------------------


def set_device_allocator(device: Devicelike, allocator: Allocator | None) -> None:
    """Allocates later arrays on `device` through `allocator` (None: the built-in one).

    Arrays keep the allocator they were allocated with: they are freed through its
    `deallocate` even after the device's allocator changes. Warp accepts CUDA devices only;
    on the CPU kernelc uses the allocator for ordinary (not pinned) host arrays.

    Args:
        device: The device (a Device, "cpu", "cuda:N", or None for the current device).
        allocator: An object with `allocate(size_in_bytes) -> int` and
            `deallocate(ptr, size_in_bytes)`, or None.

    Raises:
        TypeError: `allocator` does not implement that protocol.
    """
    dev = get_device(device)
    validate_allocator(allocator)
    dev._custom_allocator = allocator


def set_cuda_allocator(allocator: Allocator | None) -> None:
    """`set_device_allocator` for every CUDA device.

    Raises:
        RuntimeError: There is no CUDA device.
        TypeError: `allocator` does not implement the allocator protocol.
    """
    validate_allocator(allocator)
    devices = get_cuda_devices()
    if not devices:
        raise RuntimeError("set_cuda_allocator: there is no CUDA device")
    for dev in devices:
        dev._custom_allocator = allocator


def get_device_allocator(device: Devicelike) -> Any:
    """The allocator new arrays on `device` come from (`Device.get_allocator()`)."""
    return get_device(device).get_allocator()


class ScopedAllocator:
    """Sets a device's allocator inside a `with` block and restores the previous one after.

    Example:
        >>> with kc.ScopedAllocator("cuda:0", my_allocator):
        ...     a = kc.zeros(1000, device="cuda:0")  # from my_allocator

    Args:
        device: The device.
        allocator: The allocator to use, or None for the built-in one.

    Raises:
        TypeError: `allocator` does not implement the allocator protocol.
    """

    def __init__(self, device: Devicelike, allocator: Allocator | None) -> None:
        self.device = get_device(device)
        validate_allocator(allocator)
        self.allocator = allocator
        self._saved: Any = None

    def __enter__(self) -> ScopedAllocator:
        self._saved = self.device._custom_allocator
        self.device._custom_allocator = self.allocator
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.device._custom_allocator = self._saved
