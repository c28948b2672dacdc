"""Allocation tracking (Warp's `config.track_memory`, `print_memory_report`,
`ScopedMemoryTracker`).

While tracking is on, `kernelc.runtime.memory.allocate` hands every new array allocation to
`AllocTracker.record`: its size, where it lives (a CUDA device, ordinary host memory or
pinned host memory), the innermost scope path of the calling thread and the first stack
frame outside kernelc (the allocation site). A finalizer on the allocation reports its
release; it only appends to a deque, because a finalizer can run inside any Python code,
including `record` itself, and the next `record` or report folds those releases in.

When tracking is off, `Runtime.alloc_tracker` is None and allocation pays one attribute
check. The collected data outlives a tracking session (a report after the `with` block of a
`ScopedMemoryTracker` still shows it) until `ScopedMemoryTracker.clear()`.
"""

from __future__ import annotations

import operator
import os
import sys
import threading
import weakref
from collections import deque
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TextIO

from kernelc.runtime.context import get_runtime

# Kinds of memory, in the order the report lists them: GPUs, host memory, pinned memory.
DEVICE, HOST, PINNED = 0, 1, 2
Category = tuple[int, int]  # (kind, CUDA ordinal or -1)
SORT_ORDERS = ("size", "chronological")


def category_name(category: Category) -> str:
    kind, ordinal = category
    return f"cuda:{ordinal}" if kind == DEVICE else ("cpu" if kind == HOST else "pinned")


@dataclass(slots=True)
class AllocRecord:
    """One live tracked allocation."""

    seq: int
    size: int
    category: Category
    tag: str
    scope: str


@dataclass(slots=True)
class Totals:
    """Counters of one category since the last reset."""

    count: int = 0
    bytes: int = 0
    current: int = 0
    peak: int = 0


