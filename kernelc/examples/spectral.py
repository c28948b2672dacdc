"""Heat diffusion on a periodic grid, solved spectrally with tile FFTs.

Each step is exact in time: the field's 2-D Fourier transform decays mode by mode,
u_hat(k) *= exp(-nu |k|^2 dt). The transform is done with tiles: a forward FFT of every row
(`tile_fft`), then per column a forward FFT, the decay and an inverse FFT (`tile_ifft`),
then an inverse FFT of every row, each launched with `launch_tiled`, one block per row or
column.

Run: python -m kernelc.examples spectral [--num-frames N] [--device cuda] [--output DIR]
Each frame is timed with ScopedTimer; the last frame's timer reports every kernel launch.
"""

from __future__ import annotations

import numpy as np

import kernelc as kc
from kernelc.examples._common import output_dir, parser, save_png

N = kc.constant(64)  # grid points per side (a power of two, for the FFTs)


@kc.func
def to_complex(x: float):
    return kc.vec2f(x, 0.0)


@kc.func
def scaled(c: kc.vec2f, s: float):
    return c * s


@kc.func
def real_part(c: kc.vec2f):
    return c[0] / float(N * N)  # the two inverse FFTs are unnormalised


@kc.kernel
def rows_forward(u: kc.array2d(dtype=float), spectrum: kc.array2d(dtype=kc.vec2f)):
    i = kc.tid()
    row = kc.tile_map(to_complex, kc.tile_load(u, shape=(1, N), offset=(i, 0)))
    kc.tile_fft(row)
    kc.tile_store(spectrum, row, offset=(i, 0))


@kc.kernel
def columns_decay(spectrum: kc.array2d(dtype=kc.vec2f), decay: kc.array2d(dtype=float)):
    j = kc.tid()
    # A column, as a row: an (N, 1) tile holds its elements in the order of a (1, N) one.
    column = kc.tile_reshape(kc.tile_load(spectrum, shape=(N, 1), offset=(0, j)), shape=(1, N))
    kc.tile_fft(column)
    factors = kc.tile_reshape(kc.tile_load(decay, shape=(N, 1), offset=(0, j)), shape=(1, N))
    column = kc.tile_map(scaled, column, factors)
    kc.tile_ifft(column)
    kc.tile_store(spectrum, kc.tile_reshape(column, shape=(N, 1)), offset=(0, j))


@kc.kernel
def rows_inverse(spectrum: kc.array2d(dtype=kc.vec2f), u: kc.array2d(dtype=float)):
    i = kc.tid()
    row = kc.tile_load(spectrum, shape=(1, N), offset=(i, 0))
    kc.tile_ifft(row)
    kc.tile_store(u, kc.tile_map(real_part, row), offset=(i, 0))


def initial_field(n: int) -> np.ndarray:
    """Three Gaussian spots of heat on a cool, slightly noisy plate."""
    x = np.arange(n) / n
    xx, yy = np.meshgrid(x, x, indexing="ij")
    u = 0.05 * np.random.default_rng(7).standard_normal((n, n))
    for cx, cy, w in ((0.3, 0.3, 0.05), (0.7, 0.4, 0.08), (0.45, 0.75, 0.03)):
        dx = (xx - cx + 0.5) % 1.0 - 0.5  # periodic distance
        dy = (yy - cy + 0.5) % 1.0 - 0.5
        u += np.exp(-(dx * dx + dy * dy) / (2 * w * w))
    return u.astype(np.float32)


def decay_factors(n: int, nu: float, dt: float) -> np.ndarray:
    k = 2 * np.pi * np.fft.fftfreq(n, d=1.0 / n)
    kx, ky = np.meshgrid(k, k, indexing="ij")
    return np.exp(-nu * dt * (kx * kx + ky * ky)).astype(np.float32)


def run(frames: int = 60, device: str = "cpu", out: str | None = None, nu: float = 2e-4,
        dt: float = 0.05, verbose: bool = True) -> dict:
    """Runs the simulation; returns the first and last fields and the decay factors (used
    by the smoke test against NumPy's FFT)."""
    n = int(N)
    start = initial_field(n)
    u = kc.array(start, dtype=float, device=device)
    spectrum = kc.zeros((n, n), dtype=kc.vec2f, device=device)
    decay = kc.array(decay_factors(n, nu, dt), dtype=float, device=device)
    for frame in range(frames):
        last = frame == frames - 1
        with kc.ScopedTimer(f"frame {frame}", print=verbose and (last or frame % 20 == 0),
                            cuda_filter=kc.TIMING_ALL if (verbose and last) else 0):
            kc.launch_tiled(rows_forward, dim=n, inputs=[u, spectrum], block_dim=64,
                            device=device)
            kc.launch_tiled(columns_decay, dim=n, inputs=[spectrum, decay], block_dim=64,
                            device=device)
            kc.launch_tiled(rows_inverse, dim=n, inputs=[spectrum, u], block_dim=64,
                            device=device)
        if out and frame % 10 == 0:
            save_png(f"{out}/spectral_{frame:04d}.png", u.numpy())
    final = u.numpy()
    if verbose:
        print(f"mean {final.mean():.5f} (start {start.mean():.5f}), max {final.max():.4f} "
              f"(start {start.max():.4f})")
    return {"start": start, "final": final, "decay": decay.numpy()}


def main(argv: list[str] | None = None) -> int:
    args = parser("heat diffusion with tile FFTs", 60).parse_args(argv)
    run(frames=args.num_frames, device=args.device, out=output_dir(args.output))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
