"""`kc.MemoryKind` and `array.memory_kind`: what kind of memory backs an array.

The answer describes how the memory was allocated (ordinary host memory, pinned host
memory, plain device memory, a memory pool, managed memory), not where its pages are now
or who may access them. Host arrays answer from their `pinned` flag; device arrays ask the
CUDA driver about their address, so memory from a custom allocator or another framework
is classified too. The values are Warp's, so code comparing them with ints keeps working.
"""

from __future__ import annotations

import enum
from typing import Any


class MemoryKind(enum.IntEnum):
    """The kind of memory behind an array (`array.memory_kind`), as Warp numbers them."""

    UNKNOWN = 0
    """Not classifiable: an array annotation without memory, or an address the driver does
    not know."""

    HOST = 1
    """Ordinary host memory."""

    PINNED = 2
    """Page-locked host memory (`pinned=True`)."""

    CUDA_DEVICE = 3
    """CUDA device memory from neither a memory pool nor the managed allocator."""

    CUDA_MEMPOOL = 4
    """CUDA device memory from a memory pool (kernelc's default where pools exist)."""

    CUDA_MANAGED = 5
    """CUDA managed (unified) memory, e.g. from `kc.CudaManagedAllocator`."""


def memory_kind_of(arr: Any) -> MemoryKind:
    """The `MemoryKind` of a kernelc array (views answer for the memory they look into)."""
    device = arr.device
    if device is None:  # an annotation such as kc.array(dtype=float)
        return MemoryKind.UNKNOWN
    if device.is_cpu:
        return MemoryKind.PINNED if arr.pinned else MemoryKind.HOST
    alloc = arr._alloc
    ptr = alloc.ptr if alloc is not None else arr.ptr
    if not ptr:  # an empty array may have no address to ask about
        return MemoryKind.UNKNOWN
    return _cuda_memory_kind(device, int(ptr))


def _cuda_memory_kind(device: Any, ptr: int) -> MemoryKind:
    from kernelc.runtime.device import cuda_runtime

    cuda = cuda_runtime()
    cuda.device_info(device)  # its context current: the driver answers for that context
    attr = cuda.cu.CUpointer_attribute
    try:
        managed = cuda.call(cuda.cu.cuPointerGetAttribute,
                            attr.CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr)
    except cuda.CudaError:  # an address the driver did not allocate or map
        return MemoryKind.UNKNOWN
    if managed:
        return MemoryKind.CUDA_MANAGED
    try:
        pool = cuda.call(cuda.cu.cuPointerGetAttribute,
                         attr.CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, ptr)
    except cuda.CudaError:  # drivers without the attribute: no pool to name
        return MemoryKind.CUDA_DEVICE
    return MemoryKind.CUDA_MEMPOOL if int(pool) else MemoryKind.CUDA_DEVICE
