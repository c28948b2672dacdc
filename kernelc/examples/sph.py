"""SPH fluid: a dam of water collapsing in a box, with a uniform-grid neighbour search.

Run: python -m kernelc.examples sph [--num-frames N] [--device cuda] [--output DIR]
The neighbour grid is built from kernels every step: each particle's cell, particles per
cell counted with atomics, a prefix sum of the counts (kc.utils.array_scan) for the first slot
of each cell, and the particle indices sorted by cell (kc.utils.radix_sort_pairs). Density
uses the poly6 kernel, pressure and viscosity forces the spiky and viscosity kernels
(Mueller et al. 2003), with a stiff linear equation of state. Each frame is timed with
ScopedTimer; the last frame's timer reports every launch.
"""

from __future__ import annotations

import math

import numpy as np

import kernelc as kc
from kernelc.examples._common import output_dir, parser, save_png


@kc.struct
class Fluid:
    """Physical constants and the neighbour grid's shape (cells of width h)."""

    h: float  # smoothing length: particles interact below this distance
    mass: float
    rest_density: float
    stiffness: float  # pressure = stiffness * (density - rest_density), clamped at 0
    viscosity: float
    box: kc.vec3
    cells: kc.vec3i


@kc.func
def cell_of(x: kc.vec3, f: Fluid) -> kc.vec3i:
    c = kc.vec3i(int(x[0] / f.h), int(x[1] / f.h), int(x[2] / f.h))
    return kc.vec3i(kc.clamp(c[0], 0, f.cells[0] - 1), kc.clamp(c[1], 0, f.cells[1] - 1),
                    kc.clamp(c[2], 0, f.cells[2] - 1))


@kc.func
def cell_id(c: kc.vec3i, f: Fluid) -> int:
    return (c[2] * f.cells[1] + c[1]) * f.cells[0] + c[0]


@kc.kernel
def bin_particles(x: kc.array(dtype=kc.vec3), f: Fluid, cell: kc.array(dtype=int),
                  index: kc.array(dtype=int), counts: kc.array(dtype=int)):
    i = kc.tid()
    c = cell_id(cell_of(x[i], f), f)
    cell[i] = c
    index[i] = i
    kc.atomic_add(counts, c, 1)


@kc.func
def poly6(r2: float, h: float) -> float:
    d = h * h - r2
    if d <= 0.0:
        return 0.0
    return 315.0 / (64.0 * 3.14159265 * kc.pow(h, 9.0)) * d * d * d


@kc.kernel
def compute_density(x: kc.array(dtype=kc.vec3), sorted_index: kc.array(dtype=int),
                    starts: kc.array(dtype=int), counts: kc.array(dtype=int), f: Fluid,
                    density: kc.array(dtype=float), pressure: kc.array(dtype=float)):
    i = kc.tid()
    xi = x[i]
    c = cell_of(xi, f)
    rho = float(0.0)
    for dz in range(-1, 2):
        for dy in range(-1, 2):
            for dx in range(-1, 2):
                n = kc.vec3i(c[0] + dx, c[1] + dy, c[2] + dz)
                if n[0] >= 0 and n[0] < f.cells[0] and n[1] >= 0 and n[1] < f.cells[1] \
                        and n[2] >= 0 and n[2] < f.cells[2]:
                    cid = cell_id(n, f)
                    for k in range(starts[cid], starts[cid] + counts[cid]):
                        d = x[sorted_index[k]] - xi
                        rho += f.mass * poly6(kc.dot(d, d), f.h)
    density[i] = rho
    pressure[i] = kc.max(f.stiffness * (rho - f.rest_density), 0.0)


@kc.kernel
def compute_acceleration(x: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3),
                         sorted_index: kc.array(dtype=int), starts: kc.array(dtype=int),
                         counts: kc.array(dtype=int), density: kc.array(dtype=float),
                         pressure: kc.array(dtype=float), f: Fluid,
                         acc: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    xi = x[i]
    vi = v[i]
    c = cell_of(xi, f)
    spiky = -45.0 / (3.14159265 * kc.pow(f.h, 6.0))
    laplacian = 45.0 / (3.14159265 * kc.pow(f.h, 6.0))
    a = kc.vec3()
    for dz in range(-1, 2):
        for dy in range(-1, 2):
            for dx in range(-1, 2):
                n = kc.vec3i(c[0] + dx, c[1] + dy, c[2] + dz)
                if n[0] >= 0 and n[0] < f.cells[0] and n[1] >= 0 and n[1] < f.cells[1] \
                        and n[2] >= 0 and n[2] < f.cells[2]:
                    cid = cell_id(n, f)
                    for k in range(starts[cid], starts[cid] + counts[cid]):
                        j = sorted_index[k]
                        d = xi - x[j]
                        r = kc.length(d)
                        if j != i and r < f.h and r > 0.0:
                            w = f.h - r
                            shared = (pressure[i] + pressure[j]) / (2.0 * density[j])
                            a -= d * (f.mass * shared * spiky * w * w / r)
                            a += (v[j] - vi) * (f.viscosity * f.mass * laplacian * w / density[j])
    acc[i] = a / density[i] + kc.vec3(0.0, -9.81, 0.0)


