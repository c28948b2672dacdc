"""All-pairs gravitational N-body: softened gravity, velocity Verlet, energy printed each frame.

Run: python -m kernelc.examples nbody [--num-frames N] [--device cuda] [--output DIR] [--n N]
Each thread sums the pull of every body on its own body (N^2 interactions per step). The
potential comes out of the same loop, so the total energy costs one O(N) kernel per frame.
Each frame (a few steps) is timed with ScopedTimer; the last one reports every launch.
"""

from __future__ import annotations

import numpy as np

import kernelc as kc
from kernelc.examples._common import output_dir, parser, save_png

G = kc.constant(1.0)  # N-body units: G = 1, total mass 1


@kc.kernel
def accelerations(pos: kc.array(dtype=kc.vec3), mass: kc.array(dtype=float), eps2: float,
                  acc: kc.array(dtype=kc.vec3), phi: kc.array(dtype=float)):
    """acc[i] = G sum_j m_j d / (|d|^2 + eps^2)^(3/2) and the potential phi[i], d = x_j - x_i."""
    i = kc.tid()
    p = pos[i]
    a = kc.vec3()
    potential = float(0.0)  # noqa: UP018 (Warp rejects a literal changed in a loop)
    for j in range(pos.shape[0]):
        d = pos[j] - p
        inv_r = 1.0 / kc.sqrt(kc.dot(d, d) + eps2)
        m_inv_r = mass[j] * inv_r
        a += d * (m_inv_r * inv_r * inv_r)  # j == i adds nothing: d is zero
        potential -= m_inv_r
    acc[i] = a * G
    # The sum above includes the body's own softened term -m_i / eps; take it out again.
    phi[i] = (potential + mass[i] / kc.sqrt(eps2)) * G


@kc.kernel
def kick_drift(pos: kc.array(dtype=kc.vec3), vel: kc.array(dtype=kc.vec3),
               acc: kc.array(dtype=kc.vec3), dt: float):
    """First half of velocity Verlet: v += a dt/2, then x += v dt."""
    i = kc.tid()
    v = vel[i] + acc[i] * (0.5 * dt)
    vel[i] = v
    pos[i] = pos[i] + v * dt


@kc.kernel
def kick(vel: kc.array(dtype=kc.vec3), acc: kc.array(dtype=kc.vec3), dt: float):
    """Second half of velocity Verlet: v += a dt/2 with the accelerations at the new x."""
    i = kc.tid()
    vel[i] = vel[i] + acc[i] * (0.5 * dt)


@kc.kernel
def total_energy(vel: kc.array(dtype=kc.vec3), mass: kc.array(dtype=float),
                 phi: kc.array(dtype=float), energy: kc.array(dtype=kc.float64)):
    """energy[0] += kinetic + potential energy of body i (each pair counted once: phi / 2)."""
    i = kc.tid()
    m = mass[i]
    e = 0.5 * m * kc.dot(vel[i], vel[i]) + 0.5 * m * phi[i]
    kc.atomic_add(energy, 0, kc.float64(e))


def plummer(n: int, seed: int = 42, spin: float = 0.3) -> tuple[np.ndarray, ...]:
    """A Plummer sphere of total mass 1 in virial equilibrium (Aarseth, Henon & Wielen
    1974), given a slow rotation about z; returns float32 positions, velocities, masses."""
    rng = np.random.default_rng(seed)

    def directions(count):
        v = rng.normal(size=(count, 3))
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    u = rng.uniform(0.0, 0.99, n)  # cut the sparse halo beyond ~10 scale radii
    r = 1.0 / np.sqrt(u ** (-2.0 / 3.0) - 1.0)
    pos = directions(n) * r[:, None]
    q = np.empty(n)  # speed / escape speed, from g(q) = q^2 (1 - q^2)^(7/2) by rejection
    todo = np.arange(n)
    while todo.size:
        x, y = rng.uniform(0.0, 1.0, todo.size), rng.uniform(0.0, 0.1, todo.size)
        ok = y < x * x * (1.0 - x * x) ** 3.5
        q[todo[ok]] = x[ok]
        todo = todo[~ok]
    vel = directions(n) * (q * np.sqrt(2.0) * (1.0 + r * r) ** -0.25)[:, None]
    vel += spin * np.cross([0.0, 0.0, 1.0], pos) / (1.0 + r * r)[:, None] ** 0.5
    pos -= pos.mean(axis=0)
    vel -= vel.mean(axis=0)  # equal masses: zero total momentum
    mass = np.full(n, 1.0 / n)
    return pos.astype(np.float32), vel.astype(np.float32), mass.astype(np.float32)


