"""Timing and table helpers shared by the benchmark scripts."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)  # measure the checkout the scripts are in


# The start of a program for `run_program`: `wp` is the library named by argv[1] (Warp
# initialised quietly), `repeat` the count from argv[2]; `{root}` is filled in.
PROGRAM_HEAD = """import json, sys, time
import numpy as np
sys.path.insert(0, {root!r})
import importlib
wp = importlib.import_module(sys.argv[1])
if sys.argv[1] == "warp":
    wp.config.quiet = True
    wp.init()
repeat = int(sys.argv[2])
"""


def run_program(program: str, module: str, repeat: int, filename: str) -> dict | None:
    """Runs a benchmark program (a template formatted with `root`, the checkout) with
    `module` ("warp" or "kernelc") as `wp` in a fresh process; returns the JSON object it
    prints last, or None (with its error on stderr) if it failed. Kernels must live in a
    file, so the program is written to one first."""
    import json
    import subprocess
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / filename
        script.write_text(program.format(root=ROOT))
        proc = subprocess.run([sys.executable, str(script), module, str(repeat)],
                              capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        print(f"{module} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def median_time(fn: Callable[[], object], repeat: int, warmup: int = 1) -> float:
    """Median seconds of `fn()` over `repeat` calls after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def median_times(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median seconds of each function after one warm-up call, timed round-robin so that
    every system sees the same background load on a shared machine."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {name: float(np.median(t)) for name, t in times.items()}


def print_table(rows: list[tuple]) -> None:
    """Rows of equal length (the first is the header), columns padded to their widest cell."""
    widths = [max(len(str(r[k])) for r in rows) for k in range(len(rows[0]))]
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())


def phase_rows(results: dict[str, dict | None], phases: list[tuple[str, str]]) -> list[tuple]:
    """Table rows comparing Warp's and kernelc's runs of one program, a row per phase:
    `(label, key)` reads `results[system][key]` (seconds), the key "steps" the median of a
    list of step times; a failed run (None) shows as "failed"."""
    def seconds(run: dict | None, key: str) -> float | None:
        if not run:
            return None
        value = run[key]
        return sorted(value)[len(value) // 2] if key == "steps" else value

    rows = []
    for label, key in phases:
        w, k = seconds(results["warp"], key), seconds(results["kernelc"], key)
        rows.append((label, f"{w * 1e3:.0f} ms" if w else "failed",
                     f"{k * 1e3:.0f} ms" if k else "failed",
                     f"{w / k:.1f}x" if w and k else ""))
    return rows


def print_comparison(results: dict, cases: tuple[str, ...], threads: int,
                     digits: int = 1) -> None:
    """The table of a Warp-against-kernelc run: per case, each library's median launch
    (`results[library][case]`, seconds, None where a run failed) and the speed-up."""
    rows = [("case (median launch)", "warp 1.19 cpu", f"kernelc, {threads} thread(s)",
             "speed-up")]
    for case in cases:
        w, k = (results[m] and results[m][case] for m in ("warp", "kernelc"))
        rows.append((case, f"{w * 1e3:.{digits}f} ms" if w else "failed",
                     f"{k * 1e3:.{digits}f} ms" if k else "failed",
                     f"{w / k:.2f}x" if w and k else ""))
    print_table(rows)
