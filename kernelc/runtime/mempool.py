"""Warp's memory-pool and peer-access queries and switches.

kernelc allocates CUDA memory from the device's stream-ordered memory pool wherever the
device supports one (see `cuda.py`); these functions report and adjust that, with Warp's
names and errors. CPU memory has no pool and no peers: the queries answer False, turning
something off is a no-op, and turning it on raises ValueError, as in Warp.

Peer access (`cuCtxEnablePeerAccess`) covers memory from the default allocator; memory-pool
access (`cuMemPoolSetAccess`) covers pool allocations. A device always reaches its own
memory, so on one GPU both are simply on.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from kernelc.runtime.device import Device, get_device

DeviceLike = Device | str | None
"""What names a device: a `Device`, `"cpu"`, `"cuda"`, `"cuda:N"`, or None (the current one)."""


def _cuda_info(device: DeviceLike) -> Any:
    dev = get_device(device)
    if not dev.is_cuda:
        raise ValueError("Memory pools are only supported on CUDA devices")
    from kernelc.runtime import cuda

    return cuda.device_info(dev)


def _pool_attribute(device: DeviceLike, name: str, value: int | None = None) -> int:
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


def is_mempool_supported(device: DeviceLike) -> bool:
    """Whether `device` has a stream-ordered memory pool (False on the CPU)."""
    dev = get_device(device)
    return bool(dev.is_cuda and _cuda_info(dev).pools_supported)


def is_mempool_enabled(device: DeviceLike) -> bool:
    """Whether allocations on `device` come from its memory pool (False on the CPU)."""
    dev = get_device(device)
    return bool(dev.is_cuda and _cuda_info(dev).pools_enabled)


def set_mempool_enabled(device: DeviceLike, enable: bool) -> None:
    """Allocates later arrays on `device` from its memory pool (True) or directly (False).

    Raises:
        ValueError: enabling on a device that is not a CUDA device.
        RuntimeError: enabling on a device without memory pools.
    """
    if not enable and not get_device(device).is_cuda:
        return  # nothing to turn off (Warp accepts this too)
    info = _cuda_info(device)
    if enable and not info.pools_supported:
        raise RuntimeError(f"device {get_device(device).alias} does not support memory pools")
    info.pools_enabled = bool(enable)


def set_mempool_release_threshold(device: DeviceLike, threshold: int | float) -> None:
    """Bytes the pool keeps after a synchronization; a float in [0, 1] is a fraction of the
    device's memory. kernelc's default keeps everything (freed blocks are reused at once)."""
    info = _cuda_info(device)
    if isinstance(threshold, float) and 0.0 <= threshold <= 1.0:
        threshold = int(threshold * info.total_memory)
    if threshold < 0:
        raise ValueError(f"the release threshold must not be negative, got {threshold}")
    _pool_attribute(device, "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD", int(threshold))


def get_mempool_release_threshold(device: DeviceLike) -> int:
    """The pool's release threshold in bytes."""
    return _pool_attribute(device, "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD")


def get_mempool_used_mem_current(device: DeviceLike) -> int:
    """Bytes of the pool now in use by allocations."""
    return _pool_attribute(device, "CU_MEMPOOL_ATTR_USED_MEM_CURRENT")


def get_mempool_used_mem_high(device: DeviceLike) -> int:
    """The most bytes of the pool in use at once since the process started."""
    return _pool_attribute(device, "CU_MEMPOOL_ATTR_USED_MEM_HIGH")


def is_peer_access_supported(target_device: DeviceLike, peer_device: DeviceLike) -> bool:
    """Whether `peer_device` can read `target_device`'s memory directly (CUDA only)."""
    target, peer = get_device(target_device), get_device(peer_device)
    if not (target.is_cuda and peer.is_cuda):
        return False
    if target == peer:
        return True
    from kernelc.runtime import cuda

    t, p = cuda.device_info(target), cuda.device_info(peer)
    return bool(cuda.call(cuda.cu.cuDeviceCanAccessPeer, p.handle, t.handle))


def _peer_state() -> dict[tuple[int, int], bool]:
    # (target ordinal, peer ordinal) -> whether kernelc turned peer access on. The driver
    # has no query for it, and it is off until someone enables it.
    from kernelc.runtime.context import get_runtime

    return get_runtime().extras.setdefault("peer_access", {})


