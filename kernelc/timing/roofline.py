"""A device's roofs: its peak FMA rate and its memory bandwidth, as kernelc achieves them.

The roofline model bounds a kernel of arithmetic intensity `I` (FLOP per byte moved) at
`min(peak FLOP/s, I x bandwidth)`; a kernel's efficiency is its achieved rate over that
bound. Both roofs are measured with kernelc kernels (`roofline_kernels.py`) on the device
itself, with kernelc's own FLOP and byte counts, so a kernel that reaches 100% runs as fast
as kernelc can make that device go. Measuring takes about a second; the result is kept in
the kernel cache directory, per device and CPU thread count.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_CACHE_FILE = "roofs.json"


@dataclass(frozen=True)
class Roofs:
    """A device's measured roofs.

    Attributes:
        device: The device's alias ("cpu", "cuda:0").
        flops: Peak floating-point rate, FLOP/s (fused multiply-adds count two).
        bandwidth: Memory bandwidth, bytes/s (a triad `z = a*x + y` over arrays much larger
            than the caches).
        threads: Worker threads the CPU roofs were measured with (None on CUDA).
    """

    device: str
    flops: float
    bandwidth: float
    threads: int | None = None

    @property
    def ridge(self) -> float:
        """The intensity (FLOP/byte) where the two roofs meet."""
        return self.flops / self.bandwidth

    def attainable(self, intensity: float) -> float:
        """The FLOP/s the roofs allow at `intensity` FLOP/byte."""
        return min(self.flops, intensity * self.bandwidth)

    def efficiency(self, flops: float | None, nbytes: float | None,
                   seconds: float) -> float | None:
        """The fraction of the attainable rate that `flops` and `nbytes` moved in `seconds`
        reach (None when the counts are unknown or nothing was timed)."""
        if seconds <= 0 or nbytes is None or flops is None or (flops == 0 and nbytes == 0):
            return None
        if flops == 0:  # a pure copy or fill: only the bandwidth roof applies
            return nbytes / seconds / self.bandwidth
        if nbytes == 0:
            return flops / seconds / self.flops
        return flops / seconds / self.attainable(flops / nbytes)


def device_roofs(device: Any = None, refresh: bool = False) -> Roofs:
    """The roofs of `device` (default: the current device), measured once and cached.

    Args:
        device (Device | str | None): The device to measure.
        refresh (bool): Measure again even if a cached measurement exists.

    Returns:
        Roofs: The peak FLOP/s and bandwidth.
    """
    from kernelc.config import config
    from kernelc.runtime.device import get_device

    dev = get_device(device)
    threads = None if dev.is_cuda else config.num_threads
    key = f"{dev.name}|{dev.alias if dev.is_cuda else 'cpu'}|{threads}"
    path = Path(config.kernel_cache_dir) / _CACHE_FILE
    cached = _read(path)
    if not refresh and key in cached:
        found = cached[key]
        return Roofs(dev.alias, float(found["flops"]), float(found["bandwidth"]), threads)
    roofs = measure_roofs(dev)
    cached[key] = asdict(roofs)
    _write(path, cached)
    return roofs


def measure_roofs(device: Any = None, repeat: int = 5) -> Roofs:
    """Measures the roofs of `device` now (best of `repeat` runs of each kernel).

    Args:
        device (Device | str | None): The device to measure.
        repeat (int): Timed runs of each kernel, after one warm-up run.

    Returns:
        Roofs: The peak FLOP/s and bandwidth.
    """
    import kernelc as kc
    from kernelc.runtime.device import get_device
    from kernelc.timing.roofline_kernels import fma_peak, triad

    dev = get_device(device)
    threads = 1 << (26 if dev.is_cuda else 22)
    elements = 1 << (26 if dev.is_cuda else 24)  # 3 arrays of 64 MB (768 MB on a GPU)
    out = kc.empty(threads, dtype=float, device=dev)
    flops = _best_rate(lambda: kc.launch(fma_peak, threads, [out, 0.999, 0.001], device=dev),
                       "flops", repeat)
    x = kc.full(elements, 1.0, dtype=float, device=dev)
    y = kc.full(elements, 2.0, dtype=float, device=dev)
    z = kc.empty(elements, dtype=float, device=dev)
    bandwidth = _best_rate(lambda: kc.launch(triad, elements, [x, y, z, 0.5], device=dev),
                           "bytes", repeat)
    from kernelc.config import config

    return Roofs(dev.alias, flops, bandwidth, None if dev.is_cuda else config.num_threads)


def _best_rate(run, key: str, repeat: int) -> float:
    """The best rate (count per second) of `run`'s launch over `repeat` timed runs."""
    from kernelc.timing.history import JitFlag, kernel_history, scoped_set_flag

    run()  # compiles, and touches every page
    best = 0.0
    with scoped_set_flag(JitFlag.KernelHistory):
        kernel_history()  # (drops whatever was recorded before)
        for _ in range(repeat):
            run()
        for entry in kernel_history():
            ms = entry["execution_time"]
            if ms > 0 and entry[key]:
                best = max(best, entry[key] / (ms * 1e-3))
    return best


def _read(path: Path) -> dict:
    try:
        found = json.loads(path.read_text())
        return found if isinstance(found, dict) else {}
    except (OSError, ValueError):
        return {}


def _write(path: Path, data: dict) -> None:
    try:  # atomically, like the kernel cache: a parallel reader never sees half a file
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache: measure again next time
