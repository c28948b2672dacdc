"""Allocation tracking: `kc.config.track_memory`, `kc.print_memory_report`,
`kc.ScopedMemoryTracker`; the report is parsed and checked against the allocations made."""

from __future__ import annotations

import gc
import io
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import poisoned
from test_allocators import fake_gpus  # noqa: F401  (a fixture)

import kernelc as kc
from kernelc.runtime import alloc_tracker
from kernelc.runtime.alloc_tracker import format_bytes
from kernelc.runtime.context import get_runtime

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).name


@kc.kernel
def scale_add(x: kc.array(dtype=kc.vec3), y: kc.array(dtype=kc.vec3), out: kc.array(dtype=kc.vec3),
              s: float):
    i = kc.tid()
    out[i] = x[i] * s + y[i]


@pytest.fixture(autouse=True)
def fresh_tracker():
    """Every test starts with tracking off and nothing recorded, and leaves it so."""
    kc.config.track_memory = False
    gc.collect()
    alloc_tracker.tracker().reset()
    yield
    kc.config.track_memory = False
    alloc_tracker.tracker().reset()
    assert get_runtime().alloc_tracker is None


def line_after() -> int:
    """The line number after the caller's line (where the allocation under test is)."""
    return sys._getframe(1).f_lineno + 1


# ---- parsing the report --------------------------------------------------------------------

_ROW = re.compile(r"^    (cuda:\d+|cpu|pinned)\s+(.*)$")
_SCOPE_ROW = re.compile(r"^      (cuda:\d+|cpu|pinned): (\d+) allocs, (.+)$")
_LISTING = re.compile(r"^  Live (\S+) allocations, (largest|oldest) first "
                      r"\(showing (\d+) of (\d+)\):$")


def parse(text: str) -> dict:
    """The report as {"total": {cat: (count, size)}, "peak": {cat: size}, "live": {...},
    "none": bool, "scopes": {scope: {cat: (count, size)}}, "listings": {cat: {...}}}."""
    lines = text.splitlines()
    assert lines[0] == "Memory allocation report"
    report: dict = {"total": {}, "peak": {}, "live": {}, "none": False, "scopes": {},
                    "listings": {}}
    section, scope = None, ""
    for line in lines[1:]:
        if line in ("  Total allocations:", "  Peak usage:", "  Live allocations:"):
            section = {"T": "total", "P": "peak", "L": "live"}[line[2]]
        elif line == "  Scope breakdown:":
            section = "scopes"
        elif match := _LISTING.match(line):
            section = "listing"
            entry = {"order": match[2], "shown": int(match[3]), "of": int(match[4]), "rows": []}
            report["listings"][match[1]] = entry
        elif not line:
            continue
        elif section == "listing":
            size, cat, tag = line.strip().split(" : ", 2)
            entry["rows"].append((size, cat, tag))
        elif section == "scopes":
            if match := _SCOPE_ROW.match(line):
                report["scopes"][scope][match[1]] = (int(match[2]), match[3])
            else:
                scope = line.strip().removesuffix(":")
                report["scopes"][scope] = {}
        elif line == "    (none)":
            report["none"] = True
        else:
            match = _ROW.match(line)
            assert match, line
            if section == "peak":
                report["peak"][match[1]] = match[2]
            else:
                count, size = re.fullmatch(r"(\d+) \((.+)\)", match[2]).groups()
                report[section][match[1]] = (int(count), size)
    return report


def memory_report(**kwargs) -> dict:
    out = io.StringIO()
    kc.print_memory_report(file=out, **kwargs)
    return parse(out.getvalue())


# ---- formatting ----------------------------------------------------------------------------


def test_format_bytes():
    assert format_bytes(0) == "0 B"
    assert format_bytes(1023) == "1023 B"
    assert format_bytes(1024) == "1.00 KB"
    assert format_bytes(12000) == "11.72 KB"
    assert format_bytes(2_400_000) == "2.29 MB"
    assert format_bytes(3 << 30) == "3.00 GB"


# ---- global tracking -----------------------------------------------------------------------


