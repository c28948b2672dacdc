"""Devices: the CPU and, when kernelc's CUDA runtime finds them, CUDA GPUs.

Device identifiers follow Warp: ``"cpu"``, ``"cuda"`` (the current CUDA device, else
``cuda:0``) and ``"cuda:N"``. CUDA devices are discovered on first use by importing
``kernelc.runtime.cuda``, which provides ``enumerate_devices() -> list[dict]`` (keys
``ordinal``, ``name``, ``arch``), ``unavailable_reason() -> str`` and ``synchronize(ordinal)``.
Without that module, or without a GPU, only the CPU exists and asking for a CUDA device
raises a RuntimeError that says why.

The device table and the current device live on the runtime object
(`kernelc.runtime.context.get_runtime()`), so there is no module-level state here.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from types import ModuleType, TracebackType
from typing import Any

from kernelc.runtime.context import get_runtime

_CUDA_MODULE = "kernelc.runtime.cuda"
_CUDA_ALIAS = re.compile(r"cuda:(-?\d+)")


class Device:
    """One device that arrays live on and kernels run on.

    Attributes:
        alias: The canonical identifier, ``"cpu"`` or ``"cuda:N"``.
        ordinal: The CUDA device ordinal, -1 for the CPU.
        name: A human-readable name (the processor or GPU model).
        arch: The CUDA compute capability as an int (90 for sm_90), None for the CPU.
    """

    # _custom_allocator: set by kc.set_device_allocator (None: the built-in allocator);
    # _allocators: the built-in allocator objects, created on first request.
    __slots__ = ("alias", "ordinal", "name", "arch", "_custom_allocator", "_allocators")

    def __init__(self, alias: str, ordinal: int, name: str, arch: int | None = None) -> None:
        self.alias = alias
        self.ordinal = ordinal
        self.name = name
        self.arch = arch
        self._custom_allocator: Any = None
        self._allocators: dict[str, Any] | None = None

    @property
    def is_cpu(self) -> bool:
        """True for the host CPU."""
        return self.ordinal < 0

    @property
    def is_cuda(self) -> bool:
        """True for a CUDA GPU."""
        return self.ordinal >= 0

    @property
    def sm_count(self) -> int:
        """Streaming multiprocessors of a CUDA device; 0 on the CPU, as in Warp."""
        return self._cuda_attribute("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT")

    @property
    def max_shared_memory_per_block(self) -> int:
        """Bytes of shared memory a block can opt in to on a CUDA device; 0 on the CPU,
        as in Warp."""
        return self._cuda_attribute("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")

    @property
    def is_capturing(self) -> bool:
        """True while a graph capture is open on this device (`kc.ScopedCapture`,
        `kc.capture_begin`), so code can avoid what a capture forbids (allocating, reading
        results back to the host). CUDA captures started outside kernelc are not seen."""
        if self.is_cpu:
            return get_runtime().extras.get("capture") is not None
        return cuda_runtime().device_info(self).capturing > 0

    def _cuda_attribute(self, name: str) -> int:
        if self.is_cpu:
            return 0
        from kernelc.runtime.cuda import _ATTR, device_info

        return device_info(self).attribute(getattr(_ATTR, name))

    @property
    def default_allocator(self) -> Any:
        """The built-in allocator without a memory pool: host memory on the CPU,
        `cuMemAlloc` on CUDA. A custom allocator can wrap it (see `kc.set_device_allocator`)."""
        from kernelc.runtime.allocators import builtin_allocator

        return builtin_allocator(self, "default")

    @property
    def pinned_allocator(self) -> Any:
        """The CPU's built-in allocator of pinned host memory (None on CUDA devices)."""
        from kernelc.runtime.allocators import builtin_allocator

        return builtin_allocator(self, "pinned") if self.is_cpu else None

    @property
    def mempool_allocator(self) -> Any:
        """The CUDA device's memory-pool allocator; None on the CPU or without pools."""
        from kernelc.runtime.allocators import builtin_allocator

        return builtin_allocator(self, "mempool") if self.is_cuda else None

    def get_allocator(self, pinned: bool = False) -> Any:
        """The allocator that new arrays on this device come from.

        Args:
            pinned: On the CPU, the allocator of pinned arrays (ignored on CUDA devices).

        Returns:
            The custom allocator set with `kc.set_device_allocator` if any, else the
            built-in one in use (on CUDA: the memory-pool allocator while pools are enabled).
        """
        from kernelc.runtime.allocators import device_allocator

        return device_allocator(self, pinned)

    def __str__(self) -> str:
        return self.alias

    def __repr__(self) -> str:
        return f'<Device "{self.alias}": {self.name}>'

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Device):
            return self.alias == other.alias
        if isinstance(other, str):
            return self.alias == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.alias)


