"""2-D wave equation on a grid: a 5-point stencil, leapfrog in time, reflecting borders.

Run: python -m kernelc.examples wave [--num-frames N] [--device cuda] [--output DIR]
Each frame is timed with ScopedTimer; the last frame's timer reports every kernel launch.
"""

from __future__ import annotations

import numpy as np

import kernelc as kc
from kernelc.examples._common import output_dir, parser, save_png


@kc.kernel
def wave_step(u_prev: kc.array2d(dtype=float), u: kc.array2d(dtype=float),
              u_next: kc.array2d(dtype=float), c2: float):
    i, j = kc.tid()
    n = u.shape[0]
    m = u.shape[1]
    # Reflecting (Neumann) borders: a neighbour outside the grid mirrors the border cell,
    # so the Laplacian sums to zero and the total displacement is conserved.
    up = u[kc.max(i - 1, 0), j]
    down = u[kc.min(i + 1, n - 1), j]
    left = u[i, kc.max(j - 1, 0)]
    right = u[i, kc.min(j + 1, m - 1)]
    lap = up + down + left + right - 4.0 * u[i, j]
    u_next[i, j] = 2.0 * u[i, j] - u_prev[i, j] + c2 * lap


@kc.kernel
def splash(u: kc.array2d(dtype=float), cx: int, cy: int, radius: float, height: float):
    i, j = kc.tid()
    dx = float(i - cx)
    dy = float(j - cy)
    r2 = (dx * dx + dy * dy) / (radius * radius)
    if r2 < 1.0:
        u[i, j] = u[i, j] + height * (1.0 - r2) * (1.0 - r2)


def run(size: int = 256, frames: int = 60, device: str = "cpu", out: str | None = None,
        verbose: bool = True) -> dict:
    """Runs the simulation; returns diagnostics used by the smoke test."""
    shape = (size, size)
    u_prev = kc.zeros(shape, dtype=float, device=device)
    u = kc.zeros(shape, dtype=float, device=device)
    u_next = kc.zeros(shape, dtype=float, device=device)
    kc.launch(splash, shape, [u, size // 2, size // 3, size / 10.0, 1.0], device=device)
    kc.copy(u_prev, u)
    c2 = 0.2  # (c dt / dx)^2, below the 2-d stability limit of 0.5
    mass = []
    for frame in range(frames):
        last = frame == frames - 1
        with kc.ScopedTimer(f"frame {frame}", print=verbose and (last or frame % 20 == 0),
                            cuda_filter=kc.TIMING_ALL if (verbose and last) else 0):
            kc.launch(wave_step, shape, [u_prev, u, u_next, c2], device=device)
            u_prev, u, u_next = u, u_next, u_prev
        field = u.numpy()
        mass.append(float(field.sum()))
        if out and frame % 10 == 0:
            save_png(f"{out}/wave_{frame:04d}.png", 0.5 + field)
    final = u.numpy()
    if verbose:
        print(f"max |u| = {np.abs(final).max():.4f}, sum(u) = {mass[-1]:.4f}")
    return {"field": final, "mass": mass}


def main(argv: list[str] | None = None) -> int:
    args = parser("2-D wave equation (5-point stencil)", 60).parse_args(argv)
    run(frames=args.num_frames, device=args.device, out=output_dir(args.output))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
