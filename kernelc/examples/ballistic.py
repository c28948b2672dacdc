"""Differentiable ballistics: Adam tunes launch velocities so projectiles bounce onto targets.

Run: python -m kernelc.examples ballistic [--iterations N] [--num-frames STEPS] [--lr LR]
                                          [--device cuda] [--output DIR]
Projectiles leave one launch point, fly under gravity and air drag, bounce off the ground
through a smooth penalty contact, and should be at their targets when the last step ends.
Every step writes its own row of two 2-d state arrays (positions, velocities), so a kc.Tape
can run the steps' backward kernels in reverse and leave d loss / d launch velocity in
`v0.grad`; kernelc.optim.Adam then updates the launch velocities. Each iteration (forward,
backward, update) is timed with ScopedTimer; the last one sums every launch by kernel.
"""

from __future__ import annotations

import numpy as np

import kernelc as kc
import kernelc.optim
from kernelc.examples._common import output_dir, parser, save_png


@kc.struct
class BallisticParams:
    gravity: kc.vec3
    dt: float  # length of a substep
    substeps: int  # substeps per recorded step
    drag: float  # air drag per unit mass: the acceleration is -drag * v
    ground: float  # height of the ground plane
    contact_ke: float  # stiffness of the ground per unit mass
    contact_kd: float  # damping of the ground per unit mass: makes the bounces inelastic
    contact_width: float  # the contact force is smoothed over about this depth


@kc.func
def softplus(d: float, width: float) -> float:
    """A smooth max(d, 0): width * log(1 + exp(d / width)), written not to overflow."""
    return kc.max(d, 0.0) + width * kc.log(1.0 + kc.exp(-kc.abs(d) / width))


@kc.func
def contact_acceleration(x: kc.vec3, v: kc.vec3, p: BallisticParams) -> kc.vec3:
    """The ground's push on a projectile at `x` moving at `v`: a spring on the smoothed
    penetration depth, plus damping that fades in with the contact. Both are smooth in x
    and v, so a bounce has well-defined gradients and finite differences agree with them."""
    depth = p.ground - x[1]
    engaged = 0.5 + 0.5 * kc.tanh(0.5 * depth / p.contact_width)  # softplus' slope: 0 -> 1
    push = p.contact_ke * softplus(depth, p.contact_width) - p.contact_kd * v[1] * engaged
    return kc.vec3(0.0, push, 0.0)


@kc.kernel
def init_state(start: kc.vec3, v0: kc.array(dtype=kc.vec3), x: kc.array2d(dtype=kc.vec3),
               v: kc.array2d(dtype=kc.vec3)):
    """Row 0 of the trajectory: every projectile at `start` with its launch velocity."""
    i = kc.tid()
    x[0, i] = start
    v[0, i] = v0[i]


@kc.kernel
def simulate_step(x: kc.array2d(dtype=kc.vec3), v: kc.array2d(dtype=kc.vec3), t: int,
                  p: BallisticParams):
    """Advances row t of the trajectory to row t + 1 with `p.substeps` semi-implicit Euler
    substeps. Rows are never overwritten, so each step's backward kernel sees the state the
    step started from; the substeps stay in registers, and the backward kernel reverses
    their loop."""
    i = kc.tid()
    xi = x[t, i]
    vi = v[t, i]
    for _ in range(p.substeps):
        a = p.gravity - vi * p.drag + contact_acceleration(xi, vi, p)
        vi = vi + a * p.dt
        xi = xi + vi * p.dt
    x[t + 1, i] = xi
    v[t + 1, i] = vi


@kc.kernel
def target_loss(x: kc.array2d(dtype=kc.vec3), t: int, targets: kc.array(dtype=kc.vec3),
                loss: kc.array(dtype=float)):
    """Adds the mean squared distance between row t of the trajectory and the targets."""
    i = kc.tid()
    d = x[t, i] - targets[i]
    kc.atomic_add(loss, 0, kc.dot(d, d) / float(targets.shape[0]))


