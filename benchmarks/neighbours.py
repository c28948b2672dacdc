"""Hash-grid neighbour search: build + one query pass, kernelc beside warp-lang, in one run.

    python benchmarks/neighbours.py [--quick]

The DEM example's pattern: `HashGrid.build(points, r)` then one kernel where each point loops
over `hash_grid_query` candidates and counts those within r. Uniform random points at a
density of ~30 neighbours per query. Prints build and query times (median of repeated runs,
round-robin with Warp so both see the same load) and candidates visited per second.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from _common import print_table  # puts this checkout on sys.path

import kernelc as kc

try:
    import warp as wp

    wp.config.log_level = getattr(wp, "LOG_ERROR", 40)
    wp.init()
except Exception:  # warp-lang is optional
    wp = None


@kc.kernel
def kc_count(grid: kc.uint64, points: kc.array(dtype=kc.vec3), radius: float,
             counts: kc.array(dtype=int)):
    tid = kc.tid()
    i = kc.hash_grid_point_id(grid, tid)
    p = points[i]
    n = int(0)
    query = kc.hash_grid_query(grid, p, radius)
    index = int(0)
    while kc.hash_grid_query_next(query, index):
        if kc.length(points[index] - p) <= radius:
            n += 1
    counts[i] = n


if wp is not None:
    @wp.kernel
    def wp_count(grid: wp.uint64, points: wp.array(dtype=wp.vec3), radius: float,
                 counts: wp.array(dtype=int)):
        tid = wp.tid()
        i = wp.hash_grid_point_id(grid, tid)
        p = points[i]
        n = int(0)
        query = wp.hash_grid_query(grid, p, radius)
        index = int(0)
        while wp.hash_grid_query_next(query, index):
            if wp.length(points[index] - p) <= radius:
                n += 1
        counts[i] = n


def rows(n: int, repeat: int) -> list[tuple]:
    radius = 1.0
    side = (n * (4.0 / 3.0) * np.pi * radius ** 3 / 30.0) ** (1.0 / 3.0)  # ~30 neighbours
    pts = (np.random.default_rng(3).random((n, 3)) * side).astype(np.float32)
    systems = {}
    grid = kc.HashGrid(128, 128, 128)
    points = kc.array(pts, dtype=kc.vec3)
    counts = kc.zeros(n, dtype=int)
    systems["kernelc"] = (lambda: grid.build(points, radius),
                          lambda: kc.launch(kc_count, n, [grid.id, points, radius, counts]),
                          counts.numpy)
    if wp is not None:
        wgrid = wp.HashGrid(128, 128, 128, device="cpu")
        wpoints = wp.array(pts, dtype=wp.vec3, device="cpu")
        wcounts = wp.zeros(n, dtype=int, device="cpu")
        systems["warp (cpu)"] = (
            lambda: wgrid.build(wpoints, radius),
            lambda: wp.launch(wp_count, n, [wgrid.id, wpoints, radius, wcounts], device="cpu"),
            wcounts.numpy)
    times = {name: ([], []) for name in systems}
    for build, query, _ in systems.values():  # warm-up: compile, allocate
        build()
        query()
    for _ in range(repeat):
        for name, (build, query, _) in systems.items():
            t0 = time.perf_counter()
            build()
            t1 = time.perf_counter()
            query()
            t2 = time.perf_counter()
            times[name][0].append(t1 - t0)
            times[name][1].append(t2 - t1)
    reference = systems["kernelc"][2]()
    out = []
    for name, (build_t, query_t) in times.items():
        assert np.array_equal(systems[name][2](), reference), f"{name} disagrees"
        b, q = np.median(build_t), np.median(query_t)
        out.append((f"{n} points", name, f"{b * 1e3:.2f} ms", f"{q * 1e3:.2f} ms",
                    f"{reference.sum() / q / 1e9:.3f} G neighbours/s"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    args = ap.parse_args()
    # 62.5K: the size of example_sph, which rebuilds its grid every substep
    sizes = (20_000,) if args.quick else (62_500, 100_000, 1_000_000)
    print(f"cores: {os.cpu_count()}, kernelc threads: {kc.config.num_threads}")
    header = ("benchmark", "system", "build", "query", "throughput")
    table = [header] + [r for n in sizes for r in rows(n, 3 if args.quick else 7)]
    print_table(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
