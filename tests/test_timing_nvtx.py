"""NVTX ranges and marks, with the nvtx package and without it; profile_enable."""

from __future__ import annotations

import sys
import types

import pytest

import kernelc as kc
from kernelc.runtime.context import get_runtime
from kernelc.timing import nvtx as kc_nvtx
from kernelc.timing.nvtx import profile_enable, profile_mark, profile_range


@pytest.fixture(autouse=True)
def clean_runtime(monkeypatch):
    monkeypatch.setattr(get_runtime(), "extras", {})


class RecordingDomain:
    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []
        self.built = 0

    def get_event_attributes(self, message=None, color=None):
        self.built += 1
        return (message, color)

    def push_range(self, attributes):
        self.calls.append(("push", attributes))

    def pop_range(self):
        self.calls.append(("pop", None))

    def mark(self, attributes):
        self.calls.append(("mark", attributes))


@pytest.fixture
def domain():
    recording = RecordingDomain()
    kc_nvtx._state().domain = recording
    return recording


def test_public_names():
    assert kc.profile_range is profile_range and kc.profile_mark is profile_mark
    assert kc.profile_enable is profile_enable


def test_with_the_nvtx_package():
    pytest.importorskip("nvtx")
    assert kc_nvtx.nvtx_available()
    with profile_range("step", color="rapids"):
        profile_mark("inside", color="yellow")

    @profile_range("decorated")
    def work(x: int) -> int:
        return x + 1

    assert work(1) == 2
    assert work.__name__ == "work"
    with profile_range("odd color", color="not-a-color"):
        pass


def test_range_context_and_decorator(domain):
    with profile_range("step", color="rapids"):
        profile_mark("tick")
    assert domain.calls == [
        ("push", ("step", 0xFF7400FF)),
        ("mark", ("tick", None)),
        ("pop", None),
    ]

    @profile_range("solve", color=0xFF00FF00)
    def solve() -> str:
        raise ArithmeticError("diverged")

    with pytest.raises(ArithmeticError):
        solve()
    assert domain.calls[-2:] == [("push", ("solve", 0xFF00FF00)), ("pop", None)]


def test_attributes_are_cached_per_name_and_color(domain):
    for _ in range(10):
        with profile_range("step", color="rapids"):
            pass
    with profile_range("step", color="green"):
        pass
    assert domain.built == 2


def test_without_the_nvtx_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "nvtx", None)  # makes `import nvtx` fail
    assert not kc_nvtx.nvtx_available()
    with profile_range("step", color="rapids") as scope:
        profile_mark("tick")
    assert isinstance(scope, profile_range)

    def work() -> int:
        return 7

    assert profile_range("work")(work) is work


def test_color_names():
    assert kc_nvtx.color_value("rapids") == 0xFF7400FF
    assert kc_nvtx.color_value("Yellow") == 0xFFFFFF00
    assert kc_nvtx.color_value(0x123) == 0x123
    assert kc_nvtx.color_value(None) is None
    assert kc_nvtx.color_value("teal") is None  # left to the nvtx package


def test_profile_enable_without_cuda_does_nothing(monkeypatch):
    monkeypatch.delitem(sys.modules, "cuda.bindings.driver", raising=False)
    with profile_enable() as region:
        pass
    assert not region._started


def fake_driver(context: int) -> types.ModuleType:
    driver = types.ModuleType("cuda.bindings.driver")
    driver.calls = []
    driver.CUresult = types.SimpleNamespace(CUDA_SUCCESS=0)
    driver.cuCtxGetCurrent = lambda: (0, context)
    driver.cuProfilerStart = lambda: (driver.calls.append("start"), (0,))[1]
    driver.cuProfilerStop = lambda: (driver.calls.append("stop"), (0,))[1]
    return driver


def test_profile_enable_brackets_a_region_on_cuda(monkeypatch):
    driver = fake_driver(context=0xABC)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", driver)
    for i in range(3):
        with profile_enable(active=(i == 1)):
            assert driver.calls == (["start"] if i == 1 else ([] if i == 0 else ["start", "stop"]))
    assert driver.calls == ["start", "stop"]


def test_profile_enable_needs_a_current_context(monkeypatch):
    driver = fake_driver(context=0)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", driver)
    with profile_enable():
        pass
    assert driver.calls == []
