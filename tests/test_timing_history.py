"""JIT flags and the kernel history."""

from __future__ import annotations

import pytest

import kernelc as kc
from kernelc.runtime.context import get_runtime
from kernelc.timing.history import (
    JitFlag,
    default_flags,
    flag,
    history_entry,
    kernel_history,
    scoped_set_flag,
    set_flag,
)

KEYS = {"name", "hash", "device", "dim", "execution_time", "codegen_time", "backend_time",
        "cache", "ir", "flops", "bytes"}


@pytest.fixture(autouse=True)
def clean_runtime(monkeypatch):
    rt = get_runtime()
    monkeypatch.setattr(rt, "flags", 0)
    monkeypatch.setattr(rt, "history", [])
    monkeypatch.setattr(rt, "extras", {})


def launch(name: str, **fields) -> None:
    """What the launcher does after a launch while KernelHistory is set."""
    rt = get_runtime()
    if rt.flags & JitFlag.KernelHistory:
        rt.history.append(history_entry(name, "ab12", "cpu", (16,), **fields))


def test_public_names():
    assert kc.JitFlag is JitFlag and kc.kernel_history is kernel_history
    assert kc.scoped_set_flag is scoped_set_flag


def test_defaults_are_set_lazily():
    assert get_runtime().flags == 0
    assert flag(JitFlag.ConstantPropagation)
    assert flag(JitFlag.ValueNumbering) and flag(JitFlag.DeadCodeElimination)
    assert not flag(JitFlag.KernelHistory)
    assert get_runtime().flags == default_flags() == JitFlag.Default


def test_runtime_set_flags_are_kept():
    get_runtime().flags = int(JitFlag.ValueNumbering)
    assert flag(JitFlag.ValueNumbering) and not flag(JitFlag.ConstantPropagation)


def test_all_flags_off_stays_off():
    for each in (JitFlag.ConstantPropagation, JitFlag.ValueNumbering,
                 JitFlag.DeadCodeElimination):
        set_flag(each, False)
    assert get_runtime().flags == 0
    assert not flag(JitFlag.ConstantPropagation)


def test_scoped_set_flag_restores():
    with scoped_set_flag(JitFlag.KernelHistory):
        assert flag(JitFlag.KernelHistory)
        with scoped_set_flag(JitFlag.KernelHistory, False):
            assert not flag(JitFlag.KernelHistory)
        assert flag(JitFlag.KernelHistory)
    assert not flag(JitFlag.KernelHistory)
    with pytest.raises(KeyError):
        with scoped_set_flag(JitFlag.DeadCodeElimination, False):
            raise KeyError
    assert flag(JitFlag.DeadCodeElimination)


def test_history_is_recorded_only_under_the_flag():
    launch("before")
    with scoped_set_flag(JitFlag.KernelHistory):
        launch("saxpy", execution_time=0.5, cache="memory", flops=32, bytes=192)
        launch("scale", execution_time=0.25, cache="miss", codegen_time=3.0)
    launch("after")
    history = kernel_history()
    assert [entry["name"] for entry in history] == ["saxpy", "scale"]
    assert all(KEYS <= set(entry) for entry in history)
    assert history[0]["cache"] == "memory" and history[0]["flops"] == 32
    assert history[0]["dim"] == (16,) and history[1]["codegen_time"] == 3.0
    assert kernel_history() == []  # reading clears it


def test_execution_time_filled_later():
    with scoped_set_flag(JitFlag.KernelHistory):
        launch("async", execution_time=lambda: 1.25)
    (entry,) = kernel_history()
    assert entry["execution_time"] == 1.25


def test_types_filter_clears_everything():
    with scoped_set_flag(JitFlag.KernelHistory):
        launch("user")
        launch("array_scan", type="builtin")
    (entry,) = kernel_history(types=["builtin"])
    assert entry["name"] == "array_scan"
    assert kernel_history() == []
