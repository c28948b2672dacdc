"""Smoke tests of the N-body and cloth examples: one step against NumPy, then the physics
of a short run (conservation laws, pinned particles, no explosion) and the command line."""

from __future__ import annotations

import shutil
import subprocess
import sys

import cuda_harness
import numpy as np
import pytest

import kernelc as kc
from kernelc.codegen.cuda import CudaOptions, emit_cuda
from kernelc.codegen.cuda_layout import ArrayArg
from kernelc.examples import cloth, nbody
from tests.conftest import poisoned

needs_cxx = pytest.mark.skipif(shutil.which(cuda_harness.CXX) is None, reason="needs g++")

# ---- N-body --------------------------------------------------------------------------------


def nbody_reference(pos, mass, eps2):
    """Float64 all-pairs accelerations and potentials (without self-interaction)."""
    pos, mass = pos.astype(np.float64), mass.astype(np.float64)
    d = pos[None, :, :] - pos[:, None, :]  # d[i, j] = x_j - x_i
    inv_r = 1.0 / np.sqrt((d * d).sum(-1) + eps2)
    np.fill_diagonal(inv_r, 0.0)
    acc = (d * (mass[None, :] * inv_r**3)[..., None]).sum(axis=1)
    phi = -(mass[None, :] * inv_r).sum(axis=1)
    return acc, phi


def nbody_inputs(rng, n):
    pos = rng.uniform(-1.0, 1.0, (n, 3)).astype(np.float32)
    vel = rng.uniform(-0.5, 0.5, (n, 3)).astype(np.float32)
    mass = rng.uniform(0.5, 2.0, n).astype(np.float32) / n
    return pos, vel, mass


def test_nbody_accelerations_and_potential_match_numpy(rng):
    n, eps2 = 64, 0.01
    pos, _, mass = nbody_inputs(rng, n)
    acc = kc.array(np.full((n, 3), np.nan, np.float32), dtype=kc.vec3)
    phi = poisoned(n, np.float32)
    kc.launch(nbody.accelerations, n, [kc.array(pos, dtype=kc.vec3), kc.array(mass), eps2,
                                        acc, phi])
    ref_acc, ref_phi = nbody_reference(pos, mass, eps2)
    scale = np.abs(ref_acc).max()
    assert np.abs(acc.numpy() - ref_acc).max() < 1e-5 * scale
    np.testing.assert_allclose(phi.numpy(), ref_phi, rtol=1e-5)


