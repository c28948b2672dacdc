"""kernelc beside NumPy (and warp-lang / Numba when installed), measured in one run.

    python benchmarks/run.py [--quick]

Prints one table: saxpy (GB/s), inc_loop (ms), cold compile and warm-cache start in a fresh
process (ms: the first `kc.launch`, import excluded), launch overhead (us), `import kernelc`
(ms), with the machine's measured copy bandwidth for reference. Every figure is the median
of repeated runs after a warm-up.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
from _common import ROOT, median_time, print_table  # also puts this checkout on sys.path

import kernelc as kc

try:
    import warp as wp

    wp.config.quiet = True
    wp.init()
except Exception:  # warp-lang is optional
    wp = None


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
    # A launch big enough to use every worker thread but short of work: the pool's cost.
    n = 100_000
    big = kc.zeros(n, dtype=float)
    kc.launch(kc_noop, n, [big])
    from kernelc.config import config
    from kernelc.runtime.cpu import cpu_state

    cpu_state(config.num_threads).pool.native(wait=True)  # built once per machine
    t = median_time(lambda: kc.launch(kc_noop, n, [big]), 2000, warmup=100)
    rows.append((f"launch, dim={n} on {config.num_threads} threads", "kernelc",
                 f"{t * 1e6:.2f} us", ""))
    if wp is not None:
        wbig = wp.zeros(n, dtype=float)
        t = median_time(lambda: wp.launch(wp_noop, n, [wbig]), 2000, warmup=100)
        rows.append(("", "warp (one thread)", f"{t * 1e6:.2f} us", ""))
    return rows


_STARTUP = textwrap.dedent("""
    import sys
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

    a = kc.full(16, 2.0, dtype=float)
    b = kc.zeros(16, dtype=float)
    t2 = time.perf_counter()
    kc.launch(small, 16, [a, b, 3.0])  # the first launch: from the disk cache, or compiled
    t3 = time.perf_counter()
    assert abs(b.numpy()[0] - (2.0 ** 0.5 * 3.0 + 0.9092974)) < 1e-5
    llvm = int("llvmlite.binding" in sys.modules)
    print(f"{(t1 - t0) * 1e3:.3f} {(t3 - t2) * 1e3:.3f} {llvm}")
""")


def _startup_runs(script: str, env: dict[str, str], repeat: int, tmp: str) -> dict[str, list]:
    """`repeat` rounds of: a cold process (empty cache), then two warm ones (cache filled)."""
    runs: dict[str, list] = {"import": [], "cold": [], "warm": [], "llvm": []}
    for _ in range(repeat):
        env = dict(env, KERNELC_CACHE_DIR=tempfile.mkdtemp(dir=tmp))
        for kind in ("cold", "warm", "warm"):
            out = subprocess.run([sys.executable, script], env=env, capture_output=True,
                                 text=True, check=True).stdout.split()
            runs["import"].append(float(out[0]))
            runs[kind].append(float(out[1]))
            if kind == "warm":
                runs["llvm"].append(int(out[2]))
    return runs


def startup_rows(repeat: int) -> list[tuple]:
    """Fresh processes: `import kernelc`, then the first `kc.launch` of a small kernel with
    an empty cache (cold compile) and with the kernel in the disk cache (warm start); the
    warm figure runs from just before that first launch to its return, import excluded.

    Measured twice: in this environment as it is (where PYTHONDONTWRITEBYTECODE=1, every
    process compiles kernelc's own modules from source, lazily imported ones during the
    first launch), and with bytecode cached (a private PYTHONPYCACHEPREFIX, filled by one
    throwaway run first), as an installed package or a used checkout has it.
    """
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "startup.py")
        with open(script, "w") as f:
            f.write(_STARTUP)
        as_is = dict(os.environ, PYTHONPATH=path)
        cached = {k: v for k, v in as_is.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
        _startup_runs(script, cached, 1, tmp)  # fills the bytecode cache
        no_pyc = "PYTHONDONTWRITEBYTECODE" in os.environ
        for label, env in (("no .pyc" if no_pyc else "as run", as_is), (".pyc cached", cached)):
            runs = _startup_runs(script, env, repeat, tmp)
            llvm = "LLVM never loaded" if not any(runs["llvm"]) else \
                f"LLVM loaded in {sum(runs['llvm'])}/{len(runs['llvm'])} runs"
            rows += [
                (f"import kernelc ({label})", "kernelc", f"{np.median(runs['import']):.1f} ms",
                 "target <= 150 ms"),
                (f"cold compile, small kernel ({label})", "kernelc",
                 f"{np.median(runs['cold']):.1f} ms", "target <= 150 ms"),
                (f"warm-cache start, new process ({label})", "kernelc",
                 f"{np.median(runs['warm']):.1f} ms", f"target <= 10 ms; {llvm}"),
            ]
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    p.add_argument("--startup", action="store_true",
                   help="only the fresh-process rows: import, cold compile, warm start")
    p.add_argument("--repeat", type=int, default=0,
                   help="fresh-process runs for the startup rows (default 5, 3 with --quick)")
    args = p.parse_args()
    repeat = args.repeat or (3 if args.quick else 5)
    if args.startup:
        print_table([("benchmark", "system", "result", "vs. limit / target"),
                     *startup_rows(repeat)])
        return 0
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
    rows += startup_rows(repeat)
    print(f"machine: {os.cpu_count()} cores; kernelc {kc.__version__}"
          + (f"; warp {wp.__version__}" if wp is not None else "; warp-lang not installed"))
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
