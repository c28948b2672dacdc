"""Graphs: record a sequence of launches once, replay it with one call.

CUDA devices use CUDA graphs: `ScopedCapture` captures a stream (cuStreamBeginCapture /
cuStreamEndCapture, in thread-local mode so other threads keep working normally) and
instantiates the graph (cuGraphInstantiate); `capture_launch` is one cuGraphLaunch.
Memory cannot be allocated during a capture (allocate the arrays first); arrays freed
during one are released when it ends; debug-mode error records are not read inside it.

On the CPU, a capture records each launch issued by the capturing thread as a packed
`kernelc.runtime.launch.Launch` instead of running it, each host copy and memset as a
deferred operation, each timing event as a marker, and each `capture_if` / `capture_while`
as a conditional node holding the operations its bodies recorded. `capture_launch` replays
the list in order without checking or packing arguments; the events get their timestamps as
the replay reaches them, so they time the replay, not the recording.
"""

from __future__ import annotations

import enum
import threading
import time
from types import TracebackType
from typing import Any

from kernelc.runtime.context import get_runtime
from kernelc.runtime.device import Device, Devicelike, cuda_runtime, get_device
from kernelc.timing.flags import TIMING_GRAPH


class CaptureMode(enum.IntEnum):
    """How a CUDA stream capture treats unsafe calls from other threads (cudaStreamCaptureMode).

    CPU captures always record only the capturing thread's work.
    """

    GLOBAL = 0
    THREAD_LOCAL = 1
    RELAXED = 2


class Graph:
    """A captured graph, launched with `capture_launch`.

    Attributes:
        device: The device it runs on.
        ops: CPU graphs: the recorded launches and event markers, in order.
    """

    def __init__(self, device: Device, ops: list[Any] | None = None, exec_handle: Any = None,
                 graph_handle: Any = None, refs: list[Any] | None = None) -> None:
        self.device = device
        self.ops = ops if ops is not None else []
        self.exec_handle = exec_handle
        self.graph_handle = graph_handle
        self.refs = refs or []  # captured CUDA launches: keep their argument arrays alive

    def __repr__(self) -> str:
        count = f", {len(self.ops)} ops" if self.device.is_cpu else ""
        return f"<Graph on {self.device.alias}{count}>"

    def __del__(self) -> None:
        if self.exec_handle is None:
            return
        try:
            driver = cuda_runtime().cu
            driver.cuGraphExecDestroy(self.exec_handle)
            driver.cuGraphDestroy(self.graph_handle)
        except Exception:  # interpreter shutdown
            pass


class _DeferredEvent:
    """A CPU timing event recorded inside a capture: completed when a replay reaches it."""

    __slots__ = ("impl",)

    def __init__(self, impl: Any) -> None:
        self.impl = impl


class CpuCapture:
    """`rt.extras["capture"]` while a CPU capture is open (see kernelc.timing.events)."""

    def __init__(self) -> None:
        self.ops: list[Any] = []
        self.thread = threading.get_ident()

    def intercept(self, cmd: Any) -> bool:
        """Records a packed launch (or a host copy or memset: anything with a `launch()`)
        instead of running it; False for other threads' work."""
        if threading.get_ident() != self.thread:
            return False
        self.ops.append(cmd)
        return True

    def defer_event(self, impl: Any) -> None:
        """Records a CPU event so that a replay, not the recording, gives it its time."""
        self.ops.append(_DeferredEvent(impl))


class ScopedCapture:
    """Captures the launches inside a ``with`` block into `.graph`.

    Args:
        device: The device (None: the stream's device, else the current device).
        stream: CUDA only: the stream to capture (None: the device's current stream).
        force_module_load: Load the kernels of `__main__` on the device first, so that no
            compilation or module load happens during the capture.
        external: Accepted for Warp compatibility; kernelc always starts the capture itself.
        apic: Accepted for Warp compatibility: CPU captures always record their operations,
            and kernelc cannot save graphs to files.
        capture_mode: CUDA only: how the stream capture treats other threads' CUDA calls.

    Example:
        >>> with kc.ScopedCapture() as capture:
        ...     kc.launch(step, n, inputs=[x, v])
        >>> for _ in range(100):
        ...     kc.capture_launch(capture.graph)
    """

    def __init__(self, device: Devicelike = None, stream: Any = None,
                 force_module_load: bool | None = True, external: bool = False,
                 apic: bool = False, capture_mode: CaptureMode = CaptureMode.THREAD_LOCAL
                 ) -> None:
        self.device = stream.device if stream is not None and device is None else get_device(
            device)
        self.stream = stream
        self.force_module_load = True if force_module_load is None else force_module_load
        self.capture_mode = CaptureMode(capture_mode)
        self.graph: Graph | None = None
        self._cpu: CpuCapture | None = None
        self._scope: Any = None

    def __enter__(self) -> ScopedCapture:
        if self.force_module_load:
            from kernelc.runtime.module import force_load

            force_load(self.device)
        if self.device.is_cpu:
            rt = get_runtime()
            with rt.lock:
                if rt.extras.get("capture") is not None:
                    raise RuntimeError("a CPU graph capture is already open; captures do not "
                                       "nest")
                self._cpu = rt.extras["capture"] = CpuCapture()
            return self
        self._begin_cuda()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._cpu is not None:
            get_runtime().extras.pop("capture", None)
            if exc_type is None:
                self.graph = Graph(self.device, self._cpu.ops)
            self._cpu = None
            return
        self._end_cuda(failed=exc_type is not None)

    def _begin_cuda(self) -> None:
        from kernelc.runtime.streams import ScopedStream, Stream, get_stream

        cuda = cuda_runtime()
        info = cuda.device_info(self.device)
        stream = self.stream if self.stream is not None else get_stream(self.device)
        if not isinstance(stream, Stream):
            raise TypeError(f"ScopedCapture needs a kc.Stream, got {type(stream).__name__}")
        # The captured stream becomes current, so launches and copies that name no stream
        # go into the graph.
        self._scope = ScopedStream(stream, sync_enter=False)
        self._scope.__enter__()
        try:
            mode = cuda.cu.CUstreamCaptureMode(int(self.capture_mode))
            cuda.call(cuda.cu.cuStreamBeginCapture, stream.handle, mode)
        except BaseException:
            self._scope.__exit__(None, None, None)
            raise
        info.capturing += 1
        info.capture_refs = []
        self.stream = stream

    def _end_cuda(self, failed: bool) -> None:
        cuda = cuda_runtime()
        info = cuda.device_info(self.device)
        try:
            graph = cuda.call(cuda.cu.cuStreamEndCapture, self.stream.handle)
        finally:
            refs, info.capture_refs = info.capture_refs, []
            cuda.end_capture(info)
            self._scope.__exit__(None, None, None)
        if failed:
            cuda.cu.cuGraphDestroy(graph)
            return
        try:
            exec_handle = cuda.call(cuda.cu.cuGraphInstantiate, graph, 0)
        except BaseException:
            cuda.cu.cuGraphDestroy(graph)
            raise
        self.graph = Graph(self.device, exec_handle=exec_handle, graph_handle=graph, refs=refs)