@kc.kernel
def integrate(x: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3),
              acc: kc.array(dtype=kc.vec3), f: Fluid, dt: float):
    i = kc.tid()
    vel = v[i] + acc[i] * dt
    pos = x[i] + vel * dt
    # Walls: clamp into the box and reflect the normal velocity, losing half of it.
    margin = 0.001 * f.h
    for axis in range(3):
        if pos[axis] < margin:
            pos[axis] = margin
            vel[axis] = -0.5 * vel[axis]
        elif pos[axis] > f.box[axis] - margin:
            pos[axis] = f.box[axis] - margin
            vel[axis] = -0.5 * vel[axis]
    x[i] = pos
    v[i] = vel


class NeighbourGrid:
    """Cells of width h over the box: counts, first slots and particle indices sorted by cell."""

    def __init__(self, count: int, fluid: Fluid, device: str) -> None:
        cells = int(fluid.cells[0] * fluid.cells[1] * fluid.cells[2])
        self.fluid = fluid
        self.counts = kc.zeros(cells, dtype=int, device=device)
        self.starts = kc.zeros(cells, dtype=int, device=device)
        self.cell = kc.zeros(2 * count, dtype=int, device=device)  # radix sort needs 2x room
        self.index = kc.zeros(2 * count, dtype=int, device=device)
        self.count = count
        self.device = device

    def build(self, x: kc.array) -> None:
        self.counts.zero_()
        kc.launch(bin_particles, self.count, [x, self.fluid, self.cell, self.index, self.counts],
                  device=self.device)
        kc.utils.array_scan(self.counts, self.starts, inclusive=False)
        kc.utils.radix_sort_pairs(self.cell, self.index, self.count)


def make_fluid(h: float, box: tuple[float, float, float]) -> Fluid:
    f = Fluid()
    f.h = h
    spacing = 0.5 * h
    f.rest_density = 1000.0
    f.mass = f.rest_density * spacing ** 3
    f.stiffness = 200.0  # (speed of sound)^2 / rest density scale: ~14 m/s
    f.viscosity = 0.05
    f.box = kc.vec3(*box)
    f.cells = kc.vec3i(*(max(1, math.ceil(b / h)) for b in box))
    return f


def dam(h: float, extent: tuple[float, float, float]) -> np.ndarray:
    """Particles on a lattice of spacing h/2 filling the corner block `extent` of the box."""
    spacing = 0.5 * h
    axes = [np.arange(0.5 * spacing, e, spacing) for e in extent]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    return grid.astype(np.float32)


def run(h: float = 0.05, frames: int = 60, substeps: int = 10, device: str = "cpu",
        out: str | None = None, verbose: bool = True, box=(1.0, 0.6, 0.3),
        extent=(0.3, 0.4, 0.3)) -> dict:
    """Runs the dam break; returns diagnostics used by the smoke test."""
    fluid = make_fluid(h, box)
    pos = dam(h, extent)
    count = len(pos)
    dt = 1.0 / (60 * substeps)
    x = kc.array(pos, dtype=kc.vec3, device=device)
    v = kc.zeros(count, dtype=kc.vec3, device=device)
    acc = kc.zeros(count, dtype=kc.vec3, device=device)
    density = kc.zeros(count, dtype=float, device=device)
    pressure = kc.zeros(count, dtype=float, device=device)
    grid = NeighbourGrid(count, fluid, device)
    history = {"count": count, "mean_density": [], "max_density": []}
    for frame in range(frames):
        last = frame == frames - 1
        with kc.ScopedTimer(f"frame {frame}", print=verbose and (last or frame % 20 == 0),
                            cuda_filter=kc.TIMING_ALL if (verbose and last) else 0):
            for _ in range(substeps):
                grid.build(x)
                kc.launch(compute_density, count, [x, grid.index, grid.starts, grid.counts,
                                                   fluid, density, pressure], device=device)
                kc.launch(compute_acceleration, count,
                          [x, v, grid.index, grid.starts, grid.counts, density, pressure, fluid,
                           acc], device=device)
                kc.launch(integrate, count, [x, v, acc, fluid, dt], device=device)
        rho = density.numpy()
        history["mean_density"].append(float(rho.mean()))
        history["max_density"].append(float(rho.max()))
        if out and frame % 5 == 0:
            p = x.numpy()
            np.savez(f"{out}/sph_{frame:04d}.npz", x=p, density=rho)
            image = np.zeros((120, 200))
            ij = (p[:, [1, 0]] / np.array([box[1], box[0]]) * [119, 199]).astype(int)
            image[119 - ij[:, 0], ij[:, 1]] = 1.0
            save_png(f"{out}/sph_{frame:04d}.png", image)
    history["x"] = x.numpy()
    history["v"] = v.numpy()
    history["density"] = density.numpy()
    if verbose:
        print(f"{count} particles: mean density {history['mean_density'][-1]:.1f}, "
              f"max {history['max_density'][-1]:.1f} (rest {fluid.rest_density:.0f})")
    return history


def main(argv: list[str] | None = None) -> int:
    p = parser("SPH dam break (uniform-grid neighbour search)", 60)
    p.add_argument("--h", type=float, default=0.05, help="smoothing length (smaller: more particles)")
    args = p.parse_args(argv)
    run(h=args.h, frames=args.num_frames, device=args.device, out=output_dir(args.output))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