def default_params(dt: float, substeps: int) -> BallisticParams:
    """Earth's gravity, light drag and a ground that gives back about 70% of the speed.
    `dt` is the length of a recorded step, cut into `substeps` substeps: the contact needs
    them, as a projectile must not cross the smoothing width in one substep."""
    params = BallisticParams()
    params.gravity = kc.vec3(0.0, -9.81, 0.0)
    params.dt = dt / substeps
    params.substeps = substeps
    params.drag = 0.1
    params.ground = 0.0
    params.contact_ke = 2.0e3
    params.contact_kd = 10.0
    params.contact_width = 0.01
    return params


def make_targets(n: int, seed: int = 7) -> np.ndarray:
    """`n` targets around the launch point: 1.5 to 4.5 m away, 0.25 to 0.6 m up. With the
    default 1.5 s of flight they are hit on the rebound, after one bounce."""
    rng = np.random.default_rng(seed)
    angle = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False) + rng.uniform(0.0, 0.3, n)
    radius = rng.uniform(1.5, 4.5, n)
    height = rng.uniform(0.25, 0.6, n)
    return np.stack([radius * np.cos(angle), height, radius * np.sin(angle)], -1)


class Ballistic:
    """The projectiles, their trajectory arrays and the loss: one differentiable forward pass.

    Args:
        targets: (n, 3) target positions, one per projectile.
        v0: (n, 3) launch velocities, the parameters (stored with `requires_grad`).
        steps: Recorded steps; the loss is taken at the last one.
        dt: Length of a recorded step in seconds.
        substeps: Integration substeps per recorded step.
        start: The launch point of every projectile.
        device: Where the arrays live.
    """

    def __init__(self, targets: np.ndarray, v0: np.ndarray, steps: int = 150,
                 dt: float = 0.01, substeps: int = 10,
                 start: tuple[float, float, float] = (0.0, 0.5, 0.0), device: str = "cpu"):
        n = len(targets)
        self.n, self.steps, self.device = n, steps, device
        self.start = kc.vec3(*start)
        self.params = default_params(dt, substeps)
        self.targets = kc.array(np.asarray(targets, np.float32), dtype=kc.vec3, device=device)
        self.v0 = kc.array(np.asarray(v0, np.float32), dtype=kc.vec3, device=device,
                           requires_grad=True)
        # One row per step: the backward pass needs every state the forward pass went through.
        self.x = kc.zeros((steps + 1, n), dtype=kc.vec3, device=device, requires_grad=True)
        self.v = kc.zeros((steps + 1, n), dtype=kc.vec3, device=device, requires_grad=True)
        self.loss = kc.zeros(1, dtype=float, device=device, requires_grad=True)
        self.tape = kc.Tape()

    def forward(self) -> None:
        """Simulates every step and computes the loss (under a tape to differentiate them)."""
        self.loss.zero_()
        kc.launch(init_state, self.n, [self.start, self.v0, self.x, self.v], device=self.device)
        for t in range(self.steps):
            kc.launch(simulate_step, self.n, [self.x, self.v, t, self.params],
                      device=self.device)
        kc.launch(target_loss, self.n, [self.x, self.steps, self.targets, self.loss],
                  device=self.device)

    def record(self) -> None:
        """Runs the forward pass on a fresh tape."""
        self.tape.reset()
        with self.tape:
            self.forward()

    def backward(self) -> None:
        """Runs the recorded pass backwards: `self.v0.grad` then holds d loss / d v0 (zero
        it with `self.tape.zero()` before the next pass, as gradients accumulate)."""
        self.tape.backward(self.loss)


def launch_summary(results: list[kc.TimingResult], indent: str = "") -> None:
    """A `ScopedTimer` report: total time and count of each kind of launch, without the
    timeline (one line per step would be hundreds of lines)."""
    totals: dict[str, list[float]] = {}
    for r in results:
        entry = totals.setdefault(r.name, [0.0, 0])
        entry[0] += r.elapsed
        entry[1] += 1
    for name, (total, count) in totals.items():
        print(f"{indent}{total:10.3f} ms {count:6d} x {name}")