def test_nbody_one_verlet_step_and_energy_match_numpy(rng):
    n, eps2, dt = 64, 0.01, 0.01
    pos, vel, mass = nbody_inputs(rng, n)
    acc0, _ = nbody_reference(pos, mass, eps2)
    x, v = kc.array(pos, dtype=kc.vec3), kc.array(vel, dtype=kc.vec3)
    m = kc.array(mass)
    acc = kc.array(acc0.astype(np.float32), dtype=kc.vec3)
    phi = poisoned(n, np.float32)
    kc.launch(nbody.kick_drift, n, [x, v, acc, dt])
    kc.launch(nbody.accelerations, n, [x, m, eps2, acc, phi])
    kc.launch(nbody.kick, n, [v, acc, dt])
    energy = kc.zeros(1, dtype=kc.float64)
    kc.launch(nbody.total_energy, n, [v, m, phi, energy])

    half = vel + 0.5 * dt * acc0
    ref_x = pos + dt * half
    acc1, phi1 = nbody_reference(ref_x, mass, eps2)
    ref_v = half + 0.5 * dt * acc1
    ref_e = 0.5 * (mass * (ref_v**2).sum(1)).sum() + 0.5 * (mass * phi1).sum()
    np.testing.assert_allclose(x.numpy(), ref_x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v.numpy(), ref_v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(energy.numpy()[0], ref_e, rtol=1e-5)


def test_nbody_conserves_energy_and_momentum():
    # Velocity Verlet keeps the energy error at ~5e-7 here; first-order integrators (explicit
    # or symplectic Euler) drift by 1e-4 or more over these 40 steps, so 1e-5 tells them apart.
    result = nbody.run(n=256, frames=40, steps=1, dt=0.005, verbose=False)
    energy = np.array(result["energy"])
    assert energy[0] < 0.0  # a bound cluster
    assert np.isfinite(result["pos"]).all() and np.isfinite(result["vel"]).all()
    assert np.abs(energy / energy[0] - 1.0).max() < 1e-5
    # The initial total momentum is zero; pairwise forces are equal and opposite.
    mass = 1.0 / 256
    assert np.abs(result["momentum"]).max() < 1e-6
    assert mass * np.abs(result["vel"]).sum() > 1e-2  # ... while the bodies do move


# ---- cloth ---------------------------------------------------------------------------------


def cloth_reference_step(pos, vel, springs, rest, inv_mass, p):
    """One substep of the cloth in float64 NumPy: spring forces, then integrate + collide."""
    i, j = springs[:, 0], springs[:, 1]
    xij, vij = pos[i] - pos[j], vel[i] - vel[j]
    length = np.linalg.norm(xij, axis=1)
    d = xij / length[:, None]
    fs = d * (p["ke"] * (length - rest) + p["kd"] * (d * vij).sum(1))[:, None]
    force = np.zeros_like(pos)
    np.add.at(force, i, -fs)
    np.add.at(force, j, fs)

    v1 = (vel + (force * inv_mass[:, None] + p["gravity"]) * p["dt"]) * (1 - p["drag"] * p["dt"])
    x1 = pos + v1 * p["dt"]
    rel = x1 - p["center"]
    dist = np.linalg.norm(rel, axis=1)
    inside = dist < p["radius"]
    n = rel / dist[:, None]
    x1 = np.where(inside[:, None], p["center"] + n * p["radius"], x1)
    vn = (v1 * n).sum(1)
    hit = inside & (vn < 0.0)
    v1 = np.where(hit[:, None], (v1 - n * vn[:, None]) * p["friction"], v1)
    below = x1[:, 1] < p["ground"]
    x1[below, 1] = p["ground"]
    down = below & (v1[:, 1] < 0.0)
    v1[down] = v1[down] * [p["friction"], 0.0, p["friction"]]
    pinned = inv_mass == 0.0
    x1[pinned], v1[pinned] = pos[pinned], vel[pinned]
    return force, x1, v1


def cloth_case(rng):
    """A small jiggled cloth, some particles inside the sphere and some below the ground, with
    random velocities; returns the inputs and the NumPy reference of one substep."""
    c = cloth.make_cloth(6, 5, size=1.0, height=0.3, mass=0.5)
    n = len(c["pos"])
    # Jiggle the grid so every spring is stretched or compressed, and push it down so that
    # some particles start inside the sphere and some below the ground.
    pos = c["pos"] + rng.uniform(-0.05, 0.05, (n, 3)).astype(np.float32)
    pos[::4, 1] -= 0.4
    vel = rng.uniform(-1.0, 1.0, (n, 3)).astype(np.float32)
    params = cloth.default_params(1e-3, ke=300.0, kd=0.05)
    ref = {"ke": 300.0, "kd": 0.05, "dt": 1e-3, "drag": params.drag, "gravity": params.gravity,
           "center": np.asarray(params.sphere_center, np.float64),
           "radius": params.sphere_radius, "ground": params.ground, "friction": params.friction}
    expected = cloth_reference_step(pos.astype(np.float64), vel.astype(np.float64),
                                    c["springs"], c["rest"], c["inv_mass"].astype(np.float64), ref)
    dist = np.linalg.norm(pos + vel * 1e-3 - ref["center"], axis=1)
    assert (dist < ref["radius"]).sum() >= 2 and (expected[1][:, 1] == 0.0).sum() >= 2
    return c, pos, vel, params, expected


def assert_cloth_step(f, x, v, expected):
    ref_f, ref_x, ref_v = expected
    np.testing.assert_allclose(f, ref_f, rtol=1e-4, atol=1e-3 * np.abs(ref_f).max())
    np.testing.assert_allclose(x, ref_x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(v, ref_v, rtol=1e-4, atol=1e-3)


def test_cloth_substep_matches_numpy(rng):
    c, pos, vel, params, expected = cloth_case(rng)
    n = len(pos)
    x, v = kc.array(pos, dtype=kc.vec3), kc.array(vel, dtype=kc.vec3)
    f = kc.zeros(n, dtype=kc.vec3)
    springs = kc.array(c["springs"].ravel(), dtype=int)
    kc.launch(cloth.eval_springs, len(c["rest"]), [x, v, springs, kc.array(c["rest"]), params, f])
    forces = f.numpy().copy()
    kc.launch(cloth.integrate, n, [x, v, f, kc.array(c["inv_mass"]), params])
    assert_cloth_step(forces, x.numpy(), v.numpy(), expected)
    assert not f.numpy().any()  # cleared for the next substep


def test_cloth_falls_with_pinned_corners_and_bounded_springs():
    result = cloth.run(nx=16, ny=16, frames=30, substeps=16, verbose=False)
    pos, initial = result["pos"], result["initial"]
    assert np.isfinite(pos).all() and np.isfinite(result["vel"]).all()
    pinned = result["pinned"]
    assert len(pinned) == 2
    assert np.array_equal(pos[pinned], initial[pinned])  # exactly: inverse mass 0
    assert result["heights"][-1] < initial[:, 1].mean() - 0.2  # it fell
    assert pos[:, 1].min() >= 0.0  # the ground holds
    springs = result["springs"]
    ratio = np.linalg.norm(pos[springs[:, 0]] - pos[springs[:, 1]], axis=1) / result["rest"]
    assert 0.5 < ratio.min() and ratio.max() < 1.5  # no spring collapsed or exploded


# ---- the CUDA backend, without a GPU -------------------------------------------------------


def _vec_arg(a: np.ndarray) -> ArrayArg:
    """A NumPy array as a 1-d harness array (of vectors when it has a trailing axis)."""
    return ArrayArg(a.ctypes.data, a.shape[:1], a.strides[:1])


@needs_cxx
def test_example_kernels_through_the_cuda_backend(rng):
    """`--device cuda` runs these kernels as CUDA-C: emitted, compiled for the host by the
    test harness (grid emulated) and run on the same inputs, they match NumPy."""
    def build(kernel):
        return cuda_harness.build(emit_cuda(kernel.get_ir(), CudaOptions()))

    n, eps2 = 64, 0.01
    pos, _, mass = nbody_inputs(rng, n)
    acc, phi = np.full((n, 3), np.nan, np.float32), np.full(n, np.nan, np.float32)
    args = [_vec_arg(pos), _vec_arg(mass), eps2, _vec_arg(acc), _vec_arg(phi)]
    assert build(nbody.accelerations).launch(n, args, block_dim=16, max_blocks=2) is None
    ref_acc, ref_phi = nbody_reference(pos, mass, eps2)
    assert np.abs(acc - ref_acc).max() < 1e-5 * np.abs(ref_acc).max()
    np.testing.assert_allclose(phi, ref_phi, rtol=1e-5)

    c, x, v, params, expected = cloth_case(rng)
    f = np.zeros_like(x)
    springs, rest = c["springs"].ravel().copy(), c["rest"]
    args = [_vec_arg(x), _vec_arg(v), _vec_arg(springs), _vec_arg(rest), params, _vec_arg(f)]
    assert build(cloth.eval_springs).launch(len(rest), args, block_dim=32, max_blocks=4,
                                            workers=2) is None
    forces = f.copy()
    args = [_vec_arg(x), _vec_arg(v), _vec_arg(f), _vec_arg(c["inv_mass"]), params]
    assert build(cloth.integrate).launch(len(x), args, block_dim=8, max_blocks=2) is None
    assert_cloth_step(forces, x, v, expected)


# ---- command line --------------------------------------------------------------------------


def test_sims_listed_and_run_from_the_command_line():
    out = subprocess.run([sys.executable, "-m", "kernelc.examples"], capture_output=True,
                         text=True, check=True).stdout
    assert "nbody" in out and "cloth" in out
    for name in ("nbody", "cloth"):
        run = subprocess.run([sys.executable, "-m", "kernelc.examples", name, "--num-frames", "2"],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert "took" in run.stdout
        assert "activity summary" in run.stdout  # the last frame reports every launch
