"""y = a * x + y on large arrays, timed per launch and compared with NumPy.

Run: python -m kernelc.examples saxpy [--device cuda] [--num-frames N]
"""

from __future__ import annotations

import numpy as np

import kernelc as kc
from kernelc.examples._common import parser


@kc.kernel
def saxpy(a: float, x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = a * x[i] + y[i]


def run(n: int = 1 << 24, frames: int = 10, device: str = "cpu", verbose: bool = True) -> float:
    rng = np.random.default_rng(1)
    x_host = rng.random(n, dtype=np.float32)
    y_host = rng.random(n, dtype=np.float32)
    x = kc.array(x_host, device=device)
    y = kc.array(y_host, device=device)
    timings: dict[str, list[float]] = {}
    for _ in range(frames):
        with kc.ScopedTimer("saxpy", dict=timings, print=False, synchronize=True):
            kc.launch(saxpy, n, [2.0, x, y], device=device)
    expected = y_host + frames * 2.0 * x_host
    err = float(np.abs(y.numpy() - expected).max())
    best = float(np.median(timings["saxpy"][1:] or timings["saxpy"]))
    if verbose:
        gbs = 3 * 4 * n / (best * 1e-3) / 1e9
        print(f"saxpy n={n}: median {best:.3f} ms, {gbs:.1f} GB/s, max error {err:.2e}")
    return err


def main(argv: list[str] | None = None) -> int:
    args = parser("saxpy benchmark", 10).parse_args(argv)
    run(frames=args.num_frames, device=args.device)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
