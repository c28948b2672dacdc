"""Events on the CPU (Warp's functions and Dr.Jit's methods) and the CUDA seam."""

from __future__ import annotations

import sys
import threading
import time
import types

import pytest

import kernelc as kc
from kernelc.runtime.context import get_runtime
from kernelc.timing.events import (
    CpuEventImpl,
    Event,
    get_event_elapsed_time,
    record_event,
    synchronize_event,
    wait_event,
)


class FakeDevice:
    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.is_cuda = alias.startswith("cuda")
        self.is_cpu = not self.is_cuda


CPU = FakeDevice("cpu")


@pytest.fixture(autouse=True)
def clean_runtime(monkeypatch):
    rt = get_runtime()
    monkeypatch.setattr(rt, "extras", {})
    monkeypatch.setattr(rt, "current_device", None)
    device_module = types.ModuleType("kernelc.runtime.device")
    device_module.get_device = lambda alias=None: FakeDevice(alias or "cpu")
    monkeypatch.setitem(sys.modules, "kernelc.runtime.device", device_module)


def test_public_names():
    assert kc.Event is Event and kc.record_event is record_event
    assert kc.get_event_elapsed_time is get_event_elapsed_time


def test_default_device_is_the_current_one():
    assert Event().device.alias == "cpu"
    get_runtime().current_device = CPU
    assert Event().device is CPU
    assert Event(device="cpu").device.alias == "cpu"


def test_alias_fallback_without_device_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "kernelc.runtime.device", None)
    event = Event("cpu", enable_timing=True)
    assert event.device.alias == "cpu" and event.device.is_cpu


def test_events_are_ordered_and_elapsed_is_non_negative():
    events = [Event(CPU, enable_timing=True) for _ in range(5)]
    for event in events:
        event.record()
        sum(range(2000))
    gaps = [a.elapsed_time(b) for a, b in zip(events, events[1:])]
    assert all(gap > 0.0 for gap in gaps)
    total = get_event_elapsed_time(events[0], events[-1])
    assert total == pytest.approx(sum(gaps))


def test_elapsed_time_measures_the_work():
    start, end = Event(CPU, enable_timing=True), Event(CPU, enable_timing=True)
    record_event(start)
    time.sleep(0.02)
    record_event(end)
    assert 15.0 < get_event_elapsed_time(start, end, synchronize=False) < 1000.0


def test_record_event_creates_an_event():
    event = record_event()
    assert isinstance(event, Event) and event.query()
    assert not event.enable_timing


def test_timing_must_be_enabled():
    untimed, timed = Event(CPU), Event(CPU, enable_timing=True)
    untimed.record()
    timed.record()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        get_event_elapsed_time(untimed, timed)
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        timed.elapsed_time(untimed)


def test_unrecorded_event_cannot_be_timed():
    start, end = Event(CPU, enable_timing=True), Event(CPU, enable_timing=True)
    start.record()
    with pytest.raises(RuntimeError, match="recorded"):
        start.elapsed_time(end)


def test_query_wait_and_synchronize_on_the_cpu():
    event = Event(CPU)
    assert event.query()  # never recorded counts as finished, as in CUDA
    event.record()
    assert event.query()
    event.wait()
    synchronize_event(event)
    wait_event(event)


def test_invalid_combinations():
    with pytest.raises(ValueError, match="interprocess"):
        Event(CPU, interprocess=True)
    with pytest.raises(ValueError, match="interprocess"):
        Event(CPU, interprocess=True, enable_timing=True)


def test_cuda_events_need_the_cuda_runtime():
    with pytest.raises(RuntimeError, match="CUDA runtime"):
        Event(FakeDevice("cuda:0"))


class FakeCudaImpl:
    def __init__(self, device, enable_timing, interprocess) -> None:
        self.calls: list[str] = []
        self.args = (device, enable_timing, interprocess)

    def record(self, stream=None):
        self.calls.append("record")

    def query(self):
        return True

    def synchronize(self):
        self.calls.append("synchronize")

    def wait(self, stream=None):
        self.calls.append("wait")

    def elapsed_time(self, end):
        return 1.5


def test_cuda_events_go_through_the_factory():
    get_runtime().extras["cuda_event_factory"] = FakeCudaImpl
    cuda = FakeDevice("cuda:0")
    start, end = Event(cuda, enable_timing=True), Event(cuda, enable_timing=True)
    assert start.impl.args == (cuda, True, False)
    record_event(start)
    record_event(end)
    wait_event(end)
    assert get_event_elapsed_time(start, end) == 1.5
    assert end.impl.calls == ["record", "wait", "synchronize"]


def test_events_on_different_devices_cannot_be_timed():
    get_runtime().extras["cuda_event_factory"] = FakeCudaImpl
    cpu_event = record_event(Event(CPU, enable_timing=True))
    cuda_event = record_event(Event(FakeDevice("cuda:0"), enable_timing=True))
    with pytest.raises(ValueError, match="different|between"):
        cpu_event.elapsed_time(cuda_event)


class FakeCapture:
    def __init__(self) -> None:
        self.deferred: list[CpuEventImpl] = []

    def defer_event(self, impl: CpuEventImpl) -> None:
        self.deferred.append(impl)


def test_events_recorded_in_a_capture_are_deferred():
    capture = FakeCapture()
    start, end = Event(CPU, enable_timing=True), Event(CPU, enable_timing=True)
    get_runtime().extras["capture"] = capture
    start.record()
    end.record()
    del get_runtime().extras["capture"]
    assert capture.deferred == [start.impl, end.impl]
    assert start.impl.timestamp_ns is None

    # A replay: pending until it reaches each event; a waiting thread is released then.
    for impl in capture.deferred:
        impl.mark_pending()
    assert not end.query()
    released = threading.Event()

    def waiter() -> None:
        end.wait()
        released.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    start.impl.complete(1_000_000)
    assert not released.wait(0.05)
    end.impl.complete(3_500_000)
    thread.join(5)
    assert released.is_set() and end.query()
    assert get_event_elapsed_time(start, end) == pytest.approx(2.5)
