"""Warp's bundled examples, timed under Warp and under kernelc (`import kernelc as wp`).

Each example runs from Warp's own source (see tests/warp_examples.py) at its full size in
a fresh process per system; a step is timed after one warm-up step (which compiles), and
the median of the next steps is reported.

Run: python benchmarks/warp_examples.py [--steps N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap

from _common import ROOT, print_table

_DRIVER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    sys.path.insert(0, {root!r})
    import numpy as np
    from tests import warp_examples
    name, module, folder, steps = sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    kwargs = json.loads(sys.argv[5])
    spec = warp_examples.SPECS[name]
    path = folder / f"{{module}}_{{name}}.py"
    path.write_text(warp_examples.source_for(name, module, shrink=False))
    import importlib.util
    loader = importlib.util.spec_from_file_location(f"{{module}}_{{name}}", path)
    mod = importlib.util.module_from_spec(loader)
    sys.modules[loader.name] = mod
    loader.loader.exec_module(mod)
    if module == "warp":
        import warp
        warp.config.quiet = True
        warp.init()  # Warp's HashGrid needs the runtime up before the first launch
    example = mod.Example(**{{**spec.kwargs, **kwargs}})
    action = getattr(example, spec.action)
    times = []
    for _ in range(steps + 1):
        t0 = time.perf_counter()
        action(*spec.args)
        times.append(time.perf_counter() - t0)
    print(json.dumps(times[1:]))
""")

EXAMPLES = ("example_wave", "example_fluid", "example_dem", "example_sph", "example_raymarch",
            "example_graph_capture", "example_fdtd_3d", "example_fft_poisson_navier_stokes_2d",
            "example_tile_mcgp", "example_diffray")
# The test suite renders a 96x48 image; time a bigger one (the example's own is 2048x1024).
# example_tile_mcgp: a 64x64 slice (the example's own is 256x256) of a finer sphere.
# example_diffray: a 256-pixel-high image (the example's own is 1024), texture mode.
SIZES = {"example_raymarch": {"height": 256, "width": 512},
         "example_diffray": {"height": 256},
         "example_tile_mcgp": {"height": 64, "sphere_resolution": 32}}


def time_example(name: str, module: str, steps: int, folder: str) -> float | None:
    script = _DRIVER.format(root=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", script, name, module, folder, str(steps),
                           json.dumps(SIZES.get(name, {}))],
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        print(f"{name} under {module} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    times = json.loads(proc.stdout.strip().splitlines()[-1])
    times.sort()
    return times[len(times) // 2]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=5, help="timed steps per example")
    p.add_argument("examples", nargs="*", default=EXAMPLES, help="which examples (all)")
    args = p.parse_args()
    rows = [("example (median step)", "warp 1.19 cpu", "kernelc", "speed-up")]
    with tempfile.TemporaryDirectory() as folder:
        for name in args.examples:
            w = time_example(name, "warp", args.steps, folder)
            k = time_example(name, "kernelc", args.steps, folder)
            ratio = f"{w / k:.1f}x" if w and k else ""
            rows.append((name, f"{w * 1e3:.1f} ms" if w else "failed",
                         f"{k * 1e3:.1f} ms" if k else "failed", ratio))
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