def _pair(target_device: DeviceLike, peer_device: DeviceLike, what: str,
          enable: bool) -> tuple[Device, Device] | None:
    """Both devices if both are CUDA devices; None (nothing to do) when access is being
    turned off and one is not; ValueError when it is being turned on."""
    target, peer = get_device(target_device), get_device(peer_device)
    if target.is_cuda and peer.is_cuda:
        return target, peer
    if enable:
        raise ValueError(f"{what} is only supported between CUDA devices")
    return None


def is_peer_access_enabled(target_device: DeviceLike, peer_device: DeviceLike) -> bool:
    """Whether `peer_device` can now access `target_device`'s memory from the default
    allocator (a device always reaches its own; False unless both are CUDA devices)."""
    target, peer = get_device(target_device), get_device(peer_device)
    if not (target.is_cuda and peer.is_cuda):
        return False
    if target == peer:
        return True
    return _peer_state().get((target.ordinal, peer.ordinal), False)


def set_peer_access_enabled(target_device: DeviceLike, peer_device: DeviceLike,
                            enable: bool) -> None:
    """Lets `peer_device` access `target_device`'s memory directly (True), or stops it.

    Covers memory from the default allocator; pool allocations need
    `set_mempool_access_enabled`. Faster peer-to-peer copies, at some cost in memory use
    and allocation speed.

    Raises:
        ValueError: enabling when one of the devices is not a CUDA device.
        RuntimeError: enabling between GPUs that cannot reach each other, or the driver
            refused.
    """
    pair = _pair(target_device, peer_device, "Peer access", enable)
    if pair is None or pair[0] == pair[1]:
        return
    target, peer = pair
    if not is_peer_access_supported(target, peer):
        if enable:
            raise RuntimeError(f"device {peer.alias} cannot access device {target.alias}")
        return
    from kernelc.runtime import cuda

    cu = cuda.cu
    context = cuda.device_info(target).context
    cuda.device_info(peer)  # the call applies to the current context: the peer's
    if enable:
        (result,) = cu.cuCtxEnablePeerAccess(context, 0)
        done = cu.CUresult.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
    else:
        (result,) = cu.cuCtxDisablePeerAccess(context)
        done = cu.CUresult.CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
    if result not in (cu.CUresult.CUDA_SUCCESS, done):
        action = "enable" if enable else "disable"
        raise RuntimeError(f"failed to {action} peer access from {peer.alias} to "
                           f"{target.alias}: {cuda.error_text(result)}")
    _peer_state()[(target.ordinal, peer.ordinal)] = bool(enable)


def is_mempool_access_supported(target_device: DeviceLike, peer_device: DeviceLike) -> bool:
    """Whether `peer_device` can be given access to `target_device`'s memory pool."""
    return is_mempool_supported(target_device) and is_peer_access_supported(target_device,
                                                                             peer_device)


def _location(device: Device) -> Any:
    from kernelc.runtime import cuda

    location = cuda.cu.CUmemLocation()
    location.type = cuda.cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    location.id = device.ordinal
    return location


def is_mempool_access_enabled(target_device: DeviceLike, peer_device: DeviceLike) -> bool:
    """Whether `peer_device` can now access allocations from `target_device`'s memory pool
    (False unless both are CUDA devices and the target has a pool)."""
    target, peer = get_device(target_device), get_device(peer_device)
    if not (target.is_cuda and peer.is_cuda) or not is_mempool_supported(target):
        return False
    if target == peer:
        return True
    from kernelc.runtime import cuda

    cu = cuda.cu
    pool = cuda.call(cu.cuDeviceGetDefaultMemPool, cuda.device_info(target).handle)
    flags = cuda.call(cu.cuMemPoolGetAccess, pool, _location(peer))
    return flags == cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE


