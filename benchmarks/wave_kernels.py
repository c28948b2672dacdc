"""example_wave's two kernels, one launch at a time: kernelc beside warp-lang, in one run.

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
import math
import time

import numpy as np
from _common import print_table  # puts this checkout on sys.path

import kernelc as kc

try:
    import warp as wp

    wp.config.quiet = True
    wp.init()
except Exception:  # warp-lang is optional
    wp = None


@kc.func
def kc_sample(f: kc.array(dtype=float), x: int, y: int, width: int, height: int):
    x = kc.clamp(x, 0, width - 1)
    y = kc.clamp(y, 0, height - 1)
    return f[y * width + x]


@kc.func
def kc_laplacian(f: kc.array(dtype=float), x: int, y: int, width: int, height: int):
    ddx = kc_sample(f, x + 1, y, width, height) - 2.0 * kc_sample(f, x, y, width, height) \
        + kc_sample(f, x - 1, y, width, height)
    ddy = kc_sample(f, x, y + 1, width, height) - 2.0 * kc_sample(f, x, y, width, height) \
        + kc_sample(f, x, y - 1, width, height)
    return ddx + ddy


@kc.kernel
def kc_wave_solve(hprevious: kc.array(dtype=float), hcurrent: kc.array(dtype=float),
                  width: int, height: int, inv_cell: float, k_speed: float, k_damp: float,
                  dt: float):
    tid = kc.tid()
    x = tid % width
    y = tid // width
    lap = kc_laplacian(hcurrent, x, y, width, height) * inv_cell * inv_cell
    h1 = hcurrent[tid]
    h0 = hprevious[tid]
    hprevious[tid] = 2.0 * h1 - h0 + dt * dt * (k_speed * lap - k_damp * (h1 - h0))


@kc.kernel
def kc_wave_displace(hcurrent: kc.array(dtype=float), hprevious: kc.array(dtype=float),
                     width: int, height: int, center_x: float, center_y: float, r: float,
                     mag: float, t: float):
    tid = kc.tid()
    dx = float(tid % width) - center_x
    dy = float(tid // width) - center_y
    if dx * dx + dy * dy < r * r:
        h = mag * kc.sin(t)
        hcurrent[tid] = h
        hprevious[tid] = h


if wp is not None:
    @wp.func
    def wp_sample(f: wp.array(dtype=float), x: int, y: int, width: int, height: int):
        x = wp.clamp(x, 0, width - 1)
        y = wp.clamp(y, 0, height - 1)
        return f[y * width + x]

    @wp.func
    def wp_laplacian(f: wp.array(dtype=float), x: int, y: int, width: int, height: int):
        ddx = wp_sample(f, x + 1, y, width, height) - 2.0 * wp_sample(f, x, y, width, height) \
            + wp_sample(f, x - 1, y, width, height)
        ddy = wp_sample(f, x, y + 1, width, height) - 2.0 * wp_sample(f, x, y, width, height) \
            + wp_sample(f, x, y - 1, width, height)
        return ddx + ddy

    @wp.kernel
    def wp_wave_solve(hprevious: wp.array(dtype=float), hcurrent: wp.array(dtype=float),
                      width: int, height: int, inv_cell: float, k_speed: float,
                      k_damp: float, dt: float):
        tid = wp.tid()
        x = tid % width
        y = tid // width
        lap = wp_laplacian(hcurrent, x, y, width, height) * inv_cell * inv_cell
        h1 = hcurrent[tid]
        h0 = hprevious[tid]
        hprevious[tid] = 2.0 * h1 - h0 + dt * dt * (k_speed * lap - k_damp * (h1 - h0))

    @wp.kernel
    def wp_wave_displace(hcurrent: wp.array(dtype=float), hprevious: wp.array(dtype=float),
                         width: int, height: int, center_x: float, center_y: float,
                         r: float, mag: float, t: float):
        tid = wp.tid()
        dx = float(tid % width) - center_x
        dy = float(tid // width) - center_y
        if dx * dx + dy * dy < r * r:
            h = mag * wp.sin(t)
            hcurrent[tid] = h
            hprevious[tid] = h


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
    systems = {f"kernelc ({kc.config.num_threads} threads)":
               launchers(kc, kc_wave_solve, kc_wave_displace, args.size)}
    if wp is not None:
        systems["warp (cpu)"] = launchers(wp, wp_wave_solve, wp_wave_displace, args.size)
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