def test_global_report_counts_sizes_sites_and_frees():
    kc.config.track_memory = True
    assert kc.config.track_memory and get_runtime().alloc_tracker is not None
    line_a = line_after()
    a = kc.zeros(100, dtype=kc.float32, device="cpu")  # 400 B
    line_b = line_after()
    b = kc.empty((4, 5), dtype=kc.vec3, device="cpu")  # 240 B
    c = kc.array(np.arange(10, dtype=np.int32), device="cpu")  # 40 B, then freed
    del c
    report = memory_report()
    assert report["total"] == {"cpu": (3, "680 B")}
    assert report["peak"] == {"cpu": "680 B"}
    assert report["live"] == {"cpu": (2, "640 B")} and not report["none"]
    assert report["scopes"] == {}  # one scope ("global"): no breakdown, as in Warp
    listing = report["listings"]["cpu"]
    assert (listing["order"], listing["shown"], listing["of"]) == ("largest", 2, 2)
    fn = "test_global_report_counts_sizes_sites_and_frees()"
    assert listing["rows"] == [
        ("400 B", "cpu", f"array[float32, 100] : {HERE}:{line_a} : {fn}"),
        ("240 B", "cpu", f"array[vec3, (4, 5)] : {HERE}:{line_b} : {fn}"),
    ]
    assert alloc_tracker.get_total_alloc_count() == 3
    assert alloc_tracker.get_total_alloc_bytes() == 680
    assert alloc_tracker.get_current_bytes() == 640 and alloc_tracker.get_live_count() == 2
    assert alloc_tracker.get_peak_bytes() == 680
    del a, b
    report = memory_report()
    assert report["live"] == {} and report["none"] and report["listings"] == {}
    assert report["total"] == {"cpu": (3, "680 B")} and report["peak"] == {"cpu": "680 B"}
    assert alloc_tracker.get_current_bytes() == 0 and alloc_tracker.get_live_count() == 0


def test_sort_orders_and_max_items():
    kc.config.track_memory = True
    keep = [kc.zeros(n, dtype=kc.uint8, device="cpu") for n in (10, 300, 20, 300)]
    rows = memory_report(sort="size")["listings"]["cpu"]["rows"]
    assert [r[0] for r in rows] == ["300 B", "300 B", "20 B", "10 B"]
    oldest = memory_report(sort="chronological", max_items=2)["listings"]["cpu"]
    assert (oldest["order"], oldest["shown"], oldest["of"]) == ("oldest", 2, 4)
    assert [r[0] for r in oldest["rows"]] == ["10 B", "300 B"]
    assert memory_report(max_items=0)["listings"]["cpu"]["rows"] == []
    with pytest.raises(ValueError, match="sort order 'newest'"):
        kc.print_memory_report(sort="newest")
    with pytest.raises(ValueError, match="max_items"):
        kc.print_memory_report(max_items=-1)
    del keep


def test_views_share_one_allocation():
    kc.config.track_memory = True
    a = kc.zeros((8, 8), dtype=kc.float32, device="cpu")
    views = [a[2:], a.transpose(), a.reshape(64), a.flatten()]
    assert memory_report()["total"] == {"cpu": (1, "256 B")}
    del a
    assert alloc_tracker.get_live_count() == 1  # the views keep the memory alive
    del views
    assert alloc_tracker.get_live_count() == 0


def test_pinned_and_host_memory_are_separate_categories():
    kc.config.track_memory = True
    host = kc.zeros(64, dtype=kc.float32, device="cpu")
    pinned = kc.zeros(32, dtype=kc.float64, device="cpu", pinned=True)
    report = memory_report()
    assert report["total"] == {"cpu": (1, "256 B"), "pinned": (1, "256 B")}
    assert list(report["listings"]) == ["cpu", "pinned"]
    assert report["listings"]["pinned"]["rows"][0][2].startswith("array[float64, 32]")
    del host, pinned


def test_tracked_arrays_work_in_kernels(rng):
    kc.config.track_memory = True
    n = 1000
    x0, y0 = rng.standard_normal((n, 3)).astype(np.float32), rng.random((n, 3), np.float32)
    x, y = kc.array(x0, dtype=kc.vec3, device="cpu"), kc.array(y0, dtype=kc.vec3, device="cpu")
    with kc.ScopedDevice("cpu"):
        out = kc.array(poisoned((n, 3), np.float32), dtype=kc.vec3)  # NaN: unwritten shows
    assert np.isnan(out.numpy()).all()
    kc.launch(scale_add, n, inputs=[x, y, out, 1.5], device="cpu")
    np.testing.assert_allclose(out.numpy(), x0 * 1.5 + y0, rtol=1e-6)
    # x, y, `out` and the poisoned float32 array it was made from
    report = memory_report()
    assert report["total"] == {"cpu": (4, format_bytes(4 * 12000))}
    assert report["live"] == {"cpu": (3, format_bytes(3 * 12000))}


