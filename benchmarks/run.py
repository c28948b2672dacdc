"""kernelc beside NumPy (and warp-lang / Numba when installed), measured in one run.

    python benchmarks/run.py [--quick]

Prints one table: saxpy (GB/s), inc_loop (ms), cold compile and warm-cache start in a fresh
process (ms), launch overhead (us), `import kernelc` (ms), with the machine's measured copy
bandwidth for reference. Every figure is the median of repeated runs after a warm-up.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

import kernelc as kc

try:
    import warp as wp

    wp.config.quiet = True
    wp.init()
except Exception:  # warp-lang is optional
    wp = None


def median_time(fn, repeat: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


@kc.kernel
def kc_saxpy(a: float, x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = a * x[i] + y[i]


@kc.kernel
def kc_copy(src: kc.array(dtype=float), dst: kc.array(dtype=float)):
    i = kc.tid()
    dst[i] = src[i]


@kc.kernel
def kc_inc_loop(a: kc.array(dtype=float), n: int):
    i = kc.tid()
    for _ in range(n):
        a[i] += 1.0


@kc.kernel
def kc_noop(a: kc.array(dtype=float)):
    pass


if wp is not None:
    @wp.kernel
    def wp_saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = a * x[i] + y[i]

    @wp.kernel
    def wp_inc_loop(a: wp.array(dtype=float), n: int):
        i = wp.tid()
        for _ in range(n):
            a[i] += 1.0

    @wp.kernel
    def wp_noop(a: wp.array(dtype=float)):
        pass


def copy_bandwidth(n: int) -> tuple[float, float]:
    """(NumPy copy GB/s on one thread, kernelc copy kernel GB/s on all threads)."""
    src = np.random.rand(n).astype(np.float32)
    dst = np.empty_like(src)
    t_np = median_time(lambda: np.copyto(dst, src), 5)
    a, b = kc.array(src), kc.zeros(n, dtype=float)
    t_kc = median_time(lambda: kc.launch(kc_copy, n, [a, b]), 5)
    return 8 * n / t_np / 1e9, 8 * n / t_kc / 1e9


def saxpy_rows(n: int, limit: float) -> list[tuple]:
    rng = np.random.default_rng(0)
    x_np = rng.random(n, dtype=np.float32)
    y_np = rng.random(n, dtype=np.float32)
    nbytes = 12 * n
    rows = []
    tmp = np.empty_like(x_np)

    def np_saxpy():
        np.multiply(x_np, np.float32(2.0), out=tmp)
        np.add(tmp, y_np, out=y_np)

    t = median_time(np_saxpy, 5)
    rows.append((f"saxpy {n // 1_000_000}M", "numpy", f"{nbytes / t / 1e9:.1f} GB/s",
                 f"{nbytes / t / 1e9 / limit:.0%}"))
    x, y = kc.array(x_np), kc.array(y_np)
    t = median_time(lambda: kc.launch(kc_saxpy, n, [2.0, x, y]), 7)
    rows.append(("", "kernelc", f"{nbytes / t / 1e9:.1f} GB/s", f"{nbytes / t / 1e9 / limit:.0%}"))
    if wp is not None:
        wx, wy = wp.array(x_np), wp.array(y_np)
        t = median_time(lambda: wp.launch(wp_saxpy, n, [2.0, wx, wy]), 5)
        rows.append(("", "warp", f"{nbytes / t / 1e9:.1f} GB/s", f"{nbytes / t / 1e9 / limit:.0%}"))
    return rows


def inc_loop_rows(n: int, iters: int) -> list[tuple]:
    rows = []
    a_np = np.zeros(n, dtype=np.float32)

    def np_loop():
        for _ in range(iters):
            a_np.__iadd__(1.0)

    t = median_time(np_loop, 3, warmup=1)
    rows.append((f"inc_loop {n // 1024}K x {iters}", "numpy", f"{t * 1e3:.1f} ms", ""))
    a = kc.zeros(n, dtype=float)
    t = median_time(lambda: kc.launch(kc_inc_loop, n, [a, iters]), 3, warmup=1)
    rows.append(("", "kernelc", f"{t * 1e3:.1f} ms", ""))
    if wp is not None:
        wa = wp.zeros(n, dtype=float)
        t = median_time(lambda: wp.launch(wp_inc_loop, n, [wa, iters]), 3, warmup=1)
        rows.append(("", "warp", f"{t * 1e3:.1f} ms", ""))
    return rows


def launch_rows() -> list[tuple]:
    a = kc.zeros(1, dtype=float)
    t = median_time(lambda: kc.launch(kc_noop, 1, [a]), 3000, warmup=100)
    rows = [("launch overhead (dim=1)", "kernelc", f"{t * 1e6:.2f} us", "target <= 5 us")]
    if wp is not None:
        wa = wp.zeros(1, dtype=float)
        t = median_time(lambda: wp.launch(wp_noop, 1, [wa]), 3000, warmup=100)
        rows.append(("", "warp", f"{t * 1e6:.2f} us", ""))
    return rows


_STARTUP = textwrap.dedent("""
    import time
    t0 = time.perf_counter()
    import kernelc as kc
    t1 = time.perf_counter()

    @kc.kernel
    def small(a: kc.array(dtype=float), b: kc.array(dtype=float), s: float):
        i = kc.tid()
        if a[i] > 0.0:
            b[i] = kc.sqrt(a[i]) * s + kc.sin(a[i])
        else:
            b[i] = 0.0

    t2 = time.perf_counter()
    kc.load_module()
    t3 = time.perf_counter()
    print(f"{(t1 - t0) * 1e3:.3f} {(t3 - t2) * 1e3:.3f}")
