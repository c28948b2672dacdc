"""Events: points in a device's work queue that can be waited on, polled and timed.

Two spellings of the same object are offered. Warp's functions (`record_event`,
`wait_event`, `synchronize_event`, `get_event_elapsed_time`) and Dr.Jit's methods
(`Event.record`, `Event.query`, `Event.wait`, `Event.elapsed_time`) work on the CPU as well
as on CUDA devices.

CPU semantics. CPU launches run synchronously on the calling thread, so there is no stream:
work issued by one thread is ordered by that thread's program order, and everything issued
before `record()` has finished by the time `record()` returns. A CPU event is therefore a host
timestamp (`time.perf_counter_ns`) taken at record time; it is exact, and `query()` is True
as soon as the event is recorded. Another thread that waits on the event waits until the
recording thread has recorded it.

CUDA seam. The CUDA runtime registers a factory in the runtime's extras::

    rt.extras["cuda_event_factory"] = factory   # factory(device, enable_timing, interprocess)

`factory` returns an object following `EventImpl` (record on the device's current stream,
query, synchronize, make the current stream wait, elapsed time in ms). Until a factory is
registered, creating an event on a CUDA device raises a `RuntimeError`. The activity
recorder (`kernelc.timing.activity`) uses the same factory.

Graph capture seam. While a CPU graph capture is being recorded, the capture object is
`rt.extras["capture"]`. Recording an event then calls `capture.defer_event(impl)` instead
of taking a timestamp; the capture calls `impl.mark_pending()` when a replay starts and
`impl.complete(timestamp_ns)` when the replay reaches the event, so events recorded inside a
capture time the graph's launch, not its recording.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol

from kernelc.runtime.context import get_runtime


class EventImpl(Protocol):
    """What a device kind provides behind `Event` (the CUDA runtime implements this too)."""

    def record(self, stream: Any = None) -> None:
        """Marks the current point of `stream` (None: the device's current stream)."""

    def query(self) -> bool:
        """True when all work issued before the last record has finished."""

    def synchronize(self) -> None:
        """Blocks the calling thread, with the GIL released, until the event completes."""

    def wait(self, stream: Any = None) -> None:
        """Makes `stream` (None: the current stream) wait for the event before further work."""

    def elapsed_time(self, end: EventImpl) -> float:
        """Milliseconds from this event to `end`; both complete and created with timing."""


class _AliasDevice:
    """The device a bare alias names, used when the device runtime cannot be imported."""

    __slots__ = ("alias", "is_cpu", "is_cuda")

    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.is_cuda = alias.startswith("cuda")
        self.is_cpu = not self.is_cuda

    def __str__(self) -> str:
        return self.alias

    def __repr__(self) -> str:
        return f"Device({self.alias!r})"


def device_alias(device: Any) -> str:
    """The alias of a Device object ("cpu", "cuda:0"), or the string itself."""
    return device if isinstance(device, str) else getattr(device, "alias", str(device))


def device_is_cuda(device: Any) -> bool:
    """Whether `device` (a Device object or an alias) is a CUDA device."""
    if isinstance(device, str):
        return device.startswith("cuda")
    return bool(getattr(device, "is_cuda", False))


def resolve_device(device: Any = None) -> Any:
    """The Device object for `device` (None: the current device).

    Goes through `kernelc.runtime.device.get_device` when that module is available, so the
    events and the launcher agree on device identity; falls back to a small alias-only
    stand-in otherwise.
    """
    if device is None:
        device = get_runtime().current_device
    if device is not None and not isinstance(device, str):
        return device
    try:
        from kernelc.runtime.device import get_device
    except ImportError:
        return _AliasDevice(device or "cpu")
    return get_device(device)


class CpuEventImpl:
    """A CPU event: a host timestamp taken when the event is recorded."""

    __slots__ = ("timestamp_ns", "enable_timing", "_done")

    def __init__(self, enable_timing: bool) -> None:
        self.enable_timing = enable_timing
        self.timestamp_ns: int | None = None
        # Set except while a captured graph replay has yet to reach the event.
        self._done = threading.Event()
        self._done.set()

    def record(self, stream: Any = None) -> None:
        capture = get_runtime().extras.get("capture")
        if capture is not None:
            capture.defer_event(self)
            return
        self.timestamp_ns = time.perf_counter_ns()

    def mark_pending(self) -> None:
        """Called by a graph replay before it reaches this event."""
        self._done.clear()

    def complete(self, timestamp_ns: int) -> None:
        """Called by a graph replay when it reaches this event."""
        self.timestamp_ns = timestamp_ns
        self._done.set()

    def query(self) -> bool:
        return self._done.is_set()

    def synchronize(self) -> None:
        # threading.Event.wait releases the GIL while it blocks.
        self._done.wait()

    def wait(self, stream: Any = None) -> None:
        # There is no CPU stream to make wait: work that follows runs on the calling thread,
        # so waiting on the host gives the same ordering.
        self._done.wait()

    def elapsed_time(self, end: EventImpl) -> float:
        if not isinstance(end, CpuEventImpl):
            raise ValueError("cannot time between a CPU event and an event on another device")
        if self.timestamp_ns is None or end.timestamp_ns is None:
            raise RuntimeError("both events must be recorded before their elapsed time is read")
        return (end.timestamp_ns - self.timestamp_ns) / 1e6


def _make_impl(device: Any, enable_timing: bool, interprocess: bool) -> EventImpl:
    if not device_is_cuda(device):
        if interprocess:
            raise ValueError("interprocess events exist only on CUDA devices")
        return CpuEventImpl(enable_timing)
    factory = get_runtime().extras.get("cuda_event_factory")
    if factory is None:
        raise RuntimeError(
            f"events on {device_alias(device)} need the CUDA runtime, which is not loaded"
        )
    return factory(device, enable_timing, interprocess)


class Event:
    """A marker in a device's work queue.

    Args:
        device: The device whose work the event follows (None: the current device).
        interprocess: Whether the event can be shared with other processes (CUDA only;
            such events cannot be timed, as in CUDA).
        enable_timing: Whether the event can be used with `elapsed_time`. Timing costs a
            little on CUDA, so it is off unless asked for (Warp's default).

    Raises:
        ValueError: `interprocess` on a CPU device, or together with `enable_timing`.
        RuntimeError: A CUDA device while the CUDA runtime is not loaded.
    """

    __slots__ = ("device", "enable_timing", "interprocess", "impl")

    def __init__(
        self, device: Any = None, interprocess: bool = False, enable_timing: bool = False
    ) -> None:
        if interprocess and enable_timing:
            raise ValueError("an interprocess event cannot have timing enabled")
        self.device = resolve_device(device)
        self.enable_timing = enable_timing
        self.interprocess = interprocess
        self.impl: EventImpl = _make_impl(self.device, enable_timing, interprocess)

    def __repr__(self) -> str:
        return f"Event(device={device_alias(self.device)!r}, enable_timing={self.enable_timing})"

    def record(self, stream: Any = None) -> None:
        """Marks the current point of the work queue (on CUDA: `stream`, or the current one)."""
        self.impl.record(stream)

    def query(self) -> bool:
        """Returns True when the work issued before the last `record()` has finished.

        Never blocks. An event that was never recorded counts as finished, as in CUDA.
        """
        return self.impl.query()

    def wait(self) -> None:
        """Blocks until the work issued before the last `record()` has finished.

        The GIL is released while waiting, so other Python threads keep running.
        """
        self.impl.synchronize()

    def elapsed_time(self, other: Event) -> float:
        """Milliseconds between this event and `other`, recorded later; waits for `other`.

        Raises:
            RuntimeError: Either event was created without `enable_timing=True`, or was
                never recorded.
            ValueError: The events belong to different devices.
        """
        _check_timing(self, other)
        other.impl.synchronize()
        return self.impl.elapsed_time(other.impl)


def _check_timing(start: Event, end: Event) -> None:
    for event in (start, end):
        if not event.enable_timing:
            raise RuntimeError(
                "elapsed time needs events created with enable_timing=True "
                f"({event!r} was not)"
            )
    if device_alias(start.device) != device_alias(end.device):
        raise ValueError(
            f"cannot time between events on {device_alias(start.device)} "
            f"and {device_alias(end.device)}"
        )


def record_event(event: Event | None = None) -> Event:
    """Records `event` (a new one on the current device if None) and returns it.

    On CUDA the event goes on the current stream; on the CPU it takes the time now.
    """
    if event is None:
        event = Event()
    event.record()
    return event


def wait_event(event: Event) -> None:
    """Makes further work on the current stream wait for `event`.

    On the CPU, where work runs on the calling thread, this blocks the thread until the
    event has been recorded (which matters only for events recorded by another thread or
    inside a graph replay).
    """
    event.impl.wait(None)


def synchronize_event(event: Event) -> None:
    """Blocks the calling thread until `event` has completed (the GIL is released)."""
    event.impl.synchronize()


def get_event_elapsed_time(start_event: Event, end_event: Event, synchronize: bool = True) -> float:
    """Milliseconds between two events recorded in that order.

    Args:
        start_event: The earlier event, created with `enable_timing=True`.
        end_event: The later event, created with `enable_timing=True`.
        synchronize: Wait for `end_event` first. With False the caller must make sure both
            events have completed.

    Raises:
        RuntimeError: An event was created without timing, or was never recorded.
        ValueError: The events belong to different devices.
    """
    _check_timing(start_event, end_event)
    if synchronize:
        end_event.impl.synchronize()
    return start_event.impl.elapsed_time(end_event.impl)
