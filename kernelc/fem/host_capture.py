"""Host-side geometry work inside a CPU graph capture.

Several kernelc geometries (`Nanogrid` and its environment builds) are built on the host:
they launch small lookup kernels and read the results back at once. A CPU capture defers
launches and host copies until the graph is replayed, so such reads would see memory
that was never written. Inside a capture, these builds therefore run with the capture
suspended (so the returned geometry is complete), and what a replay must redo (a
rebuild from the arrays' contents at replay time) is recorded as a host step.
"""

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from kernelc.runtime.context import get_runtime


class HostStep:
    """A recorded operation that calls a Python function when the graph is replayed."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn

    def launch(self) -> None:
        self.fn()


def cpu_capture(device: Any = None) -> Any:
    """The CPU capture this thread has open, or None (always None for a CUDA `device`)."""
    if device is not None and not getattr(device, "is_cpu", False):
        return None
    capture = get_runtime().extras.get("capture")
    if capture is None or capture.thread != threading.get_ident():
        return None
    return capture


@contextmanager
def suspended(capture: Any) -> Iterator[None]:
    """Runs the block's launches and copies now instead of recording them in `capture`."""
    rt = get_runtime()
    with rt.lock:
        rt.extras.pop("capture", None)
    try:
        yield
    finally:
        with rt.lock:
            rt.extras["capture"] = capture


def record(capture: Any, fn: Callable[[], Any]) -> None:
    """Records `fn` in `capture`: each replay of the graph calls it, in order."""
    capture.intercept(HostStep(fn))