def density_image(pos: np.ndarray, size: int = 256, extent: float = 3.0) -> np.ndarray:
    """The x-y projection of the bodies as a log-scaled density image in [0, 1]."""
    hist, _, _ = np.histogram2d(pos[:, 1], pos[:, 0], bins=size, range=[[-extent, extent]] * 2)
    return np.log1p(hist) / np.log1p(max(hist.max(), 1.0))


def run(n: int = 2048, frames: int = 25, steps: int = 4, dt: float = 0.005,
        softening: float = 0.05, device: str = "cpu", out: str | None = None,
        verbose: bool = True, seed: int = 42) -> dict:
    """Runs the simulation; returns diagnostics used by the smoke test."""
    pos_np, vel_np, mass_np = plummer(n, seed)
    pos = kc.array(pos_np, dtype=kc.vec3, device=device)
    vel = kc.array(vel_np, dtype=kc.vec3, device=device)
    mass = kc.array(mass_np, dtype=float, device=device)
    acc = kc.zeros(n, dtype=kc.vec3, device=device)
    phi = kc.zeros(n, dtype=float, device=device)
    energy = kc.zeros(1, dtype=kc.float64, device=device)
    eps2 = softening * softening

    def measure_energy() -> float:
        energy.zero_()
        kc.launch(total_energy, n, [vel, mass, phi, energy], device=device)
        return float(energy.numpy()[0])

    kc.load_module(device=device)  # compile first, so the timers show only the work
    kc.launch(accelerations, n, [pos, mass, eps2, acc, phi], device=device)
    energies = [measure_energy()]
    if verbose:
        print(f"{n} bodies, {steps} steps of {dt} per frame, softening {softening}: "
              f"E0 = {energies[0]:.6f}")
    for frame in range(frames):
        last = frame == frames - 1
        with kc.ScopedTimer(f"frame {frame}", print=verbose,
                            cuda_filter=kc.TIMING_ALL if (verbose and last) else 0) as timer:
            for _ in range(steps):
                kc.launch(kick_drift, n, [pos, vel, acc, dt], device=device)
                kc.launch(accelerations, n, [pos, mass, eps2, acc, phi], device=device)
                kc.launch(kick, n, [vel, acc, dt], device=device)
            energies.append(measure_energy())
            drift = energies[-1] / energies[0] - 1.0
            timer.extra_msg = f"E = {energies[-1]:.6f} (drift {drift:+.2e})"
        if out:
            host = pos.numpy()
            np.savez(f"{out}/nbody_{frame:04d}.npz", pos=host)
            save_png(f"{out}/nbody_{frame:04d}.png", density_image(host))
    momentum = (vel.numpy().astype(np.float64) * mass_np[:, None]).sum(axis=0)
    return {"energy": energies, "momentum": momentum, "pos": pos.numpy(), "vel": vel.numpy()}


def main(argv: list[str] | None = None) -> int:
    p = parser("all-pairs gravitational N-body (velocity Verlet)", 25)
    p.add_argument("--n", type=int, default=None, help="number of bodies (2048 on the CPU)")
    args = p.parse_args(argv)
    n = args.n or (16384 if args.device.startswith("cuda") else 2048)
    run(n=n, frames=args.num_frames, device=args.device, out=output_dir(args.output))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
