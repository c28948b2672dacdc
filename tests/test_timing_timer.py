"""ScopedTimer: the printed line, nesting, dict collection, activity reports, options."""

from __future__ import annotations

import re
import sys
import threading
import types

import pytest

import kernelc as kc
from kernelc.runtime.context import get_runtime
from kernelc.timing import nvtx as kc_nvtx
from kernelc.timing.flags import TIMING_ALL, TIMING_KERNEL, TIMING_MEMSET
from kernelc.timing.timer import ScopedTimer


class FakeDevice:
    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.is_cuda = alias.startswith("cuda")
        self.is_cpu = not self.is_cuda


CPU = FakeDevice("cpu")
TOOK = re.compile(r"^( *)(.+) took (\d+\.\d\d) ms(?: (.*))?$")


@pytest.fixture(autouse=True)
def clean_runtime(monkeypatch):
    rt = get_runtime()
    monkeypatch.setattr(rt, "recorder", None)
    monkeypatch.setattr(rt, "trace", None)
    monkeypatch.setattr(rt, "extras", {})
    device_module = types.ModuleType("kernelc.runtime.device")
    device_module.sync_calls = 0

    def synchronize() -> None:
        device_module.sync_calls += 1

    device_module.synchronize = synchronize
    monkeypatch.setitem(sys.modules, "kernelc.runtime.device", device_module)
    yield device_module
    assert rt.recorder is None


def issue(name: str, kind: int) -> None:
    recorder = get_runtime().recorder
    if recorder is not None and recorder.wants(kind):
        recorder.end(recorder.begin(CPU, name, kind))


def took_lines(text: str) -> list[tuple[str, str, float, str | None]]:
    return [
        (m[1], m[2], float(m[3]), m[4])
        for m in map(TOOK.match, text.splitlines())
        if m is not None
    ]


def test_prints_elapsed(capsys):
    with ScopedTimer("step") as timer:
        sum(range(10_000))
    (line,) = took_lines(capsys.readouterr().out)
    assert line[:2] == ("", "step")
    assert timer.elapsed > 0.0
    assert line[2] == pytest.approx(timer.elapsed, abs=0.006)


def test_is_the_public_name():
    assert kc.ScopedTimer is ScopedTimer


def test_nested_timers_indent(capsys):
    with ScopedTimer("outer") as outer:
        with ScopedTimer("middle"):
            with ScopedTimer("inner") as inner:
                pass
    lines = took_lines(capsys.readouterr().out)
    assert [(indent, name) for indent, name, _, _ in lines] == [
        ("        ", "inner"), ("    ", "middle"), ("", "outer"),
    ]
    assert outer.elapsed >= inner.elapsed


def test_silent_timer_does_not_indent(capsys):
    with ScopedTimer("quiet", print=False) as quiet:
        with ScopedTimer("loud"):
            pass
    assert took_lines(capsys.readouterr().out) == [("", "loud", pytest.approx(0, abs=1), None)]
    assert quiet.elapsed > 0.0


def test_extra_msg(capsys):
    with ScopedTimer("step") as timer:
        timer.extra_msg = "(120 substeps)"
    (line,) = took_lines(capsys.readouterr().out)
    assert line[3] == "(120 substeps)"


def test_dict_collects_elapsed_times():
    times: dict[str, list[float]] = {}
    for _ in range(3):
        with ScopedTimer("step", dict=times, print=False):
            pass
    with ScopedTimer("other", dict=times, active=False):
        pass
    assert list(times) == ["step", "other"]
    assert len(times["step"]) == 3 and all(t > 0.0 for t in times["step"])
    assert times["other"] == []


def test_inactive_timer_does_nothing(capsys, clean_runtime):
    with ScopedTimer("off", active=False, cuda_filter=TIMING_ALL, synchronize=True) as timer:
        assert get_runtime().recorder is None
    assert capsys.readouterr().out == ""
    assert timer.elapsed == 0.0 and timer.timing_results == [] and timer.extra_msg == ""
    assert clean_runtime.sync_calls == 0


def test_synchronize_before_and_after(clean_runtime):
    with ScopedTimer("sync", synchronize=True, print=False):
        assert clean_runtime.sync_calls == 1
    assert clean_runtime.sync_calls == 2


def test_activity_report_then_elapsed(capsys):
    with ScopedTimer("step", cuda_filter=TIMING_ALL) as timer:
        issue("memset", TIMING_MEMSET)
        issue("forward kernel k", TIMING_KERNEL)
    out = capsys.readouterr().out
    assert [r.name for r in timer.timing_results] == ["memset", "forward kernel k"]
    assert out.index("CPU timeline:") < out.index("CPU device summary:") < out.index("step took")


