"""Per-operation overhead of the timing machinery, in microseconds.

Each row times a loop of one operation around a fake activity (the recorder calls a CPU
launch makes, with nothing launched) and reports the median over repeated runs, after a
warm-up. The device module's synchronize is replaced by a no-op so that the rows measure
kernelc's own bookkeeping, not a device wait.

    PYTHONPATH=. python benchmarks/timer_overhead.py [--loops N] [--repeats R]

(`PYTHONPATH=.` is not needed once kernelc is installed, e.g. `pip install -e .`.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import types
from collections.abc import Callable

from kernelc.runtime.context import get_runtime
from kernelc.timing.activity import timing_begin, timing_end
from kernelc.timing.flags import TIMING_ALL, TIMING_KERNEL
from kernelc.timing.nvtx import nvtx_available, profile_range
from kernelc.timing.timer import ScopedTimer


class _Device:
    alias = "cpu"
    is_cpu = True
    is_cuda = False


DEVICE = _Device()


def fake_activity() -> None:
    """What the launcher does around one CPU launch."""
    recorder = get_runtime().recorder
    if recorder is not None and recorder.wants(TIMING_KERNEL):
        recorder.end(recorder.begin(DEVICE, "forward kernel fake", TIMING_KERNEL))


def no_timer() -> None:
    fake_activity()


def inactive_timer() -> None:
    with ScopedTimer("fake", active=False):
        fake_activity()


def active_timer() -> None:
    with ScopedTimer("fake", print=False):
        fake_activity()


def activity_timer() -> None:
    with ScopedTimer("fake", print=False, cuda_filter=TIMING_ALL):
        fake_activity()


def nvtx_range() -> None:
    with profile_range("fake", color="rapids"):
        fake_activity()


def median_us(operation: Callable[[], None], loops: int, repeats: int) -> float:
    for _ in range(loops // 10 + 1):  # warm-up
        operation()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(loops):
            operation()
        samples.append((time.perf_counter_ns() - start) / loops / 1e3)
    return statistics.median(samples)


def recorded_activity_us(loops: int, repeats: int) -> float:
    """The fake activity inside an open session: the launcher's added cost per launch."""
    timing_begin(TIMING_ALL, synchronize=False)
    try:
        return median_us(fake_activity, loops, repeats)
    finally:
        timing_end(synchronize=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()

    stand_in = types.ModuleType("kernelc.runtime.device")
    stand_in.synchronize = lambda: None
    sys.modules["kernelc.runtime.device"] = stand_in

    rows = [
        ("no timer (fake activity alone)", median_us(no_timer, args.loops, args.repeats)),
        ("ScopedTimer(active=False)", median_us(inactive_timer, args.loops, args.repeats)),
        ("ScopedTimer(print=False)", median_us(active_timer, args.loops, args.repeats)),
        ("ScopedTimer(cuda_filter=TIMING_ALL)",
         median_us(activity_timer, args.loops, args.repeats)),
        ("activity inside an open session", recorded_activity_us(args.loops, args.repeats)),
        (f"profile_range (nvtx {'installed' if nvtx_available() else 'absent'})",
         median_us(nvtx_range, args.loops, args.repeats)),
    ]
    baseline = rows[0][1]
    print(f"{'operation':<44} {'median us':>10} {'over baseline':>14}")
    for name, value in rows:
        print(f"{name:<44} {value:10.3f} {value - baseline:14.3f}")
    print(f"({args.loops} operations per run, median of {args.repeats} runs)")


if __name__ == "__main__":
    main()
