"""CPU blocks of several lanes (`config.enable_cpu_blocks`) timed under Warp and kernelc.

The program runs unchanged with `wp` bound to either library, each in a fresh process,
with blocks of `--block` lanes switched on:

- "gather + sum": `tile(x)` of every lane's value, a block sum, one atomic per block;
- "row normalise": `launch_tiled` over rows, each lane reading its entry with `untile`;
- "tile matmul": 64x64 blocks of a matrix product with `tile_matmul` (collective work only).

Warp runs a block's lanes as cooperative fibers; kernelc runs the collective work once and
the per-lane code in a loop over the lanes. It reports the largest difference from Warp's
results. One kernelc thread by default, to compare per thread with Warp's CPU backend.

Run: python benchmarks/cpu_blocks.py [--repeat N] [--n N] [--block B] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap

from _common import PROGRAM_HEAD, print_comparison, run_program

PROGRAM = PROGRAM_HEAD + textwrap.dedent("""
    wp.config.enable_cpu_blocks = True
    n, B, T = N_VALUES, BLOCK, 64

    @wp.kernel
    def gather_sum(a: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        s = wp.tile_sum(wp.tile(a[i] * a[i]))
        wp.tile_atomic_add(out, s)

    @wp.kernel
    def normalise(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
        i, lane = wp.tid()
        row = wp.tile_load(a[i], shape=B)
        total = wp.tile_extract(wp.tile_sum(row), 0)
        out[i, lane] = wp.untile(row) / total

    @wp.kernel
    def matmul(A: wp.array2d(dtype=float), Bm: wp.array2d(dtype=float),
               C: wp.array2d(dtype=float)):
        i, j = wp.tid()
        acc = wp.tile_zeros(shape=(T, T), dtype=float)
        for k in range(A.shape[1] // T):
            a = wp.tile_load(A, shape=(T, T), offset=(i * T, k * T))
            b = wp.tile_load(Bm, shape=(T, T), offset=(k * T, j * T))
            wp.tile_matmul(a, b, acc)
        wp.tile_store(C, acc, offset=(i * T, j * T))

    rng = np.random.default_rng(0)
    a = wp.array(rng.uniform(0.5, 1.5, n).astype(np.float32))
    out = wp.zeros(1, dtype=float)
    rows = wp.array(rng.uniform(0.5, 1.5, (n // B, B)).astype(np.float32))
    normed = wp.zeros((n // B, B), dtype=float)
    m = 256
    A = wp.array(rng.uniform(-1, 1, (m, m)).astype(np.float32))
    Bm = wp.array(rng.uniform(-1, 1, (m, m)).astype(np.float32))
    C = wp.zeros((m, m), dtype=float)

    def run_gather():
        out.zero_()
        wp.launch(gather_sum, dim=n, inputs=[a], outputs=[out], block_dim=B)

    def run_rows():
        wp.launch_tiled(normalise, dim=n // B, inputs=[rows], outputs=[normed], block_dim=B)

    def run_matmul():
        wp.launch_tiled(matmul, dim=(m // T, m // T), inputs=[A, Bm], outputs=[C],
                        block_dim=B)

    result = {{}}
    for name, fn, arr in (("gather + sum", run_gather, out), ("row normalise", run_rows, normed),
                          ("tile matmul", run_matmul, C)):
        fn()  # compiles
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            wp.synchronize()
            times.append(time.perf_counter() - t0)
        result[name] = sorted(times)[len(times) // 2]
        result[name + " check"] = arr.numpy().ravel().tolist()
    print(json.dumps(result))
""")

CASES = ("gather + sum", "row normalise", "tile matmul")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=9, help="timed launches per case")
    p.add_argument("--n", type=int, default=1 << 18, help="values gathered")
    p.add_argument("--block", type=int, default=64, help="lanes per block")
    p.add_argument("--threads", type=int, default=1, help="kernelc worker threads")
    args = p.parse_args()
    os.environ["KERNELC_NUM_THREADS"] = str(args.threads)
    program = PROGRAM.replace("N_VALUES", str(args.n)).replace("BLOCK", str(args.block))
    results = {m: run_program(program, m, args.repeat, "cpu_blocks_program.py")
               for m in ("warp", "kernelc")}
    print_comparison(results, CASES, args.threads, 2)
    if results["warp"] and results["kernelc"]:
        import numpy as np

        for case in CASES:
            a = np.array(results["warp"][f"{case} check"])
            b = np.array(results["kernelc"][f"{case} check"])
            scale = max(float(np.abs(a).max()), 1e-30)
            print(f"{case}: largest difference from Warp {np.abs(a - b).max() / scale:.1e} "
                  f"(relative to the largest value)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