Devicelike = Device | str | None


class _DeviceTable:
    """The CPU device and the CUDA devices, the latter discovered once on first need."""

    def __init__(self) -> None:
        self.cpu = Device("cpu", -1, platform.processor() or "CPU")
        self._cuda: list[Device] | None = None
        self._cuda_module: ModuleType | None = None
        self._reason = ""

    def cuda_devices(self) -> list[Device]:
        if self._cuda is None:
            with get_runtime().lock:
                if self._cuda is None:
                    self._discover()
        return self._cuda  # type: ignore[return-value]

    def cuda_module(self) -> ModuleType | None:
        """The CUDA runtime module, or None when no CUDA device was found."""
        self.cuda_devices()
        return self._cuda_module

    def unavailable_error(self) -> RuntimeError:
        """The error raised when a CUDA device is asked for but none exists."""
        self.cuda_devices()
        return RuntimeError(f"kernelc's CUDA runtime is not available: {self._reason}")

    def _discover(self) -> None:
        import importlib

        devices: list[Device] = []
        if _CUDA_MODULE not in sys.modules and not _driver_library_present():
            # No NVIDIA driver on this machine: say so without importing the CUDA bindings,
            # which would cost a CPU-only process ~40 ms at its first launch.
            self._reason = "no CUDA driver found (libcuda.so.1 cannot be loaded)"
            self._cuda = devices
            return
        try:
            module = importlib.import_module(_CUDA_MODULE)
        except ModuleNotFoundError as err:
            # Tell "the backend is absent" apart from "the backend lacks a dependency".
            if err.name == _CUDA_MODULE:
                self._reason = "this kernelc installation has no CUDA backend"
            else:
                self._reason = f"{err} (needed by {_CUDA_MODULE})"
            self._cuda = devices
            return
        except Exception as err:  # a broken driver install must not break CPU use
            self._reason = f"importing {_CUDA_MODULE} failed: {type(err).__name__}: {err}"
            self._cuda = devices
            return
        try:
            infos = module.enumerate_devices()
        except Exception as err:
            infos = []
            self._reason = f"listing CUDA devices failed: {type(err).__name__}: {err}"
        for info in infos:
            ordinal = int(info["ordinal"])
            devices.append(Device(f"cuda:{ordinal}", ordinal, str(info.get("name", "CUDA")),
                                  _as_arch(info.get("arch"))))
        if devices:
            self._cuda_module = module
        elif not self._reason:
            reason = getattr(module, "unavailable_reason", None)
            self._reason = (reason() if callable(reason) else "") or "no CUDA device found"
        self._cuda = devices


def _as_arch(arch: Any) -> int | None:
    # Accept 90, "90", "sm_90" or (9, 0): the CUDA module may report any of these forms.
    if arch is None:
        return None
    if isinstance(arch, tuple):
        return int(arch[0]) * 10 + int(arch[1])
    return int(str(arch).removeprefix("sm_"))


def _table() -> _DeviceTable:
    runtime = get_runtime()
    table = runtime.extras.get("devices")
    if table is None:
        with runtime.lock:
            table = runtime.extras.get("devices")
            if table is None:
                table = runtime.extras["devices"] = _DeviceTable()
    return table


def cuda_unavailable_error() -> RuntimeError:
    """The RuntimeError explaining why CUDA devices cannot be used in this process."""
    return _table().unavailable_error()


def cuda_runtime() -> ModuleType:
    """The `kernelc.runtime.cuda` module; raises RuntimeError when it is unusable."""
    module = _table().cuda_module()
    if module is None:
        raise cuda_unavailable_error()
    return module