def side_view(x: np.ndarray, targets: np.ndarray, width: int = 320, height: int = 128,
              metres: float = 5.0) -> np.ndarray:
    """The trajectories seen from the side (distance from the launch point to the right,
    height up), targets in grey, as an image in [0, 1]."""
    image = np.zeros((height, width))
    scale = width / metres
    for points, value in ((x.reshape(-1, 3), 1.0), (targets, 0.5)):
        col = (np.hypot(points[:, 0], points[:, 2]) * scale).astype(int)
        row = (height - 1 - points[:, 1] * scale).astype(int)
        inside = (col >= 0) & (col < width) & (row >= 0) & (row < height)
        image[row[inside], col[inside]] = value
    return image


def run(num_particles: int = 16, steps: int = 150, iterations: int = 150, lr: float = 0.2,
        device: str = "cpu", out: str | None = None, verbose: bool = True,
        report_every: int = 25) -> dict:
    """Optimises the launch velocities; returns the loss of each iteration (before its
    update), the final launch velocities and trajectory, and the targets."""
    targets = make_targets(num_particles)
    v0 = np.tile([0.0, 4.0, 0.0], (num_particles, 1))  # straight up: misses every target
    sim = Ballistic(targets, v0, steps=steps, device=device)
    opt = kernelc.optim.Adam([sim.v0], lr=lr)
    # The forward kernels compile now; the backward ones on the first backward pass, which
    # iteration 0's time includes.
    kc.load_module(device=device)
    if verbose:
        p = sim.params
        print(f"ballistic: {num_particles} projectiles, {steps} steps of "
              f"{p.dt * p.substeps * 1e3:.0f} ms ({p.substeps} substeps each), "
              f"Adam lr {lr}, {iterations} iterations")
    timings: dict[str, list[float]] = {}
    losses = []
    for it in range(iterations):
        last = it == iterations - 1
        show = verbose and (last or it % report_every == 0)
        with kc.ScopedTimer(f"iteration {it}", print=show, dict=timings,
                            cuda_filter=kc.TIMING_ALL if (verbose and last) else 0,
                            report_func=launch_summary) as timer:
            # Synchronizing timers, so that on a GPU each phase is charged its own work.
            with kc.ScopedTimer("forward", print=False, dict=timings, synchronize=True):
                sim.record()
            with kc.ScopedTimer("backward", print=False, dict=timings, synchronize=True):
                sim.backward()
            with kc.ScopedTimer("update", print=False, dict=timings, synchronize=True):
                opt.step([sim.v0.grad])
                sim.tape.zero()
            losses.append(float(sim.loss.numpy()[0]))
            timer.extra_msg = f"(loss {losses[-1]:.3e})"
        if out and (last or it % report_every == 0):
            trajectory = sim.x.numpy()
            np.savez(f"{out}/ballistic_{it:04d}.npz", x=trajectory, targets=targets)
            save_png(f"{out}/ballistic_{it:04d}.png", side_view(trajectory, targets))
    if verbose:
        mean = {name: float(np.mean(times[1:] or times)) for name, times in timings.items()}
        print("mean per iteration after the first: " + ", ".join(
            f"{name} {mean[name]:.2f} ms" for name in ("forward", "backward", "update")))
        print(f"loss {losses[0]:.3e} -> {losses[-1]:.3e}")
    return {"losses": losses, "v0": sim.v0.numpy().copy(), "x": sim.x.numpy().copy(),
            "targets": targets}


def main(argv: list[str] | None = None) -> int:
    p = parser("differentiable ballistics: launch velocities optimised with Adam", 150)
    p.add_argument("--iterations", type=int, default=150, help="optimisation iterations")
    p.add_argument("--lr", type=float, default=0.2, help="Adam's learning rate")
    args = p.parse_args(argv)
    run(steps=args.num_frames, iterations=args.iterations, lr=args.lr, device=args.device,
        out=output_dir(args.output))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
