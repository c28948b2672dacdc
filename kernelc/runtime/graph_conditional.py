"""`capture_if` and `capture_while`: branches and loops decided by a value in an array.

Outside a capture they run at once: the condition (the first element of an integer array)
is read back to the host and the chosen body is called. Inside a CPU capture, each body is
run once to record its operations, and the graph gets a conditional node that reads the
condition when a replay reaches it, so the replay takes the branch (or repeats the loop)
that the data asks for at that moment. CUDA graphs in kernelc hold no conditional nodes:
inside a CUDA capture both functions raise.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from kernelc.runtime.context import get_runtime
from kernelc.runtime.graph import CpuCapture, Graph, capture_launch, run_ops

Body = Callable[..., Any] | Graph | None


class Conditional:
    """A conditional node of a CPU graph.

    Attributes:
        condition: The array whose first element decides.
        bodies: The recorded operations: (if true, if false) for a branch, (body,) for a loop.
        loop: Whether the node repeats its body while the condition is non-zero.
    """

    __slots__ = ("condition", "bodies", "loop", "_value")

    def __init__(self, condition: Any, bodies: tuple[list[Any], ...], loop: bool) -> None:
        self.condition = condition
        self.bodies = bodies
        self.loop = loop
        # A one-element NumPy view of the condition's memory: reading it costs no copy.
        self._value = _host_element(condition)

    def launch(self) -> None:
        if not self.loop:
            run_ops(self.bodies[0] if self._value[0] else self.bodies[1])
            return
        while self._value[0]:
            run_ops(self.bodies[0])


def capture_if(condition: Any, on_true: Body = None, on_false: Body = None,
               stream: Any = None, **kwargs: Any) -> None:
    """Runs `on_true` if the first element of `condition` is non-zero, else `on_false`.

    Inside a CPU graph capture the choice is made each time the graph is replayed.

    Args:
        condition: An integer array; its first element is the condition.
        on_true: A callable (given `**kwargs`) or a captured `Graph`, or None.
        on_false: The same, for a zero condition.
        stream: CUDA only: the stream the condition was written on (None: the current one).
        **kwargs: Passed to callable bodies.

    Raises:
        TypeError: `condition` is not a non-empty integer array, or a body is neither
            callable nor a graph.
        RuntimeError: Called inside a CUDA graph capture.
    """
    _check(condition, "capture_if", (on_true, on_false))
    capture = _cpu_capture(condition)
    if capture is not None:
        bodies = (_record(capture, on_true, kwargs), _record(capture, on_false, kwargs))
        capture.ops.append(Conditional(condition, bodies, loop=False))
        return
    body = on_true if _read(condition, stream) else on_false
    _run(body, stream, kwargs)


def capture_while(condition: Any, while_body: Body, stream: Any = None, **kwargs: Any) -> None:
    """Runs `while_body` for as long as the first element of `condition` is non-zero.

    The body must change the condition for the loop to end. Inside a CPU graph capture the
    body is recorded once and the loop runs each time the graph is replayed.

    Args:
        condition: An integer array; its first element is the condition.
        while_body: A callable (given `**kwargs`) or a captured `Graph`.
        stream: CUDA only: the stream the condition was written on (None: the current one).
        **kwargs: Passed to a callable body.

    Raises:
        TypeError: `condition` is not a non-empty integer array, or the body is neither
            callable nor a graph.
        RuntimeError: Called inside a CUDA graph capture.
    """
    if while_body is None:
        raise TypeError("capture_while() needs a body: a callable or a captured graph")
    _check(condition, "capture_while", (while_body,))
    capture = _cpu_capture(condition)
    if capture is not None:
        body = _record(capture, while_body, kwargs)
        capture.ops.append(Conditional(condition, (body,), loop=True))
        return
    while _read(condition, stream):
        _run(while_body, stream, kwargs)


def _check(condition: Any, who: str, bodies: tuple[Body, ...]) -> None:
    from kernelc.runtime.array import array

    if not isinstance(condition, array):
        raise TypeError(f"{who}() needs its condition in a kc.array, got "
                        f"{type(condition).__name__}")
    dtype = getattr(condition.dtype, "name", "")
    if not (dtype.startswith(("int", "uint")) or dtype == "bool") or condition.size == 0:
        raise TypeError(f"{who}() needs a non-empty integer array as its condition, got "
                        f"{condition.size} elements of {condition.dtype!r}")
    for body in bodies:
        if body is not None and not isinstance(body, Graph) and not callable(body):
            raise TypeError(f"{who}() bodies must be callables or captured graphs, got "
                            f"{type(body).__name__}")


def _cpu_capture(condition: Any) -> CpuCapture | None:
    """The CPU capture this call is recorded into, if any; raises inside a CUDA capture."""
    device = condition.device
    if device.is_cuda:
        from kernelc.runtime.device import cuda_runtime

        if cuda_runtime().device_info(device).capturing:
            raise RuntimeError("kernelc's CUDA graphs cannot hold conditional nodes: call "
                               "capture_if/capture_while outside the CUDA capture, or capture "
                               "on the CPU")
        return None
    capture = get_runtime().extras.get("capture")
    if capture is None or capture.thread != threading.get_ident():
        return None
    return capture


def _record(capture: CpuCapture, body: Body, kwargs: dict[str, Any]) -> list[Any]:
    """The operations `body` issues, recorded into a list of their own."""
    if body is None:
        return []
    if isinstance(body, Graph):
        if not body.device.is_cpu:
            raise TypeError(f"a CPU capture cannot hold a graph captured on {body.device.alias}")
        return list(body.ops)
    outer, capture.ops = capture.ops, []
    try:
        body(**kwargs)
    finally:
        recorded, capture.ops = capture.ops, outer
    return recorded


def _read(condition: Any, stream: Any) -> bool:
    if condition.device.is_cpu:
        return bool(_host_element(condition)[0])
    if stream is not None:
        from kernelc.runtime.streams import synchronize_stream

        synchronize_stream(stream)
    return bool(condition.numpy().reshape(-1)[0])


def _run(body: Body, stream: Any, kwargs: dict[str, Any]) -> None:
    if body is None:
        return
    if isinstance(body, Graph):
        capture_launch(body, stream)
    else:
        body(**kwargs)


def _host_element(condition: Any) -> np.ndarray:
    from kernelc.runtime.memory import host_view

    view = host_view(condition)
    return view[(slice(0, 1),) + (0,) * (view.ndim - 1)]  # a view, also of strided arrays