def capture_launch(graph: Graph, stream: Any = None) -> None:
    """Runs a captured graph (on CUDA: on `stream`, or the device's current stream)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"capture_launch() needs a graph from ScopedCapture, got "
                        f"{type(graph).__name__}")
    rt = get_runtime()
    rec = rt.recorder
    token = None
    if graph.device.is_cpu:
        if rec is not None and rec.wants(TIMING_GRAPH):
            token = rec.begin(graph.device, "graph", TIMING_GRAPH)
        _replay_cpu(graph)
        if token is not None:
            rec.end(token)
        return
    cuda = cuda_runtime()
    info = cuda.device_info(graph.device)
    saved = info.current_stream
    if stream is not None:
        info.current_stream = stream  # the recorder's events bracket this graph launch
    try:
        if rec is not None and rec.wants(TIMING_GRAPH):
            token = rec.begin(graph.device, "graph", TIMING_GRAPH)
        cuda.call(cuda.cu.cuGraphLaunch, graph.exec_handle, cuda.stream_handle(info))
        if token is not None:
            rec.end(token)
    finally:
        info.current_stream = saved


def run_ops(ops: list[Any]) -> None:
    """Runs recorded CPU graph operations in order (a replay, or a conditional's body)."""
    for op in ops:
        if isinstance(op, _DeferredEvent):
            op.impl.complete(time.perf_counter_ns())
        else:
            op.launch()


def _events(ops: list[Any]) -> list[Any]:
    found = []
    for op in ops:
        if isinstance(op, _DeferredEvent):
            found.append(op.impl)
        for body in getattr(op, "bodies", ()):  # conditional nodes
            found += _events(body)
    return found


def _replay_cpu(graph: Graph) -> None:
    events = _events(graph.ops)
    for impl in events:
        impl.mark_pending()
    try:
        run_ops(graph.ops)
    finally:
        # A failed launch must not leave waiters blocked on events it never reached.
        for impl in events:
            if not impl.query():
                impl.complete(time.perf_counter_ns())


# Captures opened by capture_begin(), by device alias, until capture_end() closes them.
_OPEN_CAPTURES: dict[str, ScopedCapture] = {}


def capture_begin(device: Devicelike = None, stream: Any = None,
                  force_module_load: bool | None = None, external: bool = False,
                  apic: bool = False, capture_mode: CaptureMode = CaptureMode.THREAD_LOCAL
                  ) -> None:
    """Starts capturing launches on `device` (Warp's function form of `ScopedCapture`).

    Args:
        device: The device (None: the stream's device, else the current device).
        stream: CUDA only: the stream to capture.
        force_module_load: Load `__main__`'s kernels first (default True).
        external: Accepted for Warp compatibility; kernelc always starts the capture itself.
        apic: Accepted for Warp compatibility (see `ScopedCapture`).
        capture_mode: CUDA only: how the stream capture treats other threads' CUDA calls.
    """
    capture = ScopedCapture(device, stream, force_module_load, external, apic, capture_mode)
    key = capture.device.alias
    if key in _OPEN_CAPTURES:
        raise RuntimeError(f"a capture is already open on {key}; call capture_end() first")
    capture.__enter__()
    _OPEN_CAPTURES[key] = capture


def capture_end(device: Devicelike = None, stream: Any = None) -> Graph:
    """Ends the capture `capture_begin()` started on `device` and returns its graph."""
    dev = stream.device if stream is not None and device is None else get_device(device)
    capture = _OPEN_CAPTURES.pop(dev.alias, None)
    if capture is None:
        raise RuntimeError(f"no capture is open on {dev.alias}; call capture_begin() first")
    capture.__exit__(None, None, None)
    return capture.graph


def is_conditional_graph_supported() -> bool:
    """Whether graphs may hold conditional nodes (Warp's `capture_if` / `capture_while`).

    Always False: kernelc's CUDA graphs hold no conditional nodes, so code that asks (as
    Warp's own utilities do before a device-side loop) takes its host-side path. CPU graphs
    do record `capture_if` and `capture_while`.
    """
    return False