def test_tracking_off_costs_nothing_and_report_refuses():
    assert get_runtime().alloc_tracker is None and not kc.config.track_memory
    keep = kc.zeros(100, device="cpu")
    assert alloc_tracker.get_total_alloc_count() == 0
    with pytest.raises(RuntimeError, match="allocation tracking is off.*track_memory"):
        kc.print_memory_report()
    kc.config.track_memory = True
    kc.zeros(1, device="cpu")
    kc.config.track_memory = False
    kc.zeros(2, device="cpu")  # not counted
    assert alloc_tracker.get_total_alloc_count() == 1
    with kc.ScopedMemoryTracker("off", active=False, print=False):
        assert get_runtime().alloc_tracker is None
        kc.zeros(3, device="cpu")
    assert alloc_tracker.get_total_alloc_count() == 1
    del keep


def test_release_while_off_is_still_counted():
    with kc.ScopedMemoryTracker("s", print=False):
        a = kc.zeros(10, device="cpu")
    assert get_runtime().alloc_tracker is None
    del a  # released after tracking stopped: still leaves the live list
    assert alloc_tracker.get_live_count() == 0


# ---- scoped tracking -----------------------------------------------------------------------


def test_scoped_trackers_nest_and_report():
    texts = []
    with kc.ScopedMemoryTracker("run", print=False, report_func=texts.append) as tracker:
        assert get_runtime().alloc_tracker is not None
        with kc.ScopedMemoryTracker("init", print=False):
            a = kc.zeros(50, dtype=kc.float32, device="cpu")  # 200 B
            b = kc.zeros(10, dtype=kc.float32, device="cpu")  # 40 B
        c = kc.zeros(25, dtype=kc.float32, device="cpu")  # 100 B
        tracker.report()
        assert (tracker.current_bytes, tracker.peak_bytes, tracker.live_count) == (340, 340, 3)
    assert get_runtime().alloc_tracker is None  # the outermost tracker switched it on
    report = parse(texts[0])
    assert report["scopes"] == {"run": {"cpu": (1, "100 B")},
                                "run/init": {"cpu": (2, "240 B")}}
    assert report["total"] == {"cpu": (3, "340 B")}
    del b
    tracker.report()  # after the block: the data is still there, b is gone
    report = parse(texts[1])
    assert report["live"] == {"cpu": (2, "300 B")}
    assert report["scopes"]["run/init"] == {"cpu": (2, "240 B")}  # scope totals stay
    del a, c


def test_scoped_tracker_prints_on_exit_and_clear(capsys):
    with kc.ScopedMemoryTracker("outer", print=True) as tracker:
        old = kc.zeros(64, dtype=kc.uint8, device="cpu")
        tracker.clear()
        with kc.ScopedMemoryTracker("after_clear", print=False):
            new = kc.zeros(16, dtype=kc.uint8, device="cpu")
    report = parse(capsys.readouterr().out)
    assert report["total"] == {"cpu": (1, "16 B")}  # only what came after clear()
    assert report["listings"]["cpu"]["rows"][0][0] == "16 B"
    del old  # released after clear(): must not disturb the new counts
    assert alloc_tracker.get_live_count() == 1 and alloc_tracker.get_current_bytes() == 16
    del new


def test_global_and_scoped_tracking_together():
    kc.config.track_memory = True
    a = kc.zeros(4, dtype=kc.float32, device="cpu")
    with kc.ScopedMemoryTracker("phase", print=False):
        b = kc.zeros(8, dtype=kc.float32, device="cpu")
    assert get_runtime().alloc_tracker is not None  # global tracking is still on
    assert memory_report()["scopes"] == {"global": {"cpu": (1, "16 B")},
                                         "global/phase": {"cpu": (1, "32 B")}}
    del a, b


def test_scope_stacks_are_per_thread():
    with kc.ScopedMemoryTracker("main", print=False) as tracker:
        kc.zeros(1, device="cpu")
        worker = threading.Thread(target=lambda: kc.zeros(2, device="cpu"))
        worker.start()
        worker.join()
    texts = []
    tracker.report_func = texts.append
    tracker.report()
    report = parse(texts[0])
    assert report["total"] == {"cpu": (2, "12 B")}
    # The worker's allocation is counted but belongs to no scope: one scope, no breakdown.
    assert report["scopes"] == {}


