"""CPU graph capture and replay, and streams on the CPU."""

from __future__ import annotations

import numpy as np
import pytest

import kernelc as kc
from kernelc.runtime import launch as launch_module


@kc.kernel
def axpy(x: kc.array(dtype=float), y: kc.array(dtype=float), alpha: float):
    i = kc.tid()
    y[i] = alpha * x[i] + y[i]


@kc.kernel
def scale(y: kc.array(dtype=float), factor: float):
    i = kc.tid()
    y[i] = y[i] * factor


def _inputs(rng, n=1000):
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    return x, y


def _step(x, y):
    kc.launch(axpy, x.shape[0], inputs=[x, y, 2.0], device="cpu")
    kc.launch(scale, y.shape[0], inputs=[y, 0.5], device="cpu")


def test_replay_equals_direct_launches(rng):
    x0, y0 = _inputs(rng)
    xd, yd = kc.array(x0, device="cpu"), kc.array(y0, device="cpu")
    xg, yg = kc.array(x0, device="cpu"), kc.array(y0, device="cpu")
    with kc.ScopedCapture(device="cpu") as capture:
        _step(xg, yg)
    np.testing.assert_array_equal(yg.numpy(), y0)  # recorded, not run
    assert isinstance(capture.graph, kc.Graph)  # Warp's name, for annotations
    for _ in range(3):
        _step(xd, yd)
        kc.capture_launch(capture.graph)
    np.testing.assert_array_equal(yg.numpy(), yd.numpy())
    expected = y0.astype(np.float64)
    for _ in range(3):
        expected = (2.0 * x0 + expected) * 0.5
    np.testing.assert_allclose(yg.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_replay_skips_argument_packing(rng, monkeypatch):
    x0, y0 = _inputs(rng)
    x, y = kc.array(x0, device="cpu"), kc.array(y0, device="cpu")
    with kc.ScopedCapture(device="cpu") as capture:
        _step(x, y)
    calls = []
    original = launch_module.pack_args
    monkeypatch.setattr(launch_module, "pack_args", lambda *a: calls.append(a) or original(*a))
    monkeypatch.setattr(launch_module, "arg_type", lambda *a: pytest.fail("argument check"))
    kc.capture_launch(capture.graph)
    assert calls == []


def test_events_inside_capture_time_the_replay(rng):
    x, y = (kc.array(a, device="cpu") for a in _inputs(rng, 1 << 16))
    start = kc.Event("cpu", enable_timing=True)
    end = kc.Event("cpu", enable_timing=True)
    with kc.ScopedCapture(device="cpu") as capture:
        start.record()
        _step(x, y)
        end.record()
    assert start.impl.timestamp_ns is None and end.impl.timestamp_ns is None
    import time

    before = time.perf_counter_ns()
    kc.capture_launch(capture.graph)
    after = time.perf_counter_ns()
    assert before <= start.impl.timestamp_ns <= end.impl.timestamp_ns <= after
    elapsed = kc.get_event_elapsed_time(start, end)
    assert 0.0 <= elapsed <= (after - before) / 1e6


def test_capture_does_not_nest_and_exception_discards():
    with kc.ScopedCapture(device="cpu"):
        with pytest.raises(RuntimeError, match="already open"):
            kc.ScopedCapture(device="cpu").__enter__()
    capture = kc.ScopedCapture(device="cpu")
    with pytest.raises(ValueError):
        with capture:
            raise ValueError("boom")
    assert capture.graph is None
    with pytest.raises(TypeError, match="ScopedCapture"):
        kc.capture_launch(object())


def test_graph_launch_activity_timing(rng):
    x, y = (kc.array(a, device="cpu") for a in _inputs(rng))
    with kc.ScopedCapture(device="cpu") as capture:
        _step(x, y)
    kc.timing_begin(kc.TIMING_GRAPH | kc.TIMING_KERNEL)
    kc.capture_launch(capture.graph)
    names = [r.name for r in kc.timing_end()]
    assert names == ["graph", "forward kernel axpy", "forward kernel scale"]


def test_cpu_streams():
    stream = kc.Stream("cpu")
    assert stream.device == "cpu" and stream.cuda_stream == 0 and stream.is_complete
    default = kc.get_stream("cpu")
    assert kc.get_stream("cpu") is default
    with kc.ScopedStream(stream):
        assert kc.get_stream("cpu") is stream
        event = stream.record_event(kc.Event("cpu", enable_timing=True))
        assert event.query()
        kc.wait_stream(default)
        kc.synchronize_stream()
    assert kc.get_stream("cpu") is default
    stream.wait_event(event)
    stream.synchronize()
    kc.set_stream(stream)
    assert kc.get_stream("cpu") is stream
    kc.set_stream(default)


@kc.kernel
def decrement(c: kc.array(dtype=kc.int32)):
    c[0] = c[0] - 1


def test_replayed_copies_and_memsets_are_timed_activities(rng):
    x, y = (kc.array(a, device="cpu") for a in _inputs(rng))
    with kc.ScopedCapture(device="cpu") as capture:
        y.zero_()
        kc.copy(y, x)
        _step(x, y)
    kc.timing_begin(kc.TIMING_ALL)
    kc.capture_launch(capture.graph)
    names = [r.name for r in kc.timing_end()]
    assert names == ["graph", "memset", "memcpy HtoH", "forward kernel axpy",
                     "forward kernel scale"]
    np.testing.assert_allclose(y.numpy(), (2.0 * x.numpy() + x.numpy()) * 0.5, rtol=1e-6)


def test_conditional_bodies_can_be_graphs_and_nest(rng):
    x0 = rng.uniform(1.0, 2.0, 64).astype(np.float32)
    x = kc.array(x0, device="cpu")
    outer = kc.array([2], dtype=kc.int32, device="cpu")
    flag = kc.array([1], dtype=kc.int32, device="cpu")
    with kc.ScopedCapture(device="cpu") as halve:
        kc.launch(scale, 64, inputs=[x, 0.5], device="cpu")
    start, end = kc.Event("cpu", enable_timing=True), kc.Event("cpu", enable_timing=True)

    def body():
        start.record()
        kc.capture_if(flag, on_true=halve.graph,
                      on_false=lambda: kc.launch(scale, 64, inputs=[x, 3.0], device="cpu"))
        kc.launch(decrement, 1, inputs=[outer], device="cpu")
        end.record()

    with kc.ScopedCapture(device="cpu") as capture:
        kc.capture_while(outer, body)
    np.testing.assert_array_equal(x.numpy(), x0)  # recorded only
    kc.capture_launch(capture.graph)  # two halvings
    np.testing.assert_allclose(x.numpy(), x0 * 0.25, rtol=1e-6)
    assert outer.numpy()[0] == 0 and kc.get_event_elapsed_time(start, end) >= 0.0
    outer.fill_(3)
    flag.zero_()
    kc.capture_launch(capture.graph)  # three triplings
    np.testing.assert_allclose(x.numpy(), x0 * 0.25 * 27.0, rtol=1e-6)


def test_conditional_errors():
    with pytest.raises(TypeError, match="kc.array"):
        kc.capture_if(np.ones(1, np.int32), on_true=lambda: None)
    with pytest.raises(TypeError, match="integer array"):
        kc.capture_if(kc.ones(1, dtype=float, device="cpu"), on_true=lambda: None)
    with pytest.raises(TypeError, match="integer array"):
        kc.capture_while(kc.zeros(0, dtype=kc.int32, device="cpu"), lambda: None)
    with pytest.raises(TypeError, match="callables or captured graphs"):
        kc.capture_if(kc.ones(1, dtype=kc.int32, device="cpu"), on_true=3)
    with pytest.raises(TypeError, match="needs a body"):
        kc.capture_while(kc.ones(1, dtype=kc.int32, device="cpu"), None)


def test_capture_mode_and_warp_arguments():
    assert [int(m) for m in kc.CaptureMode] == [0, 1, 2]
    with kc.ScopedCapture(device="cpu", apic=True, external=False,
                          capture_mode=kc.CaptureMode.GLOBAL) as capture:
        pass
    assert capture.graph.ops == []
    kc.capture_begin("cpu", force_module_load=False, capture_mode=kc.CaptureMode.RELAXED)
    assert kc.capture_end("cpu").ops == []
