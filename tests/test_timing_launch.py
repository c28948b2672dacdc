"""The timing package driven by real CPU launches, copies and memsets."""

from __future__ import annotations

import json

import numpy as np
import pytest

import kernelc as kc
from kernelc.runtime.context import get_runtime

pytestmark = pytest.mark.skipif(not hasattr(kc, "launch"), reason="needs the kernel launcher")


@kc.kernel
def scale(a: kc.array(dtype=float), s: float):
    i = kc.tid()
    a[i] = a[i] * s


@pytest.fixture(autouse=True)
def clean_runtime(monkeypatch):
    rt = get_runtime()
    monkeypatch.setattr(rt, "recorder", None)
    monkeypatch.setattr(rt, "trace", None)
    monkeypatch.setattr(rt, "history", [])
    monkeypatch.setattr(rt, "extras", dict(rt.extras))
    a = kc.zeros(64, dtype=float, device="cpu")
    kc.launch(scale, dim=64, inputs=[a, 1.0], device="cpu")  # compiled before timing


def test_activities_of_a_step(capsys):
    with kc.ScopedTimer("step", cuda_filter=kc.TIMING_ALL) as timer:
        a = kc.ones(256, dtype=float, device="cpu")
        kc.launch(scale, dim=256, inputs=[a, 3.0], device="cpu")
        kc.launch(scale, dim=256, inputs=[a, 0.5], device="cpu")
    assert np.allclose(a.numpy(), 1.5)
    names = [r.name for r in timer.timing_results]
    assert names[-2:] == ["forward kernel scale", "forward kernel scale"]
    assert all(r.elapsed >= 0.0 and str(r.device) == "cpu" for r in timer.timing_results)
    out = capsys.readouterr().out
    assert "CPU timeline:" in out and "forward kernel scale" in out


def test_memset_filter_with_real_work():
    with kc.ScopedTimer("zeros", cuda_filter=kc.TIMING_MEMSET, print=False) as timer:
        a = kc.zeros(128, dtype=float, device="cpu")
        kc.launch(scale, dim=128, inputs=[a, 2.0], device="cpu")
    assert timer.timing_results and {r.name for r in timer.timing_results} == {"memset"}


def test_kernel_history_of_launches():
    a = kc.ones(32, dtype=float, device="cpu")
    kc.launch(scale, dim=32, inputs=[a, 2.0], device="cpu")
    assert kc.kernel_history() == []  # the flag was off
    with kc.scoped_set_flag(kc.JitFlag.KernelHistory):
        kc.launch(scale, dim=32, inputs=[a, 2.0], device="cpu")
    (entry,) = kc.kernel_history()
    assert entry["name"] == "scale" and entry["dim"] == (32,) and entry["device"] == "cpu"
    assert entry["cache"] in ("memory", "disk", "miss")
    assert entry["execution_time"] > 0.0 and entry["ir"]


def test_trace_of_launches(tmp_path):
    kc.trace_begin()
    a = kc.ones(32, dtype=float, device="cpu")
    kc.launch(scale, dim=32, inputs=[a, 2.0], device="cpu")
    kc.trace_end()
    document = json.loads(kc.trace_export(tmp_path / "run.json").read_text())
    launches = [e for e in document["traceEvents"] if e.get("cat") == "launch"]
    assert launches and launches[0]["name"] == "forward kernel scale"
    assert launches[0]["dur"] > 0


def test_events_around_a_launch():
    a = kc.ones(1024, dtype=float, device="cpu")
    start = kc.record_event(kc.Event(enable_timing=True))
    kc.launch(scale, dim=1024, inputs=[a, 2.0], device="cpu")
    end = kc.record_event(kc.Event(enable_timing=True))
    assert end.query() and kc.get_event_elapsed_time(start, end) > 0.0
