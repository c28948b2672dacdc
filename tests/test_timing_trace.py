"""Chrome trace-event export."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

import kernelc as kc
from kernelc.config import config
from kernelc.runtime.context import get_runtime
from kernelc.timing.trace import active_sink, trace_begin, trace_end, trace_export


@pytest.fixture(autouse=True)
def clean_runtime(monkeypatch):
    rt = get_runtime()
    monkeypatch.setattr(rt, "trace", None)
    monkeypatch.setattr(rt, "extras", {})
    monkeypatch.setattr(config, "compile_time_trace", False)


def complete_events(document: dict) -> list[dict]:
    return [event for event in document["traceEvents"] if event["ph"] == "X"]


def test_public_names():
    assert kc.trace_export is trace_export and kc.trace_begin is trace_begin


def test_export_holds_launcher_and_timer_events(tmp_path):
    sink = trace_begin()
    assert get_runtime().trace is sink
    start = time.perf_counter_ns()
    get_runtime().trace.event("launch", "launch", start, start + 2_500,
                              {"kernel": "saxpy", "dim": [1024], "device": "cpu"})
    get_runtime().trace.event("compile", "compile", start + 3_000, start + 9_000)
    with kc.ScopedTimer("frame", print=False):
        pass

    worker = threading.Thread(target=lambda: sink.event("memcpy", "memcpy", start, start + 1000),
                              name="copier")
    worker.start()
    worker.join()

    path = trace_export(tmp_path / "trace.json")
    document = json.loads(path.read_text())
    events = complete_events(document)
    assert [(e["name"], e["cat"]) for e in events] == [
        ("launch", "launch"), ("compile", "compile"), ("frame", "timer"), ("memcpy", "memcpy"),
    ]
    launch, compile_event, frame, memcpy = events
    assert launch["dur"] == pytest.approx(2.5) and compile_event["dur"] == pytest.approx(6.0)
    assert compile_event["ts"] - launch["ts"] == pytest.approx(3.0)
    assert launch["args"] == {"kernel": "saxpy", "dim": [1024], "device": "cpu"}
    assert "args" not in compile_event and "elapsed_ms" in frame["args"]
    assert all(e["pid"] == os.getpid() for e in events)
    assert launch["tid"] == frame["tid"] != memcpy["tid"]
    names = {e["args"]["name"] for e in document["traceEvents"] if e["ph"] == "M"}
    assert {"kernelc", "copier", threading.current_thread().name} <= names


def test_export_after_trace_end(tmp_path):
    sink = trace_begin()
    assert trace_begin() is sink  # already on: the same sink
    sink.event("launch", "launch", 0, 10)
    assert trace_end() is sink and get_runtime().trace is None
    sink.event("late", "launch", 0, 10)  # the launcher no longer sees it; harmless
    document = json.loads(trace_export(tmp_path / "t.json").read_text())
    assert [e["name"] for e in complete_events(document)] == ["launch", "late"]


def test_export_without_tracing_raises(tmp_path):
    with pytest.raises(RuntimeError, match="trace_begin"):
        trace_export(tmp_path / "t.json")
    assert not (tmp_path / "t.json").exists()


def test_no_sink_means_timers_emit_nothing():
    with kc.ScopedTimer("frame", print=False):
        pass
    assert get_runtime().trace is None and active_sink() is None


def test_compile_time_trace_setting_turns_tracing_on(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "compile_time_trace", True)
    with kc.ScopedTimer("frame", print=False):
        pass
    assert get_runtime().trace is not None
    document = json.loads(trace_export(tmp_path / "t.json").read_text())
    assert [e["name"] for e in complete_events(document)] == ["frame"]
