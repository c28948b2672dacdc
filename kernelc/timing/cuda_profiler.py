"""Warp's `cuda_profiler_start` / `cuda_profiler_stop` and `ScopedCudaProfiler`.

They bracket the region an external CUDA profiler records when it is told to wait for the
program (`nsys profile --capture-range=cudaProfilerApi`, `ncu --profile-from-start off`).
Each call is the driver's `cuProfilerStart` / `cuProfilerStop` in the CUDA context of one
device; on the CPU they do nothing, as in Warp. (`kc.profile_enable` is kernelc's older
form: it uses whichever context is current and skips the call when there is none.)
"""

from __future__ import annotations

from types import TracebackType

from kernelc.runtime.device import Device, get_device
from kernelc.runtime.mempool import DeviceLike

__all__ = ["ScopedCudaProfiler", "cuda_profiler_start", "cuda_profiler_stop"]


def _profiler_call(device: Device, name: str) -> None:
    if not device.is_cuda:
        return
    from kernelc.runtime import cuda

    cuda.device_info(device)  # makes the device's context current on this thread
    cuda.call(getattr(cuda.cu, name))


def cuda_profiler_start(device: DeviceLike = None) -> None:
    """Starts CUDA profiler data collection in `device`'s context (no-op on the CPU).

    Not reference-counted: nested starts and stops each go straight to the driver.

    Args:
        device (DeviceLike): The device; None for the current one.

    Raises:
        RuntimeError: The driver call failed.
    """
    _profiler_call(get_device(device), "cuProfilerStart")


def cuda_profiler_stop(device: DeviceLike = None) -> None:
    """Stops CUDA profiler data collection in `device`'s context (no-op on the CPU).

    Args:
        device (DeviceLike): The device; None for the current one.

    Raises:
        RuntimeError: The driver call failed.
    """
    _profiler_call(get_device(device), "cuProfilerStop")


class ScopedCudaProfiler:
    """Profiler data collection for a `with` block: `cuda_profiler_start` on entry,
    `cuda_profiler_stop` on exit, both for the device resolved at construction.

    Args:
        device (DeviceLike): The device; None for the current one.

    Example:
        >>> with kc.ScopedCudaProfiler():
        ...     step()  # only this is recorded by `nsys ... --capture-range=cudaProfilerApi`
    """

    def __init__(self, device: DeviceLike = None) -> None:
        self.device = get_device(device)

    def __enter__(self) -> ScopedCudaProfiler:
        cuda_profiler_start(self.device)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            cuda_profiler_stop(self.device)
        except Exception:
            if exc_type is None:  # never hide the exception that left the block
                raise
