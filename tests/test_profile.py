"""`python -m kernelc.profile` and the roofline it measures against (kernelc.timing.roofline)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kernelc as kc
from kernelc.profile.report import ProfileHistory
from kernelc.timing import roofline
from kernelc.timing.roofline import Roofs

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import kernelc as kc

    @kc.kernel
    def saxpy(a: float, x: kc.array(dtype=float), y: kc.array(dtype=float)):
        i = kc.tid()
        y[i] = a * x[i] + y[i]

    @kc.kernel
    def fill(y: kc.array(dtype=float), v: float):
        y[kc.tid()] = v

    n = int(sys.argv[1])
    x, y = kc.array(np.arange(n, dtype=np.float32)), kc.zeros(n)
    for _ in range(20):
        kc.launch(saxpy, n, [2.0, x, y])
    for _ in range(5):
        kc.launch(fill, (n // 2,), [y, 1.0])
    x.requires_grad = True
    print("script ran with", sys.argv[1:])
    sys.exit(int(sys.argv[2]))
""")


def test_efficiency_is_against_the_roof_the_intensity_meets():
    roofs = Roofs("cpu", flops=100e9, bandwidth=10e9, threads=2)
    assert roofs.ridge == pytest.approx(10.0)
    # Memory-bound (1 FLOP/byte): the bound is 10 GFLOP/s; 5 GFLOP in 1 s is half of it.
    assert roofs.efficiency(5e9, 5e9, 1.0) == pytest.approx(0.5)
    # Compute-bound (100 FLOP/byte): the bound is the 100 GFLOP/s peak.
    assert roofs.efficiency(50e9, 0.5e9, 1.0) == pytest.approx(0.5)
    assert roofs.efficiency(0, 2e9, 1.0) == pytest.approx(0.2)  # a copy: bandwidth only
    assert roofs.efficiency(None, 2e9, 1.0) is None  # a count the compiler did not know
    assert roofs.efficiency(1e9, 1e9, 0.0) is None


def test_roofs_are_measured_once_and_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(kc.config, "kernel_cache_dir", str(tmp_path))
    first = roofline.device_roofs("cpu")
    assert first.flops > 1e9 and first.bandwidth > 1e8  # any machine this runs on
    assert first.threads == kc.config.num_threads
    saved = json.loads((tmp_path / "roofs.json").read_text())
    assert len(saved) == 1

    def measure_again(*args, **kwargs):
        raise AssertionError("the cached roofs should have been used")

    monkeypatch.setattr(roofline, "measure_roofs", measure_again)
    assert roofline.device_roofs("cpu") == first
    monkeypatch.setattr(kc.config, "num_threads", kc.config.num_threads + 1)
    with pytest.raises(AssertionError, match="cached"):  # another thread count: measured anew
        roofline.device_roofs("cpu")


def test_history_is_summed_per_kernel_and_device():
    history = ProfileHistory(keep=3, batch=2)
    record = {"name": "step", "device": "cpu", "dim": (8,), "flops": 16.0, "bytes": 64.0,
              "cache": "miss", "codegen_time": 2.0, "backend_time": 3.0}
    history.append({**record, "execution_time": 1.5, "activity": "forward kernel step"})
    history.append({**record, "execution_time": 0.5, "cache": "memory",
                    "activity": "forward kernel step"})
    history.append({**record, "execution_time": lambda: 4.0, "flops": None,
                    "activity": "backward kernel step"})
    assert len(history.pending) == 1  # a device time still to read
    history.append({**record, "execution_time": lambda: 2.0, "dim": (4,),
                    "activity": "backward kernel step"})
    assert not history.pending and len(history) == 3  # read in a batch of two; keeps 3
    forward = history.totals[("forward kernel step", "cpu")]
    assert (forward.launches, forward.ms, forward.flops, forward.nbytes) == (2, 2.0, 32.0, 128.0)
    assert (forward.compiles, forward.compile_ms, forward.min_ms, forward.max_ms) == (1, 5.0, 0.5, 1.5)
    backward = history.totals[("backward kernel step", "cpu")]
    assert backward.ms == 6.0 and backward.flops is None and backward.nbytes == 128.0
    assert dict(backward.shapes) == {(8,): 1, (4,): 1}


def _profile(tmp_path, *args, script_args=("4096", "0")):
    script = tmp_path / "work.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KERNELC_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "kernelc.profile", *args, str(script),
                           *script_args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)


def _rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        found = re.match(r"\s*([\d.]+)%\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s+(\S+)\s+(\S+)\s+(\S+)"
                         r"\s+(\S+)\s+(.+)$", line)
        if found:
            rows[found.group(9)] = list(found.groups())
    return rows


def test_profiler_runs_a_script_and_reports_each_kernel(tmp_path):
    done = _profile(tmp_path, "--trace", "trace.json", script_args=("4096", "3"))
    assert done.returncode == 3, done.stderr  # the script's own exit status
    out = done.stdout
    assert "script ran with ['4096', '3']" in out
    assert re.search(r"roofs on cpu, \d+ threads: [\d.]+ GFLOP/s, [\d.]+ GB/s", out)
    rows = _rows(out)
    assert set(rows) == {"forward kernel saxpy (cpu)", "forward kernel fill (cpu)"}
    saxpy, fill = rows["forward kernel saxpy (cpu)"], rows["forward kernel fill (cpu)"]
    assert saxpy[2] == "20" and fill[2] == "5"
    assert float(saxpy[0]) + float(fill[0]) == pytest.approx(100.0, abs=0.2)
    assert saxpy[6] == "0.17"  # 2 FLOP per 12 bytes, from the IR
    assert fill[4] == "0.00" and fill[6] == "0.00"  # a fill: no FLOP, only bytes
    assert saxpy[7].endswith("%") and fill[7].endswith("%")
    events = json.loads((tmp_path / "trace.json").read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert sum("saxpy" in e.get("name", "") and e.get("cat") == "launch" for e in events) == 20


def test_profiler_details_of_one_kernel(tmp_path):
    done = _profile(tmp_path, "--kernel", "fill", "--no-roofs")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "roofs on" not in out
    assert set(_rows(out)) == {"forward kernel fill (cpu)"}
    assert "forward kernel fill on cpu" in out and "5 launches" in out
    assert "dim (2048,): 5 launches" in out
    assert re.search(r"per launch: 2048 FLOP|per launch: 0 FLOP", out)
    missing = _profile(tmp_path, "--kernel", "nothing", "--no-roofs")
    assert "no launches of a kernel named 'nothing'" in missing.stdout


def test_profiler_reports_after_a_failing_script(tmp_path):
    done = _profile(tmp_path, "--no-roofs", script_args=("not-a-number", "0"))
    assert done.returncode == 1
    assert "ValueError" in done.stderr and "kernelc profile of" in done.stdout


def test_profiler_runs_a_module(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KERNELC_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "kernelc.profile", "--no-roofs", "-m",
                           "kernelc.examples", "wave", "--num-frames", "4"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout)
    assert rows["forward kernel wave_step (cpu)"][2] == "4"
