"""Chrome trace-event export: launches, copies, compiles and timers on a timeline.

While tracing is on, `get_runtime().trace` is a `TraceSink`; the launcher and the compiler
call `sink.event(name, category, start_ns, end_ns, args)` with `time.perf_counter_ns()`
timestamps for each thing they do ("launch", "compile", "memcpy", ...), and every active
`ScopedTimer` adds its range. `trace_export(path)` writes them as the JSON object format of
the Trace Event Format, which Perfetto (ui.perfetto.dev) and chrome://tracing open.

Setting `kc.config.compile_time_trace = True` turns tracing on too: code that is about to
emit events calls `active_sink()`, which installs a sink when the setting is on and none is
installed yet.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from kernelc.runtime.context import get_runtime


class TraceSink:
    """Collects complete ("X") events in memory until they are exported."""

    def __init__(self) -> None:
        self.origin_ns = time.perf_counter_ns()
        # Tuples, not dicts, keep `event` cheap; the JSON is built only on export.
        self.events: list[tuple[str, str, int, int, int, dict[str, Any] | None]] = []
        self.thread_names: dict[int, str] = {}

    def event(
        self,
        name: str,
        category: str,
        start_ns: int,
        end_ns: int,
        args: dict[str, Any] | None = None,
    ) -> None:
        """Records that `name` ran from `start_ns` to `end_ns` (perf_counter_ns) on this thread."""
        thread_id = threading.get_ident()
        if thread_id not in self.thread_names:
            self.thread_names[thread_id] = threading.current_thread().name
        self.events.append((name, category, start_ns, end_ns, thread_id, args))

    def to_json(self) -> dict[str, Any]:
        """The trace as a Trace Event Format object: {"traceEvents": [...], ...}."""
        pid = os.getpid()
        # Copy events before names: any thread named in the copied events is then named.
        events = list(self.events)
        thread_names = dict(self.thread_names)
        # Small, stable thread ids read better in viewers than raw thread idents.
        tids = {ident: number for number, ident in enumerate(thread_names, start=1)}
        trace_events: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
             "args": {"name": "kernelc"}},
        ]
        for ident, thread_name in thread_names.items():
            trace_events.append({"name": "thread_name", "ph": "M", "pid": pid,
                                 "tid": tids[ident], "args": {"name": thread_name}})
        for name, category, start_ns, end_ns, ident, args in events:
            event = {
                "name": name,
                "cat": category,
                "ph": "X",
                "ts": (start_ns - self.origin_ns) / 1e3,
                "dur": max(end_ns - start_ns, 0) / 1e3,
                "pid": pid,
                "tid": tids[ident],
            }
            if args:
                event["args"] = args
            trace_events.append(event)
        return {"traceEvents": trace_events, "displayTimeUnit": "ms"}


def trace_begin() -> TraceSink:
    """Starts collecting trace events (keeps the current sink if tracing is already on)."""
    rt = get_runtime()
    with rt.lock:
        if rt.trace is None:
            rt.trace = TraceSink()
        return rt.trace


def trace_end() -> TraceSink | None:
    """Stops collecting trace events; returns the sink, which `trace_export` can still write."""
    rt = get_runtime()
    with rt.lock:
        sink, rt.trace = rt.trace, None
        if sink is not None:
            rt.extras["trace_last"] = sink
    return sink


def active_sink() -> TraceSink | None:
    """`rt.trace`, after installing one if `kc.config.compile_time_trace` asks for it."""
    sink = get_runtime().trace
    if sink is not None:
        return sink
    # Read the setting on every call (a user may set it at any time), through sys.modules
    # because this runs on every launch; kernelc's package import has loaded the module.
    settings = sys.modules.get("kernelc.config")
    if settings is not None and settings.config.compile_time_trace:
        return trace_begin()
    return None


def trace_export(path: str | os.PathLike[str]) -> Path:
    """Writes everything recorded since tracing began as Chrome trace-event JSON.

    Tracing stays on. Exports the current sink, or the last one `trace_end` stopped.

    Args:
        path: The file to write (conventionally `*.json`); open it in ui.perfetto.dev.

    Returns:
        The path written.

    Raises:
        RuntimeError: Tracing was never turned on (`trace_begin()` or
            `kc.config.compile_time_trace = True`).
    """
    rt = get_runtime()
    sink = active_sink() or rt.extras.get("trace_last")
    if sink is None:
        raise RuntimeError(
            "nothing to export: call kc.trace_begin() (or set "
            "kc.config.compile_time_trace = True) before the work to trace"
        )
    path = Path(path)
    with rt.lock:
        document = sink.to_json()
    path.write_text(json.dumps(document))
    return path
