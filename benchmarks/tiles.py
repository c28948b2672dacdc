"""Tile kernels timed under Warp and under kernelc on the CPU, same program.

The program runs unchanged with `wp` bound to either library, each in a fresh process:
a blocked matrix product (tile_load, tile_matmul, tile_store), batched FFT round trips
(tile_fft, tile_ifft) and a block reduction (tile_sum, tile_atomic_add). Each case is
timed after one warm-up launch (which compiles; its time is reported too), then the
median of the next launches; the results are compared between the two libraries.

Run: python benchmarks/tiles.py [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
import textwrap

from _common import PROGRAM_HEAD, print_table, run_program

PROGRAM = PROGRAM_HEAD + textwrap.dedent("""
    TM = wp.constant(32)
    TK = wp.constant(32)
    FFT_N = wp.constant(256)

    @wp.kernel
    def matmul(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float),
               c: wp.array2d(dtype=float)):
        i, j = wp.tid()
        acc = wp.tile_zeros(shape=(TM, TM), dtype=float)
        for k in range(a.shape[1] // TK):
            ta = wp.tile_load(a, shape=(TM, TK), offset=(i * TM, k * TK))
            tb = wp.tile_load(b, shape=(TK, TM), offset=(k * TK, j * TM))
            wp.tile_matmul(ta, tb, acc)
        wp.tile_store(c, acc, offset=(i * TM, j * TM))

    @wp.kernel
    def fft_round_trip(x: wp.array2d(dtype=wp.vec2f), y: wp.array2d(dtype=wp.vec2f)):
        i = wp.tid()
        t = wp.tile_load(x, shape=(1, FFT_N), offset=(i, 0))
        wp.tile_fft(t)
        wp.tile_ifft(t)
        wp.tile_store(y, t, offset=(i, 0))

    @wp.kernel
    def block_sum(x: wp.array(dtype=float), total: wp.array(dtype=float)):
        i = wp.tid()
        t = wp.tile_load(x, shape=1024, offset=i * 1024)
        wp.tile_atomic_add(total, wp.tile_sum(wp.tile_map(wp.abs, t)))

    def timed(launch):
        t0 = time.perf_counter()
        launch()
        wp.synchronize()
        first = time.perf_counter() - t0
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            launch()
            wp.synchronize()
            times.append(time.perf_counter() - t0)
        return first, sorted(times)[len(times) // 2]

    rng = np.random.default_rng(1)
    out = {{}}
    n = 512
    a = wp.array(rng.uniform(-1, 1, (n, n)).astype(np.float32), dtype=float)
    b = wp.array(rng.uniform(-1, 1, (n, n)).astype(np.float32), dtype=float)
    c = wp.zeros((n, n), dtype=float)
    out["matmul 512"] = timed(lambda: wp.launch_tiled(matmul, dim=(n // 32, n // 32),
                                                       inputs=[a, b, c], block_dim=64))
    out["matmul 512 check"] = c.numpy()[:4, :8].tolist()
    rows = 2048
    x = wp.array(rng.uniform(-1, 1, (rows, 256, 2)).astype(np.float32), dtype=wp.vec2f)
    y = wp.zeros((rows, 256), dtype=wp.vec2f)
    out["fft 2048 x 256"] = timed(lambda: wp.launch_tiled(fft_round_trip, dim=rows,
                                                           inputs=[x, y], block_dim=64))
    out["fft 2048 x 256 check"] = y.numpy()[0, :4].tolist()
    m = 4096 * 1024
    xs = wp.array(rng.uniform(-1, 1, m).astype(np.float32), dtype=float)
    total = wp.zeros(1, dtype=float)
    out["sum 4M"] = timed(lambda: (total.zero_(), wp.launch_tiled(
        block_sum, dim=m // 1024, inputs=[xs, total], block_dim=64)))
    out["sum 4M check"] = float(total.numpy()[0])
    print(json.dumps(out))
""")

CASES = ("matmul 512", "fft 2048 x 256", "sum 4M")


def run(module: str, repeat: int) -> dict | None:
    return run_program(PROGRAM, module, repeat, "tile_program.py")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7, help="timed launches per case")
    args = p.parse_args()
    results = {m: run(m, args.repeat) for m in ("warp", "kernelc")}
    rows = [("case", "warp first", "warp median", "kernelc first", "kernelc median",
             "speed-up")]
    for case in CASES:
        w, k = (results[m] and results[m][case] for m in ("warp", "kernelc"))
        cells = [f"{t * 1e3:.1f} ms" for t in (*(w or (0, 0)), *(k or (0, 0)))]
        rows.append((case, *cells, f"{w[1] / k[1]:.1f}x" if w and k else ""))
    print_table(rows)
    if results["warp"] and results["kernelc"]:
        import numpy as np

        for case in CASES:
            a = np.array(results["warp"][f"{case} check"])
            b = np.array(results["kernelc"][f"{case} check"])
            print(f"{case}: max |kernelc - warp| = {np.abs(a - b).max():.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
