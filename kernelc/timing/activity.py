"""Activity timing: the time each kernel launch, copy, memset and graph launch takes.

While a timing session is open, `get_runtime().recorder` is an `ActivityRecorder`; otherwise
it is None, and the launcher's only cost is that None check. The launcher brackets every
operation it issues like this::

    recorder = rt.recorder
    token = recorder.begin(device, "forward kernel saxpy", TIMING_KERNEL) \
        if recorder is not None and recorder.wants(TIMING_KERNEL) else None
    ...issue the work...
    if token is not None:
        recorder.end(token)

On the CPU, launches are synchronous, so `begin` and `end` take host timestamps. On a CUDA
device they record a pair of timing events on the current stream through
`rt.extras["cuda_event_factory"]` (see `kernelc.timing.events`); when no factory is
registered, CUDA activities are not recorded.

Sessions nest: each `timing_begin` (or `ScopedTimer(cuda_filter=...)`) pushes a session with
its own filter, and every activity goes to every open session whose filter has its kind.
Sessions are process-wide: activities issued by any thread are seen by all open sessions.

Report headings. Warp's report says "CUDA timeline:", "CUDA activity summary:" and "CUDA
device summary:". kernelc times CPU activities too, so the first word of each heading names
the devices present: "CUDA" when every result is on a CUDA device (an empty report included,
so output for CUDA work is exactly Warp's), "CPU" when every result is on the CPU, and
"CPU+CUDA" for a mix. The columns, rule lines and number formats are Warp's, so parsers that
match the rows, or the headings with a pattern such as `(\\S+) timeline:`, read both.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

from kernelc.runtime.context import get_runtime
from kernelc.timing.events import device_alias, device_is_cuda
from kernelc.timing.flags import (
    TIMING_ALL,
    TIMING_GRAPH,
    TIMING_KERNEL,
    TIMING_KERNEL_BUILTIN,
    TIMING_MEMCPY,
    TIMING_MEMSET,
)

__all__ = [
    "TIMING_ALL",
    "TIMING_GRAPH",
    "TIMING_KERNEL",
    "TIMING_KERNEL_BUILTIN",
    "TIMING_MEMCPY",
    "TIMING_MEMSET",
    "ActivityRecorder",
    "TimingResult",
    "synchronize_devices",
    "timing_begin",
    "timing_end",
    "timing_print",
]


@dataclass
class TimingResult:
    """One timed activity.

    Attributes:
        device: The Device object (or alias) the activity ran on.
        name: What ran, e.g. "forward kernel saxpy", "memcpy HtoD", "memset".
        filter: The activity's kind, one of the `TIMING_*` bits.
        elapsed: Milliseconds the activity took on its device.
    """

    device: Any
    name: str
    filter: int
    elapsed: float


class _Activity:
    """An issued activity; shared by every session that wants its kind."""

    __slots__ = ("device", "name", "kind", "start", "end", "ended")

    def __init__(self, device: Any, name: str, kind: int) -> None:
        self.device = device
        self.name = name
        self.kind = kind
        # Host nanoseconds on the CPU, event handles on CUDA.
        self.start: Any = None
        self.end: Any = None
        self.ended = False

    def elapsed_ms(self) -> float | None:
        if not self.ended:
            return None
        if isinstance(self.start, int):
            return (self.end - self.start) / 1e6
        self.end.synchronize()
        return self.start.elapsed_time(self.end)


class _Session:
    __slots__ = ("filter", "activities")

    def __init__(self, cuda_filter: int) -> None:
        self.filter = cuda_filter
        self.activities: list[_Activity] = []


class ActivityRecorder:
    """`rt.recorder` while any timing session is open: hands activities to the sessions."""

    def __init__(self) -> None:
        self._sessions: list[_Session] = []
        self._mask = 0  # union of the open sessions' filters, so `wants` is one AND

    def wants(self, kind: int) -> bool:
        """Whether any open session records activities of `kind` (a `TIMING_*` bit)."""
        return bool(self._mask & kind)

    def begin(self, device: Any, name: str, kind: int) -> _Activity | None:
        """Marks the start of an activity about to be issued on `device`.

        Returns:
            A token for `end`, or None when nothing records this activity (no session
            wants `kind`, or `device` is a CUDA device and no event factory is registered).
        """
        sessions = [s for s in self._sessions if s.filter & kind]
        if not sessions:
            return None
        activity = _Activity(device, name, kind)
        if device_is_cuda(device):
            factory = get_runtime().extras.get("cuda_event_factory")
            if factory is None:
                return None
            activity.start = factory(device, True, False)
            activity.end = factory(device, True, False)
            activity.start.record(None)
        # Appending at begin keeps issue order even when activities overlap.
        for session in sessions:
            session.activities.append(activity)
        if activity.start is None:
            # Taken last, so the bookkeeping above is not part of the measured time.
            activity.start = time.perf_counter_ns()
        return activity

    def end(self, token: _Activity | None) -> None:
        """Marks the end of the activity `token` (from `begin`; None is ignored)."""
        if token is None:
            return
        if isinstance(token.start, int):
            token.end = time.perf_counter_ns()
        else:
            token.end.record(None)
        token.ended = True

    # The session list is replaced, never mutated, so `begin` on another thread iterates a
    # consistent snapshot without taking the lock.
    def push(self, session: _Session) -> None:
        self._sessions = [*self._sessions, session]
        self._mask |= session.filter

    def remove(self, session: _Session) -> None:
        self._sessions = [s for s in self._sessions if s is not session]
        mask = 0
        for other in self._sessions:
            mask |= other.filter
        self._mask = mask

    @property
    def depth(self) -> int:
        """How many sessions are open."""
        return len(self._sessions)


def synchronize_devices() -> None:
    """Waits for all devices through `kernelc.runtime.device.synchronize`, if it exists."""
    try:
        from kernelc.runtime.device import synchronize
    except ImportError:
        return
    synchronize()


def begin_session(cuda_filter: int) -> _Session:
    """Opens a session (no synchronization) and installs the recorder; for ScopedTimer."""
    rt = get_runtime()
    session = _Session(int(cuda_filter))
    with rt.lock:
        recorder = rt.recorder
        if recorder is None:
            recorder = ActivityRecorder()
        recorder.push(session)
        rt.recorder = recorder
    return session


def end_session(session: _Session) -> list[TimingResult]:
    """Closes `session` (no synchronization) and returns its completed activities."""
    rt = get_runtime()
    with rt.lock:
        recorder = rt.recorder
        if recorder is not None and session in recorder._sessions:
            recorder.remove(session)
            if recorder.depth == 0:
                rt.recorder = None
    results = []
    for activity in session.activities:
        elapsed = activity.elapsed_ms()
        # An activity whose issue failed before `end` has no duration; leave it out.
        if elapsed is not None:
            results.append(TimingResult(activity.device, activity.name, activity.kind, elapsed))
    return results


def timing_begin(cuda_filter: int = TIMING_ALL, synchronize: bool = True) -> None:
    """Starts recording the time of each activity whose kind is in `cuda_filter`.

    Args:
        cuda_filter: A combination of `TIMING_KERNEL`, `TIMING_KERNEL_BUILTIN`,
            `TIMING_MEMCPY`, `TIMING_MEMSET`, `TIMING_GRAPH`, or `TIMING_ALL`. Despite the
            name, CPU activities are filtered and timed too.
        synchronize: Wait for all devices first, so earlier work does not overlap.

    Calls nest: each `timing_begin` opens a session that `timing_end` closes.
    """
    if synchronize:
        synchronize_devices()
    begin_session(cuda_filter)


def timing_end(synchronize: bool = True) -> list[TimingResult]:
    """Stops the most recently begun timing session and returns its activities.

    Args:
        synchronize: Wait for all devices first, so that the last activities are complete.

    Returns:
        The recorded activities in issue order; an empty list when no session is open.
    """
    rt = get_runtime()
    with rt.lock:
        recorder = rt.recorder
        session = recorder._sessions[-1] if recorder is not None else None
    if session is None:
        return []
    if synchronize:
        try:
            synchronize_devices()
        except BaseException:
            # Close the session anyway so that it stops recording; its results are dropped.
            end_session(session)
            raise
    return end_session(session)


_RULE = "----------------+---------+------------------------"


def _heading_prefix(results: list[TimingResult]) -> str:
    kinds = {device_is_cuda(r.device) for r in results}
    if kinds == {False}:
        return "CPU"
    if kinds == {True, False}:
        return "CPU+CUDA"
    return "CUDA"


def _table(lines: list[str], indent: str, title: str, header: str) -> None:
    lines += [f"{indent}{title}", f"{indent}{_RULE}", f"{indent}{header}", f"{indent}{_RULE}"]


def format_timing_report(results: list[TimingResult], indent: str = "") -> str:
    """The text `timing_print` prints, without the final newline."""
    prefix = _heading_prefix(results)
    lines: list[str] = []
    _table(lines, indent, f"{prefix} timeline:", "Time            | Device  | Activity")
    for r in results:
        lines.append(f"{indent}{r.elapsed:12.6f} ms | {device_alias(r.device):7} | {r.name}")

    # Dicts keep first-appearance order, which is the order the summaries list.
    by_name: dict[str, list[float]] = {}
    by_device: dict[str, list[float]] = {}
    for r in results:
        for key, table in ((r.name, by_name), (device_alias(r.device), by_device)):
            entry = table.setdefault(key, [0.0, 0])
            entry[0] += r.elapsed
            entry[1] += 1

    for title, column, table in (
        ("activity summary:", "Activity", by_name),
        ("device summary:", "Device", by_device),
    ):
        lines.append("")
        _table(lines, indent, f"{prefix} {title}", f"Total time      | Count   | {column}")
        for key, (total, count) in table.items():
            lines.append(f"{indent}{total:12.6f} ms | {int(count):7d} | {key}")
    return "\n".join(lines)


def timing_print(results: list[TimingResult], indent: str = "") -> None:
    """Prints the activity report: timeline, activity summary and device summary.

    Args:
        results: The activities, as `timing_end` returns them.
        indent: Text put before every non-empty line (ScopedTimer passes its nesting).

    The timeline lists every activity in issue order; the activity summary totals the time
    and count per distinct name, the device summary per device, both in order of first
    appearance. See the module docstring for the heading names.
    """
    sys.stdout.write(format_timing_report(results, indent) + "\n")