def _cuda_device(ordinal: int | None) -> Device:
    devices = _table().cuda_devices()
    if not devices:
        raise cuda_unavailable_error()
    if ordinal is None:
        current = get_runtime().current_device
        return current if isinstance(current, Device) and current.is_cuda else devices[0]
    if ordinal >= len(devices):
        raise ValueError(
            f"invalid device 'cuda:{ordinal}': {len(devices)} CUDA device(s) found "
            f"(cuda:0 to cuda:{len(devices) - 1})"
        )
    return devices[ordinal]


def get_device(ident: Devicelike = None) -> Device:
    """Resolves a device identifier.

    Args:
        ident: A Device, ``"cpu"``, ``"cuda"``, ``"cuda:N"``, or None for the current device
            (at first `$KERNELC_DEVICE` if set, else the first GPU, else the CPU).

    Returns:
        The Device object (one object per device for the life of the process).

    Raises:
        ValueError: `ident` is not a well-formed identifier, or names a missing GPU.
        RuntimeError: A CUDA device was asked for but CUDA is not available.
        TypeError: `ident` is neither a string nor a Device.
    """
    if ident is None:
        runtime = get_runtime()
        current = runtime.current_device
        if current is None:
            chosen = os.environ.get("KERNELC_DEVICE")
            if chosen:
                current = get_device(chosen)
            else:
                cuda = _table().cuda_devices()
                current = cuda[0] if cuda else _table().cpu
            runtime.current_device = current
        return current
    if isinstance(ident, Device):
        return ident
    if not isinstance(ident, str):
        raise TypeError(f"a device is a Device or a string such as 'cpu' or 'cuda:0', "
                        f"not {type(ident).__name__}")
    if ident == "cpu":
        return _table().cpu
    if ident == "cuda":
        return _cuda_device(None)
    match = _CUDA_ALIAS.fullmatch(ident)
    if match is None:
        raise ValueError(f"invalid device '{ident}': expected 'cpu', 'cuda' or 'cuda:N'")
    ordinal = int(match.group(1))
    if ordinal < 0:
        raise ValueError(f"invalid device '{ident}': the CUDA ordinal must be 0 or more")
    return _cuda_device(ordinal)


def set_device(ident: Devicelike) -> None:
    """Makes `ident` the current device (the default for arrays and launches)."""
    get_runtime().current_device = get_device(ident)


class ScopedDevice:
    """Makes a device current inside a ``with`` block and restores the previous one after.

    Example:
        >>> with kc.ScopedDevice("cpu"):
        ...     a = kc.zeros(16)  # allocated on the CPU
    """

    def __init__(self, ident: Devicelike) -> None:
        self.device = get_device(ident)
        self._saved: Device | None = None

    def __enter__(self) -> Device:
        runtime = get_runtime()
        self._saved = get_device(None)
        runtime.current_device = self.device
        return self.device

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        get_runtime().current_device = self._saved


def get_devices() -> list[Device]:
    """All devices: the CPU first, then each CUDA device by ordinal."""
    return [_table().cpu, *_table().cuda_devices()]


def get_cuda_devices() -> list[Device]:
    """The CUDA devices by ordinal (empty without CUDA)."""
    return list(_table().cuda_devices())


def get_cuda_device_count() -> int:
    """How many CUDA devices there are (0 without CUDA)."""
    return len(_table().cuda_devices())


def is_cuda_available() -> bool:
    """True when at least one CUDA device can be used."""
    return bool(_table().cuda_devices())


def is_cpu_available() -> bool:
    """True: the CPU device is always there (Warp's name, for portable device selection)."""
    return True


def get_preferred_device() -> Device:
    """The first CUDA device if there is one, else the CPU (Warp's choice)."""
    cuda = _table().cuda_devices()
    return cuda[0] if cuda else _table().cpu


def synchronize() -> None:
    """Waits for all outstanding work on every device.

    CPU work is synchronous already, so only CUDA devices have anything to wait for.
    """
    table = _table()
    module = table.cuda_module()
    if module is not None:
        for device in table.cuda_devices():
            module.synchronize(device.ordinal)


def synchronize_device(ident: Devicelike = None) -> None:
    """Waits for all outstanding work on one device (the current one by default)."""
    device = get_device(ident)
    if device.is_cuda:
        cuda_runtime().synchronize(device.ordinal)


def _driver_library_present() -> bool:
    """Whether the NVIDIA driver library can be loaded (cheap: one dlopen)."""
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True
