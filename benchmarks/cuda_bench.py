"""CUDA runtime benchmark: copy bandwidth, saxpy, launch overhead, NVRTC compile and load.

Run: `python benchmarks/cuda_bench.py`. Prints one table; when `$OUT` is set, also writes it
to `$OUT/cuda_bench.txt`. Needs a CUDA GPU.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

import numpy as np

import kernelc as kc


@kc.kernel
def saxpy(x: kc.array(dtype=float), y: kc.array(dtype=float), alpha: float):
    i = kc.tid()
    y[i] = alpha * x[i] + y[i]


@kc.kernel
def noop(x: kc.array(dtype=float)):
    i = kc.tid()
    x[i] = x[i]


def _gpu_ms(fn, repeats: int = 10) -> float:
    """Median device milliseconds of `fn()` between two timing events, after warm-up."""
    fn()
    times = []
    for _ in range(repeats):
        start, end = kc.Event(enable_timing=True), kc.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        times.append(kc.get_event_elapsed_time(start, end))
    return statistics.median(times)


def _launch_us(fn, count: int = 2000) -> float:
    for _ in range(200):
        fn()
    kc.synchronize()
    samples = []
    for _ in range(count):
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    kc.synchronize()
    return statistics.median(samples) / 1e3


def _driver_launch_us(cmd) -> float:
    """The floor under any launch: cuda-bindings' cuLaunchKernel with every argument of
    `cmd` prepared beforehand."""
    from kernelc.runtime import cuda

    info = cuda.device_info(cmd.device)
    handle = cuda.stream_handle(info, None)
    launch = cuda.cu.cuLaunchKernel
    function, grid, block, params = cmd.compiled.function, cmd.grid, cmd.block_dim, \
        cmd.params_address
    return _launch_us(lambda: launch(function, grid, 1, 1, block, 1, 1, 0, handle, params, 0))


def _compile_ms() -> tuple[float, float]:
    """(cold NVRTC compile + load, cached load) of a small kernel, in ms."""
    import importlib.util

    previous = kc.config.kernel_cache_dir
    with tempfile.TemporaryDirectory() as cache_dir:
        kc.config.kernel_cache_dir = cache_dir
        path = os.path.join(cache_dir, "tiny_kernel.py")
        with open(path, "w") as file:
            file.write("import kernelc as kc\n\n\n@kc.kernel\n"
                       "def tiny(x: kc.array(dtype=float)):\n    x[kc.tid()] = 1.0\n")
        try:
            results = []
            for attempt in range(2):  # a fresh module each time: no in-memory cache
                spec = importlib.util.spec_from_file_location(f"tiny_kernel_{attempt}", path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                t0 = time.perf_counter()
                kc.load_module(module, device="cuda")
                results.append((time.perf_counter() - t0) * 1e3)
            return results[0], results[1]
        finally:
            kc.config.kernel_cache_dir = previous


def main() -> int:
    if not kc.is_cuda_available():
        print("no CUDA device:", end=" ")
        try:
            kc.get_device("cuda")
        except RuntimeError as err:
            print(err)
        return 1
    device = kc.get_device("cuda:0")
    n = 256 << 20
    x = kc.array(np.ones(n, np.float32), device=device)
    y = kc.zeros(n, device=device)
    copy_ms = _gpu_ms(lambda: kc.copy(y, x))
    copy_gbs = 2 * n * 4 / copy_ms / 1e6
    saxpy_ms = _gpu_ms(lambda: kc.launch(saxpy, n, inputs=[x, y, 2.0], device=device))
    saxpy_gbs = 3 * n * 4 / saxpy_ms / 1e6
    one = kc.zeros(1, device=device)
    cmd = kc.launch(noop, 1, inputs=[one], device=device, record_cmd=True)
    recorded_us = _launch_us(cmd.launch)
    plain_us = _launch_us(lambda: kc.launch(noop, 1, inputs=[one], device=device))
    driver_us = _driver_launch_us(cmd)
    cold_ms, cached_ms = _compile_ms()
    rows = [
        ("GPU", device.name),
        ("device-to-device copy (GB/s)", f"{copy_gbs:.1f}"),
        ("saxpy 256M float32 (GB/s)", f"{saxpy_gbs:.1f} ({100 * saxpy_gbs / copy_gbs:.0f}% of copy)"),
        ("launch dim=1, bare cuLaunchKernel (us, median)", f"{driver_us:.2f}"),
        ("launch dim=1, recorded (us, median)", f"{recorded_us:.2f}"),
        ("launch dim=1, kc.launch (us, median)", f"{plain_us:.2f}"),
        ("NVRTC cold compile + load (ms)", f"{cold_ms:.1f}"),
        ("cached load (ms)", f"{cached_ms:.2f}"),
    ]
    width = max(len(name) for name, _ in rows)
    table = "\n".join(f"{name:<{width}}  {value}" for name, value in rows)
    print(table)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "cuda_bench.txt"), "w") as file:
            file.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
