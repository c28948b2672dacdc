"""Per-kernel totals of a profiled run, and the report printed from them.

While a script runs under the profiler, the runtime's kernel history (one record per
launch, see `kernelc.timing.history`) is a `ProfileHistory`: each record is added to its
kernel's totals as it arrives, so a long run does not keep millions of records.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TextIO

from kernelc.timing.roofline import Roofs


@dataclass
class KernelTotals:
    """What the launches of one kernel (forward, backward or built-in) on one device add up to."""

    activity: str  # "forward kernel step", "backward kernel step", "builtin kernel ..."
    name: str
    device: str
    launches: int = 0
    ms: float = 0.0
    min_ms: float = math.inf
    max_ms: float = 0.0
    flops: float | None = 0.0  # None once a launch's count is unknown
    nbytes: float | None = 0.0
    compile_ms: float = 0.0
    compiles: int = 0
    shapes: Counter = field(default_factory=Counter)
    shape_ms: Counter = field(default_factory=Counter)

    def add(self, record: dict[str, Any], ms: float) -> None:
        self.launches += 1
        self.ms += ms
        self.min_ms = min(self.min_ms, ms)
        self.max_ms = max(self.max_ms, ms)
        f, b = record.get("flops"), record.get("bytes")
        self.flops = None if self.flops is None or f is None else self.flops + f
        self.nbytes = None if self.nbytes is None or b is None else self.nbytes + b
        compile_ms = record.get("codegen_time", 0.0) + record.get("backend_time", 0.0)
        if record.get("cache") != "memory":
            self.compiles += 1
            self.compile_ms += compile_ms
        dim = tuple(record.get("dim", ()))
        self.shapes[dim] += 1
        self.shape_ms[dim] += ms


class ProfileHistory(list):
    """The runtime's history list while a script is profiled.

    Records are summed into `totals` as they arrive. The last `keep` records also stay in
    the list, so a script that reads `kc.kernel_history()` itself still gets its launches.
    On CUDA a record's time is a callable that waits for the launch's end event: those
    are read in batches, not as they arrive.
    """

    def __init__(self, keep: int = 10_000, batch: int = 1_000) -> None:
        super().__init__()
        self.keep = keep
        self.batch = batch
        self.totals: dict[tuple[str, str], KernelTotals] = {}
        self.pending: list[dict[str, Any]] = []

    def append(self, record: dict[str, Any]) -> None:
        if callable(record.get("execution_time")):
            self.pending.append(record)
            if len(self.pending) >= self.batch:
                self.settle()
        else:
            self._add(record)
        if len(self) < self.keep:
            super().append(record)

    def settle(self) -> None:
        """Adds the records whose device time was still to be read."""
        pending, self.pending = self.pending, []
        for record in pending:
            if callable(record["execution_time"]):
                record["execution_time"] = float(record["execution_time"]())
            self._add(record)

    def _add(self, record: dict[str, Any]) -> None:
        name = record.get("name", "?")
        activity = record.get("activity") or f"forward kernel {name}"
        key = (activity, record.get("device", "cpu"))
        found = self.totals.get(key)
        if found is None:
            found = self.totals[key] = KernelTotals(activity, name, key[1])
        found.add(record, float(record.get("execution_time", 0.0)))


def print_report(totals: Iterable[KernelTotals], roofs: dict[str, Roofs], wall_s: float,
                 script: str, out: TextIO, kernel: str | None = None,
                 top: int | None = None) -> None:
    """Prints the per-kernel table (slowest first) and, with `kernel`, that kernel's details.

    Args:
        totals (Iterable[KernelTotals]): The kernels' totals.
        roofs (dict[str, Roofs]): The roofs of each device, by alias (may be empty).
        wall_s (float): The script's wall time, seconds.
        script (str): The script's path, for the heading.
        out (TextIO): Where to print.
        kernel (str | None): Show only the kernel of this name, with details.
        top (int | None): Show only this many rows.
    """
    rows = sorted(totals, key=lambda t: -t.ms)
    total_ms = sum(t.ms for t in rows)
    launches = sum(t.launches for t in rows)
    write: Callable[[str], Any] = lambda line: print(line, file=out)  # noqa: E731
    share = 100 * total_ms / (wall_s * 1e3) if wall_s > 0 else 0.0
    write(f"kernelc profile of {script}: {wall_s:.3f} s; {launches} launches took "
          f"{total_ms:.1f} ms ({share:.0f}% of the run)")
    for alias, r in sorted(roofs.items()):
        threads = f", {r.threads} threads" if r.threads else ""
        write(f"roofs on {alias}{threads}: {r.flops / 1e9:.1f} GFLOP/s, "
              f"{r.bandwidth / 1e9:.1f} GB/s (ridge {r.ridge:.2f} FLOP/byte)")
    if kernel is not None:
        rows = [t for t in rows if t.name == kernel]
        if not rows:
            write(f"no launches of a kernel named '{kernel}'")
            return
    if top is not None:
        rows = rows[:top]
    write("")
    write(f"{'time':>6} {'total ms':>10} {'launches':>8} {'mean ms':>9} {'GFLOP/s':>8} "
          f"{'GB/s':>7} {'FLOP/B':>7} {'roofline':>8}  kernel")
    for t in rows:
        write(_row(t, total_ms, roofs.get(t.device)))
    if kernel is not None:
        for t in rows:
            _details(t, write)


def _row(t: KernelTotals, total_ms: float, roofs: Roofs | None) -> str:
    seconds = t.ms * 1e-3
    gflops = _rate(t.flops, seconds, 8)
    gbytes = _rate(t.nbytes, seconds, 7)
    intensity = (f"{t.flops / t.nbytes:7.2f}" if t.flops is not None and t.nbytes
                 else f"{'-':>7}")
    efficiency = roofs.efficiency(t.flops, t.nbytes, seconds) if roofs else None
    roof = f"{100 * efficiency:7.1f}%" if efficiency is not None else f"{'-':>8}"
    share = 100 * t.ms / total_ms if total_ms > 0 else 0.0
    return (f"{share:5.1f}% {t.ms:10.2f} {t.launches:8d} {t.ms / t.launches:9.3f} "
            f"{gflops} {gbytes} {intensity} {roof}  {t.activity} ({t.device})")


def _rate(count: float | None, seconds: float, width: int) -> str:
    """`count` per second, in units of 1e9, right-aligned in `width` columns."""
    if count is None or seconds <= 0:
        return "-".rjust(width)
    return f"{count / seconds / 1e9:{width}.2f}"


def _details(t: KernelTotals, write: Callable[[str], Any]) -> None:
    write("")
    write(f"{t.activity} on {t.device}")
    write(f"  {t.launches} launches, {t.ms:.3f} ms: mean {t.ms / t.launches:.3f} ms, "
          f"min {t.min_ms:.3f} ms, max {t.max_ms:.3f} ms")
    if t.compiles:
        write(f"  compiled or loaded {t.compiles} time(s): {t.compile_ms:.1f} ms")
    if t.flops is not None and t.nbytes is not None:
        write(f"  per launch: {t.flops / t.launches:.4g} FLOP, {t.nbytes / t.launches:.4g} bytes")
    else:
        write("  FLOP and byte counts unknown (a loop whose trip count the compiler cannot see)")
    for dim, count in t.shapes.most_common(8):
        write(f"  dim {dim}: {count} launches, {t.shape_ms[dim]:.3f} ms")