@pytest.mark.usefixtures("fake_gpus")
def test_gpu_categories_come_first():
    """With a stand-in CUDA runtime (host memory posing as two GPUs)."""
    kc.config.track_memory = True
    keep = [kc.zeros(8, dtype=kc.float32, device=d) for d in ("cpu", "cuda:1", "cuda:0")]
    keep.append(kc.zeros(2, dtype=kc.float32, device="cuda:1"))
    report = memory_report()
    assert list(report["total"]) == ["cuda:0", "cuda:1", "cpu"]  # as Warp orders them
    assert report["total"] == {"cuda:0": (1, "32 B"), "cuda:1": (2, "40 B"), "cpu": (1, "32 B")}
    assert list(report["listings"]) == ["cuda:0", "cuda:1", "cpu"]
    assert [r[:2] for r in report["listings"]["cuda:1"]["rows"]] == [("32 B", "cuda:1"),
                                                                     ("8 B", "cuda:1")]
    del keep


@pytest.mark.cuda
def test_device_and_pinned_memory(rng):
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    gpu = kc.get_device("cuda:0")
    kc.config.track_memory = True
    data = rng.standard_normal((1000, 3)).astype(np.float32)
    x = kc.array(data, dtype=kc.vec3, device=gpu)  # 12000 B on the GPU
    out = kc.full(1000, kc.vec3(np.nan, np.nan, np.nan), device=gpu)
    staging = kc.zeros(1000, dtype=kc.vec3, device="cpu", pinned=True)
    kc.launch(scale_add, 1000, inputs=[x, x, out, 2.0], device=gpu)
    kc.copy(staging, out)
    kc.synchronize()
    np.testing.assert_allclose(staging.numpy(), data * 3.0, rtol=1e-6)
    report = memory_report()
    assert report["total"]["cuda:0"] == (2, "23.44 KB")
    assert report["total"]["pinned"] == (1, "11.72 KB")
    assert list(report["listings"])[0] == "cuda:0"  # GPUs first, as in Warp
    del x, out
    # The launcher keeps its last launch's arguments for reuse; another launch drops them.
    kc.launch(scale_add, 1, inputs=[staging, staging, staging, 1.0], device="cpu")
    assert "cuda:0" not in memory_report()["live"]
    del staging


# ---- Warp's example ------------------------------------------------------------------------


def run_warp_example(name: str, tmp_path, kernel_cache_dir, *args: str) -> str:
    """Runs Warp's bundled example `name` with `import kernelc as wp`, on the CPU."""
    try:
        import warp
    except Exception:
        pytest.skip("warp-lang is not installed")
    source = Path(warp.__file__).parent / "examples" / "core" / name
    if not source.exists():
        pytest.skip(f"Warp's {name} is not installed")
    text = source.read_text()
    assert "import warp as wp\n" in text
    script = tmp_path / name
    script.write_text(text.replace("import warp as wp\n", "import kernelc as wp\n"))
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="",
               KERNELC_CACHE_DIR=str(kernel_cache_dir))
    proc = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_warp_alloc_tracker_example(tmp_path, kernel_cache_dir):
    out = run_warp_example("example_alloc_tracker.py", tmp_path, kernel_cache_dir)
    assert "Device: cpu" in out
    reports = [parse(text) for text in reports_in(out)]
    assert len(reports) == 2 + 6  # two in part 1, six in part 2
    first = reports[0]
    # positions, velocities, forces, host buffer: cpu; the staging buffer: pinned
    assert first["total"] == {"cpu": (4, "9.16 MB"), "pinned": (1, "2.29 MB")}
    rows = first["listings"]["cpu"]["rows"]
    assert all(tag.startswith("array[vec3, 200000] : example_alloc_tracker.py:")
               and tag.endswith(" : __init__()") for _, _, tag in rows)
    assert reports[1]["live"]["cpu"] == (5, "11.44 MB")  # + the snapshot
    assert any(tag.endswith("save_snapshot()") for _, _, tag in
               reports[1]["listings"]["cpu"]["rows"])
    assert reports[2]["scopes"]["global/run/init"] == {"cpu": (4, "9.16 MB"),
                                                       "pinned": (1, "2.29 MB")}
    assert reports[5]["scopes"]["global/run/snapshot"] == {"cpu": (3, "6.87 MB")}  # step 90
    assert reports[6]["total"] == {"cpu": (1, "2.29 MB")}  # after clear()
    assert reports[7]["none"] and reports[7]["live"] == {}  # after cleanup


def reports_in(output: str) -> list[str]:
    """The report blocks in a program's output (each up to the next unindented line)."""
    blocks, current = [], None
    for line in output.splitlines():
        if line == "Memory allocation report":
            current = [line]
            blocks.append(current)
        elif current is not None and (not line or line.startswith(" ")):
            current.append(line)
        else:
            current = None
    return ["\n".join(block) + "\n" for block in blocks]
