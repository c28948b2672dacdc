"""DEM particles: spheres falling into a box, colliding through a hash-grid neighbour search.

Run: python -m kernelc.examples particles [--num-frames N] [--device cuda] [--output DIR]
Each step rebuilds a kc.HashGrid of the particle centres, sums spring-dashpot contact forces
with Coulomb friction over the neighbours a query returns, and integrates with semi-implicit
Euler. Each frame is timed with ScopedTimer; the last frame's timer reports every launch.
"""

from __future__ import annotations

import numpy as np

import kernelc as kc
from kernelc.examples._common import output_dir, parser


@kc.struct
class Contact:
    """Material of the spheres: normal stiffness and damping, friction."""

    k_normal: float
    k_damp: float
    k_friction: float  # tangential viscous friction, capped by mu * normal force
    mu: float


@kc.func
def contact_force(n: kc.vec3, v: kc.vec3, depth: float, c: Contact) -> kc.vec3:
    """Force on a sphere pressed `depth` deep along unit normal `n` (pointing out of the other
    body), with `v` its velocity relative to the other body."""
    vn = kc.dot(n, v)
    vt = v - n * vn
    fn = kc.max(c.k_normal * depth - c.k_damp * vn, 0.0)  # a contact pushes, never pulls
    ft = kc.length(vt)
    if ft > 0.0:
        vt = vt * (kc.min(c.k_friction * ft, c.mu * fn) / ft)
    return n * fn - vt


@kc.func
def wall_force(x: kc.vec3, v: kc.vec3, radius: float, box: float, c: Contact) -> kc.vec3:
    f = kc.vec3()
    for axis in range(3):
        low = radius - x[axis]  # penetration into the wall at 0
        if low > 0.0:
            n = kc.vec3()
            n[axis] = 1.0
            f += contact_force(n, v, low, c)
        high = x[axis] + radius - box  # ... and into the wall at `box`
        if high > 0.0:
            n = kc.vec3()
            n[axis] = -1.0
            f += contact_force(n, v, high, c)
    return f


@kc.kernel
def apply_forces(grid: kc.uint64, x: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3),
                 forces: kc.array(dtype=kc.vec3), radius: float, box: float, c: Contact):
    tid = kc.tid()
    i = kc.hash_grid_point_id(grid, tid)  # neighbours in the grid's order: fewer cache misses
    xi = x[i]
    vi = v[i]
    f = wall_force(xi, vi, radius, box, c)
    for j in kc.hash_grid_query(grid, xi, 2.0 * radius):
        if j != i:
            d = xi - x[j]
            dist = kc.length(d)
            depth = 2.0 * radius - dist
            if depth > 0.0 and dist > 0.0:
                f += contact_force(d / dist, vi - v[j], depth, c)
    forces[i] = f


@kc.kernel
def integrate(x: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3),
              forces: kc.array(dtype=kc.vec3), gravity: kc.vec3, inv_mass: float, dt: float):
    i = kc.tid()
    vel = v[i] + (forces[i] * inv_mass + gravity) * dt  # semi-implicit: velocity first
    v[i] = vel
    x[i] = x[i] + vel * dt


@kc.kernel
def kinetic_energy(v: kc.array(dtype=kc.vec3), mass: float, total: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(total, 0, 0.5 * mass * kc.dot(v[i], v[i]))


def initial_state(count: int, radius: float, box: float, seed: int = 7) -> tuple:
    """A loose block of spheres in the upper half of the box, with a little random jitter."""
    spacing = 2.2 * radius
    per_side = max(1, int((box - 2 * radius) / spacing))
    layers = -(-count // (per_side * per_side))
    rng = np.random.default_rng(seed)
    idx = np.arange(count)
    ix, iz, iy = idx % per_side, (idx // per_side) % per_side, idx // (per_side * per_side)
    pos = np.stack([ix, iy, iz], axis=1) * spacing + radius * 1.1
    pos[:, 1] += box - (layers * spacing + 2 * radius)  # stack down from the top
    pos += rng.uniform(-0.05, 0.05, pos.shape) * radius
    vel = rng.uniform(-0.1, 0.1, pos.shape)
    return pos.astype(np.float32), vel.astype(np.float32)


def run(count: int = 4096, frames: int = 60, substeps: int = 8, device: str = "cpu",
        out: str | None = None, verbose: bool = True) -> dict:
    """Runs the simulation; returns diagnostics used by the smoke test."""
    radius, box = 0.02, 1.0
    dt = 1.0 / (60 * substeps)
    mass = 1.0  # forces are per unit mass: the stiffness below is chosen for it
    material = Contact()
    material.k_normal, material.k_damp, material.k_friction, material.mu = 2.0e4, 20.0, 20.0, 0.5
    pos, vel = initial_state(count, radius, box)
    x = kc.array(pos, dtype=kc.vec3, device=device)
    v = kc.array(vel, dtype=kc.vec3, device=device)
    forces = kc.zeros(count, dtype=kc.vec3, device=device)
    grid = kc.HashGrid(64, 64, 64, device=device)
    gravity = kc.vec3(0.0, -9.81, 0.0)
    energy = kc.zeros(1, dtype=float, device=device)
    history = {"energy": [], "lowest": [], "highest": []}
    for frame in range(frames):
        last = frame == frames - 1
        with kc.ScopedTimer(f"frame {frame}", print=verbose and (last or frame % 20 == 0),
                            cuda_filter=kc.TIMING_ALL if (verbose and last) else 0):
            for _ in range(substeps):
                grid.build(x, radius)
                kc.launch(apply_forces, count, [grid.id, x, v, forces, radius, box, material],
                          device=device)
                kc.launch(integrate, count, [x, v, forces, gravity, 1.0 / mass, dt],
                          device=device)
        energy.zero_()
        kc.launch(kinetic_energy, count, [v, mass, energy], device=device)
        p = x.numpy()
        history["energy"].append(float(energy.numpy()[0]))
        history["lowest"].append(float(p.min()))
        history["highest"].append(float(p.max()))
        if out and frame % 10 == 0:
            np.savez(f"{out}/particles_{frame:04d}.npz", x=p, v=v.numpy())
    if verbose:
        print(f"{count} particles: kinetic energy {history['energy'][-1]:.4f}, "
              f"positions within [{history['lowest'][-1]:.3f}, {history['highest'][-1]:.3f}]")
    history["x"] = x.numpy()
    history["v"] = v.numpy()
    return history


def main(argv: list[str] | None = None) -> int:
    p = parser("DEM particles in a box (hash-grid collisions)", 60)
    p.add_argument("--count", type=int, default=4096, help="number of particles")
    args = p.parse_args(argv)
    run(count=args.count, frames=args.num_frames, device=args.device,
        out=output_dir(args.output))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
