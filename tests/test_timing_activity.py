"""Activity timing: the recorder the launcher drives, sessions, filters and the report."""

from __future__ import annotations

import re
import sys
import types

import pytest

from kernelc.runtime.context import get_runtime
from kernelc.timing import activity
from kernelc.timing.activity import (
    TIMING_ALL,
    TIMING_GRAPH,
    TIMING_KERNEL,
    TIMING_KERNEL_BUILTIN,
    TIMING_MEMCPY,
    TIMING_MEMSET,
    TimingResult,
    format_timing_report,
    timing_begin,
    timing_end,
    timing_print,
)


class FakeDevice:
    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.is_cuda = alias.startswith("cuda")
        self.is_cpu = not self.is_cuda

    def __str__(self) -> str:
        return self.alias


CPU = FakeDevice("cpu")
CUDA0, CUDA1 = FakeDevice("cuda:0"), FakeDevice("cuda:1")


@pytest.fixture(autouse=True)
def clean_runtime(monkeypatch):
    """Isolates the runtime state and stands in for the device module's synchronize."""
    rt = get_runtime()
    monkeypatch.setattr(rt, "recorder", None)
    monkeypatch.setattr(rt, "extras", {})
    device_module = types.ModuleType("kernelc.runtime.device")
    device_module.sync_calls = 0

    def synchronize() -> None:
        device_module.sync_calls += 1

    device_module.synchronize = synchronize
    monkeypatch.setitem(sys.modules, "kernelc.runtime.device", device_module)
    yield device_module
    assert rt.recorder is None, "a test left a timing session open"


def issue(device, name: str, kind: int) -> bool:
    """Brackets an activity exactly as the launcher does; returns whether it was recorded."""
    recorder = get_runtime().recorder
    if recorder is None or not recorder.wants(kind):
        return False
    token = recorder.begin(device, name, kind)
    recorder.end(token)
    return token is not None


ACTIVITIES = [
    (CPU, "memset", TIMING_MEMSET),
    (CPU, "forward kernel saxpy", TIMING_KERNEL),
    (CPU, "array_scan", TIMING_KERNEL_BUILTIN),
    (CPU, "memcpy HtoH", TIMING_MEMCPY),
    (CPU, "graph", TIMING_GRAPH),
    (CPU, "forward kernel saxpy", TIMING_KERNEL),
]


def test_recorder_is_none_outside_a_session():
    assert get_runtime().recorder is None
    assert not issue(CPU, "memset", TIMING_MEMSET)
    assert timing_end() == []


def test_results_are_the_issued_activities_in_order(clean_runtime):
    timing_begin(TIMING_ALL)
    for activity_args in ACTIVITIES:
        assert issue(*activity_args)
    results = timing_end()
    assert [(r.device, r.name, r.filter) for r in results] == ACTIVITIES
    assert all(isinstance(r, TimingResult) and r.elapsed >= 0.0 for r in results)
    assert clean_runtime.sync_calls == 2  # begin and end synchronize by default


def test_no_synchronize():
    timing_begin(TIMING_KERNEL, synchronize=False)
    results = timing_end(synchronize=False)
    assert results == []
    assert sys.modules["kernelc.runtime.device"].sync_calls == 0


def test_memset_filter_reports_only_memsets():
    timing_begin(TIMING_MEMSET)
    recorder = get_runtime().recorder
    assert recorder.wants(TIMING_MEMSET) and not recorder.wants(TIMING_KERNEL)
    for activity_args in ACTIVITIES:
        issue(*activity_args)
    results = timing_end()
    assert [r.name for r in results] == ["memset"]


def test_combined_filter():
    timing_begin(TIMING_KERNEL | TIMING_MEMCPY)
    for activity_args in ACTIVITIES:
        issue(*activity_args)
    names = [r.name for r in timing_end()]
    assert names == ["forward kernel saxpy", "memcpy HtoH", "forward kernel saxpy"]