""")


def startup_rows(repeat: int) -> list[tuple]:
    """Cold compile (empty cache) and warm start (cache filled) in fresh processes."""
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "startup.py")
        with open(script, "w") as f:
            f.write(_STARTUP)
        cold, warm, imports = [], [], []
        for _ in range(repeat):
            cache = tempfile.mkdtemp(dir=tmp)
            env = dict(os.environ, KERNELC_CACHE_DIR=cache)
            for bucket in (cold, warm):
                out = subprocess.run([sys.executable, script], env=env, capture_output=True,
                                     text=True, check=True).stdout.split()
                imports.append(float(out[0]))
                bucket.append(float(out[1]))
    return [
        ("import kernelc", "kernelc", f"{np.median(imports):.1f} ms", "target <= 150 ms"),
        ("cold compile, small kernel", "kernelc", f"{np.median(cold):.1f} ms", "target <= 150 ms"),
        ("warm-cache load, new process", "kernelc", f"{np.median(warm):.1f} ms", "target <= 10 ms"),
    ]


def print_table(rows: list[tuple]) -> None:
    widths = [max(len(str(r[k])) for r in rows) for k in range(4)]
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    args = p.parse_args()
    big = 10_000_000 if args.quick else 100_000_000
    np_bw, kc_bw = copy_bandwidth(big)
    limit = max(np_bw, kc_bw)
    rows = [("benchmark", "system", "result", "vs. limit / target"),
            ("copy bandwidth (limit)", "numpy 1 thread", f"{np_bw:.1f} GB/s", ""),
            ("", f"kernelc {kc.config.num_threads} threads", f"{kc_bw:.1f} GB/s", "")]
    rows += saxpy_rows(10_000_000, limit)
    rows += saxpy_rows(big, limit)
    rows += inc_loop_rows(1024 * 1024 if not args.quick else 128 * 1024, 500)
    rows += launch_rows()
    rows += startup_rows(3 if args.quick else 5)
    print(f"machine: {os.cpu_count()} cores; kernelc {kc.__version__}"
          + (f"; warp {wp.__version__}" if wp is not None else "; warp-lang not installed"))
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
