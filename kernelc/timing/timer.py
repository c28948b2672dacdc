"""ScopedTimer: how long a block of code took, and optionally what it ran on the devices."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from kernelc.logger import get_logger
from kernelc.runtime.context import get_runtime
from kernelc.timing import activity
from kernelc.timing.nvtx import profile_range
from kernelc.timing.trace import active_sink

INDENT = "    "  # per nesting level, as Warp prints it


def _thread_state() -> threading.local:
    # The nesting depth is per thread (timers on different threads do not indent each
    # other), kept on the runtime rather than in a module global.
    extras = get_runtime().extras
    local = extras.get("timer_thread_state")
    if local is None:
        local = extras.setdefault("timer_thread_state", threading.local())
    return local


def _depth_change(delta: int) -> int:
    local = _thread_state()
    depth = getattr(local, "depth", 0) + delta
    local.depth = depth
    return depth


class ScopedTimer:
    """Times a `with` block on the host and prints `<name> took <ms> ms` at its end.

    Args:
        name: The label printed and used as the key in `dict`.
        active: With False the timer does nothing (no timing, no output), so it can be left
            in place and switched off, e.g. `active=verbose`.
        print: Print the elapsed time (and the activity report) at the end of the block.
        detailed: Run cProfile over the block and print its statistics sorted by
            cumulative time.
        dict: A dict of lists; the elapsed time is appended to `dict[name]`.
        use_nvtx: Also mark the block as an NVTX range in the color `color`, for Nsight
            Systems.
        color: The NVTX range color (a name such as "rapids" or "yellow", or ARGB int).
        synchronize: Wait for all devices before and after the block, so the time includes
            the device work the block issued (otherwise only the time to issue it).
        cuda_filter: `TIMING_*` bits: time each such activity (kernel launch, copy, memset,
            graph launch, on CUDA devices and on the CPU) and print the activity report.
        report_func: Called as `report_func(results, indent)` instead of `timing_print`.
        skip_tape: Accepted for Warp compatibility; kernelc has no tape to record into.

    Attributes:
        elapsed: Milliseconds the block took (0.0 until it ends).
        timing_results: The `TimingResult` list of the activities, when `cuda_filter` is set.
        extra_msg: Text appended to the printed line; may be set inside the block.

    Example:
        >>> with kc.ScopedTimer("step", cuda_filter=kc.TIMING_KERNEL):
        ...     simulate()
    """

    def __init__(
        self,
        name: str,
        active: bool = True,
        print: bool = True,  # noqa: A002 - Warp's parameter name
        detailed: bool = False,
        dict: dict[str, list[float]] | None = None,  # noqa: A002 - Warp's parameter name
        use_nvtx: bool = False,
        color: str | int = "rapids",
        synchronize: bool = False,
        cuda_filter: int = 0,
        report_func: Callable[[list[activity.TimingResult], str], None] | None = None,
        skip_tape: bool = False,
    ) -> None:
        self.name = name
        self.active = active
        self.elapsed = 0.0
        self.timing_results: list[activity.TimingResult] = []
        self.extra_msg = ""
        self.dict = dict
        if dict is not None:
            dict.setdefault(name, [])
        self.print = print
        self.detailed = detailed
        self.use_nvtx = use_nvtx
        self.color = color
        self.synchronize = synchronize
        self.cuda_filter = cuda_filter
        self.report_func = report_func or activity.timing_print
        self.skip_tape = skip_tape
        self._session: Any = None
        self._profiler = None  # a cProfile.Profile when detailed=True
        self._range: profile_range | None = None
        self._start_ns = 0

    def __enter__(self) -> ScopedTimer:
        if not self.active:
            return self
        if self.synchronize:
            activity.synchronize_devices()
        if self.cuda_filter:
            # A synchronizing timer has just waited; otherwise wait so that earlier work is
            # not counted in this session's first activities.
            if not self.synchronize:
                activity.synchronize_devices()
            self._session = activity.begin_session(self.cuda_filter)
        if self.detailed:
            import cProfile  # only for detailed=True: keeps it out of import kernelc

            self._profiler = cProfile.Profile()
            self._profiler.enable()
        if self.use_nvtx:
            self._range = profile_range(self.name, self.color)
            self._range.__enter__()
        if self.print:
            _depth_change(+1)
        self._start_ns = time.perf_counter_ns()
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        if not self.active:
            return
        # Finish every part of the timer even if synchronizing fails, and never replace an
        # exception raised inside the block.
        error: BaseException | None = None
        if self.synchronize:
            try:
                activity.synchronize_devices()
            except Exception as err:
                error = err
        end_ns = time.perf_counter_ns()
        self.elapsed = (end_ns - self._start_ns) / 1e6
        if self._range is not None:
            self._range.__exit__(None, None, None)
            self._range = None
        if self._profiler is not None:
            self._profiler.disable()
            import pstats

            stats = pstats.Stats(self._profiler, stream=sys.stdout)
            stats.sort_stats(pstats.SortKey.CUMULATIVE).print_stats()
            self._profiler = None
        if self._session is not None:
            error = error or self._end_session()
        if self.dict is not None:
            self.dict.setdefault(self.name, []).append(self.elapsed)
        sink = active_sink()
        if sink is not None:
            sink.event(self.name, "timer", self._start_ns, end_ns, {"elapsed_ms": self.elapsed})
        if self.print:
            self._report()
        if error is not None and exc_type is None:
            raise error

    def _end_session(self) -> BaseException | None:
        session, self._session = self._session, None
        error = None
        if not self.synchronize:
            try:
                activity.synchronize_devices()
            except Exception as err:
                error = err
        self.timing_results = activity.end_session(session)
        return error

    def _report(self) -> None:
        depth = _depth_change(-1)
        indent = INDENT * depth
        if self.timing_results:
            self.report_func(self.timing_results, indent)
        message = f"{indent}{self.name} took {self.elapsed:.2f} ms"
        if self.extra_msg:
            message = f"{message} {self.extra_msg}"
        # Through the active logger, as Warp does, so that a custom logger gets the report
        # too; `print=True` asked for it, so config.log_level does not filter it.
        get_logger().info(message)