def test_nested_activity_timers(capsys):
    with ScopedTimer("outer", cuda_filter=TIMING_ALL) as outer:
        issue("forward kernel a", TIMING_KERNEL)
        with ScopedTimer("inner", cuda_filter=TIMING_MEMSET) as inner:
            issue("memset", TIMING_MEMSET)
            issue("forward kernel b", TIMING_KERNEL)
    assert [r.name for r in inner.timing_results] == ["memset"]
    assert [r.name for r in outer.timing_results] == ["forward kernel a", "memset",
                                                      "forward kernel b"]
    out = capsys.readouterr().out
    assert "    CPU timeline:" in out  # the inner report carries the inner indent
    assert "\nCPU timeline:" in out


def test_report_func_gets_results_and_indent(capsys):
    calls = []
    with ScopedTimer("outer"):
        with ScopedTimer("inner", cuda_filter=TIMING_KERNEL,
                         report_func=lambda results, indent: calls.append((results, indent))):
            issue("forward kernel k", TIMING_KERNEL)
    ((results, indent),) = calls
    assert indent == "    " and [r.name for r in results] == ["forward kernel k"]
    assert "timeline" not in capsys.readouterr().out


def test_no_report_without_activities(capsys):
    with ScopedTimer("step", cuda_filter=TIMING_MEMSET):
        issue("forward kernel k", TIMING_KERNEL)
    assert "timeline" not in capsys.readouterr().out


def test_detailed_prints_cumulative_profile(capsys):
    with ScopedTimer("profiled", detailed=True):
        sorted(range(1000), key=lambda x: -x)
    out = capsys.readouterr().out
    assert "Ordered by: cumulative time" in out
    assert "profiled took" in out


def test_exception_propagates_and_state_is_restored(capsys):
    with pytest.raises(ValueError, match="boom"):
        with ScopedTimer("outer", cuda_filter=TIMING_ALL):
            raise ValueError("boom")
    assert get_runtime().recorder is None
    with ScopedTimer("after"):
        pass
    assert took_lines(capsys.readouterr().out)[-1][:2] == ("", "after")


def test_synchronize_error_is_raised_after_cleanup(clean_runtime):
    def failing() -> None:
        raise RuntimeError("device fault")

    timer = ScopedTimer("bad", print=False, cuda_filter=TIMING_ALL)
    with pytest.raises(RuntimeError, match="device fault"):
        with timer:
            issue("memset", TIMING_MEMSET)
            clean_runtime.synchronize = failing  # fails only when the timer ends
    assert get_runtime().recorder is None
    assert [r.name for r in timer.timing_results] == ["memset"]
    assert timer.elapsed > 0.0


def test_depth_is_per_thread(capsys):
    lines = []

    def worker() -> None:
        with ScopedTimer("worker", print=False) as timer:
            pass
        lines.append(timer)
        with ScopedTimer("worker-loud"):
            pass

    with ScopedTimer("main"):
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
    indents = {name: indent for indent, name, _, _ in took_lines(capsys.readouterr().out)}
    assert indents == {"worker-loud": "", "main": ""}


class RecordingDomain:
    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def get_event_attributes(self, message=None, color=None):
        return (message, color)

    def push_range(self, attributes):
        self.calls.append(("push", attributes))

    def pop_range(self):
        self.calls.append(("pop", None))


def test_use_nvtx_opens_a_colored_range(capsys):
    domain = RecordingDomain()
    state = kc_nvtx._state()
    state.domain = domain
    with ScopedTimer("ranged", use_nvtx=True, color="yellow"):
        assert domain.calls == [("push", ("ranged", kc_nvtx.COLORS["yellow"]))]
    assert domain.calls[-1] == ("pop", None)
    assert "ranged took" in capsys.readouterr().out


def test_use_nvtx_without_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "nvtx", None)
    with ScopedTimer("ranged", use_nvtx=True, print=False) as timer:
        pass
    assert timer.elapsed > 0.0
    assert not kc_nvtx.nvtx_available()


def test_timer_emits_trace_event():
    sink = kc.trace_begin()
    with ScopedTimer("traced", print=False) as timer:
        pass
    kc.trace_end()
    ((name, category, start, end, _, args),) = sink.events
    assert (name, category) == ("traced", "timer")
    assert end >= start and args == {"elapsed_ms": timer.elapsed}