def set_mempool_access_enabled(target_device: DeviceLike, peer_device: DeviceLike,
                               enable: bool) -> None:
    """Lets `peer_device` access every allocation of `target_device`'s memory pool (True),
    or stops it. Independent of `set_peer_access_enabled`.

    Raises:
        ValueError: enabling when one of the devices is not a CUDA device.
        RuntimeError: enabling when the target has no memory pool or the GPUs cannot reach
            each other.
    """
    pair = _pair(target_device, peer_device, "Memory pool access", enable)
    if pair is None:
        return
    target, peer = pair
    if not is_mempool_supported(target):
        if enable:
            raise RuntimeError(f"device {target.alias} does not support memory pools")
        return
    if target == peer:
        return  # a device always reaches its own pool
    if not is_peer_access_supported(target, peer):
        if enable:
            raise RuntimeError(f"device {peer.alias} cannot access device {target.alias}")
        return
    from kernelc.runtime import cuda

    cu = cuda.cu
    pool = cuda.call(cu.cuDeviceGetDefaultMemPool, cuda.device_info(target).handle)
    access = cu.CUmemAccessDesc()
    access.location = _location(peer)
    access.flags = (cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE if enable
                    else cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_NONE)
    cuda.call(cu.cuMemPoolSetAccess, pool, [access], 1)


class _ScopedSetting:
    """Sets an on/off switch inside a `with` block and restores its earlier state after."""

    def __init__(self, enable: bool) -> None:
        self.enable = enable
        self._saved = False

    def _get(self) -> bool:
        raise NotImplementedError

    def _set(self, value: bool) -> None:
        raise NotImplementedError

    def __enter__(self) -> None:
        self._saved = self._get()
        self._set(self.enable)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._set(self._saved)


class ScopedMempool(_ScopedSetting):
    """Allocates from `device`'s memory pool (or not) inside a `with` block.

    Args:
        device (DeviceLike): The device whose allocations are switched.
        enable (bool): Whether arrays made in the block come from the pool.

    Example:
        >>> with kc.ScopedMempool("cuda:0", False):
        ...     a = kc.zeros(1000, device="cuda:0")  # cuMemAlloc, not the pool
    """

    def __init__(self, device: DeviceLike, enable: bool) -> None:
        super().__init__(enable)
        self.device = get_device(device)

    def _get(self) -> bool:
        return is_mempool_enabled(self.device)

    def _set(self, value: bool) -> None:
        set_mempool_enabled(self.device, value)


class _ScopedAccess(_ScopedSetting):
    """A setting of one device's access to another's memory (`_query`, `_change`)."""

    _query: Any  # (target, peer) -> bool
    _change: Any  # (target, peer, enable) -> None

    def __init__(self, target_device: DeviceLike, peer_device: DeviceLike,
                 enable: bool) -> None:
        super().__init__(enable)
        self.target_device, self.peer_device = target_device, peer_device

    def _get(self) -> bool:
        return self._query(self.target_device, self.peer_device)

    def _set(self, value: bool) -> None:
        self._change(self.target_device, self.peer_device, value)


class ScopedMempoolAccess(_ScopedAccess):
    """Gives (or takes) `peer_device` access to `target_device`'s memory pool inside a
    `with` block.

    Args:
        target_device (DeviceLike): The device whose pool is accessed.
        peer_device (DeviceLike): The device that accesses it.
        enable (bool): Whether the access is on inside the block.
    """

    _query = staticmethod(is_mempool_access_enabled)
    _change = staticmethod(set_mempool_access_enabled)


class ScopedPeerAccess(_ScopedAccess):
    """Gives (or takes) `peer_device` direct access to `target_device`'s memory inside a
    `with` block (memory from the default allocator).

    Args:
        target_device (DeviceLike): The device whose memory is accessed.
        peer_device (DeviceLike): The device that accesses it.
        enable (bool): Whether the access is on inside the block.
    """

    _query = staticmethod(is_peer_access_enabled)
    _change = staticmethod(set_peer_access_enabled)


def is_device_available(device: DeviceLike) -> bool:
    """Whether `device` names a device this process can use."""
    try:
        get_device(device)
    except (RuntimeError, ValueError, TypeError):
        return False
    return True


def get_cuda_device(ordinal: int | None = None) -> Device:
    """The CUDA device `ordinal` (None: the current CUDA device)."""
    return get_device("cuda" if ordinal is None else f"cuda:{ordinal}")
