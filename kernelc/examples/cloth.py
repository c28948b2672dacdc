"""Mass-spring cloth: a particle grid hung by two corners falls onto a sphere.

Run: python -m kernelc.examples cloth [--num-frames N] [--device cuda] [--output DIR]
Structural, shear and bend springs push forces into the particles with atomic adds;
gravity, drag and semi-implicit Euler move them; a sphere and the ground push them out.
Each frame (several substeps) is timed with ScopedTimer; the last one reports every launch.
"""

from __future__ import annotations

import numpy as np

import kernelc as kc
from kernelc.examples._common import output_dir, parser, save_png


@kc.struct
class ClothParams:
    gravity: kc.vec3
    dt: float
    drag: float  # fraction of the velocity lost per second to the air
    spring_ke: float  # stiffness
    spring_kd: float  # damping along the spring
    sphere_center: kc.vec3
    sphere_radius: float  # 0 disables the sphere
    ground: float  # height of the ground plane
    friction: float  # fraction of the tangential velocity kept per substep in contact


@kc.kernel
def eval_springs(x: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3),
                 spring_indices: kc.array(dtype=int), spring_rest_lengths: kc.array(dtype=float),
                 params: ClothParams, f: kc.array(dtype=kc.vec3)):
    """Hooke's law plus damping along each spring, added to both of its particles."""
    tid = kc.tid()
    i = spring_indices[tid * 2 + 0]
    j = spring_indices[tid * 2 + 1]
    xij = x[i] - x[j]
    vij = v[i] - v[j]
    length = kc.length(xij)
    d = xij / length
    stretch = length - spring_rest_lengths[tid]
    fs = d * (params.spring_ke * stretch + params.spring_kd * kc.dot(d, vij))
    kc.atomic_sub(f, i, fs)
    kc.atomic_add(f, j, fs)


@kc.func
def collide(p: kc.vec3, v: kc.vec3, params: ClothParams):
    """Pushes a particle out of the sphere and the ground; returns the new (p, v)."""
    if params.sphere_radius > 0.0:
        d = p - params.sphere_center
        dist = kc.length(d)
        if dist < params.sphere_radius:
            n = d / dist
            p = params.sphere_center + n * params.sphere_radius
            vn = kc.dot(v, n)
            if vn < 0.0:  # moving inwards: drop the normal part, keep some of the rest
                v = (v - n * vn) * params.friction
    if p.y < params.ground:
        p = kc.vec3(p.x, params.ground, p.z)
        if v.y < 0.0:
            v = kc.vec3(v.x * params.friction, 0.0, v.z * params.friction)
    return p, v


@kc.kernel
def integrate(x: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3),
              f: kc.array(dtype=kc.vec3), inv_mass: kc.array(dtype=float),
              params: ClothParams):
    """Semi-implicit Euler: the new velocity moves the particle. Pinned ones (inverse mass 0)
    never move; the force buffer is cleared for the next substep."""
    i = kc.tid()
    w = inv_mass[i]
    if w > 0.0:
        v1 = v[i] + (f[i] * w + params.gravity) * params.dt
        v1 = v1 * (1.0 - params.drag * params.dt)
        x1 = x[i] + v1 * params.dt
        x1, v1 = collide(x1, v1, params)
        x[i] = x1
        v[i] = v1
    f[i] = kc.vec3()


def make_cloth(nx: int, ny: int, size: float, height: float, mass: float) -> dict:
    """A horizontal `size` x `size` grid of nx x ny particles of total `mass` at `height`,
    with its springs: structural (to the next particle in x and in z), shear (both
    diagonals) and bend (to the one after next)."""
    spacing = size / (max(nx, ny) - 1)
    ix, iy = np.meshgrid(np.arange(nx), np.arange(ny), indexing="ij")
    idx = ix * ny + iy  # particle (i, j) is number i * ny + j
    pos = np.stack([(ix - (nx - 1) / 2) * spacing, np.full(ix.shape, height),
                    (iy - (ny - 1) / 2) * spacing], axis=-1).reshape(-1, 3)
    pairs = [
        (idx[:-1, :], idx[1:, :]), (idx[:, :-1], idx[:, 1:]),  # structural
        (idx[:-1, :-1], idx[1:, 1:]), (idx[1:, :-1], idx[:-1, 1:]),  # shear
        (idx[:-2, :], idx[2:, :]), (idx[:, :-2], idx[:, 2:]),  # bend
    ]
    springs = np.concatenate([np.stack([a.ravel(), b.ravel()], axis=1) for a, b in pairs])
    rest = np.linalg.norm(pos[springs[:, 0]] - pos[springs[:, 1]], axis=1)
    inv_mass = np.full(nx * ny, nx * ny / mass)
    pinned = [idx[0, 0], idx[-1, 0]]  # the two corners of one edge
    inv_mass[pinned] = 0.0
    return {"pos": pos.astype(np.float32), "springs": springs.astype(np.int32),
            "rest": rest.astype(np.float32), "inv_mass": inv_mass.astype(np.float32),
            "pinned": np.array(pinned)}