class AllocTracker:
    """The tracked allocations of the process (one object, `rt.extras["alloc_tracker"]`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.local = threading.local()  # .stack: this thread's scope names
        self.freed: deque[int] = deque()  # seqs released since the last drain
        self.next_seq = 0  # never reset: finalizers of cleared records must not hit new ones
        self.global_scope = False  # kc.config.track_memory
        self.active_scopes = 0  # ScopedMemoryTrackers entered and not yet left
        self.reset()

    def reset(self) -> None:
        """Forgets every allocation and counter (the scope stacks stay)."""
        self.live: dict[int, AllocRecord] = {}
        self.count = self.bytes = self.current = self.peak = 0
        self.totals: dict[Category, Totals] = {}
        self.scope_stats: dict[tuple[str, Category], list[int]] = {}  # [count, bytes]
        self.freed.clear()

    def stack(self) -> list[str]:
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        return stack

    def scope_path(self) -> str:
        names = self.stack()
        return "/".join(["global", *names] if self.global_scope else names)

    def record(self, alloc: Any, pinned: bool, dtype: Any, shape: Any) -> None:
        """Adds a new allocation (a `memory.Allocation`) of an array of `dtype` and `shape`."""
        device = alloc.device
        kind = DEVICE if device.is_cuda else (PINNED if pinned else HOST)
        category = (kind, device.ordinal if kind == DEVICE else -1)
        tag = call_site(dtype, shape)
        scope = self.scope_path()
        size = alloc.nbytes
        with self.lock:
            self.drain()
            seq = self.next_seq
            self.next_seq += 1
            self.live[seq] = AllocRecord(seq, size, category, tag, scope)
            self.count += 1
            self.bytes += size
            self.current += size
            self.peak = max(self.peak, self.current)
            totals = self.totals.get(category)
            if totals is None:
                totals = self.totals[category] = Totals()
            totals.count += 1
            totals.bytes += size
            totals.current += size
            totals.peak = max(totals.peak, totals.current)
            if scope:
                stats = self.scope_stats.setdefault((scope, category), [0, 0])
                stats[0] += 1
                stats[1] += size
        weakref.finalize(alloc, self.freed.append, seq).atexit = False

    def drain(self) -> None:
        """Folds in the releases reported by finalizers (call with the lock held)."""
        while self.freed:
            record = self.live.pop(self.freed.popleft(), None)
            if record is not None:
                self.current -= record.size
                self.totals[record.category].current -= record.size

    def query(self, name: str) -> int:
        with self.lock:
            self.drain()
            return len(self.live) if name == "live" else getattr(self, name)

    def report(self, sort: str, max_items: int) -> str:
        with self.lock:
            self.drain()
            return render_report(self, sort, max_items)


# ---- where an allocation comes from -------------------------------------------------------


def _internal(module: str) -> bool:
    # kernelc's own frames are skipped; its bundled examples count as user code.
    return (module == "kernelc" or module.startswith("kernelc.")) and not module.startswith(
        "kernelc.examples")


def call_site(dtype: Any, shape: Any) -> str:
    """'array[vec3, 1000] : file.py:12 : func()' for the first frame outside kernelc."""
    parts = []
    if dtype is not None and shape is not None:
        dims = shape[0] if len(shape) == 1 else tuple(shape)
        parts.append(f"array[{dtype!r}, {dims}]")
    frame = sys._getframe(1)
    while frame is not None and _internal(frame.f_globals.get("__name__", "")):
        frame = frame.f_back
    if frame is None:
        parts.append("(kernelc)")
    else:
        code = frame.f_code
        parts.append(f"{os.path.basename(code.co_filename)}:{frame.f_lineno}")
        parts.append(f"{code.co_name}()")
    return " : ".join(parts)


# ---- the report ---------------------------------------------------------------------------


def format_bytes(count: int) -> str:
    """Bytes in B, KB, MB or GB (powers of 1024, two decimals), as Warp's report writes them."""
    for unit, shift in (("GB", 30), ("MB", 20), ("KB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.2f} {unit}"
    return f"{count} B"


def _row(category: Category, text: str) -> str:
    return f"    {category_name(category):<17}{text}"


def render_report(tracker: AllocTracker, sort: str, max_items: int) -> str:
    """The report text: totals, peaks and live counts per category, the scope breakdown
    (when there are several scopes), then the largest (or oldest) live allocations."""
    order = sorted(tracker.totals)
    live: dict[Category, list[AllocRecord]] = {}
    for record in tracker.live.values():
        live.setdefault(record.category, []).append(record)
    lines = ["Memory allocation report", "  Total allocations:"]
    lines += [_row(c, f"{tracker.totals[c].count} ({format_bytes(tracker.totals[c].bytes)})")
              for c in order]
    lines.append("  Peak usage:")
    lines += [_row(c, format_bytes(tracker.totals[c].peak)) for c in order]
    lines.append("  Live allocations:")
    for category in sorted(live):
        records = live[category]
        lines.append(_row(category, f"{len(records)} "
                                    f"({format_bytes(sum(r.size for r in records))})"))
    if not live:
        lines.append("    (none)")
    scopes = sorted({scope for scope, _ in tracker.scope_stats})
    if len(scopes) > 1:
        lines += ["", "  Scope breakdown:"]
        for scope in scopes:
            lines.append(f"    {scope}:")
            for (name, category), (count, nbytes) in sorted(tracker.scope_stats.items()):
                if name == scope:
                    lines.append(f"      {category_name(category)}: {count} allocs, "
                                 f"{format_bytes(nbytes)}")
    label = "oldest first" if sort == "chronological" else "largest first"
    for category in sorted(live):
        records = live[category]
        if sort == "chronological":
            records.sort(key=lambda r: r.seq)
        else:  # equal sizes stay in allocation order
            records.sort(key=lambda r: (-r.size, r.seq))
        shown = records[:max_items]
        lines += ["", f"  Live {category_name(category)} allocations, {label} "
                      f"(showing {len(shown)} of {len(records)}):"]
        lines += [f"    {format_bytes(r.size)} : {category_name(category)} : {r.tag}"
                  for r in shown]
    return "\n".join(lines) + "\n"


# ---- switching tracking on and off --------------------------------------------------------


def tracker() -> AllocTracker:
    """The process's tracker (its data stays when tracking is switched off)."""
    rt = get_runtime()
    found = rt.extras.get("alloc_tracker")
    if found is None:
        with rt.lock:
            found = rt.extras.get("alloc_tracker")
            if found is None:
                found = rt.extras["alloc_tracker"] = AllocTracker()
    return found


def _switch(state: AllocTracker) -> None:
    on = state.global_scope or state.active_scopes > 0
    get_runtime().alloc_tracker = state if on else None


def set_global_tracking(enable: bool) -> None:
    """Starts or stops process-wide tracking (the setter of `kc.config.track_memory`);
    allocations made under it belong to the scope "global"."""
    state = tracker()
    with state.lock:
        state.global_scope = bool(enable)
        _switch(state)


def is_enabled() -> bool:
    """Whether allocations are being tracked now."""
    return get_runtime().alloc_tracker is not None


def _check_report_args(sort: str, max_items: int) -> int:
    if sort not in SORT_ORDERS:
        raise ValueError(f"invalid sort order {sort!r}: use 'size' or 'chronological'")
    count = operator.index(max_items)
    if count < 0:
        raise ValueError(f"max_items must be 0 or more, got {count}")
    return count


def print_memory_report(file: TextIO | None = None, sort: str = "size",
                        max_items: int = 10) -> None:
    """Prints the tracked allocations: per device (each GPU, `cpu`, `pinned`) the number
    and bytes allocated, the peak and what is still live, a breakdown by scope, and the
    largest (or oldest) live allocations with the array and the line that made them.

    Tracking must be on: `kc.config.track_memory = True`, or inside a
    `kc.ScopedMemoryTracker` block.

    Args:
        file: Where to write (default `sys.stdout`).
        sort: Order of the live allocations listed: "size" (largest first) or
            "chronological" (oldest first).
        max_items: How many live allocations to list per device.

    Raises:
        ValueError: `sort` is neither "size" nor "chronological", or `max_items` < 0.
        RuntimeError: Tracking is off.
    """
    count = _check_report_args(sort, max_items)
    if not is_enabled():
        raise RuntimeError("allocation tracking is off: set kc.config.track_memory = True, "
                           "or allocate inside a `with kc.ScopedMemoryTracker(...):` block")
    (file or sys.stdout).write(tracker().report(sort, count))


class ScopedMemoryTracker:
    """Tracks allocations inside a `with` block, under a named scope.

    Nested trackers make scope paths ("run/init"); scope stacks are per thread, the counts
    are shared by all threads. With `print=True` the report is printed when the block ends.

    Example:
        >>> with kc.ScopedMemoryTracker("setup") as tracker:
        ...     a = kc.zeros(1000, device="cpu")
        ...     tracker.report()

    Args:
        name: The scope's name.
        active: False makes the tracker do nothing (call sites can stay in place).
        print: Print the report when the block ends.
        report_func: Called with the report text instead of printing it.
    """

    def __init__(self, name: str = "root", active: bool = True, print: bool = True,
                 report_func: Any = None) -> None:
        self.name = str(name)
        self.active = active
        self.print = print
        self.report_func = report_func
        self._entered = False

    def __enter__(self) -> ScopedMemoryTracker:
        if not self.active:
            return self
        state = tracker()
        state.stack().append(self.name)
        with state.lock:
            state.active_scopes += 1
            _switch(state)
        self._entered = True
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if not self._entered:
            return
        self._entered = False
        state = tracker()
        stack = state.stack()
        if stack:
            stack.pop()
        with state.lock:
            state.active_scopes -= 1
            _switch(state)
        if self.print:
            self.report()

    def report(self, file: TextIO | None = None, sort: str = "size",
               max_items: int = 10) -> None:
        """Prints the current report (to `report_func` if given, else `file` or stdout).

        Args:
            file: Where to write (default `sys.stdout`).
            sort: "size" (largest first) or "chronological" (oldest first).
            max_items: How many live allocations to list per device.
        """
        text = tracker().report(sort, _check_report_args(sort, max_items))
        if self.report_func is not None:
            self.report_func(text)
        else:
            (file or sys.stdout).write(text)

    def clear(self) -> None:
        """Forgets everything tracked so far; later reports show only newer allocations."""
        state = tracker()
        with state.lock:
            state.reset()

    # **+** Warp has these queries in its native library only.
    @property
    def current_bytes(self) -> int:
        """Bytes of tracked allocations still live."""
        return get_current_bytes()

    @property
    def peak_bytes(self) -> int:
        """The most bytes live at once since the last clear."""
        return get_peak_bytes()

    @property
    def live_count(self) -> int:
        """Number of tracked allocations still live."""
        return get_live_count()


def get_current_bytes() -> int:
    """Bytes of tracked allocations still live, all devices together."""
    return tracker().query("current")


def get_peak_bytes() -> int:
    """The most tracked bytes live at once since the last clear, all devices together."""
    return tracker().query("peak")


def get_total_alloc_count() -> int:
    """Tracked allocations made since the last clear."""
    return tracker().query("count")


def get_total_alloc_bytes() -> int:
    """Bytes of the tracked allocations made since the last clear."""
    return tracker().query("bytes")


def get_live_count() -> int:
    """Tracked allocations still live."""
    return tracker().query("live")
