"""Warp's `example_apic_fluid.py` (a particle-in-cell fluid on a sparse grid rebuilt at
every step), timed under Warp and under kernelc (`import kernelc as wp`) on the CPU.

Each system runs the example from Warp's source in a fresh process; the first step
(which compiles) is timed on its own, then the median of the next steps.

Run: python benchmarks/fem_apic.py [--voxel-size 0.5] [--steps 10]
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
    module, voxel_size, steps = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    if module == "warp":
        import warp as wp
        wp.config.quiet = True
        example_module = importlib.import_module("warp.examples.fem.example_apic_fluid")
    else:
        import kernelc as wp
        names = {{"utils": "bench_fem_utils", "example_apic_fluid": "bench_apic"}}
        example_module = load_kernelc_examples(tempfile.mkdtemp(), names)["bench_apic"]
    wp.set_module_options({{"enable_backward": False}})
    example = example_module.Example(quiet=True, stage_path=None, voxel_size=voxel_size,
                                     use_cuda_graph=False)
    times = []
    for _ in range(steps + 1):
        t0 = time.perf_counter()
        example.step()
        times.append(time.perf_counter() - t0)
    print(json.dumps({{"first": times[0], "steps": times[1:],
                      "particles": example.state_0.particle_q.shape[0]}}))
""")


def run(module: str, voxel_size: float, steps: int) -> dict | None:
    proc = subprocess.run([sys.executable, "-c", _DRIVER.format(root=str(ROOT)), module,
                           str(voxel_size), str(steps)], capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode != 0:
        print(f"{module} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--voxel-size", type=float, default=0.5)
    p.add_argument("--steps", type=int, default=10)
    args = p.parse_args()
    results = {m: run(m, args.voxel_size, args.steps) for m in ("warp", "kernelc")}
    particles = next((r["particles"] for r in results.values() if r), "?")
    rows = [(f"example_apic_fluid, voxel {args.voxel_size} ({particles} particles)",
             "warp 1.19 cpu", "kernelc", "speed-up")]
    rows += phase_rows(results, [("first step (compiles)", "first"),
                                 ("median step", "steps")])
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
