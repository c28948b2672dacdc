"""Cost of one array allocation (and its release) with allocation tracking off and on, and
through a custom allocator, in microseconds (median over repeated runs, after a warm-up).

    PYTHONPATH=. python benchmarks/alloc_overhead.py [--device cpu] [--loops N] [--repeats R]

"Tracking off" is the path every program takes by default; it should match the plain
allocation time of a kernelc without the tracker (one attribute check is added).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import kernelc as kc


class PassThrough:
    """A custom allocator that forwards to the device's built-in one."""

    def __init__(self, device: kc.Device) -> None:
        self.inner = device.default_allocator

    def allocate(self, size_in_bytes: int) -> int:
        return self.inner.allocate(size_in_bytes)

    def deallocate(self, ptr: int, size_in_bytes: int) -> None:
        self.inner.deallocate(ptr, size_in_bytes)


def median_us(fn: Callable[[], object], loops: int, repeats: int) -> float:
    def once() -> float:
        start = time.perf_counter_ns()
        for _ in range(loops):
            fn()
        return (time.perf_counter_ns() - start) / loops / 1e3

    for _ in range(3):
        once()
    return statistics.median(once() for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--loops", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=41)
    args = parser.parse_args()
    device = kc.get_device(args.device)

    def alloc() -> object:
        return kc.empty(1000, dtype=kc.float32, device=device)

    rows = [("tracking off", median_us(alloc, args.loops, args.repeats))]
    kc.config.track_memory = True
    rows.append(("tracking on", median_us(alloc, args.loops, args.repeats)))
    kc.config.track_memory = False
    with kc.ScopedAllocator(device, PassThrough(device)):
        rows.append(("custom allocator", median_us(alloc, args.loops, args.repeats)))
    print(f"kc.empty(1000, float32) on {device}, median of {args.repeats} x {args.loops}")
    print(f"{'case':<18} {'µs':>8} {'vs off':>8}")
    for name, value in rows:
        print(f"{name:<18} {value:8.2f} {value / rows[0][1]:8.2f}")


if __name__ == "__main__":
    main()
