"""The differentiable-simulation example (`ballistic`): its trajectories and its gradients
against a float64 NumPy version of the same simulation (central finite differences), the
optimisation loop, and the command line."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import kernelc as kc
from kernelc.examples import ballistic


def reference_final_positions(v0, params, steps, start):
    """Float64 NumPy twin of `init_state` + `simulate_step`: the positions after `steps`
    recorded steps, for velocities of shape (..., n, 3)."""
    v = np.array(v0, np.float64)
    x = np.broadcast_to(np.asarray(start, np.float64), v.shape).copy()
    gravity = np.array([params.gravity[k] for k in range(3)], np.float64)
    width = params.contact_width
    for _ in range(steps * params.substeps):
        depth = params.ground - x[..., 1]
        softplus = np.maximum(depth, 0.0) + width * np.log1p(np.exp(-np.abs(depth) / width))
        engaged = 0.5 + 0.5 * np.tanh(0.5 * depth / width)
        a = gravity - params.drag * v
        a[..., 1] += params.contact_ke * softplus - params.contact_kd * v[..., 1] * engaged
        v = v + a * params.dt
        x = x + v * params.dt
    return x


def reference_loss(v0, targets, params, steps, start):
    d = reference_final_positions(v0, params, steps, start) - targets
    return (d * d).sum(-1).mean(-1)


def finite_difference_gradient(v0, targets, params, steps, start, eps=1e-5):
    """Central differences of the float64 loss, every component of v0 in one batch."""
    n = v0.size
    shifts = np.eye(n).reshape(n, *v0.shape) * eps
    batch = np.concatenate([v0 + shifts, v0 - shifts])  # (2n, particles, 3)
    losses = reference_loss(batch, targets, params, steps, start)
    return ((losses[:n] - losses[n:]) / (2.0 * eps)).reshape(v0.shape)


# flight: high up and short, the ground never reached; bounce: the example's setting, with
# one bounce (through the smooth contact) before the last step.
CASES = {"flight": dict(steps=40, start=(0.0, 10.0, 0.0)),
         "bounce": dict(steps=150, start=(0.0, 0.5, 0.0))}


def case_inputs(rng, n=6):
    """Targets above what a rebound reaches, so that every component of the gradient,
    the vertical one through the bounce included, is far from zero."""
    targets = ballistic.make_targets(n, seed=3)
    targets[:, 1] = rng.uniform(0.9, 1.2, n)
    v0 = np.stack([rng.uniform(-2.0, 2.0, n), rng.uniform(3.6, 4.6, n),
                   rng.uniform(-2.0, 2.0, n)], -1)
    return targets, v0


@pytest.mark.parametrize("case", list(CASES))
def test_ballistic_gradient_matches_numpy_finite_differences(rng, case):
    steps, start = CASES[case]["steps"], CASES[case]["start"]
    targets, v0 = case_inputs(rng)
    sim = ballistic.Ballistic(targets, v0, steps=steps, start=start)
    sim.record()
    sim.backward()
    params = sim.params

    x = sim.x.numpy()
    ref_x = reference_final_positions(v0, params, steps, start)
    np.testing.assert_allclose(x[-1], ref_x, rtol=0, atol=2e-4)
    np.testing.assert_allclose(x[0], np.broadcast_to(start, v0.shape))
    bounced = x[:, :, 1].min(axis=0) < 0.05
    assert bounced.all() if case == "bounce" else not bounced.any()
    np.testing.assert_allclose(sim.loss.numpy()[0],
                               reference_loss(v0, targets, params, steps, start), rtol=1e-4)

    grad = sim.v0.grad.numpy()
    fd = finite_difference_gradient(v0, targets, params, steps, start)
    scale = np.abs(fd).max()
    assert np.abs(fd).min() > 0.005 * scale  # no component passes for being near zero
    np.testing.assert_allclose(grad, fd, rtol=1e-3, atol=1e-5 * scale)


def test_ballistic_gradients_do_not_accumulate_after_tape_zero(rng):
    targets, v0 = case_inputs(rng, n=4)
    sim = ballistic.Ballistic(targets, v0, steps=30)
    sim.record()
    sim.backward()
    first = sim.v0.grad.numpy().copy()
    assert np.abs(first).max() > 0.0
    sim.tape.zero()
    sim.record()
    sim.backward()
    np.testing.assert_array_equal(sim.v0.grad.numpy(), first)
    # Every step's state row was consumed by the backward pass (stores zero their gradient).
    assert not sim.x.grad.numpy().any() and not sim.v.grad.numpy().any()


def test_ballistic_few_iterations_reduce_the_loss():
    result = ballistic.run(num_particles=8, iterations=10, verbose=False)
    losses = np.array(result["losses"])
    assert np.isfinite(losses).all() and np.isfinite(result["v0"]).all()
    assert losses[-1] < 0.5 * losses[0]
    assert result["x"].shape == (151, 8, 3)


def test_ballistic_default_run_converges():
    """The documented claim: the default run cuts the loss by orders of magnitude, with
    every projectile on its target after one bounce."""
    result = ballistic.run(verbose=False)
    losses = result["losses"]
    assert losses[-1] < 1e-5 * losses[0]
    x, targets = result["x"], result["targets"]
    assert np.linalg.norm(x[-1] - targets, axis=1).max() < 0.01
    assert (x[:, :, 1].min(axis=0) < 0.05).all()  # each reached the ground on the way


def test_ballistic_backward_kernel_compiles_with_nvrtc():
    pytest.importorskip("cuda.bindings.nvrtc")
    from kernelc.autodiff.kernel import adjoint_kernel

    kernel = ballistic.simulate_step
    types = [*kernel.param_types, *kernel.param_types, kc.uint64]
    c = kc.compile(adjoint_kernel(kernel), target="cuda", arch=90, arg_types=types)
    assert c.format == "cubin" and c.entry.encode() in c.binary


@pytest.mark.cuda
def test_ballistic_gradient_on_gpu_matches_cpu(rng):
    if not kc.is_cuda_available():
        pytest.skip("no CUDA device")
    targets, v0 = case_inputs(rng)
    grads = []
    for device in ("cpu", "cuda:0"):
        sim = ballistic.Ballistic(targets, v0, device=device)
        sim.record()
        sim.backward()
        grads.append(sim.v0.grad.numpy())
    scale = np.abs(grads[0]).max()
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-3, atol=1e-3 * scale)


def test_ballistic_command_line(tmp_path):
    listing = subprocess.run([sys.executable, "-m", "kernelc.examples"], capture_output=True,
                             text=True, check=True).stdout
    assert "ballistic" in listing
    run = subprocess.run([sys.executable, "-m", "kernelc.examples", "ballistic",
                          "--iterations", "3", "--num-frames", "40", "--output",
                          str(tmp_path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "iteration 2 took" in run.stdout and "loss" in run.stdout
    assert "backward kernel simulate_step" in run.stdout  # the last iteration's summary
    assert (tmp_path / "ballistic_0002.npz").exists()
