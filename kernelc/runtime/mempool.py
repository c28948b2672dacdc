"""Warp's memory-pool and peer-access queries.

kernelc allocates CUDA memory from the device's stream-ordered memory pool wherever the
device supports one (see `cuda.py`); these functions report and adjust that, with Warp's
names and errors. CPU memory has no pool: the queries answer False and the setters raise.
"""

from __future__ import annotations

from typing import Any

from kernelc.runtime.device import Device, get_device

Devicelike = Device | str | None


def _cuda_info(device: Devicelike) -> Any:
    dev = get_device(device)
    if not dev.is_cuda:
        raise ValueError("Memory pools are only supported on CUDA devices")
    from kernelc.runtime import cuda

    return cuda.device_info(dev)


def _pool_attribute(device: Devicelike, name: str, value: int | None = None) -> int:
    from kernelc.runtime import cuda

    info = _cuda_info(device)
    if not info.pools_supported:
        raise RuntimeError(f"device {get_device(device).alias} does not support memory pools")
    cu = cuda.cu
    pool = cuda.call(cu.cuDeviceGetDefaultMemPool, info.handle)
    attribute = getattr(cu.CUmemPool_attribute, name)
    if value is not None:
        cuda.call(cu.cuMemPoolSetAttribute, pool, attribute, cu.cuuint64_t(value))
        return value
    return int(cuda.call(cu.cuMemPoolGetAttribute, pool, attribute))


def is_mempool_supported(device: Devicelike) -> bool:
    """Whether `device` has a stream-ordered memory pool (False on the CPU)."""
    dev = get_device(device)
    return bool(dev.is_cuda and _cuda_info(dev).pools_supported)


def is_mempool_enabled(device: Devicelike) -> bool:
    """Whether allocations on `device` come from its memory pool (False on the CPU)."""
    dev = get_device(device)
    return bool(dev.is_cuda and _cuda_info(dev).pools_enabled)


def set_mempool_enabled(device: Devicelike, enable: bool) -> None:
    """Allocates later arrays on `device` from its memory pool (True) or directly (False).

    Raises:
        ValueError: `device` is not a CUDA device.
        RuntimeError: enabling on a device without memory pools.
    """
    info = _cuda_info(device)
    if enable and not info.pools_supported:
        raise RuntimeError(f"device {get_device(device).alias} does not support memory pools")
    info.pools_enabled = bool(enable)


def set_mempool_release_threshold(device: Devicelike, threshold: int | float) -> None:
    """Bytes the pool keeps after a synchronization; a float in [0, 1] is a fraction of the
    device's memory. kernelc's default keeps everything (freed blocks are reused at once)."""
    info = _cuda_info(device)
    if isinstance(threshold, float) and 0.0 <= threshold <= 1.0:
        threshold = int(threshold * info.total_memory)
    if threshold < 0:
        raise ValueError(f"the release threshold must not be negative, got {threshold}")
    _pool_attribute(device, "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD", int(threshold))


def get_mempool_release_threshold(device: Devicelike) -> int:
    """The pool's release threshold in bytes."""
    return _pool_attribute(device, "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD")


def get_mempool_used_mem_current(device: Devicelike) -> int:
    """Bytes of the pool now in use by allocations."""
    return _pool_attribute(device, "CU_MEMPOOL_ATTR_USED_MEM_CURRENT")


def get_mempool_used_mem_high(device: Devicelike) -> int:
    """The most bytes of the pool in use at once since the process started."""
    return _pool_attribute(device, "CU_MEMPOOL_ATTR_USED_MEM_HIGH")


def is_peer_access_supported(target_device: Devicelike, peer_device: Devicelike) -> bool:
    """Whether `peer_device` can read `target_device`'s memory directly (CUDA only)."""
    target, peer = get_device(target_device), get_device(peer_device)
    if not (target.is_cuda and peer.is_cuda):
        return False
    if target == peer:
        return True
    from kernelc.runtime import cuda

    t, p = cuda.device_info(target), cuda.device_info(peer)
    return bool(cuda.call(cuda.cu.cuDeviceCanAccessPeer, p.handle, t.handle))


def is_device_available(device: Devicelike) -> bool:
    """Whether `device` names a device this process can use."""
    try:
        get_device(device)
    except (RuntimeError, ValueError, TypeError):
        return False
    return True


def get_cuda_device(ordinal: int | None = None) -> Device:
    """The CUDA device `ordinal` (None: the current CUDA device)."""
    return get_device("cuda" if ordinal is None else f"cuda:{ordinal}")
