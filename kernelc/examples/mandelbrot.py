"""The Mandelbrot set: one thread per pixel, an escape-time loop; writes a PNG.

Run: python -m kernelc.examples mandelbrot [--output DIR] [--device cuda]
"""

from __future__ import annotations

import numpy as np

import kernelc as kc
from kernelc.examples._common import output_dir, parser, save_png


@kc.kernel
def mandelbrot(image: kc.array2d(dtype=float), max_iter: int, x0: float, y0: float,
               scale: float):
    i, j = kc.tid()
    cr = x0 + float(j) * scale
    ci = y0 + float(i) * scale
    zr = 0.0
    zi = 0.0
    n = 0
    while n < max_iter and zr * zr + zi * zi < 4.0:
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        n += 1
    image[i, j] = float(n) / float(max_iter)


def run(height: int = 512, width: int = 768, max_iter: int = 200, device: str = "cpu",
        out: str | None = None, verbose: bool = True) -> np.ndarray:
    image = kc.empty((height, width), dtype=float, device=device)
    scale = 3.0 / width
    with kc.ScopedTimer("mandelbrot", print=verbose, synchronize=True):
        kc.launch(mandelbrot, (height, width), [image, max_iter, -2.25, -scale * height / 2, scale],
                  device=device)
    host = image.numpy()
    if out and save_png(f"{out}/mandelbrot.png", host) and verbose:
        print(f"wrote {out}/mandelbrot.png")
    return host


def main(argv: list[str] | None = None) -> int:
    args = parser("Mandelbrot set", 1).parse_args(argv)
    run(device=args.device, out=output_dir(args.output))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