def test_nested_sessions_each_see_their_activities():
    timing_begin(TIMING_ALL)
    issue(CPU, "forward kernel a", TIMING_KERNEL)
    timing_begin(TIMING_MEMSET)
    issue(CPU, "memset", TIMING_MEMSET)
    issue(CPU, "forward kernel b", TIMING_KERNEL)
    inner = timing_end()
    issue(CPU, "memset", TIMING_MEMSET)
    outer = timing_end()
    assert [r.name for r in inner] == ["memset"]
    assert [r.name for r in outer] == ["forward kernel a", "memset", "forward kernel b", "memset"]
    # The activity both sessions saw is the same measurement.
    assert inner[0].elapsed == outer[1].elapsed


def test_nested_session_with_disjoint_filter_keeps_outer_mask():
    timing_begin(TIMING_KERNEL)
    timing_begin(TIMING_MEMSET)
    assert get_runtime().recorder.wants(TIMING_KERNEL)
    timing_end()
    assert not get_runtime().recorder.wants(TIMING_MEMSET)
    assert get_runtime().recorder.wants(TIMING_KERNEL)
    timing_end()


def test_unfinished_activity_is_left_out():
    timing_begin(TIMING_ALL)
    get_runtime().recorder.begin(CPU, "forward kernel broken", TIMING_KERNEL)
    issue(CPU, "memset", TIMING_MEMSET)
    assert [r.name for r in timing_end()] == ["memset"]


def test_cpu_elapsed_measures_the_activity():
    timing_begin(TIMING_ALL)
    recorder = get_runtime().recorder
    token = recorder.begin(CPU, "forward kernel slow", TIMING_KERNEL)
    sum(range(200_000))
    recorder.end(token)
    (result,) = timing_end()
    assert 0.0 < result.elapsed < 1000.0


class FakeCudaEvent:
    """Stands in for the CUDA runtime's timing events, with a clock the test controls."""

    clock = 0.0
    records: list[tuple[str, FakeCudaEvent]] = []

    def __init__(self, device, enable_timing, interprocess) -> None:
        assert enable_timing and not interprocess
        self.device = device
        self.time: float | None = None

    def record(self, stream=None) -> None:
        FakeCudaEvent.clock += 0.25
        self.time = FakeCudaEvent.clock
        FakeCudaEvent.records.append(("record", self))

    def synchronize(self) -> None:
        FakeCudaEvent.records.append(("synchronize", self))

    def elapsed_time(self, end: FakeCudaEvent) -> float:
        return end.time - self.time


def test_cuda_activities_are_ignored_without_an_event_factory():
    timing_begin(TIMING_ALL)
    assert not issue(CUDA0, "forward kernel k", TIMING_KERNEL)
    assert issue(CPU, "forward kernel k", TIMING_KERNEL)
    assert [r.device for r in timing_end()] == [CPU]


def test_cuda_activities_use_the_event_factory():
    get_runtime().extras["cuda_event_factory"] = FakeCudaEvent
    FakeCudaEvent.records = []
    timing_begin(TIMING_ALL)
    issue(CUDA0, "memcpy HtoD", TIMING_MEMCPY)
    issue(CUDA1, "forward kernel k", TIMING_KERNEL)
    results = timing_end()
    assert [(r.device, r.name) for r in results] == [(CUDA0, "memcpy HtoD"), (CUDA1, "forward kernel k")]
    assert [r.elapsed for r in results] == [0.25, 0.25]
    kinds = [kind for kind, _ in FakeCudaEvent.records]
    assert kinds == ["record"] * 4 + ["synchronize"] * 2


# --- the report ----------------------------------------------------------------------------

WARP_LAYOUT = """\
CUDA timeline:
----------------+---------+------------------------
Time            | Device  | Activity
----------------+---------+------------------------
    0.021504 ms | cuda:0  | memset
    0.163840 ms | cuda:0  | forward kernel inc_loop
    0.306176 ms | cuda:1  | forward kernel inc_loop
    2.455520 ms | cuda:0  | memcpy DtoH

CUDA activity summary:
----------------+---------+------------------------
Total time      | Count   | Activity
----------------+---------+------------------------
    0.021504 ms |       1 | memset
    0.470016 ms |       2 | forward kernel inc_loop
    2.455520 ms |       1 | memcpy DtoH

CUDA device summary:
----------------+---------+------------------------
Total time      | Count   | Device
----------------+---------+------------------------
    2.640864 ms |       3 | cuda:0
    0.306176 ms |       1 | cuda:1
"""