def default_params(dt: float, ke: float, kd: float, sphere: bool = True) -> ClothParams:
    params = ClothParams()
    params.gravity = kc.vec3(0.0, -9.81, 0.0)
    params.dt = dt
    params.drag = 0.5
    params.spring_ke = ke
    params.spring_kd = kd
    params.sphere_center = kc.vec3(0.0, 0.3, 0.0)
    params.sphere_radius = 0.3 if sphere else 0.0
    params.ground = 0.0
    params.friction = 0.95
    return params


def side_view(pos: np.ndarray, params: ClothParams, size: int = 256) -> np.ndarray:
    """The particles seen along x (z to the right, y up) over the sphere, in [0, 1]."""
    lo, hi = -1.1, 1.1
    rows, cols = np.mgrid[0:size, 0:size]
    z = lo + (cols + 0.5) * (hi - lo) / size
    y = hi - (rows + 0.5) * (hi - lo) / size
    c, r = params.sphere_center, params.sphere_radius
    image = np.where((z - c[2]) ** 2 + (y - c[1]) ** 2 < r * r, 0.3, 0.0)
    col = ((pos[:, 2] - lo) / (hi - lo) * size).astype(int)
    row = ((hi - pos[:, 1]) / (hi - lo) * size).astype(int)
    inside = (col >= 0) & (col < size) & (row >= 0) & (row < size)
    image[row[inside], col[inside]] = 1.0
    return image


def run(nx: int = 32, ny: int = 32, frames: int = 60, substeps: int = 32,
        ke: float = 300.0, kd: float = 0.05, device: str = "cpu", out: str | None = None,
        verbose: bool = True, sphere: bool = True) -> dict:
    """Runs the simulation at 60 frames per second; returns diagnostics for the smoke test."""
    cloth = make_cloth(nx, ny, size=1.0, height=1.0, mass=0.5)
    n, num_springs = nx * ny, len(cloth["rest"])
    x = kc.array(cloth["pos"], dtype=kc.vec3, device=device)
    v = kc.zeros(n, dtype=kc.vec3, device=device)
    f = kc.zeros(n, dtype=kc.vec3, device=device)
    springs = kc.array(cloth["springs"].ravel(), dtype=int, device=device)
    rest = kc.array(cloth["rest"], dtype=float, device=device)
    inv_mass = kc.array(cloth["inv_mass"], dtype=float, device=device)
    params = default_params(1.0 / 60.0 / substeps, ke, kd, sphere)
    kc.load_module(device=device)  # compile first, so the timers show only the work
    if verbose:
        print(f"cloth {nx} x {ny}: {n} particles, {num_springs} springs, {substeps} substeps")
    heights = []
    for frame in range(frames):
        last = frame == frames - 1
        with kc.ScopedTimer(f"frame {frame}", print=verbose and (last or frame % 20 == 0),
                            cuda_filter=kc.TIMING_ALL if (verbose and last) else 0):
            for _ in range(substeps):
                kc.launch(eval_springs, num_springs, [x, v, springs, rest, params, f],
                          device=device)
                kc.launch(integrate, n, [x, v, f, inv_mass, params], device=device)
        host = x.numpy()
        heights.append(float(host[:, 1].mean()))
        if out and frame % 10 == 0:
            np.savez(f"{out}/cloth_{frame:04d}.npz", pos=host)
            save_png(f"{out}/cloth_{frame:04d}.png", side_view(host, params))
    final = x.numpy().copy()
    if verbose:
        start = float(cloth["pos"][:, 1].mean())
        print(f"centre of mass height {start:.3f} -> {heights[-1]:.3f}")
    return {"initial": cloth["pos"], "pos": final, "vel": v.numpy().copy(),
            "springs": cloth["springs"], "rest": cloth["rest"], "pinned": cloth["pinned"],
            "heights": heights}


def main(argv: list[str] | None = None) -> int:
    args = parser("mass-spring cloth", 60).parse_args(argv)
    run(frames=args.num_frames, device=args.device, out=output_dir(args.output))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
