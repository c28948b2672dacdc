"""Timing and profiling on a GPU (marked `cuda`, skipped without one): activity reports,
filters, events in graph captures, Dr.Jit-style event methods, kernel history and the CUDA
profiler brackets, each checked against what was issued."""

from __future__ import annotations

import time

import numpy as np
import pytest

import kernelc as kc
from tests.test_timing_activity import parse_report

pytestmark = pytest.mark.cuda


@kc.kernel
def spin(x: kc.array(dtype=float), rounds: int):
    i = kc.tid()
    v = x[i]
    for _ in range(rounds):
        v = v * 0.999 + 0.001
    x[i] = v


@pytest.fixture
def gpu():
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    return kc.get_device("cuda:0")


def test_scoped_timer_reports_every_activity_on_the_gpu(gpu, capsys):
    host = np.arange(1 << 16, dtype=np.float32)
    with kc.ScopedTimer("step", cuda_filter=kc.TIMING_ALL, synchronize=True) as timer:
        a = kc.array(host, device=gpu)  # memcpy HtoD
        b = kc.zeros(1 << 16, device=gpu)  # memset
        kc.launch(spin, a.size, inputs=[a, 10], device=gpu)
        kc.copy(b, a)  # memcpy DtoD
        back = b.numpy()  # memcpy DtoH
    tables = parse_report(capsys.readouterr().out)
    assert list(tables) == ["CUDA timeline:", "CUDA activity summary:", "CUDA device summary:"]
    names = [name for _, _, name in tables["CUDA timeline:"]]
    assert names == ["memcpy HtoD", "memset", "forward kernel spin", "memcpy DtoD",
                     "memcpy DtoH"]
    assert all(ms > 0.0 and device == "cuda:0" for ms, device, _ in tables["CUDA timeline:"])
    assert [r.name for r in timer.timing_results] == names
    (total, count, device), = tables["CUDA device summary:"]
    assert (count, device) == ("5", "cuda:0")
    assert total == pytest.approx(sum(r.elapsed for r in timer.timing_results), abs=1e-5)
    np.testing.assert_allclose(back, host * 0.999**10 + (1 - 0.999**10), rtol=1e-4)


def test_a_filter_keeps_only_its_activities(gpu):
    kc.timing_begin(cuda_filter=kc.TIMING_MEMSET)
    a = kc.zeros(1000, device=gpu)
    kc.launch(spin, 1000, inputs=[a, 3], device=gpu)
    a.zero_()
    a.numpy()
    results = kc.timing_end()
    assert [(r.name, r.filter, str(r.device)) for r in results] == [
        ("memset", kc.TIMING_MEMSET, "cuda:0")] * 2


def test_graph_launches_and_events_in_a_capture(gpu):
    a = kc.zeros(1 << 20, device=gpu)
    kc.launch(spin, a.size, inputs=[a, 1], device=gpu)  # load before capturing
    start, end = kc.Event(gpu, enable_timing=True), kc.Event(gpu, enable_timing=True)
    with kc.ScopedCapture(device=gpu) as capture:
        kc.record_event(start)
        kc.launch(spin, a.size, inputs=[a, 200], device=gpu)
        kc.record_event(end)
    kc.timing_begin(cuda_filter=kc.TIMING_GRAPH)
    kc.capture_launch(capture.graph)
    results = kc.timing_end()
    assert [r.name for r in results] == ["graph"] and results[0].elapsed > 0.0
    elapsed = kc.get_event_elapsed_time(start, end)  # timed by the replay
    assert 0.0 < elapsed <= results[0].elapsed * 1.5 + 0.05


def test_event_methods_in_both_styles(gpu):
    a = kc.zeros(1 << 22, device=gpu)
    first, second = kc.Event(gpu, enable_timing=True), kc.Event(gpu, enable_timing=True)
    first.record()
    kc.launch(spin, a.size, inputs=[a, 2000], device=gpu)
    second.record()
    second.wait()  # the host waits (without the GIL)
    assert first.query() and second.query()
    by_method = first.elapsed_time(second)
    by_function = kc.get_event_elapsed_time(first, second)
    assert by_method == pytest.approx(by_function) and by_method > 0.0
    later = kc.Event(gpu, enable_timing=True)
    kc.record_event(later)
    kc.synchronize_event(later)
    assert kc.get_event_elapsed_time(second, later) >= 0.0


def test_kernel_history_on_the_gpu(gpu):
    a = kc.zeros(4096, device=gpu)
    kc.kernel_history()  # clears
    with kc.scoped_set_flag(kc.JitFlag.KernelHistory):
        kc.launch(spin, a.size, inputs=[a, 50], device=gpu)
        kc.launch(spin, a.size, inputs=[a, 50], device=gpu)
    kc.synchronize()
    first, second = kc.kernel_history()
    assert kc.kernel_history() == []
    for entry in (first, second):
        assert entry["name"] == "spin" and str(entry["device"]) == "cuda:0"
        assert entry["execution_time"] > 0.0 and entry["dim"] in (4096, (4096,), [4096])
        assert "__global__" in entry["ir"]  # the generated CUDA-C
    assert second["cache"] == "memory"


def test_timer_synchronize_waits_for_the_gpu(gpu):
    a = kc.zeros(1 << 22, device=gpu)
    kc.launch(spin, a.size, inputs=[a, 1], device=gpu)
    kc.synchronize()
    with kc.ScopedTimer("async", print=False) as quick:
        kc.launch(spin, a.size, inputs=[a, 20000], device=gpu)
    kc.synchronize()
    with kc.ScopedTimer("synced", print=False, synchronize=True) as waited:
        kc.launch(spin, a.size, inputs=[a, 20000], device=gpu)
    assert waited.elapsed > quick.elapsed


def test_profiler_brackets_and_ranges_run_on_the_gpu(gpu):
    a = kc.zeros(1000, device=gpu)
    with kc.ScopedCudaProfiler(gpu), kc.profile_range("step"):
        kc.launch(spin, 1000, inputs=[a, 3], device=gpu)
        kc.profile_mark("launched")
    with kc.profile_enable(), kc.ScopedTimer("nvtx", use_nvtx=True, color="green"):
        kc.launch(spin, 1000, inputs=[a, 3], device=gpu)
    t0 = time.perf_counter()
    kc.synchronize()
    assert time.perf_counter() - t0 < 5.0
    np.testing.assert_allclose(a.numpy(), 0.001 * (1 - 0.999**6) / 0.001, rtol=1e-4)
