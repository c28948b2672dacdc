"""Warp's `example_adaptive_grid.py` (an incompressible flow on an adaptive sparse grid
refined near a collider), timed under Warp and under kernelc (`import kernelc as wp`) on
the CPU.

Each system runs the example from Warp's source in a fresh process: building the grid and
spaces (which compiles), the first step (compiles too), then the median of the next steps
(each assembles the boundary projector, mass, divergence and side-jump matrices and
solves).

Run: python benchmarks/fem_adaptive.py [--degree 1] [--div-conforming] [--steps 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap

from _common import ROOT, phase_rows, print_table

_DRIVER = textwrap.dedent("""
    import importlib, json, sys, tempfile, time
    sys.path.insert(0, {root!r})
    from tests.fem_harness import load_kernelc_examples
    module, degree, div_conforming, steps = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
    t0 = time.perf_counter()
    if module == "warp":
        import warp as wp
        wp.config.quiet = True
        example_module = importlib.import_module("warp.examples.fem.example_adaptive_grid")
    else:
        import kernelc as wp
        names = {{"utils": "bench_fem_utils", "example_apic_fluid": "bench_apic",
                  "example_adaptive_grid": "bench_adaptive"}}
        example_module = load_kernelc_examples(tempfile.mkdtemp(), names)["bench_adaptive"]
    wp.set_module_options({{"enable_backward": False}})
    example = example_module.Example(quiet=True, degree=degree, div_conforming=div_conforming,
                                     headless=True)
    build = time.perf_counter() - t0
    times = []
    for _ in range(steps + 1):
        t0 = time.perf_counter()
        example.step()
        times.append(time.perf_counter() - t0)
    print(json.dumps({{"build": build, "first": times[0], "steps": times[1:],
                      "cells": example._geo.cell_count()}}))
""")


def run(module: str, degree: int, div_conforming: bool, steps: int) -> dict | None:
    proc = subprocess.run([sys.executable, "-c", _DRIVER.format(root=str(ROOT)), module,
                           str(degree), str(int(div_conforming)), str(steps)],
                          capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        print(f"{module} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--degree", type=int, default=1)
    p.add_argument("--div-conforming", action="store_true")
    p.add_argument("--steps", type=int, default=5)
    args = p.parse_args()
    results = {m: run(m, args.degree, args.div_conforming, args.steps)
               for m in ("warp", "kernelc")}
    cells = next((r["cells"] for r in results.values() if r), "?")
    basis = "RT" if args.div_conforming else "Q"
    rows = [(f"example_adaptive_grid, {basis}{args.degree} velocity ({cells} cells)",
             "warp 1.19 cpu", "kernelc", "speed-up")]
    rows += phase_rows(results, [("import and build grid (compiles)", "build"),
                                 ("first step (compiles)", "first"), ("median step", "steps")])
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
