"""example_wave's two kernels, one launch at a time: kernelc beside warp-lang, in one run.

The kernels come from the example's source in the installed warp-lang, loaded once with
`import kernelc as wp` and once with `import warp as wp`.

    python benchmarks/wave_kernels.py [--size 128] [--repeat 3000]

`wave_solve` gathers its five-point stencil through a func that takes the array and clamps
the indices; `wave_displace` divides the thread index by the grid width. Both run on a
128x128 grid (16K threads) as in Warp's example, with the buffers swapped after each
substep as the example does. Prints the median microseconds per launch, timed in blocks
of consecutive launches (a simulation loop: kernelc's workers stay awake between them),
the systems taking turns block by block so that both see the same load.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import print_table  # puts this checkout on sys.path

import kernelc as kc


def example_kernels(module: str, folder: Path) -> tuple[object, object] | None:
    """example_wave's `wave_solve` and `wave_displace`, from Warp's own source with `module`
    ("kernelc" or "warp") as `wp`; None when warp-lang (with its examples) is missing."""
    from tests import warp_examples

    if warp_examples.examples_dir() is None:
        return None
    if module == "warp":
        try:
            import warp
        except ImportError:
            return None
        warp.config.quiet = True
        warp.init()
    path = folder / f"{module}_example_wave.py"  # kernels are read back from their file
    path.write_text(warp_examples.source_for("example_wave", module, shrink=False))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod.wave_solve, mod.wave_displace


def launchers(lib, solve, displace, size: int) -> dict[str, object]:
    """The two kernels' launches with `lib` (kernelc or warp), buffers swapped each call."""
    n = size * size
    rng = np.random.default_rng(1)
    grids = [lib.array(rng.uniform(-1, 1, n).astype(np.float32), dtype=float)
             for _ in range(2)]
    state = {"t": 0.0}

    def run_solve():
        lib.launch(solve, n, inputs=[grids[0], grids[1], size, size, 10.0, 1.0, 0.0, 1 / 960])
        grids.reverse()

    def run_displace():
        state["t"] += 0.01
        cx = size / 2 + math.sin(state["t"]) * size / 3
        lib.launch(displace, n, inputs=[grids[0], grids[1], size, size, cx, size / 2, 10.0,
                                        0.5, -math.pi / 2])

    return {"wave_solve": run_solve, "wave_displace": run_displace}


def block_medians(fns: dict[str, object], repeat: int, block: int = 50) -> dict[str, float]:
    """Median seconds per call of each function, timed `block` calls at a time in turns."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(max(1, repeat // block)):
        for name, fn in fns.items():
            for _ in range(block):
                t = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t)
    return {name: float(np.median(t)) for name, t in times.items()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=128, help="grid side (threads = size**2)")
    p.add_argument("--repeat", type=int, default=3000, help="timed launches per kernel")
    args = p.parse_args()
    folder = Path(tempfile.mkdtemp())
    kernels = {"kernelc": example_kernels("kernelc", folder),
               "warp": example_kernels("warp", folder)}
    if kernels["kernelc"] is None:
        print("needs warp-lang's example_wave (pip install warp-lang)", file=sys.stderr)
        return 1
    systems = {f"kernelc ({kc.config.num_threads} threads)":
               launchers(kc, *kernels["kernelc"], args.size)}
    if kernels["warp"] is not None:
        import warp

        systems["warp (cpu)"] = launchers(warp, *kernels["warp"], args.size)
    rows = [("kernel (median per launch)", "system", "time", "vs. warp")]
    for kernel in ("wave_solve", "wave_displace"):
        fns = {system: launches[kernel] for system, launches in systems.items()}
        for _ in range(20):  # compile and warm up
            for fn in fns.values():
                fn()
        times = block_medians(fns, args.repeat)
        warp_time = times.get("warp (cpu)")
        for k, (system, t) in enumerate(times.items()):
            ratio = f"{warp_time / t:.1f}x" if warp_time else ""
            rows.append((f"{kernel} {args.size}x{args.size}" if k == 0 else "", system,
                         f"{t * 1e6:.1f} us", ratio))
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