CUDA_RESULTS = [
    TimingResult(CUDA0, "memset", TIMING_MEMSET, 0.021504),
    TimingResult(CUDA0, "forward kernel inc_loop", TIMING_KERNEL, 0.16384),
    TimingResult(CUDA1, "forward kernel inc_loop", TIMING_KERNEL, 0.306176),
    TimingResult(CUDA0, "memcpy DtoH", TIMING_MEMCPY, 2.45552),
]


def test_cuda_report_has_warps_layout(capsys):
    timing_print(CUDA_RESULTS)
    assert capsys.readouterr().out == WARP_LAYOUT


def test_report_matches_installed_warp(capsys):
    warp = pytest.importorskip("warp")
    warp_results = [warp.TimingResult(r.device, r.name, r.filter, r.elapsed) for r in CUDA_RESULTS]
    warp.timing_print(warp_results, indent="  ")
    expected = capsys.readouterr().out
    timing_print(CUDA_RESULTS, indent="  ")
    assert capsys.readouterr().out == expected


def test_report_indent_and_aliases():
    results = [TimingResult("cuda:0", "memset", TIMING_MEMSET, 1.0)]
    text = format_timing_report(results, indent="    ")
    assert all(line.startswith("    ") for line in text.splitlines() if line)
    assert "    1.000000 ms | cuda:0  | memset" in text


def parse_report(text: str) -> dict[str, list[tuple[float, str, str]]]:
    """Reads the three tables back: {heading: [(ms, middle column, last column), ...]}."""
    tables: dict[str, list[tuple[float, str, str]]] = {}
    current = None
    row = re.compile(r"^\s*([0-9.]+) ms \| (.{7}) \| (.+)$")
    for line in text.splitlines():
        if line.rstrip().endswith(":"):
            current = tables.setdefault(line.strip(), [])
        elif (match := row.match(line)) is not None:
            current.append((float(match[1]), match[2].strip(), match[3]))
    return tables


def test_cpu_report_tables_parse(capsys):
    timing_begin(TIMING_ALL)
    for activity_args in ACTIVITIES:
        issue(*activity_args)
    results = timing_end()
    timing_print(results)
    tables = parse_report(capsys.readouterr().out)
    assert list(tables) == ["CPU timeline:", "CPU activity summary:", "CPU device summary:"]
    timeline = tables["CPU timeline:"]
    assert [(device, name) for _, device, name in timeline] == [
        ("cpu", name) for _, name, _ in ACTIVITIES
    ]
    summary = tables["CPU activity summary:"]
    assert [(count, name) for _, count, name in summary] == [
        ("1", "memset"), ("2", "forward kernel saxpy"), ("1", "array_scan"),
        ("1", "memcpy HtoH"), ("1", "graph"),
    ]
    kernel_total = sum(r.elapsed for r in results if r.name == "forward kernel saxpy")
    assert summary[1][0] == pytest.approx(kernel_total, abs=1e-6)
    (device_row,) = tables["CPU device summary:"]
    assert device_row[1:] == ("6", "cpu")
    assert device_row[0] == pytest.approx(sum(r.elapsed for r in results), abs=1e-5)


def test_mixed_devices_heading():
    results = [
        TimingResult(CPU, "memset", TIMING_MEMSET, 0.5),
        TimingResult(CUDA0, "memset", TIMING_MEMSET, 0.25),
    ]
    tables = parse_report(format_timing_report(results))
    assert list(tables) == [
        "CPU+CUDA timeline:", "CPU+CUDA activity summary:", "CPU+CUDA device summary:",
    ]
    assert tables["CPU+CUDA activity summary:"] == [(0.75, "2", "memset")]
    assert tables["CPU+CUDA device summary:"] == [(0.5, "1", "cpu"), (0.25, "1", "cuda:0")]


def test_empty_report_keeps_warp_headings():
    assert format_timing_report([]).splitlines()[0] == "CUDA timeline:"


def test_constants_are_reexported():
    import kernelc.timing.flags as flags

    assert activity.TIMING_ALL == flags.TIMING_ALL == 0xFFFFFFFF
    assert activity.TIMING_MEMSET == 8
